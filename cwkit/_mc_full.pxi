# Multi-class full-covariance driver: CW-Var, CW-Stdev, AROW(-H) and SOP over
# the stacked blocks (top-1) or K independent D x D blocks (one-vs-rest).
#
# Provides: vdot, mc_full_pass.
# Uses: RowView, get_row (_rows.pxi); Counts, count_argmax, Workspace
# (_driver.pxi); Hyper, SOP (_binary.pxi); dsymv, scatter_row, full_step,
# full_check, full_apply (_full.pxi); competitor, all_finite (_mc_rows.pxi).


cdef inline double vdot(const double* a, const double* b, Py_ssize_t n) noexcept nogil:
    cdef double s = 0.0
    cdef Py_ssize_t j
    for j in range(n):
        s += a[j] * b[j]
    return s


cdef inline bint full_ovr_round(const Hyper* h, double* mu, double* S, int K, int D,
                                const double* dt, const double* vc, const double* z,
                                Py_ssize_t yi, double* ays, double* bs, Counts* cnt,
                                Py_ssize_t i, double* U, double t) noexcept nogil:
    """ovr: the binary rule on every D x D block (z + c D = Sigma_c x~), all checked
    before any is applied; averaging (U not NULL) of round t.  Returns True to stop
    the pass at row i."""
    cdef Py_ssize_t c
    cdef double yc, m
    for c in range(K):
        yc = 1.0 if c == yi else -1.0
        m = yc * dt[c]
        count_hinge(cnt, m)
        ays[c] = 0.0
        if not full_step(h, m, vc[c], yc, dt[c], &ays[c], &bs[c]):
            continue
        if not full_check(mu + c * D, z + c * D, ays[c], z + c * D, bs[c], D):
            fail_round(cnt, NONFINITE_STATE, i)
            return True
    for c in range(K):
        if ays[c] != 0.0:
            full_apply(mu + c * D, S + c * D * D, D, D, z + c * D, ays[c], z + c * D, bs[c],
                       NULL if U == NULL else U + c * D, t)
            cnt.updates += 1
    return False


cdef inline bint full_top1_round(const Hyper* h, double* mu, double* S, int K, int D,
                                 const double* xs, const double* dt, Py_ssize_t c,
                                 Py_ssize_t yi, double* xd, double* z, double v, double* zf,
                                 bint sum_update, Counts* cnt, Py_ssize_t i, double* U,
                                 double t) noexcept nogil:
    """top1: the binary step on Delta = f(x, y) - f(x, c) (label +1) over the stacked
    blocks, z = Sigma Delta, v = Delta.z; with `sum_update` Sigma is updated with
    f = x~ tiled K times; averaging (U not NULL) of round t.  The round is counted by
    the caller.  Returns True to stop."""
    cdef int KD = K * D, one = 1
    cdef Py_ssize_t j
    cdef double m = dt[yi] - dt[c], ay, beta, done = 1.0, zero = 0.0
    cdef char uplo = b'U'
    count_hinge(cnt, m)
    if not full_step(h, m, v, 1.0, m, &ay, &beta):
        return False
    if sum_update:
        for c in range(K):
            for j in range(D):
                xd[c * D + j] = xs[j]
        dsymv(&uplo, &KD, &done, S, &KD, xd, &one, &zero, zf, &one)
        # r > 0, f^T Sigma f >= 0; r / s with an importance weight s (`so_step`)
        beta = 1.0 / (h.r / h.s + vdot(xd, zf, KD))
    if not full_check(mu, z, ay, zf if sum_update else z, beta, KD):
        fail_round(cnt, NONFINITE_STATE, i)
        return True
    full_apply(mu, S, KD, KD, z, ay, zf if sum_update else z, beta, U, t)
    cnt.updates += 1
    return False


cdef inline void full_scores_k(const double* mu, const double* S, int K, int D, bint ovr,
                               bint blocks, bint sop, const double* xs, double* dt,
                               double* sc, double* vc, double* z) noexcept nogil:
    """Class scores dt[c] = mu_c.x~ (SOP: sc[c] = dt[c] / (1 + vc[c])), and with
    `blocks` z + c D = Sigma_cc x~ and vc[c] = x~^T Sigma_cc x~: Sigma_cc is the
    diagonal block of the stacked (K D, K D) Sigma, or block c of the ovr (K D, D)."""
    cdef Py_ssize_t c
    cdef int one = 1, lda = D if ovr else K * D
    cdef double done = 1.0, zero = 0.0
    cdef char uplo = b'U'
    for c in range(K):
        dt[c] = vdot(mu + c * D, xs, D)
        sc[c] = dt[c]
        if blocks:
            # Sigma_cc x~: the diagonal block, leading dimension lda
            dsymv(&uplo, &D, &done, S + c * D * lda + (0 if ovr else c * D), &lda,
                  xs, &one, &zero, z + c * D, &one)
            vc[c] = vdot(xs, z + c * D, D)
            if sop:
                sc[c] = dt[c] / (1.0 + vc[c])              # vc >= 0


def mc_full_pass(RowView rows not None, const Py_ssize_t[::1] y,
                 const Py_ssize_t[::1] order, double bias, bint ovr,
                 double[:, ::1] MU, double[:, ::1] Sigma, int rule, double phi,
                 double r, bint sum_update, double[::1] U, double C=0.0):
    """One multi-class pass of a full-covariance rule: CW-Var, CW-Stdev, AROW(-H), SOP,
    SCW-I, SCW-II, NHERD (C: the last three's).

    top1: Sigma is (K D, K D) over the stacked blocks (one triangle kept, as in
    `full_pass`); the binary step on Delta (label +1): z = Sigma Delta,
    m = mu.Delta, v = Delta.z, mu += alpha z, Sigma -= beta z z^T.  SOP keeps
    mu = A^-1 vv and Sigma = A^-1: its score on Delta has the sign of m, and an
    update is alpha = (1 - m)/(1 + v), beta = 1/(1 + v).  With `sum_update`
    (AROW, [AROW13] eqs. 29-30) Sigma -= Sigma f f^T Sigma / (r + f^T Sigma f), f = x~
    tiled K times.  ovr: Sigma is (K D, D), K independent D x D blocks.
    Class scores: mu_c.x~, or for SOP mu_c.x~ / (1 + x~^T Sigma_cc x~).
    Averaging (U not empty: K D + 1 entries, U[K D] = T the rounds so far):
    U[:K D] += t (mu new - old) on an update of round t, as in `full_pass`.
    Returns (rounds, mistakes, updates, loss_sum, status, position, collapsed).
    """
    cdef Hyper h = hyper_second_order(rule, phi, r, False)
    cdef int K = <int>MU.shape[0], D = <int>MU.shape[1], KD = K * D, one = 1
    cdef Py_ssize_t k, j, nnz, i, c, yi
    cdef Counts cnt = counts_start(rows)
    cdef const double* x
    cdef const int* idx
    cdef bint stop
    cdef double v, done = 1.0, zero = 0.0
    cdef double* mu = &MU[0, 0]
    cdef double* S = &Sigma[0, 0]
    cdef Workspace ws = Workspace()
    cdef double* xs = ws.doubles(D + 3 * KD + 5 * K)   # x~ (D)
    cdef double* xd = xs + D                # Delta (K D)
    cdef double* z = xs + D + KD            # Sigma Delta (top1) or Sigma_c x~ per class (ovr)
    cdef double* zf = xs + D + 2 * KD       # Sigma f (sum update)
    cdef double* dt = xs + D + 3 * KD       # mu_c . x~
    cdef double* sc = dt + K                # class scores
    cdef double* vc = dt + 2 * K            # x~^T Sigma_cc x~
    cdef double* ays = dt + 3 * K           # ovr: alpha y_c
    cdef double* bs = dt + 4 * K            # ovr: beta
    cdef char uplo = b'U'
    cdef double* up = &U[0] if U.shape[0] > 0 else NULL
    cdef double t = U[KD] if up != NULL else 0.0
    h.C = C
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&rows.R, i, &x, &idx)
            scatter_row(x, idx, nnz, bias, xs, D)
            full_scores_k(mu, S, K, D, ovr, rule == SOP or ovr, rule == SOP, xs, dt, sc, vc, z)
            if not (all_finite(sc, K) and all_finite(dt, K)):
                fail_row(&cnt, NONFINITE_INPUT, i)
                break
            yi = y[i]
            h.s = row_weight(&cnt, i)
            if ovr:
                count_argmax(&cnt, sc, K, yi, i)
                if full_ovr_round(&h, mu, S, K, D, dt, vc, z, yi, ays, bs, &cnt, i, up,
                                  t + 1.0):
                    break
                t += 1.0
                continue
            c = competitor(sc, K, yi)
            for j in range(KD):
                xd[j] = 0.0
            for j in range(D):
                xd[yi * D + j] = xs[j]
                xd[c * D + j] = -xs[j]
            dsymv(&uplo, &KD, &done, S, &KD, xd, &one, &zero, z, &one)
            v = vdot(xd, z, KD)
            if not isfinite(v):
                fail_row(&cnt, NONFINITE_INPUT, i)
                break
            count_argmax(&cnt, sc, K, yi, i)
            if full_top1_round(&h, mu, S, K, D, xs, dt, c, yi, xd, z, v, zf, sum_update, &cnt,
                               i, up, t + 1.0):
                break
            t += 1.0
    if up != NULL:
        U[KD] = t
    return counts_result(&cnt)
