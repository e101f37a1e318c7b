"""Mini-batch PA steps against their primal problems and, for B = 1, the PA closed forms."""
import doctest

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

import reference_steps
from reference_steps import bpa_step

VARIANTS = ["bpa1", "bpa2", "bpa-ls"]


def penalty_weight(C, rho):
    """Slack penalty weight of the squared-slack primal: C Σξ² (rho 1/(2C)) or (C/2) Σξ²."""
    return C if rho == "half" else C / 2


def primal_reference(X, y, w0, c0, variant, C, rho, s=None):
    """Minimise the primal of [GPA13] (10)-(11) and its squared-slack variants with SLSQP.

    Variables u = (w, c) (c only with an intercept), plus slacks ξ for bpa1/bpa2.
    bpa-ls eliminates ξ_k = 1 - y_k f_k and is solved as a stacked least-squares problem.
    `s`: importance weights (None: 1), example k's slack term multiplied by s_k.
    """
    B, d = X.shape
    s = np.ones(B) if s is None else np.asarray(s, dtype=np.float64)
    bias = c0 is not None
    Xt = np.hstack([X, np.ones((B, 1))]) if bias else X
    u0 = np.append(w0, c0) if bias else w0.copy()
    p = len(u0)
    if variant == "bpa-ls":
        r = np.sqrt(2 * penalty_weight(C, rho) * s)
        M = np.vstack([np.eye(p), (r * y)[:, None] * Xt])
        rhs = np.concatenate([u0, r])
        u = np.linalg.lstsq(M, rhs, rcond=None)[0]
    else:
        Cp = penalty_weight(C, rho)

        def fun(z):
            u, xi = z[:p], z[p:]
            if variant == "bpa1":
                return 0.5 * (u - u0) @ (u - u0) + C * (s @ xi), np.concatenate(
                    [u - u0, C * s])
            return 0.5 * (u - u0) @ (u - u0) + Cp * (s * xi) @ xi, np.concatenate(
                [u - u0, 2 * Cp * s * xi])

        G = np.hstack([y[:, None] * Xt, np.eye(B)])
        cons = [{"type": "ineq", "fun": lambda z: G @ z - 1, "jac": lambda z: G}]
        bounds = [(None, None)] * p + [(0, None) if variant == "bpa1" else (None, None)] * B
        z0 = np.concatenate([u0, np.maximum(0, 1 - y * (Xt @ u0))])
        # status 8 ("positive directional derivative in line search") is SLSQP's way
        # of stopping at the limit of precision; feasibility is checked below. Warm
        # restarts from its own answer make the stopping point independent of the
        # BLAS's summation order.
        for _ in range(3):
            out = minimize(fun, z0, jac=True, method="SLSQP", constraints=cons,
                           bounds=bounds, options={"ftol": 1e-13, "maxiter": 1000})
            assert out.status in (0, 8), out.message
            if np.max(np.abs(out.x - z0)) <= 1e-12:
                break
            z0 = out.x
        assert np.all(G @ out.x - 1 >= -1e-9)
        u = out.x[:p]
    return (u[:d], u[d]) if bias else (u, None)


def primal_value(X, y, w0, c0, w, c, variant, C, rho, s=None):
    """Objective of [GPA13] (10) (bpa1) or its squared-slack forms at (w, c), optimal slacks
    (example k's slack term multiplied by its weight s_k, None: 1)."""
    s = np.ones(len(y)) if s is None else s
    f = X @ w + (c if c is not None else 0.0)
    obj = 0.5 * (w - w0) @ (w - w0) + (0.5 * (c - c0) ** 2 if c is not None else 0.0)
    margin = 1.0 - y * f
    if variant == "bpa1":
        return obj + C * (s * np.maximum(margin, 0.0)).sum()
    xi = margin if variant == "bpa-ls" else np.maximum(margin, 0.0)
    return obj + penalty_weight(C, rho) * (s * xi) @ xi


def dual_value(X, y, w0, c0, tau, variant, C, rho, s=None):
    """[GPA13] (14)/(17): l'tau - tau'(A + rho I)tau/2 with the pre-update scores (the
    ridge rho / s_k with weights; tau_k = 0 where s_k = 0)."""
    s = np.ones(len(y)) if s is None else s
    K = X @ X.T + (1.0 if c0 is not None else 0.0)
    A = np.outer(y, y) * K
    if variant != "bpa1":
        A = A + np.diag(np.where(s > 0, 1.0 / (2 * penalty_weight(C, rho) * np.where(
            s > 0, s, 1.0)), 0.0))
    ell = 1.0 - y * (X @ w0 + (c0 if c0 is not None else 0.0))
    return ell @ tau - 0.5 * tau @ A @ tau


def pa_closed_form(x, y, w, c, variant, C):
    """[GPA13]'s PA family with explicit bias on one example (cwkit's c = -b)."""
    f = w @ x + (c if c is not None else 0.0)
    n = x @ x + (1.0 if c is not None else 0.0)
    if variant == "bpa1":
        tau = min(C, max(0.0, 1 - y * f) / n)
    elif variant == "bpa2":
        tau = max(0.0, 1 - y * f) / (n + 1 / (2 * C))
    else:
        tau = (1 - y * f) / (n + 1 / (2 * C))
    return w + tau * y * x, (c + tau * y if c is not None else None), tau


def random_group(rng, B, d):
    X = rng.normal(size=(B, d)) * rng.uniform(0.3, 2.0)
    y = rng.choice([-1.0, 1.0], size=B)
    w = rng.normal(size=d) * 0.5
    return X, y, w, float(rng.normal() * 0.5)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("rho", ["half", "inverse"])
@pytest.mark.parametrize("bias", [True, False])
def test_step_is_primal_optimum(variant, rho, bias):
    rng = np.random.default_rng([VARIANTS.index(variant), rho == "half", bias])
    for B, d in [(1, 3), (3, 4), (5, 3), (6, 2), (4, 6)]:  # B > d + 1: A is singular
        for C in (0.05, 1.0, 20.0):
            X, y, w, c = random_group(rng, B, d)
            c = c if bias else None
            w_new, c_new, tau = bpa_step(X, y, w, c, variant=variant, C=C, rho=rho)
            w_ref, c_ref = primal_reference(X, y, w, c, variant, C, rho)
            # SLSQP's (w, c) is accurate to ~sqrt of its objective accuracy (the primal
            # is 1-strongly convex), so compare loosely, then certify exactly: ours is
            # no worse than SLSQP's and closes the duality gap with its own tau.
            np.testing.assert_allclose(w_new, w_ref, rtol=1e-4, atol=1e-4)
            if bias:
                assert c_new == pytest.approx(c_ref, rel=1e-4, abs=1e-4)
            else:
                assert c_new is None
            p_new = primal_value(X, y, w, c, w_new, c_new, variant, C, rho)
            assert p_new <= primal_value(X, y, w, c, w_ref, c_ref, variant, C, rho) + 1e-10
            d_new = dual_value(X, y, w, c, tau, variant, C, rho)
            assert abs(p_new - d_new) <= 1e-10 * max(1.0, p_new)
            if variant == "bpa1":
                assert np.all((tau >= 0) & (tau <= C))
            elif variant == "bpa2":
                assert np.all(tau >= 0)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("rho", ["half", "inverse"])
def test_weighted_step_is_the_weighted_primal_optimum(variant, rho):
    """Importance weights s_k scale each example's slack term (C s_k xi_k, C s_k xi_k^2):
    the step is the optimum of that weighted problem (SLSQP), with weights 0 among them."""
    rng = np.random.default_rng([7, VARIANTS.index(variant), rho == "half"])
    for B, d in [(3, 4), (5, 3), (4, 6)]:
        for C in (0.05, 1.0, 20.0):
            X, y, w, c = random_group(rng, B, d)
            s = rng.choice([0.0, 0.3, 1.0, 2.5], size=B)
            w_new, c_new, tau = bpa_step(X, y, w, c, variant=variant, C=C, rho=rho, s=s)
            w_ref, c_ref = primal_reference(X, y, w, c, variant, C, rho, s)
            np.testing.assert_allclose(w_new, w_ref, rtol=1e-4, atol=1e-4)
            assert c_new == pytest.approx(c_ref, rel=1e-4, abs=1e-4)
            p_new = primal_value(X, y, w, c, w_new, c_new, variant, C, rho, s)
            assert p_new <= primal_value(X, y, w, c, w_ref, c_ref, variant, C, rho, s) + 1e-10
            d_new = dual_value(X, y, w, c, tau, variant, C, rho, s)
            assert abs(p_new - d_new) <= 1e-10 * max(1.0, p_new)
            assert np.all(tau[s == 0] == 0)
            if variant == "bpa1":
                assert np.all((tau >= 0) & (tau <= C * s))
    unit = bpa_step(X, y, w, c, variant=variant, C=1.0, rho=rho, s=np.ones(B))
    plain = bpa_step(X, y, w, c, variant=variant, C=1.0, rho=rho)
    assert np.array_equal(unit[0], plain[0]) and unit[1] == plain[1]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("bias", [True, False])
def test_single_example_equals_pa_closed_form(variant, bias):
    rng = np.random.default_rng(5 + VARIANTS.index(variant) + 10 * bias)
    for _ in range(50):
        X, y, w, c = random_group(rng, 1, 5)
        c = c if bias else None
        C = float(rng.choice([0.01, 0.3, 1.0, 100.0]))
        w_new, c_new, tau = bpa_step(X, y, w, c, variant=variant, C=C)
        w_ref, c_ref, tau_ref = pa_closed_form(X[0], y[0], w, c, variant, C)
        np.testing.assert_allclose(w_new, w_ref, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(tau, [tau_ref], rtol=1e-12, atol=1e-15)
        if bias:
            assert c_new == pytest.approx(c_ref, rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("variant", VARIANTS)
def test_sparse_equals_dense(variant):
    rng = np.random.default_rng(21)
    X = rng.normal(size=(5, 8)) * (rng.random((5, 8)) < 0.4)
    y = rng.choice([-1.0, 1.0], size=5)
    w = rng.normal(size=8) * 0.2
    dense = bpa_step(X, y, w, 0.3, variant=variant, C=0.7)
    sparse = bpa_step(sp.csr_matrix(X), y, w, 0.3, variant=variant, C=0.7)
    np.testing.assert_allclose(sparse[0], dense[0], rtol=1e-13, atol=1e-15)
    assert sparse[1] == pytest.approx(dense[1], rel=1e-13)
    np.testing.assert_allclose(sparse[2], dense[2], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("variant", VARIANTS)
def test_zero_rows_get_no_step(variant):
    X = np.array([[0.0, 0.0], [1.0, 2.0]])
    w = np.array([0.1, -0.2])
    w_new, _, tau = bpa_step(X, [1.0, -1.0], w, None, variant=variant, C=1.0)
    assert tau[0] == 0.0 and np.isfinite(w_new).all()
    w_ref, _, _ = bpa_step(X[1:], [-1.0], w, None, variant=variant, C=1.0)
    np.testing.assert_array_equal(w_new, w_ref)


def test_inputs_not_mutated_and_passive_when_margins_hold():
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    w = np.array([3.0, -3.0])
    w_copy = w.copy()
    for variant in ("bpa1", "bpa2"):
        w_new, _, tau = bpa_step(X, [1.0, -1.0], w, 0.0, variant=variant, C=1.0)
        np.testing.assert_array_equal(tau, 0.0)
        np.testing.assert_array_equal(w_new, w)
    np.testing.assert_array_equal(w, w_copy)


@pytest.mark.parametrize("kwargs, match", [
    ({"variant": "bpa3"}, "variant must be one of"),
    ({"C": 0.0}, "C must be a finite number > 0"),
    ({"C": np.inf}, "C must be a finite number > 0"),
    ({"rho": 0.5}, "rho must be 'half'"),
])
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bpa_step(np.eye(2), [1, -1], np.zeros(2), 0.0, **kwargs)


def test_bad_shapes_and_labels():
    with pytest.raises(ValueError, match=r"w must have shape \(2,\)"):
        bpa_step(np.eye(2), [1, -1], np.zeros(3))
    with pytest.raises(ValueError, match="y must hold 2 labels"):
        bpa_step(np.eye(2), [1, 0], np.zeros(2))
    with pytest.raises(ValueError, match="X must be 2-D"):
        bpa_step(np.ones(2), [1], np.zeros(2))


def test_docstring_examples():
    assert doctest.testmod(reference_steps).failed == 0
