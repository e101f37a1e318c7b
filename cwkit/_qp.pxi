# Hildreth's QP ([CZ97]): max b'a - a'Qa/2, lo <= a <= hi, Q PSD.
#
# Provides: hildreth_solve, qp_work_size, qp_iwork_size and the Python entry
# qp_hildreth.  Uses: Status (_status.pxi).
#
# `hildreth_solve` is the per-example entry point for other drivers (multi-class
# top-k, mini-batch PA): it runs without the GIL on caller-provided buffers and
# allocates nothing.  Buffers (all C-contiguous, no aliasing):
#   Q      k*k doubles, row-major, symmetric PSD
#   b, lo, hi   k doubles each (lo may be -inf, hi may be +inf, lo <= hi)
#   a      k doubles: the starting point on entry (projected onto the box),
#          the solution on exit
#   work   qp_work_size(k) doubles, iwork qp_iwork_size(k) Py_ssize_t
# Returns OK, QP_NOT_CONVERGED (a is the last, highest-objective iterate) or
# QP_UNBOUNDED (where[0] = a coordinate along which the objective is unbounded);
# kkt[0] receives the KKT residual of the returned a, n_iter[0] the sweeps made.
#
# The polish factorises the free block with a hand-written pivoted Cholesky
# instead of scipy.linalg.cython_lapack (dpstrf + dpotrs): blocks are tiny
# (k <= 20), the truncated factorisation is itself the rank-revealing solve
# singular blocks need, and a plain C loop avoids per-call Fortran overhead.

from libc.math cimport fabs, sqrt, isfinite
from libc.float cimport DBL_EPSILON

import numpy as np

# Position of a coordinate in the active-set pattern.
cdef enum:
    QP_FREE = 0
    QP_AT_LO = 1
    QP_AT_HI = 2


cdef inline Py_ssize_t qp_work_size(Py_ssize_t k) noexcept nogil:
    return k * k + 3 * k


cdef inline Py_ssize_t qp_iwork_size(Py_ssize_t k) noexcept nogil:
    return 5 * k


cdef inline double _qp_clip(double x, double lo, double hi) noexcept nogil:
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


cdef inline double _qp_row_dot(const double* Q, const double* a, Py_ssize_t j,
                               Py_ssize_t k) noexcept nogil:
    cdef Py_ssize_t c
    cdef double s = 0.0
    for c in range(k):
        s += Q[j * k + c] * a[c]
    return s


cdef double _qp_residual(const double* Q, const double* b, const double* lo,
                         const double* hi, const double* a, Py_ssize_t k,
                         Py_ssize_t* pattern, double* info) noexcept nogil:
    """KKT residual of a feasible a: max_j |projected gradient_j| of g = b - Qa.

    Fills pattern (free / at lo / at hi; fixed coordinates count as at lo) and
    info[0] = b'a - a'Qa/2 = a'(b + g)/2, info[1] = 8 k eps max_j s_j (the
    rounding level of g) and info[2] = 8 k eps sum_j |a_j| s_j (that of the
    objective), with s_j = |b_j| + sum_c |Q_jc a_c|.
    """
    cdef Py_ssize_t j, c
    cdef double g, s, r, res = 0.0, scale = 0.0, obj = 0.0, oscale = 0.0
    cdef const double* row
    for j in range(k):
        row = Q + j * k
        g = b[j]
        s = fabs(b[j])
        for c in range(k):
            g -= row[c] * a[c]
            s += fabs(row[c] * a[c])
        if s > scale:
            scale = s
        obj += 0.5 * a[j] * (b[j] + g)
        oscale += fabs(a[j]) * s
        if a[j] <= lo[j]:
            pattern[j] = QP_AT_LO
            r = g if (g > 0.0 and lo[j] < hi[j]) else 0.0
        elif a[j] >= hi[j]:
            pattern[j] = QP_AT_HI
            r = -g if g < 0.0 else 0.0
        else:
            pattern[j] = QP_FREE
            r = fabs(g)
        if r > res:
            res = r
    info[0] = obj
    info[1] = 8.0 * k * DBL_EPSILON * scale
    info[2] = 8.0 * k * DBL_EPSILON * oscale
    return res


cdef int _qp_sweep(const double* Q, const double* b, const double* lo,
                   const double* hi, double* a, Py_ssize_t k,
                   Py_ssize_t* where) noexcept nogil:
    """One cyclic pass of exact coordinate ascent, a_j <- clip(a_j + g_j/Q_jj)."""
    cdef Py_ssize_t j, c
    cdef double g, qjj, new
    cdef const double* row
    for j in range(k):
        row = Q + j * k
        g = b[j]
        for c in range(k):
            g -= row[c] * a[c]
        qjj = row[j]
        if qjj > 0.0:
            new = _qp_clip(a[j] + g / qjj, lo[j], hi[j])  # guarded: qjj > 0
        elif g > 0.0:
            # Zero curvature (a PSD Q then has a zero row): linear ascent to hi.
            new = hi[j]
        elif g < 0.0:
            new = lo[j]
        else:
            new = a[j]
        if not isfinite(new):
            where[0] = j
            return QP_UNBOUNDED
        a[j] = new
    return OK


cdef Py_ssize_t _qp_block_solve(const double* Q, const double* b, const double* cand,
                                Py_ssize_t k, const Py_ssize_t* pattern, double* M,
                                double* rhs, Py_ssize_t* perm,
                                Py_ssize_t* nf_out) noexcept nogil:
    """Solve the free block Q_FF x_F = b_F - Q_FB cand_B for r coordinates.

    Pivoted Cholesky Q_FF = P L L' P' stops at rank r (pivot <= n_F eps max
    diag, LAPACK dpstrf's default).  The r pivoted coordinates perm[:r] get
    rhs[:r]; the other free ones keep their values in cand.  For a PSD Q_FF of
    rank r the remaining rows are combinations of the pivoted ones, so this
    solves the whole block system whenever it is consistent.  perm[r:n_F]
    lists the other free coordinates; n_F goes to nf_out.  Returns r.
    """
    cdef Py_ssize_t nf = 0, i, j, s, p, r, t, ri
    cdef double dmax = 0.0, tmp, d, thr
    for j in range(k):
        if pattern[j] == QP_FREE:
            perm[nf] = j
            nf += 1
    for i in range(nf):
        for j in range(nf):
            M[i * nf + j] = Q[perm[i] * k + perm[j]]
        if M[i * nf + i] > dmax:
            dmax = M[i * nf + i]
    nf_out[0] = nf
    thr = nf * DBL_EPSILON * dmax
    r = nf
    for s in range(nf):
        p = s
        for i in range(s + 1, nf):
            if M[i * nf + i] > M[p * nf + p]:
                p = i
        if M[p * nf + p] <= thr:
            r = s
            break
        if p != s:
            t = perm[s]
            perm[s] = perm[p]
            perm[p] = t
            for j in range(nf):
                tmp = M[s * nf + j]
                M[s * nf + j] = M[p * nf + j]
                M[p * nf + j] = tmp
            for i in range(nf):
                tmp = M[i * nf + s]
                M[i * nf + s] = M[i * nf + p]
                M[i * nf + p] = tmp
        d = sqrt(M[s * nf + s])
        M[s * nf + s] = d
        for i in range(s + 1, nf):
            M[i * nf + s] /= d  # guarded: d > 0 since M[s, s] > thr >= 0
        for i in range(s + 1, nf):
            for j in range(s + 1, i + 1):
                M[i * nf + j] -= M[i * nf + s] * M[j * nf + s]
                M[j * nf + i] = M[i * nf + j]
    # rhs_R = b_R - sum_{l not in R} Q_Rl cand_l
    for i in range(r):
        ri = perm[i]
        tmp = b[ri]
        for j in range(k):
            tmp -= Q[ri * k + j] * cand[j]
        for j in range(r):
            tmp += Q[ri * k + perm[j]] * cand[perm[j]]
        rhs[i] = tmp
    # L y = rhs, then L' x = y (L is the lower triangle of M[:r, :r]).
    for i in range(r):
        tmp = rhs[i]
        for j in range(i):
            tmp -= M[i * nf + j] * rhs[j]
        rhs[i] = tmp / M[i * nf + i]  # guarded: pivots are > 0
    for i in range(r - 1, -1, -1):
        tmp = rhs[i]
        for j in range(i + 1, r):
            tmp -= M[j * nf + i] * rhs[j]
        rhs[i] = tmp / M[i * nf + i]  # guarded: pivots are > 0
    return r


cdef inline void _qp_fix(double* cand, Py_ssize_t* pattern, const double* lo,
                         const double* hi, Py_ssize_t j, bint up) noexcept nogil:
    """Fix coordinate j at its upper (`up`) or lower bound."""
    if up:
        cand[j] = hi[j]
        pattern[j] = QP_AT_HI
    else:
        cand[j] = lo[j]
        pattern[j] = QP_AT_LO


cdef inline void _qp_factor_solve(const double* M, Py_ssize_t nf, Py_ssize_t r,
                                  const double* Q, Py_ssize_t k, const Py_ssize_t* perm,
                                  Py_ssize_t ri, double* u) noexcept nogil:
    """u = Q_RR^-1 Q_R,ri by the factor L of Q_RR (lower triangle of M[:r, :r])."""
    cdef Py_ssize_t i, j
    cdef double g
    for i in range(r):
        g = Q[perm[i] * k + ri]
        for j in range(i):
            g -= M[i * nf + j] * u[j]
        u[i] = g / M[i * nf + i]  # guarded: pivots are > 0
    for i in range(r - 1, -1, -1):
        g = u[i]
        for j in range(i + 1, r):
            g -= M[j * nf + i] * u[j]
        u[i] = g / M[i * nf + i]  # guarded: pivots are > 0


cdef void _qp_polish(const double* Q, const double* b, const double* lo,
                     const double* hi, const double* a, double* cand, Py_ssize_t k,
                     Py_ssize_t* pattern, double* M, double* rhs, double* u,
                     Py_ssize_t* perm) noexcept nogil:
    """cand = the exact maximiser on the face of a's active pattern (updated).

    Primal active-set steps, each an ascent step; every pass fixes one more
    coordinate at a bound or ends.  (1) Solve the free block for its pivoted
    coordinates R; if the solution leaves the box, move toward it up to the
    first bound and fix that coordinate.  (2) If Q_FF is singular and the
    block system inconsistent (a row n of N = F \\ R keeps a gradient g_n
    above rounding), the objective grows linearly along the null direction
    d = sign(g_n) (e_n - Q_RR^-1 Q_Rn): move along d up to the first bound
    and fix that coordinate.  Stops on an unbounded ray (left to the caller).
    """
    cdef Py_ssize_t j, i, r, ri, hit, it, nf, best
    cdef double t, ti, cur, step, g, sc, gbest, sgn, di
    for j in range(k):
        cand[j] = a[j]
    for it in range(k + 1):
        r = _qp_block_solve(Q, b, cand, k, pattern, M, rhs, perm, &nf)
        if nf == 0:
            return
        # (1) line search from cand toward the block solution
        t = 1.0
        hit = -1
        for i in range(r):
            ri = perm[i]
            cur = cand[ri]
            step = rhs[i] - cur
            if rhs[i] > hi[ri]:
                ti = (hi[ri] - cur) / step  # guarded: step > hi - cur >= 0
            elif rhs[i] < lo[ri]:
                ti = (lo[ri] - cur) / step  # guarded: step < lo - cur <= 0
            else:
                continue
            if ti < t:
                t = ti
                hit = i
        for i in range(r):
            ri = perm[i]
            cand[ri] = _qp_clip(cand[ri] + t * (rhs[i] - cand[ri]), lo[ri], hi[ri])
        if hit >= 0:
            _qp_fix(cand, pattern, lo, hi, perm[hit], rhs[hit] > hi[perm[hit]])
            continue
        # (2) the rows left out of the factorisation: consistent?
        best = -1
        gbest = 0.0
        for i in range(r, nf):
            ri = perm[i]
            g = b[ri]
            sc = fabs(b[ri])
            for j in range(k):
                g -= Q[ri * k + j] * cand[j]
                sc += fabs(Q[ri * k + j] * cand[j])
            if fabs(g) > 64.0 * k * DBL_EPSILON * sc and fabs(g) > gbest:
                gbest = fabs(g)
                best = i
        if best < 0:
            return
        ri = perm[best]
        sgn = 1.0 if b[ri] - _qp_row_dot(Q, cand, ri, k) > 0.0 else -1.0
        _qp_factor_solve(M, nf, r, Q, k, perm, ri, u)
        # ray cand + t d, d_ri = sgn, d_R = -sgn u: first bound hit
        t = hi[ri] - cand[ri] if sgn > 0.0 else cand[ri] - lo[ri]
        hit = best
        for i in range(r):
            di = -sgn * u[i]
            j = perm[i]
            if di > 0.0:
                ti = (hi[j] - cand[j]) / di  # guarded: di > 0
            elif di < 0.0:
                ti = (lo[j] - cand[j]) / di  # guarded: di < 0
            else:
                continue
            if ti < t:
                t = ti
                hit = i
        if not isfinite(t):
            return
        for i in range(r):
            j = perm[i]
            cand[j] = _qp_clip(cand[j] - t * sgn * u[i], lo[j], hi[j])
        cand[ri] = _qp_clip(cand[ri] + t * sgn, lo[ri], hi[ri])
        di = sgn if hit == best else -sgn * u[hit]
        _qp_fix(cand, pattern, lo, hi, perm[hit], di > 0.0)


cdef int hildreth_solve(const double* Q, const double* b, const double* lo,
                        const double* hi, double* a, Py_ssize_t k, double tol,
                        Py_ssize_t max_iter, double* work, Py_ssize_t* iwork,
                        double* kkt, Py_ssize_t* n_iter,
                        Py_ssize_t* where) noexcept nogil:
    """Cyclic exact coordinate ascent with an exact active-set polish.

    Stops when the KKT residual is <= max(tol * max(1, |b|_inf), rounding
    floor).  After a sweep that leaves the active pattern unchanged (unless a
    polish from that same pattern was just rejected), the face of the pattern
    is solved exactly (`_qp_polish`); the polished point replaces a if its KKT
    residual is not larger or its objective is larger beyond rounding.
    """
    cdef double* cand = work
    cdef double* rhs = work + k
    cdef double* u = work + 2 * k
    cdef double* M = work + 3 * k
    cdef Py_ssize_t* pat = iwork
    cdef Py_ssize_t* prev = iwork + k
    cdef Py_ssize_t* rejected = iwork + 2 * k
    cdef Py_ssize_t* cpat = iwork + 3 * k
    cdef Py_ssize_t* perm = iwork + 4 * k
    cdef Py_ssize_t j, it = 0
    cdef double res, res_c, target, bmax = 1.0
    cdef double info[3]
    cdef double info_c[3]
    cdef bint have_rejected = False, same
    cdef int status = QP_NOT_CONVERGED
    n_iter[0] = 0
    kkt[0] = 0.0
    if k == 0:
        return OK
    for j in range(k):
        a[j] = _qp_clip(a[j], lo[j], hi[j])
        if fabs(b[j]) > bmax:
            bmax = fabs(b[j])
    res = _qp_residual(Q, b, lo, hi, a, k, pat, info)
    while True:
        target = tol * bmax if tol * bmax > info[1] else info[1]
        if res <= target:
            status = OK
            break
        if it >= max_iter:
            break
        for j in range(k):
            prev[j] = pat[j]
        if _qp_sweep(Q, b, lo, hi, a, k, where) == QP_UNBOUNDED:
            status = QP_UNBOUNDED
            break
        it += 1
        res = _qp_residual(Q, b, lo, hi, a, k, pat, info)
        same = True
        for j in range(k):
            if pat[j] != prev[j]:
                same = False
                break
        if same and have_rejected:
            for j in range(k):
                if pat[j] != rejected[j]:
                    break
            else:
                same = False
        if not same:
            continue
        for j in range(k):
            cpat[j] = pat[j]
        _qp_polish(Q, b, lo, hi, a, cand, k, cpat, M, rhs, u, perm)
        res_c = _qp_residual(Q, b, lo, hi, cand, k, cpat, info_c)
        if res_c <= res or info_c[0] - info[0] > info_c[2] + info[2]:
            for j in range(k):
                a[j] = cand[j]
                pat[j] = cpat[j]
            for j in range(3):
                info[j] = info_c[j]
            res = res_c
            have_rejected = False
        else:
            have_rejected = True
            for j in range(k):
                rejected[j] = pat[j]
    kkt[0] = res
    n_iter[0] = it
    return status


def qp_hildreth(const double[:, ::1] Q, const double[::1] b, const double[::1] lo,
                const double[::1] hi, double[::1] a, double tol, Py_ssize_t max_iter):
    """Run `hildreth_solve` on validated arrays; `a` (start) is overwritten.

    Returns (status, kkt, n_iter, where); see cwkit.qp.hildreth.
    """
    cdef Py_ssize_t k = b.shape[0]
    cdef double[::1] work = np.empty(max(qp_work_size(k), 1))
    cdef Py_ssize_t[::1] iwork = np.empty(max(qp_iwork_size(k), 1), dtype=np.intp)
    cdef double kkt = 0.0
    cdef Py_ssize_t n_iter = 0, where = -1
    cdef int status
    with nogil:
        status = hildreth_solve(&Q[0, 0] if k else NULL, &b[0] if k else NULL,
                                &lo[0] if k else NULL, &hi[0] if k else NULL,
                                &a[0] if k else NULL, k, tol, max_iter,
                                &work[0], &iwork[0], &kkt, &n_iter, &where)
    return status, kkt, n_iter, where
