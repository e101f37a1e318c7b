"""``python -m cwkit``: the command line (see :mod:`cwkit.cli`)."""
import gc
import sys

from .cli import main

if __name__ == "__main__":
    status = main()
    # The interpreter's last full collection would walk every object the imports made
    # (about 0.07 s of an eval) only to find them alive: they go with the process.  The
    # young generations are collected first, so that what the run left in cycles is
    # still finalised.
    gc.collect(1)
    gc.freeze()
    sys.exit(status)
