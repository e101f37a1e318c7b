"""Hildreth's QP against brute-force active-set enumeration and generic scipy solvers."""
import doctest
import itertools

import numpy as np
import pytest
from scipy.optimize import lsq_linear, minimize

import cwkit.qp
from cwkit.qp import hildreth


def objective(Q, b, a):
    return b @ a - 0.5 * a @ Q @ a


def neg_objective(a, Q, b):
    return -objective(Q, b, a), Q @ a - b


def kkt_residual(Q, b, lo, hi, a):
    """Projected-gradient residual, written independently of the solver."""
    g = b - Q @ a
    r = np.abs(g)
    r = np.where(a <= lo, np.maximum(g, 0.0), r)
    r = np.where(a >= hi, np.maximum(-g, 0.0), r)
    r = np.where(lo == hi, 0.0, r)
    return r.max(initial=0.0)


def enumerate_active_sets(Q, b, lo, hi, tol=1e-9):
    """Best KKT point over all (lower, upper, free) assignments (small k only)."""
    k = len(b)
    best = None
    for states in itertools.product((0, 1, 2), repeat=k):
        s = np.array(states)
        if np.any((s == 0) & ~np.isfinite(lo)) or np.any((s == 1) & ~np.isfinite(hi)):
            continue
        a = np.where(s == 0, lo, np.where(s == 1, hi, 0.0))
        F = s == 2
        if F.any():
            rhs = b[F] - Q[np.ix_(F, ~F)] @ a[~F]
            a[F] = np.linalg.lstsq(Q[np.ix_(F, F)], rhs, rcond=None)[0]
        if np.any(a < lo - tol) or np.any(a > hi + tol):
            continue
        a = np.clip(a, lo, hi)
        if kkt_residual(Q, b, lo, hi, a) > tol:
            continue
        if best is None or objective(Q, b, a) > objective(Q, b, best):
            best = a
    return best


def random_psd(rng, k, rank):
    X = rng.normal(size=(k, rank)) * rng.uniform(0.1, 3.0)
    return X @ X.T


def random_instance(rng, k):
    """A bounded random instance: PD or singular Q, mixed finite/infinite bounds."""
    rank = int(rng.integers(0, k + 1))
    Q = random_psd(rng, k, rank)
    if rng.random() < 0.3:
        Q[:, 0] = Q[0, :] = 0.0  # a zero row and diagonal entry
    kind = rng.integers(3)
    if kind == 0:  # box [0, C]
        lo, hi = np.zeros(k), rng.uniform(0.1, 2.0, size=k)
        b = rng.normal(size=k) * 3
    elif kind == 1:  # nonnegative orthant; b = Qc - p, p >= 0 keeps it bounded
        lo, hi = np.zeros(k), np.full(k, np.inf)
        b = Q @ rng.normal(size=k) - rng.uniform(0, 1, size=k) * (rng.random(k) < 0.5)
    else:  # general box with some infinite sides; bounded because b is in range(Q)
        lo = np.where(rng.random(k) < 0.3, -np.inf, -rng.uniform(0, 1, size=k))
        hi = np.where(rng.random(k) < 0.3, np.inf, rng.uniform(0, 1, size=k))
        b = Q @ rng.normal(size=k)
    return Q, b, lo, hi


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_matches_active_set_enumeration(k):
    rng = np.random.default_rng(100 + k)
    for _ in range(60):
        Q, b, lo, hi = random_instance(rng, k)
        res = hildreth(Q, b, lo, hi)
        ref = enumerate_active_sets(Q, b, lo, hi)
        assert ref is not None
        assert res.converged
        assert np.all(res.a >= lo) and np.all(res.a <= hi)
        assert res.kkt <= 1e-9
        assert kkt_residual(Q, b, lo, hi, res.a) <= 1e-9
        # Q a and the optimal value are unique even when a is not (singular Q).
        assert objective(Q, b, res.a) == pytest.approx(objective(Q, b, ref), rel=1e-10, abs=1e-10)
        np.testing.assert_allclose(Q @ res.a, Q @ ref, rtol=1e-8, atol=1e-8)
        if np.linalg.eigvalsh(Q)[0] > 1e-6:
            np.testing.assert_allclose(res.a, ref, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("k", [5, 12, 20])
def test_positive_definite_matches_bvls(k):
    """Q = R'R: max b'a - a'Qa/2 is min ||R a - R^{-T} b||^2/2, solved by BVLS."""
    rng = np.random.default_rng(7 * k)
    for _ in range(10):
        Q = random_psd(rng, k, k) + 1e-3 * np.eye(k)
        b = rng.normal(size=k) * 2
        lo = np.zeros(k)
        hi = np.where(rng.random(k) < 0.5, np.inf, rng.uniform(0.1, 1.0, size=k))
        R = np.linalg.cholesky(Q).T
        d = np.linalg.solve(R.T, b)
        ref = lsq_linear(R, d, bounds=(lo, hi), method="bvls", tol=1e-14).x
        res = hildreth(Q, b, lo, hi)
        assert res.converged and res.kkt <= 1e-9
        np.testing.assert_allclose(res.a, ref, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("k", [6, 10, pytest.param(16, marks=pytest.mark.slow)])  # (16: -m slow)
def test_singular_matches_lbfgsb(k):
    rng = np.random.default_rng(11 * k)
    for _ in range(8):
        Q = random_psd(rng, k, k // 3)
        b = rng.normal(size=k)
        lo, hi = np.zeros(k), rng.uniform(0.2, 2.0, size=k)
        ref = minimize(neg_objective, np.zeros(k), args=(Q, b), jac=True,
                       method="L-BFGS-B", bounds=list(zip(lo, hi)),
                       options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10_000}).x
        res = hildreth(Q, b, lo, hi)
        assert res.converged and res.kkt <= 1e-9
        assert objective(Q, b, res.a) >= objective(Q, b, ref) - 1e-9
        assert objective(Q, b, res.a) == pytest.approx(objective(Q, b, ref), rel=1e-8)


@pytest.mark.parametrize("k, rank", [(10, 4), pytest.param(16, 5, marks=pytest.mark.slow),
                                     pytest.param(20, 3, marks=pytest.mark.slow)])  # -m slow
def test_low_rank_gram_with_wide_box(k, rank):
    """Mini-batch duals with B > d + 1: the objective rises along null directions of Q
    until the box stops it, far from 0 (plain coordinate ascent needs >10^4 sweeps)."""
    rng = np.random.default_rng(k + rank)
    for C in (100.0, 1e4):
        X = rng.normal(size=(k, rank))
        y = rng.choice([-1.0, 1.0], size=k)
        Q = np.outer(y, y) * (X @ X.T)
        b = 1 - y * (X @ rng.normal(size=rank) * 0.5)
        lo, hi = np.zeros(k), np.full(k, C)
        res = hildreth(Q, b, lo, hi)
        assert res.converged and res.n_iter <= 100
        assert kkt_residual(Q, b, lo, hi, res.a) <= 1e-9 * C
        ref = minimize(neg_objective, np.zeros(k), args=(Q, b), jac=True, method="L-BFGS-B",
                       bounds=list(zip(lo, hi)),
                       options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 50_000}).x
        assert objective(Q, b, res.a) >= objective(Q, b, ref) - 1e-9 * C


@pytest.mark.parametrize("k", [6, 8, 14, 20])
def test_ill_conditioned_solved_by_polish(k):
    """Condition number 1e8, optimum with free and bound coordinates."""
    rng = np.random.default_rng(k)
    V = np.linalg.qr(rng.normal(size=(k, k)))[0]
    Q = V @ np.diag(np.logspace(0, -8, k)) @ V.T
    Q = 0.5 * (Q + Q.T)
    b = Q @ rng.uniform(-1.5, 1.5, size=k)
    lo, hi = -np.ones(k), np.ones(k)
    res = hildreth(Q, b, lo, hi)
    assert res.converged and res.kkt <= 1e-9
    assert kkt_residual(Q, b, lo, hi, res.a) <= 1e-9
    assert 0 < np.sum((res.a > lo) & (res.a < hi)) < k
    # coordinate ascent alone needs more than 10^4 sweeps here (linear rate ~ 1 - 1e-8)
    assert res.n_iter <= 50
    R = np.linalg.cholesky(Q).T
    ref = lsq_linear(R, np.linalg.solve(R.T, b), bounds=(lo, hi), method="bvls", tol=1e-15).x
    assert objective(Q, b, res.a) >= objective(Q, b, ref) - 1e-12


def test_degenerate_inputs():
    empty = hildreth(np.zeros((0, 0)), [])
    assert empty.a.shape == (0,) and empty.kkt == 0.0 and empty.converged
    res = hildreth(np.zeros((3, 3)), [-1.0, 0.0, -2.0])  # Q = 0, b <= 0: a = 0
    np.testing.assert_array_equal(res.a, np.zeros(3))
    assert res.converged and res.kkt == 0.0
    # Zero diagonal entries: linear coordinates go to the bound their gradient points to.
    Q = np.diag([0.0, 2.0, 0.0])
    res = hildreth(Q, [1.5, 1.0, -1.0], lo=[0.0, 0.0, -3.0], hi=[4.0, np.inf, 5.0])
    np.testing.assert_array_equal(res.a, [4.0, 0.5, -3.0])
    assert res.kkt == 0.0
    # Fixed coordinates (lo == hi) and scalar bounds.
    res = hildreth(np.eye(2), [5.0, 5.0], lo=[1.0, 0.0], hi=[1.0, 2.0])
    np.testing.assert_array_equal(res.a, [1.0, 2.0])


def test_unbounded_is_reported_without_nan():
    with pytest.raises(ValueError, match="unbounded above along coordinate 1"):
        hildreth(np.diag([1.0, 0.0]), [1.0, 1.0])
    # An ascent ray that is not a coordinate direction: no NaN, not converged.
    Q = np.array([[1.0, -1.0], [-1.0, 1.0]])
    res = hildreth(Q, [1.0, 1.0], max_iter=50)
    assert not res.converged and np.isfinite(res.a).all() and res.kkt > 0.5


def test_max_iter_zero_returns_start():
    res = hildreth(np.eye(2), [1.0, 2.0], max_iter=0)
    np.testing.assert_array_equal(res.a, [0.0, 0.0])
    assert not res.converged and res.n_iter == 0 and res.kkt == 2.0


@pytest.mark.parametrize("args, match", [
    ((np.ones((2, 3)), [1, 1]), "square"),
    ((np.eye(2), [1, 1, 1]), "b must be a scalar or have shape"),
    ((np.array([[1.0, 2.0], [0.0, 1.0]]), [1, 1]), "symmetric"),
    ((np.array([[1.0, 2.0], [2.0, 1.0]]), [1, 1]), "positive semi-definite"),
    ((np.eye(2), [1, np.nan]), "b contains NaN"),
    ((np.eye(2), [1, np.inf]), "b contains infinite"),
    ((np.array([[1.0, np.nan], [np.nan, 1.0]]), [1, 1]), "Q contains NaN"),
    ((np.eye(2), [1, 1], [0, 2], [1, 1]), "empty box at coordinate 1"),
])
def test_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        hildreth(*args)


def test_docstring_examples():
    assert doctest.testmod(cwkit.qp).failed == 0
