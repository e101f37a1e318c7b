"""Deterministic by default: ``fit`` keeps the given row order unless asked to shuffle."""
import numpy as np
import pytest
from conftest import make_binary

import cwkit

NAMES = [entry["name"] for entry in cwkit.algorithms()]


def _data(n_classes):
    rng = np.random.default_rng(11)
    X, y = make_binary(rng, n=90, d=6)
    if n_classes > 2:
        y = np.argmax(X[:, :n_classes], axis=1)   # three classes, each the largest feature
    return X, y


def _assert_identical(a, b):
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    assert (a.t_, a.mistakes_, a.n_updates_) == (b.t_, b.mistakes_, b.n_updates_)


@pytest.mark.parametrize("n_classes", [2, 3], ids=["binary", "3-class"])
@pytest.mark.parametrize("name", NAMES)
def test_default_fit_is_deterministic_and_one_ordered_pass(name, n_classes):
    X, y = _data(n_classes)
    assert cwkit.make(name).shuffle is False
    first = cwkit.make(name).fit(X, y)
    second = cwkit.make(name).fit(X, y)
    _assert_identical(first, second)
    _assert_identical(first, cwkit.make(name).partial_fit(X, y))


@pytest.mark.parametrize("n_classes", [2, 3], ids=["binary", "3-class"])
@pytest.mark.parametrize("name", NAMES)
def test_seeded_shuffle_is_reproducible(name, n_classes):
    X, y = _data(n_classes)
    kw = {"shuffle": True, "random_state": 0, "n_passes": 2}
    first = cwkit.make(name, **kw).fit(X, y)
    _assert_identical(first, cwkit.make(name, **kw).fit(X, y))
    refit = cwkit.make(name, **kw).fit(X[:10], y[:10]).fit(X, y)   # fit resets
    _assert_identical(first, refit)
