"""Exact update of the L1-norm-constrained Passive-Aggressive algorithm (S004 eq. 3.9)."""
from typing import ClassVar

import numpy as np

from . import _core
from . import _params as P
from ._engines import Engine
from ._ovr import make_model
from .base import OnlineClassifier
from .multiclass import Multiclass

__all__ = ["L1ConstrainedPA", "l1pa_step"]

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
    S004 Problem (3.9) (FORMULAS.md §3, L1 bullet):
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
    not rotation invariant (unlike S004's L2 and objective-regularised updates,
    Lemma 3.3).

    Examples
    --------
    >>> import numpy as np
    >>> from cwkit.l1pa import l1pa_step
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


_NO_SCORES = np.empty(0)


class _L1PAEngine(Engine):
    """The weight vector w (length D, intercept last), updated by the compiled
    driver ``l1pa_pass`` (``_l1pa.pxi``: the algorithm of :func:`l1pa_step`)."""

    def initial_state(self, D):
        return {"w": np.zeros(D)}

    def run(self, rows, y, order, bias, scores_out=None):
        """One pass; `scores_out` (optional, length len(order)) gets the prediction scores."""
        return _core.l1pa_pass(*rows.args, y, order, bias, self.state["w"], self.hyper["beta"],
                               _NO_SCORES if scores_out is None else scores_out)

    def weights(self):
        return self.state["w"]


class _L1PAMulticlass(Multiclass):
    """Multi-class top-1 (``kk = 0``) or top-k (``kk`` competitors): W (D, K),
    intercept last row, updated by the compiled driver ``mc_l1pa_pass``
    (``_mc_l1pa.pxi``)."""

    def __init__(self, hyper, n_classes, n_features, kk):
        super().__init__(None, hyper, n_classes, n_features, False, False)
        self.kk = kk

    def initial_state(self, K, D):
        return {"W": np.zeros((D, K))}

    def run(self, rows, codes, order, bias):
        return _core.mc_l1pa_pass(*self._args(rows, codes, order), bias, self.state["W"],
                                  self.hyper["beta"], self.kk)

    def weights_dk(self):
        return self.state["W"]


class L1ConstrainedPA(OnlineClassifier):
    """L1-norm-constrained Passive-Aggressive (Shen & Dietterich, S004 eq. 3.9).

    Parameters
    ----------
    beta : float > 0, default=10.0
        Radius of the L1 ball: ``||w||_1 <= beta`` (the intercept coordinate
        included, as for the L2-constrained ``l2-pa``).  Every update needs
        ``beta ||x||_inf > 1`` (``x`` with its intercept feature 1); a row
        with ``x = 0`` (no intercept) makes no update.  Set it for the data:
        the default suits a few dense features; on L2-normalised text PA-I's
        weights reach ``||w||_1`` in the thousands, and a ball of 10 leaves
        the model near chance (with top-1, all K blocks share the ball).
    fit_intercept, n_passes, shuffle, random_state
        As in :class:`cwkit.Perceptron`.
    multiclass : {"top1", "topk", "ovr"}, default="top1"
        More than two classes: ``"top1"``, the L1-constrained update of all K
        weight blocks on ``Δ = f(x, y) − f(x, c)`` against the closest
        competitor; ``"topk"``, the same with the margin constraints of the k
        closest competitors (see Notes); ``"ovr"``, one-vs-rest, K independent
        binary models, each row predicted by the argmax of the K pre-update
        scores.
    k : int, default=1
        Competitors per update for ``multiclass="topk"`` (capped at K − 1).

    Notes
    -----
    When ``ℓ = max(0, 1 − y w·x) > 0`` (S004 Sect. 2), ``w`` becomes
    ``argmin ½||w' − w||²`` s.t. ``y w'·x ≥ 1`` and ``||w'||_1 ≤ β``, solved
    exactly by :func:`l1pa_step` (FORMULAS.md §3, L1 bullet).  A round costs
    O(D log D) when it updates (soft-thresholding of the whole vector) and
    O(nnz) otherwise.  Unlike the L2 and objective-regularised updates it is
    not rotation invariant (S004 Sect. 3.3).

    Multi-class top-1 (FORMULAS.md §4; the max-loss reduction of [PA06] Sect. 7
    and S000 eqs. 31–32 applied to S004 Problem 3.9): with the 1-of-k feature
    function ``f(x, y) = e_y ⊗ x̃`` (S000 Sect. 5.4), scores ``s_j = W_j·x̃``, the
    prediction ``argmax_j s_j`` (ties to the first class; a mistake when it
    is not ``y``) and the closest competitor ``c = argmax_{j ≠ y} s_j`` (ties
    to the smaller label), the update when ``ℓ = 1 − (s_y − s_c) > 0`` and
    ``x̃ ≠ 0`` is

    .. math:: W_{t+1} = \\arg\\min_W \\tfrac12 \\|W - W_t\\|_F^2 \\quad
              \\text{s.t.}\\quad W\\cdot\\Delta \\ge 1,\\ \\|W\\|_1 \\le \\beta,

    ``||W||_1`` summing all K·D entries (intercepts included), i.e. the binary
    problem with ``w = vec(W)`` and ``z = Δ`` (label +1), solved by the same
    exact algorithm.  It changes block y and block c by the margin step and
    shrinks every block by the soft-threshold λ: a round that updates costs
    O(K D log(K D)).  Feasible iff ``β ||Δ||_∞ = β ||x̃||_∞ > 1``.  One ball
    holds all K blocks, so one-vs-rest with the same β has K times the budget
    (USPS, K = 10: top-1 test error 0.124 at β = 100, one-vs-rest 0.139 at
    β = 30 and 0.129 at β = 100; top-1 0.335 at β = 30).

    Top-k (k-best MIRA of FORMULAS.md §4 with the L1 ball of S004 Problem 3.9):
    with ``c_1..c_k`` the k highest-scoring labels ≠ y (ties to the smaller
    label), ``Δ_j = f(x, y) − f(x, c_j)``, the update when ``ℓ_1 > 0`` and
    ``x̃ ≠ 0`` is ``argmin ½||W − W_t||_F²`` s.t. ``W·Δ_j ≥ 1`` (j = 1..k) and
    ``||W||_1 ≤ β`` (k = 1 is the top-1 problem).  It is solved exactly
    through its dual, ``W = S_λ(W_t + Σ_j a_j Δ_j)``: on the support of x̃,
    block y moves by ``A x̃`` with ``A = Σ_j a_j`` and block ``c_j`` by
    ``−a_j x̃``, so for a fixed λ the constraints decouple.  Given A,
    ``a_j(A)`` is the smallest ``a_j ≥ 0`` with ``x̃·w_{c_j} ≤ x̃·w_y − 1``, the
    exact root of a nondecreasing piecewise-linear function (as τ(λ) of
    :func:`l1pa_step`), nonincreasing in A; A is the root of the increasing
    ``A − Σ_j a_j(A)`` and λ that of the nonincreasing ``||W||_1 − β``.  Both
    monotone roots are bisected to adjacent doubles, so the update is the
    optimum up to rounding.  The breakpoints of the piecewise-linear functions
    depend on λ only, so each trial λ tabulates them once (O(k nnz log nnz))
    and each trial A costs O(k log nnz); a round that updates costs
    O(n) for the n nonzero weights (off the updated entries W only shrinks, and
    the driver keeps the list of nonzero weights, by magnitude, through a pass)
    plus about 60 trial λ.  Verified: KKT residual ≤ 1e-14 and
    scipy's optimum on random instances, k = 1 equals the top-1 solver, and
    with an inactive ball the PA k-best update.  Measured (USPS, first 1000
    rows, β = 30): 0.50 ms per update for top-1, 1.2 / 2.5 / 5.5 ms for top-k
    with k = 1 / 3 / 9.

    Examples
    --------
    >>> import numpy as np, cwkit
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.2], [0.1, 1.0]])
    >>> clf = cwkit.make("l1-pa", beta=3.0, shuffle=False).fit(X, [1, -1, 1, -1])
    >>> clf.predict(X).tolist(), bool(np.abs(clf.coef_).sum() + abs(clf.intercept_[0]) <= 3.0)
    ([1, -1, 1, -1], True)
    >>> X3 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]] * 3)
    >>> for mc in ("top1", "topk"):
    ...     m = cwkit.make("l1-pa", beta=2.0, multiclass=mc, k=2, shuffle=False)
    ...     m = m.fit(X3, ["a", "b", "c"] * 3)
    ...     print(mc, m.predict(X3[:3]).tolist(), m.coef_.shape,
    ...           bool(np.abs(m.coef_).sum() + np.abs(m.intercept_).sum() <= 2.0 + 1e-12))
    top1 ['a', 'b', 'c'] (3, 2) True
    topk ['a', 'b', 'c'] (3, 2) True
    """

    _constraints: ClassVar[dict] = {"beta": P.Real(0.0, np.inf, open_lo=True, open_hi=True)}

    def __init__(self, beta=10.0, *, fit_intercept=True, n_passes=1, shuffle=True,
                 random_state=None, multiclass="top1", k=1):
        self.beta = beta
        self.fit_intercept = fit_intercept
        self.n_passes = n_passes
        self.shuffle = shuffle
        self.random_state = random_state
        self.multiclass = multiclass
        self.k = k

    def _engine(self):
        return _L1PAEngine, None, {"beta": float(self.beta)}

    def _make_model(self, n_classes, n_features):
        engine, _, hyper = self._engine()
        if n_classes > 2 and self.multiclass != "ovr":
            kk = 0 if self.multiclass == "top1" else min(int(self.k), n_classes - 1)
            return _L1PAMulticlass(hyper, n_classes, n_features, kk)
        return make_model(engine, hyper, n_classes, n_features)

    def _status_detail(self, rows, pos):
        return (f"beta * ||x||_inf <= 1 (beta = {self.beta:g}): no w with ||w||_1 <= beta "
                "has margin 1 on this example; increase beta above 1/||x||_inf (x includes "
                "the intercept feature 1 when fit_intercept=True)")
