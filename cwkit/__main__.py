"""``python -m cwkit``: the command line (see :mod:`cwkit.cli`)."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
