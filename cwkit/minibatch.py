"""Mini-batch Passive-Aggressive steps BPA-I, BPA-II and BPA-LS (S002 Sect. 3.2)."""
import numpy as np
import scipy.sparse as sp
from scipy.linalg import pinvh

from .qp import hildreth

__all__ = ["BPA_VARIANTS", "bpa_rho", "bpa_step", "bpa_tau"]

BPA_VARIANTS = ("bpa1", "bpa2", "bpa-ls")
_RHO = {"half": 0.5, "inverse": 1.0}


def bpa_rho(C, rho="half"):
    """Ridge ρ of BPA-II / BPA-LS: ``1/(2C)`` (``"half"``) or ``1/C`` (``"inverse"``)."""
    if not (np.isfinite(C) and C > 0):
        raise ValueError(f"C must be a finite number > 0, got {C!r}")
    if rho not in _RHO:
        raise ValueError(f"rho must be 'half' (1/(2C)) or 'inverse' (1/C), got {rho!r}")
    return _RHO[rho] / C


def bpa_tau(A, ell, *, variant, C, rho="half"):
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

    Returns
    -------
    tau : ndarray of shape (B,)
        ``tau_k = 0`` where ``A_kk = 0`` (an example that cannot move the model).
    """
    if variant not in BPA_VARIANTS:
        raise ValueError(f"variant must be one of {BPA_VARIANTS}, got {variant!r}")
    r = bpa_rho(C, rho)
    tau = np.zeros(len(ell))
    # A_kk = 0 means a zero row of A (A is PSD): the example cannot move the
    # model, and tau_k = 0 as in PA's convention for x = 0.
    keep = np.flatnonzero(np.diag(A) > 0)
    A, ell = A[np.ix_(keep, keep)], ell[keep]
    if variant == "bpa-ls":
        tau[keep] = pinvh(A + r * np.eye(len(keep))) @ ell
    elif (ell > 0).any():  # otherwise tau = 0 meets the KKT conditions (A 0 - ell >= 0)
        if variant == "bpa1":
            res = hildreth(A, ell, 0.0, C)
        else:
            res = hildreth(A + r * np.eye(len(keep)), ell, 0.0, np.inf)
        if not res.converged:
            raise RuntimeError(f"{variant}: Hildreth's method did not converge "
                               f"(KKT residual {res.kkt:.3g} after {res.n_iter} sweeps)")
        tau[keep] = res.a
    return tau


def bpa_step(X, y, w, intercept=0.0, *, variant="bpa1", C=1.0, rho="half"):
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
        ``1/C`` as printed in S002 eqs. (17), (19) (penalty ``(C/2) Σ ξ_k²``).

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
    S002 Sect. 3.2, eqs. (10)–(19); FORMULAS.md §1 "BPA".  With scores
    ``f_k = w·x_k + c`` (cwkit's intercept ``c`` is the augmented constant
    feature +1, i.e. ``c = −b`` of S002), ``ℓ̄_k = 1 − y_k f_k`` and
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
    ``B = 1`` coincide with PA-II (6) and PA-LS (9); S002 prints ``1/C``.

    Examples
    --------
    >>> import numpy as np
    >>> from cwkit.minibatch import bpa_step
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
    tau = bpa_tau(A, 1.0 - y * f, variant=variant, C=C, rho=rho)
    ty = tau * y
    w_new = w + X.T @ ty
    if intercept is not None:
        intercept = float(intercept + ty.sum())
    return w_new, intercept, tau
