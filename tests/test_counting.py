"""The per-pass options of the drivers' counters (``Model.run_with``): the pre-update
scores of the rounds, and rounds counted against other (clean) labels."""
import numpy as np
import pytest
import scipy.sparse as sp

import cwkit
from conftest import last_iterate
from cwkit import _core
from cwkit._rowdata import as_rows

import reference as ref

BINARY = [("perceptron", {}, {}), ("pa1", {"C": 0.5}, {"C": 0.5}),
          ("reg-pa", {"alpha": 0.05}, {"alpha": 0.05}),
          ("cw", {"eta": 0.8}, {"eta": 0.8}), ("cw-stdev", {"eta": 0.8}, {"eta": 0.8}),
          ("arow", {"r": 0.5}, {"r": 0.5}),
          ("arow", {"r": 0.5, "covariance": "full"}, {"r": 0.5, "covariance": "full"}),
          ("arow-h", {"r": 2.0}, {"r": 2.0}), ("sop", {}, {}),
          ("adagrad", {"eta": 0.5, "lam": 0.01, "delta": 1e-3},
           {"eta": 0.5, "lam": 0.01, "delta": 1e-3})]


def _binary_data(n=120, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.7)
    y = np.where(X @ rng.normal(size=d) + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def _multiclass_data(n=120, d=6, K=3, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.7)
    y = np.argmax(X @ rng.normal(size=(d, K)) + 0.7 * rng.normal(size=(n, K)), axis=1)
    return X, y


def _model(name, n_classes, n_features, **params):
    """The model of `name`, with the diagonal covariance unless `params` give one and an
    intercept feature of 1, as the references."""
    est = last_iterate(name, **params)
    if "covariance" in est.get_params() and "covariance" not in params:
        est.set_params(covariance="diag")
    est._choose(as_rows(np.ones((1, n_features))), n_classes)
    est._reset(np.arange(n_classes), n_features)
    return est._model


def _reference_scores(rule, X, y, covariance="diag", **params):
    """The pre-update score of every round, per example (plain numpy)."""
    Xa = np.hstack([X, np.ones((len(X), 1))])
    st = ref.init_state(rule, Xa.shape[1], covariance=covariance, **params)
    out = []
    for x, yt in zip(Xa, y):
        out.append(ref.score(rule, st, x, covariance=covariance, **params))
        st, _ = ref.step(rule, st, x, float(yt), covariance=covariance, **params)
    return np.array(out)


@pytest.mark.parametrize("name, params, ref_params", BINARY,
                         ids=[f"{b[0]}-{b[1].get('covariance', 'diag')}" for b in BINARY])
def test_binary_scores_are_the_pre_update_scores(name, params, ref_params):
    X, y = _binary_data()
    model = _model(name, 2, X.shape[1], **params)
    res = model.run_with(as_rows(X), y, np.arange(len(y)), 1.0, scores=True)
    assert res.status == _core.Status.OK and res.scores.shape == (len(y),)
    expected = _reference_scores(name, X, y, **ref_params)
    # mistakes are counted with these very scores
    assert res.mistakes == np.count_nonzero(y * res.scores <= 0)
    np.testing.assert_allclose(res.scores, expected, rtol=1e-12, atol=1e-12)


def test_binary_full_sop_scores_mu_x():
    """Full SOP predicts with the sign of mu.x; its scores are mu.x (the test point's
    1 + x^T Sigma x is not divided out)."""
    X, y = _binary_data()
    model = _model("sop", 2, X.shape[1], covariance="full")
    res = model.run_with(as_rows(X), y, np.arange(len(y)), 1.0, scores=True)
    expected = _reference_scores("sop", X, y, covariance="full")
    Xa = np.hstack([X, np.ones((len(X), 1))])
    replay = _model("sop", 2, X.shape[1], covariance="full")
    v = []
    for k in range(len(y)):
        v.append(Xa[k] @ replay.covariance() @ Xa[k])
        replay.run(as_rows(X[k:k + 1]), y[k:k + 1], np.arange(1), 1.0)
    np.testing.assert_allclose(res.scores / (1.0 + np.array(v)), expected, rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("name, params", [
    ("perceptron", {}), ("pa1", {"multiclass": "ovr"}), ("pa2", {"multiclass": "topk", "k": 2}),
    ("cw", {}), ("arow", {"multiclass": "ovr", "diag_update": "direct"}),
    ("arow", {"multiclass": "topk", "k": 2}), ("arow", {"covariance": "full"}),
    ("sop", {}), ("sop", {"covariance": "full"}), ("adagrad", {}), ("l1-pa", {}),
    ("l1-pa", {"multiclass": "ovr"}), ("bpa2", {"window": "sliding"}),
    ("bpa1", {"multiclass": "ovr", "window": "sliding"}),
    ("pa-ls", {"multiclass": "topk", "k": 2})])
def test_multiclass_scores_are_the_pre_update_class_scores(name, params):
    """Row k: the K class scores of the state after rows 0..k-1 (its test-time scores)."""
    X, y = _multiclass_data()
    rows = as_rows(X)
    model = _model(name, 3, X.shape[1], **params)
    res = model.run_with(rows, y, np.arange(len(y)), 1.0, scores=True)
    assert res.status == _core.Status.OK and res.scores.shape == (len(y), 3)
    assert res.mistakes == np.count_nonzero(np.argmax(res.scores, axis=1) != y)
    replay = _model(name, 3, X.shape[1], **params)
    expected = []
    for k in range(len(y)):
        expected.append(replay.scores(as_rows(X[k:k + 1]), 1.0)[0])
        replay.run(as_rows(X[k:k + 1]), y[k:k + 1], np.arange(1), 1.0)
    np.testing.assert_allclose(res.scores, expected, rtol=1e-12, atol=1e-12)


def test_minibatch_block_scores_are_those_of_the_group_start():
    """Mini-batch PA in blocks predicts a group's rows with the model before the group."""
    X, y = _binary_data()
    model = _model("bpa1", 2, X.shape[1], batch_size=4)
    order = np.arange(len(y))
    res = model.run_with(as_rows(X), y, order, 1.0, scores=True)
    w = np.zeros(X.shape[1] + 1)
    expected = []
    for start in range(0, len(y), 4):
        expected.extend(X[start:start + 4] @ w[:-1] + w[-1])
        probe = _model("bpa1", 2, X.shape[1], batch_size=4)
        probe.run(as_rows(X[:start + 4]), y[:start + 4], order[:start + 4], 1.0)
        w = probe.state["w0"].copy()
    np.testing.assert_allclose(res.scores, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name, K, params", [("pa1", 2, {}), ("cw", 3, {}),
                                             ("bpa1", 2, {"batch_size": 3}),
                                             ("bpa1", 3, {"batch_size": 3})])
def test_scores_across_calls_dense_csr_and_order(name, K, params):
    """Dense and CSR rows give the same scores bit for bit; calls that carry rows over
    (mini-batch PA) report the rows of the call; row k of the scores is order[k]."""
    X, y = _binary_data() if K == 2 else _multiclass_data()
    order = np.random.default_rng(3).permutation(len(y))
    out = []
    for Xs in (X, sp.csr_matrix(X)):
        model = _model(name, K, X.shape[1], **params)
        a = model.run_with(as_rows(Xs[:50]), y[:50], order[order < 50], 1.0, scores=True)
        b = model.run_with(as_rows(Xs[50:]), y[50:], order[order >= 50] - 50, 1.0,
                           scores=True)
        out.append(np.concatenate([a.scores, b.scores]))
    assert np.array_equal(out[0], out[1])
    assert len(out[0]) == len(y)


def test_no_scores_unless_asked_and_none_after_a_failure():
    X, y = _binary_data()
    model = _model("pa", 2, X.shape[1])
    assert model.run_with(as_rows(X), y, np.arange(len(y)), 1.0).scores is None
    X[7, 0] = 1e200      # its squared norm overflows: the pass stops at row 7
    res = model.run_with(as_rows(X), y, np.arange(len(y)), 1.0, scores=True)
    assert (res.status, res.pos, res.scores) == (_core.Status.NONFINITE_INPUT, 7, None)


def _former_noise_mistakes(name, params, X, y_clean, y_train, flipped, classes):
    """What ``cwkit eval --noise`` counted before its compiled path: the rows learnt one
    call each; a flipped row predicted first with ``decision_function`` (binary, a score
    of 0 errs) or ``predict`` (multi-class) against its clean label, the others counted
    by ``mistakes_``."""
    est = last_iterate(name, **params)
    mistakes = 0
    for i in range(len(y_clean)):
        if flipped[i]:
            if i == 0:           # the zero state scores 0 everywhere
                mistakes += len(classes) == 2 or y_clean[i] != classes[0]
            elif len(classes) == 2:
                sign = 1.0 if y_clean[i] == classes[1] else -1.0
                mistakes += sign * est.decision_function(X[i:i + 1])[0] <= 0
            else:
                mistakes += est.predict(X[i:i + 1])[0] != y_clean[i]
        est.partial_fit(X[i:i + 1], y_train[i:i + 1], classes=classes)
        if not flipped[i]:
            mistakes += est.last_mistakes_
    return mistakes


NOISY = [("perceptron", {}), ("pa", {}), ("pa1", {"C": 0.1}), ("pa2", {}), ("pa-ls", {}),
         ("reg-pa", {}), ("l2-pa", {"beta": 5.0}), ("soft-reg-pa", {}), ("cw", {}),
         ("cw-stdev", {}), ("cw", {"covariance": "full"}), ("arow", {}),
         ("arow", {"diag_update": "direct"}), ("arow-h", {"covariance": "full"}), ("sop", {}),
         ("sop", {"covariance": "full"}), ("adagrad", {"lam": 0.01}), ("l1-pa", {}),
         ("bpa1", {"window": "sliding"}), ("bpa2", {"batch_size": 1})]
MULTICLASS = [{"multiclass": "top1"}, {"multiclass": "ovr"}]


@pytest.mark.slow
@pytest.mark.parametrize("K", [2, 3])
@pytest.mark.parametrize("name, params", NOISY, ids=[f"{n}-{sorted(p.items())}" for n, p in NOISY])
def test_noise_counts_are_those_of_the_former_per_row_computation(name, params, K):
    """``evaluate(noise=...)`` counts flipped rows in the compiled pass: the same
    mistakes as the former per-row computation, for every rule whose prediction is its
    decision_function (all but avg-perceptron and mini-batch PA in blocks of B > 1)."""
    from cwkit.evaluate import AlgoSpec, evaluate
    from cwkit.sources import ArraySource

    X, y = _binary_data(n=160, seed=4) if K == 2 else _multiclass_data(n=160, seed=4)
    if K == 2:
        y = np.where(y > 0, 7, 3)                  # labels other than +-1 and 0..K-1
    classes = np.unique(y)
    X = X * 3.0
    for mc in ([{}] if K == 2 else MULTICLASS + [{"multiclass": "topk", "k": 2}]):
        if mc.get("multiclass") == "topk" and name not in ("pa1", "pa2", "pa-ls", "arow"):
            continue
        index = np.arange(len(y))
        y_train, flipped = cwkit.datasets.flip_labels(y, 0.3, classes=classes, seed=9,
                                                      index=index)
        expected = _former_noise_mistakes(name, {**params, **mc}, X, y, y_train, flipped,
                                          classes)
        task = evaluate(ArraySource(X, y, "t", batch_size=23),
                        [AlgoSpec(name, params)], noise=0.3, seed=9, multiclass_params=mc)
        (res,) = task["results"]
        assert res["failed"] is None
        assert res["mistakes"] == expected, mc
