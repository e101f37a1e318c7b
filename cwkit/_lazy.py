"""Modules imported on first use.

scipy.sparse and scipy.special take longer to import than numpy itself (scipy.sparse
brings in scipy's array-API layer, numpy.testing and numpy.f2py), and ``import cwkit``,
``cwkit --help`` or a model fitted on dense arrays need neither.
"""
import importlib
import sys


class LazyModule:
    """Stands for the module ``name``, imported at the first attribute read."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        value = getattr(importlib.import_module(self._name), attr)
        self.__dict__[attr] = value       # later reads skip __getattr__
        return value


sparse = LazyModule("scipy.sparse")
special = LazyModule("scipy.special")


def issparse(X):
    """``scipy.sparse.issparse(X)`` without importing scipy.sparse: before it is
    imported no sparse matrix or array can exist."""
    module = sys.modules.get("scipy.sparse")
    return module is not None and module.issparse(X)
