# Multi-class top-k drivers: PA, PA-I, PA-II (k-best MIRA, [CS03], [PA06]) and
# AROW ([AROW13] Fig. 2), diagonal or full.
#
# Provides: mc_topk_pa_pass, mc_topk_arow_pass.
# Uses: RowView, get_row, max_row_nnz (_rows.pxi); Counts, Workspace
# (_driver.pxi); hildreth_solve, qp_work_size, qp_iwork_size (_qp.pxi); PA1, PA2,
# AUX_* (_binary.pxi); dsymv, dsyr, scatter_row (_full.pxi); the 1-of-k walks
# and block updates (_mc_rows.pxi); blk_diag_step, blk_diag_restore,
# blk_sigma_only (_mc_diag.pxi); vdot (_mc_full.pxi).

from libc.math cimport INFINITY


# ---------------------------------------------------------------------------
# top-k (k-best MIRA for the PA family, S000 Fig. 2 eqs. 25-30 for AROW): the
# k highest-scoring competitors c_1..c_k (ties to the smaller label), losses
# l_j = 1 - w.Delta_j, and the dual max l^T a - a^T Q a / 2 over a box, solved
# per example by `hildreth_solve` (_qp.pxi) on preallocated buffers.

cdef double TOPK_QP_TOL = 1e-15
cdef Py_ssize_t TOPK_QP_MAX_ITER = 10000


cdef inline Py_ssize_t topk_work_size(Py_ssize_t K, Py_ssize_t kk) noexcept nogil:
    return 2 * K + kk * kk + 4 * kk + qp_work_size(kk)


cdef inline Py_ssize_t topk_iwork_size(Py_ssize_t K, Py_ssize_t kk) noexcept nogil:
    return K + kk + qp_iwork_size(kk)


def mc_topk_pa_pass(RowView rows,
                    const Py_ssize_t[::1] y,
                    const Py_ssize_t[::1] order, double bias, Py_ssize_t kk,
                    double[:, ::1] V, double[:, ::1] aux, int rule, double C,
                    bint shared):
    """One top-k pass of PA, PA-I or PA-II (k-best MIRA, FORMULAS.md Sect. 4).

    G_jl = Delta_j.Delta_l = n (1 + [j = l]) with n = ||x~||^2.  PA: Q = G,
    a >= 0; PA-I: 0 <= a <= C; PA-II: Q = G + I/(2C) (or 11^T/(2C) when
    `shared`), a >= 0.  W += sum_j a_j Delta_j: block y gets (sum_j a_j) x~,
    block c_j gets -a_j x~.  State as in `mc_first_order_pass` (top1, W = s V).
    Returns (rounds, mistakes, updates, loss_sum, status, position).
    """
    cdef Py_ssize_t K = V.shape[1], D = V.shape[0], j, jl, nnz, i, yi, nit, where
    cdef Counts cnt = counts_start()
    cdef Py_ssize_t a_row, q
    cdef const double* x
    cdef const int* idx
    cdef double n, s, asum, lmax, chk, dn2, kkt
    cdef Py_ssize_t nw = topk_work_size(K, kk)
    cdef Workspace ws = Workspace()
    cdef double* work = ws.doubles(nw + (kk + 1) * (max_row_nnz(&rows.R, order) + 1))
    cdef Py_ssize_t* iwork = ws.indices(topk_iwork_size(K, kk))
    cdef double* sc = &work[0]
    cdef double* Q = &work[2 * K]
    cdef double* b = Q + kk * kk
    cdef double* lo = b + kk
    cdef double* hi = lo + kk
    cdef double* a = hi + kk
    cdef double* qw = a + kk
    cdef Py_ssize_t* taken = &iwork[0]
    cdef Py_ssize_t* comp = taken + K
    cdef Py_ssize_t* qiw = comp + kk
    cdef double* save = work + nw
    cdef double cap = C if rule == PA1 else INFINITY
    cdef bint warm
    cdef NextRow nr
    nr.nnz = 0
    nr.idx = NULL
    nr.y = 0
    cdef double ridge = 0.5 / C if rule == PA2 else 0.0   # C > 0
    with nogil:
        for j in range(kk):
            lo[j] = 0.0
            hi[j] = cap
        for q in range(order.shape[0]):
            i = order[q]
            nnz = get_row(&rows.R, i, &x, &idx)
            warm = nr.nnz < MC_AHEAD
            next_row(&rows.R, &order[0], order.shape[0], q, &y[0], &nr)
            n = row_dots(&V[0, 0], K, x, idx, nnz, bias, D, sc, warm, &nr)
            s = aux[0, AUX_S]
            for jl in range(K):
                sc[jl] *= s
            if not (all_finite(sc, K) and isfinite(n)):
                fail_row(&cnt, NONFINITE_INPUT, i)
                break
            yi = y[i]
            count_round(&cnt, argmax_first(sc, K) != yi)
            aux[0, AUX_T] += 1.0
            top_competitors(sc, K, yi, kk, comp, taken)
            lmax = 0.0
            for j in range(kk):
                b[j] = 1.0 - (sc[yi] - sc[comp[j]])
                lmax = max(lmax, b[j])
            if b[0] > 0.0:
                cnt.loss_sum += b[0]
            if lmax <= 0.0 or n <= 0.0:
                continue
            for j in range(kk):
                a[j] = 0.0
                for jl in range(kk):
                    Q[j * kk + jl] = n * (2.0 if j == jl else 1.0)
                    if shared or j == jl:
                        Q[j * kk + jl] += ridge
            if hildreth_solve(Q, b, lo, hi, a, kk, TOPK_QP_TOL, TOPK_QP_MAX_ITER, qw, qiw,
                              &kkt, &nit, &where) != OK:
                fail_round(&cnt, QP_NOT_CONVERGED, i)
                aux[0, AUX_T] -= 1.0
                break
            asum = 0.0
            for j in range(kk):
                asum += a[j]
            if asum == 0.0:
                continue
            dn2 = 0.0
            chk = blk_add(&V[0, yi], asum / s, x, idx, nnz, bias, D, save, &dn2, K)  # s > 0
            for j in range(kk):
                if a[j] != 0.0:
                    chk += blk_add(&V[0, comp[j]], -a[j] / s, x, idx, nnz, bias, D,
                                   save + (j + 1) * (nnz + 1), &dn2, K)              # s > 0
            if not (isfinite(chk) and isfinite(dn2)):
                for j in range(kk - 1, -1, -1):
                    if a[j] != 0.0:
                        restore_coords(&V[0, comp[j]], save + (j + 1) * (nnz + 1), idx, nnz,
                                       D, K, 1)
                restore_coords(&V[0, yi], save, idx, nnz, D, K, 1)
                fail_round(&cnt, NONFINITE_STATE, i)
                aux[0, AUX_T] -= 1.0
                break
            aux[0, AUX_VN2] += dn2
            cnt.updates += 1
    return counts_result(&cnt)


def mc_topk_arow_pass(RowView rows,
                      const Py_ssize_t[::1] y,
                      const Py_ssize_t[::1] order, double bias, Py_ssize_t kk,
                      double[:, ::1] MU, double[:, ::1] SG, bint full, double r,
                      bint direct, bint sum_update):
    """One top-k pass of AROW (S000 Fig. 2, eqs. 25-30; FORMULAS.md Sect. 4).

    If max_j l_j > 0: a = argmax l^T a - a^T (G + r 11^T) a / 2 over a >= 0 with
    G_jl = Delta_j^T Sigma Delta_l (one squared slack, eq. 27); mu += Sigma
    sum_j a_j Delta_j; then Sigma <- Sigma - Sigma g g^T Sigma / (r + g^T Sigma g)
    with g = f = x~ tiled K times (`sum_update`, eqs. 29-30) or g = Delta_1.
    Diagonal (SG = sigma, (K, D)): G_jl = v_y + [j = l] v_cj with v_c = x~^T
    diag(sigma_c) x~, and the covariance update 1/sigma_i += g_i^2 / r (or, with
    `direct`, sigma_i -= beta sigma_i^2 g_i^2).  Full (`full`, SG = Sigma over
    the stacked blocks, (K D, K D), one triangle kept): P_c = Sigma f(x, c),
    Sigma Delta_j = P_y - P_cj.
    Returns (rounds, mistakes, updates, loss_sum, status, position).
    """
    # diagonal: (D, K) state, block c at offset c with stride K; full: (K, D)
    cdef int K = <int>(MU.shape[0] if full else MU.shape[1])
    cdef int D = <int>(MU.shape[1] if full else MU.shape[0]), KD = K * D, one = 1
    cdef Py_ssize_t ks = 1 if full else K
    cdef Py_ssize_t j, jl, p, nnz, i, yi, nit, where, q, cj, sv
    cdef Counts cnt = counts_start()
    cdef const double* x
    cdef const int* idx
    cdef double n, asum, lmax, chk, kkt, cc, vsum, zmax, nbeta
    cdef double done = 1.0, zero = 0.0
    cdef Py_ssize_t nw = topk_work_size(K, kk)
    cdef Workspace ws = Workspace()
    cdef double* work = ws.doubles(nw + (D + (kk + 4) * KD if full else
                                         2 * (kk + 1) * (max_row_nnz(&rows.R, order) + 1)))
    cdef Py_ssize_t* iwork = ws.indices(topk_iwork_size(K, kk))
    cdef double* sc = &work[0]
    cdef double* vs = &work[K]
    cdef double* Q = &work[2 * K]
    cdef double* b = Q + kk * kk
    cdef double* lo = b + kk
    cdef double* hi = lo + kk
    cdef double* a = hi + kk
    cdef double* qw = a + kk
    cdef Py_ssize_t* taken = &iwork[0]
    cdef Py_ssize_t* comp = taken + K
    cdef Py_ssize_t* qiw = comp + kk
    cdef double* save = work + nw
    # full: x~ (D), f (K D), P_y, P_c1..P_ck ((kk + 1) K D), u (K D), g (K D)
    cdef double* xs = work + nw
    cdef double* f = xs + D
    cdef double* P = f + KD
    cdef double* u = P + (kk + 1) * KD
    cdef double* g = u + KD
    cdef double* mu = &MU[0, 0]
    cdef double* S = &SG[0, 0]
    cdef char uplo = b'U'
    with nogil:
        for j in range(kk):
            lo[j] = 0.0
            hi[j] = INFINITY
        for q in range(order.shape[0]):
            i = order[q]
            nnz = get_row(&rows.R, i, &x, &idx)
            n = bias * bias
            for j in range(nnz):
                n += x[j] * x[j]
            if full:
                for jl in range(K):
                    sc[jl] = blk_dot(mu + jl * D, x, idx, nnz, bias, D, 1)
            else:
                all_dots(mu, K, x, idx, nnz, bias, D, sc)
                all_sqdots(S, K, x, idx, nnz, bias, D, vs)
            if not (all_finite(sc, K) and isfinite(n) and (full or all_finite(vs, K))):
                fail_row(&cnt, NONFINITE_INPUT, i)
                break
            yi = y[i]
            count_round(&cnt, argmax_first(sc, K) != yi)
            top_competitors(sc, K, yi, kk, comp, taken)
            lmax = 0.0
            for j in range(kk):
                b[j] = 1.0 - (sc[yi] - sc[comp[j]])
                lmax = max(lmax, b[j])
            if b[0] > 0.0:
                cnt.loss_sum += b[0]
            if lmax <= 0.0 or n <= 0.0:
                continue
            if full:
                # P_c = Sigma f(x, c) for c = y, c_1 .. c_k
                scatter_row(x, idx, nnz, bias, xs, D)
                for j in range(kk + 1):
                    cj = yi if j == 0 else comp[j - 1]
                    for p in range(KD):
                        f[p] = 0.0
                    for p in range(D):
                        f[cj * D + p] = xs[p]
                    dsymv(&uplo, &KD, &done, S, &KD, f, &one, &zero, P + j * KD, &one)
                # G_jl = (f_y - f_cj).(P_y - P_cl), f_c.P = x~.P[block c]
                for j in range(kk):
                    for jl in range(kk):
                        Q[j * kk + jl] = (
                            vdot(xs, P + yi * D, D) - vdot(xs, P + (jl + 1) * KD + yi * D, D)
                            - vdot(xs, P + comp[j] * D, D)
                            + vdot(xs, P + (jl + 1) * KD + comp[j] * D, D)) + r
            else:
                for j in range(kk):
                    for jl in range(kk):
                        Q[j * kk + jl] = vs[yi] + (vs[comp[j]] if j == jl else 0.0) + r
            for j in range(kk):
                a[j] = 0.0
            if not all_finite(Q, kk * kk):
                fail_round(&cnt, NONFINITE_INPUT, i)
                break
            if hildreth_solve(Q, b, lo, hi, a, kk, TOPK_QP_TOL, TOPK_QP_MAX_ITER, qw, qiw,
                              &kkt, &nit, &where) != OK:
                fail_round(&cnt, QP_NOT_CONVERGED, i)
                break
            asum = 0.0
            for j in range(kk):
                asum += a[j]
            if not full:
                sv = 2 * (nnz + 1)
                chk = blk_diag_step(mu + yi, S + yi, asum, 0.0, False, x, idx, nnz,
                                    bias, D, save, ks)
                for j in range(kk):
                    chk += blk_diag_step(mu + comp[j], S + comp[j], -a[j], 0.0, False,
                                         x, idx, nnz, bias, D, save + (j + 1) * sv, ks)
                if not isfinite(chk):
                    for j in range(kk - 1, -1, -1):
                        blk_diag_restore(mu + comp[j], S + comp[j],
                                         save + (j + 1) * sv, idx, nnz, D, ks)
                    blk_diag_restore(mu + yi, S + yi, save, idx, nnz, D, ks)
                    fail_round(&cnt, NONFINITE_STATE, i)
                    break
                if sum_update:
                    if direct:
                        vsum = 0.0
                        for jl in range(K):
                            vsum += vs[jl]
                        cc = 1.0 / (vsum + r)              # r > 0
                    else:
                        cc = 1.0 / r                       # r > 0
                    for jl in range(K):
                        blk_sigma_only(S + jl, cc, direct, x, idx, nnz, bias, D, ks)
                else:
                    cc = 1.0 / (vs[yi] + vs[comp[0]] + r) if direct else 1.0 / r   # r > 0
                    blk_sigma_only(S + yi, cc, direct, x, idx, nnz, bias, D, ks)
                    blk_sigma_only(S + comp[0], cc, direct, x, idx, nnz, bias, D, ks)
                cnt.updates += 1
                continue
            # full: u = sum_j a_j (P_y - P_cj); g's Sigma g and beta
            for p in range(KD):
                u[p] = asum * P[p]
            for j in range(kk):
                for p in range(KD):
                    u[p] -= a[j] * P[(j + 1) * KD + p]
            if sum_update:
                for jl in range(K):
                    for p in range(D):
                        f[jl * D + p] = xs[p]
                dsymv(&uplo, &KD, &done, S, &KD, f, &one, &zero, g, &one)
                cc = 1.0 / (r + vdot(f, g, KD))            # r > 0, f^T Sigma f >= 0
            else:
                for p in range(KD):
                    g[p] = P[p] - P[KD + p]
                cc = 1.0 / Q[0]                            # Q_11 = Delta_1^T Sigma Delta_1 + r > 0
            chk = 0.0
            zmax = 0.0
            for p in range(KD):
                chk += mu[p] + u[p]
                zmax = max(zmax, fabs(g[p]))
            if not (isfinite(chk) and isfinite(cc * zmax * zmax)):
                fail_round(&cnt, NONFINITE_STATE, i)
                break
            for p in range(KD):
                mu[p] += u[p]
            nbeta = -cc
            dsyr(&uplo, &KD, &nbeta, g, &one, S, &KD)
            cnt.updates += 1
    return counts_result(&cnt)
