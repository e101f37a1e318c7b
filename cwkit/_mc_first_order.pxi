# Multi-class first-order drivers on the 1-of-k map (top-1 / one-vs-rest), the
# state W = s V of the binary first-order pass.
#
# Provides: mc_first_order_pass.
# Uses: RowView, get_row, max_row_nnz (_rows.pxi); Counts, Workspace,
# scaled_rescale (_driver.pxi); Hyper, fo_step, AUX_* (_binary.pxi); the 1-of-k
# walks and block updates (_mc_rows.pxi).


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
