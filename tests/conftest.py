"""Shared fixtures: the algorithm cases every parametrized test runs over."""
from pathlib import Path

import numpy as np
import pytest

#: (registered name, estimator params) — non-default values exercise every parameter.
BINARY_CASES = [
    ("perceptron", {}),
    ("avg-perceptron", {}),
    ("pa", {}),
    ("pa1", {"C": 0.3}),
    ("pa2", {"C": 0.3}),
    ("pa-ls", {"C": 0.3}),
    ("cw", {"eta": 0.8, "a": 0.7, "covariance": "diag"}),
    ("cw", {"eta": 0.8, "a": 0.7, "covariance": "full"}),
    ("cw-stdev", {"eta": 0.8, "a": 0.7, "covariance": "diag"}),
    ("cw-stdev", {"eta": 0.8, "a": 0.7, "covariance": "full"}),
    ("arow", {"r": 0.3, "a": 1.5, "covariance": "diag"}),
    ("arow", {"r": 0.3, "a": 1.5, "covariance": "diag", "diag_update": "direct"}),
    ("arow", {"r": 0.3, "a": 1.5, "covariance": "full"}),
    ("arow-h", {"r": 0.3, "a": 1.5, "covariance": "diag"}),
    ("arow-h", {"r": 0.3, "a": 1.5, "covariance": "full"}),
    ("sop", {"a": 0.8, "covariance": "diag"}),
    ("sop", {"a": 0.8, "covariance": "full"}),
    ("reg-pa", {"alpha": 0.05}),
    ("l2-pa", {"beta": 10.0}),
    ("soft-reg-pa", {"C": 0.3, "alpha": 0.05}),
    ("adagrad", {"eta": 0.5, "lam": 0.01, "delta": 0.1}),
    ("scw1", {"C": 0.3, "eta": 0.8, "a": 0.7, "covariance": "diag"}),
    ("scw2", {"C": 0.3, "eta": 0.8, "a": 0.7, "covariance": "full"}),
    ("nherd", {"C": 0.3, "a": 0.7, "covariance": "diag"}),
]

#: The other shapes of those rules, run against the reference in test_binary_rules.py
#: only (the cases above already take every rule through the other tests).
OTHER_SHAPES = [
    ("scw1", {"C": 0.3, "eta": 0.8, "a": 0.7, "covariance": "full"}),
    ("scw1", {"C": 5.0, "eta": 0.95, "a": 0.7, "covariance": "diag"}),
    ("scw2", {"C": 0.3, "eta": 0.8, "a": 0.7, "covariance": "diag"}),
    ("nherd", {"C": 0.3, "a": 0.7, "covariance": "full"}),
    ("nherd", {"C": 0.3, "a": 0.7, "covariance": "diag", "diag_update": "direct"}),
    ("nherd", {"C": 0.3, "a": 0.7, "covariance": "diag", "diag_update": "exact"}),
]


def case_id(case):
    name, params = case
    extra = [f"{v}" for k, v in params.items()
             if k in ("covariance", "diag_update") and v != "diag"]
    return "-".join([name] + extra)


#: Rules whose reference lives in their own module's numpy step (mini-batch, L1).
OTHER_CASES = [
    ("bpa1", {"C": 0.3, "batch_size": 3}),
    ("bpa2", {"C": 0.3, "batch_size": 3}),
    ("bpa-ls", {"C": 0.3, "batch_size": 3}),
    ("bpa1", {"C": 0.3, "batch_size": 3, "window": "sliding"}),
    ("l1-pa", {"beta": 10.0}),
]


def _other_id(case):
    name, params = case
    return name + ("-sliding" if params.get("window") == "sliding" else "")


@pytest.fixture(params=BINARY_CASES, ids=[case_id(c) for c in BINARY_CASES])
def binary_case(request):
    return request.param


@pytest.fixture(params=BINARY_CASES + OTHER_CASES,
                ids=[case_id(c) for c in BINARY_CASES] + [_other_id(c) for c in OTHER_CASES])
def any_case(request):
    """Every registered binary rule, for properties that need no reference."""
    return request.param


SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def shared_file(relpath):
    """Path of a file in ../shared/data, or skip the test with the reason."""
    path = SHARED_DATA / relpath
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared data folder ships next to the repository "
                    "for developers and CI, not with the package)")
    return path


def make_binary(rng, n=40, d=5, zero_rows=(), sparse_frac=0.0):
    """Random binary data with labels from a noisy hyperplane."""
    X = rng.normal(size=(n, d))
    if sparse_frac:
        X[rng.random(X.shape) < sparse_frac] = 0.0
    for i in zero_rows:
        X[i] = 0.0
    w = rng.normal(size=d)
    y = np.where(X @ w + 0.3 * rng.normal(size=n) > 0, 1, -1)
    return X, y


def saved_loaded_and_learning_on(est, path, X, X_more, y_more):
    """Save `est` to `path` and load it: the same decisions on X, and after both learn
    (X_more, y_more) still the same; the loaded estimator."""
    import cwkit
    cwkit.save(est, path)
    back = cwkit.load(path)
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
    est.partial_fit(X_more, y_more)
    back.partial_fit(X_more, y_more)
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
    return back


def last_iterate(name, **params):
    """``cwkit.make(name, **params)``, its last iterate where the name leaves ``average``
    to "auto": the model the per-round references follow (and every name's default
    before "auto"; ``average=False`` gives it bit for bit). An ``average`` given is kept."""
    import cwkit
    est = cwkit.make(name, **params)
    if est.average == "auto":
        est.set_params(average=False)
    return est

