# Binary drivers: one online pass over `order`, state updated in place.
#
# For a row x with label y: m = y mu.x, v = x^T Sigma x (diagonal: sum sigma_i
# x_i^2), n = ||x||^2, and a rule maps (m, v, n) to a step: mu += alpha y Sigma x,
# plus a covariance update.  The intercept is an augmented constant feature:
# coordinate D-1 of the state, with value `bias` (1.0, or 0.0 without intercept).
#
# Provides: Rule, Hyper, hyper_first_order, hyper_second_order, the AUX_*
# slots, the steps fo_step / fo_add / so_step /
# sherman_morrison_beta / rda_weight and may_collapse (also used by the
# multi-class drivers),
# the binary drivers and their test-time scores.
# Uses: RowView, get_row, row_ok, max_row_nnz, Ahead (_rows.pxi); Counts, count_margin,
# normal_pair, newly_tiny, any_newly_tiny, count_collapse, Workspace,
# scaled_rescale, sigma_step, restore_coords (_driver.pxi); Status
# (_status.pxi).

from libc.math cimport ceil


cpdef enum Rule:
    PERCEPTRON = 0
    AVG_PERCEPTRON = 1
    PA = 2
    PA1 = 3
    PA2 = 4
    PA_LS = 5
    REG_PA = 6
    L2_PA = 7
    SOFT_REG_PA = 8
    CW_VAR = 9
    CW_STDEV = 10
    AROW = 11
    AROW_H = 12
    SOP = 13
    ADAGRAD = 14
    SCW1 = 15
    SCW2 = 16
    NHERD = 17


cdef struct Hyper:
    int rule
    double C
    double alpha
    double beta
    double phi
    double r
    double eta
    double lam
    double delta
    int direct              # the diagonal covariance step, a DiagUpdate (AROW, NHERD)
    double s                # the importance weight of the round (1 unweighted)
    int task                # a Task: what a zero loss means for AROW (`so_step_loss`)


cdef inline Hyper hyper_first_order(int rule, double C, double alpha,
                                    double beta) noexcept nogil:
    """The hyperparameters of a first-order rule (`fo_step`); the others 0."""
    cdef Hyper h
    h.rule = rule
    h.C = C
    h.alpha = alpha
    h.beta = beta
    h.phi = 0.0
    h.r = 0.0
    h.eta = 0.0
    h.lam = 0.0
    h.delta = 0.0
    h.direct = False
    h.s = 1.0
    h.task = CLASSIFICATION
    return h


cdef inline Hyper hyper_second_order(int rule, double phi, double r,
                                     int direct) noexcept nogil:
    """The hyperparameters of a second-order rule (`so_step`); the others 0."""
    cdef Hyper h = hyper_first_order(rule, 0.0, 0.0, 0.0)
    h.phi = phi
    h.r = r
    h.direct = direct
    return h


# aux[] slots of the first-order and AdaGrad state (also `cwkit._core.AUX_*` in Python)
cpdef enum:
    AUX_S = 0               # scale factor: w = s * v
    AUX_VN2 = 1             # ||v||^2 (kept for l2-pa only)
    AUX_T = 2               # rounds seen (averaging, adagrad)
    # averaging a rule that shrinks w: S_t = s_1 + ... + s_t (a slot kept only then;
    # otherwise S_t = t, s being 1)
    AUX_SSUM = 3

cdef inline double hard_fraction(const Hyper* h) noexcept nogil:
    """The fraction min(s, 1) of its update that a rule with a hard constraint (pa,
    reg-pa, l2-pa, cw, cw-stdev, l1-pa) makes for importance weight s: the full
    update already meets the constraint, a larger step would overshoot it."""
    return min(h.s, 1.0)


cdef inline double fo_step(const Hyper* h, double m, double n, double wn2, double wx,
                           double* Z, int* status) noexcept nogil:
    """`fo_step_loss` of a classification round: the loss 1 - m of margin m."""
    return fo_step_loss(h, m, 1.0 - m, n, wn2, wx, Z, status)


cdef inline double fo_step_loss(const Hyper* h, double m, double loss, double n, double wn2,
                                double wx, double* Z, int* status) noexcept nogil:
    """First-order step size tau (w <- (w + tau y x) / Z); 0 means no update.

    m = y w.x, loss = 1 - m (the hinge's argument; a regression round's
    epsilon-insensitive loss |y - w.x| - epsilon, with y the direction
    sign(y - w.x) and m unused: PA, PA-I and PA-II of [PA06] Sect. 4 are the steps
    below on that loss), n = ||x||^2 (with the bias term), wn2 = ||w||^2 and wx = w.x
    (used by l2-pa only).  [PA06] Sect. 3 and [LMC09].  With an importance
    weight s = h.s (1: the rules as published, bit for bit): the loss term of
    the rule's objective scaled by s (C becomes s C); the perceptron's step
    scaled by s; for the hard constraints of pa, reg-pa, l2-pa the fraction
    f = min(s, 1) of their update (`hard_fraction`): tau becomes f tau and a
    shrink Z becomes 1 + f (Z - 1).
    """
    cdef double zz, den, tau
    Z[0] = 1.0
    if n <= 0.0:
        return 0.0                             # a zero row: no update
    if h.rule == PERCEPTRON or h.rule == AVG_PERCEPTRON:
        return h.s if m <= 0.0 else 0.0
    if h.rule == PA_LS:
        # [GPA13] eqs 7-9: applied on every round, tau may be negative.
        return loss / (n + 0.5 / (h.s * h.C))  # n + 1/(2 s C) > 0 (+inf for s = 0)
    if loss <= 0.0:
        return 0.0                             # no loss: passive
    if h.rule == PA:
        return hard_fraction(h) * (loss / n)
    if h.rule == PA1:
        return min(h.s * h.C, loss / n)
    if h.rule == PA2:
        return loss / (n + 0.5 / (h.s * h.C))
    if h.rule == REG_PA:
        Z[0] = 1.0 + hard_fraction(h) * h.alpha    # [LMC09] Lemma 3.1
        return hard_fraction(h) * ((loss + h.alpha) / n)
    if h.rule == SOFT_REG_PA:
        Z[0] = 1.0 + h.alpha                   # [LMC09] Lemma 5.1
        return (loss + h.alpha) / (n + (1.0 + h.alpha) / (2.0 * (h.s * h.C)))
    if h.rule == L2_PA:
        den = h.beta * h.beta * n - 1.0        # [LMC09] Lemma 3.2
        if den <= 0.0:
            status[0] = INFEASIBLE
            return 0.0
        zz = wn2 * n - wx * wx                 # >= 0 up to rounding (Cauchy-Schwarz)
        zz = sqrt(zz / den) if zz > 0.0 else 0.0
        Z[0] = zz if zz > 1.0 else 1.0
        tau = (loss + Z[0] - 1.0) / n
        if h.s < 1.0:                          # the shrink, as the step, in part
            Z[0] = 1.0 + h.s * (Z[0] - 1.0)
        return hard_fraction(h) * tau
    return 0.0


cdef inline bint fo_add(double* v, Py_ssize_t fs, double c, const double* x, const int* idx,
                        Py_ssize_t nnz, double bias, Py_ssize_t D, double* save,
                        bint track_norm, double* vn2) noexcept nogil:
    """v += c x~ (x~ = (x, bias); a feature's v every fs values), old values to
    save[0..nnz]; vn2 += the change of ||v||^2 when `track_norm`.  On overflow (or a
    non-finite c or ||v||^2) v is restored and False returned."""
    cdef Py_ssize_t j
    cdef double old, new, n2 = vn2[0]
    cdef bint finite = True    # an AND of flags: no serial floating-point chain
    for j in range(nnz):
        old = v[fs * idx[j]]
        save[j] = old
        new = old + c * x[j]
        v[fs * idx[j]] = new
        finite &= isfinite(new)
        if track_norm:
            n2 += new * new - old * old
    old = v[fs * (D - 1)]
    save[nnz] = old
    new = old + c * bias
    v[fs * (D - 1)] = new
    finite &= isfinite(new)
    if track_norm:
        n2 += new * new - old * old
    vn2[0] = n2
    if finite and isfinite(n2) and isfinite(c):
        return True
    restore_coords(v, save, idx, nnz, D, fs, 1)
    return False


# Averaging a rule that shrinks w = s v: v is rescaled (s <- 1) as soon as an update
# would take s below this, so that v never exceeds 1 / AVG_S_MIN times w and the
# lazy sum keeps its precision (O(D) every ~log(1/AVG_S_MIN) / log(Z) updates).
cdef double AVG_S_MIN = 1.0 / 256.0


cdef inline void avg_fold(double* v, double* u, Py_ssize_t n, Py_ssize_t stride, double s,
                          double S, Py_ssize_t cols=1) noexcept nogil:
    """Start an update of averaged w = s v made in w's units: u <- (S + 1) v - u
    (the sum of the weights so far) and v <- s v (= w); v and u: n rows `stride`
    apart of `cols` adjacent values.  `avg_unfold` ends it."""
    cdef Py_ssize_t j, c, q
    cdef double vj
    for j in range(n):
        for c in range(cols):
            q = j * stride + c
            vj = v[q]
            u[q] = (S + 1.0) * vj - u[q]
            v[q] = s * vj
    return


cdef inline double avg_unfold(double* v, double* u, Py_ssize_t n, Py_ssize_t stride,
                              double Z, Py_ssize_t cols=1) noexcept nogil:
    """End `avg_fold` once w + tau y x is in v: v <- v / Z (the new w, with s = 1) and
    u <- v - u, the lazy sum of the new v with S = 0 (then 1 after this round:
    (S + 1) v - u = w_1 + ... + w_t).  Returns ||v||^2, summed row after row."""
    cdef Py_ssize_t j, c, q
    cdef double vj, n2 = 0.0
    for j in range(n):
        for c in range(cols):
            q = j * stride + c
            vj = v[q] / Z
            v[q] = vj
            u[q] = vj - u[q]
            n2 += vj * vj
    return n2


def first_order_pass(RowView rows not None, const double[::1] y,
                     const Py_ssize_t[::1] order, double bias,
                     double[:, ::1] state, double[::1] aux,
                     int rule, double C, double alpha, double beta,
                     int task=CLASSIFICATION, double eps=0.0):
    """One pass of a first-order rule: perceptron, PA family, [LMC09] family.

    task=REGRESSION: y holds real targets and the PA family learns them with the
    epsilon-insensitive loss of tube half-width `eps` (`regression_round`).

    State: w = aux[AUX_S] * v (length D, intercept last), v the first column of
    `state` (D, 1), or when averaging (D, 2) with the lazy sum u in the second (a
    feature's v and u side by side: one cache line per nonzero).  Averaging: with
    S_t = s_1 + ... + s_t (aux[AUX_SSUM] when aux has that slot, else t: the scale
    of a rule that does not shrink stays 1), u accumulates
    (S_{t-1} + 1) Delta v_t over the coordinates an update touches, so that
    w_1 + ... + w_T = (S_T + 1) v_T - u_T (for the perceptron, u = sum_t t
    Delta_t of [FS99]); an update that takes s below AVG_S_MIN is made in w's
    units with v rescaled (`avg_fold`, `avg_unfold`).
    v (and u) is prefetched AHEAD_DIST nonzeros ahead of the scoring walk (`Ahead`).
    The loop is `first_order_rows`.
    Returns (rounds, mistakes, updates, loss_sum, status, position, collapsed).
    """
    cdef Hyper h = hyper_first_order(rule, C, alpha, beta)
    cdef Counts cnt = counts_start(rows, y)
    cdef Workspace ws = Workspace()
    cdef Py_ssize_t width = max_row_nnz(&rows.R, order) + 1
    # old values of the coordinates an update touches, to restore on overflow
    cdef double* save = ws.doubles(width)
    cdef int* ahead_buf = <int*>ws.flags(width * sizeof(int))
    with nogil:
        first_order_rows(&rows.R, &cnt, y, order, bias, &state[0, 0], state.shape[1],
                         state.shape[0], &aux[0], aux.shape[0] > AUX_SSUM,
                         &state[0, 1] if state.shape[1] > 1 else NULL, &h, task, eps, save,
                         ahead_buf)
    return counts_result(&cnt)


cdef void first_order_rows(const Rows* R, Counts* cnt, const double[::1] y,
                           const Py_ssize_t[::1] order, double bias, double* vp,
                           Py_ssize_t fs, Py_ssize_t D, double* aux, bint keep_sum,
                           double* up, Hyper* h, int task, double eps, double* save,
                           int* ahead_buf) noexcept nogil:
    """The loop of `first_order_pass` over `order`'s rows of R: the state v (D
    values, a feature's every fs values), aux (with its AUX_SSUM slot when
    `keep_sum`) and the lazy sum up (NULL: no averaging; D values every fs values,
    in v's rows) updated in place, the rounds counted in cnt; `save` and
    `ahead_buf` hold the longest row's entries plus one (the latter all 0)."""
    cdef Py_ssize_t k, j, nnz, i
    cdef const double* x
    cdef const int* idx
    cdef double dot, n, m, tau, Z, c, cu, n2, yi, loss
    cdef double s = aux[AUX_S], vn2 = aux[AUX_VN2], t = aux[AUX_T]
    cdef bint avg = up != NULL, track_norm = h.rule == L2_PA
    cdef double S = aux[AUX_SSUM] if keep_sum else t
    cdef Ahead ah
    cdef const int* pf
    ahead_start(&ah, R, order, ahead_buf, vp, fs, NULL)
    for k in range(order.shape[0]):
        i = order[k]
        nnz = get_row(R, i, &x, &idx)
        if R.unchecked and not row_ok(R, x, idx, nnz):
            fail_row(cnt, ROW_UNCHECKED, i)
            break
        pf = ahead_row(&ah, idx, nnz)
        dot = vp[fs * (D - 1)] * bias
        n = bias * bias
        for j in range(nnz):
            CWKIT_PREFETCH(vp + fs * <Py_ssize_t>pf[j])     # (v, u) share a line
            dot += vp[fs * idx[j]] * x[j]
            n += x[j] * x[j]
        if task == REGRESSION:
            m = 0.0
            if not regression_round(cnt, y[i], s * dot, n, eps, i, &yi, &loss):
                break
        else:
            yi = y[i]
            m = yi * s * dot
            if not count_margin(cnt, m, n, i):
                break
            loss = 1.0 - m
        t += 1.0
        h.s = row_weight(cnt, i)
        tau = fo_step_loss(h, m, loss, n, s * s * vn2, s * dot, &Z, &cnt.status)
        if cnt.status != OK:
            fail_round(cnt, cnt.status, i)
            break
        if tau != 0.0:
            # v <- v + (tau y / s) x  (so that w <- w + tau y x), then s <- s / Z
            c = tau * yi / s                   # s > 0 always (kept in [S_MIN, S_MAX])
            if not fo_add(vp, fs, c, x, idx, nnz, bias, D, save, track_norm, &vn2):
                fail_round(cnt, NONFINITE_STATE, i)
                break
            if avg and s / Z < AVG_S_MIN:
                # the update again in w's units (v + c x is finite, so is s v + tau y x)
                restore_coords(vp, save, idx, nnz, D, fs, 1)
                avg_fold(vp, up, D, fs, s, S)
                fo_add(vp, fs, tau * yi, x, idx, nnz, bias, D, save, False, &vn2)
                n2 = avg_unfold(vp, up, D, fs, Z)
                vn2 = n2 if track_norm else vn2
                s, S, Z = 1.0, 0.0, 1.0
            elif avg:
                cu = (S + 1.0) * c            # the perceptron's t c ([FS99])
                for j in range(nnz):
                    up[fs * idx[j]] += cu * x[j]
                up[fs * (D - 1)] += cu * bias
            cnt.updates += 1
            s = scaled_rescale(vp, D, fs, s / Z, &vn2)     # Z >= 1
        if avg:
            S += s
    aux[AUX_S] = s
    aux[AUX_VN2] = vn2
    aux[AUX_T] = t
    if keep_sum:
        aux[AUX_SSUM] = S


cdef inline double sherman_morrison_beta(double c, double v) noexcept nogil:
    """beta of Sigma <- Sigma - beta Sigma x x^T Sigma for Sigma^-1 += c x x^T:
    beta = c / (1 + c v), and its limit 1/v for c = inf."""
    if isinf(c):
        return 1.0 / v if v > 0.0 else 0.0
    return c / (1.0 + c * v)


cdef inline bint may_collapse(int rule, int direct) noexcept nogil:
    """Whether the variances of a diagonal rule can reach 0 in floating point, so
    that its driver notes the row where one collapses (`count_collapse`): CW-Var
    and CW-Stdev ([ECCW08]), SCW-I and SCW-II (CW-Stdev's covariance step), and AROW
    and NHERD with the subtractive DIAG_DIRECT update.  Their inverse updates
    1/sigma_i += c x_i^2, c bounded (1/r; 2C + C^2 v), and NHERD's DIAG_EXACT (1/sigma_i
    grows by at most 2 C x_i^2 + C^2 x_i^4 sigma_i) cannot with finite features."""
    return (rule == CW_VAR or rule == CW_STDEV or rule == SCW1 or rule == SCW2
            or direct == DIAG_DIRECT)


cdef inline double cw_stdev_alpha(double m, double v, double phi) noexcept nogil:
    """CW-Stdev's alpha before its clip at 0 ([ECCW08] eq. 14; [SCW12] Prop. 1 for
    SCW-I), in the rationalised form for m > 0."""
    cdef double psi = 1.0 + 0.5 * phi * phi, xi = 1.0 + phi * phi
    cdef double D = m * m * phi * phi * phi * phi * 0.25 + v * phi * phi * xi
    if m > 0.0:
        return (v * phi * phi - m * m) / (v * (m * psi + sqrt(D)))
    return (-m * psi + sqrt(D)) / (v * xi)


cdef inline double scw2_alpha(double m, double v, double phi, double C) noexcept nogil:
    """SCW-II's alpha before its clip at 0 ([SCW12] Prop. 2): with n = v + 1/(2C),
    gamma = phi sqrt(phi^2 m^2 v^2 + 4 n v (n + v phi^2)),
    alpha = (-(2 m n + phi^2 m v) + gamma) / (2 (n^2 + n v phi^2)); for m > 0 the
    rationalised 2 (phi^2 v - m^2) / (gamma + m (2 n + phi^2 v)), free of cancellation."""
    cdef double n = v + 0.5 / C, p2 = phi * phi
    cdef double gamma = phi * sqrt(p2 * m * m * v * v + 4.0 * n * v * (n + v * p2))
    if m > 0.0:
        return 2.0 * (p2 * v - m * m) / (gamma + m * (2.0 * n + p2 * v))
    return (gamma - m * (2.0 * n + p2 * v)) / (2.0 * n * (n + v * p2))


cdef inline double stdev_coefficient(double alpha, double v, double phi) noexcept nogil:
    """c = alpha phi / sqrt(u) of CW-Stdev's and SCW's covariance step
    1/sigma_i += c x_i^2 ([ECCW08] eqs. 12, 15; full: beta = c / (1 + c v), [SCW12]
    Prop. 1), with sqrt(u) = 2 v / (q + sqrt(q^2 + 4 v)), q = alpha v phi."""
    cdef double q = alpha * v * phi
    cdef double su = 2.0 * v / (q + sqrt(q * q + 4.0 * v))        # sqrt(u), eq 12; > 0
    return alpha * phi / su


cdef inline double so_step(const Hyper* h, double m, double v, double* c) noexcept nogil:
    """`so_step_loss` of a classification round: the loss 1 - m of margin m."""
    return so_step_loss(h, m, 1.0 - m, v, c)


cdef inline double so_step_loss(const Hyper* h, double m, double loss, double v,
                                double* c) noexcept nogil:
    """Second-order step: returns alpha (mu += alpha y Sigma x) and sets c, the
    coefficient of the diagonal update 1/sigma_i += c x_i^2.

    m = y mu.x and loss = 1 - m, the loss of AROW and NHERD; a regression round
    passes its absolute residual |y - mu.x| as the loss and the direction
    sign(y - mu.x) as y, and then AROW is recursive least squares ([AROW13]
    Sect. 3; [VC11]): alpha = loss / (v + r), i.e. mu += (y - mu.x) Sigma x / (v + r),
    and Sigma^-1 += x x^T / r on every round, a zero residual included (alpha = 0,
    c = 1/r: the caller updates Sigma when c != 0).

    For AROW and NHERD with DIAG_DIRECT, c is beta of sigma_i -= beta sigma_i^2 x_i^2;
    for NHERD with DIAG_EXACT, c = C of sigma_i <- sigma_i / (1 + C x_i^2 sigma_i)^2.
    Returns 0 when the rule makes no update.  With an importance weight s = h.s
    (1: the rules as published, bit for bit): AROW's loss terms 1/(2r) become
    s/(2r), i.e. r becomes r/s; CW, whose constraint is hard, takes
    `hard_fraction` alpha for its alpha (in the mean and the covariance step);
    SCW-I, SCW-II and NHERD scale their loss terms: C becomes s C.
    """
    cdef double phi = h.phi, q, disc, alpha, r, Cs
    c[0] = 0.0
    if v <= 0.0:
        return 0.0                             # Sigma x = 0: nothing can change
    if h.rule == AROW or h.rule == AROW_H:
        if loss <= 0.0 and h.task == CLASSIFICATION:
            return 0.0
        r = h.r / h.s                          # +inf for s = 0: no update
        if h.direct == DIAG_DIRECT:
            c[0] = 1.0 / (v + r)               # beta; v + r > 0
        else:
            c[0] = 1.0 / r                     # Sigma^-1 += x x^T / r ([AROW13] eq 14)
        if h.rule == AROW:
            return loss / (v + r)              # [AROW13] eq 16
        return min(0.5 / r, loss / v)          # [AROW13] eq 23; v > 0
    if h.rule == CW_VAR:
        # [CW08] Alg. 1, rationalised for q > 0.
        q = 1.0 + 2.0 * phi * m
        disc = (1.0 - 2.0 * phi * m) * (1.0 - 2.0 * phi * m) + 8.0 * phi * phi * v
        if q > 0.0:
            alpha = 2.0 * (phi * v - m) / (v * (q + sqrt(disc)))
        else:
            alpha = (-q + sqrt(disc)) / (4.0 * phi * v)   # phi > 0, v > 0
        if not alpha > 0.0:
            return 0.0
        alpha *= hard_fraction(h)
        c[0] = 2.0 * alpha * phi
        return alpha
    if h.rule == CW_STDEV:
        # [ECCW08] Fig. 1, eqs 14, 12, 15 with the rationalised forms.
        alpha = cw_stdev_alpha(m, v, phi)
        if not alpha > 0.0:
            return 0.0
        alpha *= hard_fraction(h)
        if alpha == 0.0:
            return 0.0
        c[0] = stdev_coefficient(alpha, v, phi)
        return alpha
    Cs = h.s * h.C
    if Cs == 0.0:
        return 0.0                             # a weight 0: no update
    if h.rule == SCW1 or h.rule == SCW2:
        # [SCW12] Props. 1, 2: an update iff phi sqrt(v) - m > 0, i.e. alpha > 0
        alpha = min(Cs, cw_stdev_alpha(m, v, phi)) if h.rule == SCW1 else scw2_alpha(
            m, v, phi, Cs)
        if not alpha > 0.0:
            return 0.0
        c[0] = stdev_coefficient(alpha, v, phi)
        return alpha
    if h.rule == NHERD:
        # [NHERD10], full update: alpha = l / (v + 1/C), Sigma^-1 += (2C + C^2 v) x x^T
        # (Sherman-Morrison of Sigma - (C^2 v + 2C) / (1 + C v)^2 Sigma x x^T Sigma);
        # diagonal DIAG_DIRECT ([NHERD10]'s "drop"): beta = (C^2 v + 2C) / (1 + C v)^2;
        # DIAG_EXACT ([NHERD10]'s "exact"): c = C (`sigma_step`)
        if loss <= 0.0:
            return 0.0
        q = Cs * (2.0 + Cs * v)
        if h.direct == DIAG_DIRECT:
            c[0] = q / ((1.0 + Cs * v) * (1.0 + Cs * v))
        elif h.direct == DIAG_EXACT:
            c[0] = Cs
        else:
            c[0] = q
        return loss / (v + 1.0 / Cs)
    return 0.0


cdef inline bint diag_row_finite(const double* w, Py_ssize_t fs, const int* idx,
                                 Py_ssize_t nnz, Py_ssize_t D) noexcept nogil:
    """Whether the (mu, sigma) pairs of a row's coordinates and of the intercept in
    the interleaved state w (a feature's pair every fs values) are all finite."""
    cdef Py_ssize_t j, p
    cdef bint finite = isfinite(w[fs * (D - 1)]) & isfinite(w[fs * (D - 1) + 1])
    for j in range(nnz):
        p = fs * idx[j]
        finite &= isfinite(w[p]) & isfinite(w[p + 1])
    return finite


cdef inline void diag_step(const double* om, const double* osg, const double* x,
                           Py_ssize_t nnz, double ay, double c, int direct,
                           double* nm, double* nsg) noexcept nogil:
    """The diagonal update of a row's coordinates from their old (mu, sigma), in
    contiguous arrays (om, osg), to the new ones (nm, nsg): mu += ay sigma x, then
    `sigma_step` with coefficient c, but without the guards of `inv_diag_update`
    (no branch in the loops: vectorised, two divisions at a time).  Where a guard
    applies and changes the quotient, the quotient is NaN (0 * inf in the
    denominator), so a pair that is not `normal_pair` is recomputed with
    `sigma_step` (`diag_put`)."""
    cdef Py_ssize_t j
    cdef double xj, sj, q
    if direct == DIAG_DIRECT:
        for j in range(nnz):
            xj = x[j]
            sj = osg[j]
            nm[j] = om[j] + ay * sj * xj
            nsg[j] = sj - c * sj * sj * xj * xj
    elif direct == DIAG_EXACT:
        for j in range(nnz):
            xj = x[j]
            sj = osg[j]
            nm[j] = om[j] + ay * sj * xj
            q = 1.0 + c * (xj * xj) * sj
            nsg[j] = sj / (q * q)
    else:
        for j in range(nnz):
            xj = x[j]
            sj = osg[j]
            nm[j] = om[j] + ay * sj * xj
            nsg[j] = sj / (1.0 + c * (xj * xj) * sj)


cdef inline bint diag_put(double* w, Py_ssize_t fs, const int* idx, const double* x,
                          Py_ssize_t nnz, const double* osg, double c, int direct,
                          const double* nm, double* nsg) noexcept nogil:
    """Write the new (mu, sigma) of `diag_step` into the interleaved state w (a
    feature's pair every fs values) at the row's coordinates, a pair that is not
    `normal_pair` with its variance from `sigma_step` (a second walk, taken only
    when one is not).  Returns whether every pair is `normal_pair`."""
    cdef Py_ssize_t j, p
    cdef bint normal = True
    for j in range(nnz):
        normal &= normal_pair(nm[j], nsg[j])
        p = fs * idx[j]
        w[p] = nm[j]
        w[p + 1] = nsg[j]
    if normal:
        return True
    for j in range(nnz):
        if not normal_pair(nm[j], nsg[j]):
            nsg[j] = sigma_step(osg[j], c, direct, x[j])
            w[fs * idx[j] + 1] = nsg[j]
    return False


def diag_pass(RowView rows not None, const double[::1] y,
              const Py_ssize_t[::1] order, double bias,
              double[:, ::1] state,
              int rule, double phi, double r, int direct, bint average, double C=0.0,
              int task=CLASSIFICATION):
    """One pass of a diagonal second-order rule: CW-Var, CW-Stdev, AROW, AROW-H,
    SCW-I, SCW-II, NHERD (C: the last three's); task=REGRESSION: AROW on real
    targets y, diagonal recursive least squares (`so_step_loss`).

    State: one array, a row per feature: state[i] = (mu_i, sigma_i), and with
    `average` (mu_i, sigma_i, u_i) and one more row whose u holds T, the rounds so
    far; a feature's mean, variance and lazy sum interleaved so that they share a
    cache line (one miss per nonzero instead of two or three), and that line
    prefetched AHEAD_DIST nonzeros before the scoring walk reaches it.

    The scoring walk copies the row's (mu, sigma) into contiguous buffers
    (`om`, `osg`: also what an overflow restores) as it reads them; an update is
    then two walks: the new pairs computed from the buffers (`diag_step`: no
    indirection, no branch, vectorised, the divisions of the covariance step two
    at a time), then written into the state (`diag_put`).  The rows' indices are
    unique (canonical), so this is the update made coordinate by coordinate,
    with the same arithmetic: the results are those of the one-walk loop, bit
    for bit, in less time (measured on the 200,000-row benchmark: 0.8 of the
    one-walk pass with the copy as a third walk over the state, and 0.9 of that
    with the copy made by the scoring walk, where the values are in registers).

    Averaging: u_p += t (mu_p after round t - before) over the coordinates an
    update touches, so that mu_1 + ... + mu_T = (T + 1) mu_T - u ([FS99]).

    The loop is `diag_rows`.
    Returns (rounds, mistakes, updates, loss_sum, status, position, collapsed).
    """
    cdef Hyper h = hyper_second_order(rule, phi, r, direct)
    cdef Counts cnt = counts_start(rows, y)
    cdef Workspace ws = Workspace()
    # the old and the new (mu, sigma) of a row's coordinates, one array each
    cdef Py_ssize_t width = max_row_nnz(&rows.R, order) + 1
    cdef double* om = ws.doubles(4 * width)
    cdef int* ahead_buf = <int*>ws.flags(width * sizeof(int))
    cdef double* w = &state[0, 0]
    h.C = C
    h.task = task
    with nogil:
        diag_rows(&rows.R, &cnt, y, order, bias, w, state.shape[1],
                  state.shape[0] - (1 if average else 0), w + 2 if average else NULL, &h,
                  om, width, ahead_buf)
    return counts_result(&cnt)


cdef void diag_rows(const Rows* R, Counts* cnt, const double[::1] y,
                    const Py_ssize_t[::1] order, double bias, double* w, Py_ssize_t fs,
                    Py_ssize_t D, double* up, Hyper* h, double* om, Py_ssize_t width,
                    int* ahead_buf) noexcept nogil:
    """The loop of `diag_pass` over `order`'s rows of R: the interleaved state w (D
    pairs, a feature's every fs values) and the lazy sum up (NULL: no averaging; D
    + 1 values, every fs values: in w's rows) updated in place, the rounds counted
    in cnt; `om` holds 4 `width` doubles, `ahead_buf` `width` ints (all 0), `width`
    the longest row's entries plus one."""
    cdef Py_ssize_t k, j, nnz, i, p
    cdef const double* x
    cdef const int* idx
    cdef double dot, v, m, yi, alpha, c, ay, mj, sj, loss
    cdef bint normal
    cdef double mb, sb, nmb, nsb
    cdef bint avg = up != NULL
    cdef double t = up[fs * D] if avg else 0.0
    cdef int rule = h.rule, direct = h.direct, task = h.task
    cdef Ahead ah
    cdef const int* pf
    cdef double* osg = om + width
    cdef double* nm = osg + width
    cdef double* nsg = nm + width
    ahead_start(&ah, R, order, ahead_buf, w, fs, NULL)
    for k in range(order.shape[0]):
        i = order[k]
        nnz = get_row(R, i, &x, &idx)
        if R.unchecked and not row_ok(R, x, idx, nnz):
            fail_row(cnt, ROW_UNCHECKED, i)
            break
        pf = ahead_row(&ah, idx, nnz)
        dot = w[fs * (D - 1)] * bias
        v = w[fs * (D - 1) + 1] * bias * bias
        for j in range(nnz):
            CWKIT_PREFETCH(w + fs * <Py_ssize_t>pf[j])   # (mu, sigma, u) share a line,
            if avg:     # (or its end the next one: a row of three doubles straddles two)
                CWKIT_PREFETCH(w + fs * <Py_ssize_t>pf[j] + 2)
            p = fs * idx[j]
            mj = w[p]
            sj = w[p + 1]
            om[j] = mj
            osg[j] = sj
            dot += mj * x[j]
            v += sj * x[j] * x[j]
        if task == REGRESSION:
            m = 0.0
            if not regression_round(cnt, y[i], dot, v, 0.0, i, &yi, &loss):
                break
        else:
            yi = y[i]
            m = yi * dot
            if not count_margin(cnt, m, v, i):
                break
            loss = 1.0 - m
        t += 1.0
        h.s = row_weight(cnt, i)
        alpha = so_step_loss(h, m, loss, v, &c)
        if alpha == 0.0 and (task == CLASSIFICATION or c == 0.0):
            continue
        ay = alpha * yi
        diag_step(om, osg, x, nnz, ay, c, direct, nm, nsg)
        # every new (mu, sigma) finite and every new sigma >= DBL_MIN (one test
        # for both; an overflow or a small variance is sorted out below)
        normal = diag_put(w, fs, idx, x, nnz, osg, c, direct, nm, nsg)
        mb = w[fs * (D - 1)]
        sb = w[fs * (D - 1) + 1]
        nmb = mb + ay * sb * bias
        nsb = sigma_step(sb, c, direct, bias)
        w[fs * (D - 1)] = nmb
        w[fs * (D - 1) + 1] = nsb
        normal &= normal_pair(nmb, nsb)
        if not normal and not diag_row_finite(w, fs, idx, nnz, D):
            for j in range(nnz):
                w[fs * idx[j]] = om[j]
                w[fs * idx[j] + 1] = osg[j]
            w[fs * (D - 1)] = mb
            w[fs * (D - 1) + 1] = sb
            fail_round(cnt, NONFINITE_STATE, i)
            t -= 1.0
            break
        if not normal and may_collapse(rule, direct):   # did one newly collapse?
            count_collapse(cnt, any_newly_tiny(w + 1, osg, idx, nnz, fs, 1)
                           or newly_tiny(sb, nsb), i)
        if avg:
            for j in range(nnz):
                up[fs * idx[j]] += t * (nm[j] - om[j])
            up[fs * (D - 1)] += t * (nmb - mb)
        cnt.updates += 1
    if avg:
        up[fs * D] = t


def sop_diag_pass(RowView rows not None, const double[::1] y,
                  const Py_ssize_t[::1] order, double bias,
                  double[::1] vv, double[::1] A, double[::1] u):
    """One pass of the diagonal second-order perceptron.

    [SOP05] Fig. 3.1 projected on the diagonal: predict with
    w_t = vv / (A + x_t^2); on a mistake vv += y x, A += x^2.  The weights
    after round t are vv / A (``coef_``); averaging (u not empty: D + 1 entries,
    u[D] = T) adds t (new - old vv_p / A_p) to u[p] over the coordinates a
    mistake touches, so that their sum over rounds 1..T is (T + 1) vv / A - u[:D]
    ([FS99]).  An importance weight s scales what a mistake adds: vv += s y x,
    A += s x^2 (the example counted s times in A and vv).
    Returns (rounds, mistakes, updates, loss_sum, status, position, collapsed).
    """
    cdef Py_ssize_t D = vv.shape[0], k, j, nnz, i, p
    cdef Counts cnt = counts_start(rows, y)
    cdef const double* x
    cdef const int* idx
    cdef double score, m, n, yi, xj, old, sw
    cdef bint avg = u.shape[0] > 0
    cdef double t = u[D] if avg else 0.0
    cdef Ahead ah
    cdef const int* pf
    cdef Workspace ws = Workspace()
    cdef int* ahead_buf = <int*>ws.flags((max_row_nnz(&rows.R, order) + 1) * sizeof(int))
    with nogil:
        ahead_start(&ah, &rows.R, order, ahead_buf, &vv[0], 1, &A[0])
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&rows.R, i, &x, &idx)
            pf = ahead_row(&ah, idx, nnz)
            score = vv[D - 1] * bias / (A[D - 1] + bias * bias)     # A > 0
            n = bias * bias
            for j in range(nnz):
                CWKIT_PREFETCH(&vv[0] + pf[j])
                CWKIT_PREFETCH(&A[0] + pf[j])
                p = idx[j]
                xj = x[j]
                score += vv[p] * xj / (A[p] + xj * xj)
                n += xj * xj
            yi = y[i]
            m = yi * score
            if not count_margin(&cnt, m, n, i):
                break
            t += 1.0
            sw = row_weight(&cnt, i)
            if m > 0.0 or sw == 0.0:
                continue
            for j in range(nnz + 1):
                p = idx[j] if j < nnz else D - 1
                xj = x[j] if j < nnz else bias
                old = vv[p] / A[p] if avg else 0.0
                vv[p] += sw * yi * xj
                A[p] += sw * xj * xj
                if avg:
                    u[p] += t * (vv[p] / A[p] - old)
            cnt.updates += 1
    if avg:
        u[D] = t
    return counts_result(&cnt)


cdef inline double rda_weight(double u, double G, double t, double eta, double lam,
                              double delta) noexcept nogil:
    """AdaGrad-RDA weight ([DHS11]) from (u_i, G_i, t):
    w_i = -sign(u_i) eta / (delta + sqrt(G_i)) max(0, |u_i| - lam t)."""
    cdef double a = fabs(u) - lam * t
    if a <= 0.0:
        return 0.0
    a = eta * a / (delta + sqrt(G))        # G > 0 whenever u != 0; delta > 0
    return -a if u > 0.0 else a


cdef inline double rda_sum(double u, double G, double m, double n, double eta, double lam,
                           double delta) noexcept nogil:
    """sum_{t=m..n} rda_weight(u, G, t) in closed form (u, G fixed): the terms
    eta (|u| - lam t) / (delta + sqrt(G)) while |u| - lam t > 0 (an arithmetic
    series), 0 after."""
    cdef double a = fabs(u), last = n, cnt, total
    if n < m or a == 0.0:
        return 0.0
    if lam > 0.0:
        last = min(n, ceil(a / lam) - 1.0)
        # the last t with a - lam t > 0, decided as `rda_weight` decides it
        while last >= m and a - lam * last <= 0.0:
            last -= 1.0
        while last + 1.0 <= n and a - lam * (last + 1.0) > 0.0:
            last += 1.0
        if last < m:
            return 0.0
    cnt = last - m + 1.0
    total = eta * (cnt * a - lam * (m + last) * cnt * 0.5) / (delta + sqrt(G))
    return -total if u > 0.0 else total


def adagrad_pass(RowView rows not None, const double[::1] y,
                 const Py_ssize_t[::1] order, double bias,
                 double[::1] u, double[::1] G, double[::1] aux,
                 double eta, double lam, double delta, double[::1] acc):
    """One pass of diagonal AdaGrad (RDA with L1, [DHS11]) on the hinge loss.

    Weights are computed on demand from (u, G, t), so a round costs O(nnz).
    Averaging (acc not empty, 2 D entries): the weight w_t[p] after round t
    changes every round while lam > 0 (lam t grows), but between two updates of
    coordinate p it is a function of t alone, summed in closed form
    (`rda_sum`): acc[2 p] holds sum_{t <= acc[2 p + 1]} w_t[p] and is brought up
    to date when an update touches p (`rda_average` adds the rounds since).  The
    pairs are interleaved, as the diagonal rules' (mu, sigma): one line holds
    both, and a model that grows writes only its new features' pairs.  An
    importance weight s scales the loss, so its subgradient: g = -s y x.
    Returns (rounds, mistakes, updates, loss_sum, status, position, collapsed).
    """
    cdef Py_ssize_t D = u.shape[0], k, j, nnz, i, p
    cdef Counts cnt = counts_start(rows, y)
    cdef const double* x
    cdef const int* idx
    cdef double score, m, n, yi, xj, sw, t = aux[AUX_T]
    cdef bint avg = acc.shape[0] > 0
    cdef Ahead ah
    cdef const int* pf
    cdef Workspace ws = Workspace()
    cdef int* ahead_buf = <int*>ws.flags((max_row_nnz(&rows.R, order) + 1) * sizeof(int))
    with nogil:
        ahead_start(&ah, &rows.R, order, ahead_buf, &u[0], 1, &G[0])
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&rows.R, i, &x, &idx)
            pf = ahead_row(&ah, idx, nnz)
            score = rda_weight(u[D - 1], G[D - 1], t, eta, lam, delta) * bias
            n = bias * bias
            for j in range(nnz):
                CWKIT_PREFETCH(&u[0] + pf[j])
                CWKIT_PREFETCH(&G[0] + pf[j])
                p = idx[j]
                score += rda_weight(u[p], G[p], t, eta, lam, delta) * x[j]
                n += x[j] * x[j]
            yi = y[i]
            m = yi * score
            if not count_margin(&cnt, m, n, i):
                break
            t += 1.0
            sw = row_weight(&cnt, i)
            if m >= 1.0 or sw == 0.0:
                continue
            if avg:      # the rounds before this one with the old (u_p, G_p)
                for j in range(nnz + 1):
                    p = idx[j] if j < nnz else D - 1
                    acc[2 * p] += rda_sum(u[p], G[p], acc[2 * p + 1] + 1.0, t - 1.0, eta,
                                          lam, delta)
                    acc[2 * p + 1] = t - 1.0
            # subgradient of the weighted hinge loss: g = -s y x
            for j in range(nnz):
                p = idx[j]
                xj = sw * x[j]
                u[p] -= yi * xj
                G[p] += xj * xj
            xj = sw * bias
            u[D - 1] -= yi * xj
            G[D - 1] += xj * xj
            cnt.updates += 1
    aux[AUX_T] = t
    return counts_result(&cnt)


def rda_average(const double[::1] u, const double[::1] G, double t, double eta,
                double lam, double delta, const double[:] sums, const double[:] rounds,
                double[::1] out):
    """The mean of the AdaGrad-RDA weights after rounds 1..t (t > 0) into `out`,
    from the sums kept by `adagrad_pass` (`mc_adagrad_pass`): `sums[j]` of the
    weights over the rounds up to `rounds[j]`."""
    cdef Py_ssize_t j, D = u.shape[0]
    with nogil:
        for j in range(D):
            out[j] = (sums[j] + rda_sum(u[j], G[j], rounds[j] + 1.0, t, eta, lam, delta)) / t


def rda_weights(const double[::1] u, const double[::1] G, double t, double eta,
                double lam, double delta, double[::1] out):
    """Materialise AdaGrad-RDA weights w_{t+1} into `out` (for coef_)."""
    cdef Py_ssize_t j
    with nogil:
        for j in range(u.shape[0]):
            out[j] = rda_weight(u[j], G[j], t, eta, lam, delta)


def row_scores(RowView rows not None,
               double bias, const double[::1] w,
               const double[::1] s2, double[::1] out_m, double[::1] out_v):
    """Test-time w.x (and x^T diag(s2) x when s2 is not empty) for every row.

    The same row walk as the training drivers, so dense and CSR inputs give
    bit-identical scores.
    """
    cdef Py_ssize_t D = w.shape[0], i, j, p, nnz
    cdef bint quad = s2.shape[0] > 0
    cdef const double* x
    cdef const int* idx
    cdef double dot, v
    with nogil:
        for i in range(out_m.shape[0]):
            nnz = get_row(&rows.R, i, &x, &idx)
            dot = w[D - 1] * bias
            for j in range(nnz):
                dot += w[idx[j]] * x[j]
            out_m[i] = dot
            if quad:
                v = s2[D - 1] * bias * bias
                for j in range(nnz):
                    p = idx[j]
                    v += s2[p] * x[j] * x[j]
                out_v[i] = v


def sop_diag_scores(RowView rows not None,
                    double bias, const double[::1] vv,
                    const double[::1] A, double[::1] out):
    """Test-time scores of the diagonal SOP: sum_i vv_i x_i / (A_i + x_i^2)."""
    cdef Py_ssize_t D = vv.shape[0], i, j, p, nnz
    cdef const double* x
    cdef const int* idx
    cdef double score
    with nogil:
        for i in range(out.shape[0]):
            nnz = get_row(&rows.R, i, &x, &idx)
            score = vv[D - 1] * bias / (A[D - 1] + bias * bias)     # A > 0
            for j in range(nnz):
                p = idx[j]
                score += vv[p] * x[j] / (A[p] + x[j] * x[j])
            out[i] = score
