"""How long numpy's BLAS threads poll for work when the command line runs.

numpy's OpenBLAS starts its threads as numpy is imported, and each polls for work for
2**28 processor cycles (about 0.1 s) before it sleeps, then again after every product it
shares.  The command line's own threads (reading, learning) already keep the cores busy,
so that polling takes a core from them for about 0.1 s of every command, 3% of the CPU
of an eval of 200,000 rows on 2 cores.  When the package is imported to run the command
line (``cwkit ...``, ``python -m cwkit ...``) and the environment leaves it unset,
``OPENBLAS_THREAD_TIMEOUT`` is set to 20: a thread polls for 2**20 cycles (about 0.4 ms)
before it sleeps, so that products which follow one another closer than that still find
it awake.  The threads and their shares of a product are as before: results do not
change.  OpenBLAS reads the variable as it loads, so this module runs before numpy is
imported; imported any other way, nothing changes.
"""
import os

from ._interrupt import launched_as_cli

#: log2 of the processor cycles an idle OpenBLAS thread polls (OpenBLAS takes 4 to 30)
POLL_BITS = 20


def limit_polling():
    """Set ``OPENBLAS_THREAD_TIMEOUT`` for the command line, unless the environment sets
    it (or its older name, ``GOTO_THREAD_TIMEOUT``)."""
    if launched_as_cli() and not ({"OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT"}
                                  & os.environ.keys()):
        os.environ["OPENBLAS_THREAD_TIMEOUT"] = str(POLL_BITS)


limit_polling()     # on import, which the package does before numpy's
