# Multi-class full-covariance driver: CW-Var, CW-Stdev, AROW(-H) and SOP over
# the stacked blocks (top-1) or K independent D x D blocks (one-vs-rest).
#
# Provides: vdot, mc_full_pass.
# Uses: RowView, get_row (_rows.pxi); Counts, Workspace (_driver.pxi); Hyper,
# so_step, sherman_morrison_beta (_binary.pxi); dsymv, dsyr, scatter_row
# (_full.pxi); argmax_first, competitor, all_finite (_mc_rows.pxi).


cdef inline double vdot(const double* a, const double* b, Py_ssize_t n) noexcept nogil:
    cdef double s = 0.0
    cdef Py_ssize_t j
    for j in range(n):
        s += a[j] * b[j]
    return s


def mc_full_pass(RowView rows,
                 const Py_ssize_t[::1] y,
                 const Py_ssize_t[::1] order, double bias, bint ovr,
                 double[:, ::1] MU, double[:, ::1] Sigma, int rule, double phi,
                 double r, bint sum_update):
    """One multi-class pass of a full-covariance rule: CW-Var, CW-Stdev, AROW(-H), SOP.

    top1: Sigma is (K D, K D) over the stacked blocks (one triangle kept, as in
    `full_pass`); the binary step on Delta (label +1): z = Sigma Delta,
    m = mu.Delta, v = Delta.z, mu += alpha z, Sigma -= beta z z^T.  SOP keeps
    mu = A^-1 vv and Sigma = A^-1: its score on Delta has the sign of m, and an
    update is alpha = (1 - m)/(1 + v), beta = 1/(1 + v).  With `sum_update`
    (AROW, S000 eqs. 29-30) Sigma -= Sigma f f^T Sigma / (r + f^T Sigma f), f = x~
    tiled K times.  ovr: Sigma is (K D, D), K independent D x D blocks.
    Class scores: mu_c.x~, or for SOP mu_c.x~ / (1 + x~^T Sigma_cc x~).
    Returns (rounds, mistakes, updates, loss_sum, status, position).
    """
    cdef Hyper h
    h.rule = rule
    h.phi = phi
    h.r = r
    h.direct = False
    cdef int K = <int>MU.shape[0], D = <int>MU.shape[1], KD = K * D, one = 1
    cdef int lda = D if ovr else KD
    cdef Py_ssize_t k, j, nnz, i, c, yi, yhat
    cdef Counts cnt = counts_start()
    cdef const double* x
    cdef const int* idx
    cdef double m, v, alpha, cc, ay, beta, chk, zmax, nbeta, yc, vf
    cdef double done = 1.0, zero = 0.0
    cdef double* mu = &MU[0, 0]
    cdef double* S = &Sigma[0, 0]
    cdef Workspace ws = Workspace()
    cdef double* work = ws.doubles(D + 3 * KD + 5 * K)
    cdef double* xs = &work[0]              # x~ (D)
    cdef double* xd = &work[D]              # Delta (K D)
    cdef double* z = &work[D + KD]          # Sigma Delta (top1) or Sigma_c x~ per class (ovr)
    cdef double* zf = &work[D + 2 * KD]     # Sigma f (sum update)
    cdef double* dt = &work[D + 3 * KD]     # mu_c . x~
    cdef double* sc = dt + K                # class scores
    cdef double* vc = dt + 2 * K            # x~^T Sigma_cc x~
    cdef double* ays = dt + 3 * K           # ovr: alpha y_c
    cdef double* bs = dt + 4 * K            # ovr: beta
    cdef char uplo = b'U'
    cdef bint sop = rule == SOP, bad
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&rows.R, i, &x, &idx)
            scatter_row(x, idx, nnz, bias, xs, D)
            for c in range(K):
                dt[c] = vdot(mu + c * D, xs, D)
                sc[c] = dt[c]
                if sop or ovr:
                    # Sigma_cc x~: the diagonal block, leading dimension lda
                    dsymv(&uplo, &D, &done, S + c * D * lda + (0 if ovr else c * D), &lda,
                          xs, &one, &zero, z + c * D, &one)
                    vc[c] = vdot(xs, z + c * D, D)
                    if sop:
                        sc[c] = dt[c] / (1.0 + vc[c])              # vc >= 0
            if not (all_finite(sc, K) and all_finite(dt, K)):
                fail_row(&cnt, NONFINITE_INPUT, i)
                break
            yi = y[i]
            yhat = argmax_first(sc, K)
            if ovr:
                count_round(&cnt, yhat != yi)
                bad = False
                for c in range(K):
                    yc = 1.0 if c == yi else -1.0
                    m = yc * dt[c]
                    v = vc[c]
                    count_hinge(&cnt, m)
                    ays[c] = 0.0
                    if sop:
                        if m > 0.0:
                            continue
                        ays[c] = (yc - dt[c]) / (1.0 + v)        # v >= 0
                        bs[c] = 1.0 / (1.0 + v)
                    else:
                        alpha = so_step(&h, m, v, &cc)
                        if alpha == 0.0:
                            continue
                        ays[c] = alpha * yc
                        bs[c] = sherman_morrison_beta(cc, v)
                    chk = 0.0
                    zmax = 0.0
                    for j in range(D):
                        chk += mu[c * D + j] + ays[c] * z[c * D + j]
                        zmax = max(zmax, fabs(z[c * D + j]))
                    if not (isfinite(chk) and isfinite(bs[c] * zmax * zmax)):
                        bad = True
                        break
                if bad:
                    fail_round(&cnt, NONFINITE_STATE, i)
                    break
                for c in range(K):
                    if ays[c] == 0.0:
                        continue
                    for j in range(D):
                        mu[c * D + j] += ays[c] * z[c * D + j]
                    nbeta = -bs[c]
                    dsyr(&uplo, &D, &nbeta, z + c * D, &one, S + c * D * D, &D)
                    cnt.updates += 1
                continue
            # -- top1
            c = competitor(sc, K, yi)
            for j in range(KD):
                xd[j] = 0.0
            for j in range(D):
                xd[yi * D + j] = xs[j]
                xd[c * D + j] = -xs[j]
            dsymv(&uplo, &KD, &done, S, &KD, xd, &one, &zero, z, &one)
            m = dt[yi] - dt[c]
            v = vdot(xd, z, KD)
            if not isfinite(v):
                fail_row(&cnt, NONFINITE_INPUT, i)
                break
            count_round(&cnt, yhat != yi)
            count_hinge(&cnt, m)
            if sop:
                if m > 0.0:
                    continue
                ay = (1.0 - m) / (1.0 + v)                       # v >= 0
                beta = 1.0 / (1.0 + v)
            else:
                alpha = so_step(&h, m, v, &cc)
                if alpha == 0.0:
                    continue
                ay = alpha
                beta = sherman_morrison_beta(cc, v)
            if sum_update:
                for c in range(K):
                    for j in range(D):
                        xd[c * D + j] = xs[j]
                dsymv(&uplo, &KD, &done, S, &KD, xd, &one, &zero, zf, &one)
                vf = vdot(xd, zf, KD)
                beta = 1.0 / (r + vf)                            # r > 0, vf >= 0
            chk = 0.0
            zmax = 0.0
            for j in range(KD):
                chk += mu[j] + ay * z[j]
                zmax = max(zmax, fabs(zf[j] if sum_update else z[j]))
            if not (isfinite(chk) and isfinite(beta * zmax * zmax)):
                fail_round(&cnt, NONFINITE_STATE, i)
                break
            for j in range(KD):
                mu[j] += ay * z[j]
            nbeta = -beta
            dsyr(&uplo, &KD, &nbeta, zf if sum_update else z, &one, S, &KD)
            cnt.updates += 1
    return counts_result(&cnt)
