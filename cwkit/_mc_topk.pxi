# Multi-class top-k drivers: PA, PA-I, PA-II (k-best MIRA, [CS03], [PA06]) and
# AROW ([AROW13] Fig. 2, eqs. 25-30), diagonal or full: the k highest-scoring
# competitors c_1..c_k (ties to the smaller label), losses l_j = 1 - w.Delta_j,
# and the dual max l^T a - a^T Q a / 2 over a box, solved per example by
# `hildreth_solve` (_qp.pxi) on preallocated buffers (`TopK`); tied competitors
# that the dual cannot tell apart get equal multipliers (`tie_mean`).
#
# Provides: TopK, topk_work, topk_losses, exchangeable, tie_mean, topk_solve,
# mc_topk_pa_pass, mc_topk_arow_pass.
# Uses: RowView, get_row, max_row_nnz (_rows.pxi); Counts, count_argmax,
# count_collapse, Workspace, restore_coords (_driver.pxi); hildreth_solve,
# qp_work_size, qp_iwork_size (_qp.pxi); PA1, PA2, AROW, may_collapse, AUX_*
# (_binary.pxi); dsymv, scatter_row, full_check, full_apply (_full.pxi); the
# 1-of-k walks, top_competitors, blk_add and blk_axpy (_mc_rows.pxi); blk_diag_step,
# blk_diag_restore, blk_sigma_only, sum_sigma_update, avg_blk (_mc_diag.pxi); vdot

from libc.math cimport INFINITY

cdef double TOPK_QP_TOL = 1e-15
cdef Py_ssize_t TOPK_QP_MAX_ITER = 10000


cdef struct TopK:
    # the scores and the per-example dual of a top-k driver
    double* sc          # K class scores
    double* vs          # K: v_c (diagonal AROW)
    double* Q           # kk * kk
    double* b           # kk losses
    double* lo          # kk
    double* hi          # kk
    double* a           # kk multipliers
    double* qw          # qp_work_size(kk)
    Py_ssize_t* taken   # K
    Py_ssize_t* comp    # kk competitors
    Py_ssize_t* qiw     # qp_iwork_size(kk)
    Py_ssize_t kk
    double asum         # sum_j a_j


cdef TopK topk_work(Workspace ws, Py_ssize_t K, Py_ssize_t kk, double cap) except *:
    """The buffers of a top-k driver with kk competitors and the box 0 <= a <= cap."""
    cdef TopK T
    cdef Py_ssize_t j
    T.kk = kk
    T.sc = ws.doubles(2 * K + kk * kk + 4 * kk + qp_work_size(kk))
    T.vs = T.sc + K
    T.Q = T.vs + K
    T.b = T.Q + kk * kk
    T.lo = T.b + kk
    T.hi = T.lo + kk
    T.a = T.hi + kk
    T.qw = T.a + kk
    T.taken = ws.indices(K + kk + qp_iwork_size(kk))
    T.comp = T.taken + K
    T.qiw = T.comp + kk
    for j in range(kk):
        T.lo[j] = 0.0
        T.hi[j] = cap
    return T


cdef inline double topk_losses(TopK* T, Py_ssize_t K, Py_ssize_t yi, Counts* cnt) noexcept nogil:
    """The competitors of label yi and their losses b_j = 1 - (s_y - s_cj) (loss_sum
    gets max(0, b_1)); returns max(0, max_j b_j)."""
    cdef Py_ssize_t j
    cdef double lmax = 0.0
    top_competitors(T.sc, K, yi, T.kk, T.comp, T.taken)
    for j in range(T.kk):
        T.b[j] = 1.0 - (T.sc[yi] - T.sc[T.comp[j]])
        lmax = max(lmax, T.b[j])
    if T.b[0] > 0.0:
        cnt.loss_sum += T.b[0]
    return lmax


cdef inline bint exchangeable(const double* Q, Py_ssize_t kk, Py_ssize_t f,
                              Py_ssize_t j) noexcept nogil:
    """Whether swapping constraints f and j leaves Q unchanged (bit for bit)."""
    cdef Py_ssize_t m
    if Q[j * kk + j] != Q[f * kk + f] or Q[f * kk + j] != Q[j * kk + f]:
        return False
    for m in range(kk):
        if m != f and m != j and (Q[j * kk + m] != Q[f * kk + m]
                                  or Q[m * kk + j] != Q[m * kk + f]):
            return False
    return True


cdef inline void tie_mean(const double* Q, const double* b, const double* lo,
                          const double* hi, double* a, Py_ssize_t kk) noexcept nogil:
    """Exchangeable constraints (equal losses and boxes, Q unchanged by their swap) share the
    mean of their multipliers.  The dual is then invariant under their permutations,
    so the mean of an optimum over them is an optimum (the set of optima is convex),
    and competitors whose blocks were bit-identical stay so: Hildreth's method,
    sweeping the constraints in order, ends a last bit apart on tied ones, and a
    later tie would break by that bit instead of by label.  Tied competitors are
    adjacent (by decreasing score); each is compared with the first of its run
    (swaps with one constraint generate every permutation of those that pass)."""
    cdef Py_ssize_t f = 0, e, j, n
    cdef double s
    cdef bint same
    while f < kk:
        e = f + 1
        while e < kk and b[e] == b[f]:
            e += 1
        if e - f > 1:
            s = 0.0
            n = 0
            same = True
            for j in range(f, e):
                if j == f or (lo[j] == lo[f] and hi[j] == hi[f] and exchangeable(Q, kk, f, j)):
                    s += a[j]
                    n += 1
                    same = same and a[j] == a[f]
            if not same:
                s = s / n                              # n >= 1
                for j in range(f, e):
                    if j == f or (lo[j] == lo[f] and hi[j] == hi[f]
                                  and exchangeable(Q, kk, f, j)):
                        a[j] = s
        f = e


cdef inline bint topk_solve(TopK* T, double scale=1.0) noexcept nogil:
    """a = the dual solution for (Q, b) over [lo, hi] from a = 0 (exchangeable
    constraints given equal multipliers by `tie_mean`), times `scale` (the step
    of an importance weight on hard PA, at most 1), and asum; False when Hildreth's method
    did not converge."""
    cdef Py_ssize_t j, nit, where
    cdef double kkt
    for j in range(T.kk):
        T.a[j] = 0.0
    if hildreth_solve(T.Q, T.b, T.lo, T.hi, T.a, T.kk, TOPK_QP_TOL, TOPK_QP_MAX_ITER, T.qw,
                      T.qiw, &kkt, &nit, &where) != OK:
        return False
    tie_mean(T.Q, T.b, T.lo, T.hi, T.a, T.kk)
    T.asum = 0.0
    for j in range(T.kk):
        T.a[j] *= scale
        T.asum += T.a[j]
    return True


cdef inline bint topk_pa_round(TopK* T, double* V, double* aux, Py_ssize_t K, Py_ssize_t ld,
                               Py_ssize_t D, const double* x, const int* idx, Py_ssize_t nnz,
                               double bias,
                               double n, Py_ssize_t yi, bint shared, double ridge,
                               double scale, double* save, Counts* cnt, Py_ssize_t i,
                               double* U) noexcept nogil:
    """PA / PA-I / PA-II on the top-k constraints, W = s V (aux: one row); averaging
    (U not NULL) as in `fo_top1_round` (these rules keep s = 1: U += t (W new - old));
    V and U: D rows `ld` apart of K values.
    `scale` multiplies the multipliers (hard PA's importance weight; 0: no update).
    Returns True to stop the pass at row i."""
    cdef Py_ssize_t j, jl, kk = T.kk
    cdef double s = aux[AUX_S], chk, dn2 = 0.0
    if topk_losses(T, K, yi, cnt) <= 0.0 or n <= 0.0 or scale == 0.0:
        return False
    for j in range(kk):
        for jl in range(kk):
            T.Q[j * kk + jl] = n * (2.0 if j == jl else 1.0)
            if shared or j == jl:
                T.Q[j * kk + jl] += ridge
    if not topk_solve(T, scale):
        fail_round(cnt, QP_NOT_CONVERGED, i)
        aux[AUX_T] -= 1.0
        return True
    if T.asum == 0.0:
        return False
    chk = blk_add(V + yi, T.asum / s, x, idx, nnz, bias, D, save, &dn2, ld)      # s > 0
    for j in range(kk):
        if T.a[j] != 0.0:
            chk += blk_add(V + T.comp[j], -T.a[j] / s, x, idx, nnz, bias, D,
                           save + (j + 1) * (nnz + 1), &dn2, ld)                    # s > 0
    if not (isfinite(chk) and isfinite(dn2)):
        for j in range(kk - 1, -1, -1):
            if T.a[j] != 0.0:
                restore_coords(V + T.comp[j], save + (j + 1) * (nnz + 1), idx, nnz, D, ld,
                               1)
        restore_coords(V + yi, save, idx, nnz, D, ld, 1)
        fail_round(cnt, NONFINITE_STATE, i)
        aux[AUX_T] -= 1.0
        return True
    if U != NULL:
        blk_axpy(U + yi, aux[AUX_T] * T.asum / s, x, idx, nnz, bias, D, ld)
        for j in range(kk):
            if T.a[j] != 0.0:
                blk_axpy(U + T.comp[j], -aux[AUX_T] * T.a[j] / s, x, idx, nnz, bias, D, ld)
    aux[AUX_VN2] += dn2
    cnt.updates += 1
    return False


def mc_topk_pa_pass(RowView rows not None, const Py_ssize_t[::1] y,
                    const Py_ssize_t[::1] order, double bias, Py_ssize_t kk,
                    double[:, :] V, double[:, ::1] aux, int rule, double C,
                    bint shared, double[:, :] U):
    """One top-k pass of PA, PA-I or PA-II (k-best MIRA, [CS03], [PA06]).

    G_jl = Delta_j.Delta_l = n (1 + [j = l]) with n = ||x~||^2.  PA: Q = G,
    a >= 0; PA-I: 0 <= a <= C; PA-II: Q = G + I/(2C) (or 11^T/(2C) when
    `shared`), a >= 0.  W += sum_j a_j Delta_j: block y gets (sum_j a_j) x~,
    block c_j gets -a_j x~.  State as in `mc_first_order_pass` (top1, W = s V, the
    lazy sum U of averaging when not empty, sharing V's row stride).  An importance
    weight s: PA-I's box 0 <= a <= s C, PA-II's ridge 1/(2 s C), PA's multipliers
    min(s, 1) a.
    Returns (rounds, mistakes, updates, loss_sum, status, position, collapsed).
    """
    cdef Py_ssize_t K = V.shape[1], D = V.shape[0], c, nnz, i, k
    cdef Py_ssize_t ld = feature_stride(V, V, U)
    cdef Counts cnt = counts_start(rows)
    cdef const double* x
    cdef const int* idx
    cdef double n, sw = 1.0
    cdef double* Vp = &V[0, 0]
    cdef Workspace ws = Workspace()
    cdef TopK T = topk_work(ws, K, kk, C if rule == PA1 else INFINITY)
    cdef double* save = ws.doubles((kk + 1) * (max_row_nnz(&rows.R, order) + 1))
    cdef double ridge = 0.5 / C if rule == PA2 else 0.0   # C > 0
    cdef NextRow nr = no_next_row()
    cdef double* up = &U[0, 0] if U.shape[0] > 0 else NULL
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&rows.R, i, &x, &idx)
            n = walk_row(&rows.R, &order[0], order.shape[0], k, &y[0], &nr, Vp, K, ld, x, idx,
                         nnz, bias, D, T.sc)
            for c in range(K):
                T.sc[c] *= aux[0, AUX_S]
            if not (all_finite(T.sc, K) and isfinite(n)):
                fail_row(&cnt, NONFINITE_INPUT, i)
                break
            count_argmax(&cnt, T.sc, K, y[i], i)
            aux[0, AUX_T] += 1.0
            if cnt.wt != NULL:      # the importance weight's box, ridge or step
                sw = cnt.wt[i]
                if rule == PA1:
                    for c in range(kk):
                        T.hi[c] = sw * C
                ridge = 0.5 / (sw * C) if rule == PA2 else 0.0
            if topk_pa_round(&T, Vp, &aux[0, 0], K, ld, D, x, idx, nnz, bias, n, y[i], shared,
                             ridge, min(sw, 1.0) if rule == PA else 1.0, save, &cnt, i, up):
                break
    return counts_result(&cnt)


cdef inline bint topk_arow_solve(TopK* T, Counts* cnt, Py_ssize_t i) noexcept nogil:
    """`topk_solve` on a finite Q; False (the pass stops at row i, recorded in cnt)
    when Q is not finite or Hildreth's method did not converge."""
    if not all_finite(T.Q, T.kk * T.kk):
        fail_round(cnt, NONFINITE_INPUT, i)
        return False
    if not topk_solve(T):
        fail_round(cnt, QP_NOT_CONVERGED, i)
        return False
    return True


cdef inline bint topk_arow_diag_round(TopK* T, double* mu, double* S, Py_ssize_t K,
                                      Py_ssize_t ld, Py_ssize_t D, const double* x, const int* idx,
                                      Py_ssize_t nnz, double bias, Py_ssize_t yi, double r,
                                      bint direct, bint sum_update, double* save,
                                      Counts* cnt, Py_ssize_t i, double* U,
                                      double t) noexcept nogil:
    """Diagonal top-k AROW after the losses: G_jl = v_y + [j = l] v_cj, mu += Sigma
    sum_j a_j Delta_j, then the covariance with f or Delta_1; averaging (U not NULL)
    of round t, as in `diag_top1_round`.  Returns True to stop."""
    cdef Py_ssize_t j, jl, kk = T.kk, sv = 2 * (nnz + 1)
    cdef double chk, cc
    cdef bint tiny = False
    cdef bint* watch = &tiny if may_collapse(AROW, direct) else NULL
    for j in range(kk):
        for jl in range(kk):
            T.Q[j * kk + jl] = T.vs[yi] + (T.vs[T.comp[j]] if j == jl else 0.0) + r
    if not topk_arow_solve(T, cnt, i):
        return True
    # (the mean steps, c = 0, leave the variances as they are)
    chk = blk_diag_step(mu + yi, S + yi, T.asum, 0.0, False, x, idx, nnz, bias, D, save, ld,
                        NULL)
    for j in range(kk):
        chk += blk_diag_step(mu + T.comp[j], S + T.comp[j], -T.a[j], 0.0, False, x, idx,
                             nnz, bias, D, save + (j + 1) * sv, ld, NULL)
    if not isfinite(chk):
        for j in range(kk - 1, -1, -1):
            blk_diag_restore(mu + T.comp[j], S + T.comp[j], save + (j + 1) * sv, idx, nnz, D,
                             ld)
        blk_diag_restore(mu + yi, S + yi, save, idx, nnz, D, ld)
        fail_round(cnt, NONFINITE_STATE, i)
        return True
    if sum_update:
        sum_sigma_update(S, K, ld, T.vs, r, direct, x, idx, nnz, bias, D, watch)
    else:
        cc = 1.0 / (T.vs[yi] + T.vs[T.comp[0]] + r) if direct else 1.0 / r   # r > 0
        blk_sigma_only(S + yi, cc, direct, x, idx, nnz, bias, D, ld, watch)
        blk_sigma_only(S + T.comp[0], cc, direct, x, idx, nnz, bias, D, ld, watch)
    if U != NULL:
        avg_blk(U + yi, mu + yi, save, idx, nnz, D, ld, t)
        for j in range(kk):
            avg_blk(U + T.comp[j], mu + T.comp[j], save + (j + 1) * sv, idx, nnz, D, ld, t)
    count_collapse(cnt, tiny, i)
    cnt.updates += 1
    return False


cdef inline bint topk_arow_full_round(TopK* T, double* mu, double* S, int K, int D,
                                      const double* xs, Py_ssize_t yi, double r,
                                      bint sum_update, double* f, double* P, double* u,
                                      double* g, Counts* cnt, Py_ssize_t i, double* U,
                                      double t) noexcept nogil:
    """Full top-k AROW after the losses over the stacked blocks: P_c = Sigma f(x, c),
    Sigma Delta_j = P_y - P_cj; averaging (U not NULL) of round t, as in `full_apply`.
    Returns True to stop the pass at row i."""
    cdef int KD = K * D, one = 1
    cdef Py_ssize_t j, jl, p, cj, kk = T.kk
    cdef double cc, done = 1.0, zero = 0.0
    cdef char uplo = b'U'
    for j in range(kk + 1):            # P_c = Sigma f(x, c) for c = y, c_1 .. c_k
        cj = yi if j == 0 else T.comp[j - 1]
        for p in range(KD):
            f[p] = 0.0
        for p in range(D):
            f[cj * D + p] = xs[p]
        dsymv(&uplo, &KD, &done, S, &KD, f, &one, &zero, P + j * KD, &one)
    # G_jl = (f_y - f_cj).(P_y - P_cl), f_c.P = x~.P[block c]
    for j in range(kk):
        for jl in range(kk):
            T.Q[j * kk + jl] = (
                vdot(xs, P + yi * D, D) - vdot(xs, P + (jl + 1) * KD + yi * D, D)
                - vdot(xs, P + T.comp[j] * D, D)
                + vdot(xs, P + (jl + 1) * KD + T.comp[j] * D, D)) + r
    if not topk_arow_solve(T, cnt, i):
        return True
    for p in range(KD):                # u = sum_j a_j (P_y - P_cj)
        u[p] = T.asum * P[p]
    for j in range(kk):
        for p in range(KD):
            u[p] -= T.a[j] * P[(j + 1) * KD + p]
    if sum_update:
        for jl in range(K):
            for p in range(D):
                f[jl * D + p] = xs[p]
        dsymv(&uplo, &KD, &done, S, &KD, f, &one, &zero, g, &one)
        cc = 1.0 / (r + vdot(f, g, KD))            # r > 0, f^T Sigma f >= 0
    else:
        for p in range(KD):
            g[p] = P[p] - P[KD + p]
        cc = 1.0 / T.Q[0]                          # Q_11 = Delta_1^T Sigma Delta_1 + r > 0
    if not full_check(mu, u, 1.0, g, cc, KD):
        fail_round(cnt, NONFINITE_STATE, i)
        return True
    full_apply(mu, S, KD, KD, u, 1.0, g, cc, U, t)
    cnt.updates += 1
    return False


def mc_topk_arow_pass(RowView rows not None, const Py_ssize_t[::1] y,
                      const Py_ssize_t[::1] order, double bias, Py_ssize_t kk,
                      double[:, :] MU, double[:, :] SG, bint full, double r,
                      bint direct, bint sum_update, double[:, :] U):
    """One top-k pass of AROW ([AROW13] Fig. 2, eqs. 25-30).

    If max_j l_j > 0: a = argmax l^T a - a^T (G + r 11^T) a / 2 over a >= 0 with
    G_jl = Delta_j^T Sigma Delta_l (one squared slack, eq. 27); mu += Sigma
    sum_j a_j Delta_j; then Sigma <- Sigma - Sigma g g^T Sigma / (r + g^T Sigma g)
    with g = f = x~ tiled K times (`sum_update`, eqs. 29-30) or g = Delta_1.
    Diagonal (SG = sigma, (K, D)): G_jl = v_y + [j = l] v_cj with v_c = x~^T
    diag(sigma_c) x~, and the covariance update 1/sigma_i += g_i^2 / r (or, with
    `direct`, sigma_i -= beta sigma_i^2 g_i^2).  Full (`full`, SG = Sigma over
    the stacked blocks, (K D, K D), one triangle kept): P_c = Sigma f(x, c),
    Sigma Delta_j = P_y - P_cj.  An importance weight s: r becomes r / s (the
    loss terms 1/(2r) become s/(2r), as in `so_step`).
    Averaging (U not empty, its last entry T the rounds so far): U += t (mu new -
    old) on an update of round t, U the (D + 1, K) sum of `mc_diag_pass`
    (diagonal, sharing the row stride of MU and SG: `feature_stride`) or the
    (K D + 1) one of `mc_full_pass` as one row (full, every array C-contiguous).
    Returns (rounds, mistakes, updates, loss_sum, status, position, collapsed).
    """
    # diagonal: (D, K) state, block c at offset c with stride ld; full: (K, D)
    cdef int K = <int>(MU.shape[0] if full else MU.shape[1])
    cdef int D = <int>(MU.shape[1] if full else MU.shape[0]), KD = K * D
    cdef Py_ssize_t ld = 0 if full else feature_stride(MU, SG, U)
    if full and not (MU.is_c_contig() and SG.is_c_contig() and U.is_c_contig()):
        raise ValueError("a full top-k AROW state's arrays must be C-contiguous")
    cdef Py_ssize_t j, nnz, i, q
    cdef Counts cnt = counts_start(rows)
    cdef const double* x
    cdef const int* idx
    cdef double n, sw
    cdef bint stop
    cdef Workspace ws = Workspace()
    cdef TopK T = topk_work(ws, K, kk, INFINITY)
    cdef double* save = ws.doubles(D + (kk + 4) * KD if full else
                                   2 * (kk + 1) * (max_row_nnz(&rows.R, order) + 1))
    # full: x~ (D), f (K D), P_y, P_c1..P_ck ((kk + 1) K D), u (K D), g (K D)
    cdef double* xs = save
    cdef double* f = xs + D
    cdef double* P = f + KD
    cdef double* u = P + (kk + 1) * KD
    cdef double* g = u + KD
    cdef double* mu = &MU[0, 0]
    cdef double* S = &SG[0, 0]
    cdef double* up = &U[0, 0] if U.shape[0] > 0 else NULL
    cdef double t = U[U.shape[0] - 1, U.shape[1] - 1] if up != NULL else 0.0
    with nogil:
        for q in range(order.shape[0]):
            i = order[q]
            nnz = get_row(&rows.R, i, &x, &idx)
            n = bias * bias
            for j in range(nnz):
                n += x[j] * x[j]
            if full:
                for j in range(K):
                    T.sc[j] = blk_dot(mu + j * D, x, idx, nnz, bias, D, 1)
            else:
                all_dots(mu, K, ld, x, idx, nnz, bias, D, T.sc, S)    # S's rows prefetched
                all_sqdots(S, K, ld, x, idx, nnz, bias, D, T.vs)
            if not (all_finite(T.sc, K) and isfinite(n) and (full or all_finite(T.vs, K))):
                fail_row(&cnt, NONFINITE_INPUT, i)
                break
            count_argmax(&cnt, T.sc, K, y[i], i)
            sw = row_weight(&cnt, i)
            if topk_losses(&T, K, y[i], &cnt) <= 0.0 or n <= 0.0 or sw == 0.0:
                t += 1.0
                continue
            if full:
                scatter_row(x, idx, nnz, bias, xs, D)
                stop = topk_arow_full_round(&T, mu, S, K, D, xs, y[i], r / sw, sum_update, f,
                                            P, u, g, &cnt, i, up, t + 1.0)
            else:
                stop = topk_arow_diag_round(&T, mu, S, K, ld, D, x, idx, nnz, bias, y[i], r / sw,
                                            direct, sum_update, save, &cnt, i, up, t + 1.0)
            if stop:
                break
            t += 1.0
    if up != NULL:
        for j in range(1 if full else K):
            U[U.shape[0] - 1, U.shape[1] - 1 - j] = t
    return counts_result(&cnt)
