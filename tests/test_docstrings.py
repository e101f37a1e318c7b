"""Every docstring example of the package runs as a test."""
import doctest
import re
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


def _documented(cls):
    """The names of the "Attributes" section of `cls`'s docstring."""
    doc = cls.__doc__ or ""
    assert "    Attributes\n    ----------\n" in doc, cls.__name__
    section = doc.split("    Attributes\n    ----------\n", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"^    (\w+) :", section, flags=re.M))


def _fitted_estimators():
    import numpy as np
    X = np.random.default_rng(0).normal(size=(30, 4))
    y2, y3 = (X[:, 0] > 0).astype(int), np.arange(30) % 3
    for entry in cwkit.algorithms():
        name = entry["name"]
        forms = [{}, {"kernel_approx": "nystroem", "n_components": 5}]
        if cwkit.registry.kernel_params(name):
            forms.append({"kernel": "rbf"})
        for form in forms:
            for y in (y2, y3):
                yield cwkit.make(name, **form).fit(X, y)


def test_every_public_fitted_attribute_is_documented():
    """Each estimator class's "Attributes" lists every public attribute a fitted
    estimator has (set by fitting, or a property that answers)."""
    for est in _fitted_estimators():
        cls = type(est)
        names = {k for k in vars(est) if k.endswith("_") and not k.startswith("_")}
        for k in dir(cls):
            if k.endswith("_") and not k.startswith("_") and isinstance(
                    getattr(cls, k, None), property):
                try:
                    getattr(est, k)
                except AttributeError:     # not this model's (coef_var_ of a full Sigma)
                    continue
                names.add(k)
        missing = names - _documented(cls)
        assert not missing, (cls.__name__, sorted(missing))
