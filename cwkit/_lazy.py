"""Modules imported on first use.

scipy.sparse and scipy.special take longer to import than numpy itself (scipy.sparse
brings in scipy's array-API layer, numpy.testing and numpy.f2py), and ``import cwkit``,
``cwkit --help`` or a model fitted on dense arrays need neither.
"""
import contextlib
import importlib
import sys
import threading

from ._threads import block_signals


class LazyModule:
    """Stands for the module ``name``, imported at the first attribute read."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        value = getattr(importlib.import_module(self._name), attr)
        self.__dict__[attr] = value       # later reads skip __getattr__
        return value


@contextlib.contextmanager
def importing(name):
    """Import the module ``name`` on a helper thread while the block runs (the
    interpreter's share of it interleaves with the block's compiled code, which
    releases the GIL: a file read), finished on leaving: after the block the module is
    imported whole, so no code outside it meets the module half initialised. An import
    error is left to the next plain import, which raises it."""
    if name in sys.modules:
        yield
        return

    def work():
        block_signals()
        with contextlib.suppress(Exception):
            importlib.import_module(name)

    thread = threading.Thread(target=work, name=f"cwkit-import-{name}")
    thread.start()
    try:
        yield
    finally:
        thread.join()


sparse = LazyModule("scipy.sparse")
special = LazyModule("scipy.special")


def issparse(X):
    """``scipy.sparse.issparse(X)`` without importing scipy.sparse: before it is
    imported no sparse matrix or array can exist."""
    module = sys.modules.get("scipy.sparse")
    return module is not None and module.issparse(X)
