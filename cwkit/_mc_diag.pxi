# Multi-class drivers with a diagonal state on the 1-of-k map: CW / AROW
# (mu, sigma), the diagonal second-order Perceptron and AdaGrad-RDA, each (D, K).
# CW / AROW's mu, sigma and lazy sum U are views of one array whose row p holds
# coordinate p's K means, K variances and K sums (`feature_stride`): the rows of
# all three at one stride ld, what a row's update touches in a few adjacent lines.
#
# Provides: diag_coord, blk_diag_step, blk_diag_restore, sum_sigma_update, avg_blk,
# feature_stride (also used by the top-k AROW driver), mc_diag_pass and its loop mc_diag_rows (also
# run by `NamedOne`, _named.pxi), the driver of the additive rules (additive_pass,
# averaged by add_average: mc_sop_diag_pass, mc_adagrad_pass), mc_sop_scores.
# Uses: RowView, get_row, max_row_nnz (_rows.pxi); Counts, count_argmax,
# newly_tiny, count_collapse, Workspace, sigma_step, restore_coords (_driver.pxi);
# Hyper, so_step, may_collapse, rda_weight, rda_sum, AUX_T (_binary.pxi); the 1-of-k walks
# (_mc_rows.pxi).


cdef inline bint diag_coord(double* mu, double* sg, double ay, double c, int direct,
                            double x, double* save) noexcept nogil:
    """One coordinate of a diagonal second-order update with feature value x:
    mu += ay sigma x, then `sigma_step`; the old (mu, sigma) go to save[0], save[1].
    Returns whether both new values are finite."""
    cdef double sj = sg[0]
    save[0] = mu[0]
    save[1] = sj
    mu[0] += ay * sj * x
    sg[0] = sigma_step(sj, c, direct, x)
    return isfinite(mu[0]) & isfinite(sg[0])


cdef inline double blk_diag_step(double* mu, double* sg, double ay, double cc, int direct,
                                 const double* x, const int* idx, Py_ssize_t nnz,
                                 double bias, Py_ssize_t D, double* save,
                                 Py_ssize_t ks, bint* tiny) noexcept nogil:
    """mu += ay Sigma x~ and the diagonal covariance update with coefficient cc
    (`sigma_step`) on one block (`diag_coord` per coordinate); old (mu, sigma)
    pairs go to save[0 .. 2 nnz + 1]; unless tiny is NULL, tiny |= whether a
    variance collapsed (`newly_tiny`).  Returns the sum of the new mu and sigma (a
    finiteness check)."""
    cdef Py_ssize_t j, p
    cdef double chk = 0.0
    cdef bint t = False                # (a local: tiny may alias the state)
    for j in range(nnz + 1):
        p = (idx[j] if j < nnz else D - 1) * ks
        diag_coord(mu + p, sg + p, ay, cc, direct, x[j] if j < nnz else bias, save + 2 * j)
        chk += mu[p] + sg[p]
        if tiny != NULL:
            t |= newly_tiny(save[2 * j + 1], sg[p])
    if t:
        tiny[0] = True
    return chk


cdef inline double pair_diag_step(double* MU, double* SG, Py_ssize_t ld, Py_ssize_t a,
                                  Py_ssize_t b, double alpha, double cc, int direct,
                                  const double* x, const int* idx, Py_ssize_t nnz,
                                  double bias, Py_ssize_t D, double* save,
                                  bint* tiny) noexcept nogil:
    """`blk_diag_step` with ay = alpha on block a and ay = -alpha on block b of a
    (D, K) state (rows at stride ld) in one walk of the row.  Old pairs go to
    save[0 .. 2 nnz + 1] (a) and from save + 2 (nnz + 1) (b), as for
    `blk_diag_restore`; returns the two blocks' check sums, each in
    `blk_diag_step`'s order, added; tiny as there."""
    cdef Py_ssize_t j, p
    cdef double xj, ca = 0.0, cb = 0.0
    cdef double* sb = save + 2 * (nnz + 1)
    cdef bint t = False                # (a local: tiny may alias the state)
    for j in range(nnz + 1):
        p = (idx[j] if j < nnz else D - 1) * ld
        xj = x[j] if j < nnz else bias
        diag_coord(MU + p + a, SG + p + a, alpha, cc, direct, xj, save + 2 * j)
        ca += MU[p + a] + SG[p + a]
        # mu + (-alpha) sj x_j = mu - alpha sj x_j exactly
        diag_coord(MU + p + b, SG + p + b, -alpha, cc, direct, xj, sb + 2 * j)
        cb += MU[p + b] + SG[p + b]
        if tiny != NULL:
            t |= newly_tiny(save[2 * j + 1], SG[p + a]) | newly_tiny(sb[2 * j + 1], SG[p + b])
    if t:
        tiny[0] = True
    return ca + cb


cdef inline void blk_diag_restore(double* mu, double* sg, const double* save,
                                  const int* idx, Py_ssize_t nnz,
                                  Py_ssize_t D, Py_ssize_t ks) noexcept nogil:
    cdef Py_ssize_t j, p
    for j in range(nnz + 1):
        p = idx[j] * ks if j < nnz else (D - 1) * ks
        mu[p] = save[2 * j]
        sg[p] = save[2 * j + 1]


cdef inline void blk_sigma_only(double* sg, double cc, int direct, const double* x,
                                const int* idx, Py_ssize_t nnz, double bias,
                                Py_ssize_t D, Py_ssize_t ks, bint* tiny) noexcept nogil:
    """The diagonal covariance update alone on one block (see blk_diag_step; tiny
    as there)."""
    cdef Py_ssize_t j, p
    cdef double old
    cdef bint t = False                # (a local: tiny may alias the state)
    for j in range(nnz + 1):
        p = (idx[j] if j < nnz else D - 1) * ks
        old = sg[p]
        sg[p] = sigma_step(old, cc, direct, x[j] if j < nnz else bias)
        if tiny != NULL:
            t |= newly_tiny(old, sg[p])
    if t:
        tiny[0] = True


cdef inline void sum_sigma_update(double* SG, Py_ssize_t K, Py_ssize_t ld, const double* vs,
                                  double r,
                                  bint direct, const double* x, const int* idx,
                                  Py_ssize_t nnz, double bias, Py_ssize_t D,
                                  bint* tiny) noexcept nogil:
    """AROW's covariance update with f = x~ tiled K times ([AROW13] eqs. 29-30) on a
    (D, K) diagonal state: f^T Sigma f = sum_c v_c, every block with x~^2; tiny as
    for blk_diag_step."""
    cdef Py_ssize_t c
    cdef double cc, vsum = 0.0
    if direct:
        for c in range(K):
            vsum += vs[c]
        cc = 1.0 / (vsum + r)          # r > 0
    else:
        cc = 1.0 / r                   # r > 0
    for c in range(K):
        blk_sigma_only(SG + c, cc, direct, x, idx, nnz, bias, D, ld, tiny)


cdef inline void avg_blk(double* U, const double* MU, const double* save, const int* idx,
                         Py_ssize_t nnz, Py_ssize_t D, Py_ssize_t ks, double t) noexcept nogil:
    """Averaging: U += t (mu new - old) over the coordinates of a row (and the intercept)
    of one block, the old (mu, sigma) pairs in save as `blk_diag_step` left them."""
    cdef Py_ssize_t j, p
    for j in range(nnz + 1):
        p = (idx[j] if j < nnz else D - 1) * ks
        U[p] += t * (MU[p] - save[2 * j])


cdef inline bint diag_top1_round(const Hyper* h, double* MU, double* SG, Py_ssize_t K,
                                 Py_ssize_t ld, Py_ssize_t D, const double* x, const int* idx,
                                 Py_ssize_t nnz, double bias, const double* sc,
                                 const double* vs, double vy, Py_ssize_t yi, bint sum_update,
                                 double* save, Counts* cnt, Py_ssize_t i, double* U,
                                 double t) noexcept nogil:
    """top1: the binary step on Delta (label +1) against the closest competitor c;
    v = v_y + v_c; averaging (U not NULL) of round t.  Returns True to stop the pass
    at row i."""
    cdef Py_ssize_t c = competitor(sc, K, yi)
    cdef double m = sc[yi] - sc[c], v, alpha, cc
    cdef bint tiny = False
    v = vy + (vs[c] if sum_update else
              blk_sqdot_ahead(SG + c, x, idx, nnz, bias, D, ld, U + c if U != NULL else NULL))
    if not isfinite(v):
        fail_row(cnt, NONFINITE_INPUT, i)
        return True
    count_argmax(cnt, sc, K, yi, i)
    count_hinge(cnt, m)
    alpha = so_step(h, m, v, &cc)
    if alpha == 0.0:
        return False
    if sum_update:
        cc = 0.0                       # covariance updated below, with f
    cdef bint* watch = &tiny if may_collapse(h.rule, h.direct) else NULL
    if not isfinite(pair_diag_step(MU, SG, ld, yi, c, alpha, cc, h.direct, x, idx, nnz, bias,
                                   D, save, watch)):
        blk_diag_restore(MU + c, SG + c, save + 2 * (nnz + 1), idx, nnz, D, ld)
        blk_diag_restore(MU + yi, SG + yi, save, idx, nnz, D, ld)
        fail_round(cnt, NONFINITE_STATE, i)
        return True
    if sum_update:       # (r / s: the importance weight's r, see `so_step`)
        sum_sigma_update(SG, K, ld, vs, h.r / h.s, h.direct, x, idx, nnz, bias, D, watch)
    if U != NULL:
        avg_blk(U + yi, MU + yi, save, idx, nnz, D, ld, t)
        avg_blk(U + c, MU + c, save + 2 * (nnz + 1), idx, nnz, D, ld, t)
    count_collapse(cnt, tiny, i)
    cnt.updates += 1
    return False


cdef inline bint diag_ovr_round(const Hyper* h, double* MU, double* SG, Py_ssize_t K,
                                Py_ssize_t ld, Py_ssize_t D, const double* x, const int* idx,
                                Py_ssize_t nnz, double bias, const double* sc,
                                const double* vs, Py_ssize_t yi, double* al, double* cs,
                                double* save, Counts* cnt, Py_ssize_t i, double* U,
                                double t) noexcept nogil:
    """ovr: the binary rule on every block with label +1 for y and -1 otherwise,
    every step from the pre-update scores; averaging (U not NULL) of round t.
    Returns True to stop the pass at row i."""
    cdef Py_ssize_t c, sv = 2 * (nnz + 1)
    cdef double yc, m, chk = 0.0
    cdef bint tiny = False
    cdef bint* watch = &tiny if may_collapse(h.rule, h.direct) else NULL
    count_argmax(cnt, sc, K, yi, i)
    for c in range(K):
        yc = 1.0 if c == yi else -1.0
        m = yc * sc[c]
        count_hinge(cnt, m)
        al[c] = so_step(h, m, vs[c], &cs[c]) * yc
    for c in range(K):
        if al[c] != 0.0:
            chk += blk_diag_step(MU + c, SG + c, al[c], cs[c], h.direct, x, idx, nnz, bias, D,
                                 save + c * sv, ld, watch)
    if not isfinite(chk):
        for c in range(K):
            if al[c] != 0.0:
                blk_diag_restore(MU + c, SG + c, save + c * sv, idx, nnz, D, ld)
        fail_round(cnt, NONFINITE_STATE, i)
        return True
    count_collapse(cnt, tiny, i)
    for c in range(K):
        if al[c] != 0.0:
            if U != NULL:
                avg_blk(U + c, MU + c, save + c * sv, idx, nnz, D, ld, t)
            cnt.updates += 1
    return False


cdef Py_ssize_t feature_stride(double[:, :] MU, double[:, :] SG,
                               double[:, :] U) except -1:
    """The distance (in doubles) from one feature's row to the next that the (D, K)
    arrays of a diagonal state share (U, the lazy sum of averaging, (D + 1, K), when
    not empty): the model keeps a feature's means, variances and sums side by side in
    one row, each array a view of its columns; a class's entries adjacent in every
    row."""
    cdef Py_ssize_t f = sizeof(double)
    if (MU.strides[1] != f or SG.strides[1] != f or SG.strides[0] != MU.strides[0]
            or U.shape[0] > 0 and (U.strides[1] != f or U.strides[0] != MU.strides[0])
            or MU.strides[0] % f):
        raise ValueError("a diagonal multi-class state's arrays must share their row "
                         "stride, the classes of a row adjacent")
    return MU.strides[0] // f


def mc_diag_pass(RowView rows not None, const Py_ssize_t[::1] y,
                 const Py_ssize_t[::1] order, double bias, bint ovr,
                 double[:, :] MU, double[:, :] SG, int rule, double phi, double r,
                 int direct, bint sum_update, double[:, :] U, double C=0.0):
    """One multi-class pass of a diagonal rule: CW-Var, CW-Stdev, AROW, AROW-H, SCW-I,
    SCW-II, NHERD (C: the last three's; `direct`: the DiagUpdate of `sigma_step`).

    top1: the binary step on Delta (label +1), m = mu_y.x - mu_c.x,
    v = v_y + v_c; the covariance update acts on blocks y and c with x^2.
    With `sum_update` (AROW, [AROW13] eqs. 29-30) the covariance is instead updated
    with f = sum_y f(x, y), i.e. every block with x^2 (direct: beta = 1/(r + sum_c v_c)).
    ovr: the binary rule on every block with label +1 for y and -1 otherwise.
    Averaging (U (D + 1, K) not empty, U[D] = T): U[p, c] += t (mu new - old) over
    the coordinates an update touches ([FS99], as `diag_pass`).  MU, SG and U share
    their row stride (`feature_stride`).  The loop is `mc_diag_rows`.
    Returns (rounds, mistakes, updates, loss_sum, status, position, collapsed).
    """
    cdef Hyper h = hyper_second_order(rule, phi, r, direct)
    cdef Py_ssize_t K = MU.shape[1], ld = feature_stride(MU, SG, U)
    cdef Counts cnt = counts_start(rows)
    cdef Workspace ws = Workspace()
    cdef Py_ssize_t nsave = max_row_nnz(&rows.R, order) + 1
    cdef double* sc = ws.doubles(4 * K + (2 * K if ovr else 4) * nsave)
    h.C = C
    with nogil:
        mc_diag_rows(&rows.R, &cnt, &y[0] if y.shape[0] > 0 else NULL, order, bias, ovr,
                     &MU[0, 0], &SG[0, 0], K, ld, MU.shape[0], &h, sum_update,
                     &U[0, 0] if U.shape[0] > 0 else NULL, sc, nsave)
    return counts_result(&cnt)


cdef void mc_diag_rows(const Rows* R, Counts* cnt, const Py_ssize_t* y,
                       const Py_ssize_t[::1] order, double bias, bint ovr, double* mu,
                       double* sg, Py_ssize_t K, Py_ssize_t ld, Py_ssize_t D, Hyper* h,
                       bint sum_update, double* up, double* sc,
                       Py_ssize_t nsave) noexcept nogil:
    """The loop of `mc_diag_pass` over `order`'s rows of R (labels y): the states mu,
    sigma (D, K) and the lazy sum up (NULL: no averaging; (D + 1, K), its last row
    T), rows at stride ld (`feature_stride`), updated in place, the rounds counted
    in cnt; `sc` holds 4 K + (2 K if ovr else 4) `nsave` doubles, `nsave` the
    longest row's entries plus one."""
    cdef double t = up[D * ld] if up != NULL else 0.0
    cdef Py_ssize_t k, nnz, i
    cdef const double* x
    cdef const int* idx
    cdef double vy = 0.0
    cdef bint stop
    cdef double* al = sc + K            # ovr: alpha y_c per class
    cdef double* cs = sc + 2 * K        # ovr: covariance coefficient per class
    cdef double* vs = sc + 3 * K        # ovr / sum update: v_c per class
    cdef double* save = sc + 4 * K      # old (mu, sigma) of updated coordinates
    cdef NextRow nr = no_next_row()
    for k in range(order.shape[0]):
        i = order[k]
        nnz = get_row(R, i, &x, &idx)
        if ovr or sum_update:
            all_dots(mu, K, ld, x, idx, nnz, bias, D, sc, sg, -1)
            all_sqdots(sg, K, ld, x, idx, nnz, bias, D, vs)
            if not all_finite(vs, K):
                fail_row(cnt, NONFINITE_INPUT, i)
                break
            vy = vs[y[i]]                  # = blk_sqdot of block y, bit for bit
        else:
            # top1: v_y in the same walk, v_c once c is known; averaging: the
            # lazy sum's entries of y prefetched in this walk, of c in v_c's
            walk_row(R, &order[0], order.shape[0], k, y, &nr, mu, K, ld, x, idx, nnz, bias,
                     D, sc, sg, y[i], &vy, up)
        if not all_finite(sc, K):
            fail_row(cnt, NONFINITE_INPUT, i)
            break
        h.s = row_weight(cnt, i)
        if ovr:
            stop = diag_ovr_round(h, mu, sg, K, ld, D, x, idx, nnz, bias, sc, vs, y[i], al, cs,
                                  save, cnt, i, up, t + 1.0)
        else:
            stop = diag_top1_round(h, mu, sg, K, ld, D, x, idx, nnz, bias, sc, vs, vy, y[i],
                                   sum_update, save, cnt, i, up, t + 1.0)
        if stop:
            break
        t += 1.0
    if up != NULL:
        for k in range(K):
            up[D * ld + k] = t


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


cdef enum:
    # the two rules whose update adds +-x~ and x~^2 to two per-block accumulators
    ADD_SOP = 0         # [SOP05] Fig. 3.1 per block: vv += y x~, A += x~^2 when m <= 0
    ADD_ADAGRAD = 1     # [DHS11] RDA, hinge loss: u -= y x~, G += x~^2 when m < 1


cdef struct Additive:
    # the rule of `additive_pass`: its kind, t (rounds seen), AdaGrad's eta, lambda,
    # delta; averaging (avg not NULL, n the size of a state, D K): SOP's lazy sum of
    # vv / A, or AdaGrad's sums and the rounds they reach (`adagrad_pass`); w the
    # importance weight of the round (1 unweighted)
    int kind
    double t, eta, lam, delta, w
    double* avg
    Py_ssize_t n


cdef inline double add_score(const Additive* a, const double* P, const double* Q,
                             const double* x, const int* idx, Py_ssize_t nnz, double bias,
                             Py_ssize_t D, Py_ssize_t ks) noexcept nogil:
    """The score of one block (P, Q) = (vv, A) or (u, G), coordinate p at p ks."""
    cdef Py_ssize_t j, p
    cdef double s
    if a.kind == ADD_SOP:
        return sop_blk_score(P, Q, x, idx, nnz, bias, D, ks)
    p = (D - 1) * ks
    s = rda_weight(P[p], Q[p], a.t, a.eta, a.lam, a.delta) * bias
    for j in range(nnz):
        p = idx[j] * ks
        s += rda_weight(P[p], Q[p], a.t, a.eta, a.lam, a.delta) * x[j]
    return s


cdef inline void add_average(const Additive* a, double* P, double* Q, double s,
                             const double* x, const int* idx, Py_ssize_t nnz, double bias,
                             Py_ssize_t D, Py_ssize_t ks, Py_ssize_t off) noexcept nogil:
    """`add_update` (P += s w x~, Q += w x~^2 or (w x~)^2) of an averaged model in
    round a.t, one coordinate at a time: SOP adds t (new - old vv_p / A_p) to its lazy sum
    (`sop_diag_pass`); AdaGrad first sums the rounds before this one with the old
    (u_p, G_p) in closed form (`adagrad_pass`)."""
    cdef Py_ssize_t j, p
    cdef double xj, xw, old = 0.0
    # SOP's lazy sum is shaped as the state; AdaGrad's (sum, round) pairs interleaved
    cdef double* acc = a.avg + (off if a.kind == ADD_SOP else 2 * off)
    for j in range(nnz + 1):
        p = (idx[j] if j < nnz else D - 1) * ks
        xj = x[j] if j < nnz else bias
        xw = a.w * xj
        if a.kind == ADD_SOP:
            old = P[p] / Q[p]                                  # A > 0
        else:
            acc[2 * p] += rda_sum(P[p], Q[p], acc[2 * p + 1] + 1.0, a.t - 1.0, a.eta,
                                  a.lam, a.delta)
            acc[2 * p + 1] = a.t - 1.0
        P[p] += s * xw
        Q[p] += xw * (xj if a.kind == ADD_SOP else xw)
        if a.kind == ADD_SOP:
            acc[p] += a.t * (P[p] / Q[p] - old)


cdef inline void add_update(const Additive* a, double* P, double* Q, double yc,
                            const double* x, const int* idx, Py_ssize_t nnz, double bias,
                            Py_ssize_t D, Py_ssize_t ks, Py_ssize_t off) noexcept nogil:
    """The update of one block with label yc and importance weight w = a.w: P += yc w x~
    (SOP) or P -= yc w x~ (the subgradient g = -yc w x~ of the weighted hinge,
    AdaGrad; the same sums as P += (-yc) w x~), and Q += w x~^2 (SOP: the row
    counted w times) or Q += (w x~)^2 (AdaGrad: the squared subgradient).
    Averaging (a.avg not NULL; P, Q at offset `off` of the state) as
    `add_average`."""
    cdef Py_ssize_t j, p
    cdef double s = yc if a.kind == ADD_SOP else -yc, xw
    cdef bint sop = a.kind == ADD_SOP
    if a.avg != NULL:
        add_average(a, P, Q, s, x, idx, nnz, bias, D, ks, off)
        return
    for j in range(nnz):
        p = idx[j] * ks
        xw = a.w * x[j]
        P[p] += s * xw
        Q[p] += xw * (x[j] if sop else xw)
    xw = a.w * bias
    P[(D - 1) * ks] += s * xw
    Q[(D - 1) * ks] += xw * (bias if sop else xw)


cdef inline bint add_moves(const Additive* a, double m) noexcept nogil:
    """Whether the rule updates at margin m: SOP on a mistake, AdaGrad on a loss
    (neither with a weight 0)."""
    if a.w == 0.0:
        return False
    return m <= 0.0 if a.kind == ADD_SOP else m < 1.0


cdef inline void add_round(const Additive* a, double* P, double* Q, Py_ssize_t K,
                           Py_ssize_t D, const double* x, const int* idx, Py_ssize_t nnz,
                           double bias, const double* sc, Py_ssize_t yi, bint ovr,
                           Counts* cnt) noexcept nogil:
    """top1: against the closest competitor c, block y with label +1 and block c
    with -1; ovr: every block, label +1 for y and -1 otherwise."""
    cdef Py_ssize_t c
    cdef double yc, m
    if not ovr:
        c = competitor(sc, K, yi)
        m = sc[yi] - sc[c]
        count_hinge(cnt, m)
        if add_moves(a, m):
            add_update(a, P + yi, Q + yi, 1.0, x, idx, nnz, bias, D, K, yi)
            add_update(a, P + c, Q + c, -1.0, x, idx, nnz, bias, D, K, c)
            cnt.updates += 1
        return
    for c in range(K):
        yc = 1.0 if c == yi else -1.0
        m = yc * sc[c]
        count_hinge(cnt, m)
        if add_moves(a, m):
            add_update(a, P + c, Q + c, yc, x, idx, nnz, bias, D, K, c)
            cnt.updates += 1


cdef tuple additive_pass(RowView rows, const Py_ssize_t[::1] y, const Py_ssize_t[::1] order,
                         double bias, bint ovr, double[:, ::1] P, double[:, ::1] Q,
                         Additive* a):
    """One multi-class pass of an `Additive` rule on the (D, K) states P, Q (the
    driver of `mc_sop_diag_pass` and `mc_adagrad_pass`)."""
    cdef Py_ssize_t K = P.shape[1], D = P.shape[0], k, nnz, i, c
    cdef Counts cnt = counts_start(rows)
    cdef const double* x
    cdef const int* idx
    cdef double* p = &P[0, 0]
    cdef double* q = &Q[0, 0]
    cdef Workspace ws = Workspace()
    cdef double* sc = ws.doubles(K)
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&rows.R, i, &x, &idx)
            for c in range(K):
                sc[c] = add_score(a, p + c, q + c, x, idx, nnz, bias, D, K)
            if not all_finite(sc, K):
                fail_row(&cnt, NONFINITE_INPUT, i)
                break
            count_argmax(&cnt, sc, K, y[i], i)
            a.t += 1.0                         # AdaGrad: rounds seen
            a.w = row_weight(&cnt, i)
            add_round(a, p, q, K, D, x, idx, nnz, bias, sc, y[i], ovr, &cnt)
    return counts_result(&cnt)


def mc_sop_diag_pass(RowView rows not None,
                     const Py_ssize_t[::1] y,
                     const Py_ssize_t[::1] order, double bias, bint ovr,
                     double[:, ::1] VV, double[:, ::1] A, double[::1] U):
    """One multi-class pass of the diagonal second-order perceptron.

    Class scores are the binary test rule on each block,
    s_c = sum_i vv_ci x_i / (A_ci + x_i^2).  top1: the binary SOP step on
    (Delta, +1), whose own score Delta^T (A + diag(Delta^2))^-1 vv is s_y - s_c
    (the diagonal splits over the two blocks); on an update vv_y += x, vv_c -= x,
    A_y += x^2, A_c += x^2.  ovr: the binary rule on every block.  Averaging (U
    not empty: D K + 1 entries, U[D K] = T the rounds so far) as `sop_diag_pass`,
    U[:D K] the (D, K) lazy sum of vv / A.
    Returns (rounds, mistakes, updates, loss_sum, status, position, collapsed).
    """
    cdef Additive a
    a.kind = ADD_SOP
    a.n = VV.shape[0] * VV.shape[1]
    a.avg = &U[0] if U.shape[0] > 0 else NULL
    a.t = U[a.n] if a.avg != NULL else 0.0
    a.eta = a.lam = a.delta = 0.0
    out = additive_pass(rows, y, order, bias, ovr, VV, A, &a)
    if a.avg != NULL:
        U[a.n] = a.t
    return out


def mc_adagrad_pass(RowView rows not None,
                    const Py_ssize_t[::1] y,
                    const Py_ssize_t[::1] order, double bias, bint ovr,
                    double[:, ::1] U, double[:, ::1] G, double[::1] aux,
                    double eta, double lam, double delta, double[::1] acc):
    """One multi-class pass of diagonal AdaGrad-RDA with L1 on the hinge loss.

    top1: the multi-class hinge max(0, 1 - W.Delta) with the closest competitor
    c has the subgradient -Delta, so when W.Delta < 1: u_y -= x, u_c += x and
    G_y, G_c += x^2.  ovr: the binary rule on every block.  t counts rounds.
    Averaging (acc not empty, 2 D K entries) as `adagrad_pass` over the D K
    coordinates p of the (D, K) state, the pairs interleaved: the sum acc[2 p],
    the round it reaches acc[2 p + 1]; `rda_average` of the flat arrays is the mean.
    Returns (rounds, mistakes, updates, loss_sum, status, position, collapsed).
    """
    cdef Additive a
    a.kind = ADD_ADAGRAD
    a.n = U.shape[0] * U.shape[1]
    a.avg = &acc[0] if acc.shape[0] > 0 else NULL
    a.t = aux[AUX_T]
    a.eta = eta
    a.lam = lam
    a.delta = delta
    out = additive_pass(rows, y, order, bias, ovr, U, G, &a)
    aux[AUX_T] = a.t
    return out


def mc_sop_scores(RowView rows not None,
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
