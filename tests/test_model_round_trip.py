"""Every model ``save`` writes loads back bit for bit, and every model pickles.

Each registered rule in each form (linear, kernel, ``kernel_approx`` with random
Fourier or Nystroem features), two classes and three, fitted on rows with
all-zero rows (empty CSR rows) first, in the middle and last (the newest
support vector of a kernel model may be one), on all-zero rows only (no
support vector without an intercept) and on no rows at all (``partial_fit``
of an empty batch): the loaded model holds the same state, parameters,
choices and counters, gives the same decisions, and learns on as the original
does.  The same holds for a pickled copy (``pickle``, which joblib and Dask use).
"""
import os
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from model_file_fuzz import same_model

import cwkit
from cwkit import registry

NAMES = [e["name"] for e in cwkit.algorithms()]
KERNEL_NAMES = sorted(n for n, e in registry._REGISTRY.items()
                      if e.cls in registry.KERNEL_FAMILIES)

FORMS = ([(n, {}) for n in NAMES]
         + [(n, {"kernel": "rbf", "budget": 5}) for n in KERNEL_NAMES]
         + [(n, {"kernel": "poly", "degree": 2}) for n in KERNEL_NAMES]
         + [(n, {"kernel_approx": a, "n_components": 4}) for n in NAMES
            for a in ("rff", "nystroem")])


def rows(n_classes, seed=0):
    """14 rows of 3 features, all-zero rows at 0, 6 and 13 (the last), as CSR (the
    zero rows empty) and labels cycling through the classes."""
    X = np.random.default_rng(seed).normal(size=(14, 3))
    X[[0, 6, 13]] = 0.0
    return sp.csr_matrix(X), np.arange(14) % n_classes


def same(a, b, X):
    assert same_model(a, b)
    assert a._choices() == b._choices()
    assert [np.array_equal(u, v) for u, v in zip(a._calibration.rounds(),
                                                  b._calibration.rounds())] == [True, True]
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


def fitted(name, params, n_classes):
    """(estimator, rows) for each data case of the module's docstring."""
    X, y = rows(n_classes)
    classes = np.arange(n_classes)
    out = [(cwkit.make(name, **params).fit(X, y), X, y)]
    zero = sp.csr_matrix((6, 3))
    # (all-zero first rows leave "scale" no variance: gamma falls back to 1, whose Nystroem
    # features of the later rows, all-zero landmarks, are too small for l1-pa / l2-pa's beta)
    wide = {"gamma": 0.3} if "kernel_approx" in params else {}
    out.append((cwkit.make(name, fit_intercept=False, **params, **wide).fit(zero, y[:6]), X, y))
    if "kernel_approx" not in params:   # (the feature map is drawn from the first rows)
        out.append((cwkit.make(name, **params).partial_fit(X[:0], y[:0], classes=classes),
                    X, y))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name, params", FORMS,
                         ids=[f"{n}-{'-'.join(map(str, p.values()))}" for n, p in FORMS])
def test_saved_and_pickled_models_come_back_bit_for_bit(tmp_path, name, params, n_classes):
    path = os.fspath(tmp_path / "m.cwk")
    for est, X, y in fitted(name, params, n_classes):
        cwkit.save(est, path)
        copies = [cwkit.load(path), pickle.loads(pickle.dumps(est))]
        for copy in copies:
            same(est, copy, X)
        for model in [est, *copies]:      # each learns on as the original does
            model.partial_fit(X[::-1], y[::-1])
        for copy in copies:
            same(est, copy, X)


def test_the_newest_support_vector_all_zero_loads(tmp_path):
    est = cwkit.make("pa1", kernel="rbf").fit([[1, 0], [0, 0]], [1, -1])
    assert est.support_vectors_[-1].nnz == 0
    cwkit.save(est, tmp_path / "z.cwk")
    same(est, cwkit.load(tmp_path / "z.cwk"), np.eye(2))
