# Multi-class drivers (FORMULAS.md section 4): the 1-of-k feature function
# f(x, y) = e_y (x) x~, state (K, D) C-contiguous, one block per class, the
# intercept last in every block.
#
# top1 ("ovr" False): the binary step of the rule on Delta = f(x, y) - f(x, c)
# against the closest competitor c (labels != y by decreasing score, ties to the
# smaller label).  Delta holds x in block y and -x in block c, so for label +1
#   m = mu_y.x - mu_c.x,  v = v_y + v_c (diagonal),  ||Delta||^2 = 2 ||x~||^2.
# The Perceptron updates only on an argmax mistake, with c = the prediction.
# ovr (True): K binary problems on the same row (label +1 for class y, -1 for
# the others); every class is scored before any class is updated.
# Progressive mistakes are argmax errors (ties to the first class) for every rule.


cdef inline double blk_dot(const double* w, const double* x, const int* idx,
                           Py_ssize_t nnz, double bias, Py_ssize_t D) noexcept nogil:
    """w . x~ for one block."""
    cdef double s = w[D - 1] * bias
    cdef Py_ssize_t j
    for j in range(nnz):
        s += w[idx[j]] * x[j]
    return s


cdef inline double blk_sqdot(const double* sg, const double* x, const int* idx,
                             Py_ssize_t nnz, double bias, Py_ssize_t D) noexcept nogil:
    """sum_i sg_i x~_i^2 for one block (x~^T diag(sg) x~)."""
    cdef double s = sg[D - 1] * bias * bias
    cdef Py_ssize_t j
    for j in range(nnz):
        s += sg[idx[j]] * x[j] * x[j]
    return s


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
                           double* dn2) noexcept nogil:
    """w += c x~ on one block; old values go to save[0..nnz]; dn2 += change of ||w||^2.

    Returns the sum of the new values (a finiteness check)."""
    cdef Py_ssize_t j, p
    cdef double old, new, chk = 0.0
    for j in range(nnz):
        p = idx[j]
        old = w[p]
        save[j] = old
        new = old + c * x[j]
        w[p] = new
        chk += new
        dn2[0] += new * new - old * old
    old = w[D - 1]
    save[nnz] = old
    new = old + c * bias
    w[D - 1] = new
    dn2[0] += new * new - old * old
    return chk + new


cdef inline void blk_restore(double* w, const double* save, const int* idx,
                             Py_ssize_t nnz, Py_ssize_t D) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(nnz):
        w[idx[j]] = save[j]
    w[D - 1] = save[nnz]


cdef inline void blk_axpy(double* w, double c, const double* x, const int* idx,
                          Py_ssize_t nnz, double bias, Py_ssize_t D) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(nnz):
        w[idx[j]] += c * x[j]
    w[D - 1] += c * bias


def mc_first_order_pass(const double[::1] data, const int[::1] indices,
                        const long long[::1] indptr, const int[::1] dense_idx,
                        Py_ssize_t n_cols, const Py_ssize_t[::1] y,
                        const Py_ssize_t[::1] order, double bias, bint ovr,
                        double[:, ::1] V, double[:, ::1] aux, double[:, ::1] U,
                        double[::1] work, double[::1] scratch, int rule, double C,
                        double alpha, double beta):
    """One multi-class pass of a first-order rule (perceptron, averaging, PA, S004).

    State: W = s V, one scale factor for the whole W in top1 (aux has one row:
    the S004 rules shrink all of W, so a shared s keeps that O(1)); one row of
    aux (s, ||V||^2, t) per class in ovr (K independent binary problems).
    U (same shape as V, or empty) accumulates sum_t t Delta_t for averaging.
    work: 4K doubles; scratch: 2 (max_nnz + 1) doubles (top1) or K (max_nnz + 1) (ovr).
    Returns (rounds, mistakes, updates, loss_sum, status, position).
    """
    cdef Rows R = make_rows(data, indices, indptr, dense_idx, n_cols)
    cdef Hyper h
    h.rule = rule
    h.C = C
    h.alpha = alpha
    h.beta = beta
    cdef Py_ssize_t K = V.shape[0], D = V.shape[1], k, j, nnz, i, c, b, yi, yhat, a
    cdef Py_ssize_t rounds = 0, mistakes = 0, updates = 0, pos = -1, n_aux = aux.shape[0]
    cdef int status = OK
    cdef const double* x
    cdef const int* idx
    cdef double n, m, tau, Z, s, t, cf, chk, dn2, yc, loss_sum = 0.0
    cdef double* sc = &work[0]          # scores
    cdef double* taus = &work[K]        # ovr: tau y_c per class
    cdef double* zs = &work[2 * K]      # ovr: Z per class
    cdef double* dn = &work[3 * K]      # ovr: change of ||V_c||^2
    cdef double* save = &scratch[0]
    cdef bint avg = rule == AVG_PERCEPTRON, bad
    cdef bint is_perc = rule == PERCEPTRON or rule == AVG_PERCEPTRON
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&R, i, &x, &idx)
            n = bias * bias
            for j in range(nnz):
                n += x[j] * x[j]
            for c in range(K):
                sc[c] = aux[c if ovr else 0, AUX_S] * blk_dot(&V[c, 0], x, idx, nnz, bias, D)
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
                chk = blk_add(&V[yi, 0], cf, x, idx, nnz, bias, D, save, &dn2)
                chk += blk_add(&V[c, 0], -cf, x, idx, nnz, bias, D, save + nnz + 1, &dn2)
                if not (isfinite(chk) and isfinite(dn2) and isfinite(cf)):
                    blk_restore(&V[c, 0], save + nnz + 1, idx, nnz, D)
                    blk_restore(&V[yi, 0], save, idx, nnz, D)
                    status = NONFINITE_STATE
                    pos = i
                    rounds -= 1
                    break
                if avg:
                    blk_axpy(&U[yi, 0], t * cf, x, idx, nnz, bias, D)
                    blk_axpy(&U[c, 0], -t * cf, x, idx, nnz, bias, D)
                aux[0, AUX_VN2] += dn2
                updates += 1
                s = s / Z                      # Z >= 1
                if s < S_MIN or s > S_MAX:
                    for a in range(K):
                        for j in range(D):
                            V[a, j] *= s
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
            chk = 0.0
            for c in range(K):
                dn[c] = 0.0
                if taus[c] != 0.0:
                    chk += blk_add(&V[c, 0], taus[c] / aux[c, AUX_S], x, idx, nnz, bias, D,
                                   save + c * (nnz + 1), &dn[c])   # s > 0
                    chk += dn[c] + taus[c] / aux[c, AUX_S]          # s > 0
            if not isfinite(chk):
                for c in range(K):
                    if taus[c] != 0.0:
                        blk_restore(&V[c, 0], save + c * (nnz + 1), idx, nnz, D)
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
                    blk_axpy(&U[c, 0], t * taus[c] / s, x, idx, nnz, bias, D)   # s > 0
                aux[c, AUX_VN2] += dn[c]
                updates += 1
                s = s / zs[c]                  # Z >= 1
                if s < S_MIN or s > S_MAX:
                    for j in range(D):
                        V[c, j] *= s
                    aux[c, AUX_VN2] *= s * s
                    s = 1.0
                aux[c, AUX_S] = s
    return rounds, mistakes, updates, loss_sum, status, pos


cdef inline double blk_diag_step(double* mu, double* sg, double ay, double cc, bint direct,
                                 const double* x, const int* idx, Py_ssize_t nnz,
                                 double bias, Py_ssize_t D, double* save) noexcept nogil:
    """mu += ay Sigma x~ and the diagonal covariance update with coefficient cc
    (1/sigma_i += cc x_i^2, or sigma_i -= cc sigma_i^2 x_i^2 when `direct`) on one
    block; old (mu, sigma) pairs go to save[0 .. 2 nnz + 1].  Returns sum of new mu."""
    cdef Py_ssize_t j, p
    cdef double xj, sj, chk = 0.0
    for j in range(nnz + 1):
        if j < nnz:
            p = idx[j]
            xj = x[j]
        else:
            p = D - 1
            xj = bias
        sj = sg[p]
        save[2 * j] = mu[p]
        save[2 * j + 1] = sj
        mu[p] += ay * sj * xj
        if direct:
            sg[p] = sj - cc * sj * sj * xj * xj
        else:
            sg[p] = sj / (1.0 + cc * xj * xj * sj)           # >= 1 > 0
        chk += mu[p]
    return chk


cdef inline void blk_diag_restore(double* mu, double* sg, const double* save,
                                  const int* idx, Py_ssize_t nnz,
                                  Py_ssize_t D) noexcept nogil:
    cdef Py_ssize_t j, p
    for j in range(nnz + 1):
        p = idx[j] if j < nnz else D - 1
        mu[p] = save[2 * j]
        sg[p] = save[2 * j + 1]


cdef inline void blk_sigma_only(double* sg, double cc, bint direct, const double* x,
                                const int* idx, Py_ssize_t nnz, double bias,
                                Py_ssize_t D) noexcept nogil:
    """The diagonal covariance update alone on one block (see blk_diag_step)."""
    cdef Py_ssize_t j, p
    cdef double xj, sj
    for j in range(nnz + 1):
        if j < nnz:
            p = idx[j]
            xj = x[j]
        else:
            p = D - 1
            xj = bias
        sj = sg[p]
        if direct:
            sg[p] = sj - cc * sj * sj * xj * xj
        else:
            sg[p] = sj / (1.0 + cc * xj * xj * sj)           # >= 1 > 0


def mc_diag_pass(const double[::1] data, const int[::1] indices,
                 const long long[::1] indptr, const int[::1] dense_idx,
                 Py_ssize_t n_cols, const Py_ssize_t[::1] y,
                 const Py_ssize_t[::1] order, double bias, bint ovr,
                 double[:, ::1] MU, double[:, ::1] SG, double[::1] work,
                 double[::1] scratch, int rule, double phi, double r, bint direct,
                 bint sum_update):
    """One multi-class pass of a diagonal rule: CW-Var, CW-Stdev, AROW, AROW-H.

    top1: the binary step on Delta (label +1), m = mu_y.x - mu_c.x,
    v = v_y + v_c; the covariance update acts on blocks y and c with x^2.
    With `sum_update` (AROW, S000 eqs. 29-30) the covariance is instead updated
    with f = sum_y f(x, y), i.e. every block with x^2 (direct: beta = 1/(r + sum_c v_c)).
    ovr: the binary rule on every block with label +1 for y and -1 otherwise.
    work: 4K doubles; scratch: 4 (max_nnz + 1) (top1) or 2K (max_nnz + 1) (ovr).
    Returns (rounds, mistakes, updates, loss_sum, status, position).
    """
    cdef Rows R = make_rows(data, indices, indptr, dense_idx, n_cols)
    cdef Hyper h
    h.rule = rule
    h.phi = phi
    h.r = r
    h.direct = direct
    cdef Py_ssize_t K = MU.shape[0], D = MU.shape[1], k, nnz, i, c, yi, yhat
    cdef Py_ssize_t rounds = 0, mistakes = 0, updates = 0, pos = -1, sv
    cdef int status = OK
    cdef const double* x
    cdef const int* idx
    cdef double m, v, alpha, cc, chk, yc, vsum, loss_sum = 0.0
    cdef double* sc = &work[0]          # scores mu_c . x
    cdef double* al = &work[K]          # ovr: alpha y_c per class
    cdef double* cs = &work[2 * K]      # ovr: covariance coefficient per class
    cdef double* vs = &work[3 * K]      # ovr / sum update: v_c per class
    cdef double* save = &scratch[0]
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&R, i, &x, &idx)
            sv = 2 * (nnz + 1)
            for c in range(K):
                sc[c] = blk_dot(&MU[c, 0], x, idx, nnz, bias, D)
            if ovr or sum_update:
                for c in range(K):
                    vs[c] = blk_sqdot(&SG[c, 0], x, idx, nnz, bias, D)
                if not all_finite(vs, K):
                    status = NONFINITE_INPUT
                    pos = i
                    break
            if not all_finite(sc, K):
                status = NONFINITE_INPUT
                pos = i
                break
            yi = y[i]
            yhat = argmax_first(sc, K)
            if not ovr:
                c = competitor(sc, K, yi)
                m = sc[yi] - sc[c]
                v = (blk_sqdot(&SG[yi, 0], x, idx, nnz, bias, D)
                     + blk_sqdot(&SG[c, 0], x, idx, nnz, bias, D))
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
                chk = blk_diag_step(&MU[yi, 0], &SG[yi, 0], alpha, cc, direct, x, idx,
                                    nnz, bias, D, save)
                chk += blk_diag_step(&MU[c, 0], &SG[c, 0], -alpha, cc, direct, x, idx,
                                     nnz, bias, D, save + sv)
                if not isfinite(chk):
                    blk_diag_restore(&MU[c, 0], &SG[c, 0], save + sv, idx, nnz, D)
                    blk_diag_restore(&MU[yi, 0], &SG[yi, 0], save, idx, nnz, D)
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
                        blk_sigma_only(&SG[c, 0], cc, direct, x, idx, nnz, bias, D)
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
                    chk += blk_diag_step(&MU[c, 0], &SG[c, 0], al[c], cs[c], direct, x, idx,
                                         nnz, bias, D, save + c * sv)
            if not isfinite(chk):
                for c in range(K):
                    if al[c] != 0.0:
                        blk_diag_restore(&MU[c, 0], &SG[c, 0], save + c * sv, idx, nnz, D)
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
                                 Py_ssize_t D) noexcept nogil:
    """Diagonal SOP score of one block: sum_i vv_i x~_i / (A_i + x~_i^2)."""
    cdef double s = vv[D - 1] * bias / (A[D - 1] + bias * bias)      # A > 0
    cdef Py_ssize_t j, p
    for j in range(nnz):
        p = idx[j]
        s += vv[p] * x[j] / (A[p] + x[j] * x[j])                   # A > 0
    return s


cdef inline void sop_blk_update(double* vv, double* A, double yc, const double* x,
                                const int* idx, Py_ssize_t nnz, double bias,
                                Py_ssize_t D) noexcept nogil:
    cdef Py_ssize_t j, p
    for j in range(nnz):
        p = idx[j]
        vv[p] += yc * x[j]
        A[p] += x[j] * x[j]
    vv[D - 1] += yc * bias
    A[D - 1] += bias * bias


def mc_sop_diag_pass(const double[::1] data, const int[::1] indices,
                     const long long[::1] indptr, const int[::1] dense_idx,
                     Py_ssize_t n_cols, const Py_ssize_t[::1] y,
                     const Py_ssize_t[::1] order, double bias, bint ovr,
                     double[:, ::1] VV, double[:, ::1] A, double[::1] work):
    """One multi-class pass of the diagonal second-order perceptron.

    Class scores are the binary test rule on each block,
    s_c = sum_i vv_ci x_i / (A_ci + x_i^2).  top1: the binary SOP step on
    (Delta, +1), whose own score Delta^T (A + diag(Delta^2))^-1 vv is s_y - s_c
    (the diagonal splits over the two blocks); on an update vv_y += x, vv_c -= x,
    A_y += x^2, A_c += x^2.  ovr: the binary rule on every block.
    work: K doubles.  Returns (rounds, mistakes, updates, loss_sum, status, position).
    """
    cdef Rows R = make_rows(data, indices, indptr, dense_idx, n_cols)
    cdef Py_ssize_t K = VV.shape[0], D = VV.shape[1], k, nnz, i, c, yi
    cdef Py_ssize_t rounds = 0, mistakes = 0, updates = 0, pos = -1
    cdef int status = OK
    cdef const double* x
    cdef const int* idx
    cdef double m, yc, loss_sum = 0.0
    cdef double* sc = &work[0]
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&R, i, &x, &idx)
            for c in range(K):
                sc[c] = sop_blk_score(&VV[c, 0], &A[c, 0], x, idx, nnz, bias, D)
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
                sop_blk_update(&VV[yi, 0], &A[yi, 0], 1.0, x, idx, nnz, bias, D)
                sop_blk_update(&VV[c, 0], &A[c, 0], -1.0, x, idx, nnz, bias, D)
                updates += 1
                continue
            for c in range(K):
                yc = 1.0 if c == yi else -1.0
                m = yc * sc[c]
                if m < 1.0:
                    loss_sum += 1.0 - m
                if m <= 0.0:
                    sop_blk_update(&VV[c, 0], &A[c, 0], yc, x, idx, nnz, bias, D)
                    updates += 1
    return rounds, mistakes, updates, loss_sum, status, pos


cdef inline void ada_blk_update(double* u, double* G, double yc, const double* x,
                                const int* idx, Py_ssize_t nnz, double bias,
                                Py_ssize_t D) noexcept nogil:
    """Hinge subgradient g = -yc x~ on one block: u += g, G += g^2."""
    cdef Py_ssize_t j, p
    for j in range(nnz):
        p = idx[j]
        u[p] -= yc * x[j]
        G[p] += x[j] * x[j]
    u[D - 1] -= yc * bias
    G[D - 1] += bias * bias


def mc_adagrad_pass(const double[::1] data, const int[::1] indices,
                    const long long[::1] indptr, const int[::1] dense_idx,
                    Py_ssize_t n_cols, const Py_ssize_t[::1] y,
                    const Py_ssize_t[::1] order, double bias, bint ovr,
                    double[:, ::1] U, double[:, ::1] G, double[::1] aux,
                    double[::1] work, double eta, double lam, double delta):
    """One multi-class pass of diagonal AdaGrad-RDA with L1 on the hinge loss.

    top1: the multi-class hinge max(0, 1 - W.Delta) with the closest competitor
    c has the subgradient -Delta, so when W.Delta < 1: u_y -= x, u_c += x and
    G_y, G_c += x^2.  ovr: the binary rule on every block.  t counts rounds.
    work: K doubles.  Returns (rounds, mistakes, updates, loss_sum, status, position).
    """
    cdef Rows R = make_rows(data, indices, indptr, dense_idx, n_cols)
    cdef Py_ssize_t K = U.shape[0], D = U.shape[1], k, j, nnz, i, c, yi
    cdef Py_ssize_t rounds = 0, mistakes = 0, updates = 0, pos = -1
    cdef int status = OK
    cdef const double* x
    cdef const int* idx
    cdef double m, yc, s, t = aux[AUX_T], loss_sum = 0.0
    cdef double* sc = &work[0]
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&R, i, &x, &idx)
            for c in range(K):
                s = rda_weight(U[c, D - 1], G[c, D - 1], t, eta, lam, delta) * bias
                for j in range(nnz):
                    s += rda_weight(U[c, idx[j]], G[c, idx[j]], t, eta, lam, delta) * x[j]
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
                ada_blk_update(&U[yi, 0], &G[yi, 0], 1.0, x, idx, nnz, bias, D)
                ada_blk_update(&U[c, 0], &G[c, 0], -1.0, x, idx, nnz, bias, D)
                updates += 1
                continue
            for c in range(K):
                yc = 1.0 if c == yi else -1.0
                m = yc * sc[c]
                if m < 1.0:
                    loss_sum += 1.0 - m
                    ada_blk_update(&U[c, 0], &G[c, 0], yc, x, idx, nnz, bias, D)
                    updates += 1
    aux[AUX_T] = t
    return rounds, mistakes, updates, loss_sum, status, pos


cdef inline double vdot(const double* a, const double* b, Py_ssize_t n) noexcept nogil:
    cdef double s = 0.0
    cdef Py_ssize_t j
    for j in range(n):
        s += a[j] * b[j]
    return s


def mc_full_pass(const double[::1] data, const int[::1] indices,
                 const long long[::1] indptr, const int[::1] dense_idx,
                 Py_ssize_t n_cols, const Py_ssize_t[::1] y,
                 const Py_ssize_t[::1] order, double bias, bint ovr,
                 double[:, ::1] MU, double[:, ::1] Sigma, double[::1] work,
                 int rule, double phi, double r, bint sum_update):
    """One multi-class pass of a full-covariance rule: CW-Var, CW-Stdev, AROW(-H), SOP.

    top1: Sigma is (K D, K D) over the stacked blocks (one triangle kept, as in
    `full_pass`); the binary step on Delta (label +1): z = Sigma Delta,
    m = mu.Delta, v = Delta.z, mu += alpha z, Sigma -= beta z z^T.  SOP keeps
    mu = A^-1 vv and Sigma = A^-1: its score on Delta has the sign of m, and an
    update is alpha = (1 - m)/(1 + v), beta = 1/(1 + v).  With `sum_update`
    (AROW, S000 eqs. 29-30) Sigma -= Sigma f f^T Sigma / (r + f^T Sigma f), f = x~
    tiled K times.  ovr: Sigma is (K D, D), K independent D x D blocks.
    Class scores: mu_c.x~, or for SOP mu_c.x~ / (1 + x~^T Sigma_cc x~).
    work: D + 3 K D + 5 K doubles.
    Returns (rounds, mistakes, updates, loss_sum, status, position).
    """
    cdef Rows R = make_rows(data, indices, indptr, dense_idx, n_cols)
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
            nnz = get_row(&R, i, &x, &idx)
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
                        bs[c] = cc / (1.0 + cc * v)              # cc, v >= 0
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
                beta = cc / (1.0 + cc * v)                       # cc, v >= 0
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


def mc_row_scores(const double[::1] data, const int[::1] indices,
                  const long long[::1] indptr, const int[::1] dense_idx,
                  Py_ssize_t n_cols, double bias, const double[:, ::1] W,
                  const double[:, ::1] S2, double[:, ::1] out_m, double[:, ::1] out_v):
    """Test-time class scores w_c.x~ (and x~^T diag(s2_c) x~ when S2 is not empty),
    out (n, K): the row walk of the training drivers, so dense == CSR bit for bit."""
    cdef Rows R = make_rows(data, indices, indptr, dense_idx, n_cols)
    cdef Py_ssize_t K = W.shape[0], D = W.shape[1], i, c, nnz
    cdef bint quad = S2.shape[0] > 0
    cdef const double* x
    cdef const int* idx
    with nogil:
        for i in range(out_m.shape[0]):
            nnz = get_row(&R, i, &x, &idx)
            for c in range(K):
                out_m[i, c] = blk_dot(&W[c, 0], x, idx, nnz, bias, D)
                if quad:
                    out_v[i, c] = blk_sqdot(&S2[c, 0], x, idx, nnz, bias, D)
