"""average=True: coef_ / intercept_ are the mean of the weights after rounds 1..T.

The reference is plain numpy: the per-round weights of the same estimator
without averaging, read after every single-row ``partial_fit`` (what it reports
after round t), averaged by ``np.mean``.
"""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import cwkit

from conftest import BINARY_CASES, OTHER_CASES, case_id

CASES = BINARY_CASES + OTHER_CASES
IDS = [case_id(c) + ("-sliding" if c[1].get("window") == "sliding" else "") for c in CASES]
TASKS = ("binary", "top1", "topk", "ovr")
RTOL = 1e-12


def _data(task, n=24, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d)
    X[rng.random(X.shape) < 0.3] = 0.0
    X[5] = 0.0                                   # a zero row
    K = 2 if task == "binary" else 3
    W = rng.normal(size=(d, K))
    y = np.argmax(X @ W + 0.5 * rng.normal(size=(n, K)), axis=1)
    y[:K] = np.arange(K)                         # every class early
    return X, y


def _params(params, task):
    p = dict(params)
    if task != "binary":
        p["multiclass"] = task
        if task == "topk":
            p["k"] = 2
    return p


def _state(est):
    return np.column_stack([est.coef_, est.intercept_])


def _per_round(name, p, X, y, passes=1):
    """The weights after every round of the estimator without averaging (or None if
    the rule has no such form)."""
    est = cwkit.make(name, **p, average=False)
    out = []
    classes = np.unique(y)
    try:
        for _ in range(passes):
            for i in range(len(y)):
                est.partial_fit(X[i:i + 1], y[i:i + 1], classes=classes)
                out.append(_state(est))
    except ValueError as exc:
        if "multiclass='topk'" in str(exc):
            return None
        raise
    return np.array(out)


def _has_form(name, p, X, y):
    """Whether the rule has the form `p` asks for (top-k exists for some rules only)."""
    try:
        cwkit.make(name, **p).partial_fit(X[:1], y[:1], classes=np.unique(y))
    except ValueError as exc:
        if "multiclass='topk'" in str(exc):
            return False
        raise
    return True


def _close(actual, expected):
    scale = np.max(np.abs(expected)) if expected.size else 0.0
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=RTOL * scale)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_average_after_every_round_equals_mean_of_per_round_weights(case, task, fit_intercept):
    name, params = case
    X, y = _data(task)
    p = _params(params, task)
    p["fit_intercept"] = fit_intercept
    rounds = _per_round(name, p, X, y)
    classes = np.unique(y)
    if rounds is None:       # no top-k form: refused with averaging too
        with pytest.raises(ValueError, match="multiclass='topk'"):
            cwkit.make(name, average=True, **p).partial_fit(X[:1], y[:1], classes=classes)
        return
    for Xk in (X, sp.csr_matrix(X)):
        est = cwkit.make(name, average=True, **p)
        for i in range(len(y)):
            est.partial_fit(Xk[i:i + 1], y[i:i + 1], classes=classes)
            _close(_state(est), rounds[:i + 1].mean(axis=0))
        # scores and predictions use the averaged weights
        W = _state(est)
        Xa = np.column_stack([X, np.full(len(X), 1.0 if fit_intercept else 0.0)])
        expect = Xa @ W.T
        _close(np.atleast_2d(est.decision_function(Xk).T).T,
               expect[:, 0:1] if W.shape[0] == 1 else expect)


@pytest.mark.parametrize("task", ["binary", "top1", "ovr"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_fit_passes_and_calls_count_every_row(case, task):
    """fit with two passes, and partial_fit in uneven pieces: T counts every row."""
    name, params = case
    X, y = _data(task, seed=1)
    p = _params(params, task)
    rounds = _per_round(name, p, X, y, passes=2)
    est = cwkit.make(name, average=True, n_passes=2, **p).fit(X, y)
    _close(_state(est), rounds.mean(axis=0))
    assert est.t_ == 2 * len(y)
    est = cwkit.make(name, average=True, **p)
    for a, b in ((0, 7), (7, 8), (8, 24)):
        est.partial_fit(X[a:b], y[a:b], classes=np.unique(y))
    _close(_state(est), rounds[:len(y)].mean(axis=0))


def test_avg_perceptron_is_perceptron_with_average():
    X, y = _data("top1")
    for task in ("binary", "top1", "ovr"):
        p = _params({}, task)
        Xt, yt = (X, y) if task != "binary" else (X, y % 2)
        a = cwkit.make("avg-perceptron", **p).fit(Xt, yt)
        b = cwkit.make("perceptron", average=True, **p).fit(Xt, yt)
        assert np.array_equal(a.coef_, b.coef_) and np.array_equal(a.intercept_, b.intercept_)
    assert cwkit.make("avg-perceptron", average=False).average is False


@pytest.mark.parametrize("name, params", [("reg-pa", {"alpha": 1e30}),
                                          ("soft-reg-pa", {"alpha": 1e30}),
                                          ("reg-pa", {"alpha": 0.5}),
                                          ("l2-pa", {"beta": 1.5})])
@pytest.mark.parametrize("task", ["binary", "top1", "ovr"])
def test_scaled_rules_through_rescales(name, params, task):
    """w = s v shrinks by 1/Z per update: a huge alpha takes s out of [1e-100, 1e100] on
    every update, alpha = 0.5 and a tight L2 ball every few; the lazy sum must follow
    every rescale of v."""
    X, y = _data(task, n=60, seed=2)
    p = _params(params, task)
    rounds = _per_round(name, p, X, y)
    est = cwkit.make(name, average=True, **p)
    classes = np.unique(y)
    for i in range(len(y)):
        est.partial_fit(X[i:i + 1], y[i:i + 1], classes=classes)
        _close(_state(est), rounds[:i + 1].mean(axis=0))
    aux = est._model.state["aux"]
    assert np.all(np.atleast_2d(aux)[:, 0] >= 1e-100)      # it did rescale (s kept in range)


@pytest.mark.parametrize("lam", [0.0, 0.02, 0.3])
def test_adagrad_with_l1_shrinking_every_round(lam):
    """Between two updates of a coordinate its RDA weight moves every round (lam t):
    the closed-form sums over those stretches, weights truncated to 0 included."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 30))
    X[rng.random(X.shape) < 0.9] = 0.0          # long stretches without a touch
    y = (X @ rng.normal(size=30) > 0).astype(int)
    p = {"eta": 0.5, "lam": lam, "delta": 0.1}
    rounds = _per_round("adagrad", p, X, y)
    for Xk in (X, sp.csr_matrix(X)):
        est = cwkit.make("adagrad", average=True, **p)
        for i in range(len(y)):
            est.partial_fit(Xk[i:i + 1], y[i:i + 1], classes=[0, 1])
            _close(_state(est), rounds[:i + 1].mean(axis=0))
    if lam > 0.1:       # a weight that was nonzero is truncated to 0 later
        nz = rounds != 0
        assert (nz[:-1] & ~nz[1:]).any()


@pytest.mark.parametrize("name", ["arow", "cw"])
def test_proba_uses_the_averaged_mean(name):
    X, y = _data("binary", seed=4)
    est = cwkit.make(name, average=True).fit(X, y)
    plain = cwkit.make(name).fit(X, y)
    m = est.decision_function(X)
    _, v = plain._model.proba_args(cwkit._rowdata.as_rows(X), 1.0)
    from scipy.special import ndtr
    p = est.predict_confidence(X)[:, 1]
    np.testing.assert_allclose(p, np.where(m == 0, 0.5, ndtr(m / np.sqrt(v))), rtol=1e-12)


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_save_load_keeps_the_average(case, task, tmp_path):
    """Saved after 10 rows (mid-group for mini-batch PA with B = 3), loaded, and
    fed the rest: the same averaged weights as without the file."""
    name, params = case
    X, y = _data(task, seed=5)
    if not _has_form(name, _params(params, task), X, y):
        return          # no top-k form (refused with averaging too: the first test)
    est = cwkit.make(name, average=True, **_params(params, task))
    est.partial_fit(X[:10], y[:10], classes=np.unique(y))
    path = tmp_path / "m.cwk"
    cwkit.save(est, path)
    back = cwkit.load(path)
    assert back.average is True
    np.testing.assert_array_equal(back.coef_, est.coef_)
    back.partial_fit(X[10:], y[10:])
    est.partial_fit(X[10:], y[10:])
    np.testing.assert_array_equal(back.coef_, est.coef_)
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("task", TASKS)
def test_state_size_counts_the_averaging_state(case, task):
    name, params = case
    X, y = _data(task)
    p = _params(params, task)
    if not _has_form(name, p, X, y):
        return
    est = cwkit.make(name, average=True, **p).fit(X, y)
    from cwkit.models.size import state_size
    assert state_size(est._spec(len(est.classes_), X.shape[1])) == sum(
        a.size for a in est._model.named_state().values())


@pytest.mark.parametrize("K, task", [(2, "top1"), (3, "top1"), (3, "ovr")])
def test_variance_collapse_is_watched_as_without_averaging(K, task):
    """The collapse watch looks at the learning state, averaged or not: same warning."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(300, 5)), rng.integers(0, K, 300)
    msgs = []
    for average in (False, True):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cwkit.make("cw-stdev", eta=0.95, average=average, multiclass=task,
                       covariance="diag").fit(X, y)
        msgs.append([str(w.message) for w in caught])
    assert msgs[0] == msgs[1] and len(msgs[0]) == 1


def test_cli_takes_average_per_algorithm(capsys, tmp_path):
    """--algos NAME:average=true (and --param NAME.average=...) reach the estimator;
    the test error is that of the averaged weights."""
    import json

    from cwkit.cli import main
    X, y = _data("binary", n=60, seed=6)
    path = tmp_path / "d.svm"
    path.write_text("".join(f"{2 * label - 1} " + " ".join(f"{j + 1}:{v!r}"
                                                          for j, v in enumerate(row.tolist()) if v)
                            + "\n" for row, label in zip(X, y)))
    assert main(["eval", str(path), "--test", str(path), "--algos",
                 "arow:average=false,arow:average=true", "--format", "json", "--quiet"]) == 0
    plain, avg = json.loads(capsys.readouterr().out)["tasks"][0]["results"]
    assert avg["params"]["average"] is True and plain["params"]["average"] is False
    est = cwkit.make("arow", average=True).fit(X, 2 * y - 1)
    assert avg["test_error"] == pytest.approx(np.mean(est.predict(X) != 2 * y - 1))
    assert avg["test_error"] == avg["avg_test_error"] == plain["avg_test_error"]
    assert plain["test_error"] == plain["last_test_error"] == avg["last_test_error"]
    assert avg["mistakes"] == plain["mistakes"]          # it learns as without averaging
    assert main(["eval", str(path), "--algos", "arow:average=maybe", "--quiet"]) != 0


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_clean_labels_count_without_changing_the_average(case, task):
    """partial_fit(..., y_clean=): the rounds are counted against the clean labels,
    the model learns the noisy ones; averaged as without them, counted as the plain
    model counts them."""
    name, params = case
    X, y = _data(task, seed=7)
    p = _params(params, task)
    if not _has_form(name, p, X, y):
        return
    rng = np.random.default_rng(7)
    noisy = np.where(rng.random(len(y)) < 0.3, rng.permutation(y), y)
    classes = np.unique(y)
    fits = []
    for average, clean in ((True, y), (True, None), (False, y)):
        est = cwkit.make(name, average=average, **p)
        for a, b in ((0, 7), (7, 8), (8, len(y))):
            est.partial_fit(X[a:b], noisy[a:b], classes=classes,
                            y_clean=None if clean is None else clean[a:b])
        fits.append(est)
    np.testing.assert_array_equal(_state(fits[0]), _state(fits[1]))
    assert fits[0].mistakes_ == fits[2].mistakes_ and fits[0].t_ == fits[1].t_ == len(y)


@pytest.mark.parametrize("window", ["block", "sliding"])
@pytest.mark.parametrize("task", TASKS)
def test_minibatch_groups_across_calls(task, window):
    """Mini-batch PA with B = 4 fed in pieces that end inside groups (1, 2, 3 rows
    pending, a piece shorter than a group): after every call the mean over every row
    of the model reported after it (the incomplete group applied provisionally)."""
    X, y = _data(task, n=40, seed=8)
    p = _params({"C": 0.5, "batch_size": 4, "window": window}, task)
    rounds = _per_round("bpa2", p, X, y)
    est = cwkit.make("bpa2", average=True, **p)
    classes = np.unique(y)
    cuts = [0, 1, 3, 6, 7, 13, 14, 15, 21, 30, 33, 40]
    for a, b in zip(cuts[:-1], cuts[1:]):
        est.partial_fit(X[a:b], y[a:b], classes=classes)
        _close(_state(est), rounds[:b].mean(axis=0))
    assert est.t_ == len(y)


@pytest.mark.parametrize("task", TASKS)
def test_l1pa_average_through_support_changes(task):
    """A tight L1 ball: updates shrink and zero weights off the row (the support
    list changes); the lazy sum follows every changed coordinate."""
    X, y = _data(task, n=60, seed=9)
    p = _params({"beta": 2.5}, task)
    rounds = _per_round("l1-pa", p, X, y)
    est = cwkit.make("l1-pa", average=True, **p)
    classes = np.unique(y)
    for i in range(len(y)):
        est.partial_fit(X[i:i + 1], y[i:i + 1], classes=classes)
        _close(_state(est), rounds[:i + 1].mean(axis=0))
    nz = rounds != 0
    assert (nz[:-1] & ~nz[1:]).any()      # some weight went back to 0


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("name, params", [("pa1", {}), ("pa2", {"slack": "shared"}),
                                          ("arow", {"covariance": "diag"}),
                                          ("arow", {"covariance": "full"}),
                                          ("l1-pa", {"beta": 10.0}), ("bpa1", {"batch_size": 3})])
def test_topk_with_more_competitors(name, params, k):
    """Top-k with k = 2 and k = 3 of K = 4 classes (k = K - 1: every competitor)."""
    rng = np.random.default_rng(10)
    X = rng.normal(size=(30, 4))
    y = np.argmax(X @ rng.normal(size=(4, 4)) + 0.5 * rng.normal(size=(30, 4)), axis=1)
    y[:4] = np.arange(4)
    p = {**params, "multiclass": "topk", "k": k}
    rounds = _per_round(name, p, X, y)
    est = cwkit.make(name, average=True, **p)
    for i in range(len(y)):
        est.partial_fit(X[i:i + 1], y[i:i + 1], classes=np.arange(4))
        _close(_state(est), rounds[:i + 1].mean(axis=0))


def _last_iterate_cases():
    """Every registry name with its defaults, plus the cases of the reference tests."""
    return [(e["name"], {}) for e in cwkit.algorithms()] + CASES


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("case", _last_iterate_cases(),
                         ids=[case_id(c) + ("-default" if not c[1] else "")
                              + ("-sliding" if c[1].get("window") == "sliding" else "")
                              for c in _last_iterate_cases()])
def test_last_iterate_is_the_model_without_averaging_bit_for_bit(case, task, sparse):
    """Model.last_weights / last_scores of average=True equal weights / scores of
    average=False after the same rows (two partial_fit calls), exactly."""
    name, params = case
    X, y = _data(task, n=30)
    Xs = sp.csr_matrix(X) if sparse else X
    p = _params(params, task)
    try:
        plain = cwkit.make(name, **p, average=False)
        avg = cwkit.make(name, **p, average=True)
    except ValueError as exc:
        assert "multiclass='topk'" in str(exc)
        return
    classes = np.unique(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for est in (plain, avg):
            try:
                est.partial_fit(Xs[:17], y[:17], classes=classes)
            except ValueError as exc:
                assert "multiclass='topk'" in str(exc)
                return
            est.partial_fit(Xs[17:], y[17:])
    rows = avg._rows(Xs)
    assert np.array_equal(avg._model.last_weights(), plain._model.weights())
    assert np.array_equal(avg._model.last_scores(rows, avg._bias),
                          plain._model.scores(plain._rows(Xs), plain._bias))
    assert np.array_equal(avg._predict_last(Xs), plain.predict(Xs))
    # the average itself is another model (the rows change the weights)
    assert not np.array_equal(avg._model.weights(), plain._model.weights())
    # without averaging, the last iterate is the model itself
    assert np.array_equal(plain._model.last_weights(), plain._model.weights())
    assert np.array_equal(plain._predict_last(Xs), plain.predict(Xs))


@pytest.mark.parametrize("budget", [None, 7])
@pytest.mark.parametrize("name", ["avg-perceptron", "pa1", "reg-pa"])
@pytest.mark.parametrize("multiclass", ["binary", "top1", "ovr"])
def test_kernel_last_iterate_is_the_kernel_model_without_averaging(multiclass, name,
                                                                   budget):
    X, y = _data("binary" if multiclass == "binary" else "top1", n=30)
    p = {"kernel": "rbf", "gamma": 0.5, "budget": budget}
    if multiclass != "binary":
        p["multiclass"] = multiclass
    plain = cwkit.make("perceptron" if name == "avg-perceptron" else name, **p,
                       average=False).fit(X, y)
    avg = cwkit.make(name, **p, **({} if name == "avg-perceptron" else {"average": True}))
    avg.fit(X, y)
    rows = avg._rows(X)
    assert np.array_equal(avg._model.last_scores(rows, avg._bias),
                          plain.decision_function(X))
    assert np.array_equal(avg._predict_last(X), plain.predict(X))
    assert not np.array_equal(avg.decision_function(X), plain.decision_function(X))
