"""Per-example numpy references of the mini-batch PA and L1-constrained PA updates.

``bpa_step`` / ``bpa_tau`` solve one group's dual with numpy, scipy's pinvh and
:func:`cwkit.qp.hildreth`; ``l1pa_step`` solves the L1-constrained PA update
([LMC09] eq. 3.9) exactly, one example at a time.  The compiled drivers are
tested against them (``test_minibatch.py``, ``test_bpa_l1pa_estimators.py``,
``test_l1pa.py``, ``test_l1pa_multiclass.py``).
"""
import numpy as np
import scipy.sparse as sp

from cwkit.minibatch import bpa_rho
from cwkit.models.minibatch import BPA_VARIANTS
from cwkit.qp import hildreth

__all__ = ["bpa_step", "bpa_tau", "l1pa_step"]


def bpa_tau(A, ell, *, variant, C, rho="half", s=None):
    """Step sizes τ of one mini-batch PA update from its dual data.

    Parameters
    ----------
    A : ndarray of shape (B, B)
        ``A_jk = y_j y_k (x_j·x_k + 1)`` (``+ 1`` only with an intercept).
    ell : ndarray of shape (B,)
        ``ℓ̄_k = 1 − y_k f_k`` with the pre-update scores (not clipped at 0).
    variant : {"bpa1", "bpa2", "bpa-ls"}
    C : float
        Aggressiveness, ``C > 0``.
    rho : {"half", "inverse"}, default "half"
        Ridge of BPA-II / BPA-LS, see :func:`bpa_step`.
    s : array_like of shape (B,), optional
        Importance weights (None: 1), see :func:`bpa_step`.

    Returns
    -------
    tau : ndarray of shape (B,)
        ``tau_k = 0`` where ``A_kk = 0`` (an example that cannot move the model)
        or ``s_k = 0`` (an example without a loss term).
    """
    if variant not in BPA_VARIANTS:
        raise ValueError(f"variant must be one of {BPA_VARIANTS}, got {variant!r}")
    r = bpa_rho(C, rho)
    s = np.ones(len(ell)) if s is None else np.asarray(s, dtype=np.float64)
    tau = np.zeros(len(ell))
    # A_kk = 0 means a zero row of A (A is PSD): the example cannot move the
    # model, and tau_k = 0 as in PA's convention for x = 0.
    keep = np.flatnonzero((np.diag(A) > 0) & (s > 0))
    A, ell, s = A[np.ix_(keep, keep)], ell[keep], s[keep]
    if variant == "bpa-ls":
        from scipy.linalg import pinvh   # here, not at import: scipy.linalg is slow to load
        tau[keep] = pinvh(A + np.diag(r / s)) @ ell
    elif (ell > 0).any():  # otherwise tau = 0 meets the KKT conditions (A 0 - ell >= 0)
        if variant == "bpa1":
            res = hildreth(A, ell, 0.0, C * s)
        else:
            res = hildreth(A + np.diag(r / s), ell, 0.0, np.inf)
        if not res.converged:
            raise RuntimeError(f"{variant}: Hildreth's method did not converge "
                               f"(KKT residual {res.kkt:.3g} after {res.n_iter} sweeps)")
        tau[keep] = res.a
    return tau


def bpa_step(X, y, w, intercept=0.0, *, variant="bpa1", C=1.0, rho="half", s=None):
    """One mini-batch Passive-Aggressive update on a group of B examples.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (B, d)
        The group's examples.
    y : array_like of shape (B,)
        Labels in {-1, +1}.
    w : ndarray of shape (d,)
        Weights before the update (not modified).
    intercept : float or None, default 0.0
        Intercept before the update (score ``w·x + intercept``); ``None`` means
        no intercept (the ``+ 1`` in ``A`` and the intercept update are dropped).
    variant : {"bpa1", "bpa2", "bpa-ls"}, default "bpa1"
        BPA-I (hinge slacks), BPA-II (squared slacks) or BPA-LS (equality
        constraints with squared slacks).
    C : float, default 1.0
        Aggressiveness, ``0 < C < inf``.
    rho : {"half", "inverse"}, default "half"
        Ridge of BPA-II / BPA-LS: ``1/(2C)`` (primal penalty ``C Σ ξ_k²``) or
        ``1/C`` as printed in [GPA13] eqs. (17), (19) (penalty ``(C/2) Σ ξ_k²``).
    s : array_like of shape (B,), optional
        Importance weights ``s_k >= 0`` (None: 1): example k's loss term is
        ``s_k C ξ_k`` (BPA-I) or ``s_k C ξ_k²`` (BPA-II, BPA-LS), so its box is
        ``0 ≤ τ_k ≤ s_k C`` and its ridge ``ρ / s_k``; ``s_k = 0`` drops it.

    Returns
    -------
    w : ndarray of shape (d,)
        Updated weights.
    intercept : float or None
        Updated intercept (``None`` if given ``None``).
    tau : ndarray of shape (B,)
        Step sizes; when ``A`` is singular they are one optimal choice, the
        updated ``(w, intercept)`` is unique.

    Notes
    -----
    [GPA13] Sect. 3.2, eqs. (10)–(19).  With scores
    ``f_k = w·x_k + c`` (cwkit's intercept ``c`` is the augmented constant
    feature +1, i.e. ``c = −b`` of [GPA13]), ``ℓ̄_k = 1 − y_k f_k`` and
    ``A_jk = y_j y_k (x_j·x_k + 1)`` (16), the update (12)–(13) is

    .. math:: w \\leftarrow w + \\sum_k \\tau_k y_k x_k, \\qquad
              c \\leftarrow c + \\sum_k \\tau_k y_k

    with τ the solution of

    * BPA-I (14)–(15): ``max −½τᵀAτ + τᵀℓ̄`` s.t. ``0 ≤ τ_k ≤ C``, the dual of
      ``min ½‖w−w_t‖² + ½(c−c_t)² + C Σ ξ_k`` s.t. ``y_k f_k ≥ 1 − ξ_k, ξ_k ≥ 0``;
    * BPA-II (17)–(18): ``max −½τᵀ(A + ρI)τ + τᵀℓ̄`` s.t. ``τ_k ≥ 0``;
    * BPA-LS (19): ``τ = (A + ρI)⁺ ℓ̄`` (Moore–Penrose pseudo-inverse).

    BPA-I and BPA-II are solved exactly by :func:`cwkit.qp.hildreth`. The
    default ``ρ = 1/(2C)`` is what the squared-slack primal gives and makes
    ``B = 1`` coincide with PA-II (6) and PA-LS (9); [GPA13] prints ``1/C``.

    Examples
    --------
    >>> import numpy as np
    >>> from reference_steps import bpa_step
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> w, c, tau = bpa_step(X, [1, -1], np.zeros(2), None, variant="bpa1", C=0.5)
    >>> w.tolist(), c, tau.tolist()
    ([0.5, -0.5], None, [0.5, 0.5])
    >>> w, c, tau = bpa_step(X, [1, -1], np.zeros(2), 0.0, variant="bpa-ls", C=1.0)
    >>> w.round(12).tolist(), abs(round(c, 12)), tau.round(12).tolist()
    ([0.666666666667, -0.666666666667], 0.0, [0.666666666667, 0.666666666667])
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
    else:
        X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (B, d), got {X.ndim} dimension(s)")
    w = np.asarray(w, dtype=np.float64)
    if w.shape != (X.shape[1],):
        raise ValueError(f"w must have shape ({X.shape[1]},) to match X, got {w.shape}")
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (X.shape[0],) or not np.isin(y, (-1.0, 1.0)).all():
        raise ValueError(f"y must hold {X.shape[0]} labels in {{-1, +1}}")
    K = X @ X.T
    K = K.toarray() if sp.issparse(K) else np.asarray(K)
    f = X @ w
    if intercept is not None:
        K = K + 1.0
        f = f + float(intercept)
    A = np.outer(y, y) * K
    tau = bpa_tau(A, 1.0 - y * f, variant=variant, C=C, rho=rho, s=s)
    ty = tau * y
    w_new = w + X.T @ ty
    if intercept is not None:
        intercept = float(intercept + ty.sum())
    return w_new, intercept, tau


_EPS = np.finfo(np.float64).eps
_MAX_LAMBDA_STEPS = 300


def _soft(u, lam):
    return np.sign(u) * np.maximum(np.abs(u) - lam, 0.0)


def _tau(p, a, lam):
    """Smallest τ >= 0 with margin m(τ) = Σ a_i S_λ(p_i + τ a_i) >= 1 (exact root).

    ``a = |z_i| > 0``, ``p = sign(z_i) v_i``.  m is continuous, nondecreasing and
    piecewise linear; the segment holding the root is found from the sorted
    breakpoints and the root is solved exactly on that segment's active set.
    """
    m0 = a @ _soft(p, lam)
    if m0 >= 1.0:
        return 0.0
    a2 = a * a
    leave = p < -lam  # active on the negative side at 0+, leaves at t = (-λ - p)/a
    enter = p < lam  # enters the positive side at t = (λ - p)/a
    t = np.concatenate([(-lam - p[leave]) / a[leave], (lam - p[enter]) / a[enter]])
    ds = np.concatenate([-a2[leave], a2[enter]])
    order = np.argsort(t, kind="stable")
    t, ds = t[order], ds[order]
    slope = a2[(p >= lam) | leave].sum() + np.concatenate([[0.0], np.cumsum(ds)])
    m_at = m0 + np.cumsum(slope[:-1] * np.diff(np.concatenate([[0.0], t])))
    reached = m_at >= 1.0
    j = int(np.argmax(reached)) if reached.any() else len(t)  # first breakpoint with m >= 1
    t_lo = t[j - 1] if j > 0 else 0.0
    mid = 0.5 * (t_lo + t[j]) if j < len(t) else t_lo + 1.0
    u = p + mid * a
    pos, neg = u > lam, u < -lam
    # On this segment m(τ) = Σ_pos a(p - λ) + Σ_neg a(p + λ) + τ Σ_{pos ∪ neg} a².
    c = a[pos] @ (p[pos] - lam) + a[neg] @ (p[neg] + lam)
    s = a2[pos].sum() + a2[neg].sum()  # > 0: m increases on the segment of the root
    return max(0.0, (1.0 - c) / s)


def l1pa_step(w, x, y, beta):
    """Exact L1-norm-constrained PA update: project onto {y w·x >= 1, ||w||_1 <= beta}.

    Parameters
    ----------
    w : array_like of shape (d,)
        Weights before the update (not modified).
    x : array_like of shape (d,)
        The example.
    y : {-1, +1}
        Its label.
    beta : float
        Radius of the L1 ball, ``beta > 0``.

    Returns
    -------
    w : ndarray of shape (d,)
        ``argmin ½||w' − w||²`` s.t. ``y w'·x >= 1`` and ``||w'||_1 <= beta``.
    tau : float
        Multiplier of the margin constraint (``>= 0``).
    lam : float
        Multiplier of the L1 constraint (``>= 0``; 0 when the ball is inactive,
        and then the update is the hard-margin PA step).

    Raises
    ------
    ValueError
        If ``beta ||x||_inf <= 1``: no w in the L1 ball reaches margin 1 (the
        largest attainable margin is ``beta ||x||_inf``); or on bad input.

    Notes
    -----
    [LMC09] Problem (3.9):
    ``min ½||w − w_t||²`` s.t. ``y w·x >= 1``, ``||w||_1 <= β``, solved exactly
    through its dual instead of a generic QP solver.  With ``z = y x`` the
    Lagrangian is minimised by soft-thresholding,

    .. math:: w(\\tau, \\lambda) = S_\\lambda(w_t + \\tau z), \\qquad
              S_\\lambda(u)_i = \\mathrm{sign}(u_i)\\max(|u_i| - \\lambda, 0).

    For fixed λ, ``τ(λ)`` is 0 if ``z·S_λ(w_t) >= 1``, else the exact root of
    the nondecreasing piecewise-linear margin ``z·w(τ, λ) = 1`` (breakpoints
    sorted, root solved on its segment).  ``g(λ) = ||w(τ(λ), λ)||_1 − β`` is the
    derivative of the concave dual in λ (continuous, nonincreasing, piecewise
    affine).  If ``g(0) <= 0`` the ball is inactive and ``λ = 0``; otherwise λ
    is bracketed (doubling) and found by a safeguarded Newton iteration whose
    candidate is the exact solution of the 2×2 KKT system (margin 1,
    ``||w||_1 = β``) on the current support and signs (the 1×1 system when
    ``τ = 0``); bisection replaces a candidate outside the bracket.  It stops
    when ``|g| <= 4 eps β``, when the candidate equals λ to 4 eps (λ solves the
    KKT system of its own piece, g is zero up to the rounding of the sum), or
    when the bracket has collapsed (its feasible end is taken).  The update is
    not rotation invariant (unlike [LMC09]'s L2 and objective-regularised updates,
    Lemma 3.3).

    Examples
    --------
    >>> import numpy as np
    >>> from reference_steps import l1pa_step
    >>> w, tau, lam = l1pa_step(np.zeros(2), np.array([2.0, 1.0]), 1, beta=0.5625)
    >>> w.tolist(), tau, lam
    ([0.4375, 0.125], 0.3125, 0.1875)
    """
    v = np.asarray(w, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    if v.ndim != 1 or x.shape != v.shape:
        raise ValueError(f"l1pa_step: w and x must be 1-D of equal length, got shapes "
                         f"{v.shape} and {x.shape}")
    if y not in (-1, 1):
        raise ValueError(f"l1pa_step: y must be -1 or +1, got {y!r}")
    if not (np.isfinite(beta) and beta > 0):
        raise ValueError(f"l1pa_step: beta must be a finite number > 0, got {beta!r}")
    if not (np.isfinite(v).all() and np.isfinite(x).all()):
        raise ValueError("l1pa_step: w and x must be finite")
    xmax = np.abs(x).max(initial=0.0)
    if beta * xmax <= 1.0:
        raise ValueError(f"l1pa_step: infeasible update, beta * ||x||_inf = {beta * xmax:.6g} "
                         "<= 1, so no w with ||w||_1 <= beta has margin 1; increase beta")
    on = np.flatnonzero(x)
    return _l1pa_exact(v, on, y * x[on], beta, xmax)


def _l1pa_exact(v, on, zs, beta, zmax):
    """Solve (3.9) for w_t = v and z = y x given sparse: z[on] = zs (nonzero), |z|_inf = zmax.

    Coordinates off the support of z keep u_i = v_i for every τ: their part of
    ||S_λ(u)||_1 is read from the sorted |v_i| and suffix sums, so a trial λ
    costs O(nnz(x) log nnz(x) + log d); the whole vector is touched O(1) times.
    """
    vs = v[on]
    a, p = np.abs(zs), np.sign(zs) * vs
    vo = np.abs(v)
    vmax = vo.max(initial=0.0)
    vo[on] = 0.0
    vo = np.sort(vo[vo > 0.0])
    suffix = np.append(np.cumsum(vo[::-1])[::-1], 0.0)

    def solve(lam):
        """τ(λ), u on the support, g(λ), and the off-support (count, sum) of |v_i| > λ."""
        tau = _tau(p, a, lam)
        us = vs + tau * zs
        j = int(np.searchsorted(vo, lam, side="right"))
        n_off, s_off = len(vo) - j, suffix[j]
        g = np.maximum(np.abs(us) - lam, 0.0).sum() + (s_off - lam * n_off) - beta
        return tau, us, g, n_off, s_off

    def result(tau, lam):
        u = v.copy()
        u[on] += tau * zs
        return _soft(u, lam) if lam > 0.0 else u, float(tau), float(lam)

    tau, us, g, n_off, s_off = solve(0.0)
    if g <= 0.0:
        return result(tau, 0.0)
    lam_lo, lam_hi = 0.0, vmax + 1.0 / zmax
    while True:
        hi_state = solve(lam_hi)
        if hi_state[2] <= 0.0:
            break
        lam_lo, lam_hi = lam_hi, 2.0 * lam_hi
    lam = lam_hi
    tau, us, g, n_off, s_off = hi_state
    for _ in range(_MAX_LAMBDA_STEPS):
        if abs(g) <= 4.0 * _EPS * beta:
            break
        act = np.abs(us) > lam
        sig, za, va = np.sign(us[act]), zs[act], vs[act]
        n, a11, a12 = act.sum() + n_off, za @ za, sig @ za
        r1, r2 = 1.0 - za @ va, beta - (sig @ va + s_off)
        det = a12 * a12 - a11 * n  # <= 0 by Cauchy-Schwarz
        if tau > 0.0 and det < -4.0 * _EPS * a11 * n:
            cand = (a11 * r2 - a12 * r1) / det
        elif tau == 0.0 and n > 0:
            cand = (sig @ va + s_off - beta) / n
        else:
            cand = np.nan
        if abs(cand - lam) <= 4.0 * _EPS * lam:
            break  # λ solves the KKT system of its own piece: g is zero up to rounding
        if not lam_lo < cand < lam_hi:
            if lam_hi - lam_lo <= 4.0 * _EPS * lam_hi:
                lam = lam_hi  # bracket collapsed: its feasible end
                tau = hi_state[0]
                break
            cand = 0.5 * (lam_lo + lam_hi)
        lam = cand
        tau, us, g, n_off, s_off = state = solve(lam)
        if g > 0.0:
            lam_lo = lam
        else:
            lam_hi, hi_state = lam, state
    return result(tau, lam)
