"""Where scikit-learn is installed: clone, Pipeline, GridSearchCV and its estimator checks."""
import numpy as np
import pytest
from conftest import make_binary

import cwkit

sklearn = pytest.importorskip("sklearn")

NAMES = [a["name"] for a in cwkit.algorithms()]


#: The one documented deviation: CW and AROW's predict_proba is the Gaussian-weight
#: probability Phi(mu.x / sqrt(x^T Sigma x)) ([ECCW08] Sect. 2), which ranks examples by the
#: variance-normalised margin, while decision_function is the margin mu.x itself.
GAUSSIAN_PROBA = {"check_decision_proba_consistency":
                  "predict_proba ranks by mu.x / sqrt(x^T Sigma x), decision_function by mu.x"}
#: With covariance="auto" (a full covariance on the checks' dense three-class blobs),
#: CW-Stdev's probability of being the argmax, which leaves out the cross-class covariances
#: of the stacked blocks, has its largest value at another class than the largest mean
#: score on 1 row of the 300 of check_classifiers_train.
FULL_ARGMAX_PROBA = {"check_classifiers_train":
                     "argmax of P(argmax) differs from argmax of mu.x on 1 of 300 rows"}


@pytest.mark.parametrize("name", NAMES)
def test_check_estimator(name):
    from sklearn.utils.estimator_checks import check_estimator
    est = cwkit.make(name, shuffle=True, random_state=0)
    expected = GAUSSIAN_PROBA if hasattr(est, "predict_proba") else {}
    if name == "cw-stdev":
        expected = {**expected, **FULL_ARGMAX_PROBA}
    check_estimator(est, expected_failed_checks=expected)


@pytest.mark.parametrize("name", ["pa1", "arow", "cw", "reg-pa"])
def test_clone_pipeline_gridsearch(name):
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = make_binary(np.random.default_rng(0), n=120, d=5)
    est = cwkit.make(name, shuffle=True, random_state=0)
    twin = clone(est)
    assert twin.get_params() == est.get_params() and twin is not est
    pipe = make_pipeline(StandardScaler(), est).fit(X, y)
    assert pipe.score(X, y) > 0.7
    key = {"pa1": "C", "arow": "r", "cw": "eta", "reg-pa": "alpha"}[name]
    grid = {"pa1": [0.1, 1.0], "arow": [0.1, 1.0], "cw": [0.7, 0.9], "reg-pa": [0.01, 0.1]}
    search = GridSearchCV(est, {key: grid[name]}, cv=3).fit(X, y)
    assert search.best_params_[key] in grid[name]
    assert getattr(search.best_estimator_, key) == search.best_params_[key]
