"""Where scikit-learn is installed: clone, Pipeline, GridSearchCV and its estimator checks."""
import numpy as np
import pytest
from conftest import make_binary

import cwkit

sklearn = pytest.importorskip("sklearn")

NAMES = [a["name"] for a in cwkit.algorithms()]


#: The checks cwkit departs from by design: a streaming model's feature space grows, so
#: rows of another width than those seen are neither an error to learn nor to score.
WIDTH_CHECKS = {
    name: "rows of any width are scored (unseen features weigh 0) and learnt (the model "
    "grows)" for name in ("check_n_features_in_after_fitting", "check_classifiers_train",
                          "check_estimators_partial_fit_n_features")}


@pytest.mark.parametrize("name", NAMES)
def test_check_estimator(name):
    """Every check passes but those of a fixed width (predict_proba included: it ranks
    rows as decision_function does)."""
    from sklearn.utils.estimator_checks import check_estimator
    assert hasattr(cwkit.make(name), "predict_proba")
    check_estimator(cwkit.make(name, shuffle=True, random_state=0),
                    expected_failed_checks=WIDTH_CHECKS)


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
