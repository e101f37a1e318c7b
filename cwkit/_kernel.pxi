# Kernel (dual) drivers: the model is a support set {x_j} with coefficients,
# f_c(x) = s sum_j coef[j, c] k~(x_j, x), k~(a, b) = k(a, b) + bias^2 (the
# intercept as an augmented constant feature, as in the primal drivers).
#
# The support set is a pool of CSR rows (nonzeros only) with one slot per
# support vector: start and length into the pool, its squared norm.  A new
# support vector is appended at the end of the pool; a removed one leaves its
# slot (the slots after it shift down, keeping them in insertion order) and a
# hole in the pool, which the Python layer compacts between calls.  The caller
# gives room for every row of the call (slots and pool).
#
# Kernel rows: x is scattered into a dense work vector once (a dense row is
# read in place) and each support vector's dot is a walk over its nonzeros;
# RBF is exp(-gamma (||x||^2 + ||x_j||^2 - 2 x.x_j)) from the cached norms.
#
# Provides: BudgetPolicy, KAUX_* slots, kernel_fo_pass (perceptron,
# averaged perceptron, PA family, [LMC09] family; binary and top-1),
# kernel_so_pass and kernel_so_top1_pass (CW-Var, CW-Stdev, AROW, AROW-H in the
# dual form Sigma = a I + Phi^T Z Phi, their matrices kept by slot (`DualSO`); their
# update `so_dual_update` / `so_dual_commit` and, on a budget, the projecting removal
# `so_dual_remove` written once), kernel_bpa_pass and kernel_bpa_top1_pass
# (mini-batch PA), kernel_scores (test-time scores and x^T Sigma x).
# Uses: RowView, get_row (_rows.pxi); KernelFn, kernel_fn, kernel_value, gram_row
# (_gram.pxi); cwkit_tri_rows (_tri.pxi); bpa_gram_row, bpa_box (_minibatch.pxi);
# Counts, counts_start, count_margin, count_argmax, count_round, count_hinge, fail_row,
# fail_round, Workspace, scaled_rescale (_driver.pxi); Hyper, fo_step, hyper_first_order,
# hyper_second_order, AUX_* (_binary.pxi); full_step (_full.pxi); competitor,
# all_finite (_mc_rows.pxi).

from libc.string cimport memcpy, memmove, memset


cpdef enum BudgetPolicy:
    BUDGET_OLDEST = 0       # shrink by the Forgetron's phi_t, remove the oldest [DSS08]
    BUDGET_SMALLEST = 1     # remove the one whose removal changes f least in the RKHS
    BUDGET_SHRINK = 2       # [LMC09] rules: their own shrinkage, remove the smallest weight


# aux[] slots of a kernel model beyond AUX_S, AUX_VN2, AUX_T of _binary.pxi
cpdef enum:
    KAUX_N = 3              # support vectors held
    KAUX_USED = 4           # pool entries used (holes included)
    KAUX_Q = 5              # the Forgetron's Q: sum of Psi over the shrinks so far
    KAUX_M = 6              # the Forgetron's M: support vectors added so far
    KAUX_P = 7              # averaging: rounds since the sums u were last brought up to date
    KAUX_SIZE = 8


cdef struct Support:
    double* data            # pool values
    int* indices            # pool feature indices
    long long* start        # per slot: offset into the pool
    long long* length       # per slot: nonzeros
    double* sqn             # per slot: squared norm
    Py_ssize_t n            # slots in use
    long long used          # pool entries in use


cdef Support support_of(double[::1] data, int[::1] indices, long long[::1] start,
                        long long[::1] length, double[::1] sqn, Py_ssize_t n,
                        long long used):
    cdef Support S
    S.data = &data[0] if data.shape[0] > 0 else NULL
    S.indices = &indices[0] if indices.shape[0] > 0 else NULL
    S.start = &start[0] if start.shape[0] > 0 else NULL
    S.length = &length[0] if length.shape[0] > 0 else NULL
    S.sqn = &sqn[0] if sqn.shape[0] > 0 else NULL
    S.n = n
    S.used = used
    return S


cdef inline double sv_dot(const Support* S, Py_ssize_t j, const double* xd) noexcept nogil:
    """x.x_j with x dense in xd."""
    cdef long long p, a = S.start[j], b = S.start[j] + S.length[j]
    cdef double dot = 0.0
    for p in range(a, b):
        dot += S.data[p] * xd[S.indices[p]]
    return dot


cdef inline bint sv_full(const Support* S, Py_ssize_t j, Py_ssize_t L) noexcept nogil:
    """Whether support vector j has the L entries of indices 0..L-1 (its indices
    increase, so the first 0 and the last L - 1 say so)."""
    cdef long long a = S.start[j]
    return S.length[j] == L and S.indices[a] == 0 and S.indices[a + L - 1] == L - 1


cdef inline void sv_dots(const Support* S, const double* xd, double* out) noexcept nogil:
    """out[j] = x.x_j for every support vector, x dense in xd.  Runs of four support
    vectors with every feature of x's first L (dense rows) are walked together without
    their indices: four independent sums, each in the order of `sv_dot`, so the same
    values, without one sum's chain of dependent additions setting the pace."""
    cdef Py_ssize_t j = 0, q, L
    cdef const double* v0
    cdef const double* v1
    cdef const double* v2
    cdef const double* v3
    cdef double d0, d1, d2, d3, xq
    while j + 4 <= S.n:
        L = S.length[j]
        if not (L > 0 and sv_full(S, j, L) and sv_full(S, j + 1, L)
                and sv_full(S, j + 2, L) and sv_full(S, j + 3, L)):
            out[j] = sv_dot(S, j, xd)
            j += 1
            continue
        v0 = S.data + S.start[j]
        v1 = S.data + S.start[j + 1]
        v2 = S.data + S.start[j + 2]
        v3 = S.data + S.start[j + 3]
        d0 = 0.0
        d1 = 0.0
        d2 = 0.0
        d3 = 0.0
        for q in range(L):
            xq = xd[q]
            d0 += v0[q] * xq
            d1 += v1[q] * xq
            d2 += v2[q] * xq
            d3 += v3[q] * xq
        out[j] = d0
        out[j + 1] = d1
        out[j + 2] = d2
        out[j + 3] = d3
        j += 4
    for j in range(j, S.n):
        out[j] = sv_dot(S, j, xd)


cdef inline void kernel_row(const Support* S, const KernelFn* kf, const double* xd, double sqn,
                            double* out) noexcept nogil:
    """out[j] = k~(x_j, x) for every support vector, x dense in xd."""
    cdef Py_ssize_t j
    sv_dots(S, xd, out)
    for j in range(S.n):
        out[j] = kernel_value(kf, out[j], sqn, S.sqn[j])


cdef inline const double* dense_row(const Rows* R, const double* x, const int* idx,
                                    Py_ssize_t nnz, double* xd, double* sqn) noexcept nogil:
    """The row as a dense vector (a dense row in place, a CSR row scattered into the
    zeroed xd) and its squared norm."""
    cdef Py_ssize_t j
    cdef double q = 0.0
    for j in range(nnz):
        q += x[j] * x[j]
    sqn[0] = q
    if R.indptr == NULL:
        return x
    for j in range(nnz):
        xd[idx[j]] = x[j]
    return xd


cdef inline void clear_row(const Rows* R, const int* idx, Py_ssize_t nnz,
                           double* xd) noexcept nogil:
    """Zero xd again after `dense_row` scattered a CSR row into it."""
    cdef Py_ssize_t j
    if R.indptr != NULL:
        for j in range(nnz):
            xd[idx[j]] = 0.0


cdef inline void sv_append(Support* S, const double* x, const int* idx, Py_ssize_t nnz,
                           double sqn) noexcept nogil:
    """Append x (its nonzeros) as the newest support vector."""
    cdef Py_ssize_t j
    cdef long long p = S.used
    for j in range(nnz):
        if x[j] != 0.0:
            S.data[p] = x[j]
            S.indices[p] = idx[j]
            p += 1
    S.start[S.n] = S.used
    S.length[S.n] = p - S.used
    S.sqn[S.n] = sqn
    S.used = p
    S.n += 1


cdef inline void shift_rows(double* a, Py_ssize_t j, Py_ssize_t n, Py_ssize_t width) noexcept nogil:
    """Remove row j of the n rows of `width` values at a (the later rows move up)."""
    if width > 0 and j + 1 < n:
        memmove(a + j * width, a + (j + 1) * width, (n - j - 1) * width * sizeof(double))


cdef inline void sv_remove(Support* S, Py_ssize_t j) noexcept nogil:
    """Remove slot j (its pool entries become a hole)."""
    cdef Py_ssize_t t
    for t in range(j, S.n - 1):
        S.start[t] = S.start[t + 1]
        S.length[t] = S.length[t + 1]
        S.sqn[t] = S.sqn[t + 1]
    S.n -= 1


cdef inline double sv_kjj(const Support* S, const KernelFn* kf, Py_ssize_t j) noexcept nogil:
    """k~(x_j, x_j)."""
    return kernel_value(kf, S.sqn[j], S.sqn[j], S.sqn[j])


cdef inline Py_ssize_t budget_victim(const Support* S, const KernelFn* kf, const double* coef,
                                     Py_ssize_t Kc, int policy) noexcept nogil:
    """The support vector to remove (never the newest): the oldest; the one of the
    least ||f - f_without_j||^2 = sum_c coef[j, c]^2 k~(x_j, x_j) ("smallest"); or of
    the least weight max_c |coef[j, c]| ("shrink"); ties to the oldest."""
    cdef Py_ssize_t j, c, best = 0
    cdef double q, best_q = 0.0
    if policy == BUDGET_OLDEST:
        return 0
    for j in range(S.n - 1):
        q = 0.0
        for c in range(Kc):
            if policy == BUDGET_SHRINK:
                q = max(q, fabs(coef[j * Kc + c]))
            else:
                q += coef[j * Kc + c] * coef[j * Kc + c]
        if policy == BUDGET_SMALLEST:
            q *= sv_kjj(S, kf, j)
        if j == 0 or q < best_q:
            best = j
            best_q = q
    return best


cdef inline void sv_scores(const double* coef, Py_ssize_t n, Py_ssize_t Kc, const double* krow,
                           double s, double* sc) noexcept nogil:
    """sc[c] = s sum_j coef[j, c] krow[j]."""
    cdef Py_ssize_t j, c
    for c in range(Kc):
        sc[c] = 0.0
    for j in range(n):
        for c in range(Kc):
            sc[c] += coef[j * Kc + c] * krow[j]
    for c in range(Kc):
        sc[c] *= s


cdef inline void sv_kernel_row(const Support* S, const KernelFn* kf, Py_ssize_t j,
                               double* xd, double* krow) noexcept nogil:
    """krow[i] = k~(x_i, x_j) for support vector j; xd (zero) is used and left zero."""
    cdef long long p
    for p in range(S.start[j], S.start[j] + S.length[j]):
        xd[S.indices[p]] = S.data[p]
    kernel_row(S, kf, xd, S.sqn[j], krow)
    for p in range(S.start[j], S.start[j] + S.length[j]):
        xd[S.indices[p]] = 0.0


cdef inline double forgetron_phi(double sig, double wf, double* Q, double M) noexcept nogil:
    """The Forgetron's shrinking coefficient [DSS08]: the largest phi in (0, 1] with
    Psi(sig phi, phi mu) + Q <= (15/32) M, Psi(lam, mu) = lam^2 + 2 lam - 2 lam mu, for
    the removed example of weight sig and sig mu = wf (its weight times the score f'
    gives it); Q += Psi.  Psi + Q - 15 M / 32 = a phi^2 + b phi + c is negative at 0 and
    positive at 1 when phi < 1, and its root in (0, 1) is -2 c / (b + sqrt(b^2 - 4 a c))
    whatever the sign of a."""
    cdef double a = sig * sig - 2.0 * wf, b = 2.0 * sig, c = Q[0] - 15.0 / 32.0 * M
    cdef double phi = 1.0, D
    if a + b + c > 0.0 and c < 0.0:
        D = b * b - 4.0 * a * c
        phi = -2.0 * c / (b + sqrt(D if D > 0.0 else 0.0))
        if phi > 1.0:
            phi = 1.0
    Q[0] += a * phi * phi + b * phi
    return phi


cdef inline double removed_norm_change(const Support* S, const KernelFn* kf,
                                       const double* coef, Py_ssize_t Kc, Py_ssize_t j,
                                       double* xd, Py_ssize_t n_cols,
                                       double* krow, double* sc) noexcept nogil:
    """The change of ||V||^2 = sum_c ||V_c||^2 (V = sum_j coef[j] phi(x_j)) when
    support vector j is removed: -2 sum_c coef[j, c] V_c.phi(x_j) + ||coef[j]||^2 k~jj.
    xd (n_cols, zero) is used and left zero."""
    cdef Py_ssize_t c
    cdef double q = 0.0, sq = 0.0
    sv_kernel_row(S, kf, j, xd, krow)
    sv_scores(coef, S.n, Kc, krow, 1.0, sc)
    for c in range(Kc):
        q += coef[j * Kc + c] * sc[c]
        sq += coef[j * Kc + c] * coef[j * Kc + c]
    return -2.0 * q + sq * sv_kjj(S, kf, j)


def kernel_fo_pass(RowView rows not None, const double[::1] y, const Py_ssize_t[::1] order,
                   double bias, int kind, double gamma, int degree, double coef0,
                   int rule, double C, double alpha, double beta,
                   Py_ssize_t budget, int policy,
                   double[::1] sv_data, int[::1] sv_idx, long long[::1] sv_start,
                   long long[::1] sv_len, double[::1] sv_sqn, double[:, ::1] coef,
                   double[:, ::1] u, double[::1] aux):
    """One pass of a first-order rule in dual form (the rules of `first_order_pass`).

    f_c(x) = s sum_j coef[j, c] k~(x_j, x); coef has one column (binary, y = +-1)
    or K (top-1, y = class codes).  Averaging (u has rows, same shape): u sums each
    support vector's weights s coef_j over the rounds up to P = aux[KAUX_P] rounds
    ago; the weights only change at an update, which first adds the P rounds,
    P s coef_j (O(n), below the O(n nnz) of the round's kernel row), so the sum
    to date is u_j + P s coef_j: each term a sum of the same-signed weights, no
    cancellation however much s shrinks.  aux: s, ||V||^2 (l2-pa), t, the
    support vectors held, the pool entries used, the Forgetron's Q and M, P.
    budget > 0 keeps at most budget support vectors (`BudgetPolicy`; "oldest" shrinks
    by the Forgetron's phi_t first, except for the [LMC09] rules, which shrink by
    their own 1 / Z).  Slots and pool must have room for every row of `order`.
    Returns (rounds, mistakes, updates, loss_sum, status, position).
    """
    cdef Hyper h = hyper_first_order(rule, C, alpha, beta)
    cdef KernelFn kf = kernel_fn(kind, gamma, degree, coef0, bias)
    cdef Support S = support_of(sv_data, sv_idx, sv_start, sv_len, sv_sqn,
                                <Py_ssize_t>aux[KAUX_N], <long long>aux[KAUX_USED])
    cdef Py_ssize_t Kc = coef.shape[1], k, i, nnz, c, yi = 0, comp = 0, yhat, j
    cdef Py_ssize_t n_cols = rows.R.n_cols
    cdef bint binary = Kc == 1, avg = u.shape[0] > 0, is_perc
    cdef bint track_norm = rule == L2_PA
    cdef bint own_shrink = rule == REG_PA or rule == L2_PA or rule == SOFT_REG_PA
    cdef bint forget = policy == BUDGET_OLDEST and not own_shrink
    cdef Counts cnt = counts_start(rows, y)
    cdef const double* x
    cdef const int* idx
    cdef const double* xr
    cdef double sqn, kxx, m, n, tau, Z, cf, dn2, s = aux[AUX_S], vn2 = aux[AUX_VN2]
    cdef double t = aux[AUX_T], Q = aux[KAUX_Q], M = aux[KAUX_M], P = aux[KAUX_P]
    cdef double sig, wf
    cdef int st = OK
    cdef Workspace ws = Workspace()
    cdef double* xd = <double*>ws.take((n_cols + 1) * sizeof(double), True)
    cdef double* krow = ws.doubles(coef.shape[0] + 1)
    cdef double* sc = ws.doubles(2 * Kc + 1)
    cdef double* cp = &coef[0, 0] if coef.shape[0] > 0 else NULL
    cdef double* up = &u[0, 0] if u.shape[0] > 0 else NULL
    is_perc = rule == PERCEPTRON or rule == AVG_PERCEPTRON
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&rows.R, i, &x, &idx)
            xr = dense_row(&rows.R, x, idx, nnz, xd, &sqn)
            kernel_row(&S, &kf, xr, sqn, krow)
            clear_row(&rows.R, idx, nnz, xd)
            kxx = kernel_value(&kf, sqn, sqn, sqn)
            sv_scores(cp, S.n, Kc, krow, s, sc)
            if not isfinite(sqn):
                fail_row(&cnt, NONFINITE_INPUT, i)
                break
            if binary:
                m = y[i] * sc[0]
                if not count_margin(&cnt, m, kxx, i):
                    break
                t += 1.0
                h.s = row_weight(&cnt, i)
                tau = fo_step(&h, m, kxx, s * s * vn2, sc[0], &Z, &st)
                n = kxx
            else:
                if not (all_finite(sc, Kc) and isfinite(kxx)):
                    fail_row(&cnt, NONFINITE_INPUT, i)
                    break
                yi = <Py_ssize_t>y[i]
                if yi < 0 or yi >= Kc:         # the caller's codes: never out of range
                    fail_row(&cnt, NONFINITE_INPUT, i)
                    break
                yhat = count_argmax(&cnt, sc, Kc, yi, i)
                comp = yhat if is_perc else competitor(sc, Kc, yi)
                m = sc[yi] - sc[comp]
                count_hinge(&cnt, m)
                n = 2.0 * kxx                  # ||f(x, y) - f(x, c)||^2
                h.s = row_weight(&cnt, i)
                if is_perc:
                    tau = h.s if yhat != yi else 0.0
                    Z = 1.0
                else:
                    tau = fo_step(&h, m, n, s * s * vn2, m, &Z, &st)
                t += 1.0
            if st != OK:
                fail_round(&cnt, st, i)
                break
            if tau == 0.0:
                P += 1.0
                continue
            # the new support vector x with coefficient (tau y / s), then s <- s / Z
            cf = (tau * y[i] if binary else tau) / s          # s in [S_MIN, S_MAX]
            dn2 = 2.0 * cf * m / s * (y[i] if binary else 1.0) + cf * cf * n
            if not (isfinite(cf) and isfinite(vn2 + dn2)):
                fail_round(&cnt, NONFINITE_STATE, i)
                break
            for c in range(Kc):
                cp[S.n * Kc + c] = 0.0
            if binary:
                cp[S.n] = cf
            else:
                cp[S.n * Kc + yi] = cf
                cp[S.n * Kc + comp] = -cf
            if avg:                                # the rounds of the old weights
                for j in range(S.n * Kc):
                    up[j] += P * s * cp[j]
                for c in range(Kc):
                    up[S.n * Kc + c] = 0.0
                P = 0.0
            sv_append(&S, x, idx, nnz, sqn)
            M += 1.0
            if track_norm:
                vn2 += dn2
            cnt.updates += 1
            s = scaled_rescale(cp, S.n * Kc, 1, s / Z, &vn2)     # Z >= 1
            if budget > 0 and S.n > budget:
                j = budget_victim(&S, &kf, cp, Kc, policy)
                if forget:                         # [DSS08]: f <- phi f, then remove x_0
                    sv_kernel_row(&S, &kf, 0, xd, krow)
                    sv_scores(cp, S.n, Kc, krow, s, sc)
                    sig = 0.0
                    wf = 0.0
                    for c in range(Kc):
                        sig = max(sig, fabs(s * cp[c]))
                        wf += s * cp[c] * sc[c]
                    s = scaled_rescale(cp, S.n * Kc, 1, s * forgetron_phi(sig, wf, &Q, M),
                                       &vn2)
                if track_norm:
                    vn2 += removed_norm_change(&S, &kf, cp, Kc, j, xd, n_cols, krow, sc)
                    if vn2 < 0.0:
                        vn2 = 0.0                  # rounding: ||V||^2 >= 0
                shift_rows(cp, j, S.n, Kc)
                if avg:
                    shift_rows(up, j, S.n, Kc)
                sv_remove(&S, j)
            P += 1.0
    aux[AUX_S] = s
    aux[AUX_VN2] = vn2
    aux[AUX_T] = t
    aux[KAUX_N] = S.n
    aux[KAUX_USED] = S.used
    aux[KAUX_Q] = Q
    aux[KAUX_M] = M
    aux[KAUX_P] = P
    return counts_result(&cnt)


cdef inline double so_quad(const double* Zm, Py_ssize_t n, Py_ssize_t ld, const double* krow,
                           double* z) noexcept nogil:
    """z = Z k and k^T Z k (test-time scores)."""
    cdef Py_ssize_t a, b
    cdef double q = 0.0, acc
    for a in range(n):
        acc = 0.0
        for b in range(n):
            acc += Zm[a * ld + b] * krow[b]
        z[a] = acc
        q += krow[a] * acc
    return q


# The drivers' matrices: Z and, on a budget, G = (K + lam I)^-1 are kept by slot,
# not in the support set's order: item a (in insertion order, as the support set,
# mu and pairs) sits in row and column slot[a]; a removed item's slot, its row and
# column zeroed, takes the next new item, so a removal moves no rows (the Python
# layer puts the matrices back in item order after the call).  Both are symmetric
# and kept as their lower triangle, packed by rows (row p's entries q <= p at
# p (p + 1) / 2 + q, `tri`): half the memory to read and write.  Each is kept as
# A + sum_t s_t u_t u_t^T with rank-one terms pending (`LowRank`): an update and its
# removal add their terms in O(n) (the removal reads its column through them), and A
# takes them in the sweep of its next matrix-vector product (`lr_mv`: each row takes
# its terms, then its share of the product; `cwkit_tri_rows`, with AVX2 where the
# processor has it, the same bits either way), Z at the next round and G at the next
# update, so each matrix is read and written once per use (memory traffic: the
# matrices do not fit in a core's cache).  A term is the same whenever it is taken,
# and the call's end takes what is pending (`dso_end`), so the result does not
# depend on how the rows are split into calls.
cdef enum:
    SO_PENDING = 32         # at most 32 (`cwkit_tri_rows`)

cdef struct LowRank:
    double* A               # the lower triangle by slot, packed by rows (`tri`)
    double* U               # (SO_PENDING, ld): the pending u_t
    double* s               # (SO_PENDING): their s_t
    Py_ssize_t m            # terms pending


cdef struct DualSO:
    LowRank Z
    LowRank G               # G.A NULL without a budget
    Py_ssize_t ld
    Py_ssize_t P            # slots in use or freed: 0 .. P - 1
    Py_ssize_t free         # a freed slot (zero row and column), or -1
    Py_ssize_t* slot        # item -> slot
    double* kp              # the round's inner products by slot (0 at free slots)
    double* zk              # Z kp, then c = Sigma x's coefficients by slot
    double* w               # G kp, then G's new column
    double* zs              # a removed slot's column of Z
    double* gs              # a removed slot's column of G
    double beta             # Z' = Z - beta c c^T
    double sg               # G' = G + w w^T / sg
    double lam


cdef inline Py_ssize_t tri(Py_ssize_t p) noexcept nogil:
    """Where row p of a lower triangle packed by rows starts: p (p + 1) / 2."""
    return (p * (p + 1)) >> 1


cdef inline double lr_mv(LowRank* L, Py_ssize_t P, Py_ssize_t ld, const double* x,
                         double* out) noexcept nogil:
    """The pending terms taken, then out = A x over the first P slots and returns
    x^T out, in one sweep of the rows (`cwkit_tri_rows`: row p takes its terms, gives
    out[p] its entries q <= p and adds x_p times its entries q < p to out[q], A's
    entries p > q of column q)."""
    cdef Py_ssize_t q
    cdef double d = 0.0
    cwkit_tri_rows(L.A, P, L.U, L.s, L.m, ld, x, out)
    L.m = 0
    for q in range(P):
        d += x[q] * out[q]
    return d


cdef inline void lr_col(const LowRank* L, Py_ssize_t P, Py_ssize_t ld, Py_ssize_t j,
                        double* out) noexcept nogil:
    """out = column (= row) j of A + sum_t s_t u_t u_t^T over the first P slots."""
    cdef Py_ssize_t q, t
    cdef const double* row = L.A + tri(j)
    cdef double a
    for q in range(j + 1):
        out[q] = row[q]
    for q in range(j + 1, P):
        out[q] = L.A[tri(q) + j]
    for t in range(L.m):
        row = L.U + t * ld
        a = L.s[t] * row[j]
        for q in range(P):
            out[q] += a * row[q]


cdef inline double lr_diag(const LowRank* L, Py_ssize_t ld, Py_ssize_t j) noexcept nogil:
    """Entry (j, j) of A + sum_t s_t u_t u_t^T."""
    cdef Py_ssize_t t
    cdef double d = L.A[tri(j) + j], u
    for t in range(L.m):
        u = L.U[t * ld + j]
        d += L.s[t] * u * u
    return d


cdef inline void lr_flush(LowRank* L, Py_ssize_t P, Py_ssize_t ld) noexcept nogil:
    """A takes the pending terms (`cwkit_tri_rows`); none pending after."""
    if L.m > 0:
        cwkit_tri_rows(L.A, P, L.U, L.s, L.m, ld, NULL, NULL)
    L.m = 0


cdef inline void lr_push(LowRank* L, Py_ssize_t P, Py_ssize_t ld, const double* u,
                         double s) noexcept nogil:
    """Add the term s u u^T (u over the first P slots, 0 beyond)."""
    cdef double* dst = L.U + L.m * ld
    memcpy(dst, u, P * sizeof(double))
    memset(dst + P, 0, (ld - P) * sizeof(double))
    L.s[L.m] = s
    L.m += 1
    if L.m == SO_PENDING:
        lr_flush(L, P, ld)


cdef inline void lr_zero_slot(LowRank* L, Py_ssize_t P, Py_ssize_t ld,
                              Py_ssize_t j) noexcept nogil:
    """Row and column j of A + sum_t s_t u_t u_t^T set to zero (A's, and the u_tj)."""
    cdef Py_ssize_t q, t
    memset(L.A + tri(j), 0, (j + 1) * sizeof(double))
    for q in range(j + 1, P):
        L.A[tri(q) + j] = 0.0
    for t in range(L.m):
        L.U[t * ld + j] = 0.0


cdef inline void pack_lower(double* A, Py_ssize_t n, Py_ssize_t room,
                            Py_ssize_t ld) noexcept nogil:
    """The leading n x n block of A (rows of ld values, symmetric) as its lower
    triangle packed by rows (`tri`), in place, and zero to row room."""
    cdef Py_ssize_t p
    for p in range(n):
        memmove(A + tri(p), A + p * ld, (p + 1) * sizeof(double))
    memset(A + tri(n), 0, (tri(room) - tri(n)) * sizeof(double))


cdef inline void unpack_lower(double* A, Py_ssize_t P, Py_ssize_t room,
                              Py_ssize_t ld) noexcept nogil:
    """`pack_lower` undone for P rows: the full symmetric P x P block of A (rows of
    ld values, zero beyond it to row room), in place."""
    cdef Py_ssize_t p, q
    for p in range(P - 1, -1, -1):
        memmove(A + p * ld, A + tri(p), (p + 1) * sizeof(double))
        memset(A + p * ld + p + 1, 0, (ld - p - 1) * sizeof(double))
    memset(A + P * ld, 0, (room - P) * ld * sizeof(double))
    for p in range(P):
        for q in range(p):
            A[q * ld + p] = A[p * ld + q]


cdef inline double dso_quad(DualSO* D, const double* col, Py_ssize_t n) noexcept nogil:
    """col (the n items' inner products with the round's direction) by slot into kp;
    zk = Z kp; returns kp^T Z kp."""
    cdef Py_ssize_t a
    for a in range(n):
        D.kp[D.slot[a]] = col[a]
    return lr_mv(&D.Z, D.P, D.ld, D.kp, D.zk)


cdef inline bint so_dual_update(DualSO* D, double ay, double beta, double a0, double* mu,
                                Py_ssize_t n, double diag) noexcept nogil:
    """The full-covariance step mu += ay Sigma x, Sigma -= beta Sigma x x^T Sigma
    (`full_step`) in the dual form mu = sum_j mu_j Phi_j, Sigma = a0 I + Phi^T Z Phi
    over the n support items and the new one (slot ns): with zk = Z k (`dso_quad`),
    Sigma x = Phi'^T c for c = (Z k, a0), so mu' = (mu + ay c[:n], ay a0) and
    Z' = Z - beta c c^T (ns's row and column were zero).  On a budget,
    G' = (K' + lam I)^-1 by block inversion: w = G k, s = diag + lam - k^T G k (the
    Schur complement, >= lam exactly; held at lam against rounding),
    G' = G + (w - e_ns)(w - e_ns)^T / s; diag is the new item's inner product with
    itself.  The matrices' terms are added by `so_dual_commit` or `so_dual_remove`.
    False, with nothing changed, when a value would not be finite."""
    cdef Py_ssize_t a, ns
    cdef double chk = 0.0, cmax = fabs(a0), s
    for a in range(n):
        chk += mu[a] + ay * D.zk[D.slot[a]]
        cmax = max(cmax, fabs(D.zk[D.slot[a]]))
    chk += ay * a0
    if not (isfinite(chk) and isfinite(beta * cmax * cmax)):
        return False
    if D.free >= 0:
        ns = D.free
        D.free = -1
    else:
        ns = D.P
        D.P += 1
        D.kp[ns] = 0.0
    for a in range(n):
        mu[a] += ay * D.zk[D.slot[a]]
    mu[n] = ay * a0
    D.slot[n] = ns
    D.zk[ns] = a0
    D.beta = beta
    if D.G.A != NULL:
        s = diag + D.lam - lr_mv(&D.G, D.P, D.ld, D.kp, D.w)
        D.sg = s if s > D.lam else D.lam
        D.w[ns] = -1.0
    return True


cdef inline void so_dual_commit(DualSO* D) noexcept nogil:
    """The update's terms pending: Z += -beta c c^T, G += w w^T / s (taken by each
    matrix's next product, `lr_mv`, or at the call's end, `dso_end`)."""
    lr_push(&D.Z, D.P, D.ld, D.zk, -D.beta)
    if D.G.A != NULL:
        lr_push(&D.G, D.P, D.ld, D.w, 1.0 / D.sg)


cdef inline Py_ssize_t so_dual_remove(DualSO* D, Support* S, double* mu, double* pairs,
                                      int policy) noexcept nogil:
    """The update's terms (`so_dual_commit`), then one support item (never the
    newest) removed.  Its term mu_j Phi_j is first projected onto the items kept, as
    the Projectron [OKC09] and budgeted PA with projection [WV10] do: mu_-j += mu_j d
    with d = (K_-j,-j + lam I)^-1 K_-j,j, which is -G_-j,j / G_jj from
    G = (K + lam I)^-1 (block inversion), O(n).  The item is the oldest, or
    ("smallest") the one whose projection leaves the least residual,
    mu_j^2 / G_jj = mu_j^2 (K_jj + lam - K_j,-j d); ties to the oldest.  Then G and Z
    lose it by their Schur complements M_-j,-j - M_-j,j M_j,-j / M_jj (one more term
    each, row and column j zeroed): G stays the inverse for the items kept; Z,
    negative semi-definite (a sum of -beta c c^T and of such complements, so
    Z_jj <= 0; Z_jj = 0 makes its column zero: plain removal), keeps
    Sigma = a I + Phi^T Z Phi positive semi-definite: for any v, with
    g_i = <Phi_i, v>, v^T Sigma' v = a ||v||^2 - min_t (g_-j, t)^T (-Z) (g_-j, t)
    >= v^T Sigma v >= 0 (the complement is the minimum over the removed coordinate)
    and Sigma' <= a I, where removing row and column j alone can leave Sigma
    indefinite.  The item's pair goes with it (top-1: pairs not NULL).  Returns the
    position the item had."""
    cdef Py_ssize_t n = S.n, a, j = 0, s, sa
    cdef double q, best_q = 0.0, f, zss
    so_dual_commit(D)
    if policy != BUDGET_OLDEST:
        for a in range(n - 1):
            sa = D.slot[a]
            q = mu[a] * mu[a] / lr_diag(&D.G, D.ld, sa)
            if a == 0 or q < best_q:
                j = a
                best_q = q
    s = D.slot[j]
    lr_col(&D.G, D.P, D.ld, s, D.gs)
    lr_col(&D.Z, D.P, D.ld, s, D.zs)
    f = mu[j] / D.gs[s]
    for a in range(n):
        if a != j:
            mu[a] -= f * D.gs[D.slot[a]]
    lr_push(&D.G, D.P, D.ld, D.gs, -1.0 / D.gs[s])
    zss = D.zs[s]
    if zss < 0.0:
        lr_push(&D.Z, D.P, D.ld, D.zs, -1.0 / zss)
    lr_zero_slot(&D.G, D.P, D.ld, s)
    lr_zero_slot(&D.Z, D.P, D.ld, s)
    D.kp[s] = 0.0
    D.free = s
    for a in range(j, n - 1):
        D.slot[a] = D.slot[a + 1]
    shift_rows(mu, j, n, 1)
    if pairs != NULL:
        shift_rows(pairs, j, n, 2)
    sv_remove(S, j)
    return j


cdef inline LowRank lr_start(double* A, Py_ssize_t ld, Workspace ws) except *:
    """A with no term pending (room for SO_PENDING)."""
    cdef LowRank L
    L.A = A
    L.U = ws.doubles(SO_PENDING * (ld + 1) + 1) if A != NULL else NULL
    L.s = L.U + SO_PENDING * ld if A != NULL else NULL
    L.m = 0
    return L


cdef inline DualSO dso_start(double[:, ::1] Zm, double[:, ::1] Gm, Py_ssize_t[::1] slots,
                             Py_ssize_t n, Py_ssize_t budget, double lam,
                             Workspace ws) except *:
    """The drivers' matrices (`DualSO`) for n items in the slots `slots` (0 .. n - 1;
    room as Zm's rows), packed in place (`pack_lower`); G only on a budget."""
    cdef DualSO D
    cdef Py_ssize_t room = Zm.shape[0] + 1
    D.ld = Zm.shape[1]
    D.Z = lr_start(&Zm[0, 0] if Zm.shape[0] > 0 else NULL, D.ld, ws)
    D.G = lr_start(&Gm[0, 0] if budget > 0 and Gm.shape[0] > 0 else NULL, D.ld, ws)
    D.P = n
    if D.Z.A != NULL:
        pack_lower(D.Z.A, n, Zm.shape[0], D.ld)
    if D.G.A != NULL:
        pack_lower(D.G.A, n, Gm.shape[0], D.ld)
    D.free = -1
    D.slot = &slots[0] if slots.shape[0] > 0 else NULL
    D.kp = <double*>ws.take(5 * room * sizeof(double), True)
    D.zk = D.kp + room
    D.w = D.zk + room
    D.zs = D.w + room
    D.gs = D.zs + room
    D.beta = D.sg = 0.0
    D.lam = lam
    return D


cdef inline void dso_end(DualSO* D, Py_ssize_t room) noexcept nogil:
    """The pending terms taken by Z and G, and both back as full matrices by slot (the
    caller's state, rows of Zm and Gm; room their rows): the caller keeps G for its
    next call, so that a split stream projects as one call does."""
    if D.Z.A != NULL:
        lr_flush(&D.Z, D.P, D.ld)
        unpack_lower(D.Z.A, D.P, room, D.ld)
    if D.G.A != NULL:
        lr_flush(&D.G, D.P, D.ld)
        unpack_lower(D.G.A, D.P, room, D.ld)


cdef inline void so_avg_store(double[::1] aux, bint avg, double t, double P) noexcept:
    """Averaging: keep the round count t and P in aux (without averaging aux keeps
    its zeros, as before averaging was kept)."""
    if avg:
        aux[AUX_T] = t
        aux[KAUX_P] = P


cdef inline void so_avg_flush(double* u, const double* mu, Py_ssize_t n,
                              double* P) noexcept nogil:
    """Averaging, before an update changes mu: u_j += P mu_j for the P rounds mu held
    (u_j the sum of item j's coefficient over the rounds to P rounds ago), the new
    item's sum u_n = 0 and P = 0; so the sum to date is u + P mu at any time, O(n)
    per update and nothing in a round without one."""
    cdef Py_ssize_t j
    for j in range(n):
        u[j] += P[0] * mu[j]
    u[n] = 0.0
    P[0] = 0.0


def kernel_so_pass(RowView rows not None, const double[::1] y, const Py_ssize_t[::1] order,
                   double bias, int kind, double gamma, int degree, double coef0,
                   int rule, double phi, double r, double a0,
                   Py_ssize_t budget, int policy,
                   double[::1] sv_data, int[::1] sv_idx, long long[::1] sv_start,
                   long long[::1] sv_len, double[::1] sv_sqn, double[::1] mu,
                   double[:, ::1] Zm, double[:, ::1] Gm, Py_ssize_t[::1] slots, double lam,
                   double[::1] u, double[::1] aux):
    """One binary pass of a full-covariance rule (CW-Var, CW-Stdev, AROW, AROW-H) in
    dual form: mu = sum_j mu_j phi(x_j), Sigma = a0 I + Phi^T Z Phi.

    With k = k~(X_S, x): mu.x = mu^T k and v = x^T Sigma x = a0 k~(x, x) + k^T Z k;
    Sigma x = Phi'^T c with c = (Z k, a0) over the support set and x, so the
    step mu += ay Sigma x, Sigma -= beta Sigma x x^T Sigma (`full_step`) is
    mu' = (mu + ay Z k, ay a0), Z' = [[Z, 0], [0, 0]] - beta c c^T.  Zm holds the
    items by slot (`DualSO`; item a in row slots[a], on entry and on return; the
    pass keeps it packed in place).  On a budget (Gm with room as Zm, G =
    (K + lam I)^-1 over the support set, by slot on entry and on return), G
    is kept up to date (`so_dual_update`) and a removed item is projected
    (`so_dual_remove`).  Averaging (u with room as mu): the sums of `so_avg_flush`,
    with aux's t and P (rounds since the sums).  Returns (rounds, mistakes, updates,
    loss_sum, status, position).
    """
    cdef Hyper h = hyper_second_order(rule, phi, r, False)
    cdef KernelFn kf = kernel_fn(kind, gamma, degree, coef0, bias)
    cdef Support S = support_of(sv_data, sv_idx, sv_start, sv_len, sv_sqn,
                                <Py_ssize_t>aux[KAUX_N], <long long>aux[KAUX_USED])
    cdef Py_ssize_t k, i, nnz, j, n
    cdef Py_ssize_t n_cols = rows.R.n_cols
    cdef Counts cnt = counts_start(rows, y)
    cdef const double* x
    cdef const int* idx
    cdef const double* xr
    cdef double sqn, kxx, dot, v, m, ay, beta
    cdef double M = aux[KAUX_M], t = aux[AUX_T], P = aux[KAUX_P]
    cdef bint avg = u.shape[0] > 0
    cdef double* up = &u[0] if avg else NULL
    cdef Workspace ws = Workspace()
    cdef double* xd = <double*>ws.take((n_cols + 1) * sizeof(double), True)
    cdef double* krow = ws.doubles(mu.shape[0] + 1)
    cdef DualSO D = dso_start(Zm, Gm, slots, S.n, budget, lam, ws)
    cdef double* mp = &mu[0] if mu.shape[0] > 0 else NULL
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&rows.R, i, &x, &idx)
            xr = dense_row(&rows.R, x, idx, nnz, xd, &sqn)
            kernel_row(&S, &kf, xr, sqn, krow)
            clear_row(&rows.R, idx, nnz, xd)
            n = S.n
            kxx = kernel_value(&kf, sqn, sqn, sqn)
            dot = 0.0
            for j in range(n):
                dot += mu[j] * krow[j]
            v = a0 * kxx + dso_quad(&D, krow, n)
            m = y[i] * dot
            if not isfinite(sqn):
                fail_row(&cnt, NONFINITE_INPUT, i)
                break
            if not count_margin(&cnt, m, v, i):
                break
            t += 1.0
            h.s = row_weight(&cnt, i)
            if not full_step(&h, m, v, y[i], dot, &ay, &beta):
                P += 1.0
                continue
            if avg:
                so_avg_flush(up, mp, n, &P)
            if not so_dual_update(&D, ay, beta, a0, mp, n, kxx):
                fail_round(&cnt, NONFINITE_STATE, i)
                break
            sv_append(&S, x, idx, nnz, sqn)
            M += 1.0
            cnt.updates += 1
            if D.G.A != NULL and S.n > budget:
                j = so_dual_remove(&D, &S, mp, NULL, policy)
                if avg:
                    shift_rows(up, j, S.n + 1, 1)
            else:
                so_dual_commit(&D)
            P += 1.0
    dso_end(&D, Zm.shape[0])
    so_avg_store(aux, avg, t, P)
    aux[KAUX_N] = S.n
    aux[KAUX_USED] = S.used
    aux[KAUX_M] = M
    return counts_result(&cnt)


def kernel_scores(RowView rows not None, double bias, int kind, double gamma, int degree,
                  double coef0, const double[::1] sv_data, const int[::1] sv_idx,
                  const long long[::1] sv_indptr, const double[::1] sv_sqn,
                  const double[:, ::1] coef, const double[:, ::1] Zm, double a0,
                  double[:, ::1] out, double[::1] out_v):
    """out[i, c] = sum_j coef[j, c] k~(x_j, x_i) over a compact support set (CSR
    sv_indptr); with Zm (n x n) also out_v[i] = a0 k~(x, x) + k^T Z k."""
    cdef KernelFn kf = kernel_fn(kind, gamma, degree, coef0, bias)
    cdef Py_ssize_t nsv = coef.shape[0], Kc = coef.shape[1], i, nnz, j
    cdef Py_ssize_t n_cols = rows.R.n_cols
    cdef bint with_v = out_v.shape[0] > 0
    cdef const double* x
    cdef const int* idx
    cdef const double* xr
    cdef double sqn
    cdef Workspace ws = Workspace()
    cdef double* xd = <double*>ws.take((n_cols + 1) * sizeof(double), True)
    cdef double* krow = ws.doubles(nsv + 1)
    cdef double* z = ws.doubles(nsv + 1)
    cdef long long* starts = <long long*>ws.take((nsv + 1) * sizeof(long long), False)
    cdef long long* lengths = <long long*>ws.take((nsv + 1) * sizeof(long long), False)
    cdef Support S
    for j in range(nsv):
        starts[j] = sv_indptr[j]
        lengths[j] = sv_indptr[j + 1] - sv_indptr[j]
    S.data = <double*>&sv_data[0] if sv_data.shape[0] > 0 else NULL
    S.indices = <int*>&sv_idx[0] if sv_idx.shape[0] > 0 else NULL
    S.start = starts
    S.length = lengths
    S.sqn = <double*>&sv_sqn[0] if nsv > 0 else NULL
    S.n = nsv
    S.used = 0
    with nogil:
        for i in range(out.shape[0]):
            nnz = get_row(&rows.R, i, &x, &idx)
            xr = dense_row(&rows.R, x, idx, nnz, xd, &sqn)
            kernel_row(&S, &kf, xr, sqn, krow)
            clear_row(&rows.R, idx, nnz, xd)
            sv_scores(&coef[0, 0] if nsv > 0 else NULL, nsv, Kc, krow, 1.0, &out[i, 0])
            if with_v:
                out_v[i] = a0 * kernel_value(&kf, sqn, sqn, sqn) + \
                    so_quad(&Zm[0, 0] if nsv > 0 else NULL, nsv, nsv, krow, z)


cdef int kernel_bpa_solve(const Rows* R, const Py_ssize_t* rows, Py_ssize_t m,
                          const double* y, const double* wt, const Support* S,
                          const KernelFn* kf, const double* coef, int variant, double C,
                          double rho, BPAWork* W, double* xd, double* krow, double* sqr,
                          Py_ssize_t known, const double* fk, Py_ssize_t* bad) noexcept nogil:
    """The joint step tau (W.tau) on rows[0..m-1] ([GPA13] eqs. 14-19 with the block Gram
    matrix A_jk = y_j y_k k~(x_j, x_k) and the importance weights wt[row] of `bpa_box`,
    NULL: 1), the support set unchanged.  Rows k >= known come with f(x_k) = fk[k] and
    ||x_k||^2 = sqr[k] under the current support set (their prediction's: no kernel row
    again).  Returns a Status."""
    cdef const double* x
    cdef const int* idx
    cdef const double* xr
    cdef Py_ssize_t k, nk, it
    cdef double f, kkt
    cdef int st
    for k in range(m):
        if k < known:
            nk = get_row(R, rows[k], &x, &idx)
            xr = dense_row(R, x, idx, nk, xd, &sqr[k])
            kernel_row(S, kf, xr, sqr[k], krow)
            clear_row(R, idx, nk, xd)
            sv_scores(coef, S.n, 1, krow, 1.0, &f)
        else:
            f = fk[k]
        W.ell[k] = 1.0 - y[rows[k]] * f
        bpa_gram_row(R, rows, k, m, y, kf, sqr, W.Q)
        if not (isfinite(W.ell[k]) and isfinite(W.Q[k * m + k]) and isfinite(sqr[k])):
            bad[0] = rows[k]
            return NONFINITE_INPUT
    if not bpa_box(rows, m, wt, variant, C, rho, W) and variant != BPA_LS:
        return OK
    st = hildreth_solve(W.Q, W.ell, W.lo, W.hi, W.tau, m, 1e-15, 1000, W.qwork,
                        W.qiwork, &kkt, &it, bad)
    if st != OK:
        bad[0] = rows[m - 1]
        return QP_NOT_CONVERGED
    for k in range(m):
        if W.tau[k] != 0.0 and not isfinite(W.tau[k] * y[rows[k]]):
            bad[0] = rows[m - 1]
            return NONFINITE_STATE
    return OK


cdef int kernel_bpa_update(const Rows* R, const Py_ssize_t* rows, Py_ssize_t m,
                           const double* y, const double* wt, Support* S, const KernelFn* kf,
                           double* coef,
                           int variant, double C, double rho, BPAWork* W, double* xd,
                           double* krow, double* sqr, Py_ssize_t known, const double* fk,
                           bint* moved, Py_ssize_t* bad) noexcept nogil:
    """One joint update on rows[0..m-1] (`kernel_bpa_solve`): the rows with
    tau_k != 0 join the support set with coefficients tau_k y_k.  Returns a Status."""
    cdef const double* x
    cdef const int* idx
    cdef Py_ssize_t k, nk
    cdef int st = kernel_bpa_solve(R, rows, m, y, wt, S, kf, coef, variant, C, rho, W, xd,
                                   krow, sqr, known, fk, bad)
    moved[0] = False
    if st != OK:
        return st
    for k in range(m):
        if W.tau[k] == 0.0:
            continue
        moved[0] = True
        coef[S.n] = W.tau[k] * y[rows[k]]
        nk = get_row(R, rows[k], &x, &idx)
        sv_append(S, x, idx, nk, sqr[k])
    return OK


cdef inline void bpa_fill_known(const Rows* R, const Py_ssize_t* order, Py_ssize_t n_seen,
                                Py_ssize_t B, const Support* S, const KernelFn* kf,
                                const double* coef, Py_ssize_t Kc, double* xd, double* krow,
                                double* scsave, double* ssave) noexcept nogil:
    """Averaging: the scores (Kc per row) and squared norms of the n_seen rows carried
    from an earlier call under the current support set, by position modulo B, as the
    rows a call predicts (each provisional group then reads them)."""
    cdef const double* x
    cdef const int* idx
    cdef const double* xr
    cdef Py_ssize_t t, nnz
    for t in range(n_seen):
        nnz = get_row(R, order[t], &x, &idx)
        xr = dense_row(R, x, idx, nnz, xd, &ssave[t % B])
        kernel_row(S, kf, xr, ssave[t % B], krow)
        clear_row(R, idx, nnz, xd)
        sv_scores(coef, S.n, Kc, krow, 1.0, scsave + (t % B) * Kc)


cdef inline void bpa_avg_join(double* u, double* pu, double* gu, Py_ssize_t n0,
                              const double* tau, Py_ssize_t m, Py_ssize_t Kc) noexcept nogil:
    """Averaging, after a group's update appended its rows of tau_k != 0 from slot n0:
    each joins with the sum of its provisional coefficients pu[k] (Kc values; 0 in a
    sliding window), a row of tau_k = 0 leaves it in gu[k] (the averaged model keeps
    it; gu NULL on a budget, which drops it); pu is zeroed for the next group."""
    cdef Py_ssize_t k, c, a = n0
    for k in range(m):
        if tau[k] != 0.0:
            memcpy(u + a * Kc, pu + k * Kc, Kc * sizeof(double))
            a += 1
        elif gu != NULL:
            memcpy(gu + k * Kc, pu + k * Kc, Kc * sizeof(double))
        for c in range(Kc):
            pu[k * Kc + c] = 0.0


def kernel_bpa_pass(RowView rows not None, const double[::1] y, const Py_ssize_t[::1] order,
                    Py_ssize_t n_seen, double bias, int kind, double gamma, int degree,
                    double coef0, int variant, bint sliding, Py_ssize_t B, double C,
                    double rho, bint flush, Py_ssize_t budget, int policy,
                    double[::1] sv_data, int[::1] sv_idx, long long[::1] sv_start,
                    long long[::1] sv_len, double[::1] sv_sqn, double[::1] coef,
                    double[::1] u, double[::1] pu, double[::1] gu, double[::1] aux):
    """One pass of kernel mini-batch PA (the grouping of `bpa_pass`): every row
    predicted with f(x) = sum_j coef_j k~(x_j, x) from before its group, then one
    joint update per group (`kernel_bpa_update`) and the budget.  The update reuses the
    f(x) and ||x||^2 of the rows predicted since the support set last changed (a block
    window's whole group).

    Averaging (u not empty, room as coef): the model of a round is the support set
    after it, and in a block window with an incomplete group that group's provisional
    joint step (`kernel_bpa_solve`, its rows not appended), as `bpa_pass` reports it.
    u_j sums the coefficient of support vector j up to P = aux[KAUX_P] rounds ago
    (`so_avg_flush` when a group's update or the budget changes them), pu[k] the
    provisional coefficients of the incomplete group's row k; at the group's update a
    row joins with its pu[k] (`bpa_avg_join`), or without a budget a row of tau_k = 0
    leaves it in gu at its position in `order`.  aux[AUX_T] counts the rounds.
    Returns (rounds, mistakes, updates, loss_sum, status, position, n_left)."""
    cdef KernelFn kf = kernel_fn(kind, gamma, degree, coef0, bias)
    cdef Support S = support_of(sv_data, sv_idx, sv_start, sv_len, sv_sqn,
                                <Py_ssize_t>aux[KAUX_N], <long long>aux[KAUX_USED])
    cdef Py_ssize_t t, i, lo, m, nnz, j
    cdef Py_ssize_t n_cols = rows.R.n_cols
    cdef Counts cnt = counts_start(rows, y)
    cdef Groups g = groups_start(order.shape[0], n_seen, B, sliding, flush)
    cdef const double* x
    cdef const int* idx
    cdef const double* xr
    cdef double f, mrg, sqn, wf, phi_t
    cdef double Q = aux[KAUX_Q], M = aux[KAUX_M], T = aux[AUX_T], P = aux[KAUX_P]
    cdef Py_ssize_t n0, changed = -1, r0, known = n_seen
    cdef bint moved, avg = u.shape[0] > 0
    cdef Workspace ws = Workspace()
    cdef double* xd = <double*>ws.take((n_cols + 1) * sizeof(double), True)
    cdef double* krow = ws.doubles(coef.shape[0] + 1)
    cdef double* sqr = ws.doubles(B + 1)
    cdef double* fk = ws.doubles(B + 1)
    cdef double* fsave = ws.doubles(B + 1)          # by position modulo B
    cdef double* ssave = ws.doubles(B + 1)
    cdef double* up = &u[0] if avg else NULL
    cdef double* pp = &pu[0] if avg else NULL
    cdef double* gp = &gu[0] if avg and gu.shape[0] > 0 else NULL
    cdef BPAWork W
    W.Q = ws.doubles(5 * B + B * B + qp_work_size(B))
    W.ell = W.Q + B * B
    W.lo = W.ell + B
    W.hi = W.lo + B
    W.tau = W.hi + B
    W.qwork = W.tau + B
    W.save = NULL
    W.qiwork = ws.indices(qp_iwork_size(B) + 1)
    with nogil:
        if avg and not sliding and n_seen > 0:
            bpa_fill_known(&rows.R, &order[0], n_seen, B, &S, &kf, &coef[0], 1, xd, krow,
                           fsave, ssave)
            known = 0
        for t in range(g.n):
            i = order[t]
            if t >= n_seen:
                nnz = get_row(&rows.R, i, &x, &idx)
                xr = dense_row(&rows.R, x, idx, nnz, xd, &sqn)
                kernel_row(&S, &kf, xr, sqn, krow)
                clear_row(&rows.R, idx, nnz, xd)
                sv_scores(&coef[0], S.n, 1, krow, 1.0, &f)
                fsave[t % B] = f
                ssave[t % B] = sqn
                mrg = y[i] * f
                if not count_margin(&cnt, mrg, sqn, i):
                    break
            m = group_due(&g, t + 1, &lo)
            if m == 0:
                if avg and t >= n_seen:
                    # the incomplete group g.start..t, applied provisionally
                    m = t + 1 - g.start
                    for j in range(m):
                        fk[j] = fsave[(g.start + j) % B]
                        sqr[j] = ssave[(g.start + j) % B]
                    cnt.status = kernel_bpa_solve(&rows.R, &order[g.start], m, &y[0], cnt.wt,
                                                  &S, &kf, &coef[0], variant, C, rho, &W, xd,
                                                  krow, sqr, 0, fk, &cnt.pos)
                    if cnt.status != OK:
                        break
                    for j in range(m):
                        pp[j] += W.tau[j] * y[order[g.start + j]]
                    T += 1.0
                    P += 1.0
                continue
            # positions from max(known, changed + 1) were predicted by this support set
            r0 = max(0, max(known, changed + 1) - lo)
            for j in range(r0, m):
                fk[j] = fsave[(lo + j) % B]
                sqr[j] = ssave[(lo + j) % B]
            n0 = S.n
            cnt.status = kernel_bpa_update(&rows.R, &order[lo], m, &y[0], cnt.wt, &S, &kf,
                                           &coef[0], variant, C, rho, &W, xd, krow, sqr, r0,
                                           fk, &moved, &cnt.pos)
            if cnt.status != OK:
                break
            if moved:
                cnt.updates += 1
                changed = t
            M += S.n - n0
            if avg:
                if S.n > n0:
                    so_avg_flush(up, &coef[0], n0, &P)
                bpa_avg_join(up, pp, gp + lo if gp != NULL else NULL, n0, W.tau, m, 1)
            while budget > 0 and S.n > budget:
                changed = t
                j = budget_victim(&S, &kf, &coef[0], 1, policy)
                if policy == BUDGET_OLDEST:        # [DSS08]: f <- phi f, then remove x_0
                    sv_kernel_row(&S, &kf, 0, xd, krow)
                    sv_scores(&coef[0], S.n, 1, krow, 1.0, &wf)
                    phi_t = forgetron_phi(fabs(coef[0]), coef[0] * wf, &Q, M)
                    for j in range(S.n):
                        coef[j] *= phi_t
                    j = 0
                shift_rows(&coef[0], j, S.n, 1)
                if avg:
                    shift_rows(up, j, S.n, 1)
                sv_remove(&S, j)
            if avg and t >= n_seen:
                T += 1.0
                P += 1.0
    so_avg_store(aux, avg, T, P)
    aux[KAUX_N] = S.n
    aux[KAUX_USED] = S.used
    aux[KAUX_Q] = Q
    aux[KAUX_M] = M
    return (*counts_result(&cnt), group_left(&g))


def kernel_so_top1_pass(RowView rows not None, const Py_ssize_t[::1] y,
                        const Py_ssize_t[::1] order, double bias, int kind, double gamma,
                        int degree, double coef0, int rule, double phi, double r, double a0,
                        Py_ssize_t K, Py_ssize_t budget, int policy,
                        double[::1] sv_data, int[::1] sv_idx, long long[::1] sv_start,
                        long long[::1] sv_len, double[::1] sv_sqn, double[::1] mu,
                        double[:, ::1] Zm, double[:, ::1] Gm, Py_ssize_t[::1] slots,
                        double lam, double[:, ::1] pairs, double[::1] u, double[::1] aux):
    """One multi-class top-1 pass of a full-covariance rule in dual form, over the
    stacked blocks of the 1-of-k map: each support item is (x_j, e_j) with
    e_j = e_{y_j} - e_{c_j} (pairs[j] = (y_j, c_j)), Phi_j = e_j (x) phi(x_j), so
    <Phi_i, Phi_j> = (e_i.e_j) k~(x_i, x_j).  For Delta = f(x, y) - f(x, c):
    g_j = <Phi_j, Delta> = e_j.(e_y - e_c) k~(x_j, x), v = 2 a k~(x, x) + g^T Z g,
    m = f_y(x) - f_c(x), and the binary step (label +1) appends (x, e_y - e_c).  On a
    budget, G = (K + lam I)^-1 over the items' Gram matrix (Gm); both by slot, as in
    `kernel_so_pass`; the new item's column is g and its own inner product 2 k~(x, x).
    Averaging: u as in `kernel_so_pass` (item j's average coefficient, times e_j).
    Returns (rounds, mistakes, updates, loss_sum, status, position)."""
    cdef Hyper h = hyper_second_order(rule, phi, r, False)
    cdef KernelFn kf = kernel_fn(kind, gamma, degree, coef0, bias)
    cdef Support S = support_of(sv_data, sv_idx, sv_start, sv_len, sv_sqn,
                                <Py_ssize_t>aux[KAUX_N], <long long>aux[KAUX_USED])
    cdef Py_ssize_t k, i, nnz, j, n, yi, c, p0, p1
    cdef Py_ssize_t n_cols = rows.R.n_cols
    cdef Counts cnt = counts_start(rows)
    cdef const double* x
    cdef const int* idx
    cdef const double* xr
    cdef double sqn, kxx, v, m, ay, beta, tj
    cdef double M = aux[KAUX_M], t = aux[AUX_T], P = aux[KAUX_P]
    cdef bint avg = u.shape[0] > 0
    cdef double* up = &u[0] if avg else NULL
    cdef Workspace ws = Workspace()
    cdef double* xd = <double*>ws.take((n_cols + 1) * sizeof(double), True)
    cdef double* krow = ws.doubles(mu.shape[0] + 1)
    cdef double* g = ws.doubles(mu.shape[0] + 1)
    cdef double* sc = ws.doubles(K)
    cdef DualSO D = dso_start(Zm, Gm, slots, S.n, budget, lam, ws)
    cdef double* mp = &mu[0] if mu.shape[0] > 0 else NULL
    cdef double* pp = &pairs[0, 0] if pairs.shape[0] > 0 else NULL
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&rows.R, i, &x, &idx)
            xr = dense_row(&rows.R, x, idx, nnz, xd, &sqn)
            kernel_row(&S, &kf, xr, sqn, krow)
            clear_row(&rows.R, idx, nnz, xd)
            n = S.n
            kxx = kernel_value(&kf, sqn, sqn, sqn)
            for c in range(K):
                sc[c] = 0.0
            for j in range(n):
                tj = mu[j] * krow[j]
                sc[<Py_ssize_t>pp[2 * j]] += tj
                sc[<Py_ssize_t>pp[2 * j + 1]] -= tj
            yi = y[i]
            if not (all_finite(sc, K) and isfinite(sqn)) or yi < 0 or yi >= K:
                fail_row(&cnt, NONFINITE_INPUT, i)
                break
            c = competitor(sc, K, yi)
            for j in range(n):
                p0 = <Py_ssize_t>pp[2 * j]
                p1 = <Py_ssize_t>pp[2 * j + 1]
                g[j] = ((p0 == yi) - (p1 == yi) - (p0 == c) + (p1 == c)) * krow[j]
            v = 2.0 * a0 * kxx + dso_quad(&D, g, n)
            if not isfinite(v):
                fail_row(&cnt, NONFINITE_INPUT, i)
                break
            count_argmax(&cnt, sc, K, yi, i)
            m = sc[yi] - sc[c]
            count_hinge(&cnt, m)
            t += 1.0
            h.s = row_weight(&cnt, i)
            if not full_step(&h, m, v, 1.0, m, &ay, &beta):
                P += 1.0
                continue
            if avg:
                so_avg_flush(up, mp, n, &P)
            if not so_dual_update(&D, ay, beta, a0, mp, n, 2.0 * kxx):
                fail_round(&cnt, NONFINITE_STATE, i)
                break
            pp[2 * n] = yi
            pp[2 * n + 1] = c
            sv_append(&S, x, idx, nnz, sqn)
            M += 1.0
            cnt.updates += 1
            if D.G.A != NULL and S.n > budget:
                j = so_dual_remove(&D, &S, mp, pp, policy)
                if avg:
                    shift_rows(up, j, S.n + 1, 1)
            else:
                so_dual_commit(&D)
            P += 1.0
    dso_end(&D, Zm.shape[0])
    so_avg_store(aux, avg, t, P)
    aux[KAUX_N] = S.n
    aux[KAUX_USED] = S.used
    aux[KAUX_M] = M
    return counts_result(&cnt)


cdef int kernel_mcbpa_solve(const Rows* R, const Py_ssize_t* rows, Py_ssize_t nb,
                            const Py_ssize_t* y, const double* wt, const Support* S,
                            const KernelFn* kf, const double* coef, Py_ssize_t K, int variant,
                            double C, double rho, MCBPAWork* W, double* xd, double* krow,
                            double* sqr, Py_ssize_t known, Py_ssize_t* bad) noexcept nogil:
    """The joint top-1 step on rows[0..nb-1] over the stacked blocks ([GPA13]
    eqs. 14-19 with [CS03]'s constraints, as `_mcbpa_update` with kk = 1; importance
    weights wt[row], NULL: 1), the support set unchanged: the Gram matrix of the group
    G_ii' = k~(x_i, x_i') times the class overlap of (e_{y_i} - e_{c_i}) and
    (e_{y_i'} - e_{c_i'}); tau in W.tau, the competitors c_i in W.comp.  Rows r >= known
    come with their scores in W.sc[r K ..] and ||x_r||^2 in sqr[r] under the current
    support set (their prediction's: no kernel row again).  Returns a Status."""
    cdef const double* x
    cdef const int* idx
    cdef const double* xr
    cdef Py_ssize_t r, nk, it, yr
    cdef double kkt
    cdef double* sc
    for r in range(nb):
        sc = W.sc + r * K
        if r < known:
            nk = get_row(R, rows[r], &x, &idx)
            xr = dense_row(R, x, idx, nk, xd, &sqr[r])
            kernel_row(S, kf, xr, sqr[r], krow)
            clear_row(R, idx, nk, xd)
            sv_scores(coef, S.n, K, krow, 1.0, sc)
        if not (all_finite(sc, K) and isfinite(sqr[r])):
            bad[0] = rows[r]
            return NONFINITE_INPUT
        yr = y[rows[r]]
        top_competitors(sc, K, yr, 1, &W.comp[r], W.taken)
        W.ell[r] = 1.0 - (sc[yr] - sc[W.comp[r]])
        gram_row(R, rows, r, kf, 0.0, sqr, W.gx + r * nb)
        if not isfinite(W.gx[r * nb + r]):
            bad[0] = rows[r]
            return NONFINITE_INPUT
    if not _mcbpa_dual(rows, nb, y, wt, 1, variant, C, rho, False, W) and variant != BPA_LS:
        return OK
    if hildreth_solve(W.Q, W.ell, W.lo, W.hi, W.tau, nb, TOPK_QP_TOL, TOPK_QP_MAX_ITER,
                      W.qwork, W.qiwork, &kkt, &it, bad) != OK:
        bad[0] = rows[nb - 1]
        return QP_NOT_CONVERGED
    _mcbpa_tie_mean(rows, nb, y, K, 1, W)
    for r in range(nb):
        if not isfinite(W.tau[r]):
            bad[0] = rows[nb - 1]
            return NONFINITE_STATE
    return OK


cdef int kernel_mcbpa_update(const Rows* R, const Py_ssize_t* rows, Py_ssize_t nb,
                             const Py_ssize_t* y, const double* wt, Support* S,
                             const KernelFn* kf,
                             double* coef, Py_ssize_t K, int variant, double C, double rho,
                             MCBPAWork* W, double* xd, double* krow, double* sqr,
                             Py_ssize_t known, bint* moved, Py_ssize_t* bad) noexcept nogil:
    """One joint top-1 update on rows[0..nb-1] (`kernel_mcbpa_solve`): the rows with
    tau_i != 0 join the support set with coefficients tau_i (e_{y_i} - e_{c_i}).
    Returns a Status."""
    cdef const double* x
    cdef const int* idx
    cdef Py_ssize_t r, c, nk
    cdef int st = kernel_mcbpa_solve(R, rows, nb, y, wt, S, kf, coef, K, variant, C, rho, W,
                                     xd, krow, sqr, known, bad)
    moved[0] = False
    if st != OK:
        return st
    for r in range(nb):
        if W.tau[r] == 0.0:
            continue
        moved[0] = True
        for c in range(K):
            coef[S.n * K + c] = 0.0
        coef[S.n * K + y[rows[r]]] = W.tau[r]
        coef[S.n * K + W.comp[r]] = -W.tau[r]
        nk = get_row(R, rows[r], &x, &idx)
        sv_append(S, x, idx, nk, sqr[r])
    return OK


def kernel_bpa_top1_pass(RowView rows not None, const Py_ssize_t[::1] y,
                         const Py_ssize_t[::1] order, Py_ssize_t n_seen, double bias,
                         int kind, double gamma, int degree, double coef0, int variant,
                         bint sliding, Py_ssize_t B, double C, double rho, bint flush,
                         Py_ssize_t budget, int policy, double[::1] sv_data, int[::1] sv_idx,
                         long long[::1] sv_start, long long[::1] sv_len, double[::1] sv_sqn,
                         double[:, ::1] coef, double[:, ::1] u, double[:, ::1] pu,
                         double[:, ::1] gu, double[::1] aux):
    """One pass of kernel mini-batch PA, multi-class top-1 (the grouping of `bpa_pass`):
    every row predicted (argmax, ties to the first class) with f_c(x) = sum_j coef[j, c]
    k~(x_j, x) from before its group, then one joint update per group
    (`kernel_mcbpa_update`, reusing the scores of the rows predicted since the support
    set last changed, as `kernel_bpa_pass`) and the budget ("oldest": the Forgetron's
    phi_t with the largest |coef[0, c]| as the weight).  Averaging: u, pu and gu as in
    `kernel_bpa_pass`, K values per row (a provisional row's tau_k e_k).  Returns
    (rounds, mistakes, updates, loss_sum, status, position, n_left)."""
    cdef KernelFn kf = kernel_fn(kind, gamma, degree, coef0, bias)
    cdef Support S = support_of(sv_data, sv_idx, sv_start, sv_len, sv_sqn,
                                <Py_ssize_t>aux[KAUX_N], <long long>aux[KAUX_USED])
    cdef Py_ssize_t K = coef.shape[1], t, i, lo, nb, nnz, j, c, yi, n0, changed = -1, r0
    cdef Py_ssize_t n_cols = rows.R.n_cols
    cdef Counts cnt = counts_start(rows)
    cdef Groups g = groups_start(order.shape[0], n_seen, B, sliding, flush)
    cdef const double* x
    cdef const int* idx
    cdef const double* xr
    cdef double sqn, sig, wf
    cdef double Q = aux[KAUX_Q], M = aux[KAUX_M], T = aux[AUX_T], P = aux[KAUX_P]
    cdef bint moved, avg = u.shape[0] > 0
    cdef Py_ssize_t known = n_seen
    cdef Workspace ws = Workspace()
    cdef double* xd = <double*>ws.take((n_cols + 1) * sizeof(double), True)
    cdef double* krow = ws.doubles(coef.shape[0] + 1)
    cdef double* sqr = ws.doubles(B + 1)
    cdef double* ssave = ws.doubles(B + 1)          # by position modulo B
    cdef double* scsave = ws.doubles(B * K)         # (B, K), by position modulo B
    cdef double* sc = ws.doubles(K)
    cdef double* pred
    cdef double* cp = &coef[0, 0] if coef.shape[0] > 0 else NULL
    cdef double* up = &u[0, 0] if avg else NULL
    cdef double* pp = &pu[0, 0] if avg else NULL
    cdef double* gp = &gu[0, 0] if avg and gu.shape[0] > 0 else NULL
    cdef MCBPAWork W
    W.sc = ws.doubles(B * K + B * B + B * B + 4 * B + qp_work_size(B))
    W.gx = W.sc + B * K
    W.Q = W.gx + B * B
    W.ell = W.Q + B * B
    W.lo = W.ell + B
    W.hi = W.lo + B
    W.tau = W.hi + B
    W.qwork = W.tau + B
    W.save = NULL
    W.taken = ws.indices(K + B + qp_iwork_size(B) + B * K + K)
    W.comp = W.taken + K
    W.qiwork = W.comp + B
    W.pos = W.qiwork + qp_iwork_size(B)
    W.grp = W.pos + B * K
    W.stride = 0
    with nogil:
        if avg and not sliding and n_seen > 0:
            bpa_fill_known(&rows.R, &order[0], n_seen, B, &S, &kf, cp, K, xd, krow, scsave,
                           ssave)
            known = 0
        for t in range(g.n):
            i = order[t]
            if t >= n_seen:
                nnz = get_row(&rows.R, i, &x, &idx)
                xr = dense_row(&rows.R, x, idx, nnz, xd, &sqn)
                kernel_row(&S, &kf, xr, sqn, krow)
                clear_row(&rows.R, idx, nnz, xd)
                pred = scsave + (t % B) * K
                sv_scores(cp, S.n, K, krow, 1.0, pred)
                ssave[t % B] = sqn
                yi = y[i]
                if not (all_finite(pred, K) and isfinite(sqn)) or yi < 0 or yi >= K:
                    fail_row(&cnt, NONFINITE_INPUT, i)
                    break
                count_argmax(&cnt, pred, K, yi, i)
                count_hinge(&cnt, pred[yi] - pred[competitor(pred, K, yi)])
            nb = group_due(&g, t + 1, &lo)
            if nb == 0:
                if avg and t >= n_seen:
                    # the incomplete group g.start..t, applied provisionally
                    nb = t + 1 - g.start
                    for j in range(nb):
                        memcpy(W.sc + j * K, scsave + ((g.start + j) % B) * K,
                               K * sizeof(double))
                        sqr[j] = ssave[(g.start + j) % B]
                    cnt.status = kernel_mcbpa_solve(&rows.R, &order[g.start], nb, &y[0],
                                                    cnt.wt, &S, &kf, cp, K, variant, C, rho,
                                                    &W, xd, krow, sqr, 0, &cnt.pos)
                    if cnt.status != OK:
                        break
                    for j in range(nb):
                        pp[j * K + y[order[g.start + j]]] += W.tau[j]
                        pp[j * K + W.comp[j]] -= W.tau[j]
                    T += 1.0
                    P += 1.0
                continue
            # positions from max(known, changed + 1) were predicted by this support set
            r0 = max(0, max(known, changed + 1) - lo)
            for j in range(r0, nb):
                memcpy(W.sc + j * K, scsave + ((lo + j) % B) * K, K * sizeof(double))
                sqr[j] = ssave[(lo + j) % B]
            n0 = S.n
            cnt.status = kernel_mcbpa_update(&rows.R, &order[lo], nb, &y[0], cnt.wt, &S, &kf,
                                             cp, K, variant, C, rho, &W, xd, krow, sqr, r0,
                                             &moved, &cnt.pos)
            if cnt.status != OK:
                break
            if moved:
                cnt.updates += 1
                changed = t
            M += S.n - n0
            if avg:
                if S.n > n0:
                    so_avg_flush(up, cp, n0 * K, &P)
                bpa_avg_join(up, pp, gp + lo * K if gp != NULL else NULL, n0, W.tau, nb, K)
            while budget > 0 and S.n > budget:
                changed = t
                j = budget_victim(&S, &kf, cp, K, policy)
                if policy == BUDGET_OLDEST:        # [DSS08]: f <- phi f, then remove x_0
                    sv_kernel_row(&S, &kf, 0, xd, krow)
                    sv_scores(cp, S.n, K, krow, 1.0, sc)
                    sig = 0.0
                    wf = 0.0
                    for c in range(K):
                        sig = max(sig, fabs(cp[c]))
                        wf += cp[c] * sc[c]
                    sig = forgetron_phi(sig, wf, &Q, M)
                    for j in range(S.n * K):
                        cp[j] *= sig
                    j = 0
                shift_rows(cp, j, S.n, K)
                if avg:
                    shift_rows(up, j, S.n, K)
                sv_remove(&S, j)
            if avg and t >= n_seen:
                T += 1.0
                P += 1.0
    so_avg_store(aux, avg, T, P)
    aux[KAUX_N] = S.n
    aux[KAUX_USED] = S.used
    aux[KAUX_Q] = Q
    aux[KAUX_M] = M
    return (*counts_result(&cnt), group_left(&g))
