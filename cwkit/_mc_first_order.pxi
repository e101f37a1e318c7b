# Multi-class first-order drivers on the 1-of-k map (top-1 / one-vs-rest), the
# state W = s V of the binary first-order pass.
#
# Provides: mc_first_order_pass, and its loop mc_first_order_rows (also run by
# `NamedOne`, _named.pxi).
# Uses: RowView, get_row, max_row_nnz (_rows.pxi); Counts, count_argmax, Workspace,
# scaled_rescale (_driver.pxi); Hyper, fo_step, AUX_* (_binary.pxi); the 1-of-k
# walks and block updates (_mc_rows.pxi).


cdef inline bint fo_top1_round(const Hyper* h, double* V, double* aux, double* U,
                               Py_ssize_t K, Py_ssize_t ld, Py_ssize_t D, const double* x,
                               const int* idx,
                               Py_ssize_t nnz, double bias, const double* sc, double n,
                               Py_ssize_t yi, Py_ssize_t yhat, double* save, Counts* cnt,
                               Py_ssize_t i, bint keep_sum) noexcept nogil:
    """top1: the binary step on Delta = f(x, y) - f(x, c) with label +1, W = s V
    with one s (aux: one row; averaging when U is not NULL, as in
    `first_order_pass`, S in aux[AUX_SSUM] if `keep_sum`); V and U: D rows `ld`
    apart of K values.  Returns True to stop the pass at row i."""
    cdef bint is_perc = h.rule == PERCEPTRON or h.rule == AVG_PERCEPTRON
    cdef double t = aux[AUX_T] + 1.0, s = aux[AUX_S], m, tau, Z, cf, chk, dn2 = 0.0, ca, cb
    cdef double S = aux[AUX_SSUM] if keep_sum else t - 1.0
    cdef Py_ssize_t c = yhat if is_perc else competitor(sc, K, yi)
    cdef int st = OK
    m = sc[yi] - sc[c]
    count_hinge(cnt, m)
    if is_perc:
        tau = h.s if yhat != yi else 0.0
        Z = 1.0
    else:
        tau = fo_step(h, m, 2.0 * n, s * s * aux[AUX_VN2], m, &Z, &st)
    if st != OK:
        fail_round(cnt, st, i)
        return True
    aux[AUX_T] = t
    if tau == 0.0:
        if keep_sum:
            aux[AUX_SSUM] = S + s
        return False
    cf = tau / s                       # s in [S_MIN, S_MAX]
    if h.rule == L2_PA:                # ||V||^2 is needed by l2-pa only
        chk = blk_add(V + yi, cf, x, idx, nnz, bias, D, save, &dn2, ld)
        chk += blk_add(V + c, -cf, x, idx, nnz, bias, D, save + nnz + 1, &dn2, ld)
    else:
        pair_add(V, ld, yi, c, cf, -cf, x, idx, nnz, bias, D, save, save + nnz + 1, &ca, &cb)
        chk = ca + cb
    if not (isfinite(chk) and isfinite(dn2) and isfinite(cf)):
        restore_coords(V + c, save + nnz + 1, idx, nnz, D, ld, 1)
        restore_coords(V + yi, save, idx, nnz, D, ld, 1)
        fail_round(cnt, NONFINITE_STATE, i)
        return True
    if U != NULL and s / Z < AVG_S_MIN:
        # the update again in W's units, V rescaled (see `first_order_pass`)
        restore_coords(V + c, save + nnz + 1, idx, nnz, D, ld, 1)
        restore_coords(V + yi, save, idx, nnz, D, ld, 1)
        avg_fold(V, U, D, ld, s, S, K)
        pair_add(V, ld, yi, c, tau, -tau, x, idx, nnz, bias, D, save, save + nnz + 1, &ca, &cb)
        dn2 = avg_unfold(V, U, D, ld, Z, K)
        if h.rule == L2_PA:
            aux[AUX_VN2] = dn2
        aux[AUX_S] = 1.0
        aux[AUX_SSUM] = 1.0            # a rule that shrinks W keeps the sum of the scales
        cnt.updates += 1
        return False
    if U != NULL:
        # S + 1 = t without a scale sum: the perceptron's t Delta_t ([FS99])
        blk_axpy(U + yi, (S + 1.0) * cf, x, idx, nnz, bias, D, ld)
        blk_axpy(U + c, -(S + 1.0) * cf, x, idx, nnz, bias, D, ld)
    aux[AUX_VN2] += dn2
    cnt.updates += 1
    aux[AUX_S] = scaled_rescale(V, D, ld, s / Z, &aux[AUX_VN2], K)     # Z >= 1
    if keep_sum:
        aux[AUX_SSUM] = S + aux[AUX_S]
    return False


cdef inline void fo_ovr_apply(double* V, const double* aux, Py_ssize_t na, Py_ssize_t K,
                              Py_ssize_t ld, Py_ssize_t D, const double* x, const int* idx,
                              Py_ssize_t nnz,
                              double bias, const double* taus, double* dn, double* cks,
                              Py_ssize_t* act, double* save, bint track_norm) noexcept nogil:
    """ovr: V_c += (tau_c y_c / s_c) x~ for every class with a step, two classes per
    walk of the row (||V_c||^2 for l2-pa only): old values to save + c (nnz + 1),
    the change of ||V_c||^2 to dn[c], the sum of the new values to cks[c]."""
    cdef Py_ssize_t j, c, c2, n_act = 0
    cdef double ca
    for c in range(K):
        dn[c] = 0.0
        if taus[c] != 0.0:
            act[n_act] = c
            n_act += 1
    for j in range(n_act):
        c = act[j]
        if track_norm:
            cks[c] = blk_add(V + c, taus[c] / aux[c * na + AUX_S], x, idx, nnz, bias, D,
                             save + c * (nnz + 1), &dn[c], ld)                # s > 0
        elif j % 2 == 0:
            c2 = act[j + 1] if j + 1 < n_act else -1
            pair_add(V, ld, c, c2, taus[c] / aux[c * na + AUX_S],              # s > 0
                     taus[c2] / aux[c2 * na + AUX_S] if c2 >= 0 else 0.0, x, idx, nnz,
                     bias, D, save + c * (nnz + 1), save + max(c2, 0) * (nnz + 1), &cks[c],
                     &cks[c2] if c2 >= 0 else &ca)


cdef inline bint fo_ovr_round(const Hyper* h, double* V, double* aux, Py_ssize_t na,
                              double* U, Py_ssize_t K, Py_ssize_t ld, Py_ssize_t D,
                              const double* x,
                              const int* idx, Py_ssize_t nnz, double bias, const double* sc,
                              double n, Py_ssize_t yi, double* wk, Py_ssize_t* act,
                              double* save, Counts* cnt, Py_ssize_t i) noexcept nogil:
    """ovr: every class's step from the pre-update scores, then all updates; W_c =
    s_c V_c (aux: one row per class, na entries apart).  Returns True to stop."""
    cdef Py_ssize_t c
    cdef double yc, m, tau, s, t, S, n2, chk = 0.0
    cdef double* taus = wk              # tau y_c per class
    cdef double* zs = wk + K            # Z per class
    cdef double* dn = wk + 2 * K        # change of ||V_c||^2
    cdef double* cks = wk + 3 * K       # sum of the new values per class
    cdef double* a
    cdef int st = OK
    for c in range(K):
        yc = 1.0 if c == yi else -1.0
        m = yc * sc[c]
        count_hinge(cnt, m)
        s = aux[c * na + AUX_S]
        tau = fo_step(h, m, n, s * s * aux[c * na + AUX_VN2], sc[c], &zs[c], &st)
        if st != OK:
            fail_round(cnt, st, i)
            return True
        taus[c] = tau * yc
    fo_ovr_apply(V, aux, na, K, ld, D, x, idx, nnz, bias, taus, dn, cks, act, save,
                 h.rule == L2_PA)
    for c in range(K):
        if taus[c] != 0.0:
            chk += cks[c]
            chk += dn[c] + taus[c] / aux[c * na + AUX_S]                        # s > 0
    if not isfinite(chk):
        for c in range(K):
            if taus[c] != 0.0:
                restore_coords(V + c, save + c * (nnz + 1), idx, nnz, D, ld, 1)
        fail_round(cnt, NONFINITE_STATE, i)
        return True
    for c in range(K):
        a = aux + c * na
        t = a[AUX_T] + 1.0
        a[AUX_T] = t
        s = a[AUX_S]
        S = a[AUX_SSUM] if na > AUX_SSUM else t - 1.0
        if taus[c] != 0.0 and U != NULL and s / zs[c] < AVG_S_MIN:
            # the update again in W_c's units, V_c rescaled (see `first_order_pass`)
            restore_coords(V + c, save + c * (nnz + 1), idx, nnz, D, ld, 1)
            avg_fold(V + c, U + c, D, ld, s, S)
            blk_axpy(V + c, taus[c], x, idx, nnz, bias, D, ld)
            n2 = avg_unfold(V + c, U + c, D, ld, zs[c])
            if h.rule == L2_PA:
                a[AUX_VN2] = n2
            a[AUX_S] = 1.0
            S = 0.0
            cnt.updates += 1
        elif taus[c] != 0.0:
            if U != NULL:
                # S + 1 = t without a scale sum: the perceptron's t Delta_t ([FS99])
                blk_axpy(U + c, (S + 1.0) * taus[c] / s, x, idx, nnz, bias, D, ld)  # s > 0
            a[AUX_VN2] += dn[c]
            cnt.updates += 1
            a[AUX_S] = scaled_rescale(V + c, D, ld, s / zs[c], &a[AUX_VN2])  # Z >= 1
        if na > AUX_SSUM:
            a[AUX_SSUM] = S + a[AUX_S]
    return False


def mc_first_order_pass(RowView rows not None, const Py_ssize_t[::1] y,
                        const Py_ssize_t[::1] order, double bias, bint ovr,
                        double[:, :] V, double[:, ::1] aux, double[:, :] U,
                        int rule, double C, double alpha, double beta):
    """One multi-class pass of a first-order rule (perceptron, PA, [LMC09]).

    State: W = s V, one scale factor for the whole W in top1 (aux has one row:
    the [LMC09] rules shrink all of W, so a shared s keeps that O(1)); one row of
    aux (s, ||V||^2, t) per class in ovr (K independent binary problems).
    U (same shape as V, or empty) is the lazy sum of averaging (see
    `first_order_pass`), per class in ovr; V and U share their row stride (the
    model keeps a feature's K values of each side by side in one row), a row's
    values adjacent.
    The loop is `mc_first_order_rows`.
    Returns (rounds, mistakes, updates, loss_sum, status, position, collapsed).
    """
    cdef Hyper h = hyper_first_order(rule, C, alpha, beta)
    cdef Py_ssize_t K = V.shape[1], ld = feature_stride(V, V, U)
    cdef Counts cnt = counts_start(rows)
    cdef Workspace ws = Workspace()
    cdef Py_ssize_t* act = ws.indices(K)     # ovr: the classes updated
    # scores, ovr per-class steps, and the old values of updated coordinates
    cdef double* sc = ws.doubles(5 * K + (K if ovr else 2) * (max_row_nnz(&rows.R, order) + 1))
    with nogil:
        mc_first_order_rows(&rows.R, &cnt, &y[0] if y.shape[0] > 0 else NULL, order, bias,
                            ovr, &V[0, 0], K, ld, V.shape[0], &aux[0, 0], aux.shape[1],
                            &U[0, 0] if U.shape[0] > 0 else NULL, &h, sc, act)
    return counts_result(&cnt)


cdef void mc_first_order_rows(const Rows* R, Counts* cnt, const Py_ssize_t* y,
                              const Py_ssize_t[::1] order, double bias, bint ovr,
                              double* Vp, Py_ssize_t K, Py_ssize_t ld, Py_ssize_t D,
                              double* aux,
                              Py_ssize_t na, double* Up, Hyper* h, double* sc,
                              Py_ssize_t* act) noexcept nogil:
    """The loop of `mc_first_order_pass` over `order`'s rows of R (labels y): the state V
    (D rows `ld` apart of K values), aux (rows of na values: one, or one per class
    in ovr) and the lazy sum Up (as V; NULL: no averaging) updated in place, the
    rounds counted in cnt; `sc` holds 5 K + (K if ovr else 2) (the longest row's
    entries + 1) doubles, `act` K indices (ovr)."""
    cdef Py_ssize_t k, nnz, i, c
    cdef const double* x
    cdef const int* idx
    cdef double n
    cdef bint stop
    cdef double* save = sc + 5 * K
    cdef NextRow nr = no_next_row()
    for k in range(order.shape[0]):
        i = order[k]
        nnz = get_row(R, i, &x, &idx)
        n = walk_row(R, &order[0], order.shape[0], k, y, &nr, Vp, K, ld, x, idx, nnz, bias,
                     D, sc)
        for c in range(K):
            sc[c] *= aux[(c if ovr else 0) * na + AUX_S]
        if not (all_finite(sc, K) and isfinite(n)):
            fail_row(cnt, NONFINITE_INPUT, i)
            break
        c = count_argmax(cnt, sc, K, y[i], i)
        h.s = row_weight(cnt, i)
        if ovr:
            stop = fo_ovr_round(h, Vp, aux, na, Up, K, ld, D, x, idx, nnz, bias, sc, n, y[i],
                                sc + K, act, save, cnt, i)
        else:
            stop = fo_top1_round(h, Vp, aux, Up, K, ld, D, x, idx, nnz, bias, sc, n, y[i], c,
                                 save, cnt, i, na > AUX_SSUM)
        if stop:
            break
