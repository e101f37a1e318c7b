"""cwkit.evaluate.train, the entry point of `cwkit train`: the model it fits is the one
an estimator's own fit / partial_fit gives on the rows in the same order, bit for bit."""
from pathlib import Path

import numpy as np
import pytest

from cwkit import datasets
from cwkit.evaluate import AlgoSpec, Learner, train
from cwkit.registry import algorithms, make
from cwkit.sources import ArraySource, SvmlightSource

NAMES = [e["name"] for e in algorithms()]


def outputs(model, X):
    """What a fitted model shows: weights, scores, probabilities, round counter."""
    out = {"coef_": model.coef_, "intercept_": model.intercept_,
           "scores": model.decision_function(X), "t_": np.array(model.t_),
           "classes_": model.classes_}
    if hasattr(model, "predict_proba"):
        out["proba"] = model.predict_proba(X)
    return out


def assert_same_model(a, b, X, y):
    """Equal outputs bit for bit, now and after both learn ``X, y`` once more (so the
    state that outputs do not show, e.g. covariances or a pending mini-batch, agrees)."""
    for _ in range(2):
        out_a, out_b = outputs(a, X), outputs(b, X)
        assert out_a.keys() == out_b.keys()
        for key in out_a:
            assert out_a[key].dtype == out_b[key].dtype, key
            assert np.array_equal(out_a[key], out_b[key]), key
        a.partial_fit(X, y)
        b.partial_fit(X, y)


@pytest.mark.parametrize("name", NAMES)
def test_train_in_stored_order_is_fit_without_shuffling(name):
    """The shipped file streamed in chunks of 100 rows, two passes = fit(shuffle=False)."""
    X, y = datasets.load_breast_cancer()
    source = SvmlightSource(datasets.shipped_data_path(), batch_size=100)  # not scanned
    learner = train(source, AlgoSpec(name), passes=2)
    reference = make(name, shuffle=False, n_passes=2).fit(X, y)
    assert isinstance(learner, Learner) and learner.examples == 2 * y.size
    assert (learner.mistakes, learner.updates) == (reference.mistakes_, reference.n_updates_)
    assert_same_model(learner.model, reference, X, y)


@pytest.mark.parametrize("name", ["pa1", "arow", "sop", "bpa1", "l1-pa"])
def test_train_shuffled_is_partial_fit_in_that_order(name):
    """Pass p of seed s is numpy.random.default_rng([s, p]).permutation (one window)."""
    X, y = datasets.load_breast_cancer()
    source = ArraySource(X, y, "shipped", batch_size=64)
    spec = AlgoSpec(name, params={"fit_intercept": False})
    learner = train(source, spec, passes=3, shuffle=True, seed=7)
    reference = make(name, fit_intercept=False)
    for p in range(3):
        order = np.random.default_rng([7, p]).permutation(y.size)
        reference.partial_fit(X[order], y[order], classes=np.unique(y))
    assert_same_model(learner.model, reference, X, y)


@pytest.mark.parametrize("multiclass", [{"multiclass": "top1"}, {"multiclass": "topk", "k": 2},
                                        {"multiclass": "ovr"}])
def test_train_multiclass(multiclass):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    y = np.argmax(X[:, :3] + 0.3 * rng.normal(size=(300, 3)), axis=1) * 10
    learner = train(ArraySource(X, y, "three", batch_size=50), AlgoSpec("arow"),
                    multiclass_params=multiclass)
    reference = make("arow", shuffle=False, **multiclass).fit(X, y)
    assert_same_model(learner.model, reference, X, y)
    assert learner.model.classes_.tolist() == [0, 10, 20]


def test_train_uses_the_spec_params():
    X, y = datasets.load_breast_cancer()
    learner = train(ArraySource(X, y, "shipped"), AlgoSpec("pa1", params={"C": 0.05}))
    assert learner.model.get_params()["C"] == 0.05
    assert_same_model(learner.model, make("pa1", C=0.05, shuffle=False).fit(X, y), X, y)


def test_the_python_example_of_docs_cli_runs(capsys):
    """The example of docs/cli.md, section "From Python", as written."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    section = doc[doc.index("## From Python"):]
    start = section.index("```python\n") + len("```python\n")
    code = section[start:section.index("\n```", start)]
    namespace = {}
    exec(code, namespace)
    out = capsys.readouterr().out
    assert "breast-cancer_scale.svm" in out and "arow *" in out
    assert namespace["model"].classes_.tolist() == [-1, 1]


def test_evaluate_keeps_going_past_a_failing_learner_and_reports_the_row():
    from cwkit.evaluate import evaluate

    X, y = datasets.make_twonorm(300, random_state=0)
    X[200, 5] = 1e200  # its squared norm overflows: every rule refuses row 201
    specs = [AlgoSpec("pa"), AlgoSpec("arow")]
    task = evaluate(ArraySource(X, y, "twonorm", batch_size=64), specs, shuffle=True,
                    cv=3)
    for res in task["results"]:
        assert res["failed"]["row"] == 201 and res["failed"]["file"] == "twonorm"
        assert res["failed"]["error"].startswith("the score or squared norm")


def test_evaluate_interrupted_returns_what_is_done():
    from cwkit.evaluate import Interrupted, evaluate

    class StopAt:
        def start_run(self, label):
            pass

        def end_run(self):
            pass

        def update(self, seen, learners):
            if seen >= 128:
                raise KeyboardInterrupt

    X, y = datasets.make_twonorm(300, random_state=0)
    with pytest.raises(Interrupted) as info:
        evaluate(ArraySource(X, y, "twonorm", batch_size=64), [AlgoSpec("perceptron")],
                 progress=StopAt())
    task = info.value.result
    assert task["interrupted"] and task["results"][0]["examples"] == 128
    assert task["results"][0]["mistakes"] == make("perceptron").partial_fit(
        X[:128], y[:128]).mistakes_
