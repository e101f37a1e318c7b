"""Modules imported on first use.

scipy.sparse and scipy.special take longer to import than numpy itself (scipy.sparse
brings in scipy's array-API layer, numpy.testing and numpy.f2py), and ``import cwkit``,
``cwkit --help`` or a model fitted on dense arrays need neither.
"""
import importlib
import os
import sys
import threading

from ._threads import try_start


class LazyModule:
    """Stands for the module ``name``, imported at the first attribute read."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        value = getattr(importlib.import_module(self._name), attr)
        self.__dict__[attr] = value       # later reads skip __getattr__
        return value

    def preload(self):
        """Start importing the module on a helper thread, so that work which releases
        the GIL meanwhile (reading a file) hides the import; the first attribute read
        waits for it to finish (and raises its ImportError, if any).  A fork waits for
        it too (a child would inherit the module's import lock held by a thread it does
        not have).  Where no thread can be started, nothing is done: the module is
        imported on first use."""
        if self._name in sys.modules:
            return

        def run():
            try:
                importlib.import_module(self._name)
            except Exception:   # noqa: BLE001 - the first attribute read raises it
                pass

        # (not a daemon: the interpreter's exit waits for the import rather than stopping
        # a thread in the middle of it)
        thread = threading.Thread(target=run, name=f"cwkit-import-{self._name}")
        if try_start(thread):
            _importing.append(thread)


_importing = []   # preload threads, which a fork waits for


def _before_fork():
    while _importing:
        _importing.pop().join()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork)


sparse = LazyModule("scipy.sparse")
special = LazyModule("scipy.special")


def issparse(X):
    """``scipy.sparse.issparse(X)`` without importing scipy.sparse: before it is
    imported no sparse matrix or array can exist.  (Through ``sparse``, which waits for
    an import in progress on another thread: a module being imported is in
    ``sys.modules`` before it has its functions.)"""
    return "scipy.sparse" in sys.modules and sparse.issparse(X)
