# Multi-class mini-batch PA on the 1-of-k feature map ([GPA13] Sect. 3.2 with
# the multi-class updates of [CS03]): BPA-I, BPA-II, BPA-LS with kk competitors
# per row (kk = 1: top-1, kk = min(k, K - 1): top-k).  State W (D, K)
# C-contiguous, intercept = row D-1.
#
# For a group of rows i with current scores s_i (W from before the update):
#   c_i1..c_ikk = labels != y_i by decreasing score (ties to the smaller label),
#   Delta_ij = f(x_i, y_i) - f(x_i, c_ij),  l_ij = 1 - (s_i[y_i] - s_i[c_ij]),
#   G_(ij)(i'j') = (x_i.x_i' + bias^2) ([y_i = y_i'] - [y_i = c_i'j'] - [c_ij = y_i']
#                                       + [c_ij = c_i'j']),
#   BPA-I  max l'tau - tau'G tau/2,       0 <= tau <= C    (one slack per constraint)
#   BPA-II max l'tau - tau'Q tau/2,       tau >= 0
#   BPA-LS the stationary point of the same objective, tau unbounded (equalities),
# Q = G + rho I (one squared slack per constraint) or G + rho E with E_(ij)(i'j') =
# [i = i'] (`shared`: one squared slack per row, the squared multi-class hinge),
# Importance weights s_i scale row i's loss terms (C s_i xi, C s_i xi^2): its box
# becomes 0 <= tau_ij <= s_i C, its ridge rho / s_i; s_i = 0 fixes its tau at 0.
# All solved by `hildreth_solve` (_qp.pxi), the multipliers of classes the dual cannot
# tell apart replaced by their mean (`_mcbpa_tie_mean`); then W += sum tau_ij Delta_ij: block y_i
# gets (sum_j tau_ij) x~_i, block c_ij gets -tau_ij x~_i.  Rows with x~ = 0 (G
# diagonal 0) cannot move W: their tau are fixed at 0.  Grouping (block / sliding
# window) and the returned counters are those of `bpa_pass` (_minibatch.pxi).
#
# Provides: the driver `mc_bpa_pass`.
# Uses: RowView, Rows, get_row, max_row_nnz (_rows.pxi); Counts, count_argmax,
# Workspace, restore_coords (_driver.pxi); hildreth_solve, qp_work_size,
# qp_iwork_size (_qp.pxi); gram_row (_gram.pxi); Groups, BPA_*, avg_sync, avg_gain
# (_minibatch.pxi); all_dots,
# all_finite, competitor, top_competitors, blk_add (_mc_rows.pxi); TOPK_QP_TOL,
# TOPK_QP_MAX_ITER (_mc_topk.pxi).

from libc.math cimport INFINITY


cdef struct MCBPAWork:
    double* sc           # nb*K: the class scores of the group's rows
    double* gx           # nb*nb: x_i.x_i' + bias^2
    double* Q            # m*m, m = nb*kk constraints
    double* ell          # m
    double* lo           # m
    double* hi           # m
    double* tau          # m
    double* qwork        # qp_work_size(m)
    double* save         # nb * (kk + 1) * stride: old values, to undo an overflowing update
    Py_ssize_t* taken    # K
    Py_ssize_t* comp     # m competitors
    Py_ssize_t* qiwork   # qp_iwork_size(m)
    Py_ssize_t* pos      # nb*K: where class c is among row r's competitors (-1: absent)
    Py_ssize_t* grp      # K: the classes tied with the one being averaged
    Py_ssize_t stride    # max_nnz + 1


cdef inline int _mcbpa_rows(const Rows* R, const Py_ssize_t* rows, Py_ssize_t nb,
                            const Py_ssize_t* y, double bias, const double* W, Py_ssize_t D,
                            Py_ssize_t K, Py_ssize_t kk, Py_ssize_t first_cached, MCBPAWork* S,
                            Py_ssize_t* bad) noexcept nogil:
    """The group's scores (rows before first_cached scored now), competitors,
    losses S.ell and Gram matrix S.gx (lower triangle); returns a Status."""
    cdef const double* xa
    cdef const int* ia
    cdef Py_ssize_t r, j, na, yr
    cdef double* sc
    for r in range(nb):
        na = get_row(R, rows[r], &xa, &ia)
        sc = S.sc + r * K
        if r < first_cached:
            all_dots(W, K, K, xa, ia, na, bias, D, sc)
            if not all_finite(sc, K):
                bad[0] = rows[r]
                return NONFINITE_INPUT
        yr = y[rows[r]]
        top_competitors(sc, K, yr, kk, &S.comp[r * kk], S.taken)
        for j in range(kk):
            S.ell[r * kk + j] = 1.0 - (sc[yr] - sc[S.comp[r * kk + j]])
        gram_row(R, rows, r, NULL, bias * bias, NULL, S.gx + r * nb)
        if not isfinite(S.gx[r * nb + r]):
            bad[0] = rows[r]
            return NONFINITE_INPUT
    return OK


cdef inline bint _mcbpa_dual(const Py_ssize_t* rows, Py_ssize_t nb, const Py_ssize_t* y,
                             const double* wt, Py_ssize_t kk, int variant, double C,
                             double rho, bint shared, MCBPAWork* S) noexcept nogil:
    """The group's dual: Q (both triangles) and the box of tau (from tau = 0), with
    the rows' importance weights wt[row] (NULL: 1); returns whether a constraint that
    can move W has a positive loss."""
    cdef Py_ssize_t m = nb * kk, r, r2, q, q2, yr, y2, cq, base
    cdef double val, s
    cdef bint any_loss = False
    cdef int f
    for q in range(m):                         # the lower triangle and its mirror
        r = q // kk                            # kk >= 1
        yr = y[rows[r]]
        cq = S.comp[q]
        for q2 in range(q + 1):
            r2 = q2 // kk                      # kk >= 1
            y2 = y[rows[r2]]
            f = (<int>(yr == y2) - <int>(yr == S.comp[q2]) - <int>(cq == y2)
                 + <int>(cq == S.comp[q2]))
            val = S.gx[r * nb + r2] * f
            S.Q[q * m + q2] = val
            S.Q[q2 * m + q] = val
    for q in range(m):
        S.tau[q] = 0.0
        s = wt[rows[q // kk]] if wt != NULL else 1.0     # kk >= 1
        if S.gx[(q // kk) * nb + q // kk] == 0.0 or s == 0.0:
            S.lo[q] = 0.0                      # x~ = 0 or no loss term: cannot move W
            S.hi[q] = 0.0
            continue
        if S.ell[q] > 0.0:
            any_loss = True
        if variant == BPA_1:
            S.lo[q] = 0.0
            S.hi[q] = s * C
            continue
        S.lo[q] = -INFINITY if variant == BPA_LS else 0.0
        S.hi[q] = INFINITY
        if shared:
            base = (q // kk) * kk              # kk >= 1
            for q2 in range(base, base + kk):
                S.Q[q * m + q2] += rho / s
        else:
            S.Q[q * m + q] += rho / s
    return any_loss


cdef inline bint _mcbpa_swappable(const Py_ssize_t* rows, Py_ssize_t nb, const Py_ssize_t* y,
                                  Py_ssize_t K, Py_ssize_t kk, Py_ssize_t c, Py_ssize_t c2,
                                  const MCBPAWork* S) noexcept nogil:
    """Whether relabelling classes c <-> c2 leaves the group's dual unchanged: neither is
    a row's label, and every row has both among its competitors with equal losses, or
    neither (Q depends on the competitors only through which of them are equal)."""
    cdef Py_ssize_t r, p, p2
    for r in range(nb):
        if y[rows[r]] == c or y[rows[r]] == c2:
            return False
        p = S.pos[r * K + c]
        p2 = S.pos[r * K + c2]
        if (p < 0) != (p2 < 0) or (p >= 0 and S.ell[r * kk + p] != S.ell[r * kk + p2]):
            return False
    return True


cdef inline void _mcbpa_tie_mean(const Py_ssize_t* rows, Py_ssize_t nb, const Py_ssize_t* y,
                                 Py_ssize_t K, Py_ssize_t kk, MCBPAWork* S) noexcept nogil:
    """Classes that the group's dual cannot tell apart (`_mcbpa_swappable`) share, row by
    row, the mean of their multipliers (an optimum, as in `tie_mean`), so competitors
    whose blocks were bit-identical stay so and a later tie breaks by label."""
    cdef Py_ssize_t r, j, c, c2, n, p
    cdef double s
    cdef bint same
    for r in range(nb):
        for c in range(K):
            S.pos[r * K + c] = -1
        for j in range(kk):
            S.pos[r * K + S.comp[r * kk + j]] = j
    for c in range(K):
        S.grp[c] = 0
    for c in range(K):
        if S.grp[c]:
            continue
        n = 0
        for r in range(nb):
            n += S.pos[r * K + c] >= 0
        if n == 0:                                     # no multiplier of class c
            continue
        n = 1
        for c2 in range(c + 1, K):
            if not S.grp[c2] and _mcbpa_swappable(rows, nb, y, K, kk, c, c2, S):
                S.grp[c2] = c + 1
                n += 1
        if n == 1:
            continue
        for r in range(nb):
            p = S.pos[r * K + c]
            if p < 0:
                continue
            s = S.tau[r * kk + p]
            same = True
            for c2 in range(c + 1, K):
                if S.grp[c2] == c + 1:
                    s += S.tau[r * kk + S.pos[r * K + c2]]
                    same = same and S.tau[r * kk + S.pos[r * K + c2]] == S.tau[r * kk + p]
            if same:
                continue
            s = s / n                                  # n >= 2
            S.tau[r * kk + p] = s
            for c2 in range(c + 1, K):
                if S.grp[c2] == c + 1:
                    S.tau[r * kk + S.pos[r * K + c2]] = s


cdef inline bint _mcbpa_moves(const double* tau, Py_ssize_t kk) noexcept nogil:
    """Whether one of a row's kk multipliers is not 0."""
    cdef Py_ssize_t j
    for j in range(kk):
        if tau[j] != 0.0:
            return True
    return False


cdef inline int _mcbpa_apply(const Rows* R, const Py_ssize_t* rows, Py_ssize_t nb,
                             const Py_ssize_t* y, double bias, double* W, Py_ssize_t D,
                             Py_ssize_t K, Py_ssize_t kk, MCBPAWork* S, bint* moved) noexcept nogil:
    """W += sum tau_ij Delta_ij, row by row; on overflow W is restored (in reverse
    order of application: every value returns exactly) and NONFINITE_STATE returned."""
    cdef const double* xa
    cdef const int* ia
    cdef Py_ssize_t r, j, na, base, stride = S.stride
    cdef double asum, chk = 0.0, dn2 = 0.0
    for r in range(nb):
        if not _mcbpa_moves(S.tau + r * kk, kk):
            continue
        asum = 0.0
        for j in range(kk):
            asum += S.tau[r * kk + j]
        moved[0] = True
        na = get_row(R, rows[r], &xa, &ia)
        base = r * (kk + 1) * stride
        chk += blk_add(&W[y[rows[r]]], asum, xa, ia, na, bias, D, &S.save[base], &dn2, K)
        for j in range(kk):
            if S.tau[r * kk + j] != 0.0:
                chk += blk_add(&W[S.comp[r * kk + j]], -S.tau[r * kk + j], xa, ia, na, bias,
                               D, &S.save[base + (j + 1) * stride], &dn2, K)
    if isfinite(chk) and isfinite(dn2):
        return OK
    for r in range(nb - 1, -1, -1):
        if not _mcbpa_moves(S.tau + r * kk, kk):
            continue
        na = get_row(R, rows[r], &xa, &ia)
        base = r * (kk + 1) * stride
        for j in range(kk - 1, -1, -1):
            if S.tau[r * kk + j] != 0.0:
                restore_coords(&W[S.comp[r * kk + j]], &S.save[base + (j + 1) * stride],
                               ia, na, D, K, 1)
        restore_coords(&W[y[rows[r]]], &S.save[base], ia, na, D, K, 1)
    moved[0] = False
    return NONFINITE_STATE


cdef int _mcbpa_update(const Rows* R, const Py_ssize_t* rows, Py_ssize_t nb,
                       const Py_ssize_t* y, const double* wt, double bias, double* W,
                       Py_ssize_t D,
                       Py_ssize_t K, Py_ssize_t kk, int variant, double C, double rho,
                       bint shared, Py_ssize_t first_cached, MCBPAWork* S, bint* moved,
                       Py_ssize_t* bad) noexcept nogil:
    """One joint update of W on the rows rows[0..nb-1] (importance weights wt[row],
    NULL: 1); returns a Status.

    The scores of rows first_cached..nb-1 with the current W are in S.sc already
    (block mode: computed when the rows were predicted, W unchanged since)."""
    cdef Py_ssize_t it
    cdef double kkt
    cdef int st
    moved[0] = False
    st = _mcbpa_rows(R, rows, nb, y, bias, W, D, K, kk, first_cached, S, bad)
    if st != OK:
        return st
    if not _mcbpa_dual(rows, nb, y, wt, kk, variant, C, rho, shared, S) \
            and variant != BPA_LS:
        return OK  # tau = 0 meets the KKT conditions when every l_ij <= 0
    if hildreth_solve(S.Q, S.ell, S.lo, S.hi, S.tau, nb * kk, TOPK_QP_TOL, TOPK_QP_MAX_ITER,
                      S.qwork, S.qiwork, &kkt, &it, bad) != OK:
        bad[0] = rows[nb - 1]
        return QP_NOT_CONVERGED
    _mcbpa_tie_mean(rows, nb, y, K, kk, S)
    st = _mcbpa_apply(R, rows, nb, y, bias, W, D, K, kk, S, moved)
    if st != OK:
        bad[0] = rows[nb - 1]
    return st


def mc_bpa_pass(RowView rows not None,
                const Py_ssize_t[::1] y, const Py_ssize_t[::1] order,
                Py_ssize_t n_seen, double bias, double[:, ::1] W, int variant,
                bint sliding, Py_ssize_t B, Py_ssize_t kk, double C, double rho,
                bint shared, bint flush, double[:, ::1] R, double[::1] U):
    """One pass of multi-class mini-batch PA over `order`; W (D, K) in place.

    Grouping as `bpa_pass`: the first `n_seen` rows of `order` were predicted
    (and, sliding, used) by an earlier call.  Block mode: consecutive groups of
    B rows, every row predicted (argmax, ties to the first class) with the
    model from before its group, then one joint update; a last, shorter group
    is updated only when `flush`.  Sliding mode: predict row t, then update
    with the window of the last min(B, t + 1) rows.  kk >= 1 competitors per row.
    Averaging (U not empty: D K + 1 entries, U[D K] = T) as `bpa_pass`, the
    reported model in R (D, K).

    Returns (rounds, mistakes, updates, loss_sum, status, position, collapsed, n_left);
    loss_sum adds max(0, 1 - (s_y - s_c)) against the closest competitor c at
    prediction time; n_left = rows at the end of `order` to carry into the
    next call.
    """
    cdef Py_ssize_t D = W.shape[0], K = W.shape[1], t, i, lo, nb, nnz
    cdef Py_ssize_t m = B * kk, stride = max_row_nnz(&rows.R, order) + 1, yi
    cdef Counts cnt = counts_start(rows)
    cdef Groups g = groups_start(order.shape[0], n_seen, B, sliding, flush)
    cdef double* sc
    cdef bint moved
    cdef const double* x
    cdef const int* idx
    cdef Workspace ws = Workspace()
    cdef MCBPAWork S
    S.sc = ws.doubles(B * K + B * B + m * m + 4 * m + qp_work_size(m) + B * (kk + 1) * stride)
    S.gx = S.sc + B * K
    S.Q = S.gx + B * B
    S.ell = S.Q + m * m
    S.lo = S.ell + m
    S.hi = S.lo + m
    S.tau = S.hi + m
    S.qwork = S.tau + m
    S.save = S.qwork + qp_work_size(m)
    S.taken = ws.indices(K + m + qp_iwork_size(m) + B * K + K)
    S.comp = S.taken + K
    S.qiwork = S.comp + m
    S.pos = S.qiwork + qp_iwork_size(m)
    S.grp = S.pos + B * K
    S.stride = stride
    cdef bint avg = U.shape[0] > 0
    cdef double T = U[D * K] if avg else 0.0
    cdef unsigned char* seen = ws.flags(D) if avg else NULL
    cdef double* w = &W[0, 0]
    cdef double* rp = &R[0, 0] if avg else NULL
    with nogil:
        for t in range(g.n):
            i = order[t]
            if t >= n_seen:
                nnz = get_row(&rows.R, i, &x, &idx)
                # block mode: kept for the group's update (W does not change before it)
                sc = S.sc if sliding else S.sc + (t - g.start) * K
                all_dots(&W[0, 0], K, K, x, idx, nnz, bias, D, sc)
                if not all_finite(sc, K):
                    fail_row(&cnt, NONFINITE_INPUT, i)
                    break
                yi = y[i]
                count_argmax(&cnt, sc, K, yi, i)
                count_hinge(&cnt, sc[yi] - sc[competitor(sc, K, yi)])
            nb = group_due(&g, t + 1, &lo)
            if nb == 0:
                if avg and t >= n_seen:
                    # the incomplete block g.start..t, applied provisionally to R (the
                    # scores of its rows from n_seen on are those of W = R there)
                    nb = t + 1 - g.start
                    avg_sync(rp, w, &U[0], T + 1.0, &rows.R, &order[g.start], nb, D, K)
                    cnt.status = _mcbpa_update(&rows.R, &order[g.start], nb, &y[0], cnt.wt,
                                               bias, rp, D, K, kk, variant, C, rho, shared,
                                               min(max(n_seen - g.start, 0), nb), &S, &moved,
                                               &cnt.pos)
                    if cnt.status != OK:
                        break
                    T += 1.0
                    avg_gain(rp, w, &U[0], T, &rows.R, &order[g.start], nb, D, K, seen)
                continue
            # the rows from `first_cached` on have their scores in S.sc: none of a
            # sliding window (W has moved since), the new rows of a block
            cnt.status = _mcbpa_update(&rows.R, &order[lo], nb, &y[0], cnt.wt, bias,
                                       &W[0, 0], D, K, kk, variant, C, rho, shared,
                                       nb if sliding else min(max(n_seen - lo, 0), nb),
                                       &S, &moved, &cnt.pos)
            if cnt.status != OK:
                break
            if moved:
                cnt.updates += 1
            if avg and t >= n_seen:
                T += 1.0
                avg_sync(rp, w, &U[0], T, &rows.R, &order[lo], nb, D, K)
    if avg:
        U[D * K] = T
    return (*counts_result(&cnt), group_left(&g))
