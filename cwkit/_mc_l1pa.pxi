# Multi-class top-1 L1-norm-constrained PA (S004 eq. 3.9 with the 1-of-k
# feature function of FORMULAS.md section 4).  The state W is (D, K) C-contiguous,
# read as one flat vector of length K D.  With c the closest competitor,
#   Delta = f(x, y) - f(x, c)   (x~ in block y, -x~ in block c),
#   W <- argmin 1/2 ||W' - W||_F^2  s.t.  W'.Delta >= 1,  ||W'||_1 <= beta,
# where ||W'||_1 sums all K D entries.  This is the binary problem of
# _l1pa.pxi with w = vec(W) and z = Delta (label +1), so the exact solver
# _l1_update is reused on the flat state: the support of Delta is
# {j K + y} with values x~_j and {j K + c} with values -x~_j.  Feasible iff
# beta ||Delta||_inf = beta ||x~||_inf > 1.  Included after _l1pa.pxi and
# _multiclass.pxi (all_dots, argmax_first, competitor, all_finite).


def mc_l1pa_pass(const double[::1] data, const int[::1] indices,
                 const long long[::1] indptr, const int[::1] dense_idx,
                 Py_ssize_t n_cols, const Py_ssize_t[::1] y,
                 const Py_ssize_t[::1] order, double bias, double[:, ::1] W,
                 double beta):
    """One multi-class top-1 pass of the L1-norm-constrained PA; W (D, K) in place.

    Mistakes are argmax errors (ties to the first class).  Updates when
    1 - (s_y - s_c) > 0 and x~ is not zero; INFEASIBLE when beta ||x~||_inf <= 1.
    Returns (rounds, mistakes, updates, loss_sum, status, position).
    """
    cdef Rows R = make_rows(data, indices, indptr, dense_idx, n_cols)
    cdef Py_ssize_t D = W.shape[0], K = W.shape[1], DK = D * K
    cdef Py_ssize_t smax = 2 * (max_row_nnz(&R, order) + 1)
    cdef Py_ssize_t k, i, j, nnz, s, yi, c, lo, hop, rounds = 0, mistakes = 0, updates = 0, pos = -1
    cdef const double* x
    cdef const int* idx
    cdef double m, n, zmax, chk, sg, loss_sum = 0.0
    cdef int status = OK
    cdef double[::1] buf = np.empty(9 * smax + 3 * DK + 1 + K)
    cdef Py_ssize_t[::1] on = np.empty(smax, dtype=np.intp)
    cdef double* zs = &buf[0]
    cdef double* w = &W[0, 0]
    cdef L1Work L
    L.p = zs + smax
    L.a = L.p + smax
    L.vs = L.a + smax
    L.us = L.vs + smax
    L.br = <L1Break*>(L.us + smax)     # 2 smax structs of two doubles
    L.vo = L.us + 5 * smax
    L.suffix = L.vo + DK
    L.wnew = L.suffix + DK + 1
    cdef double* sc = L.wnew + DK      # K class scores
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&R, i, &x, &idx)
            all_dots(w, K, x, idx, nnz, bias, D, sc)
            if not all_finite(sc, K):
                status = NONFINITE_INPUT
                pos = i
                break
            yi = y[i]
            rounds += 1
            if argmax_first(sc, K) != yi:
                mistakes += 1
            c = competitor(sc, K, yi)
            m = sc[yi] - sc[c]
            if m >= 1.0:
                continue
            loss_sum += 1.0 - m
            # support of Delta in the flat (D, K) state, positions increasing
            lo = yi if yi < c else c
            hop = c - yi if yi < c else yi - c
            sg = 1.0 if yi < c else -1.0   # sign of Delta at j K + lo
            s = 0
            for j in range(nnz):
                if x[j] != 0.0:
                    on[s] = idx[j] * K + lo
                    zs[s] = sg * x[j]
                    on[s + 1] = on[s] + hop
                    zs[s + 1] = -sg * x[j]
                    s += 2
            if bias != 0.0:
                on[s] = (D - 1) * K + lo
                zs[s] = sg * bias
                on[s + 1] = on[s] + hop
                zs[s + 1] = -sg * bias
                s += 2
            n = 0.0
            zmax = 0.0
            for j in range(s):
                n += zs[j] * zs[j]
                if fabs(zs[j]) > zmax:
                    zmax = fabs(zs[j])
            if not isfinite(n):
                status = NONFINITE_INPUT
                pos = i
                rounds -= 1
                break
            if n == 0.0:
                continue  # x~ = 0: Delta = 0 cannot move the margin, no update
            if beta * zmax <= 1.0:
                status = INFEASIBLE
                pos = i
                rounds -= 1
                break
            # off the support wnew = S_lam(w) is finite when w and lam are: check
            # lam and the support only (O(nnz), not O(K D))
            chk = _l1_update(w, DK, &on[0], zs, s, beta, zmax, &L)
            for j in range(s):
                chk += L.wnew[on[j]]
            if not isfinite(chk):
                status = NONFINITE_STATE
                pos = i
                rounds -= 1
                break
            for j in range(DK):
                w[j] = L.wnew[j]
            updates += 1
    return rounds, mistakes, updates, loss_sum, status, pos
