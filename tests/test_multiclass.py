"""Multi-class reductions (top1, ovr) against the plain numpy reference, every round."""
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import last_iterate, BINARY_CASES, case_id
from reference import multiclass_run, multiclass_scores

import cwkit
from cwkit.models.scoring import argmax_proba

RTOL = 1e-12
LABELS = np.array(["ant", "bee", "cat", "dog"])

# top1 also runs AROW with the covariance updated by f = sum_y f(x, y), and NHERD's
# "exact" diagonal
TOP1_CASES = BINARY_CASES + [
    ("arow", {"r": 0.3, "a": 1.5, "sigma_update": "sum", "covariance": "diag"}),
    ("arow", {"r": 0.3, "a": 1.5, "sigma_update": "sum", "diag_update": "direct",
              "covariance": "diag"}),
    ("arow", {"r": 0.3, "a": 1.5, "sigma_update": "sum", "covariance": "full"}),
    ("arow-h", {"r": 0.3, "a": 1.5, "sigma_update": "sum", "covariance": "diag"}),
    ("nherd", {"C": 0.3, "a": 0.7, "covariance": "diag", "diag_update": "exact"}),
]


def mc_id(case):
    return case_id(case) + ("-sum" if case[1].get("sigma_update") == "sum" else "")


def make_multiclass(rng, n=36, d=5, K=4, zero_rows=(), sparse_frac=0.0):
    """Gaussian classes around random centres; labels 0..K-1."""
    centres = rng.normal(scale=1.5, size=(K, d))
    y = rng.integers(0, K, size=n)
    X = centres[y] + rng.normal(size=(n, d))
    if sparse_frac:
        X[rng.random(X.shape) < sparse_frac] = 0.0
    small = np.linalg.norm(X, axis=1) < 0.5
    X[small, 0] = 1.0          # keeps l2-pa feasible: beta^2 ||Delta||^2 > 1
    for i in zero_rows:
        X[i] = 0.0
    return X, y


def _ref_kw(params):
    kw = {k: v for k, v in params.items() if k not in ("covariance", "sigma_update", "slack")}
    return kw


def _est_state(est, full):
    out = {"coef": est.coef_, "intercept": est.intercept_}
    if hasattr(type(est), "coef_var_"):
        if full:
            out["covariance"] = est.covariance_
        else:
            out["coef_var"] = est.coef_var_
            out["intercept_var"] = est.intercept_var_
    return out


def _close(a, b, what, rnd, rtol=RTOL):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale,
                               err_msg=f"{what} differs after round {rnd}")


def _ill_posed_round(ref_state, x, label, k, fit_intercept, delta_mode):
    """True if the competitor selection of this round is decided by rounding: two
    competitors at a selection boundary (k-th / (k+1)-th, and 1st / 2nd when Sigma is
    updated with Delta_1) with scores within 1e-9 whose blocks are not both zero on
    the support of x (blocks never touched there tie exactly in both).

    Top-k updates of tied competitors are equal in exact arithmetic, so their blocks
    stay equal up to the rounding of two different QP solvers; a later choice between
    them is then noise, in the reference as in cwkit."""
    W = ref_state["coef"]
    if fit_intercept:
        W = np.hstack([W, ref_state["intercept"][:, None]])
        x = np.append(x, 1.0)
    s = W @ x
    order = sorted((c for c in range(len(s)) if c != label), key=lambda c: (-s[c], c))
    cuts = [k] + ([1] if delta_mode else [])
    for cut in cuts:
        if cut >= len(order):
            continue
        a, b = order[cut - 1], order[cut]
        on = x != 0
        if (abs(s[a] - s[b]) <= 1e-9 * max(1.0, abs(s[a]))
                and (W[a][on].any() or W[b][on].any())):
            return True
    return False


def compare_run(name, params, X, y, K, sparse, fit_intercept, strategy, k=1, rtol=RTOL,
                labels=LABELS, min_rounds=None):
    """partial_fit one row at a time; state and mistakes equal the reference's every round.

    For top-k the comparison ends at the first round whose competitor choice is
    decided by rounding (see `_ill_posed_round`); at least `min_rounds` are compared."""
    cov = params.get("covariance", "diag")
    ref_kw = {}
    if name in ("arow", "arow-h") and params.get("sigma_update", "auto") != "auto":
        ref_kw["sigma_update"] = params["sigma_update"]
    if params.get("slack") == "shared":
        ref_kw["slack"] = "shared"
    ref = multiclass_run(name, X, y, K, strategy=strategy, k=k, fit_intercept=fit_intercept,
                         covariance=cov, **ref_kw, **_ref_kw(params))
    est = last_iterate(name, fit_intercept=fit_intercept, multiclass=strategy, k=k, **params)
    Xin = sp.csr_matrix(X) if sparse else X
    yl = labels[y]
    delta_mode = params.get("sigma_update") == "delta"
    for t, (mistake, state) in enumerate(ref):
        if (strategy == "topk" and t > 0
                and _ill_posed_round(ref[t - 1][1], X[t], y[t], k, fit_intercept, delta_mode)):
            assert t >= min_rounds, f"only {t} rounds compared"
            return est
        est.partial_fit(Xin[t:t + 1], yl[t:t + 1], classes=labels[:K])
        assert est.last_mistakes_ == int(mistake), f"mistake differs in round {t}"
        got = _est_state(est, cov == "full")
        for key, val in state.items():
            if key == "intercept_var" and not fit_intercept:
                continue
            _close(got[key], val, key, t, rtol)
    assert est.t_ == len(y)
    scores = multiclass_scores(name, ref[-1][1], X, fit_intercept=fit_intercept, covariance=cov)
    _close(est.decision_function(Xin), scores, "decision_function", len(y), rtol)
    return est


@pytest.mark.parametrize("case", TOP1_CASES, ids=[mc_id(c) for c in TOP1_CASES])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["icpt", "noicpt"])
def test_top1_matches_reference_every_round(case, sparse, fit_intercept):
    name, params = case
    X, y = make_multiclass(np.random.default_rng(7), zero_rows=(3,), sparse_frac=0.3)
    compare_run(name, params, X, y, 4, sparse, fit_intercept, "top1")


@pytest.mark.parametrize("case", BINARY_CASES, ids=[case_id(c) for c in BINARY_CASES])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["icpt", "noicpt"])
def test_ovr_matches_reference_every_round(case, sparse, fit_intercept):
    name, params = case
    X, y = make_multiclass(np.random.default_rng(8), zero_rows=(5,), sparse_frac=0.3)
    compare_run(name, params, X, y, 4, sparse, fit_intercept, "ovr")


def _binary_state(est, full):
    st = {"coef": est.coef_[0], "intercept": est.intercept_[0]}
    if hasattr(type(est), "coef_var_"):
        if full:
            st["covariance"] = est.covariance_
        else:
            st["coef_var"] = est.coef_var_[0]
            st["intercept_var"] = est.intercept_var_[0]
    return st


@pytest.mark.parametrize("case", BINARY_CASES, ids=[case_id(c) for c in BINARY_CASES])
def test_ovr_equals_independent_binary_fits(case):
    """Class c of ovr is the binary fit of 'c against the rest' (exactly, same order)."""
    name, params = case
    K = 4
    X, y = make_multiclass(np.random.default_rng(9), n=60, K=K)
    est = last_iterate(name, multiclass="ovr", **params).partial_fit(X, LABELS[y])
    full = params.get("covariance") == "full"
    mine = _est_state(est, full)
    D = X.shape[1] + 1
    for c in range(K):
        b = last_iterate(name, **params).partial_fit(X, np.where(y == c, 1, -1))
        got = {k: v[c] for k, v in mine.items() if k != "covariance"}
        if full:
            got["covariance"] = mine["covariance"][c * D:(c + 1) * D, c * D:(c + 1) * D]
        for key, val in _binary_state(b, full).items():
            np.testing.assert_array_equal(got[key], val, err_msg=f"class {c}: {key}")


@pytest.mark.parametrize("name,strategy", [
    (name, strategy) for name in ["pa1", "cw", "arow", "sop", "adagrad", "avg-perceptron"]
    for strategy in ["top1", "ovr", "topk"] if strategy != "topk" or name in ("pa1", "arow")])
def test_dense_equals_csr_one_pass(name, strategy):
    X, y = make_multiclass(np.random.default_rng(4), n=200, d=12, K=5, sparse_frac=0.5)
    kw = {"multiclass": strategy, "shuffle": True, "random_state": 0, "n_passes": 2, "k": 3}
    a = last_iterate(name, **kw).fit(X, y)
    b = last_iterate(name, **kw).fit(sp.csr_matrix(X), y)
    assert a.mistakes_ == b.mistakes_
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(sp.csr_matrix(X)))
    if hasattr(a, "predict_proba"):
        np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(sp.csr_matrix(X)))


@pytest.mark.parametrize("strategy", ["top1", "ovr"])
def test_total_mistakes_of_one_pass_match_reference(strategy):
    X, y = make_multiclass(np.random.default_rng(12), n=300, d=8, K=6)
    ref = multiclass_run("pa1", X, y, 6, strategy=strategy, C=0.5)
    est = last_iterate("pa1", C=0.5, multiclass=strategy).partial_fit(X, y)
    assert est.mistakes_ == sum(m for m, _ in ref)
    assert est.n_updates_ > 0
    _close(est.coef_, ref[-1][1]["coef"], "coef", len(y))


def test_string_labels_predict_and_classes():
    rng = np.random.default_rng(2)
    X, y = make_multiclass(rng, n=120, K=4)
    names = np.array(["red", "green", "blue", "amber"])
    est = last_iterate("arow", covariance="diag").fit(X, names[y])
    assert list(est.classes_) == sorted(names)
    assert est.coef_.shape == (4, X.shape[1]) and est.intercept_.shape == (4,)
    assert est.coef_var_.shape == (4, X.shape[1]) and est.intercept_var_.shape == (4,)
    pred = est.predict(X)
    assert set(pred) <= set(names)
    np.testing.assert_array_equal(pred, est.classes_[np.argmax(est.decision_function(X), 1)])
    assert est.score(X, names[y]) > 0.5


def test_integer_labels_any_values():
    X, y = make_multiclass(np.random.default_rng(3), n=80, K=3)
    labels = np.array([-7, 10, 42])
    a = last_iterate("pa1", shuffle=False).fit(X, labels[y])
    b = last_iterate("pa1", shuffle=False).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.predict(X), labels[b.predict(X)])


def test_predict_ties_go_to_first_class():
    """All-zero scores predict the first of classes_ (labels given unsorted)."""
    est = last_iterate("pa1", fit_intercept=False).partial_fit(
        np.ones((1, 3)), ["b"], classes=["c", "a", "b"])
    assert list(est.classes_) == ["a", "b", "c"]
    assert est.predict(np.zeros((2, 3))).tolist() == ["a", "a"]


def test_partial_fit_needs_classes_and_rejects_unknown_labels():
    X, y = make_multiclass(np.random.default_rng(5), n=20, K=4)
    est = last_iterate("arow")
    est.partial_fit(X[:5], LABELS[y[:5]], classes=LABELS)
    assert list(est.classes_) == list(LABELS)
    with pytest.raises(ValueError, match=r"label 'eel' is not one of the classes"):
        est.partial_fit(X[:1], ["eel"])
    with pytest.raises(ValueError, match="not in `classes`"):
        last_iterate("arow").partial_fit(X[:2], ["eel", "ant"], classes=LABELS)


def test_full_covariance_refuses_large_stacked_dimension():
    est = last_iterate("arow", covariance="full")
    with pytest.raises(ValueError, match=r"stacked class blocks.*covariance='diag'"):
        est.partial_fit(np.zeros((1, 400)), [0], classes=np.arange(20))


@pytest.mark.parametrize("strategy", ["top1", "ovr"])
def test_overflow_restores_state_and_names_the_row(strategy):
    """An update whose result is not finite leaves the state as it was."""
    est = last_iterate("perceptron", multiclass=strategy).partial_fit(
        np.zeros((1, 2)), [0], classes=[0, 1, 2])
    est._model.named_state()["v"][:2, 2] = 1e308     # (a view: writes through)
    before = est.coef_.copy()
    with pytest.raises(cwkit.ModelError, match="row 1: this update would overflow"):
        est.partial_fit(np.array([[1.0, 1.0], [1.0, -1.0]]) * [[0.0], [1.0]], [0, 2])
    np.testing.assert_array_equal(est.coef_, before)


@pytest.mark.parametrize("strategy", ["top1", "ovr"])
@pytest.mark.parametrize("name,params", [("cw", {"covariance": "diag"}),
                                         ("arow", {"covariance": "diag"}),
                                         ("arow", {"covariance": "full"})])
def test_predict_confidence_is_the_argmax_probability(name, params, strategy):
    """P(argmax_c w_c.x = c) for w ~ N(mu, Sigma), checked by Monte Carlo on the
    fitted moments (the class scores are independent for diagonal Sigma)."""
    rng = np.random.default_rng(6)
    X, y = make_multiclass(rng, n=80, d=3, K=4)
    est = last_iterate(name, multiclass=strategy, a=4.0, shuffle=True, random_state=0,
                     **params).fit(X, y)
    P = est.predict_confidence(X[:10])
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    Xa = np.hstack([X[:10], np.ones((10, 1))])
    W = np.hstack([est.coef_, est.intercept_[:, None]])
    M = Xa @ W.T
    if params.get("covariance") == "full":
        D = Xa.shape[1]
        S = est.covariance_
        V = np.column_stack([np.einsum("ij,jk,ik->i", Xa, S[c * D:(c + 1) * D, c * D:(c + 1) * D],
                                       Xa) for c in range(4)])
    else:
        Sv = np.hstack([est.coef_var_, est.intercept_var_[:, None]])
        V = (Xa * Xa) @ Sv.T
    draws = M[:, None, :] + np.sqrt(V)[:, None, :] * rng.normal(size=(10, 40000, 4))
    mc = np.stack([(draws.argmax(axis=2) == c).mean(axis=1) for c in range(4)], axis=1)
    np.testing.assert_allclose(P, mc, atol=0.012)
    assert (P.argmax(axis=1) == M.argmax(axis=1)).mean() >= 0.9


def test_argmax_proba_point_masses_and_ties():
    M = np.array([[1.0, 0.0, 0.0], [2.0, 2.0, 0.0]])
    P = argmax_proba(M, np.zeros_like(M))
    np.testing.assert_allclose(P, [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]])
    # two equal Gaussians: one half each; a third far below: zero
    P = argmax_proba(np.array([[0.0, 0.0, -50.0]]), np.ones((1, 3)))
    np.testing.assert_allclose(P, [[0.5, 0.5, 0.0]], atol=1e-12)


def test_save_load_round_trip(tmp_path):
    X, y = make_multiclass(np.random.default_rng(1), n=50, K=4)
    for name, params in [("pa1", {"multiclass": "ovr"}), ("arow", {"covariance": "full"}),
                         ("avg-perceptron", {}), ("adagrad", {"eta": 0.5})]:
        est = last_iterate(name, **params).fit(X, LABELS[y])
        cwkit.save(est, tmp_path / "m.npz")
        back = cwkit.load(tmp_path / "m.npz")
        np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
        back.partial_fit(X[:5], LABELS[y[:5]])
        est.partial_fit(X[:5], LABELS[y[:5]])
        np.testing.assert_array_equal(back.coef_, est.coef_)


# --------------------------------------------------------------------------- top-k
TOPK_CASES = [
    ("pa", {}),
    ("pa1", {"C": 0.05}),
    ("pa2", {"C": 0.3}),
    ("pa2", {"C": 0.3, "slack": "shared"}),
    ("arow", {"r": 0.3, "a": 1.5, "covariance": "diag"}),
    ("arow", {"r": 0.3, "a": 1.5, "covariance": "diag", "diag_update": "direct"}),
    ("arow", {"r": 0.3, "a": 1.5, "covariance": "diag", "sigma_update": "delta"}),
    ("arow", {"r": 0.3, "a": 1.5, "covariance": "diag", "sigma_update": "delta",
              "diag_update": "direct"}),
    ("arow", {"r": 0.3, "a": 1.5, "covariance": "full"}),
    ("arow", {"r": 0.3, "a": 1.5, "covariance": "full", "sigma_update": "delta"}),
]


def symmetry_broken(X, y, K):
    """Prefix K rows (1 + c/3) e_c with label c on K extra features (random in the
    other rows; zero rows stay zero).

    From the zero state, tied competitors get equal updates; the extra features
    make every block distinct before the random rows, so that later competitor
    choices are not decided by the rounding of the QP solvers."""
    n, d = X.shape
    B = np.zeros((K, d + K))
    B[np.arange(K), d + np.arange(K)] = 1.0 + np.arange(K) / 3.0
    E = np.random.default_rng(99).normal(size=(n, K)) * X.any(axis=1, keepdims=True)
    return np.vstack([B, np.hstack([X, E])]), np.concatenate([np.arange(K), y])


def topk_id(case):
    name, params = case
    return "-".join([name] + [str(v) for k, v in params.items()
                              if k in ("slack", "sigma_update", "diag_update", "covariance")
                              and v != "diag"])


@pytest.mark.parametrize("case", TOPK_CASES, ids=[topk_id(c) for c in TOPK_CASES])
@pytest.mark.parametrize("k", [2, 5], ids=["k2", "all"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["icpt", "noicpt"])
def test_topk_matches_reference_every_round(case, k, sparse, fit_intercept):
    """k = 2 of 5 classes, and k = 5 >= K - 1 (all constraints); the reference solves
    each dual exactly (BVLS), the driver with Hildreth: rtol 1e-9."""
    name, params = case
    X, y = symmetry_broken(*make_multiclass(np.random.default_rng(21), n=30, K=5,
                                            zero_rows=(8,)), 5)
    labels = np.array(["ant", "bee", "cat", "dog", "eel"])
    est = compare_run(name, params, X, y, 5, sparse, fit_intercept, "topk", k=k, rtol=1e-9,
                      labels=labels, min_rounds=20)
    assert est.n_updates_ > 0 or est.mistakes_ == 0


def _primal_optimum(name, params, W0, S0, x, label, comps, K):
    """The top-k update as its primal convex problem, solved by scipy's SLSQP.

    PA: min |W - W0|^2 / 2 s.t. W.Delta_j >= 1; PA-I: + C sum xi_j, xi >= 0;
    PA-II: + C sum xi_j^2 (per constraint) or + C xi^2 (shared);
    AROW ([AROW13] eq. 27): min (mu - mu0)^T Sigma^-1 (mu - mu0) / 2 + xi^2 / (2r)."""
    from scipy.optimize import minimize
    n = W0.size
    D = n // K
    deltas = []
    for c in comps:
        f = np.zeros(n)
        f[label * D:(label + 1) * D] = x
        f[c * D:(c + 1) * D] = -x
        deltas.append(f)
    deltas = np.array(deltas)
    k = len(comps)
    shared = name == "arow" or params.get("slack") == "shared"
    n_xi = 0 if name == "pa" else (1 if shared else k)
    # variables u = Sigma^-1/2 (w - W0) (Sigma = I for PA): the objective is |u|^2 / 2 + slack
    root = np.sqrt(S0) if name == "arow" else np.ones(n)
    A = deltas * root
    b = 1.0 - deltas @ W0
    C = params.get("C", 1.0)

    def obj(z):
        u, xi = z[:n], z[n:]
        val = 0.5 * u @ u
        if name == "arow":
            return val + xi[0] ** 2 / (2 * params["r"])
        if name == "pa1":
            return val + C * xi.sum()
        return val + C * np.sum(xi ** 2)

    def grad(z):
        u, xi = z[:n], z[n:]
        if name == "arow":
            g_xi = xi / params["r"]
        elif name == "pa1":
            g_xi = np.full(n_xi, C)
        else:
            g_xi = 2 * C * xi
        return np.concatenate([u, g_xi])

    S = np.ones((k, n_xi)) if shared else np.eye(k, n_xi)
    bounds = [(None, None)] * n + [(0.0, None) if name == "pa1" else (None, None)] * n_xi
    res = minimize(obj, np.concatenate([np.zeros(n), np.ones(n_xi)]), jac=grad, method="SLSQP",
                   bounds=bounds, options={"ftol": 1e-14, "maxiter": 1000},
                   constraints=[{"type": "ineq", "fun": lambda z: A @ z[:n] + S @ z[n:] - b,
                                 "jac": lambda z: np.hstack([A, S])}])
    assert res.success, res.message
    return W0 + root * res.x[:n]


@pytest.mark.parametrize("case", [("pa", {}), ("pa1", {"C": 0.05}), ("pa2", {"C": 0.3}),
                                  ("pa2", {"C": 0.3, "slack": "shared"}),
                                  ("arow", {"r": 0.3, "a": 1.5, "covariance": "diag"})],
                         ids=["pa", "pa1", "pa2", "pa2-shared", "arow"])
@pytest.mark.parametrize("k", [2, 3])
def test_topk_update_is_the_optimum_of_its_convex_problem(case, k):
    """Each update from the estimator's own state equals scipy's primal optimum."""
    name, params = case
    K = 4
    X, y = make_multiclass(np.random.default_rng(31), n=11, d=3, K=K)
    est = last_iterate(name, multiclass="topk", k=k, **params)
    est.partial_fit(X[:4], y[:4], classes=np.arange(K))
    checked = 0
    for t in range(4, len(y)):
        W0 = np.hstack([est.coef_, est.intercept_[:, None]]).ravel()
        S0 = (np.hstack([est.coef_var_, est.intercept_var_[:, None]]).ravel()
              if name == "arow" else None)
        xa = np.append(X[t], 1.0)
        s = W0.reshape(K, -1) @ xa
        comps = sorted((c for c in range(K) if c != y[t]), key=lambda c: (-s[c], c))[:k]
        est.partial_fit(X[t:t + 1], y[t:t + 1])
        if max(1.0 - (s[y[t]] - s[c]) for c in comps) <= 0.0:
            continue
        W = np.hstack([est.coef_, est.intercept_[:, None]]).ravel()
        np.testing.assert_allclose(W, _primal_optimum(name, params, W0, S0, xa, y[t], comps, K),
                                   atol=1e-6, err_msg=f"round {t}")
        checked += 1
    assert checked >= 4


@pytest.mark.parametrize("case", [("pa", {}), ("pa1", {"C": 0.05}), ("pa2", {"C": 0.3}),
                                  ("arow", {"r": 0.3, "sigma_update": "delta",
                                            "covariance": "diag"}),
                                  ("arow", {"r": 0.3, "sigma_update": "sum",
                                            "covariance": "diag"}),
                                  ("arow", {"r": 0.3, "covariance": "full",
                                            "sigma_update": "delta"})],
                         ids=["pa", "pa1", "pa2", "arow-delta", "arow-sum", "arow-full"])
def test_topk_with_k1_is_top1(case):
    name, params = case
    X, y = make_multiclass(np.random.default_rng(13), n=80, K=5)
    a = last_iterate(name, multiclass="topk", k=1, **params).partial_fit(X, y)
    b = last_iterate(name, multiclass="top1", **params).partial_fit(X, y)
    assert a.mistakes_ == b.mistakes_ and a.n_updates_ == b.n_updates_
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-12, atol=1e-12)
    if name == "arow":
        S = "covariance_" if params.get("covariance") == "full" else "coef_var_"
        np.testing.assert_allclose(getattr(a, S), getattr(b, S), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("diag_update", ["inverse", "direct"])
def test_arow_two_classes_all_constraints_is_top1(diag_update):
    """K = 2: the one constraint is Delta = (x, -x), and diag(f^2) = diag(Delta^2), so
    the all-constraints AROW (Sigma updated with f) is the top-1 AROW (with Delta)."""
    from cwkit._rowdata import as_rows
    from cwkit.models.factory import TABLE
    X, y = make_multiclass(np.random.default_rng(17), n=60, K=2)
    rows = as_rows(X)
    models = []
    for strategy in ("topk", "top1"):
        est = last_iterate("arow", r=0.5, multiclass=strategy, k=1, diag_update=diag_update,
                         covariance="diag")
        est._choose(rows, 2)
        spec = est._spec(2, X.shape[1])
        m = TABLE[(spec.shape, strategy)](spec)   # the multi-class model, for two classes
        m.run(rows, y, np.arange(len(y)), 1.0)
        models.append(m)
    assert models[0].sum_update and not models[1].sum_update
    np.testing.assert_allclose(models[0].weights(), models[1].weights(), rtol=1e-12)
    np.testing.assert_allclose(models[0].variances(), models[1].variances(), rtol=1e-12)


def test_topk_rejects_rules_without_a_topk_form():
    X, y = make_multiclass(np.random.default_rng(1), n=20, K=3)
    with pytest.raises(ValueError, match="topk' is defined for the PA family"):
        last_iterate("cw", multiclass="topk").fit(X, y)
    with pytest.raises(ValueError, match="slack='shared' is the squared-slack"):
        last_iterate("pa", multiclass="topk", k=2).set_params(slack="shared").fit(X, y)


def test_topk_models_save_and_load(tmp_path):
    X, y = make_multiclass(np.random.default_rng(19), n=60, K=5)
    for name, params in [("pa2", {"slack": "shared"}), ("arow", {"covariance": "full"}),
                         ("arow", {"sigma_update": "delta"})]:
        est = last_iterate(name, multiclass="topk", k=3, **params).fit(X, LABELS[y % 4])
        cwkit.save(est, tmp_path / "m.npz")
        back = cwkit.load(tmp_path / "m.npz")
        back.partial_fit(X[:7], LABELS[y[:7] % 4])
        est.partial_fit(X[:7], LABELS[y[:7] % 4])
        np.testing.assert_array_equal(back.coef_, est.coef_)
        np.testing.assert_array_equal(back.predict(X), est.predict(X))


def test_k_beyond_the_competitors_means_all_constraints():
    X, y = make_multiclass(np.random.default_rng(23), n=60, K=4)
    a = last_iterate("pa1", multiclass="topk", k=3).partial_fit(X, y)
    b = last_iterate("pa1", multiclass="topk", k=50).partial_fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_l2_pa_infeasible_top1_update_is_a_clear_error():
    """||Delta||^2 = 2 ||x~||^2: beta^2 ||Delta||^2 <= 1 cannot be met with margin 1."""
    est = last_iterate("l2-pa", beta=0.5, fit_intercept=False)
    with pytest.raises(cwkit.ModelError, match=r"row 0: beta\^2 \|\|x\|\|\^2 <= 1 for x = Delta.*"
                       r"above 1/\(sqrt\(2\) \|\|x\|\|\)"):
        est.partial_fit(np.array([[0.5, 0.0]]), [1], classes=[0, 1, 2])
    assert not est.coef_.any()


def test_ovr_full_covariance_refuses_large_blocks():
    with pytest.raises(ValueError, match=r"multiclass='ovr' needs 20 matrices of 4001 x 4001"):
        last_iterate("cw", covariance="full", multiclass="ovr").partial_fit(
            np.zeros((1, 4000)), [0], classes=np.arange(20))


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("average", [False, True])
def test_diagonal_state_is_one_array_with_a_features_values_in_one_row(tmp_path, average,
                                                                       n_classes):
    """A diagonal model's mu, sigma and lazy sum (two classes: the (mu, sigma) pairs and
    the lazy sum) are views of one array (a feature's values side by side, the drivers'
    layout) when built, widened and loaded, and the model file keeps them as separate
    arrays."""
    rng = np.random.default_rng(3)
    X = sp.random(40, 9, density=0.4, random_state=4, format="csr")
    y = rng.integers(0, n_classes, 40)
    classes = list(range(n_classes))
    est = cwkit.make("arow", covariance="diag", average=average,
                     **({"multiclass": "top1"} if n_classes > 2 else {}))
    est.partial_fit(X[:20, :5], y[:20], classes=classes).partial_fit(X[20:], y[20:])
    path = tmp_path / "m.cwkit"
    cwkit.save(est, path)
    loaded = cwkit.load(path)
    names = ["mu", "sigma"] if n_classes > 2 else ["mu_sigma"]
    for model in (est._model, loaded._model):
        (z,) = model.state.values()
        named = model.named_state()
        assert sorted(named) == names + ["u"] * average
        for arr in named.values():
            assert np.shares_memory(arr, z) and arr.strides[0] == z.strides[0]
    np.testing.assert_array_equal(loaded.coef_, est.coef_)
    np.testing.assert_array_equal(loaded.coef_var_, est.coef_var_)


@pytest.mark.parametrize("average", [False, True])
def test_binary_first_order_state_is_one_array_with_a_features_v_and_u_in_one_row(
        tmp_path, average):
    """A binary first-order model's v and lazy sum u are the columns of one array (a
    feature's v and u side by side, the driver's layout) when built, widened and
    loaded, and the model file keeps them as separate arrays."""
    rng = np.random.default_rng(5)
    X = sp.random(40, 9, density=0.4, random_state=6, format="csr")
    y = rng.integers(0, 2, 40)
    est = cwkit.make("pa1", average=average)
    est.partial_fit(X[:20, :5], y[:20], classes=[0, 1]).partial_fit(X[20:], y[20:])
    path = tmp_path / "m.cwkit"
    cwkit.save(est, path)
    loaded = cwkit.load(path)
    for model in (est._model, loaded._model):
        z, named = model.state["by_feature"], model.named_state()
        assert z.shape == (10, 1 + average) and sorted(model.state) == ["aux", "by_feature"]
        assert named["u"].size == 10 * average
        for arr in [named["v"]] + [named["u"]] * average:
            assert np.shares_memory(arr, z) and arr.strides == z.strides[:1]
    np.testing.assert_array_equal(loaded.coef_, est.coef_)
