"""Every docstring example of the package runs as a test."""
import doctest
import importlib
import pkgutil

import pytest

import cwkit

MODULES = sorted(m.name for m in pkgutil.walk_packages(cwkit.__path__, "cwkit.")
                 if m.name != "cwkit._core")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_examples_exist():
    finder = doctest.DocTestFinder()
    n = sum(len(t.examples) for name in MODULES
            for t in finder.find(importlib.import_module(name)))
    assert n >= 10
