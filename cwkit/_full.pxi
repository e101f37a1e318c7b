# Full-covariance binary drivers: mu (D), Sigma (D x D, C order), symmetric
# matrix-vector products and rank-one updates on one triangle of Sigma
# (Fortran 'U' = the lower triangle of the C-ordered array); Python mirrors it.
#
# Provides: dsymv, dsyr, scatter_row, full_quad and the step full_step / full_check /
# full_apply (also used by the multi-class full drivers), full_pass, full_scores.
# Uses: RowView, get_row (_rows.pxi); Counts (_driver.pxi); Hyper, so_step,
# sherman_morrison_beta, SOP (_binary.pxi).
#
# dsymv / dsyr below are the reference-BLAS algorithms with BLAS's calling
# convention (uplo 'U', unit strides) rather than scipy.linalg.cython_blas:
# cimporting that module imports scipy.linalg whenever cwkit is imported, which
# slows every CLI start for a path only dense, low-dimensional data takes
# (D <= 4096, where the loops below run at memory speed anyway).


cdef inline void dsymv(const char* uplo, const int* n, const double* alpha,
                       const double* a, const int* lda, const double* x,
                       const int* incx, const double* beta, double* y,
                       const int* incy) noexcept nogil:
    """y <- alpha A x + beta y, A symmetric with its upper (column-major) triangle
    stored: A[i, j] = a[i + j lda] for i <= j.  Unit strides only."""
    cdef Py_ssize_t i, j, N = n[0], L = lda[0]
    cdef double t1, t2
    cdef const double* col
    for i in range(N):
        y[i] = 0.0 if beta[0] == 0.0 else beta[0] * y[i]
    for j in range(N):
        col = a + j * L
        t1 = alpha[0] * x[j]
        t2 = 0.0
        for i in range(j):
            y[i] += t1 * col[i]
            t2 += col[i] * x[i]
        y[j] += t1 * col[j] + alpha[0] * t2


cdef inline void dsyr(const char* uplo, const int* n, const double* alpha,
                      const double* x, const int* incx, double* a,
                      const int* lda) noexcept nogil:
    """A <- alpha x x^T + A on the upper (column-major) triangle.  Unit stride."""
    cdef Py_ssize_t i, j, N = n[0], L = lda[0]
    cdef double t
    cdef double* col
    for j in range(N):
        if x[j] != 0.0:
            col = a + j * L
            t = alpha[0] * x[j]
            for i in range(j + 1):
                col[i] += x[i] * t


cdef inline void scatter_row(const double* x, const int* idx, Py_ssize_t nnz,
                             double bias, double* xd, Py_ssize_t D) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(D):
        xd[j] = 0.0
    for j in range(nnz):
        xd[idx[j]] = x[j]
    xd[D - 1] = bias


cdef inline double full_quad(const double* x, const int* idx, Py_ssize_t nnz, double bias,
                             const double* mu, const double* S, int D, double* xd, double* z,
                             double* v) noexcept nogil:
    """mu.x~ (returned) and v = x~^T Sigma x~, with xd = x~ and z = Sigma x~."""
    cdef int one = 1
    cdef Py_ssize_t j
    cdef double dot = 0.0, q = 0.0, done = 1.0, zero = 0.0
    cdef char uplo = b'U'
    scatter_row(x, idx, nnz, bias, xd, D)
    dsymv(&uplo, &D, &done, S, &D, xd, &one, &zero, z, &one)
    for j in range(D):
        dot += mu[j] * xd[j]
        q += xd[j] * z[j]
    v[0] = q
    return dot


cdef inline bint full_step(const Hyper* h, double m, double v, double yc, double dot,
                           double* ay, double* beta) noexcept nogil:
    """`full_step_loss` of a classification round: the loss 1 - m of margin m."""
    return full_step_loss(h, m, 1.0 - m, v, yc, dot, ay, beta)


cdef inline bint full_step_loss(const Hyper* h, double m, double loss, double v, double yc,
                                double dot, double* ay, double* beta) noexcept nogil:
    """The step of a full-covariance rule on label yc, score dot, margin m = yc dot,
    loss 1 - m (a regression round: its absolute residual, yc its direction,
    `so_step_loss`)
    and v = x^T Sigma x: mu += ay Sigma x and Sigma <- Sigma - beta Sigma x x^T Sigma.
    CW-Var, CW-Stdev, AROW: their Sigma^-1 += c x x^T gives beta = c / (1 + c v)
    by Sherman-Morrison.  SOP keeps mu = A^-1 v and Sigma = A^-1 ([SOP05] Fig. 3.1):
    on a mistake v += y x, A += x x^T, i.e. ay = (y - x.mu) / (1 + x^T A^-1 x) and
    beta = 1 / (1 + x^T A^-1 x); with an importance weight s = h.s, v += s y x and
    A += s x x^T: ay = s (y - x.mu) / (1 + s x^T A^-1 x), beta = s / (1 + s x^T A^-1 x).
    Returns False when the rule makes no update."""
    cdef double alpha, c
    if h.rule == SOP:
        if m > 0.0 or h.s == 0.0:
            return False
        ay[0] = h.s * (yc - dot) / (1.0 + h.s * v)         # v >= 0
        beta[0] = h.s / (1.0 + h.s * v)
        return True
    alpha = so_step_loss(h, m, loss, v, &c)
    if alpha == 0.0 and (h.task == CLASSIFICATION or c == 0.0):
        return False
    ay[0] = alpha * yc
    beta[0] = sherman_morrison_beta(c, v)
    return True


cdef inline bint full_check(const double* mu, const double* z, double ay, const double* g,
                            double beta, Py_ssize_t n) noexcept nogil:
    """Whether mu + ay z and Sigma - beta g g^T (n coordinates) stay finite."""
    cdef Py_ssize_t j
    cdef double chk = 0.0, zmax = 0.0
    for j in range(n):
        chk += mu[j] + ay * z[j]
        zmax = max(zmax, fabs(g[j]))
    return isfinite(chk) and isfinite(beta * zmax * zmax)


cdef inline void full_apply(double* mu, double* S, int n, int lda, const double* z, double ay,
                            const double* g, double beta, double* u, double t) noexcept nogil:
    """mu += ay z and Sigma -= beta g g^T on one triangle of the n x n Sigma at S
    (leading dimension lda); averaging (u not NULL) in round t: u += t (mu new - old)
    ([FS99]; O(n), as the update of mu)."""
    cdef Py_ssize_t j
    cdef int one = 1
    cdef double nbeta = -beta, old
    cdef char uplo = b'U'
    if u == NULL:
        for j in range(n):
            mu[j] += ay * z[j]
    else:
        for j in range(n):
            old = mu[j]
            mu[j] = old + ay * z[j]
            u[j] += t * (mu[j] - old)
    dsyr(&uplo, &n, &nbeta, g, &one, S, &lda)


def full_pass(RowView rows not None, const double[::1] y,
              const Py_ssize_t[::1] order, double bias,
              double[::1] mu, double[:, ::1] Sigma, double[::1] work,
              int rule, double phi, double r, double[::1] u, double C=0.0,
              int task=CLASSIFICATION):
    """One pass of a full-covariance rule: CW-Var, CW-Stdev, AROW, AROW-H, SOP, SCW-I,
    SCW-II, NHERD (C: the last three's); task=REGRESSION: AROW on real targets y,
    recursive least squares (`so_step_loss`).

    Every rule is mu += alpha y Sigma x and Sigma <- Sigma - beta Sigma x x^T Sigma
    (`full_step`).  Averaging (u not empty: D + 1 entries, u[D] = T the rounds so
    far): u[:D] += t (mu new - old) on the update of round t, so that
    mu_1 + ... + mu_T = (T + 1) mu_T - u[:D] ([FS99]).
    Returns (rounds, mistakes, updates, loss_sum, status, position, collapsed).
    """
    cdef Hyper h = hyper_second_order(rule, phi, r, False)
    cdef int D = <int>mu.shape[0]
    cdef Py_ssize_t k, nnz, i
    cdef Counts cnt = counts_start(rows, y)
    cdef const double* x
    cdef const int* idx
    cdef double* xd = &work[0]
    cdef double* z = &work[D]
    cdef double dot, v, m, ay, beta, yi, loss
    cdef double* up = &u[0] if u.shape[0] > 0 else NULL
    cdef double t = u[D] if up != NULL else 0.0
    h.C = C
    h.task = task
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&rows.R, i, &x, &idx)
            dot = full_quad(x, idx, nnz, bias, &mu[0], &Sigma[0, 0], D, xd, z, &v)
            if task == REGRESSION:
                m = 0.0
                if not regression_round(&cnt, y[i], dot, v, 0.0, i, &yi, &loss):
                    break
            else:
                yi = y[i]
                m = yi * dot
                if not count_margin(&cnt, m, v, i):
                    break
                loss = 1.0 - m
            h.s = row_weight(&cnt, i)
            if not full_step_loss(&h, m, loss, v, yi, dot, &ay, &beta):
                t += 1.0
                continue
            if not full_check(&mu[0], z, ay, z, beta, D):
                fail_round(&cnt, NONFINITE_STATE, i)
                break
            t += 1.0
            full_apply(&mu[0], &Sigma[0, 0], D, D, z, ay, z, beta, up, t)
            cnt.updates += 1
    if up != NULL:
        u[D] = t
    return counts_result(&cnt)


def full_scores(RowView rows not None,
                double bias, const double[::1] mu,
                const double[:, ::1] Sigma, double[::1] work, double[::1] out_m,
                double[::1] out_v):
    """mu.x and x^T Sigma x for every row (test-time scores of full rules)."""
    cdef int D = <int>mu.shape[0]
    cdef Py_ssize_t i, nnz
    cdef const double* x
    cdef const int* idx
    cdef double* xd = &work[0]
    cdef double* z = &work[D]
    with nogil:
        for i in range(out_m.shape[0]):
            nnz = get_row(&rows.R, i, &x, &idx)
            out_m[i] = full_quad(x, idx, nnz, bias, &mu[0], &Sigma[0, 0], D, xd, z, &out_v[i])
