# Mini-batch Passive-Aggressive driver: BPA-I, BPA-II, BPA-LS ([GPA13] Sect. 3.2).
# For a group of rows with pre-update scores
# f_k = w.x_k (intercept = coordinate D-1 with feature value `bias`):
#   l_k = 1 - y_k f_k,  A_jk = y_j y_k (x_j.x_k + bias^2),
#   BPA-I  max l'tau - tau'A tau/2,          0 <= tau <= C
#   BPA-II max l'tau - tau'(A + rho I)tau/2, tau >= 0
#   BPA-LS tau = (A + rho I)^-1 l            (rho > 0: A + rho I is positive definite)
# all solved by `hildreth_solve` (_qp.pxi), then w += sum_k tau_k y_k x_k.
# A row with A_kk = 0 (zero row, no intercept) cannot move w: tau_k is fixed at 0.
# Importance weights s_k scale each row's loss term in the primal (C s_k xi_k, or
# C s_k xi_k^2): the box becomes 0 <= tau_k <= s_k C, the ridge rho / s_k; a row of
# weight 0 has no loss term, and tau_k is fixed at 0.
# The Gram matrix is `gram_row`'s (_gram.pxi), as for the kernel form.
#
# Provides: BPA_1 / BPA_2 / BPA_LS, `bpa_gram_row` and the weighted box `bpa_box`
# (also the kernel form's), the
# grouping of a mini-batch pass (`Groups`, also used by _mc_minibatch.pxi), averaging
# of the reported model (`avg_sync`, `avg_gain`, also used there) and the driver
# `bpa_pass`.
# Uses: RowView, Rows, get_row, max_row_nnz (_rows.pxi); Counts, count_margin,
# Workspace (_driver.pxi); hildreth_solve, qp_work_size, qp_iwork_size (_qp.pxi);
# KernelFn, kernel_fn, KERNEL_LINEAR, gram_row (_gram.pxi).

from libc.math cimport INFINITY, isfinite

cdef enum:
    BPA_1 = 0
    BPA_2 = 1
    BPA_LS = 2

# A group whose dual Hildreth's method did not solve to its KKT tolerance returns
# QP_NOT_CONVERGED: possible only when the dual is numerically singular (BPA-II/LS
# with rho below the rounding level of the Gram matrix, i.e. C ||x||^2 >~ 1e14).

cdef struct BPAWork:
    double* Q            # B*B
    double* ell          # B
    double* lo           # B
    double* hi           # B
    double* tau          # B
    double* qwork        # qp_work_size(B)
    Py_ssize_t* qiwork   # qp_iwork_size(B)
    double* save         # B * (max_nnz + 1): old values, to undo an overflowing update


cdef inline void bpa_gram_row(const Rows* R, const Py_ssize_t* rows, Py_ssize_t k,
                              Py_ssize_t m, const double* y, const KernelFn* kf,
                              const double* sqr, double* Q) noexcept nogil:
    """Row and column k of the group's A_jk = y_j y_k k~(x_j, x_k), j <= k, in the
    m x m matrix Q."""
    cdef Py_ssize_t j
    cdef double a
    gram_row(R, rows, k, kf, 0.0, sqr, Q + k * m)
    for j in range(k + 1):
        a = Q[k * m + j] * y[rows[j]] * y[rows[k]]
        Q[j * m + k] = a
        Q[k * m + j] = a


cdef inline bint bpa_box(const Py_ssize_t* rows, Py_ssize_t m, const double* wt, int variant,
                         double C, double rho, BPAWork* W) noexcept nogil:
    """The group's dual from tau = 0 with the rows' importance weights wt[row] (NULL: 1):
    the box 0 <= tau_k <= s_k C (BPA-I) or the ridge rho / s_k added to Q's diagonal
    (BPA-II, BPA-LS); a row with A_kk = 0 or s_k = 0 cannot move the model (tau_k fixed
    at 0).  Returns whether a row that can move it has a positive loss."""
    cdef Py_ssize_t k
    cdef double s
    cdef bint any_loss = False
    for k in range(m):
        W.tau[k] = 0.0
        s = wt[rows[k]] if wt != NULL else 1.0
        if W.Q[k * m + k] == 0.0 or s == 0.0:
            W.lo[k] = 0.0
            W.hi[k] = 0.0
            continue
        if W.ell[k] > 0.0:
            any_loss = True
        if variant == BPA_1:
            W.lo[k] = 0.0
            W.hi[k] = s * C
        else:
            W.Q[k * m + k] += rho / s
            W.lo[k] = -INFINITY if variant == BPA_LS else 0.0
            W.hi[k] = INFINITY
    return any_loss


cdef inline double _bpa_score(const Rows* R, Py_ssize_t i, const double* w,
                              Py_ssize_t D, double bias) noexcept nogil:
    cdef const double* x
    cdef const int* idx
    cdef Py_ssize_t j, nnz = get_row(R, i, &x, &idx)
    cdef double dot = w[D - 1] * bias
    for j in range(nnz):
        dot += w[idx[j]] * x[j]
    return dot


cdef int _bpa_update(const Rows* R, const Py_ssize_t* rows, Py_ssize_t m,
                     const double* y, const double* wt, double bias, double* w,
                     Py_ssize_t D, int variant, double C, double rho, BPAWork* W,
                     bint* moved, Py_ssize_t* bad) noexcept nogil:
    """One joint update of w on the rows rows[0..m-1] (importance weights wt[row],
    NULL: 1); returns a Status."""
    cdef const double* xk
    cdef const int* ik
    cdef Py_ssize_t k, p, nk, n_saved = 0, it
    cdef double f, c, old, new, chk = 0.0, kkt
    cdef int st
    cdef KernelFn kf = kernel_fn(KERNEL_LINEAR, 1.0, 1, 0.0, bias)
    moved[0] = False
    for k in range(m):
        f = _bpa_score(R, rows[k], w, D, bias)
        W.ell[k] = 1.0 - y[rows[k]] * f
        bpa_gram_row(R, rows, k, m, y, &kf, NULL, W.Q)
        if not (isfinite(W.ell[k]) and isfinite(W.Q[k * m + k])):
            bad[0] = rows[k]
            return NONFINITE_INPUT
    if not bpa_box(rows, m, wt, variant, C, rho, W) and variant != BPA_LS:
        return OK  # tau = 0 meets the KKT conditions when every l_k <= 0
    st = hildreth_solve(W.Q, W.ell, W.lo, W.hi, W.tau, m, 1e-15, 1000, W.qwork,
                        W.qiwork, &kkt, &it, bad)
    if st != OK:
        bad[0] = rows[m - 1]
        return QP_NOT_CONVERGED
    for k in range(m):
        if W.tau[k] == 0.0:
            continue
        moved[0] = True
        c = W.tau[k] * y[rows[k]]
        nk = get_row(R, rows[k], &xk, &ik)
        for p in range(nk):
            old = w[ik[p]]
            W.save[n_saved] = old
            n_saved += 1
            new = old + c * xk[p]
            w[ik[p]] = new
            chk += new
        old = w[D - 1]
        W.save[n_saved] = old
        n_saved += 1
        new = old + c * bias
        w[D - 1] = new
        chk += new
    if isfinite(chk):
        return OK
    # Undo in reverse order of application: every value returns exactly.
    for k in range(m - 1, -1, -1):
        if W.tau[k] == 0.0:
            continue
        n_saved -= 1
        w[D - 1] = W.save[n_saved]
        nk = get_row(R, rows[k], &xk, &ik)
        for p in range(nk - 1, -1, -1):
            n_saved -= 1
            w[ik[p]] = W.save[n_saved]
    moved[0] = False
    bad[0] = rows[m - 1]
    return NONFINITE_STATE


cdef struct Groups:
    # Where a mini-batch pass over `order` updates: consecutive groups of B rows
    # (a last, shorter one only when `flush`), or after every new row the window
    # of the last min(B, t + 1) rows (`sliding`); the first n_seen rows were
    # predicted (and, sliding, used) by an earlier call.
    Py_ssize_t n, n_seen, B, start
    bint sliding, flush


cdef inline Py_ssize_t group_due(Groups* g, Py_ssize_t t, Py_ssize_t* lo) noexcept nogil:
    """After the first t rows of `order`: the size of the group to update now
    (0: none), which starts at position lo of `order`."""
    if g.sliding:
        if t <= g.n_seen:
            return 0
        lo[0] = t - g.B if t > g.B else 0
        return t - lo[0]
    if t - g.start == g.B or (g.flush and t == g.n):
        lo[0] = g.start
        g.start = t
        return t - lo[0]
    return 0


cdef inline Py_ssize_t group_left(const Groups* g) noexcept nogil:
    """Rows at the end of `order` to carry into the next call: the pending group,
    or the last B - 1 rows of the sliding window."""
    if g.sliding:
        return g.B - 1 if g.n > g.B - 1 else g.n
    return g.n - g.start


cdef inline Groups groups_start(Py_ssize_t n, Py_ssize_t n_seen, Py_ssize_t B, bint sliding,
                                bint flush) noexcept nogil:
    cdef Groups g
    g.n = n
    g.n_seen = n_seen
    g.B = B
    g.start = 0
    g.sliding = sliding
    g.flush = flush
    return g


cdef inline void avg_sync(double* r, const double* w, double* u, double t, const Rows* R,
                          const Py_ssize_t* rows, Py_ssize_t m, Py_ssize_t D,
                          Py_ssize_t K) noexcept nogil:
    """Averaging in round t: the reported model r <- w on the coordinates of
    rows[0..m) and the intercept (K adjacent values each), u += t (w - r) there
    ([FS99]; a coordinate met again adds t 0)."""
    cdef const double* x
    cdef const int* idx
    cdef Py_ssize_t k, j, c, p, nnz
    for k in range(m):
        nnz = get_row(R, rows[k], &x, &idx)
        for j in range(nnz + 1):
            p = (idx[j] if j < nnz else D - 1) * K
            for c in range(p, p + K):
                u[c] += t * (w[c] - r[c])
                r[c] = w[c]


cdef inline void avg_gain(const double* r, const double* w, double* u, double t,
                          const Rows* R, const Py_ssize_t* rows, Py_ssize_t m,
                          Py_ssize_t D, Py_ssize_t K, unsigned char* seen) noexcept nogil:
    """Averaging in round t: u += t (r - w) once per coordinate of rows[0..m) and
    the intercept (r: w with the incomplete group applied provisionally, which
    moves only those); `seen`: D zeroed flags, zeroed again on return."""
    cdef const double* x
    cdef const int* idx
    cdef Py_ssize_t k, j, c, p, nnz, q
    for q in range(2):
        for k in range(m):
            nnz = get_row(R, rows[k], &x, &idx)
            for j in range(nnz + 1):
                p = idx[j] if j < nnz else D - 1
                if q == 1:
                    seen[p] = 0
                elif not seen[p]:
                    seen[p] = 1
                    for c in range(p * K, p * K + K):
                        u[c] += t * (r[c] - w[c])


def bpa_pass(RowView rows not None,
             const double[::1] y, const Py_ssize_t[::1] order,
             Py_ssize_t n_seen, double bias, double[::1] w, int variant, bint sliding,
             Py_ssize_t B, double C, double rho, bint flush,
             double[::1] r, double[::1] u):
    """One pass of mini-batch PA over `order`; w (length D, intercept last) in place.

    The first `n_seen` rows of `order` were predicted (and, sliding, used) by an
    earlier call: they are neither predicted nor counted again.  Block mode:
    consecutive groups of B rows of `order`, every row predicted with the
    model from before its group, then one joint update; a last, shorter group
    is updated only when `flush`.  Sliding mode: predict row t, then update
    with the window of the last min(B, t + 1) rows.

    Averaging (u not empty: D + 1 entries, u[D] = T the rounds so far): the model
    reported after a round, r (w with the rows of an incomplete block applied
    provisionally, as the last group of the stream: their joint update on w; else
    w), is kept in r, and u += t (r new - old) on the coordinates it changes, so
    that r_1 + ... + r_T = (T + 1) r_T - u[:D] ([FS99]).

    Returns (rounds, mistakes, updates, loss_sum, status, position, collapsed, n_left):
    n_left = rows at the end of `order` to carry into the next call (the
    pending group, or the last B - 1 rows of the sliding window).
    """
    cdef Py_ssize_t D = w.shape[0], t, i, lo, m
    cdef Counts cnt = counts_start(rows, y)
    cdef Groups g = groups_start(order.shape[0], n_seen, B, sliding, flush)
    cdef double f, mrg
    cdef bint moved
    cdef Py_ssize_t max_nnz = max_row_nnz(&rows.R, order)
    cdef Workspace ws = Workspace()
    cdef BPAWork W
    W.Q = ws.doubles(5 * B + B * B + qp_work_size(B) + B * (max_nnz + 1))
    W.ell = W.Q + B * B
    W.lo = W.ell + B
    W.hi = W.lo + B
    W.tau = W.hi + B
    W.qwork = W.tau + B
    W.save = W.qwork + qp_work_size(B)
    W.qiwork = ws.indices(qp_iwork_size(B) + 1)
    cdef bint avg = u.shape[0] > 0
    cdef double T = u[D] if avg else 0.0
    cdef unsigned char* seen = ws.flags(D) if avg else NULL
    with nogil:
        for t in range(g.n):
            i = order[t]
            if t >= n_seen:
                f = _bpa_score(&rows.R, i, &w[0], D, bias)
                mrg = y[i] * f
                if not count_margin(&cnt, mrg, 0.0, i):
                    break
            m = group_due(&g, t + 1, &lo)
            if m == 0:
                if avg and t >= n_seen:
                    # the incomplete block g.start..t, applied provisionally to r
                    m = t + 1 - g.start
                    avg_sync(&r[0], &w[0], &u[0], T + 1.0, &rows.R, &order[g.start], m, D, 1)
                    cnt.status = _bpa_update(&rows.R, &order[g.start], m, &y[0], cnt.wt,
                                             bias, &r[0], D, variant, C, rho, &W, &moved,
                                             &cnt.pos)
                    if cnt.status != OK:
                        break
                    T += 1.0
                    avg_gain(&r[0], &w[0], &u[0], T, &rows.R, &order[g.start], m, D, 1, seen)
                continue
            cnt.status = _bpa_update(&rows.R, &order[lo], m, &y[0], cnt.wt, bias, &w[0],
                                     D, variant, C, rho, &W, &moved, &cnt.pos)
            if cnt.status != OK:
                break
            if moved:
                cnt.updates += 1
            if avg and t >= n_seen:
                T += 1.0
                avg_sync(&r[0], &w[0], &u[0], T, &rows.R, &order[lo], m, D, 1)
    if avg:
        u[D] = T
    return (*counts_result(&cnt), group_left(&g))
