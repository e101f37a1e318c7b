"""Row scores through the compiled row walk, and Gaussian-weight probabilities."""
import numpy as np

from .. import _core
from .._lazy import special

#: Gauss-Hermite order of the class probabilities of Gaussian-weight models.
PROBA_NODES = 96


def row_scores(rows, w, bias, s2=None):
    """(w.x, x^T diag(s2) x) per row through the compiled row walk (dense == CSR)."""
    m = np.empty(rows.n_rows)
    v = np.empty(rows.n_rows if s2 is not None else 0)
    _core.row_scores(rows.view, bias, np.ascontiguousarray(w),
                     np.empty(0) if s2 is None else np.ascontiguousarray(s2), m, v)
    return m, v


def mc_row_scores(rows, W, bias, S2=None):
    """(w_c.x~, x~^T diag(s2_c) x~) per row and class, (n, K) each, for (D, K)
    weights W and variances S2, through the compiled row walk (dense == CSR); W and
    S2 as they are when a row's classes are adjacent (the views of a diagonal
    model's state), else copied so."""
    W = _classes_adjacent(W)
    m = np.empty((rows.n_rows, W.shape[1]))
    v = np.empty(m.shape if S2 is not None else (0, W.shape[1]))
    _core.mc_row_scores(rows.view, bias, W, np.empty((0, W.shape[1])) if S2 is None
                        else _classes_adjacent(S2), m, v)
    return m, v


def _classes_adjacent(A):
    """(D, K) float64 `A` itself when its rows' entries are adjacent, else a C-contiguous
    copy."""
    A = np.asarray(A, dtype=np.float64)
    if A.ndim == 2 and A.strides[1] == A.itemsize and A.strides[0] % A.itemsize == 0:
        return A
    return np.ascontiguousarray(A)


def sign_proba(m, v):
    """P(sign(w.x) = +1) for w.x ~ N(m, v): Phi(m / sqrt(v)) ([ECCW08] Sect. 2)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(v > 0, m / np.sqrt(np.where(v > 0, v, 1.0)), np.sign(m) * np.inf)
    return np.where(m == 0, 0.5, special.ndtr(z))


def argmax_proba(M, V):
    """P(class c has the largest score) for independent scores s_c ~ N(M_c, V_c).

    P_c = E_z[prod_{c' != c} Phi((M_c + sqrt(V_c) z - M_c') / sqrt(V_c'))], z ~ N(0, 1),
    by Gauss-Hermite quadrature of order PROBA_NODES; rows are normalised to
    sum to 1 (this removes the quadrature error of the total).  A zero variance
    is a point mass: Phi of +-inf, and 1/2 on an exact tie.
    """
    z, wq = np.polynomial.hermite_e.hermegauss(PROBA_NODES)
    wq = wq / np.sqrt(2.0 * np.pi)
    sd = np.sqrt(np.maximum(V, 0.0))
    n, K = M.shape
    P = np.empty((n, K))
    for c in range(K):
        s = M[:, c, None] + sd[:, c, None] * z                     # (n, Q) samples of s_c
        logp = np.zeros_like(s)
        for o in range(K):
            if o == c:
                continue
            diff = s - M[:, o, None]
            so = sd[:, o, None]
            with np.errstate(divide="ignore", invalid="ignore"):
                arg = np.where(so > 0, diff / np.where(so > 0, so, 1.0), np.sign(diff) * np.inf)
            p = np.where(np.isnan(arg) | ((so == 0) & (diff == 0)), 0.5, special.ndtr(arg))
            with np.errstate(divide="ignore"):
                logp += np.log(p)
        P[:, c] = np.exp(logp) @ wq
    tot = P.sum(axis=1, keepdims=True)
    return np.where(tot > 0, P / np.where(tot > 0, tot, 1.0), 1.0 / K)
