"""Exact L1-norm-constrained PA step: KKT conditions, a generic QP solver, special cases."""
import doctest

import numpy as np
import pytest
from scipy.optimize import minimize

import reference_steps
from reference_steps import l1pa_step


def assert_kkt(v, x, y, beta, w, tau, lam, tol=1e-10):
    """KKT conditions of min ½||w - v||² s.t. y w·x >= 1, ||w||_1 <= beta (sufficient: convex)."""
    z = y * x
    scale = 1.0 + np.abs(v).max() + tau * np.abs(z).max()
    margin, norm1 = z @ w, np.abs(w).sum()
    assert tau >= 0.0 and lam >= 0.0
    assert margin >= 1.0 - tol
    assert norm1 <= beta * (1.0 + tol)
    assert tau * abs(margin - 1.0) <= tol * scale
    assert lam * abs(norm1 - beta) <= tol * beta * scale
    # 0 ∈ w - v - τ z + λ ∂||w||_1
    u = v + tau * z
    on = w != 0
    np.testing.assert_allclose(w[on], u[on] - lam * np.sign(w[on]), rtol=0, atol=tol * scale)
    assert np.all(np.abs(u[~on]) <= lam + tol * scale)


def generic_qp(v, x, y, beta):
    """SLSQP on the smooth reformulation w = p - q, p, q >= 0."""
    d = len(v)
    z = y * x

    def fun(pq):
        r = pq[:d] - pq[d:] - v
        return 0.5 * r @ r, np.concatenate([r, -r])

    cons = [{"type": "ineq", "fun": lambda pq: z @ (pq[:d] - pq[d:]) - 1.0,
             "jac": lambda pq: np.concatenate([z, -z])},
            {"type": "ineq", "fun": lambda pq: beta - pq.sum(), "jac": lambda pq: -np.ones(2 * d)}]
    x0 = np.concatenate([np.maximum(v, 0), np.maximum(-v, 0)])
    out = minimize(fun, x0, jac=True, method="SLSQP", constraints=cons,
                   bounds=[(0, None)] * (2 * d), options={"ftol": 1e-15, "maxiter": 2000})
    assert out.status in (0, 8), out.message  # 8: stopped at the limit of precision
    return out.x[:d] - out.x[d:]


def random_case(rng, d):
    v = rng.normal(size=d) * rng.uniform(0.1, 3.0)
    x = rng.normal(size=d) * (rng.random(d) < 0.7)
    if not x.any():
        x[0] = 1.0
    y = int(rng.choice([-1, 1]))
    lo = 1.0 / np.abs(x).max()  # beta must exceed this for feasibility
    beta = lo * rng.uniform(1.05, 3.0)
    return v, x, y, beta


@pytest.mark.parametrize("d", [1, 2, 3, 5, 8])
def test_kkt_and_generic_qp(d):
    rng = np.random.default_rng(d)
    n_active = 0
    for _ in range(40):
        v, x, y, beta = random_case(rng, d)
        w, tau, lam = l1pa_step(v, x, y, beta)
        assert_kkt(v, x, y, beta, w, tau, lam)
        np.testing.assert_allclose(w, generic_qp(v, x, y, beta), rtol=1e-6, atol=1e-6)
        n_active += lam > 0
    assert d == 1 or n_active >= 10  # the L1 constraint is active in a good share of cases


@pytest.mark.parametrize("d", [50, 2000])
def test_kkt_high_dimension(d):
    rng = np.random.default_rng(d)
    for _ in range(5):
        v, x, y, _ = random_case(rng, d)
        beta = max(np.abs(v).sum() * rng.uniform(0.05, 0.9), 1.5 / np.abs(x).max())
        w, tau, lam = l1pa_step(v, x, y, beta)
        assert lam > 0
        assert_kkt(v, x, y, beta, w, tau, lam)


def test_inactive_ball_is_hard_margin_pa():
    rng = np.random.default_rng(4)
    for _ in range(30):
        v, x, y, _ = random_case(rng, 6)
        loss = 1.0 - y * (v @ x)
        if loss <= 0:
            continue
        w_pa = v + loss / (x @ x) * y * x
        w, tau, lam = l1pa_step(v, x, y, beta=np.abs(w_pa).sum() * 1.01)
        assert lam == 0.0
        np.testing.assert_allclose(w, w_pa, rtol=1e-13, atol=1e-14)
        assert tau == pytest.approx(loss / (x @ x), rel=1e-13)


def test_feasible_point_is_unchanged():
    v, x = np.array([1.0, -0.5]), np.array([2.0, 0.0])
    w, tau, lam = l1pa_step(v, x, 1, beta=2.0)
    np.testing.assert_array_equal(w, v)
    assert tau == 0.0 and lam == 0.0


def test_projection_without_margin_multiplier():
    # Soft-thresholding raises the margin above 1 on its own: tau = 0, lam > 0.
    v, x = np.array([4.0, -2.2]), np.array([1.0, 1.5])
    w, tau, lam = l1pa_step(v, x, 1, beta=2.2)
    assert tau == 0.0 and lam > 0.0
    assert_kkt(v, x, 1, 2.2, w, tau, lam)
    np.testing.assert_allclose(w, generic_qp(v, x, 1, 2.2), atol=1e-7)


def test_equal_magnitudes_degenerate_kkt_system():
    # |z_i| all equal: the 2x2 KKT system is singular on the full support.
    v, x = np.array([3.0, -3.0, 0.0]), np.ones(3)
    w, tau, lam = l1pa_step(v, x, 1, beta=1.5)
    assert_kkt(v, x, 1, 1.5, w, tau, lam)
    np.testing.assert_allclose(w, generic_qp(v, x, 1, 1.5), atol=1e-7)


def test_not_rotation_invariant():
    """Lemma 3.3's invariance fails for L1: rotating the inputs changes the update."""
    rng = np.random.default_rng(9)
    d = 4
    R = np.linalg.qr(rng.normal(size=(d, d)))[0]
    v, x = rng.normal(size=d), rng.normal(size=d)
    beta = 1.2 / np.abs(R @ x).max() + 1.2 / np.abs(x).max()
    w, _, lam = l1pa_step(v, x, 1, beta)
    w_rot, _, lam_rot = l1pa_step(R @ v, R @ x, 1, beta)
    assert lam > 0 and lam_rot > 0
    assert np.abs(w_rot - R @ w).max() > 1e-3
    # while the hard-margin PA step (inactive ball) commutes with the rotation
    big = 1e6
    w, _, _ = l1pa_step(v, x, 1, big)
    w_rot, _, _ = l1pa_step(R @ v, R @ x, 1, big)
    np.testing.assert_allclose(w_rot, R @ w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("x, beta", [(np.array([0.5, -0.25]), 2.0), (np.zeros(3), 5.0),
                                     (np.array([0.1]), 1.0)])
def test_infeasible_raises(x, beta):
    with pytest.raises(ValueError, match=r"infeasible update, beta \* \|\|x\|\|_inf"):
        l1pa_step(np.zeros(len(x)), x, 1, beta)


@pytest.mark.parametrize("args, match", [
    ((np.zeros(2), np.ones(3), 1, 2.0), "equal length"),
    ((np.zeros(2), np.ones(2), 0, 2.0), "y must be -1 or \\+1"),
    ((np.zeros(2), np.ones(2), 1, -1.0), "beta must be a finite number > 0"),
    ((np.zeros(2), np.array([1.0, np.nan]), 1, 2.0), "must be finite"),
])
def test_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        l1pa_step(*args)


def test_docstring_examples():
    assert doctest.testmod(reference_steps).failed == 0
