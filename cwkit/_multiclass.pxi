# Multi-class drivers (FORMULAS.md section 4): the 1-of-k feature function
# f(x, y) = e_y (x) x~, one block per class, the intercept last in every block.
# State (D, K) C-contiguous (block c is column c, stride K; full covariance keeps
# mu (K, D)): a coordinate's K class weights are adjacent, so a row is scored in
# one walk of nnz + 1 short runs, prefetched ahead (`row_dots`), and an update
# touches the lines that walk brought in.  The training drivers walk a row once
# to score it (with ||x~||^2 and, diagonal top1, v_y), and once per update;
# ||V||^2 is kept for l2-pa only (as in the binary driver).
#
# top1 ("ovr" False): the binary step of the rule on Delta = f(x, y) - f(x, c)
# against the closest competitor c (labels != y by decreasing score, ties to the
# smaller label).  Delta holds x in block y and -x in block c, so for label +1
#   m = mu_y.x - mu_c.x,  v = v_y + v_c (diagonal),  ||Delta||^2 = 2 ||x~||^2.
# The Perceptron updates only on an argmax mistake, with c = the prediction.
# ovr (True): K binary problems on the same row (label +1 for class y, -1 for
# the others); every class is scored before any class is updated.
# Progressive mistakes are argmax errors (ties to the first class) for every rule.

from libc.math cimport INFINITY


cdef inline double blk_dot(const double* w, const double* x, const int* idx,
                           Py_ssize_t nnz, double bias, Py_ssize_t D,
                           Py_ssize_t ks) noexcept nogil:
    """w . x~ for one block whose coordinate p is w[p * ks]."""
    cdef double s = w[(D - 1) * ks] * bias
    cdef Py_ssize_t j
    for j in range(nnz):
        s += w[idx[j] * ks] * x[j]
    return s


cdef inline double blk_sqdot(const double* sg, const double* x, const int* idx,
                             Py_ssize_t nnz, double bias, Py_ssize_t D,
                             Py_ssize_t ks) noexcept nogil:
    """sum_i sg_i x~_i^2 for one block (x~^T diag(sg) x~), coordinate p at sg[p * ks]."""
    cdef double s = sg[(D - 1) * ks] * bias * bias
    cdef Py_ssize_t j
    for j in range(nnz):
        s += sg[idx[j] * ks] * x[j] * x[j]
    return s


# coordinates ahead whose class weights are prefetched while scoring a sparse row
# (news20, K = 20: 8 -> 16 took 6-14% off top1 and ovr; 24-48 no better)
cdef enum:
    MC_AHEAD = 16


cdef struct NextRow:
    # the row a driver scores after the current one: its first MC_AHEAD
    # coordinates are prefetched at the end of the current row
    const int* idx
    Py_ssize_t nnz
    Py_ssize_t y                # its label, for the prefetch of S (diagonal top1)


cdef inline void next_row(const Rows* R, const Py_ssize_t* order, Py_ssize_t n_order,
                          Py_ssize_t k, const Py_ssize_t* y, NextRow* nr) noexcept nogil:
    """The row after position k of `order` (nnz 0 at the end)."""
    cdef const double* x
    nr.nnz = 0
    if k + 1 < n_order:
        nr.nnz = get_row(R, order[k + 1], &x, &nr.idx)
        nr.y = y[order[k + 1]]


cdef inline double row_dots(const double* W, Py_ssize_t K, const double* x, const int* idx,
                            Py_ssize_t nnz, double bias, Py_ssize_t D, double* out,
                            bint warm, const NextRow* nr, const double* S=NULL,
                            Py_ssize_t ys=-1, double* vy=NULL) noexcept nogil:
    """out[c] = W_c . x~ for every class of a (D, K) state; returns ||x~||^2.

    A coordinate's K class weights are adjacent, so a row touches nnz + 1 short
    contiguous runs; the state is far larger than the caches, so they are
    prefetched MC_AHEAD coordinates ahead, running on into the first coordinates
    of the next row `nr` (NULL: none), so the next call starts with them in flight
    (`warm`: prefetch this row's first coordinates here, when the previous call did
    not).  S (another (D, K) array the driver reads next) is prefetched alongside:
    whole rows, or only class ys's entry when ys >= 0, and then, if vy is not NULL,
    vy = x~^T diag(S_ys) x~ (in `blk_sqdot`'s order).

    Four coordinates per pass over the classes: out[c] gets their four terms one
    after the other in a register (the order of one coordinate at a time, so the
    sums are the same bit for bit), not a load and a store per coordinate."""
    cdef Py_ssize_t j, c, t, f
    cdef const double* row = W + (D - 1) * K
    cdef const double* r0
    cdef const double* r1
    cdef const double* r2
    cdef const double* r3
    cdef double x0, x1, x2, x3, o, n = bias * bias, v = 0.0
    cdef bint sum_v = S != NULL and ys >= 0 and vy != NULL
    for c in range(K):
        out[c] = row[c] * bias
    if sum_v:
        v = S[(D - 1) * K + ys] * bias * bias
    if warm:
        for t in range(min(nnz, <Py_ssize_t>MC_AHEAD)):
            CWKIT_PREFETCH_SPAN(W + idx[t] * K, K)
            if S != NULL:
                if ys >= 0:
                    CWKIT_PREFETCH(S + idx[t] * K + ys)
                else:
                    CWKIT_PREFETCH_SPAN(S + idx[t] * K, K)
    j = 0
    while j < nnz:
        # prefetch MC_AHEAD coordinates ahead of the (up to) four scored now
        for t in range(j + MC_AHEAD, j + MC_AHEAD + 4):
            if t < nnz:
                f = idx[t]
                CWKIT_PREFETCH_SPAN(W + f * K, K)
                if S != NULL:
                    if ys >= 0:
                        CWKIT_PREFETCH(S + f * K + ys)
                    else:
                        CWKIT_PREFETCH_SPAN(S + f * K, K)
            elif nr != NULL and t - nnz < nr.nnz:
                f = nr.idx[t - nnz]
                CWKIT_PREFETCH_SPAN(W + f * K, K)
                if S != NULL and ys >= 0:
                    CWKIT_PREFETCH(S + f * K + nr.y)
        if j + 4 <= nnz:
            x0 = x[j]
            x1 = x[j + 1]
            x2 = x[j + 2]
            x3 = x[j + 3]
            r0 = W + idx[j] * K
            r1 = W + idx[j + 1] * K
            r2 = W + idx[j + 2] * K
            r3 = W + idx[j + 3] * K
            for c in range(K):
                o = out[c]
                o += r0[c] * x0
                o += r1[c] * x1
                o += r2[c] * x2
                o += r3[c] * x3
                out[c] = o
            t = j + 4
        else:
            r0 = W + idx[j] * K
            x0 = x[j]
            for c in range(K):
                out[c] += r0[c] * x0
            t = j + 1
        while j < t:
            n += x[j] * x[j]
            if sum_v:
                v += S[idx[j] * K + ys] * x[j] * x[j]
            j += 1
    if sum_v:
        vy[0] = v
    return n


cdef inline void all_dots(const double* W, Py_ssize_t K, const double* x, const int* idx,
                          Py_ssize_t nnz, double bias, Py_ssize_t D, double* out,
                          const double* W2=NULL, Py_ssize_t y2=-1) noexcept nogil:
    """out[c] = W_c . x~ for every class of a (D, K) state (`row_dots` on one row).
    The same rows of W2 (another (D, K) array the driver reads next) are prefetched
    too: whole rows, or only class y2's entry when y2 >= 0."""
    row_dots(W, K, x, idx, nnz, bias, D, out, True, NULL, W2, y2, NULL)


cdef inline void all_sqdots(const double* S, Py_ssize_t K, const double* x, const int* idx,
                            Py_ssize_t nnz, double bias, Py_ssize_t D,
                            double* out) noexcept nogil:
    """out[c] = x~^T diag(S_c) x~ for every class of a (D, K) state."""
    cdef Py_ssize_t j, c
    cdef const double* row = S + (D - 1) * K
    cdef double xj
    for c in range(K):
        out[c] = row[c] * bias * bias
    for j in range(nnz):
        row = S + idx[j] * K
        xj = x[j]
        for c in range(K):
            out[c] += row[c] * xj * xj          # the binary drivers' rounding order


cdef inline Py_ssize_t argmax_first(const double* sc, Py_ssize_t K) noexcept nogil:
    """Index of the largest score, ties to the first."""
    cdef Py_ssize_t c, best = 0
    for c in range(1, K):
        if sc[c] > sc[best]:
            best = c
    return best


cdef inline Py_ssize_t competitor(const double* sc, Py_ssize_t K,
                                  Py_ssize_t y) noexcept nogil:
    """Highest-scoring label other than y, ties to the smaller label (K >= 2)."""
    cdef Py_ssize_t c, best = 1 if y == 0 else 0
    for c in range(best + 1, K):
        if c != y and sc[c] > sc[best]:
            best = c
    return best


cdef inline bint all_finite(const double* sc, Py_ssize_t K) noexcept nogil:
    cdef Py_ssize_t c
    for c in range(K):
        if not isfinite(sc[c]):
            return False
    return True


cdef inline double blk_add(double* w, double c, const double* x, const int* idx,
                           Py_ssize_t nnz, double bias, Py_ssize_t D, double* save,
                           double* dn2, Py_ssize_t ks) noexcept nogil:
    """w += c x~ on one block; old values go to save[0..nnz]; dn2 += change of ||w||^2.

    Returns the sum of the new values (a finiteness check)."""
    cdef Py_ssize_t j, p
    cdef double old, new, chk = 0.0
    for j in range(nnz + 1):
        if j < nnz:
            p = idx[j] * ks
            new = c * x[j]
        else:
            p = (D - 1) * ks
            new = c * bias
        old = w[p]
        save[j] = old
        new = old + new
        w[p] = new
        chk += new
        dn2[0] += new * new - old * old
    return chk


cdef inline void blk_restore(double* w, const double* save, const int* idx,
                             Py_ssize_t nnz, Py_ssize_t D, Py_ssize_t ks) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(nnz):
        w[idx[j] * ks] = save[j]
    w[(D - 1) * ks] = save[nnz]


cdef inline void pair_add(double* V, Py_ssize_t K, Py_ssize_t a, Py_ssize_t b, double cfa,
                          double cfb, const double* x, const int* idx, Py_ssize_t nnz,
                          double bias, Py_ssize_t D, double* save_a, double* save_b,
                          double* chk_a, double* chk_b) noexcept nogil:
    """`blk_add` of cfa x~ on block a and of cfb x~ on block b (none if b < 0) of a
    (D, K) state in one walk of the row (a coordinate's entries share its cache
    lines; two independent sums instead of one serial chain), without the change
    of ||V||^2.  Old values go to save_a / save_b[0..nnz], as for `blk_restore`;
    chk_a, chk_b = the sums of the new values, each in `blk_add`'s order."""
    cdef Py_ssize_t j
    cdef double* row
    cdef double xj, old, ca = 0.0, cb = 0.0
    for j in range(nnz + 1):
        if j < nnz:
            row = V + idx[j] * K
            xj = x[j]
        else:
            row = V + (D - 1) * K
            xj = bias
        old = row[a]
        save_a[j] = old
        row[a] = old + cfa * xj
        ca += old + cfa * xj
        if b >= 0:
            old = row[b]
            save_b[j] = old
            row[b] = old + cfb * xj
            cb += old + cfb * xj
    chk_a[0] = ca
    chk_b[0] = cb


cdef inline void blk_axpy(double* w, double c, const double* x, const int* idx,
                          Py_ssize_t nnz, double bias, Py_ssize_t D,
                          Py_ssize_t ks) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(nnz):
        w[idx[j] * ks] += c * x[j]
    w[(D - 1) * ks] += c * bias


def mc_first_order_pass(RowView rows,
                        const Py_ssize_t[::1] y,
                        const Py_ssize_t[::1] order, double bias, bint ovr,
                        double[:, ::1] V, double[:, ::1] aux, double[:, ::1] U,
                        int rule, double C, double alpha, double beta):
    """One multi-class pass of a first-order rule (perceptron, averaging, PA, S004).

    State: W = s V, one scale factor for the whole W in top1 (aux has one row:
    the S004 rules shrink all of W, so a shared s keeps that O(1)); one row of
    aux (s, ||V||^2, t) per class in ovr (K independent binary problems).
    U (same shape as V, or empty) accumulates sum_t t Delta_t for averaging.
    Returns (rounds, mistakes, updates, loss_sum, status, position).
    """
    cdef Hyper h
    h.rule = rule
    h.C = C
    h.alpha = alpha
    h.beta = beta
    cdef Py_ssize_t K = V.shape[1], D = V.shape[0], k, j, nnz, i, c, yi, yhat
    cdef Py_ssize_t rounds = 0, mistakes = 0, updates = 0, pos = -1, n_aux = aux.shape[0]
    cdef int status = OK
    cdef bint warm
    cdef const double* x
    cdef const int* idx
    cdef double n, m, tau, Z, s, t, cf, chk, dn2, yc, ca, cb, loss_sum = 0.0
    # scores, ovr per-class steps, and the old values of updated coordinates
    cdef Workspace ws = Workspace()
    cdef Py_ssize_t* act = ws.indices(K)     # ovr: the classes updated
    cdef double* work = ws.doubles(5 * K + (K if ovr else 2) * (max_row_nnz(&rows.R, order) + 1))
    cdef double* sc = &work[0]          # scores
    cdef double* taus = &work[K]        # ovr: tau y_c per class
    cdef double* zs = &work[2 * K]      # ovr: Z per class
    cdef double* dn = &work[3 * K]      # ovr: change of ||V_c||^2
    cdef double* cks = &work[4 * K]     # ovr: sum of the new values per class
    cdef double* save = &work[5 * K]
    cdef Py_ssize_t n_act, c2
    cdef bint avg = rule == AVG_PERCEPTRON, bad
    cdef bint is_perc = rule == PERCEPTRON or rule == AVG_PERCEPTRON
    cdef bint track_norm = rule == L2_PA      # ||V||^2 is needed by l2-pa only
    cdef NextRow nr
    nr.nnz = 0
    nr.idx = NULL
    nr.y = 0
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&rows.R, i, &x, &idx)
            warm = nr.nnz < MC_AHEAD
            next_row(&rows.R, &order[0], order.shape[0], k, &y[0], &nr)
            n = row_dots(&V[0, 0], K, x, idx, nnz, bias, D, sc, warm, &nr)
            for c in range(K):
                sc[c] *= aux[c if ovr else 0, AUX_S]
            if not (all_finite(sc, K) and isfinite(n)):
                status = NONFINITE_INPUT
                pos = i
                break
            yi = y[i]
            rounds += 1
            yhat = argmax_first(sc, K)
            if yhat != yi:
                mistakes += 1
            if not ovr:
                # -- top1: binary step on Delta = f(x, y) - f(x, c), label +1
                t = aux[0, AUX_T] + 1.0
                s = aux[0, AUX_S]
                c = yhat if is_perc else competitor(sc, K, yi)
                m = sc[yi] - sc[c]
                if m < 1.0:
                    loss_sum += 1.0 - m
                if is_perc:
                    tau = 1.0 if yhat != yi else 0.0
                    Z = 1.0
                else:
                    tau = fo_step(&h, m, 2.0 * n, s * s * aux[0, AUX_VN2], m, &Z, &status)
                if status != OK:
                    pos = i
                    rounds -= 1
                    break
                aux[0, AUX_T] = t
                if tau == 0.0:
                    continue
                cf = tau / s                   # s in [S_MIN, S_MAX]
                dn2 = 0.0
                if track_norm:
                    chk = blk_add(&V[0, yi], cf, x, idx, nnz, bias, D, save, &dn2, K)
                    chk += blk_add(&V[0, c], -cf, x, idx, nnz, bias, D, save + nnz + 1,
                                   &dn2, K)
                else:
                    pair_add(&V[0, 0], K, yi, c, cf, -cf, x, idx, nnz, bias, D, save,
                             save + nnz + 1, &ca, &cb)
                    chk = ca + cb
                if not (isfinite(chk) and isfinite(dn2) and isfinite(cf)):
                    blk_restore(&V[0, c], save + nnz + 1, idx, nnz, D, K)
                    blk_restore(&V[0, yi], save, idx, nnz, D, K)
                    status = NONFINITE_STATE
                    pos = i
                    rounds -= 1
                    break
                if avg:
                    blk_axpy(&U[0, yi], t * cf, x, idx, nnz, bias, D, K)
                    blk_axpy(&U[0, c], -t * cf, x, idx, nnz, bias, D, K)
                aux[0, AUX_VN2] += dn2
                updates += 1
                s = s / Z                      # Z >= 1
                if s < S_MIN or s > S_MAX:
                    for j in range(D):
                        for c in range(K):
                            V[j, c] *= s
                    aux[0, AUX_VN2] *= s * s
                    s = 1.0
                aux[0, AUX_S] = s
                continue
            # -- ovr: every class's step from the pre-update scores, then all updates
            bad = False
            for c in range(K):
                yc = 1.0 if c == yi else -1.0
                m = yc * sc[c]
                if m < 1.0:
                    loss_sum += 1.0 - m
                s = aux[c, AUX_S]
                tau = fo_step(&h, m, n, s * s * aux[c, AUX_VN2], sc[c], &zs[c], &status)
                if status != OK:
                    bad = True
                    break
                taus[c] = tau * yc
            if bad:
                pos = i
                rounds -= 1
                break
            # the updated classes two per walk of the row (||V_c||^2 for l2-pa only)
            n_act = 0
            for c in range(K):
                dn[c] = 0.0
                if taus[c] != 0.0:
                    act[n_act] = c
                    n_act += 1
            for j in range(n_act):
                c = act[j]
                if track_norm:
                    cks[c] = blk_add(&V[0, c], taus[c] / aux[c, AUX_S], x, idx, nnz, bias,
                                     D, save + c * (nnz + 1), &dn[c], K)  # s > 0
                elif j % 2 == 0:
                    c2 = act[j + 1] if j + 1 < n_act else -1
                    pair_add(&V[0, 0], K, c, c2, taus[c] / aux[c, AUX_S],        # s > 0
                             taus[c2] / aux[c2, AUX_S] if c2 >= 0 else 0.0, x, idx, nnz,
                             bias, D, save + c * (nnz + 1), save + max(c2, 0) * (nnz + 1), &cks[c],
                             &cks[c2] if c2 >= 0 else &ca)
            chk = 0.0
            for c in range(K):
                if taus[c] != 0.0:
                    chk += cks[c]
                    chk += dn[c] + taus[c] / aux[c, AUX_S]          # s > 0
            if not isfinite(chk):
                for c in range(K):
                    if taus[c] != 0.0:
                        blk_restore(&V[0, c], save + c * (nnz + 1), idx, nnz, D, K)
                status = NONFINITE_STATE
                pos = i
                rounds -= 1
                break
            for c in range(K):
                t = aux[c, AUX_T] + 1.0
                aux[c, AUX_T] = t
                if taus[c] == 0.0:
                    continue
                s = aux[c, AUX_S]
                if avg:
                    blk_axpy(&U[0, c], t * taus[c] / s, x, idx, nnz, bias, D, K)   # s > 0
                aux[c, AUX_VN2] += dn[c]
                updates += 1
                s = s / zs[c]                  # Z >= 1
                if s < S_MIN or s > S_MAX:
                    for j in range(D):
                        V[j, c] *= s
                    aux[c, AUX_VN2] *= s * s
                    s = 1.0
                aux[c, AUX_S] = s
    return rounds, mistakes, updates, loss_sum, status, pos


cdef inline double blk_diag_step(double* mu, double* sg, double ay, double cc, bint direct,
                                 const double* x, const int* idx, Py_ssize_t nnz,
                                 double bias, Py_ssize_t D, double* save,
                                 Py_ssize_t ks) noexcept nogil:
    """mu += ay Sigma x~ and the diagonal covariance update with coefficient cc
    (1/sigma_i += cc x_i^2, or sigma_i -= cc sigma_i^2 x_i^2 when `direct`) on one
    block; old (mu, sigma) pairs go to save[0 .. 2 nnz + 1].  Returns the sum of the
    new mu and sigma (a finiteness check)."""
    cdef Py_ssize_t j, p
    cdef double xj, sj, chk = 0.0
    for j in range(nnz + 1):
        if j < nnz:
            p = idx[j] * ks
            xj = x[j]
        else:
            p = (D - 1) * ks
            xj = bias
        sj = sg[p]
        save[2 * j] = mu[p]
        save[2 * j + 1] = sj
        mu[p] += ay * sj * xj
        if direct:
            sg[p] = sj - cc * sj * sj * xj * xj
        else:
            sg[p] = inv_diag_update(sj, cc, xj * xj)
        chk += mu[p] + sg[p]
    return chk


cdef inline double pair_diag_step(double* MU, double* SG, Py_ssize_t K, Py_ssize_t a,
                                  Py_ssize_t b, double alpha, double cc, bint direct,
                                  const double* x, const int* idx, Py_ssize_t nnz,
                                  double bias, Py_ssize_t D, double* save) noexcept nogil:
    """`blk_diag_step` with ay = alpha on block a and ay = -alpha on block b of a
    (D, K) state in one walk of the row.  Old pairs go to save[0 .. 2 nnz + 1] (a)
    and from save + 2 (nnz + 1) (b), as for `blk_diag_restore`; returns the two
    blocks' check sums, each in `blk_diag_step`'s order, added."""
    cdef Py_ssize_t j, p, q
    cdef double xj, sj, d, ca = 0.0, cb = 0.0
    cdef double* sb = save + 2 * (nnz + 1)
    for j in range(nnz + 1):
        if j < nnz:
            p = idx[j] * K
            xj = x[j]
        else:
            p = (D - 1) * K
            xj = bias
        q = p + a
        sj = SG[q]
        save[2 * j] = MU[q]
        save[2 * j + 1] = sj
        MU[q] += alpha * sj * xj
        if direct:
            SG[q] = sj - cc * sj * sj * xj * xj
        else:
            SG[q] = inv_diag_update(sj, cc, xj * xj)
        ca += MU[q] + SG[q]
        q = p + b
        sj = SG[q]
        sb[2 * j] = MU[q]
        sb[2 * j + 1] = sj
        d = alpha * sj * xj
        MU[q] -= d                       # = mu + (-alpha) sj x_j exactly
        if direct:
            SG[q] = sj - cc * sj * sj * xj * xj
        else:
            SG[q] = inv_diag_update(sj, cc, xj * xj)
        cb += MU[q] + SG[q]
    return ca + cb


cdef inline void blk_diag_restore(double* mu, double* sg, const double* save,
                                  const int* idx, Py_ssize_t nnz,
                                  Py_ssize_t D, Py_ssize_t ks) noexcept nogil:
    cdef Py_ssize_t j, p
    for j in range(nnz + 1):
        p = idx[j] * ks if j < nnz else (D - 1) * ks
        mu[p] = save[2 * j]
        sg[p] = save[2 * j + 1]


cdef inline void blk_sigma_only(double* sg, double cc, bint direct, const double* x,
                                const int* idx, Py_ssize_t nnz, double bias,
                                Py_ssize_t D, Py_ssize_t ks) noexcept nogil:
    """The diagonal covariance update alone on one block (see blk_diag_step)."""
    cdef Py_ssize_t j, p
    cdef double xj, sj
    for j in range(nnz + 1):
        if j < nnz:
            p = idx[j] * ks
            xj = x[j]
        else:
            p = (D - 1) * ks
            xj = bias
        sj = sg[p]
        if direct:
            sg[p] = sj - cc * sj * sj * xj * xj
        else:
            sg[p] = inv_diag_update(sj, cc, xj * xj)


def mc_diag_pass(RowView rows,
                 const Py_ssize_t[::1] y,
                 const Py_ssize_t[::1] order, double bias, bint ovr,
                 double[:, ::1] MU, double[:, ::1] SG, int rule, double phi, double r,
                 bint direct, bint sum_update):
    """One multi-class pass of a diagonal rule: CW-Var, CW-Stdev, AROW, AROW-H.

    top1: the binary step on Delta (label +1), m = mu_y.x - mu_c.x,
    v = v_y + v_c; the covariance update acts on blocks y and c with x^2.
    With `sum_update` (AROW, S000 eqs. 29-30) the covariance is instead updated
    with f = sum_y f(x, y), i.e. every block with x^2 (direct: beta = 1/(r + sum_c v_c)).
    ovr: the binary rule on every block with label +1 for y and -1 otherwise.
    Returns (rounds, mistakes, updates, loss_sum, status, position).
    """
    cdef Hyper h
    h.rule = rule
    h.phi = phi
    h.r = r
    h.direct = direct
    cdef Py_ssize_t K = MU.shape[1], D = MU.shape[0], k, nnz, i, c, yi, yhat
    cdef Py_ssize_t rounds = 0, mistakes = 0, updates = 0, pos = -1, sv
    cdef int status = OK
    cdef const double* x
    cdef const int* idx
    cdef double m, v, vy = 0.0, alpha, cc, chk, yc, vsum, loss_sum = 0.0
    cdef Workspace ws = Workspace()
    cdef Py_ssize_t nsave = max_row_nnz(&rows.R, order) + 1
    cdef double* work = ws.doubles(4 * K + (2 * K if ovr else 4) * nsave)
    cdef bint warm
    cdef NextRow nr
    nr.nnz = 0
    nr.idx = NULL
    nr.y = 0
    cdef double* sc = &work[0]          # scores mu_c . x
    cdef double* al = &work[K]          # ovr: alpha y_c per class
    cdef double* cs = &work[2 * K]      # ovr: covariance coefficient per class
    cdef double* vs = &work[3 * K]      # ovr / sum update: v_c per class
    cdef double* save = &work[4 * K]    # old (mu, sigma) of updated coordinates
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&rows.R, i, &x, &idx)
            sv = 2 * (nnz + 1)
            if ovr or sum_update:
                all_dots(&MU[0, 0], K, x, idx, nnz, bias, D, sc, &SG[0, 0], -1)
                all_sqdots(&SG[0, 0], K, x, idx, nnz, bias, D, vs)
                if not all_finite(vs, K):
                    status = NONFINITE_INPUT
                    pos = i
                    break
                vy = vs[y[i]]                  # = blk_sqdot of block y, bit for bit
            else:
                # top1: v_y in the same walk, v_c once c is known
                warm = nr.nnz < MC_AHEAD
                next_row(&rows.R, &order[0], order.shape[0], k, &y[0], &nr)
                row_dots(&MU[0, 0], K, x, idx, nnz, bias, D, sc, warm, &nr, &SG[0, 0], y[i],
                         &vy)
            if not all_finite(sc, K):
                status = NONFINITE_INPUT
                pos = i
                break
            yi = y[i]
            yhat = argmax_first(sc, K)
            if not ovr:
                c = competitor(sc, K, yi)
                m = sc[yi] - sc[c]
                v = vy + (vs[c] if sum_update else blk_sqdot(&SG[0, c], x, idx, nnz, bias, D, K))
                if not isfinite(v):
                    status = NONFINITE_INPUT
                    pos = i
                    break
                rounds += 1
                if yhat != yi:
                    mistakes += 1
                if m < 1.0:
                    loss_sum += 1.0 - m
                alpha = so_step(&h, m, v, &cc)
                if alpha == 0.0:
                    continue
                if sum_update:
                    cc = 0.0                   # covariance updated below, with f
                chk = pair_diag_step(&MU[0, 0], &SG[0, 0], K, yi, c, alpha, cc, direct, x,
                                     idx, nnz, bias, D, save)
                if not isfinite(chk):
                    blk_diag_restore(&MU[0, c], &SG[0, c], save + sv, idx, nnz, D, K)
                    blk_diag_restore(&MU[0, yi], &SG[0, yi], save, idx, nnz, D, K)
                    status = NONFINITE_STATE
                    pos = i
                    rounds -= 1
                    break
                if sum_update:
                    # S000 eqs. 29-30 with f = x~ tiled K times: f^T Sigma f = sum_c v_c
                    if direct:
                        vsum = 0.0
                        for c in range(K):
                            vsum += vs[c]
                        cc = 1.0 / (vsum + r)  # r > 0
                    else:
                        cc = 1.0 / r           # r > 0
                    for c in range(K):
                        blk_sigma_only(&SG[0, c], cc, direct, x, idx, nnz, bias, D, K)
                updates += 1
                continue
            # -- ovr
            rounds += 1
            if yhat != yi:
                mistakes += 1
            for c in range(K):
                yc = 1.0 if c == yi else -1.0
                m = yc * sc[c]
                if m < 1.0:
                    loss_sum += 1.0 - m
                al[c] = so_step(&h, m, vs[c], &cs[c]) * yc
            chk = 0.0
            for c in range(K):
                if al[c] != 0.0:
                    chk += blk_diag_step(&MU[0, c], &SG[0, c], al[c], cs[c], direct, x, idx,
                                         nnz, bias, D, save + c * sv, K)
            if not isfinite(chk):
                for c in range(K):
                    if al[c] != 0.0:
                        blk_diag_restore(&MU[0, c], &SG[0, c], save + c * sv, idx, nnz, D, K)
                status = NONFINITE_STATE
                pos = i
                rounds -= 1
                break
            for c in range(K):
                if al[c] != 0.0:
                    updates += 1
    return rounds, mistakes, updates, loss_sum, status, pos


cdef inline double sop_blk_score(const double* vv, const double* A, const double* x,
                                 const int* idx, Py_ssize_t nnz, double bias,
                                 Py_ssize_t D, Py_ssize_t ks) noexcept nogil:
    """Diagonal SOP score of one block: sum_i vv_i x~_i / (A_i + x~_i^2)."""
    cdef double s = vv[(D - 1) * ks] * bias / (A[(D - 1) * ks] + bias * bias)      # A > 0
    cdef Py_ssize_t j, p
    for j in range(nnz):
        p = idx[j] * ks
        s += vv[p] * x[j] / (A[p] + x[j] * x[j])                   # A > 0
    return s


cdef inline void sop_blk_update(double* vv, double* A, double yc, const double* x,
                                const int* idx, Py_ssize_t nnz, double bias,
                                Py_ssize_t D, Py_ssize_t ks) noexcept nogil:
    cdef Py_ssize_t j, p
    for j in range(nnz):
        p = idx[j] * ks
        vv[p] += yc * x[j]
        A[p] += x[j] * x[j]
    vv[(D - 1) * ks] += yc * bias
    A[(D - 1) * ks] += bias * bias


def mc_sop_diag_pass(RowView rows,
                     const Py_ssize_t[::1] y,
                     const Py_ssize_t[::1] order, double bias, bint ovr,
                     double[:, ::1] VV, double[:, ::1] A):
    """One multi-class pass of the diagonal second-order perceptron.

    Class scores are the binary test rule on each block,
    s_c = sum_i vv_ci x_i / (A_ci + x_i^2).  top1: the binary SOP step on
    (Delta, +1), whose own score Delta^T (A + diag(Delta^2))^-1 vv is s_y - s_c
    (the diagonal splits over the two blocks); on an update vv_y += x, vv_c -= x,
    A_y += x^2, A_c += x^2.  ovr: the binary rule on every block.
    Returns (rounds, mistakes, updates, loss_sum, status, position).
    """
    cdef Py_ssize_t K = VV.shape[1], D = VV.shape[0], k, nnz, i, c, yi
    cdef Py_ssize_t rounds = 0, mistakes = 0, updates = 0, pos = -1
    cdef int status = OK
    cdef const double* x
    cdef const int* idx
    cdef double m, yc, loss_sum = 0.0
    cdef Workspace ws = Workspace()
    cdef double* sc = ws.doubles(K)
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&rows.R, i, &x, &idx)
            for c in range(K):
                sc[c] = sop_blk_score(&VV[0, c], &A[0, c], x, idx, nnz, bias, D, K)
            if not all_finite(sc, K):
                status = NONFINITE_INPUT
                pos = i
                break
            yi = y[i]
            rounds += 1
            if argmax_first(sc, K) != yi:
                mistakes += 1
            if not ovr:
                c = competitor(sc, K, yi)
                m = sc[yi] - sc[c]
                if m < 1.0:
                    loss_sum += 1.0 - m
                if m > 0.0:
                    continue
                sop_blk_update(&VV[0, yi], &A[0, yi], 1.0, x, idx, nnz, bias, D, K)
                sop_blk_update(&VV[0, c], &A[0, c], -1.0, x, idx, nnz, bias, D, K)
                updates += 1
                continue
            for c in range(K):
                yc = 1.0 if c == yi else -1.0
                m = yc * sc[c]
                if m < 1.0:
                    loss_sum += 1.0 - m
                if m <= 0.0:
                    sop_blk_update(&VV[0, c], &A[0, c], yc, x, idx, nnz, bias, D, K)
                    updates += 1
    return rounds, mistakes, updates, loss_sum, status, pos


cdef inline void ada_blk_update(double* u, double* G, double yc, const double* x,
                                const int* idx, Py_ssize_t nnz, double bias,
                                Py_ssize_t D, Py_ssize_t ks) noexcept nogil:
    """Hinge subgradient g = -yc x~ on one block: u += g, G += g^2."""
    cdef Py_ssize_t j, p
    for j in range(nnz):
        p = idx[j] * ks
        u[p] -= yc * x[j]
        G[p] += x[j] * x[j]
    u[(D - 1) * ks] -= yc * bias
    G[(D - 1) * ks] += bias * bias


def mc_adagrad_pass(RowView rows,
                    const Py_ssize_t[::1] y,
                    const Py_ssize_t[::1] order, double bias, bint ovr,
                    double[:, ::1] U, double[:, ::1] G, double[::1] aux,
                    double eta, double lam, double delta):
    """One multi-class pass of diagonal AdaGrad-RDA with L1 on the hinge loss.

    top1: the multi-class hinge max(0, 1 - W.Delta) with the closest competitor
    c has the subgradient -Delta, so when W.Delta < 1: u_y -= x, u_c += x and
    G_y, G_c += x^2.  ovr: the binary rule on every block.  t counts rounds.
    Returns (rounds, mistakes, updates, loss_sum, status, position).
    """
    cdef Py_ssize_t K = U.shape[1], D = U.shape[0], k, j, nnz, i, c, yi
    cdef Py_ssize_t rounds = 0, mistakes = 0, updates = 0, pos = -1
    cdef int status = OK
    cdef const double* x
    cdef const int* idx
    cdef double m, yc, s, t = aux[AUX_T], loss_sum = 0.0
    cdef Workspace ws = Workspace()
    cdef double* sc = ws.doubles(K)
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&rows.R, i, &x, &idx)
            for c in range(K):
                s = rda_weight(U[D - 1, c], G[D - 1, c], t, eta, lam, delta) * bias
                for j in range(nnz):
                    s += rda_weight(U[idx[j], c], G[idx[j], c], t, eta, lam, delta) * x[j]
                sc[c] = s
            if not all_finite(sc, K):
                status = NONFINITE_INPUT
                pos = i
                break
            yi = y[i]
            rounds += 1
            t += 1.0
            if argmax_first(sc, K) != yi:
                mistakes += 1
            if not ovr:
                c = competitor(sc, K, yi)
                m = sc[yi] - sc[c]
                if m >= 1.0:
                    continue
                loss_sum += 1.0 - m
                ada_blk_update(&U[0, yi], &G[0, yi], 1.0, x, idx, nnz, bias, D, K)
                ada_blk_update(&U[0, c], &G[0, c], -1.0, x, idx, nnz, bias, D, K)
                updates += 1
                continue
            for c in range(K):
                yc = 1.0 if c == yi else -1.0
                m = yc * sc[c]
                if m < 1.0:
                    loss_sum += 1.0 - m
                    ada_blk_update(&U[0, c], &G[0, c], yc, x, idx, nnz, bias, D, K)
                    updates += 1
    aux[AUX_T] = t
    return rounds, mistakes, updates, loss_sum, status, pos


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
    cdef Py_ssize_t k, j, nnz, i, c, yi, yhat, rounds = 0, mistakes = 0, updates = 0
    cdef Py_ssize_t pos = -1
    cdef int status = OK
    cdef const double* x
    cdef const int* idx
    cdef double m, v, alpha, cc, ay, beta, chk, zmax, nbeta, yc, vf, loss_sum = 0.0
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
                status = NONFINITE_INPUT
                pos = i
                break
            yi = y[i]
            yhat = argmax_first(sc, K)
            if ovr:
                rounds += 1
                if yhat != yi:
                    mistakes += 1
                bad = False
                for c in range(K):
                    yc = 1.0 if c == yi else -1.0
                    m = yc * dt[c]
                    v = vc[c]
                    if m < 1.0:
                        loss_sum += 1.0 - m
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
                    status = NONFINITE_STATE
                    pos = i
                    rounds -= 1
                    break
                for c in range(K):
                    if ays[c] == 0.0:
                        continue
                    for j in range(D):
                        mu[c * D + j] += ays[c] * z[c * D + j]
                    nbeta = -bs[c]
                    dsyr(&uplo, &D, &nbeta, z + c * D, &one, S + c * D * D, &D)
                    updates += 1
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
                status = NONFINITE_INPUT
                pos = i
                break
            rounds += 1
            if yhat != yi:
                mistakes += 1
            if m < 1.0:
                loss_sum += 1.0 - m
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
                status = NONFINITE_STATE
                pos = i
                rounds -= 1
                break
            for j in range(KD):
                mu[j] += ay * z[j]
            nbeta = -beta
            dsyr(&uplo, &KD, &nbeta, zf if sum_update else z, &one, S, &KD)
            updates += 1
    return rounds, mistakes, updates, loss_sum, status, pos


def mc_row_scores(RowView rows,
                  double bias, const double[:, ::1] W,
                  const double[:, ::1] S2, double[:, ::1] out_m, double[:, ::1] out_v):
    """Test-time class scores w_c.x~ (and x~^T diag(s2_c) x~ when S2 is not empty)
    of a (D, K) state, out (n, K): the row walk of the training drivers, so
    dense == CSR bit for bit."""
    cdef Py_ssize_t K = W.shape[1], D = W.shape[0], i, nnz
    cdef bint quad = S2.shape[0] > 0, warm
    cdef const double* x
    cdef const int* idx
    cdef NextRow nr
    cdef const double* xn
    nr.nnz = 0
    nr.idx = NULL
    nr.y = 0
    with nogil:
        for i in range(out_m.shape[0]):
            nnz = get_row(&rows.R, i, &x, &idx)
            warm = nr.nnz < MC_AHEAD
            nr.nnz = get_row(&rows.R, i + 1, &xn, &nr.idx) if i + 1 < out_m.shape[0] else 0
            row_dots(&W[0, 0], K, x, idx, nnz, bias, D, &out_m[i, 0], warm, &nr)
            if quad:
                all_sqdots(&S2[0, 0], K, x, idx, nnz, bias, D, &out_v[i, 0])


# ---------------------------------------------------------------------------
# top-k (k-best MIRA for the PA family, S000 Fig. 2 eqs. 25-30 for AROW): the
# k highest-scoring competitors c_1..c_k (ties to the smaller label), losses
# l_j = 1 - w.Delta_j, and the dual max l^T a - a^T Q a / 2 over a box, solved
# per example by `hildreth_solve` (_qp.pxi) on preallocated buffers.

cdef double TOPK_QP_TOL = 1e-15
cdef Py_ssize_t TOPK_QP_MAX_ITER = 10000


cdef inline void top_competitors(const double* sc, Py_ssize_t K, Py_ssize_t y,
                                 Py_ssize_t kk, Py_ssize_t* comp,
                                 Py_ssize_t* taken) noexcept nogil:
    """comp[0..kk) = labels != y by decreasing score, ties to the smaller label."""
    cdef Py_ssize_t j, c, best
    for c in range(K):
        taken[c] = 0
    taken[y] = 1
    for j in range(kk):
        best = -1
        for c in range(K):
            if not taken[c] and (best < 0 or sc[c] > sc[best]):
                best = c
        comp[j] = best
        taken[best] = 1


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
    cdef Py_ssize_t rounds = 0, mistakes = 0, updates = 0, pos = -1, a_row, q
    cdef int status = OK
    cdef const double* x
    cdef const int* idx
    cdef double n, s, asum, lmax, chk, dn2, kkt, loss_sum = 0.0
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
                status = NONFINITE_INPUT
                pos = i
                break
            yi = y[i]
            rounds += 1
            aux[0, AUX_T] += 1.0
            if argmax_first(sc, K) != yi:
                mistakes += 1
            top_competitors(sc, K, yi, kk, comp, taken)
            lmax = 0.0
            for j in range(kk):
                b[j] = 1.0 - (sc[yi] - sc[comp[j]])
                lmax = max(lmax, b[j])
            if b[0] > 0.0:
                loss_sum += b[0]
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
                status = QP_NOT_CONVERGED
                pos = i
                rounds -= 1
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
                        blk_restore(&V[0, comp[j]], save + (j + 1) * (nnz + 1), idx, nnz, D, K)
                blk_restore(&V[0, yi], save, idx, nnz, D, K)
                status = NONFINITE_STATE
                pos = i
                rounds -= 1
                aux[0, AUX_T] -= 1.0
                break
            aux[0, AUX_VN2] += dn2
            updates += 1
    return rounds, mistakes, updates, loss_sum, status, pos


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
    cdef Py_ssize_t rounds = 0, mistakes = 0, updates = 0, pos = -1
    cdef int status = OK
    cdef const double* x
    cdef const int* idx
    cdef double n, asum, lmax, chk, kkt, cc, vsum, zmax, nbeta, loss_sum = 0.0
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
                status = NONFINITE_INPUT
                pos = i
                break
            yi = y[i]
            rounds += 1
            if argmax_first(sc, K) != yi:
                mistakes += 1
            top_competitors(sc, K, yi, kk, comp, taken)
            lmax = 0.0
            for j in range(kk):
                b[j] = 1.0 - (sc[yi] - sc[comp[j]])
                lmax = max(lmax, b[j])
            if b[0] > 0.0:
                loss_sum += b[0]
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
                status = NONFINITE_INPUT
                pos = i
                rounds -= 1
                break
            if hildreth_solve(Q, b, lo, hi, a, kk, TOPK_QP_TOL, TOPK_QP_MAX_ITER, qw, qiw,
                              &kkt, &nit, &where) != OK:
                status = QP_NOT_CONVERGED
                pos = i
                rounds -= 1
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
                    status = NONFINITE_STATE
                    pos = i
                    rounds -= 1
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
                updates += 1
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
                status = NONFINITE_STATE
                pos = i
                rounds -= 1
                break
            for p in range(KD):
                mu[p] += u[p]
            nbeta = -cc
            dsyr(&uplo, &KD, &nbeta, g, &one, S, &KD)
            updates += 1
    return rounds, mistakes, updates, loss_sum, status, pos


def mc_sop_scores(RowView rows,
                  double bias, const double[:, ::1] VV,
                  const double[:, ::1] A, double[:, ::1] out):
    """Test-time class scores of the diagonal SOP, (D, K) state, out (n, K):
    sum_i vv_ci x_i / (A_ci + x_i^2) per class ([SOP05] Fig. 3.1, per block)."""
    cdef Py_ssize_t K = VV.shape[1], D = VV.shape[0], i, c, nnz
    cdef const double* x
    cdef const int* idx
    with nogil:
        for i in range(out.shape[0]):
            nnz = get_row(&rows.R, i, &x, &idx)
            for c in range(K):
                out[i, c] = sop_blk_score(&VV[0, c], &A[0, c], x, idx, nnz, bias, D, K)
