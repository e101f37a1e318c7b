"""Importance weights (sample_weight, class_weight) against the plain numpy reference."""
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import BINARY_CASES, case_id, make_binary
import reference
from reference import binary_run, binary_scores, l1pa_top1_run, multiclass_run
from reference_steps import l1pa_step
from test_multiclass import _close, _ill_posed_round, make_multiclass, symmetry_broken

import cwkit

RTOL = 1e-12


def make(name, **params):
    """`cwkit.make` with the last iterate (``average=False``), the model the reference
    keeps, unless the name fixes it."""
    fixed = name == "avg-perceptron"
    return cwkit.make(name, **params if fixed else {"average": False, **params})
LABELS = np.array(["ant", "bee", "cat", "dog"])


def _weights(rng, n):
    """Weights in [0, 3) with exact zeros and ones among them."""
    w = rng.uniform(0.0, 3.0, size=n)
    w[::7] = 0.0
    w[3::5] = 1.0
    return w


def _state(est, full, binary):
    pick = (lambda a: a[0]) if binary else (lambda a: a)
    out = {"coef": pick(est.coef_), "intercept": pick(est.intercept_)}
    if hasattr(type(est), "coef_var_"):
        if full:
            out["covariance"] = est.covariance_
        else:
            out["coef_var"] = pick(est.coef_var_)
            out["intercept_var"] = pick(est.intercept_var_)
    return out


def _ref_params(params):
    return {k: v for k, v in params.items() if k not in ("covariance", "sigma_update", "slack")}


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_weighted_binary_rule_matches_reference_every_round(binary_case, sparse):
    name, params = binary_case
    rng = np.random.default_rng(11)
    X, y = make_binary(rng, n=40, d=5, zero_rows=(3,), sparse_frac=0.3)
    w = _weights(rng, len(y))
    cov = params.get("covariance", "diag")
    ref = binary_run(name, X, y, covariance=cov, weights=w, **_ref_params(params))
    est = make(name, **params)
    Xin = sp.csr_matrix(X) if sparse else X
    for t, (mistake, state) in enumerate(ref):
        est.partial_fit(Xin[t:t + 1], y[t:t + 1], classes=[-1, 1], sample_weight=w[t:t + 1])
        assert est.last_mistakes_ == int(mistake), f"mistake differs in round {t}"
        got = _state(est, cov == "full", True)
        for key, val in state.items():
            _close(got[key], val, key, t)
    _close(est.decision_function(Xin), binary_scores(name, ref[-1][1], X, covariance=cov),
           "decision_function", len(y))


MC_CASES = ([(c, "top1") for c in BINARY_CASES] + [(c, "ovr") for c in BINARY_CASES]
            + [(("arow", {"r": 0.3, "a": 1.5, "sigma_update": "sum", "covariance": cov}),
                "top1") for cov in ("diag", "full")]
            + [((name, params), "topk") for name, params in [
                ("pa", {}), ("pa1", {"C": 0.3}), ("pa2", {"C": 0.3}),
                ("pa2", {"C": 0.3, "slack": "shared"}),
                ("arow", {"r": 0.3, "a": 1.5, "covariance": "diag"}),
                ("arow", {"r": 0.3, "a": 1.5, "covariance": "full"})]])


@pytest.mark.parametrize("case,strategy", MC_CASES,
                         ids=[f"{case_id(c)}-{s}{'-' + c[1].get('slack', '')}"
                              f"{'-sum' if c[1].get('sigma_update') else ''}"
                              for c, s in MC_CASES])
def test_weighted_multiclass_matches_reference_every_round(case, strategy):
    """Top-k as in test_multiclass: blocks made distinct first, the duals solved by
    Hildreth (driver) and BVLS (reference) to rtol 1e-9, compared until a competitor
    choice is decided by rounding."""
    name, params = case
    rng = np.random.default_rng(12)
    K = 4
    X, y = make_multiclass(rng, n=30, K=K, zero_rows=(2,))
    w = _weights(rng, len(y))
    if strategy == "topk":
        X, y = symmetry_broken(X, y, K)
        w = np.r_[np.ones(K), w]
    cov = params.get("covariance", "diag")
    kw = {"slack": params["slack"]} if "slack" in params else {}
    if "sigma_update" in params:
        kw["sigma_update"] = params["sigma_update"]
    k = 2 if strategy == "topk" else 1
    ref = multiclass_run(name, X, y, K, strategy=strategy, k=k, covariance=cov, weights=w,
                         **kw, **_ref_params(params))
    est = make(name, multiclass=strategy, k=k, **params)
    rtol = 1e-9 if strategy == "topk" else RTOL
    for t, (mistake, state) in enumerate(ref):
        if (strategy == "topk" and t > 0
                and _ill_posed_round(ref[t - 1][1], X[t], y[t], k, True, False)):
            assert t >= 20, f"only {t} rounds compared"
            return
        est.partial_fit(X[t:t + 1], LABELS[y[t:t + 1]], classes=LABELS,
                        sample_weight=w[t:t + 1])
        assert est.last_mistakes_ == int(mistake), f"mistake differs in round {t}"
        got = _state(est, cov == "full", False)
        for key, val in state.items():
            _close(got[key], val, key, t, rtol)


def _tasks(name):
    """(task, estimator params) of every reduction `name` has."""
    out = [("binary", {}), ("top1", {"multiclass": "top1"}), ("ovr", {"multiclass": "ovr"})]
    if name in ("pa", "pa1", "pa2", "arow"):
        out.append(("topk", {"multiclass": "topk", "k": 2}))
    return out


def test_weighted_l1_pa_matches_reference_every_round():
    """Binary and top-1: the fraction min(s, 1) of the exact projection."""
    rng = np.random.default_rng(13)
    X, y = make_binary(rng, n=40, d=4)
    w = _weights(rng, len(y))
    beta = 2.5
    est = make("l1-pa", beta=beta)
    v = np.zeros(X.shape[1] + 1)
    for t in range(len(y)):
        x = np.append(X[t], 1.0)
        if y[t] * (v @ x) < 1 and w[t] > 0:
            new, _, _ = l1pa_step(v, x, y[t], beta)
            v = v + min(w[t], 1.0) * (new - v)
        est.partial_fit(X[t:t + 1], y[t:t + 1], classes=[-1, 1], sample_weight=w[t:t + 1])
        _close(np.append(est.coef_[0], est.intercept_[0]), v, "w", t)
        assert np.abs(v).sum() <= beta * (1 + 1e-12)
    K = 3
    X, y = make_multiclass(rng, n=30, K=K)
    ref = l1pa_top1_run(X, y, K, beta, weights=w[:30])
    est = make("l1-pa", beta=beta)
    for t, (mistake, W, _) in enumerate(ref):
        est.partial_fit(X[t:t + 1], LABELS[y[t:t + 1]], classes=LABELS[:K],
                        sample_weight=w[t:t + 1])
        assert est.last_mistakes_ == int(mistake)
        _close(np.hstack([est.coef_, est.intercept_[:, None]]), W, "W", t)


KERNEL_NAMES = ["perceptron", "pa", "pa1", "pa2", "pa-ls", "reg-pa", "l2-pa", "soft-reg-pa",
                "cw", "cw-stdev", "arow", "arow-h", "bpa1"]


@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_weighted_kernel_form_is_the_weighted_primal_rule(name):
    """The degree-1 polynomial kernel (gamma 1, coef0 0) is the primal rule, weights
    included: binary, top-1 and one-vs-rest (the second-order rules with the primal's
    full covariance)."""
    rng = np.random.default_rng(14)
    X, y = make_binary(rng, n=40, d=4)
    _, y3 = make_multiclass(rng, n=40, d=4, K=3)
    w = _weights(rng, len(y))
    cov = {"covariance": "full"} if name in ("cw", "cw-stdev", "arow", "arow-h") else {}
    for yy, opts in [(y, {}), (LABELS[y3], {"multiclass": "top1"}),
                     (LABELS[y3], {"multiclass": "ovr"})]:
        primal = make(name, **cov, **opts).fit(X, yy, sample_weight=w)
        dual = make(name, kernel="poly", degree=1, gamma=1.0, coef0=0.0, **opts)
        dual.fit(X, yy, sample_weight=w)
        assert dual.mistakes_ == primal.mistakes_
        np.testing.assert_allclose(dual.decision_function(X), primal.decision_function(X),
                                   rtol=1e-9, atol=1e-9)


WEIGHTED_NAMES = [e["name"] for e in cwkit.algorithms()
                  if e["name"] not in ("bpa1", "bpa2", "bpa-ls")]


@pytest.mark.parametrize("name", WEIGHTED_NAMES + [f"{n}:rbf" for n in KERNEL_NAMES])
def test_unit_weights_give_the_unweighted_model_bit_for_bit(name):
    rng = np.random.default_rng(3)
    X, y2 = make_binary(rng, n=60, d=4)
    _, y4 = make_multiclass(rng, n=60, d=4)
    name, _, kernel = name.partition(":")
    tasks = _tasks(name) if not kernel else [
        (t, {**o, "kernel": kernel}) for t, o in _tasks(name) if t != "topk"]
    for task, opts in tasks:
        y = y2 if task == "binary" else LABELS[y4]
        opts = {**opts, "n_passes": 2, "shuffle": True, "random_state": 1}
        base = make(name, **opts).fit(X, y)
        ones = make(name, **opts).fit(X, y, sample_weight=np.ones(len(y)))
        by_class = make(name, class_weight={c: 1 for c in np.unique(y)}, **opts)
        by_class.fit(X, y)
        for est in (ones, by_class):
            if kernel:
                assert np.array_equal(est.dual_coef_, base.dual_coef_), (task, est)
            else:
                assert np.array_equal(est.coef_, base.coef_), (task, est)
                assert np.array_equal(est.intercept_, base.intercept_), (task, est)
            assert est.mistakes_ == base.mistakes_
            assert np.array_equal(est.decision_function(X), base.decision_function(X))


@pytest.mark.parametrize("name", [n for n in WEIGHTED_NAMES
                                  if n not in ("avg-perceptron", "adagrad")])
def test_weight_zero_rows_are_rows_not_learnt(name):
    """A row of weight 0 is predicted but changes nothing: the model equals, bit for bit,
    the one fitted without it (averaging and AdaGrad count rounds: the last iterate, and
    not AdaGrad)."""
    rng = np.random.default_rng(4)
    X, y = make_binary(rng, n=50, d=4)
    keep = rng.random(len(y)) < 0.6
    w = np.where(keep, 1.0, 0.0)
    for task, opts in _tasks(name):
        yy = y if task == "binary" else LABELS[rng.integers(0, 4, len(y))]
        a = make(name, **opts).fit(X, yy, sample_weight=w)
        b = make(name, **opts).fit(X[keep], yy[keep])
        assert np.array_equal(a.coef_, b.coef_), task
        assert a.t_ == len(yy)


def test_class_weight_is_a_weight_per_class():
    rng = np.random.default_rng(5)
    X, y = make_multiclass(rng, n=60, K=3)
    labels = LABELS[y]
    table = {"ant": 0.5, "bee": 2.0}       # cat: 1
    sw = rng.uniform(0.5, 2.0, len(y))
    per_row = np.array([table.get(c, 1.0) for c in labels])
    for name in ("pa1", "arow", "sop"):
        a = make(name, class_weight=table).fit(X, labels, sample_weight=sw)
        b = make(name).fit(X, labels, sample_weight=sw * per_row)
        assert np.array_equal(a.coef_, b.coef_)


def test_balanced_weights_and_their_running_counts(tmp_path):
    rng = np.random.default_rng(6)
    X, y = make_binary(rng, n=90, d=4)
    y[:60] = 1
    counts = np.array([np.sum(y == -1), np.sum(y == 1)])
    balanced = (len(y) / (2 * counts))[(y == 1).astype(int)]
    a = make("arow", class_weight="balanced").fit(X, y)
    b = make("arow").fit(X, y, sample_weight=balanced)
    assert np.array_equal(a.coef_, b.coef_)
    assert a.class_counts_.tolist() == counts.tolist()
    # partial_fit: the counts of every call so far, this one included
    s = make("arow", class_weight="balanced")
    s.partial_fit(X[:30], y[:30], classes=[-1, 1])
    cwkit.save(s, tmp_path / "m.npz")
    s = cwkit.load(tmp_path / "m.npz")
    s.partial_fit(X[30:], y[30:])
    assert s.class_counts_.tolist() == counts.tolist()
    c1 = np.bincount((y[:30] == 1).astype(int), minlength=2)
    with np.errstate(divide="ignore"):     # (a class not seen yet: no row to weigh)
        w1 = (30 / (2 * c1))[(y[:30] == 1).astype(int)]
    w2 = (90 / (2 * counts))[(y[30:] == 1).astype(int)]
    r = make("arow")
    r.partial_fit(X[:30], y[:30], classes=[-1, 1], sample_weight=w1)
    r.partial_fit(X[30:], y[30:], sample_weight=w2)
    assert np.array_equal(s.coef_, r.coef_)


def test_class_weight_dict_survives_save_and_load(tmp_path):
    rng = np.random.default_rng(7)
    X, y = make_binary(rng, n=40, d=3)
    est = make("pa2", class_weight={-1: 3.0, 1: 0.5}).fit(X[:20], y[:20])
    cwkit.save(est, tmp_path / "m.npz")
    back = cwkit.load(tmp_path / "m.npz")
    assert back.class_weight == {-1: 3.0, 1: 0.5}
    est.partial_fit(X[20:], y[20:])
    back.partial_fit(X[20:], y[20:])
    assert np.array_equal(est.coef_, back.coef_)


@pytest.mark.parametrize("bad,match", [
    (lambda n: np.r_[np.ones(n - 1), -1.0], r"sample_weight\[{last}\] is -1\.0"),
    (lambda n: np.r_[np.ones(3), np.nan, np.ones(n - 4)], r"sample_weight\[3\] is nan"),
    (lambda n: np.r_[np.ones(5), np.inf, np.ones(n - 6)], r"sample_weight\[5\] is inf"),
    (lambda n: np.ones(n + 1), "has {np1} weights for {n} rows"),
    (lambda n: np.ones((n, 2)), "must be 1-D"),
    (lambda n: np.array(["1"] * n), r"sample_weight\[0\] is '1'"),
    (lambda n: np.array([1.0, None] + [1.0] * (n - 2), dtype=object),
     r"sample_weight\[1\] is None"),
])
def test_bad_weights_are_refused_and_change_nothing(bad, match):
    rng = np.random.default_rng(8)
    X, y = make_binary(rng, n=20, d=3)
    n = len(y)
    msg = match.format(last=n - 1, n=n, np1=n + 1)
    fresh = make("arow", covariance="diag")
    with pytest.raises(ValueError, match=msg):
        fresh.partial_fit(X, y, classes=[-1, 1], sample_weight=bad(n))
    assert not hasattr(fresh, "classes_")
    with pytest.raises(ValueError, match=msg):
        fresh.fit(X, y, sample_weight=bad(n))
    assert not hasattr(fresh, "classes_")
    est = make("arow", covariance="diag", class_weight="balanced").fit(X, y)
    before = (est.coef_.copy(), est.coef_var_.copy(), est.t_, est.mistakes_,
              est.class_counts_.copy())
    with pytest.raises(ValueError, match=msg):
        est.partial_fit(X, y, sample_weight=bad(n))
    after = (est.coef_, est.coef_var_, est.t_, est.mistakes_, est.class_counts_)
    for a, b in zip(before, after):
        assert np.array_equal(a, b)


def test_bad_class_weight_is_refused():
    X, y = make_binary(np.random.default_rng(9), n=10, d=2)
    with pytest.raises(ValueError, match="class_weight"):
        make("pa", class_weight="even").fit(X, y)
    with pytest.raises(ValueError, match="class_weight"):
        make("pa", class_weight={1: -2.0}).fit(X, y)
    with pytest.raises(ValueError, match="label 7, which is not one of the classes"):
        make("pa", class_weight={7: 2.0}).fit(X, y)


# ---------------------------------------------------------------- the weighted problems' optima
# The weighted objective of each rule with a loss term, solved by a generic solver
# (test_reference's SLSQP / BFGS formulations with the loss term scaled by s).
SOLVED = [("pa1", {"C": 0.05}), ("pa1", {"C": 10.0}), ("pa2", {"C": 0.3}),
          ("pa-ls", {"C": 0.3}), ("soft-reg-pa", {"C": 0.5, "alpha": 0.2})]


@pytest.mark.slow
@pytest.mark.parametrize("s", [0.3, 2.5])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("rule,params", SOLVED)
def test_weighted_first_order_step_is_the_weighted_optimum(rule, params, seed, s):
    """1/2 ||w - w_t||^2 + s C xi (PA-I), + s C xi^2 (PA-II, PA-LS, soft-reg-PA): the
    reference's weighted step, and the estimator's first weighted update from w = 0."""
    from test_reference import close, pa_primal, violating_instance
    rng = np.random.default_rng(seed)
    w0, x, y = violating_instance(rng, 5)
    weighted = {**params, "C": s * params["C"]}
    w_ref, _ = reference.binary_step(rule, w0, x, y, weight=s, **params)
    close(w_ref, pa_primal(rule, w0, x, y, **weighted))
    est = make(rule, fit_intercept=False, **params)
    est.partial_fit(x[None], [y], classes=[-1, 1], sample_weight=[s])
    close(est.coef_[0], pa_primal(rule, np.zeros(5), x, y, **weighted))


@pytest.mark.slow
@pytest.mark.parametrize("s", [0.3, 2.5])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("rule", ["arow", "arow-h"])
def test_weighted_arow_step_is_the_weighted_optimum(rule, seed, s):
    """AROW's C1 and C2 ([AROW13] eqs. 5-6) with the loss terms 1/(2r) scaled by s."""
    from test_reference import arow_c1, arow_c2, close, spd, violating_instance
    rng = np.random.default_rng(seed)
    r, d = 0.5, 4
    S0 = spd(rng, d)
    mu0, x, y = violating_instance(rng, d)
    mu, S = reference.binary_step(rule, mu0, x, y, sigma=S0, covariance="full", weight=s, r=r)
    close(mu, arow_c1(mu0, S0, x, y, r / s, hinge=rule == "arow-h"),
          rtol=1e-5 if rule == "arow-h" else 1e-7)
    close(S, arow_c2(S0, x, r / s))


@pytest.mark.slow
@pytest.mark.parametrize("s", [0.3, 2.5])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("rule,params,slack", [("pa1", {"C": 0.1}, "per-constraint"),
                                               ("pa2", {"C": 0.4}, "per-constraint"),
                                               ("pa2", {"C": 0.4}, "shared")])
def test_weighted_topk_step_is_the_weighted_optimum(rule, params, slack, seed, s):
    """k-best MIRA with the slack penalty scaled by s."""
    from test_reference import _deltas, close, topk_instance, topk_primal
    rng = np.random.default_rng(seed)
    K, k = 4, 3
    W0, xa, label, _ = topk_instance(rng, K, 3)
    W_ref, _ = _weighted_topk(rule, W0, xa, label, K, k, slack, s, params)
    close(W_ref, topk_primal(rule, W0, _deltas(W0, xa, label, K, k), slack=slack,
                             C=s * params["C"]))


def _weighted_topk(rule, W0, xa, label, K, k, slack, s, params):
    st = {"w": np.asarray(W0, dtype=np.float64)}
    _, new = reference._mc_topk(rule, st, xa, label, K, k, "diag", "sum", slack,
                                reference._params(rule, params), s)
    return new["w"], None
