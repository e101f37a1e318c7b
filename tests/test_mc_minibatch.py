"""Multi-class mini-batch PA (top-1, top-k; BPA-I / II / LS) and PA-LS top-k."""
import numpy as np
import pytest
import scipy.sparse as sp
from reference import mc_bpa_run

import cwkit
from conftest import last_iterate
from cwkit import _core
from cwkit._rowdata import as_rows
from cwkit.models.interface import PassResult

VARIANTS = ["bpa1", "bpa2", "bpa-ls"]
PA_OF = {"bpa1": "pa1", "bpa2": "pa2", "bpa-ls": "pa-ls"}
LABELS = np.array(["ant", "bee", "cat", "dog"])


def make_data(rng, n=30, d=3, K=4, zero_rows=(), B=1):
    """Gaussian classes, prefixed by P rows (1 + p/3) e_p with label p mod K on P extra
    features (random in the other rows), P = the multiple of B from K on: the class blocks
    differ before the first random row is predicted, so that no prediction or competitor
    choice is decided by the rounding of blocks that are equal in exact arithmetic
    (competitors with tied scores get equal steps)."""
    n_pre = -(-K // B) * B
    centres = rng.normal(scale=1.5, size=(K, d))
    y = rng.integers(0, K, size=n)
    X = np.hstack([centres[y] + rng.normal(size=(n, d)), rng.normal(size=(n, n_pre))])
    X[list(zero_rows)] = 0.0
    pre = np.arange(n_pre)
    P = np.zeros((n_pre, d + n_pre))
    P[pre, d + pre] = 1.0 + pre / 3.0
    return np.vstack([P, X]), np.concatenate([pre % K, y])


def split_w(W, K, fit_intercept):
    W = W.reshape(K, -1)
    return (W[:, :-1], W[:, -1]) if fit_intercept else (W, np.zeros(K))


# (strategy, k, window).  Sliding windows with 1 < k < K - 1 are left out of the every-round
# comparison: the first row's k tied competitors get equal steps, and the choice among them
# when the row is used again in the next window is decided by rounding (in the reference as in
# the driver); test_dense_csr_pieces_and_save_load runs them.
SETTINGS = [("top1", 1, "block"), ("topk", 2, "block"), ("topk", 3, "block"),
            ("topk", 4, "block"), ("top1", 1, "sliding"), ("topk", 4, "sliding")]
SETTING_IDS = ["top1-block", "k2-block", "k3-block", "all-block", "top1-sliding",
               "all-sliding"]


def run_against_reference(variant, strategy, k, window, sparse, fit_intercept, slack, C=0.4,
                          B=3, est_name=None, weighted=False):
    K = 5        # k = 2, 3 select among the competitors, k = 4 takes all
    X, y = make_data(np.random.default_rng([VARIANTS.index(variant), k, B]), zero_rows=(9,),
                     K=K, B=B)
    labels = np.append(LABELS, "eel")
    kk = 1 if strategy == "top1" else k
    weights = (np.random.default_rng(k).choice([0.0, 0.5, 1.0, 2.5], size=len(y))
               if weighted else None)
    ref = mc_bpa_run(X, y, K, variant=variant, C=C, B=B, k=kk, window=window,
                     fit_intercept=fit_intercept, slack=slack, weights=weights)
    params = {"C": C, "fit_intercept": fit_intercept, "multiclass": strategy, "k": k}
    if slack == "shared":
        params["slack"] = slack
    if est_name is None:
        est = last_iterate(variant, batch_size=B, window=window, **params)
    else:
        est = last_iterate(est_name, **params)
    Xin = sp.csr_matrix(X) if sparse else X
    rounds = updates = 0
    for t, (mistake, W, _, ambiguous) in enumerate(ref):
        if ambiguous:
            break
        est.partial_fit(Xin[t:t + 1], labels[y[t:t + 1]], classes=labels,
                        sample_weight=None if weights is None else weights[t:t + 1])
        assert est.last_mistakes_ == int(mistake), f"mistake differs in round {t}"
        updates += est.last_n_updates_
        coef, icpt = split_w(W, K, fit_intercept)
        scale = max(1.0, np.abs(W).max())
        np.testing.assert_allclose(est.coef_, coef, rtol=1e-9, atol=1e-9 * scale,
                                   err_msg=f"round {t}")
        np.testing.assert_allclose(est.intercept_, icpt, rtol=1e-9, atol=1e-9 * scale,
                                   err_msg=f"round {t}")
        rounds += 1
    assert rounds >= 20, f"only {rounds} rounds compared"
    return updates


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("strategy,k,window", SETTINGS, ids=SETTING_IDS)
@pytest.mark.parametrize("sparse,fit_intercept", [(False, True), (True, False)],
                         ids=["dense-icpt", "csr-noicpt"])
def test_matches_reference_every_round(variant, strategy, k, window, sparse, fit_intercept):
    updates = run_against_reference(variant, strategy, k, window, sparse, fit_intercept,
                                    "per-constraint")
    assert updates > 5


@pytest.mark.parametrize("variant,strategy,k,window,slack", [
    (v, "top1", 1, "block", "per-constraint") for v in VARIANTS] + [
    (v, "topk", 4, "sliding", "per-constraint") for v in VARIANTS] + [
    (v, "topk", 2, "block", "shared") for v in ("bpa2", "bpa-ls")])   # (squared slacks)
def test_weighted_rows_match_the_weighted_reference_every_round(variant, strategy, k, window,
                                                                slack):
    assert run_against_reference(variant, strategy, k, window, True, True, slack,
                                 weighted=True) > 5


@pytest.mark.parametrize("variant", ["bpa2", "bpa-ls"])
@pytest.mark.parametrize("strategy,k,window", SETTINGS[1:4] + SETTINGS[5:],
                         ids=SETTING_IDS[1:4] + SETTING_IDS[5:])
def test_shared_slack_matches_reference_every_round(variant, strategy, k, window):
    assert run_against_reference(variant, strategy, k, window, True, True, "shared") > 5


@pytest.mark.parametrize("k,slack", [(1, "per-constraint"), (2, "per-constraint"),
                                     (4, "per-constraint"), (2, "shared"), (4, "shared")],
                         ids=["k1", "k2", "all", "k2-shared", "all-shared"])
def test_pa_ls_topk_matches_reference_every_round(k, slack):
    """PassiveAggressive(variant='pa-ls', multiclass='topk'): equality constraints for the
    top-k, tau = (G + I/(2C))^+ l (shared: G + 11'/(2C)) on every round (the B = 1 case of
    the reference)."""
    assert run_against_reference("bpa-ls", "topk", k, "block", False, True, slack, B=1,
                                 est_name="pa-ls") > 20


# --------------------------------------------------------------------------- one group vs scipy
def primal_optimum(W0, deltas, owner, variant, C, rho, shared, s=None):
    """min |W - W0|^2 / 2 + penalty s.t. Delta_ij.W >= 1 - xi by SLSQP (bpa-ls: = 1 - xi,
    by least squares on the KKT system).

    bpa1: C sum xi, xi >= 0 (one per constraint); bpa2 / bpa-ls: Cp sum xi^2, Cp = C
    (rho 'half') or C/2 ('inverse'), one xi per constraint or, shared, one per row."""
    from scipy.optimize import minimize
    n, m = W0.size, len(deltas)
    Cp = C if rho == "half" else C / 2
    S = (owner[:, None] == np.unique(owner)[None, :]).astype(float) if shared else np.eye(m)
    n_xi = S.shape[1]
    # each slack's importance weight: its row's (s None: 1)
    sw = np.ones(n_xi) if s is None else (s[np.unique(owner)] if shared else s[owner])

    def obj(z):
        u, xi = z[:n], z[n:]
        pen = C * (sw @ xi) if variant == "bpa1" else Cp * (sw * xi) @ xi
        return 0.5 * (u - W0) @ (u - W0) + pen

    def grad(z):
        u, xi = z[:n], z[n:]
        return np.concatenate([u - W0, C * sw if variant == "bpa1" else 2 * Cp * sw * xi])

    A = np.hstack([deltas, S])
    if variant == "bpa-ls":
        # equality constraints A z = 1: the KKT system of the quadratic, by least squares
        # (a minimum-norm solution when the constraints are dependent)
        H = np.diag(np.concatenate([np.ones(n), 2 * Cp * sw]))
        KKT = np.block([[H, A.T], [A, np.zeros((m, m))]])
        rhs = np.concatenate([W0, np.zeros(n_xi), np.ones(m)])
        return np.linalg.lstsq(KKT, rhs, rcond=None)[0][:n]
    cons = {"type": "ineq", "fun": lambda z: A @ z - 1, "jac": lambda z: A}
    bounds = [(None, None)] * n + [(0.0, None) if variant == "bpa1" else (None, None)] * n_xi
    z = np.concatenate([W0, np.ones(n_xi)])
    for _ in range(3):      # warm restarts: SLSQP stops at the limit of its precision
        res = minimize(obj, z, jac=grad, method="SLSQP", constraints=[cons], bounds=bounds,
                       options={"ftol": 1e-14, "maxiter": 2000})
        assert res.status in (0, 8), res.message
        if np.max(np.abs(res.x - z)) <= 1e-12:
            break
        z = res.x
    return res.x[:n]


def primal_value(W, W0, deltas, owner, variant, C, rho, shared, s=None,
                 feasible_tol=np.inf):
    """The primal objective at W with its optimal slacks (bpa-ls shared: the losses of a
    row must be equal, to `feasible_tol`; their mean is the slack); a row's slack terms
    multiplied by its weight s_i (None: 1)."""
    Cp = C if rho == "half" else C / 2
    s = np.ones(owner.max() + 1) if s is None else s
    ell = 1.0 - deltas @ W
    obj = 0.5 * (W - W0) @ (W - W0)
    if variant == "bpa1":
        return obj + C * (s[owner] * np.maximum(ell, 0)).sum()
    if not shared:
        xi = ell if variant == "bpa-ls" else np.maximum(ell, 0)
        return obj + Cp * (s[owner] * xi) @ xi
    rows = [(s[i], ell[owner == i]) for i in np.unique(owner)]
    if variant == "bpa-ls":
        assert all(np.ptp(r) <= feasible_tol or si == 0 for si, r in rows)
        return obj + Cp * sum(si * r.mean() ** 2 for si, r in rows)
    return obj + Cp * sum(si * max(r.max(), 0) ** 2 for si, r in rows)


def group_update(X, codes, W0, variant, C, rho, kk, shared, fit_intercept, s=None):
    """One block update of the compiled driver on all rows of X (no prediction round),
    of importance weights `s` (None: 1)."""
    from cwkit.minibatch import bpa_rho
    W = np.ascontiguousarray(W0)
    rows = as_rows(X).weighted(s)
    B = X.shape[0]
    *out, _ = _core.mc_bpa_pass(rows.view, codes.astype(np.intp), np.arange(B), B,
                                1.0 if fit_intercept else 0.0, W, VARIANTS.index(variant), False,
                                B, kk, C, bpa_rho(C, rho), shared, True,
                                np.empty((0, W.shape[1])), np.empty(0))
    out = PassResult(*out)
    assert out.status == _core.Status.OK and (out.rounds, out.mistakes) == (0, 0)
    return W


_GROUP_SHAPES = [("bpa1", "half", False), ("bpa2", "half", False), ("bpa2", "inverse", False),
                 ("bpa2", "half", True), ("bpa-ls", "half", False), ("bpa-ls", "inverse", True)]


# Every shape weighted (weights 0.3, 1 and 2.5) in the routine run, and unit weights for
# one shape (bpa-ls shared); the other unit-weight shapes and kk = 1, 3 with -m slow.
@pytest.mark.parametrize("variant,rho,shared,weighted", [
    pytest.param(*shape, weighted, id="-".join(map(str, shape)) + ("-weighted" if weighted else ""),
                 marks=() if weighted or shape == _GROUP_SHAPES[-1] else pytest.mark.slow)
    for weighted in (False, True) for shape in _GROUP_SHAPES])
@pytest.mark.parametrize("kk", [pytest.param(1, marks=pytest.mark.slow), 2,
                                pytest.param(3, marks=pytest.mark.slow)])   # (1, 3: -m slow)
def test_group_update_is_the_primal_optimum(variant, rho, shared, kk, weighted):
    """The weighted problem: row i's slack terms multiplied by its weight s_i."""
    rng = np.random.default_rng([VARIANTS.index(variant), kk, shared, rho == "half", weighted])
    K = 4
    checked = 0
    for B, d, fit_intercept in [(3, 3, True), (2, 4, False), (5, 2, True), (4, 1, False)]:
        for C in (0.05, 1.0, 10.0):       # B > D: G is singular
            X = rng.normal(size=(B, d)) * rng.uniform(0.3, 2.0)
            codes = rng.integers(0, K, size=B)
            D = d + fit_intercept
            W0 = rng.normal(size=(D, K)) * 0.5
            Xa = np.hstack([X, np.ones((B, 1))]) if fit_intercept else X
            W0s = W0.T.ravel()                  # stacked class-major (K*D)
            deltas, owner = [], []
            for i in range(B):
                s = W0.T @ Xa[i]
                comps = sorted((c for c in range(K) if c != codes[i]), key=lambda c: (-s[c], c))
                for c in comps[:kk]:
                    f = np.zeros(K * D)
                    f[codes[i] * D:(codes[i] + 1) * D] = Xa[i]
                    f[c * D:(c + 1) * D] = -Xa[i]
                    deltas.append(f)
                    owner.append(i)
            deltas, owner = np.array(deltas), np.array(owner)
            weights = rng.choice([0.3, 1.0, 2.5], size=B) if weighted else None
            W = group_update(X, codes, W0.copy(), variant, C, rho, kk, shared,
                             fit_intercept, weights).T.ravel()
            if variant != "bpa-ls" and (1 - deltas @ W0s).max() <= 0:
                np.testing.assert_array_equal(W, W0s)
                continue
            W_ref = primal_optimum(W0s, deltas, owner, variant, C, rho, shared, weights)
            # SLSQP's W is accurate to ~sqrt of its objective accuracy (the primal is
            # 1-strongly convex): compare loosely, then certify that ours is no worse
            np.testing.assert_allclose(W, W_ref, rtol=1e-4, atol=1e-4)
            args = (W0s, deltas, owner, variant, C, rho, shared, weights)
            assert (primal_value(W, *args, feasible_tol=1e-9)
                    <= primal_value(W_ref, *args) + 1e-10)
            checked += 1
    assert checked >= 8


# --------------------------------------------------------------------------- B = 1 equivalences
def row_by_row(est, X, y):
    out = []
    for t in range(len(y)):
        est.partial_fit(X[t:t + 1], y[t:t + 1], classes=np.arange(4))
        out.append((est.last_mistakes_, est.last_n_updates_, est.coef_.copy(),
                    est.intercept_.copy()))
    return out


def assert_same_runs(a, b):
    for t, ((m1, u1, w1, c1), (m2, u2, w2, c2)) in enumerate(zip(a, b)):
        assert (m1, u1) == (m2, u2), t
        np.testing.assert_allclose(w1, w2, rtol=1e-12, atol=1e-14, err_msg=str(t))
        np.testing.assert_allclose(c1, c2, rtol=1e-12, atol=1e-14, err_msg=str(t))


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("k", [1, 2, 3], ids=["k1", "k2", "all"])
@pytest.mark.parametrize("sparse,fit_intercept", [(False, True), (True, False)],
                         ids=["dense-icpt", "csr-noicpt"])
def test_batch_size_one_is_pa_topk_and_top1(variant, k, sparse, fit_intercept):
    """B = 1: BPA-I / II / LS top-k is PA-I / II / LS top-k (k-best MIRA; pa-ls top-k is
    this driver too), and top-1 is the top-1 reduction of PA-I / II / LS, round by round."""
    X, y = make_data(np.random.default_rng(k), n=40, zero_rows=(7,))
    Xi = sp.csr_matrix(X) if sparse else X
    kw = {"C": 0.3, "fit_intercept": fit_intercept}
    for window in ("block", "sliding"):
        got = row_by_row(last_iterate(variant, batch_size=1, window=window, multiclass="topk",
                                    k=k, **kw), Xi, y)
        assert_same_runs(got, row_by_row(last_iterate(PA_OF[variant], multiclass="topk", k=k,
                                                    **kw), Xi, y))
        got = row_by_row(last_iterate(variant, batch_size=1, window=window, **kw), Xi, y)
        assert_same_runs(got, row_by_row(last_iterate(PA_OF[variant], **kw), Xi, y))


def test_pa_ls_topk_with_k1_is_pa_ls_top1():
    X, y = make_data(np.random.default_rng(3), n=60)
    a = row_by_row(last_iterate("pa-ls", C=0.7, multiclass="topk", k=1), X, y)
    b = row_by_row(last_iterate("pa-ls", C=0.7, multiclass="top1"), X, y)
    assert_same_runs(a, b)
    assert a[-1][1] == 1      # PA-LS updates on every round


# --------------------------------------------------------------------------- protocol
CASES = [("bpa1", {"batch_size": 4}),
         ("bpa2", {"batch_size": 3, "window": "sliding", "multiclass": "topk", "k": 2}),
         ("bpa-ls", {"batch_size": 5, "rho": "inverse", "multiclass": "topk", "k": 2,
                     "slack": "shared"}),
         ("bpa2", {"batch_size": 4, "multiclass": "topk", "k": 9, "slack": "shared"})]


@pytest.mark.parametrize("name,params", CASES, ids=["bpa1", "bpa2-sliding", "bpa-ls-shared",
                                                    "bpa2-all-shared"])
def test_dense_csr_pieces_and_save_load(tmp_path, name, params):
    """dense == CSR bit for bit; partial_fit in pieces (groups spanning calls) == one pass
    == fit without shuffling; save / load in the middle of a group; string labels."""
    X, y = make_data(np.random.default_rng(4), n=50, zero_rows=(5,))
    yl = LABELS[y]
    for fit_intercept in (True, False):
        kw = dict(params, C=0.3, fit_intercept=fit_intercept)
        one = last_iterate(name, **kw).partial_fit(X, yl)
        csr = last_iterate(name, **kw).partial_fit(sp.csr_matrix(X), yl)
        np.testing.assert_array_equal(one.coef_, csr.coef_)
        np.testing.assert_array_equal(one.intercept_, csr.intercept_)
        assert (one.mistakes_, one.n_updates_) == (csr.mistakes_, csr.n_updates_)
        np.testing.assert_array_equal(one.decision_function(X),
                                      csr.decision_function(sp.csr_matrix(X)))
        parts = last_iterate(name, **kw)
        mistakes = updates = 0
        for lo, hi in [(0, 1), (1, 7), (7, 8), (8, 33), (33, 54)]:
            parts.partial_fit(X[lo:hi], yl[lo:hi], classes=LABELS)
            mistakes += parts.last_mistakes_
            updates += parts.last_n_updates_
            if hi == 8:
                cwkit.save(parts, tmp_path / "m.npz")
                parts = cwkit.load(tmp_path / "m.npz")
        np.testing.assert_array_equal(parts.coef_, one.coef_)
        np.testing.assert_array_equal(parts.intercept_, one.intercept_)
        assert (mistakes, updates, parts.t_) == (one.mistakes_, one.n_updates_, 54)
        fit = last_iterate(name, shuffle=False, **kw).fit(X, yl)
        np.testing.assert_array_equal(fit.coef_, one.coef_)
        assert set(fit.predict(X)) <= set(LABELS) and fit.coef_.shape == (4, X.shape[1])


def test_mistakes_and_loss_are_those_of_the_prediction_scores():
    """mistakes_ = argmax errors (ties to the first class) of the scores each row was
    predicted with; the driver's loss sum = sum of max(0, 1 - (s_y - s_c)), c the closest
    competitor."""
    X, y = make_data(np.random.default_rng(6), n=40)
    for window in ("block", "sliding"):
        ref = mc_bpa_run(X, y, 4, variant="bpa2", C=0.5, B=4, k=2, window=window)
        est = last_iterate("bpa2", C=0.5, batch_size=4, window=window, multiclass="topk", k=2)
        est._reset(np.arange(4), X.shape[1])
        res = est._model.run_with(as_rows(X), y, np.arange(len(y)), 1.0, scores=True)
        scores = np.array([r[2] for r in ref])
        margin = np.array([s[c] - max(np.delete(s, c)) for s, c in zip(scores, y)])
        assert (res.rounds, res.status) == (len(y), _core.Status.OK)
        assert res.mistakes == np.count_nonzero(np.argmax(scores, axis=1) != y) > 0
        assert res.loss_sum == pytest.approx(np.maximum(0, 1 - margin).sum(), rel=1e-9)
        np.testing.assert_allclose(res.scores, scores, rtol=1e-12, atol=1e-12)


def test_fit_passes_and_classes_argument():
    X, y = make_data(np.random.default_rng(8), n=40)
    est = last_iterate("bpa1", n_passes=3, shuffle=True, random_state=0).fit(X, LABELS[y])
    assert est.t_ == 3 * len(y) and est.score(X, LABELS[y]) > 0.8
    est = last_iterate("bpa2").partial_fit(X[:6], LABELS[y[:6]], classes=LABELS)
    est.partial_fit(X[6:], LABELS[y[6:]])
    assert list(est.classes_) == list(LABELS)
    with pytest.raises(ValueError, match="label 'eel' is not one of the classes"):
        est.partial_fit(X[:1], ["eel"])


# --------------------------------------------------------------------------- errors
def test_shared_slack_needs_squared_slacks():
    X, y = make_data(np.random.default_rng(1), n=10)
    with pytest.raises(ValueError, match="MiniBatchPA: slack='shared' is a squared-slack "
                                         "structure .* variant='bpa2' or 'bpa-ls'"):
        cwkit.MiniBatchPA(variant="bpa1", slack="shared").fit(X, y)
    with pytest.raises(ValueError, match="parameter 'slack'"):
        last_iterate("bpa2", slack="one").fit(X, y)
    with pytest.raises(ValueError, match="bpa1: unknown parameter 'slack'"):
        last_iterate("bpa1", slack="shared")
    with pytest.raises(ValueError, match="slack='shared' is the squared-slack structure of "
                                         "PA-II and PA-LS"):
        last_iterate("pa1", multiclass="topk", k=2).set_params(slack="shared").fit(X, y)


@pytest.mark.parametrize("window", ["block", "sliding"])
def test_overflow_restores_state_and_names_the_row(window):
    """A group update whose result is not finite (here ||W||^2 of class 2's block) leaves W
    as it was before the group."""
    est = last_iterate("bpa1", batch_size=2, window=window, fit_intercept=False)
    est.partial_fit(np.zeros((2, 2)), [0, 1], classes=[0, 1, 2])
    for key in ("w0", "w"):
        est._model.state[key][:2, 2] = 1e308
    before = est.coef_.copy()
    with pytest.raises(cwkit.ModelError, match="bpa1: row 1: this update would overflow"):
        est.partial_fit(np.array([[0.0, 0.0], [1.0, -1.0]]), [0, 2])
    np.testing.assert_array_equal(est.coef_, before)


def test_nonfinite_score_names_the_row():
    est = last_iterate("bpa2", batch_size=3).partial_fit(np.zeros((1, 2)), [0], classes=[0, 1, 2])
    with pytest.raises(cwkit.ModelError, match="row 1: the score or squared norm"):
        est.partial_fit(np.array([[1.0, 0.0], [1e200, 1e200]]), [0, 1])


def test_numerically_singular_dual_raises_clear_error():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(12, 3)), rng.integers(0, 4, size=12)
    with pytest.raises(cwkit.ModelError, match=r"bpa-ls: row \d+: .*numerically singular.*"
                                               r"scale the features"):
        last_iterate("bpa-ls", batch_size=4, multiclass="topk", k=3).partial_fit(X * 1e150, y)


@pytest.mark.parametrize("name,params", CASES, ids=["bpa1", "bpa2-sliding", "bpa-ls-shared",
                                                    "bpa2-all-shared"])
def test_zero_rows_extreme_values_and_inputs_not_mutated(name, params):
    est = last_iterate(name, fit_intercept=False, **params)
    est.partial_fit(np.zeros((9, 3)), np.tile([0, 1, 2], 3))
    assert est.n_updates_ == 0 and not est.coef_.any()
    X, y = make_data(np.random.default_rng(12), n=30)
    X0, y0 = X.copy(), y.copy()
    for scale in (1e-300, 1e-160, 1e150):
        try:
            est = last_iterate(name, **params).partial_fit(X * scale, y)
        except cwkit.ModelError as exc:
            assert "row" in str(exc) and "scale the features" in str(exc).lower()
            continue
        assert np.isfinite(est.coef_).all() and np.isfinite(est.intercept_).all()
        assert np.isfinite(est.decision_function(X * scale)).all()
    last_iterate(name, **params).fit(X, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
