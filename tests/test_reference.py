"""Validation of the plain-numpy references in ``reference.py``.

Every single update is checked against the optimum of its convex problem computed by a generic
solver (SLSQP / BFGS from ``scipy.optimize``) on small random instances, and the runs are checked
against properties proved in the papers (scale and rotation invariance, KKT equalities, the
AROW inverse-covariance identities, k = 1 top-k == top-1).
"""
from decimal import Decimal, getcontext

import numpy as np
import pytest
import reference
from scipy.optimize import minimize

SEEDS = range(6)
#: The top-k optimum checks (a generic solver per case): seed 0 in the routine run, the
#: others with the slow checks (-m slow).
TOPK_SEEDS = [0, *(pytest.param(s, marks=pytest.mark.slow) for s in SEEDS[1:])]
SOLVER_RTOL = 1e-7


def close(a, b, rtol=SOLVER_RTOL):
    """Relative agreement at the generic solver's accuracy (scale of the larger operand)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * scale)


def slsqp(fun, jac, x0, cons):
    """SLSQP, warm-restarted from its own answer until the point stops moving: a single
    run can stop early (status 8) by an amount that depends on the BLAS's summation
    order (seen with OPENBLAS_NUM_THREADS=1)."""
    x = np.asarray(x0, dtype=float)
    for _ in range(4):
        res = minimize(fun, x, jac=jac, constraints=cons, method="SLSQP",
                       options={"ftol": 1e-16, "maxiter": 5000})
        assert res.status in (0, 8), res.message  # 8: "positive directional derivative"
        moved = np.max(np.abs(res.x - x))
        x = res.x
        if moved <= 1e-12 * max(1.0, np.max(np.abs(x))):
            break
    return x


def spd(rng, d):
    B = rng.normal(size=(d, d))
    return B @ B.T / d + 0.5 * np.eye(d)


def violating_instance(rng, d, scale=0.5):
    """Random (w, x, y) with hinge loss > 0 (margin y w.x < 1)."""
    w = scale * rng.normal(size=d)
    x = rng.normal(size=d)
    y = 1.0 if rng.random() < 0.5 else -1.0
    if y * (w @ x) >= 1.0:
        y = -y
    return w, x, y


# --------------------------------------------------------------------------- first-order rules
def pa_primal(rule, w0, x, y, C=None, alpha=None, beta=None):
    """Generic-solver optimum of the rule's primal; variables (w, xi)."""
    d = w0.size

    def obj(z):
        w, xi = z[:d], z[d]
        f = 0.5 * (w - w0) @ (w - w0)
        if rule == "pa1":
            f += C * xi
        elif rule in ("pa2", "pa-ls"):
            f += C * xi * xi
        elif rule == "reg-pa":
            f += 0.5 * alpha * w @ w
        elif rule == "soft-reg-pa":
            f += 0.5 * alpha * w @ w + C * xi * xi
        return f

    def grad(z):
        w, xi = z[:d], z[d]
        g = np.zeros(d + 1)
        g[:d] = w - w0
        if rule == "pa1":
            g[d] = C
        elif rule in ("pa2", "pa-ls"):
            g[d] = 2 * C * xi
        elif rule == "reg-pa":
            g[:d] += alpha * w
        elif rule == "soft-reg-pa":
            g[:d] += alpha * w
            g[d] = 2 * C * xi
        return g

    margin = {"fun": lambda z: y * (z[:d] @ x) - 1.0 + z[d],
              "jac": lambda z: np.append(y * x, 1.0)}
    cons = [dict(margin, type="eq" if rule == "pa-ls" else "ineq")]
    if rule in ("pa", "reg-pa", "l2-pa"):
        cons.append({"type": "eq", "fun": lambda z: z[d], "jac": lambda z: np.eye(d + 1)[d]})
    if rule == "pa1":
        cons.append({"type": "ineq", "fun": lambda z: z[d], "jac": lambda z: np.eye(d + 1)[d]})
    if rule == "l2-pa":
        cons.append({"type": "ineq", "fun": lambda z: beta * beta - z[:d] @ z[:d],
                     "jac": lambda z: np.append(-2 * z[:d], 0.0)})
    return slsqp(obj, grad, np.append(w0, 0.0), cons)[:d]


FIRST_ORDER_CASES = [("pa", {}), ("pa1", {"C": 0.05}), ("pa1", {"C": 10.0}), ("pa2", {"C": 0.3}),
                     ("pa-ls", {"C": 0.3}), ("reg-pa", {"alpha": 0.2}),
                     ("soft-reg-pa", {"C": 0.5, "alpha": 0.2})]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("rule,params", FIRST_ORDER_CASES)
def test_first_order_step_is_primal_optimum(rule, params, seed):
    rng = np.random.default_rng(seed)
    w0, x, y = violating_instance(rng, 5)
    w_ref, _ = reference.binary_step(rule, w0, x, y, **params)
    close(w_ref, pa_primal(rule, w0, x, y, **params))


@pytest.mark.parametrize("seed", SEEDS)
def test_pa_ls_step_is_primal_optimum_with_positive_margin(seed):
    """PA-LS updates on every round: with y w.x > 1 the step is negative (eq. 7-9)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=4)
    y = 1.0
    w0 = 3.0 * x / (x @ x)  # margin 3
    w_ref, _ = reference.binary_step("pa-ls", w0, x, y, C=0.7)
    assert y * (w_ref @ x) < 3.0
    close(w_ref, pa_primal("pa-ls", w0, x, y, C=0.7))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("factor", [0.8, 3.0])
def test_l2_pa_step_is_primal_optimum(seed, factor):
    """Problem 3.8 with the norm constraint active (factor 0.8) and inactive (3.0)."""
    rng = np.random.default_rng(seed)
    w0, x, y = violating_instance(rng, 5, scale=1.0)
    beta = factor * max(np.linalg.norm(w0), 1.5 / np.linalg.norm(x))
    w_ref, _ = reference.binary_step("l2-pa", w0, x, y, beta=beta)
    close(w_ref, pa_primal("l2-pa", w0, x, y, beta=beta))
    assert np.linalg.norm(w_ref) <= beta * (1 + 1e-12)


def test_l2_pa_infeasible_raises():
    with pytest.raises(ValueError, match="infeasible"):
        reference.binary_step("l2-pa", np.zeros(2), np.array([0.1, 0.0]), 1.0, beta=1.0)


@pytest.mark.parametrize("rule,params", [c for c in FIRST_ORDER_CASES if c[0] != "pa-ls"]
                         + [("l2-pa", {"beta": 50.0})])
def test_first_order_no_update_when_margin_satisfied(rule, params):
    """PA-LS is excluded: it updates on every round by definition ([GPA13] eqs. 7-9)."""
    x = np.array([1.0, -2.0, 0.5])
    w0 = 2.0 * x / (x @ x)
    w_ref, _ = reference.binary_step(rule, w0, x, 1.0, **params)
    np.testing.assert_array_equal(w_ref, w0)


# --------------------------------------------------------------------------- CW: KL projection
def _tril_index(d):
    return np.tril_indices(d)


def cw_kl_projection(rule, mu0, S0, x, y, phi):
    """Generic solver for min KL(N(mu, L L') || N(mu0, S0)) s.t. the CW constraint."""
    d = mu0.size
    P = np.linalg.inv(S0)
    il = _tril_index(d)

    def unpack(z):
        L = np.zeros((d, d))
        L[il] = z[d:]
        return z[:d], L

    def kl(z):
        mu, L = unpack(z)
        dm = mu - mu0
        return 0.5 * (-np.sum(np.log(np.diag(L) ** 2)) + np.trace(P @ L @ L.T) + dm @ P @ dm)

    def kl_grad(z):
        mu, L = unpack(z)
        gL = np.tril(P @ L) - np.diag(1.0 / np.diag(L))
        return np.concatenate([P @ (mu - mu0), gL[il]])

    def con(z):
        mu, L = unpack(z)
        Lx = L.T @ x
        if rule == "cw":
            return y * (mu @ x) - phi * (Lx @ Lx)
        return y * (mu @ x) - phi * np.sqrt(Lx @ Lx)

    def con_grad(z):
        _, L = unpack(z)
        Lx = L.T @ x
        gL = np.outer(x, Lx)
        gL = 2 * phi * gL if rule == "cw" else phi * gL / np.sqrt(Lx @ Lx)
        return np.concatenate([y * x, -np.tril(gL)[il]])

    z0 = np.concatenate([mu0, np.linalg.cholesky(S0)[il]])
    z = slsqp(kl, kl_grad, z0, [{"type": "ineq", "fun": con, "jac": con_grad}])
    mu, L = unpack(z)
    return mu, L @ L.T


def cw_instance(rule, rng, d, phi, positive_margin):
    """(mu, Sigma, x, y) violating the CW constraint, with m <= 0 or 0 < m < bound."""
    mu = rng.normal(size=d)
    S = spd(rng, d)
    x = rng.normal(size=d)
    v = x @ S @ x
    y = float(np.sign(mu @ x))
    if positive_margin:
        bound = phi * v if rule == "cw" else phi * np.sqrt(v)
        mu *= 0.3 * bound / (y * (mu @ x))
    else:
        y = -y
    return mu, S, x, y


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("rule", ["cw", "cw-stdev"])
@pytest.mark.parametrize("eta", [0.7, 0.95])
def test_cw_full_step_is_kl_projection(rule, eta, seed):
    rng = np.random.default_rng(seed)
    phi = float(reference.ndtri(eta))
    mu0, S0, x, y = cw_instance(rule, rng, 4, phi, positive_margin=seed % 2 == 1)
    mu_ref, S_ref = reference.binary_step(rule, mu0, x, y, sigma=S0, covariance="full", eta=eta)
    mu_opt, S_opt = cw_kl_projection(rule, mu0, S0, x, y, phi)
    close(mu_ref, mu_opt)
    close(S_ref, S_opt)


@pytest.mark.parametrize("seed", SEEDS)
def test_cw_stdev_full_constraint_is_tight_after_update(seed):
    """[ECCW08]: after an update (alpha > 0) the constraint (4) holds with equality, and
    u = x' Sigma_{i+1} x (eq. 11)."""
    rng = np.random.default_rng(seed)
    eta = 0.9
    phi = float(reference.ndtri(eta))
    mu0, S0, x, y = cw_instance("cw-stdev", rng, 5, phi, positive_margin=seed % 2 == 0)
    mu, S = reference.binary_step("cw-stdev", mu0, x, y, sigma=S0, covariance="full", eta=eta)
    np.testing.assert_allclose(y * (mu @ x), phi * np.sqrt(x @ S @ x), rtol=1e-12)
    m, v = y * (mu0 @ x), x @ S0 @ x
    alpha = reference._cw_stdev_alpha(m, v, phi)
    np.testing.assert_allclose(reference._cw_stdev_sqrt_u(alpha, v, phi) ** 2,
                               x @ S @ x, rtol=1e-12)
    # eq. (9) <=> eq. (10): the inverse covariance gained alpha phi x x' / sqrt(u)
    np.testing.assert_allclose(np.linalg.inv(S), np.linalg.inv(S0) + alpha * phi
                               * np.outer(x, x) / np.sqrt(x @ S @ x), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_cw_var_full_constraint_is_tight_after_update(seed):
    rng = np.random.default_rng(seed)
    eta = 0.8
    phi = float(reference.ndtri(eta))
    mu0, S0, x, y = cw_instance("cw", rng, 5, phi, positive_margin=seed % 2 == 0)
    mu, S = reference.binary_step("cw", mu0, x, y, sigma=S0, covariance="full", eta=eta)
    np.testing.assert_allclose(y * (mu @ x), phi * (x @ S @ x), rtol=1e-12)


@pytest.mark.parametrize("rule", ["cw", "cw-stdev"])
def test_cw_no_update_when_constraint_holds(rule):
    x = np.array([1.0, 2.0, -1.0])
    S = np.eye(3)
    mu = 5.0 * x
    for cov, sig in (("full", S), ("diag", np.ones(3))):
        mu_new, S_new = reference.binary_step(rule, mu, x, 1.0, sigma=sig, covariance=cov, eta=0.9)
        np.testing.assert_array_equal(mu_new, mu)
        np.testing.assert_array_equal(S_new, sig)


# --------------------------------------------------------------------------- diagonal = projection
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("rule,params", [("cw", {"eta": 0.8}), ("cw-stdev", {"eta": 0.8}),
                                         ("arow", {"r": 0.5}), ("arow-h", {"r": 0.5}),
                                         ("arow", {"r": 0.5, "diag_update": "direct"}),
                                         ("scw1", {"C": 0.5, "eta": 0.8}),
                                         ("scw2", {"C": 0.5, "eta": 0.8}),
                                         ("nherd", {"C": 0.5}),
                                         ("nherd", {"C": 0.5, "diag_update": "direct"})])
def test_diag_step_is_diagonal_projection_of_full_step(rule, params, seed):
    """From a diagonal Sigma, the diagonal rule has the full rule's mean step, and its Sigma is
    the projection of the full update onto the diagonal: of Sigma^{-1} (default, [ECCW08]
    eq. 15) or of Sigma (AROW option)."""
    rng = np.random.default_rng(seed)
    d = 5
    s0 = rng.uniform(0.3, 2.0, size=d)
    mu0, x, y = violating_instance(rng, d)
    mu_d, s_d = reference.binary_step(rule, mu0, x, y, sigma=s0, covariance="diag", **params)
    mu_f, S_f = reference.binary_step(rule, mu0, x, y, sigma=np.diag(s0), covariance="full",
                              **{k: v for k, v in params.items() if k != "diag_update"})
    np.testing.assert_allclose(mu_d, mu_f, rtol=1e-12, atol=1e-14)
    if params.get("diag_update") == "direct":
        np.testing.assert_allclose(s_d, np.diag(S_f), rtol=1e-12)
    else:
        np.testing.assert_allclose(1.0 / s_d, np.diag(np.linalg.inv(S_f)), rtol=1e-10)


# --------------------------------------------------------------------------- AROW
def arow_c1(mu0, S0, x, y, r, hinge):
    """Generic solver for C1 ([AROW13] eq. 5): squared hinge or hinge loss over 2r, via a slack."""
    d = mu0.size
    P = np.linalg.inv(S0)

    def obj(z):
        dm = z[:d] - mu0
        return 0.5 * dm @ P @ dm + (z[d] if hinge else z[d] ** 2) / (2 * r)

    def grad(z):
        return np.append(P @ (z[:d] - mu0), 1 / (2 * r) if hinge else z[d] / r)

    cons = [{"type": "ineq", "fun": lambda z: z[d] - 1.0 + y * (z[:d] @ x),
             "jac": lambda z: np.append(y * x, 1.0)}]
    if hinge:
        cons.append({"type": "ineq", "fun": lambda z: z[d], "jac": lambda z: np.eye(d + 1)[d]})
    return slsqp(obj, grad, np.append(mu0, 0.0), cons)[:d]


def arow_c2(S0, x, r):
    """Generic solver for C2 ([AROW13] eq. 6) over a Cholesky factor of Sigma."""
    d = x.size
    il = _tril_index(d)
    M = np.linalg.inv(S0) + np.outer(x, x) / r

    def unpack(z):
        L = np.zeros((d, d))
        L[il] = z
        return L

    def obj(z):
        L = unpack(z)
        return -np.sum(np.log(np.abs(np.diag(L)))) + 0.5 * np.trace(M @ L @ L.T)

    def grad(z):
        L = unpack(z)
        return (np.tril(M @ L) - np.diag(1.0 / np.diag(L)))[il]

    res = minimize(obj, np.linalg.cholesky(S0)[il], jac=grad, method="BFGS",
                   options={"gtol": 1e-13, "maxiter": 10000})
    L = unpack(res.x)
    return L @ L.T


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("rule", ["arow", "arow-h"])
@pytest.mark.parametrize("r", [0.1, 2.0])
def test_arow_full_step_minimises_c1_and_c2(rule, r, seed):
    rng = np.random.default_rng(seed)
    d = 4
    S0 = spd(rng, d)
    mu0, x, y = violating_instance(rng, d)
    mu, S = reference.binary_step(rule, mu0, x, y, sigma=S0, covariance="full", r=r)
    hinge = rule == "arow-h"
    ref = arow_c1(mu0, S0, x, y, r, hinge=hinge)
    if hinge:
        # The slack form of the hinge has a linear objective on which SLSQP can stop
        # ~1e-7 short (depending on the BLAS's summation order): certify instead that
        # our point is as close and no worse than the solver's on C1 itself.
        P = np.linalg.inv(S0)

        def c1(m):
            return 0.5 * (m - mu0) @ P @ (m - mu0) + max(0.0, 1.0 - y * (m @ x)) / (2 * r)

        close(mu, ref, rtol=1e-5)
        assert c1(mu) <= c1(ref) + 1e-13 * max(1.0, abs(c1(ref)))
    else:
        close(mu, ref)
    close(S, arow_c2(S0, x, r))


def test_arow_no_update_when_margin_at_least_one():
    x = np.array([1.0, 0.5])
    mu0 = 1.5 * x / (x @ x)
    for rule in ("arow", "arow-h"):
        mu, S = reference.binary_step(rule, mu0, x, 1.0, sigma=np.eye(2), covariance="full", r=1.0)
        np.testing.assert_array_equal(mu, mu0)
        np.testing.assert_array_equal(S, np.eye(2))


@pytest.mark.parametrize("seed", SEEDS)
def test_arow_full_inverse_covariance_identities(seed):
    """Over a run (a = 1): Sigma_t^{-1} = I + sum_upd x x' / r ([AROW13] eq. 14) and, for the
    squared hinge, Sigma_t^{-1} mu_t = sum_upd y x / r (from eqs. 12, 14, 16)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(30, 4))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=30) > 0, 1.0, -1.0)
    r = 0.7
    run = reference.binary_run("arow", X, y, covariance="full", fit_intercept=False, r=r)
    Pinv, b, n_upd = np.eye(4), np.zeros(4), 0
    prev = np.zeros(4)
    for (_, st), x, yt in zip(run, X, y):
        if yt * (prev @ x) < 1:
            Pinv += np.outer(x, x) / r
            b += yt * x / r
            n_upd += 1
        np.testing.assert_allclose(np.linalg.inv(st["covariance"]), Pinv, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(Pinv @ st["coef"], b, rtol=1e-9, atol=1e-9)
        prev = st["coef"]
    assert n_upd > 5


# --------------------------------------------------------------------------- SCW, NHERD
def scw_optimum(rule, mu0, S0, x, y, phi, C):
    """Generic solver for SCW-I / SCW-II ([SCW12] Sect. 3): min KL(N(mu, L L') || N(mu0, S0))
    + C xi (SCW-I, xi >= 0) or + C xi^2 (SCW-II) s.t. y mu.x - phi ||L' x|| >= -xi, over
    (mu, the Cholesky factor L, xi): a convex problem in these variables."""
    d = mu0.size
    P = np.linalg.inv(S0)
    il = _tril_index(d)
    n = d + len(il[0])

    def unpack(z):
        L = np.zeros((d, d))
        L[il] = z[d:n]
        return z[:d], L, z[n]

    def obj(z):
        mu, L, xi = unpack(z)
        dm = mu - mu0
        kl = 0.5 * (-np.sum(np.log(np.diag(L) ** 2)) + np.trace(P @ L @ L.T) + dm @ P @ dm)
        return kl + (C * xi if rule == "scw1" else C * xi * xi)

    def grad(z):
        mu, L, xi = unpack(z)
        gL = np.tril(P @ L) - np.diag(1.0 / np.diag(L))
        return np.concatenate([P @ (mu - mu0), gL[il], [C if rule == "scw1" else 2 * C * xi]])

    def con(z):
        mu, L, xi = unpack(z)
        Lx = L.T @ x
        return y * (mu @ x) - phi * np.sqrt(Lx @ Lx) + xi

    def con_grad(z):
        _, L, _ = unpack(z)
        Lx = L.T @ x
        gL = phi * np.outer(x, Lx) / np.sqrt(Lx @ Lx)
        return np.concatenate([y * x, -np.tril(gL)[il], [1.0]])

    cons = [{"type": "ineq", "fun": con, "jac": con_grad}]
    if rule == "scw1":
        cons.append({"type": "ineq", "fun": lambda z: z[n], "jac": lambda z: np.eye(n + 1)[n]})
    z0 = np.concatenate([mu0, np.linalg.cholesky(S0)[il], [0.0]])
    mu, L, _ = unpack(slsqp(obj, grad, z0, cons))
    return mu, L @ L.T


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("rule", ["scw1", "scw2"])
@pytest.mark.parametrize("C", [0.05, 2.0])
def test_scw_full_step_is_the_optimum(rule, C, seed):
    """SCW's closed form ([SCW12] Props. 1, 2) is the optimum of its convex problem; C = 0.05
    makes SCW-I's clip at C bind."""
    rng = np.random.default_rng(seed)
    eta = 0.8
    phi = float(reference.ndtri(eta))
    mu0, S0, x, y = cw_instance("cw-stdev", rng, 3, phi, positive_margin=seed % 2 == 1)
    mu_ref, S_ref = reference.binary_step(rule, mu0, x, y, sigma=S0, covariance="full", C=C,
                                          eta=eta)
    mu_opt, S_opt = scw_optimum(rule, mu0, S0, x, y, phi, C)
    close(mu_ref, mu_opt, rtol=1e-6)
    close(S_ref, S_opt, rtol=1e-6)


@pytest.mark.parametrize("seed", SEEDS)
def test_scw1_is_cw_stdev_below_its_clip(seed):
    """SCW-I with C above CW-Stdev's step is CW-Stdev ([SCW12] Prop. 1), and passive
    exactly when CW-Stdev's constraint holds."""
    rng = np.random.default_rng(seed)
    mu0, S0, x, y = cw_instance("cw-stdev", rng, 4, 0.8416212335729143, seed % 2 == 1)
    for cov, sig in (("full", S0), ("diag", np.diag(S0))):
        a = reference.binary_step("scw1", mu0, x, y, sigma=sig, covariance=cov, C=1e9, eta=0.8)
        b = reference.binary_step("cw-stdev", mu0, x, y, sigma=sig, covariance=cov, eta=0.8)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
    mu = 10.0 * x * y
    same = reference.binary_step("scw2", mu, x, y, sigma=S0, covariance="full", C=1.0, eta=0.8)
    np.testing.assert_array_equal(same[0], mu)


@pytest.mark.parametrize("m,v", [(1e8, 1e16), (3.0, 50.0), (1e-6, 4.0), (-2.0, 0.3)])
def test_scw2_rationalised_root_is_accurate(m, v):
    """SCW-II's printed root cancels for m > 0 near phi sqrt(v); the reference's
    rationalised form equals the printed one in 60-digit arithmetic."""
    from decimal import Decimal as Dec
    getcontext().prec = 60
    phi, C = 1.0364333894937898, 0.7
    P, M, V = Dec(phi), Dec(m), Dec(v)
    n = V + 1 / (2 * Dec(C))
    gamma = P * (P * P * M * M * V * V + 4 * n * V * (n + V * P * P)).sqrt()
    exact = (-(2 * M * n + P * P * M * V) + gamma) / (2 * (n * n + n * V * P * P))
    assert exact > 0
    np.testing.assert_allclose(reference.scw_alpha("scw2", m, v, phi, C), float(exact),
                               rtol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_nherd_full_step_herds_the_gaussian(seed):
    """[NHERD10]: the full update maps N(mu, Sigma) through w -> A w + b with
    A = I - C/(1 + C v) Sigma x x' and b = alpha y Sigma x + ..., so that the new
    covariance is A Sigma A'; its mean step is AROW's with r = 1/C, and
    Sigma^-1 gains (2C + C^2 v) x x'."""
    rng = np.random.default_rng(seed)
    S0 = spd(rng, 4)
    mu0, x, y = violating_instance(rng, 4)
    C = [0.1, 3.0][seed % 2]
    mu, S = reference.binary_step("nherd", mu0, x, y, sigma=S0, covariance="full", C=C)
    v = x @ S0 @ x
    A = np.eye(4) - C / (1.0 + C * v) * S0 @ np.outer(x, x)
    np.testing.assert_allclose(S, A @ S0 @ A.T, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.linalg.inv(S), np.linalg.inv(S0)
                               + (2 * C + C * C * v) * np.outer(x, x), rtol=1e-9, atol=1e-12)
    mu_arow, _ = reference.binary_step("arow", mu0, x, y, sigma=S0, covariance="full", r=1 / C)
    np.testing.assert_allclose(mu, mu_arow, rtol=1e-12, atol=1e-15)
    mu_pass, S_pass = reference.binary_step("nherd", 2 * x * y / (x @ x), x, y, sigma=S0,
                                            covariance="full", C=C)
    np.testing.assert_array_equal(S_pass, S0)


@pytest.mark.parametrize("seed", SEEDS)
def test_nherd_diagonal_forms_on_one_feature_are_the_full_update(seed):
    """From a diagonal Sigma, a row with one nonzero feature moves one variance: the
    three diagonal forms of [NHERD10] ("project", "drop", "exact") are then the full
    update exactly, and on any row they keep the full update's mean step."""
    rng = np.random.default_rng(seed)
    s0 = rng.uniform(0.3, 2.0, size=4)
    mu0, x, y = violating_instance(rng, 4)
    one = np.zeros(4)
    one[seed % 4] = x[seed % 4]
    for row, exact in ((one, True), (x, False)):
        mu_f, S_f = reference.binary_step("nherd", mu0, row, y, sigma=np.diag(s0),
                                          covariance="full", C=0.7)
        for form in ("inverse", "direct", "exact"):
            mu_d, s_d = reference.binary_step("nherd", mu0, row, y, sigma=s0, covariance="diag",
                                              C=0.7, diag_update=form)
            np.testing.assert_allclose(mu_d, mu_f, rtol=1e-12, atol=1e-15)
            if exact:
                np.testing.assert_allclose(s_d, np.diag(S_f), rtol=1e-12)


# --------------------------------------------------------------------------- scale / rotation
@pytest.mark.parametrize("covariance", ["diag", "full"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_cw_stdev_invariant_to_a(covariance, fit_intercept):
    """[ECCW08] Lemma 3: with Sigma_1 = a I, mu~ = sqrt(a) mu, Sigma~ = a Sigma, same mistakes."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 5))
    y = np.where(X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=40) > 0, 1.0, -1.0)
    kw = {"covariance": covariance, "fit_intercept": fit_intercept, "eta": 0.85}
    base = reference.binary_run("cw-stdev", X, y, a=1.0, **kw)
    for a in (0.01, 7.0):
        other = reference.binary_run("cw-stdev", X, y, a=a, **kw)
        assert [m for m, _ in other] == [m for m, _ in base]
        for (_, s1), (_, sa) in zip(base, other):
            np.testing.assert_allclose(sa["coef"], np.sqrt(a) * s1["coef"], rtol=1e-9, atol=1e-12)
            key = "covariance" if covariance == "full" else "coef_var"
            np.testing.assert_allclose(sa[key], a * s1[key], rtol=1e-9, atol=1e-15)
    assert 0 < sum(m for m, _ in base) < 40


def random_rotation(rng, d):
    Q, Rm = np.linalg.qr(rng.normal(size=(d, d)))
    return Q * np.sign(np.diag(Rm))


@pytest.mark.parametrize("rule,params", [("pa", {}), ("pa1", {"C": 0.2}), ("pa2", {"C": 0.2}),
                                         ("reg-pa", {"alpha": 0.05}), ("l2-pa", {"beta": 1.5}),
                                         ("soft-reg-pa", {"C": 0.5, "alpha": 0.05})])
def test_rotation_invariance(rule, params):
    """[LMC09] Lemma 3.3: rotating the inputs by R rotates every weight vector by R."""
    rng = np.random.default_rng(11)
    d = 6
    X = rng.normal(size=(40, d))
    y = np.where(X @ rng.normal(size=d) > 0, 1.0, -1.0)
    y[::7] *= -1
    Rot = random_rotation(rng, d)
    base = reference.binary_run(rule, X, y, fit_intercept=False, **params)
    rot = reference.binary_run(rule, X @ Rot.T, y, fit_intercept=False, **params)
    assert [m for m, _ in rot] == [m for m, _ in base]
    for (_, s), (_, sr) in zip(base, rot):
        np.testing.assert_allclose(sr["coef"], Rot @ s["coef"], rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------------- runs, scores, states
RUN_CASES = [("perceptron", {}), ("avg-perceptron", {}), ("pa", {}), ("pa1", {"C": 0.3}),
             ("pa2", {"C": 0.3}), ("pa-ls", {"C": 0.3}), ("reg-pa", {"alpha": 0.05}),
             ("l2-pa", {"beta": 2.0}), ("soft-reg-pa", {"C": 0.5, "alpha": 0.05}),
             ("cw", {"eta": 0.8}), ("cw-stdev", {"eta": 0.8}), ("arow", {"r": 0.5}),
             ("arow-h", {"r": 0.5}), ("sop", {"a": 2.0}),
             ("adagrad", {"eta": 0.5, "lam": 0.01, "delta": 1.0})]


def _covs(rule):
    return ("diag", "full") if rule in reference.SECOND_ORDER else ("diag",)


def _data(seed, n=40, d=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.4 * rng.normal(size=n) > 0.3, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("rule,params", [c for c in RUN_CASES if c[0] != "avg-perceptron"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_recorded_mistakes_match_public_state_scores(rule, params, fit_intercept):
    """mistake_t == (y_t * score(state_{t-1}, x_t) <= 0), with binary_scores on the public state
    (SOP: the Sherman-Morrison / diagonal forms vs the literal solve used in the run).
    avg-perceptron is excluded: its public weights are the average, its mistakes use the raw w."""
    X, y = _data(1)
    for cov in _covs(rule):
        run = reference.binary_run(rule, X, y, fit_intercept=fit_intercept,
                                   covariance=cov, **params)
        for t in range(1, len(run)):
            s = reference.binary_scores(rule, run[t - 1][1], X[t:t + 1],
                                        fit_intercept=fit_intercept, covariance=cov)[0]
            assert run[t][0] == (y[t] * s <= 0), (rule, cov, t, s)
        assert 0 < sum(m for m, _ in run) < len(run)


def test_avg_perceptron_is_mean_of_perceptron_states():
    X, y = _data(2)
    per = reference.binary_run("perceptron", X, y)
    avg = reference.binary_run("avg-perceptron", X, y)
    assert [m for m, _ in per] == [m for m, _ in avg]
    for t in range(len(X)):
        np.testing.assert_allclose(avg[t][1]["coef"],
                                   np.mean([s["coef"] for _, s in per[:t + 1]], axis=0),
                                   rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(avg[t][1]["intercept"],
                                   np.mean([s["intercept"] for _, s in per[:t + 1]]),
                                   rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("covariance", ["diag", "full"])
def test_sop_state_against_definition(covariance):
    """[SOP05] Fig. 3.1: A = aI + sum_mistakes x x', v = sum_mistakes y x, coef = A^{-1} v."""
    X, y = _data(4, d=4)
    a = 1.5
    run = reference.binary_run("sop", X, y, covariance=covariance, fit_intercept=False, a=a)
    A, v = a * np.eye(4), np.zeros(4)
    for (mistake, st), x, yt in zip(run, X, y):
        Ad = A if covariance == "full" else np.diag(np.diag(A))
        pred = x @ np.linalg.solve(Ad + (np.outer(x, x) if covariance == "full"
                                         else np.diag(x * x)), v)
        assert mistake == (yt * pred <= 0)
        if mistake:
            A, v = A + np.outer(x, x), v + yt * x
        Ad = A if covariance == "full" else np.diag(np.diag(A))
        np.testing.assert_allclose(st["coef"], np.linalg.solve(Ad, v), rtol=1e-10, atol=1e-14)
        if covariance == "full":
            np.testing.assert_allclose(st["covariance"], np.linalg.inv(Ad), rtol=1e-10)
        else:
            np.testing.assert_allclose(st["coef_var"], 1 / np.diag(Ad), rtol=1e-12)


def rda_objective(z, u, t, H, p):
    return p["eta"] * (u / t) @ z + p["eta"] * p["lam"] * np.abs(z).sum() + z @ (H * z) / (2 * t)


@pytest.mark.parametrize("seed", SEEDS)
def test_adagrad_coef_minimises_rda_objective(seed):
    """Duchi et al. 2011 RDA with diagonal proximal term: w_{t+1} = argmin_w eta <u/t, w>
    + eta lam ||w||_1 + <w, (delta I + diag(sqrt G)) w> / (2t), solved by a generic method."""
    X, y = _data(seed, n=15, d=4)
    p = {"eta": 0.7, "lam": 0.05, "delta": 0.5}
    run = reference.binary_run("adagrad", X, y, fit_intercept=False, **p)
    u, G = np.zeros(4), np.zeros(4)
    w = np.zeros(4)
    for t, ((_, st), x, yt) in enumerate(zip(run, X, y), start=1):
        if yt * (w @ x) < 1:
            u -= yt * x
            G += x * x
        H = p["delta"] + np.sqrt(G)

        args = (u.copy(), t, H, p)
        z = minimize(rda_objective, np.zeros(4), args=args, method="Powell",
                     options={"xtol": 1e-12, "ftol": 1e-15, "maxiter": 20000}).x
        close(st["coef"], z, rtol=1e-6)
        assert rda_objective(st["coef"], *args) <= rda_objective(z, *args) + 1e-12
        w = st["coef"]


@pytest.mark.parametrize("rule,params", RUN_CASES)
def test_zero_rows_without_intercept_make_no_update(rule, params):
    X, y = _data(5, n=12)
    X[4] = 0.0
    X[9] = 0.0
    for cov in _covs(rule):
        run = reference.binary_run(rule, X, y, fit_intercept=False, covariance=cov, **params)
        for t in (4, 9):
            before, after = run[t - 1][1], run[t][1]
            for key in before:
                if rule == "avg-perceptron" or (rule == "adagrad" and key == "coef"):
                    continue  # the average / the 1/t RDA schedule move without an update
                np.testing.assert_array_equal(after[key], before[key])
            assert run[t][0]  # score 0 is a mistake
            assert all(np.all(np.isfinite(v)) for v in after.values())


def test_unknown_rule_and_missing_parameter():
    X, y = _data(0, n=3)
    with pytest.raises(ValueError, match="unknown rule"):
        reference.binary_run("nope", X, y)
    with pytest.raises(TypeError, match="needs parameters"):
        reference.binary_run("pa1", X, y)
    with pytest.raises(ValueError, match="eta"):
        reference.binary_run("cw", X, y, eta=0.4)


# --------------------------------------------------------------------------- numerics
getcontext().prec = 60


def _dec(v):
    return Decimal(repr(float(v)))


def cw_var_alpha_textbook(m, v, phi, dec):
    """The printed CW-Var root, in float64 or in 60-digit decimal arithmetic."""
    if dec:
        m, v, phi = _dec(m), _dec(v), _dec(phi)
        q = 1 + 2 * phi * m
        return max(Decimal(0), (-q + (q * q - 8 * phi * (m - phi * v)).sqrt()) / (4 * phi * v))
    q = 1 + 2 * phi * m
    return max(0.0, (-q + np.sqrt(q * q - 8 * phi * (m - phi * v))) / (4 * phi * v))


def cw_stdev_textbook(m, v, phi, dec):
    """The printed CW-Stdev (alpha, sqrt(u)) ([ECCW08] eqs. 14, 12)."""
    if dec:
        m, v, phi = _dec(m), _dec(v), _dec(phi)
        two, four, zero = Decimal(2), Decimal(4), Decimal(0)
    else:
        two, four, zero = 2.0, 4.0, 0.0
    psi, xi = 1 + phi * phi / two, 1 + phi * phi
    D = m * m * phi ** 4 / four + v * phi * phi * xi
    alpha = max(zero, (-m * psi + (D.sqrt() if dec else np.sqrt(D))) / (v * xi))
    a2 = alpha * alpha * v * v * phi * phi + four * v
    sqrt_u = (-alpha * v * phi + (a2.sqrt() if dec else np.sqrt(a2))) / two
    return alpha, sqrt_u


@pytest.mark.parametrize("m,v", [(1e8, 1.5e8 / 0.8416212335729143),
                                 (1e16, 1.5e16 / 0.8416212335729143), (1e3, 1.5e3)])
def test_cw_var_rationalised_root_is_accurate(m, v):
    """With q = 1 + 2 phi m > 0 the printed root cancels; the rationalised one keeps
    full precision (compared with the printed root in 60-digit arithmetic)."""
    phi = 0.8416212335729143  # Phi^{-1}(0.8)
    exact = float(cw_var_alpha_textbook(m, v, phi, dec=True))
    assert exact > 0
    np.testing.assert_allclose(reference._cw_var_alpha(m, v, phi), exact, rtol=1e-12)
    if m >= 1e8:  # the printed form in float64 loses digits there (m = 1e16: returns 0)
        assert abs(cw_var_alpha_textbook(m, v, phi, dec=False) - exact) > 1e-9 * exact


@pytest.mark.parametrize("m,v", [(-1e6, 1e-10), (-3e8, 2e-6), (0.5, 1e8), (1e-3, 4.0)])
def test_cw_stdev_rationalised_forms_are_accurate(m, v):
    """The printed sqrt(u) underflows to 0 when alpha v phi >> sqrt(v); the
    rationalised forms match the printed ones in 60-digit arithmetic and stay finite."""
    phi = 1.2815515655446004  # Phi^{-1}(0.9)
    alpha_d, sqrt_u_d = cw_stdev_textbook(m, v, phi, dec=True)
    alpha = reference._cw_stdev_alpha(m, v, phi)
    sqrt_u = reference._cw_stdev_sqrt_u(alpha, v, phi)
    np.testing.assert_allclose(alpha, float(alpha_d), rtol=1e-12)
    np.testing.assert_allclose(sqrt_u, float(sqrt_u_d), rtol=1e-12)
    if m < -1e5:
        assert cw_stdev_textbook(m, v, phi, dec=False)[1] == 0.0  # the failure being avoided
    x = np.array([np.sqrt(v), 0.0])
    mu = np.array([m / np.sqrt(v), 0.0])
    for cov, sig in (("diag", np.ones(2)), ("full", np.eye(2))):
        mu_new, s_new = reference.binary_step("cw-stdev", mu, x, 1.0, sigma=sig,
                                              covariance=cov, eta=0.9)
        assert np.all(np.isfinite(mu_new)) and np.all(np.isfinite(s_new))
        if cov == "diag":  # the full Woodbury form Sigma - beta Sigma x x' Sigma can round to 0
            assert np.all(s_new > 0)


# --------------------------------------------------------------------------- multi-class top-k
def topk_instance(rng, K, d):
    """Random stacked W (K*D, D = d + 1), augmented x, label and a SPD Sigma over K*D."""
    D = d + 1
    xa = np.append(rng.normal(size=d), 1.0)
    W = 0.4 * rng.normal(size=K * D)
    return W, xa, int(rng.integers(K)), spd(rng, K * D)


def topk_primal(rule, W0, deltas, *, C=None, r=None, Sigma=None, slack="per-constraint"):
    """Generic solver: min 1/2 ||W - W0||^2_M + slack penalty s.t. W.Delta_j >= 1 - xi_j."""
    n, k = W0.size, len(deltas)
    shared = rule == "arow" or slack == "shared"
    ns = 1 if shared else k
    P = np.eye(n) if Sigma is None else np.linalg.inv(Sigma)

    def obj(z):
        dw, xi = z[:n] - W0, z[n:]
        f = 0.5 * dw @ P @ dw
        if rule == "pa1":
            f += C * xi.sum()
        elif rule == "pa2":
            f += C * xi @ xi
        elif rule == "arow":
            f += xi @ xi / (2 * r)
        return f

    def grad(z):
        g = np.zeros(n + ns)
        g[:n] = P @ (z[:n] - W0)
        if rule == "pa1":
            g[n:] = C
        elif rule == "pa2":
            g[n:] = 2 * C * z[n:]
        elif rule == "arow":
            g[n:] = z[n:] / r
        return g

    cons = []
    for j, dj in enumerate(deltas):
        s = 0 if shared else j
        e = np.zeros(ns)
        e[s] = 1.0
        cons.append({"type": "ineq", "fun": lambda z, dj=dj, s=s: z[:n] @ dj - 1.0 + z[n + s],
                     "jac": lambda z, dj=dj, e=e: np.concatenate([dj, e])})
    if rule == "pa":
        cons.append({"type": "eq", "fun": lambda z: z[n:], "jac": lambda z: np.eye(n + ns)[n:]})
    if rule == "pa1":
        cons.append({"type": "ineq", "fun": lambda z: z[n:],
                     "jac": lambda z: np.eye(n + ns)[n:]})
    return slsqp(obj, grad, np.append(W0, np.zeros(ns)), cons)[:n]


def _argmax_unambiguous(s):
    """argmax of the scores, or None when the top two are within rounding of each other (the
    run's literal SOP solve and the public-state formula may then order them differently)."""
    top = np.sort(s)[-2:]
    if top[1] - top[0] <= 1e-10 * max(1.0, np.abs(s).max()):
        return None
    return int(np.argmax(s))


def _deltas(W, xa, label, K, k):
    s = W.reshape(K, -1) @ xa
    comp = reference.competitors(s, label)[:k]
    return [reference.feature(xa, label, K) - reference.feature(xa, c, K) for c in comp]


TOPK_CASES = [("pa", {}, "per-constraint"), ("pa1", {"C": 0.1}, "per-constraint"),
              ("pa1", {"C": 5.0}, "per-constraint"), ("pa2", {"C": 0.4}, "per-constraint"),
              ("pa2", {"C": 0.4}, "shared")]


@pytest.mark.parametrize("seed", TOPK_SEEDS)
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("rule,params,slack", TOPK_CASES)
def test_pa_topk_step_is_primal_optimum(rule, params, slack, k, seed):
    """k-best MIRA ([CS03]): min 1/2 ||W - W_t||^2 (+ slack) s.t. W.Delta_j >= 1 - xi."""
    rng = np.random.default_rng(seed)
    K = 4
    W0, xa, label, _ = topk_instance(rng, K, 3)
    W_ref, _ = reference.topk_step(rule, W0, xa, label, K, k, slack=slack, **params)
    W_opt = topk_primal(rule, W0, _deltas(W0, xa, label, K, k), slack=slack, **params)
    close(W_ref, W_opt)


@pytest.mark.parametrize("seed", TOPK_SEEDS)
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("covariance", ["diag", "full"])
def test_arow_topk_step_is_primal_optimum(covariance, k, seed):
    """[AROW13] eq. 27: min 1/2 (mu - mu0)' Sigma^{-1} (mu - mu0) + xi^2 / (2r) s.t. mu.Delta_j >=
    1 - xi; Sigma update (29)-(30) with f = sum_y f(x, y)."""
    rng = np.random.default_rng(seed)
    K, r = 4, 0.6
    W0, xa, label, S = topk_instance(rng, K, 3)
    if covariance == "diag":
        S = np.diag(rng.uniform(0.3, 2.0, size=W0.size))
    sig = S if covariance == "full" else np.diag(S).copy()
    W_ref, S_ref = reference.topk_step("arow", W0, xa, label, K, k, sigma=sig,
                                       covariance=covariance, sigma_update="sum", r=r)
    close(W_ref, topk_primal("arow", W0, _deltas(W0, xa, label, K, k), r=r, Sigma=S))
    f = np.tile(xa, K)
    S_new = np.linalg.inv(np.linalg.inv(S) + np.outer(f, f) / r)
    if covariance == "full":
        np.testing.assert_allclose(S_ref, S_new, rtol=1e-9, atol=1e-12)
    else:
        np.testing.assert_allclose(1.0 / S_ref, np.diag(np.linalg.inv(S_new)), rtol=1e-10)


def _enumerate_dual(Q, ell, upper):
    """Exact dual optimum by enumerating every {lower, free, upper} assignment (small k)."""
    k = ell.size
    best, best_val = None, -np.inf
    for code in range(3 ** k):
        state = [(code // 3 ** j) % 3 for j in range(k)]
        if upper == np.inf and 2 in state:
            continue
        a = np.where(np.array(state) == 2, upper, 0.0)
        F = [j for j in range(k) if state[j] == 1]
        if F:
            B = [j for j in range(k) if state[j] != 1]
            a[F] = np.linalg.solve(Q[np.ix_(F, F)], ell[F] - Q[np.ix_(F, B)] @ a[B])
        if np.all(a >= -1e-12) and np.all(a <= upper + 1e-12):
            val = ell @ a - 0.5 * a @ Q @ a
            if val > best_val:
                best, best_val = a, val
    return best


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("upper", [np.inf, 0.3])
def test_solve_dual_matches_exhaustive_active_sets(seed, upper):
    rng = np.random.default_rng(seed)
    k = 4
    B = rng.normal(size=(k, k + 1))
    Q = B @ B.T + 0.1 * np.eye(k)
    ell = rng.normal(size=k)
    a = reference.solve_dual(Q, ell, upper)
    np.testing.assert_allclose(a, _enumerate_dual(Q, ell, upper), rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- multi-class runs
def _mc_data(seed, K=4, n=40, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.argmax(X[:, :K] + 0.5 * rng.normal(size=(n, K)), axis=1)
    return X, y


def _assert_runs_equal(a, b, rtol=1e-10):
    assert [m for m, _ in a] == [m for m, _ in b]
    for (_, sa), (_, sb) in zip(a, b):
        assert sa.keys() == sb.keys()
        for key in sa:
            np.testing.assert_allclose(sa[key], sb[key], rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("rule,params,slack", TOPK_CASES)
def test_topk_with_k1_is_top1(rule, params, slack):
    """[CS03]: k = 1 reproduces the top-1 formulas (the QP vs the binary closed form on
    Delta); the shared and per-constraint slacks coincide for one constraint."""
    X, y = _mc_data(0)
    top1 = reference.multiclass_run(rule, X, y, 4, strategy="top1", **params)
    topk = reference.multiclass_run(rule, X, y, 4, strategy="topk", k=1, slack=slack, **params)
    _assert_runs_equal(top1, topk)


@pytest.mark.parametrize("covariance", ["diag", "full"])
@pytest.mark.parametrize("sigma_update", ["delta", "sum"])
def test_arow_two_classes_all_constraints_is_top1(covariance, sigma_update):
    X, y = _mc_data(1, K=2)
    kw = {"covariance": covariance, "sigma_update": sigma_update, "r": 0.5}
    top1 = reference.multiclass_run("arow", X, y, 2, strategy="top1", **kw)
    topk = reference.multiclass_run("arow", X, y, 2, strategy="topk", k=5, **kw)
    _assert_runs_equal(top1, topk)


@pytest.mark.parametrize("rule,params", RUN_CASES)
def test_ovr_is_independent_binary_problems(rule, params):
    """One-vs-rest: class c's state equals the binary run on labels (y == c) -> +1 / -1, and the
    mistake is the argmax of the K pre-update scores."""
    X, y = _mc_data(2, K=3, n=25)
    K, D = 3, X.shape[1] + 1
    for cov in _covs(rule):
        mc = reference.multiclass_run(rule, X, y, K, strategy="ovr", covariance=cov, **params)
        bins = [reference.binary_run(rule, X, np.where(y == c, 1.0, -1.0), covariance=cov, **params)
                for c in range(K)]
        for t, (_, st) in enumerate(mc):
            for c in range(K):
                b = bins[c][t][1]
                np.testing.assert_allclose(st["coef"][c], b["coef"], rtol=1e-12, atol=1e-15)
                np.testing.assert_allclose(st["intercept"][c], b["intercept"], rtol=1e-12,
                                           atol=1e-15)
                if cov == "full" and "covariance" in b:
                    blk = st["covariance"][c * D:(c + 1) * D, c * D:(c + 1) * D]
                    np.testing.assert_allclose(blk, b["covariance"], rtol=1e-12)
                elif "coef_var" in b:
                    np.testing.assert_allclose(st["coef_var"][c], b["coef_var"], rtol=1e-12)
            if rule != "avg-perceptron" and t > 0:
                s = reference.multiclass_scores(rule, mc[t - 1][1], X[t:t + 1], covariance=cov)[0]
                if _argmax_unambiguous(s) is not None:
                    assert mc[t][0] == (_argmax_unambiguous(s) != y[t])


@pytest.mark.parametrize("rule,params", [c for c in RUN_CASES if c[0] != "avg-perceptron"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_top1_mistakes_match_public_state_scores(rule, params, fit_intercept):
    """mistake_t == (argmax multiclass_scores(state_{t-1}, x_t) != y_t) (avg-perceptron excluded:
    its public weights are the average)."""
    X, y = _mc_data(3)
    for cov in _covs(rule):
        run = reference.multiclass_run(rule, X, y, 4, strategy="top1", fit_intercept=fit_intercept,
                               covariance=cov, **params)
        for t in range(1, len(run)):
            s = reference.multiclass_scores(rule, run[t - 1][1], X[t:t + 1],
                                            fit_intercept=fit_intercept, covariance=cov)[0]
            if _argmax_unambiguous(s) is not None:
                assert run[t][0] == (_argmax_unambiguous(s) != y[t])
        assert 0 < sum(m for m, _ in run) < len(run)


def test_top1_first_round_tie_rules():
    """All scores 0 on round 1: the prediction is label 0 (smallest); the perceptron updates with
    f(x, y) - f(x, 0); PA's closest competitor of y = 0 is label 1 (ties -> smaller label)."""
    x = np.array([[2.0, -1.0]])
    run = reference.multiclass_run("perceptron", x, np.array([2]), 3)
    assert run[0][0]
    np.testing.assert_array_equal(run[0][1]["coef"], [[-2.0, 1.0], [0.0, 0.0], [2.0, -1.0]])
    np.testing.assert_array_equal(run[0][1]["intercept"], [-1.0, 0.0, 1.0])
    run = reference.multiclass_run("perceptron", x, np.array([0]), 3)
    assert not run[0][0]
    np.testing.assert_array_equal(run[0][1]["coef"], np.zeros((3, 2)))
    run = reference.multiclass_run("pa", x, np.array([0]), 3)
    tau = 1.0 / (2 * 6.0)  # loss 1 over ||Delta||^2 = 2 ||[x, 1]||^2
    np.testing.assert_allclose(run[0][1]["coef"], [[2 * tau, -tau], [-2 * tau, tau], [0, 0]])
    np.testing.assert_allclose(run[0][1]["intercept"], [tau, -tau, 0.0])


def test_multiclass_avg_perceptron_is_mean_of_perceptron_states():
    X, y = _mc_data(4)
    per = reference.multiclass_run("perceptron", X, y, 4)
    avg = reference.multiclass_run("avg-perceptron", X, y, 4)
    assert [m for m, _ in per] == [m for m, _ in avg]
    for t in range(len(X)):
        np.testing.assert_allclose(avg[t][1]["coef"],
                                   np.mean([s["coef"] for _, s in per[:t + 1]], axis=0),
                                   rtol=1e-12, atol=1e-14)


def test_multiclass_bad_options_raise():
    X, y = _mc_data(0, n=3)
    with pytest.raises(ValueError, match="topk"):
        reference.multiclass_run("cw", X, y, 4, strategy="topk", eta=0.9)
    with pytest.raises(ValueError, match="slack"):
        reference.multiclass_run("pa1", X, y, 4, strategy="topk", slack="shared", C=1.0)
    with pytest.raises(ValueError, match="sigma_update"):
        reference.multiclass_run("pa", X, y, 4, sigma_update="sum")
    with pytest.raises(ValueError, match="labels"):
        reference.multiclass_run("pa", X, y + 4, 4)


@pytest.mark.parametrize("rule,params", [("pa", {}), ("pa1", {"C": 0.2}), ("pa2", {"C": 0.2}),
                                         ("pa-ls", {"C": 0.2})])
def test_pa_with_intercept_is_s002_explicit_bias_form(rule, params):
    """[GPA13] eqs. (1)-(9): f = w.x - b, denominators 1 + ||x||^2, b <- b - tau y; the reference's
    intercept is -b."""
    X, y = _data(6)
    run = reference.binary_run(rule, X, y, **params)
    w, b = np.zeros(X.shape[1]), 0.0
    for (mistake, st), x, yt in zip(run, X, y):
        f = w @ x - b
        assert mistake == (yt * f <= 0)
        loss = 1.0 - yt * f
        if rule == "pa-ls" or loss > 0:
            denom = 1.0 + x @ x
            if rule == "pa":
                tau = loss / denom
            elif rule == "pa1":
                tau = min(params["C"], loss / denom)
            else:  # pa2 (6), pa-ls (9) with numerator 1 - y f
                tau = loss / (denom + 1.0 / (2.0 * params["C"]))
            w, b = w + tau * yt * x, b - tau * yt
        np.testing.assert_allclose(st["coef"], w, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(st["intercept"], -b, rtol=1e-12, atol=1e-15)
