"""Exact ties between classes break to the first class in label order, everywhere.

Ties are built on purpose: zero scores, classes that are never a label (their
blocks start identical and, where the rule treats them alike, must stay identical
bit for bit), and fresh models whose first competitor is a tie of all classes.
"""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import last_iterate
from cwkit.registry import algorithms

NAMES = [a["name"] for a in algorithms()]
TOPK = [("pa", {}), ("pa1", {"C": 0.5}), ("pa2", {"C": 0.5}), ("pa2", {"slack": "shared"}),
        ("pa-ls", {}), ("arow", {"covariance": "diag"}),
        ("arow", {"covariance": "diag", "diag_update": "direct"}),
        ("bpa1", {"batch_size": 1}), ("bpa1", {}), ("bpa2", {"window": "sliding"}),
        ("bpa-ls", {}), ("l1-pa", {})]


def strategies(name):
    """The multi-class strategies `name` accepts."""
    out = ["top1", "ovr"]
    try:
        last_iterate(name, multiclass="topk")._validate_params()
        last_iterate(name, multiclass="topk").partial_fit(np.eye(3), [0, 1, 2])
        out.append("topk")
    except ValueError:
        pass
    return out


def two_label_stream(seed=5, n=60, d=6):
    """Rows labelled 0 or 1 only: classes 2 and 3 of classes=[0, 1, 2, 3] never occur."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random(X.shape) < 0.3] = 0.0
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


@pytest.mark.parametrize("name", NAMES)
def test_zero_scores_predict_the_first_class(name):
    """Without an intercept, a zero row scores 0 for every class: the first label wins."""
    X, y = two_label_stream()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for strategy in strategies(name):
            est = last_iterate(name, multiclass=strategy, fit_intercept=False).partial_fit(
                X, np.array(["b", "c"])[y], classes=["d", "c", "b", "a"])
            s = est.decision_function(np.zeros((3, X.shape[1])))
            assert (s == 0).all(), strategy
            assert est.predict(np.zeros((3, X.shape[1]))).tolist() == ["a"] * 3, strategy


@pytest.mark.parametrize("name", NAMES)
def test_first_competitor_of_a_fresh_model_is_the_first_class(name):
    """All K blocks are equal at the start: a top-1 update on a row labelled 2 moves
    block 2 and block 0 (the first of the tied competitors; the Perceptron's
    prediction), never 1 or 3 (mini-batch PA with groups of one row)."""
    x = np.array([[1.0, -2.0, 0.5]])
    est = last_iterate(name, multiclass="top1")
    if "batch_size" in est.get_params():
        est.set_params(batch_size=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.partial_fit(x, [2], classes=[0, 1, 2, 3])
    W = np.column_stack([est.coef_, est.intercept_])
    assert est.n_updates_ == 1
    assert (W[1] == W[3]).all() and (W[0] != W[1]).any() and (W[2] != W[1]).any()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_never_seen_classes_stay_identical_one_vs_rest(name, sparse):
    """One-vs-rest: classes 2 and 3 are both "rest" on every row, so their models get the
    same updates, their scores are equal bit for bit and the prediction is never 3."""
    X, y = two_label_stream()
    X = sp.csr_matrix(X) if sparse else X
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = last_iterate(name, multiclass="ovr").partial_fit(X, y, classes=[0, 1, 2, 3])
    assert (est.coef_[2] == est.coef_[3]).all() and est.intercept_[2] == est.intercept_[3]
    s = est.decision_function(X)
    np.testing.assert_array_equal(s[:, 2], s[:, 3])
    assert 3 not in est.predict(X)


@pytest.mark.parametrize("case", TOPK, ids=["-".join([n, *map(str, p.values())]) for n, p in TOPK])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_tied_competitors_get_equal_top_k_updates(case, sparse):
    """Top-k with every competitor: classes 2 and 3 are tied competitors on every row;
    the dual cannot tell them apart, so they get the same multiplier (Hildreth's method
    alone leaves them a last bit apart) and their blocks stay identical bit for bit."""
    name, params = case
    X, y = two_label_stream()
    X = sp.csr_matrix(X) if sparse else X
    est = last_iterate(name, multiclass="topk", k=3, **params).partial_fit(
        X, y, classes=[0, 1, 2, 3])
    assert est.n_updates_ > 0
    np.testing.assert_array_equal(est.coef_[2], est.coef_[3])
    assert est.intercept_[2] == est.intercept_[3]
    s = est.decision_function(X)
    np.testing.assert_array_equal(s[:, 2], s[:, 3])
    assert 3 not in est.predict(X)


@pytest.mark.parametrize("name", ["pa", "arow", "bpa1"])
def test_duplicated_classes_score_identically(name):
    """Two classes with identical weight blocks get identical scores at test time (every
    class summed in the same order) and the first of them is predicted."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(80, 40))
    X[rng.random(X.shape) < 0.5] = 0.0
    y = rng.integers(0, 6, size=80)
    # the diagonal covariance, whose blocks are the (41, 6) state arrays looked at below
    est = last_iterate(name, **({"covariance": "diag"} if name == "arow" else {})).fit(X, y)
    state = est._model.named_state()
    dk = [a for a in state.values() if a.ndim == 2 and a.shape == (41, 6)]
    assert dk
    for a in dk:
        a[:, 4] = a[:, 1]
    for rows in (X, sp.csr_matrix(X)):
        s = est.decision_function(rows)
        np.testing.assert_array_equal(s[:, 1], s[:, 4])
        assert 4 not in est.predict(rows)
