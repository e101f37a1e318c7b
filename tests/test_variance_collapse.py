"""Diagonal CW whose variances collapse to 0 stop learning: the user is told,
once per call, with the row where it happened."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import cwkit
from cwkit.models.collapse import THRESHOLD


def _noisy(n=300, d=5, K=2, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.integers(0, K, n)


def _min_variance(est):
    return min(est.coef_var_.min(), est.intercept_var_.min())


def _first_collapsed_row(name, params, X, y):
    """Row by row (the same online pass): the first row after which a variance is tiny."""
    est = cwkit.make(name, shuffle=False, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cwkit.VarianceCollapseWarning)
        for i in range(len(y)):
            est.partial_fit(X[i:i + 1], y[i:i + 1], classes=np.unique(y))
            if _min_variance(est) < THRESHOLD:
                return i
    return None


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("K, params", [(2, {}), (3, {}), (3, {"multiclass": "ovr"})],
                         ids=["binary", "top1", "ovr"])
def test_collapse_is_warned_once_with_its_row(sparse, K, params):
    X, y = _noisy(K=K)
    params = {"eta": 0.95, "covariance": "diag", **params}
    row = _first_collapsed_row("cw-stdev", params, X, y)
    assert row is not None and row > 0
    Xs = sp.csr_matrix(X) if sparse else X
    est = cwkit.make("cw-stdev", shuffle=False, n_passes=3, **params)
    with pytest.warns(cwkit.VarianceCollapseWarning, match=rf"row {row} of X: the variance") as rec:
        est.fit(Xs, y)
    assert len([w for w in rec if w.category is cwkit.VarianceCollapseWarning]) == 1
    # later calls on the collapsed model: nothing newly collapses, no new warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", cwkit.VarianceCollapseWarning)
        est.partial_fit(Xs[:50], y[:50])
    # a call that starts before the collapse names the row of its own X
    fresh = cwkit.make("cw-stdev", shuffle=False, **params)
    fresh.partial_fit(Xs[:row - 1 if row > 1 else 1], y[:max(row - 1, 1)], classes=np.unique(y))
    start = max(row - 1, 1)
    with pytest.warns(cwkit.VarianceCollapseWarning, match=rf"row {row - start} of X"):
        fresh.partial_fit(Xs[start:], y[start:])


def test_no_warning_without_collapse():
    X, y = _noisy()
    with warnings.catch_warnings():
        warnings.simplefilter("error", cwkit.VarianceCollapseWarning)
        for name in ("arow", "cw"):
            cwkit.make(name, covariance="diag").fit(X, y)
    assert issubclass(cwkit.VarianceCollapseWarning, UserWarning)


@pytest.mark.parametrize("K, params", [(2, {}), (3, {}), (3, {"multiclass": "ovr"})],
                         ids=["binary", "top1", "ovr"])
def test_the_row_of_a_shuffled_pass_is_the_first_to_collapse_in_its_order(K, params):
    """The compiled pass notes the row whose update first takes a variance below
    THRESHOLD, in the order of the pass (a shuffled fit: a row of X, not a position)."""
    X, y = _noisy(K=K, seed=3)
    params = {"eta": 0.95, "covariance": "diag", **params}
    est = cwkit.make("cw-stdev", shuffle=True, random_state=5, **params)
    order = np.random.default_rng(5).permutation(len(y))   # the fit's first pass
    row = order[_first_collapsed_row("cw-stdev", params, X[order], y[order])]
    assert row != _first_collapsed_row("cw-stdev", params, X, y)
    with pytest.warns(cwkit.VarianceCollapseWarning, match=rf"row {row} of X: the variance"):
        est.fit(X, y)
