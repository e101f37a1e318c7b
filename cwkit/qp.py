"""Hildreth's method for small box-constrained concave quadratic programs."""
from typing import NamedTuple

import numpy as np

from . import _core

__all__ = ["HildrethResult", "hildreth"]


class HildrethResult(NamedTuple):
    """Result of :func:`hildreth`.

    Attributes
    ----------
    a : ndarray of shape (k,)
        The maximiser (feasible: ``lo <= a <= hi`` exactly).
    kkt : float
        KKT residual of ``a``: the largest projected-gradient component of
        ``g = b - Q a`` (``|g_j|`` for a free coordinate, ``max(g_j, 0)`` at its
        lower bound, ``max(-g_j, 0)`` at its upper bound, 0 if ``lo_j = hi_j``).
    n_iter : int
        Number of coordinate-ascent sweeps made.
    converged : bool
        Whether ``kkt`` reached the stopping level before ``max_iter`` sweeps.
    """

    a: np.ndarray
    kkt: float
    n_iter: int
    converged: bool


def _vector(v, k, name):
    arr = np.asarray(v, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(k, float(arr))
    if arr.shape != (k,):
        raise ValueError(f"hildreth: {name} must be a scalar or have shape ({k},), "
                         f"got shape {arr.shape}")
    if np.isnan(arr).any():
        raise ValueError(f"hildreth: {name} contains NaN")
    return np.ascontiguousarray(arr)


def hildreth(Q, b, lo=0.0, hi=np.inf, *, tol=1e-15, max_iter=10_000):
    """Maximise ``b'a - a'Qa/2`` subject to ``lo <= a <= hi`` (Q symmetric PSD).

    Parameters
    ----------
    Q : array_like of shape (k, k)
        Symmetric positive semi-definite matrix (singular allowed).
    b : array_like of shape (k,)
        Linear term (the losses of the dual problems of cwkit's updates).
    lo, hi : float or array_like of shape (k,), default 0 and +inf
        Bounds, ``lo <= hi``; ``lo`` may be ``-inf`` and ``hi`` may be ``+inf``.
    tol : float, default 1e-15
        Stop when the KKT residual is at most ``tol * max(1, ||b||_inf)``, or
        at the rounding level ``8 k eps max_j(|b_j| + sum_l |Q_jl a_l|)`` of
        the gradient if that is larger.
    max_iter : int, default 10000
        Maximum number of coordinate-ascent sweeps.

    Returns
    -------
    HildrethResult
        Named tuple ``(a, kkt, n_iter, converged)``.

    Raises
    ------
    ValueError
        On non-finite or mis-shaped input, ``lo > hi``, a Q that is not
        symmetric PSD, or an objective found unbounded above (a coordinate of
        zero curvature whose gradient points to an infinite bound).

    Notes
    -----
    Hildreth's method [CZ97]_ in its dual form: cyclic exact
    coordinate ascent

    .. math:: a_j \\leftarrow \\mathrm{clip}\\big(a_j + (b_j - (Qa)_j)/Q_{jj},
              \\; lo_j, hi_j\\big)

    from ``a = clip(0, lo, hi)``; a coordinate with ``Q_jj = 0`` (its row is
    zero for a PSD Q) moves to the bound its gradient points to.  Whenever a
    sweep leaves the active set (the coordinates at a bound) unchanged, the
    face of that active set is solved exactly (the polish): the free block
    ``Q_FF a_F = b_F - Q_FB a_B`` is solved by a pivoted Cholesky factorisation
    truncated at rank ``r`` (pivots below ``n_F eps max diag``, the default of
    LAPACK's ``dpstrf``; the ``n_F - r`` other free coordinates keep their
    values, which solves the block system whenever it is consistent, also for
    singular Q); if that solution leaves the box, the point moves toward it up
    to the first bound, that coordinate joins the active set and the block is
    solved again.  If the block is singular and its system inconsistent (a
    left-out row keeps a gradient above rounding), the objective grows
    linearly along the null direction ``e_n - Q_RR^{-1} Q_Rn`` of that row,
    and the point moves along it up to the first bound (primal active-set
    steps, each an ascent step, at most k per polish).  The polished
    point is accepted if its KKT residual is not larger, or if its objective is
    larger by more than the rounding level (coordinate ascent then frees the
    coordinates whose gradient points into the box).

    When Q is singular the maximiser need not be unique; ``Q a`` and the
    optimal value are.  The work is done by the compiled routine
    ``hildreth_solve`` of ``cwkit/_qp.pxi``, which other drivers call per
    example without the GIL on their own buffers (the mini-batch PA driver
    does); this wrapper validates and allocates.

    References
    ----------
    .. [CZ97] Y. Censor and S. A. Zenios, *Parallel Optimization: Theory,
       Algorithms, and Applications*, Oxford University Press, 1997.

    Examples
    --------
    >>> import numpy as np
    >>> from cwkit.qp import hildreth
    >>> res = hildreth(np.array([[2.0, 1.0], [1.0, 2.0]]), [3.0, -1.0], 0.0, 1.0)
    >>> res.a.tolist(), res.converged
    ([1.0, 0.0], True)
    """
    Q = np.asarray(Q, dtype=np.float64)
    if Q.ndim != 2 or Q.shape[0] != Q.shape[1]:
        raise ValueError(f"hildreth: Q must be a square matrix, got shape {Q.shape}")
    k = Q.shape[0]
    if not np.isfinite(Q).all():
        raise ValueError("hildreth: Q contains NaN or infinite entries")
    b = _vector(b, k, "b")
    if not np.isfinite(b).all():
        raise ValueError("hildreth: b contains infinite entries")
    lo = _vector(lo, k, "lo")
    hi = _vector(hi, k, "hi")
    if (lo > hi).any() or (lo == np.inf).any() or (hi == -np.inf).any():
        j = int(np.flatnonzero((lo > hi) | (lo == np.inf) | (hi == -np.inf))[0])
        raise ValueError(f"hildreth: empty box at coordinate {j}: lo={lo[j]}, hi={hi[j]}; "
                         "expected lo <= hi, lo < +inf and hi > -inf")
    if k:
        scale = max(1.0, float(np.abs(Q).max()))
        if np.abs(Q - Q.T).max() > 1e-12 * scale:
            raise ValueError("hildreth: Q must be symmetric")
        Q = np.ascontiguousarray(0.5 * (Q + Q.T))
        smallest = np.linalg.eigvalsh(Q)[0]
        if smallest < -1e-10 * scale:
            raise ValueError("hildreth: Q must be positive semi-definite "
                             f"(smallest eigenvalue {smallest:.3g})")
    if not tol >= 0.0:
        raise ValueError(f"hildreth: tol must be >= 0, got {tol}")
    if int(max_iter) < 0:
        raise ValueError(f"hildreth: max_iter must be >= 0, got {max_iter}")
    a = np.clip(np.zeros(k), lo, hi)
    status, kkt, n_iter, where = _core.qp_hildreth(Q, b, lo, hi, a, float(tol), int(max_iter))
    if status == _core.Status.QP_UNBOUNDED:
        raise ValueError(f"hildreth: the objective is unbounded above along coordinate "
                         f"{where} (Q[{where}, {where}] = {Q[where, where]:.3g} and its "
                         "gradient points to an infinite bound)")
    return HildrethResult(a, float(kkt), int(n_iter), status == _core.Status.OK)
