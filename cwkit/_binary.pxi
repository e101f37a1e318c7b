# Binary drivers: one online pass over `order`, state updated in place.
#
# Every rule is written in the notation of FORMULAS.md: for a row x with label y,
# m = y mu.x, v = x^T Sigma x (diagonal: sum sigma_i x_i^2), n = ||x||^2, and the
# rule maps (m, v, n) to a step: mu += alpha y Sigma x, plus a covariance update.
# The intercept is an augmented constant feature: coordinate D-1 of the state,
# with value `bias` (1.0, or 0.0 when there is no intercept).

from libc.math cimport sqrt, fabs, isfinite, isinf
from libc.stdlib cimport malloc, free


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
    bint direct             # arow diag: project the update of Sigma, not of Sigma^-1


# aux[] slots of the first-order and AdaGrad state (also `cwkit._core.AUX_*` in Python)
cpdef enum:
    AUX_S = 0               # scale factor: w = s * v
    AUX_VN2 = 1             # ||v||^2 (kept for l2-pa only)
    AUX_T = 2               # rounds seen (averaging, adagrad)

# Rescale w = s*v into v once s leaves this range (O(D), rare).
cdef double S_MIN = 1e-100
cdef double S_MAX = 1e100


cdef Rows make_rows(const double[::1] data, const int[::1] indices,
                    const long long[::1] indptr, const int[::1] dense_idx,
                    Py_ssize_t n_cols):
    """Build the row view; dense input has an empty indptr."""
    cdef Rows R
    R.data = &data[0] if data.shape[0] > 0 else NULL
    R.indices = &indices[0] if indices.shape[0] > 0 else NULL
    R.indptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    R.dense_idx = &dense_idx[0] if dense_idx.shape[0] > 0 else NULL
    R.n_cols = n_cols
    return R


cdef inline double fo_step(const Hyper* h, double m, double n, double wn2, double wx,
                           double* Z, int* status) noexcept nogil:
    """First-order step size tau (w <- (w + tau y x) / Z); 0 means no update.

    m = y w.x, n = ||x||^2 (with the bias term), wn2 = ||w||^2 and wx = w.x
    (used by l2-pa only).  FORMULAS.md sections 1 and 3.
    """
    cdef double loss = 1.0 - m
    cdef double zz, den
    Z[0] = 1.0
    if n <= 0.0:
        return 0.0                             # a zero row: no update
    if h.rule == PERCEPTRON or h.rule == AVG_PERCEPTRON:
        return 1.0 if m <= 0.0 else 0.0
    if h.rule == PA_LS:
        # S002 eqs 7-9: applied on every round, tau may be negative.
        return loss / (n + 0.5 / h.C)          # n + 1/(2C) > 0
    if loss <= 0.0:
        return 0.0                             # no loss: passive
    if h.rule == PA:
        return loss / n
    if h.rule == PA1:
        return min(h.C, loss / n)
    if h.rule == PA2:
        return loss / (n + 0.5 / h.C)
    if h.rule == REG_PA:
        Z[0] = 1.0 + h.alpha                   # S004 Lemma 3.1
        return (loss + h.alpha) / n
    if h.rule == SOFT_REG_PA:
        Z[0] = 1.0 + h.alpha                   # S004 Lemma 5.1
        return (loss + h.alpha) / (n + (1.0 + h.alpha) / (2.0 * h.C))
    if h.rule == L2_PA:
        den = h.beta * h.beta * n - 1.0        # S004 Lemma 3.2
        if den <= 0.0:
            status[0] = INFEASIBLE
            return 0.0
        zz = wn2 * n - wx * wx                 # >= 0 up to rounding (Cauchy-Schwarz)
        zz = sqrt(zz / den) if zz > 0.0 else 0.0
        Z[0] = zz if zz > 1.0 else 1.0
        return (loss + Z[0] - 1.0) / n
    return 0.0


def first_order_pass(const double[::1] data, const int[::1] indices,
                     const long long[::1] indptr, const int[::1] dense_idx,
                     Py_ssize_t n_cols, const double[::1] y,
                     const Py_ssize_t[::1] order, double bias,
                     double[::1] v, double[::1] aux, double[::1] u,
                     int rule, double C, double alpha, double beta):
    """One pass of a first-order rule: perceptron, averaging, PA family, S004 family.

    State: w = aux[AUX_S] * v (length D, intercept last); u accumulates
    sum_t t * Delta_t for averaging (empty otherwise).  v is prefetched
    AHEAD_DIST nonzeros ahead of the scoring walk (`Ahead`).  Returns
    (rounds, mistakes, updates, loss_sum, status, position).
    """
    cdef Rows R = make_rows(data, indices, indptr, dense_idx, n_cols)
    cdef Hyper h
    h.rule = rule
    h.C = C
    h.alpha = alpha
    h.beta = beta
    cdef Py_ssize_t D = v.shape[0], k, j, nnz, i, rounds = 0, mistakes = 0, updates = 0
    cdef Py_ssize_t pos = -1
    cdef int status = OK
    cdef const double* x
    cdef const int* idx
    cdef double dot, n, m, yi, tau, Z, c, s, vn2, t, old, new, loss_sum = 0.0
    cdef bint finite
    cdef bint avg = rule == AVG_PERCEPTRON, track_norm = rule == L2_PA
    cdef Ahead ah
    cdef Py_ssize_t f
    # old values of the coordinates an update touches, to restore on overflow
    cdef double* save = <double*>malloc((max_row_nnz(&R, order) + 1) * sizeof(double))
    if save == NULL:
        raise MemoryError()
    s = aux[AUX_S]
    vn2 = aux[AUX_VN2]
    t = aux[AUX_T]
    with nogil:
        ahead_init(&ah, &R, order)
        for j in range(AHEAD_DIST):
            f = ahead_next(&ah)
            if f >= 0:
                CWKIT_PREFETCH(&v[f])
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&R, i, &x, &idx)
            dot = v[D - 1] * bias
            n = bias * bias
            for j in range(nnz):
                f = ahead_next(&ah)
                if f >= 0:
                    CWKIT_PREFETCH(&v[f])
                dot += v[idx[j]] * x[j]
                n += x[j] * x[j]
            yi = y[i]
            m = yi * s * dot
            if not (isfinite(m) and isfinite(n)):
                status = NONFINITE_INPUT
                pos = i
                break
            rounds += 1
            t += 1.0
            if m <= 0.0:
                mistakes += 1
            if m < 1.0:
                loss_sum += 1.0 - m
            tau = fo_step(&h, m, n, s * s * vn2, s * dot, &Z, &status)
            if status != OK:
                pos = i
                rounds -= 1
                break
            if tau == 0.0:
                continue
            # v <- v + (tau y / s) x  (so that w <- w + tau y x), then s <- s / Z
            c = tau * yi / s                   # s > 0 always (kept in [S_MIN, S_MAX])
            finite = True      # an AND of flags: no serial floating-point chain
            for j in range(nnz):
                old = v[idx[j]]
                save[j] = old
                new = old + c * x[j]
                v[idx[j]] = new
                finite &= isfinite(new)
                if track_norm:
                    vn2 += new * new - old * old
            old = v[D - 1]
            new = old + c * bias
            v[D - 1] = new
            finite &= isfinite(new)
            if track_norm:
                vn2 += new * new - old * old
            if not (finite and isfinite(vn2) and isfinite(c)):
                for j in range(nnz):
                    v[idx[j]] = save[j]
                v[D - 1] = old
                status = NONFINITE_STATE
                pos = i
                rounds -= 1
                break
            if avg:
                # u += t * Delta_t, so that the average of w_2..w_{t+1} is
                # ((t + 1) w - u) / t  (FORMULAS.md section 1, [FS99]).
                for j in range(nnz):
                    u[idx[j]] += t * c * x[j]
                u[D - 1] += t * c * bias
            updates += 1
            s = s / Z                          # Z >= 1
            if s < S_MIN or s > S_MAX:
                for j in range(D):
                    v[j] *= s
                vn2 *= s * s
                s = 1.0
    free(save)
    aux[AUX_S] = s
    aux[AUX_VN2] = vn2
    aux[AUX_T] = t
    return rounds, mistakes, updates, loss_sum, status, pos


cdef inline double inv_diag_update(double s, double c, double x2) noexcept nogil:
    """sigma <- 1 / (1/sigma + c x^2), evaluated as sigma / (1 + c x^2 sigma).

    Literal arithmetic (FORMULAS.md Sect. 2): an overflowing increment gives 0;
    a zero variance stays 0 and a zero feature leaves sigma as it is, also for
    c = inf (no 0 * inf).
    """
    if s == 0.0 or x2 == 0.0:
        return s
    return s / (1.0 + c * x2 * s)


cdef inline double sherman_morrison_beta(double c, double v) noexcept nogil:
    """beta of Sigma <- Sigma - beta Sigma x x^T Sigma for Sigma^-1 += c x x^T:
    beta = c / (1 + c v), and its limit 1/v for c = inf."""
    if isinf(c):
        return 1.0 / v if v > 0.0 else 0.0
    return c / (1.0 + c * v)


cdef inline double so_step(const Hyper* h, double m, double v, double* c) noexcept nogil:
    """Second-order step: returns alpha (mu += alpha y Sigma x) and sets c, the
    coefficient of the diagonal update 1/sigma_i += c x_i^2 (FORMULAS.md section 2).

    For arow with `direct`, c is beta of sigma_i -= beta sigma_i^2 x_i^2.
    Returns 0 when the rule makes no update.
    """
    cdef double phi = h.phi, q, disc, alpha, psi, xi, D, su, loss
    c[0] = 0.0
    if v <= 0.0:
        return 0.0                             # Sigma x = 0: nothing can change
    if h.rule == AROW or h.rule == AROW_H:
        loss = 1.0 - m
        if loss <= 0.0:
            return 0.0
        if h.direct:
            c[0] = 1.0 / (v + h.r)             # beta; v + r > 0
        else:
            c[0] = 1.0 / h.r                   # Sigma^-1 += x x^T / r (S000 eq 14)
        if h.rule == AROW:
            return loss / (v + h.r)            # S000 eq 16
        return min(0.5 / h.r, loss / v)        # S000 eq 23; v > 0
    if h.rule == CW_VAR:
        # [CW08] Alg. 1, rationalised for q > 0 (FORMULAS.md section 2).
        q = 1.0 + 2.0 * phi * m
        disc = (1.0 - 2.0 * phi * m) * (1.0 - 2.0 * phi * m) + 8.0 * phi * phi * v
        if q > 0.0:
            alpha = 2.0 * (phi * v - m) / (v * (q + sqrt(disc)))
        else:
            alpha = (-q + sqrt(disc)) / (4.0 * phi * v)   # phi > 0, v > 0
        if not alpha > 0.0:
            return 0.0
        c[0] = 2.0 * alpha * phi
        return alpha
    if h.rule == CW_STDEV:
        # S001 Fig. 1, eqs 14, 12, 15 with the rationalised forms.
        psi = 1.0 + 0.5 * phi * phi
        xi = 1.0 + phi * phi
        D = m * m * phi * phi * phi * phi * 0.25 + v * phi * phi * xi
        if m > 0.0:
            alpha = (v * phi * phi - m * m) / (v * (m * psi + sqrt(D)))
        else:
            alpha = (-m * psi + sqrt(D)) / (v * xi)
        if not alpha > 0.0:
            return 0.0
        q = alpha * v * phi
        su = 2.0 * v / (q + sqrt(q * q + 4.0 * v))        # sqrt(u), eq 12; > 0
        c[0] = alpha * phi / su
        return alpha
    return 0.0


def diag_pass(const double[::1] data, const int[::1] indices,
              const long long[::1] indptr, const int[::1] dense_idx,
              Py_ssize_t n_cols, const double[::1] y,
              const Py_ssize_t[::1] order, double bias,
              double[:, ::1] ms,
              int rule, double phi, double r, bint direct):
    """One pass of a diagonal second-order rule: CW-Var, CW-Stdev, AROW, AROW-H.

    State: ms[i] = (mu_i, sigma_i), interleaved so that a feature's mean and
    variance share a cache line (one miss per nonzero instead of two), and that
    line prefetched AHEAD_DIST nonzeros before the scoring walk reaches it.

    Returns (rounds, mistakes, updates, loss_sum, status, position).
    """
    cdef Rows R = make_rows(data, indices, indptr, dense_idx, n_cols)
    cdef Hyper h
    h.rule = rule
    h.phi = phi
    h.r = r
    h.direct = direct
    cdef Py_ssize_t D = ms.shape[0], k, j, nnz, i, p, rounds = 0, mistakes = 0, updates = 0
    cdef Py_ssize_t pos = -1
    cdef int status = OK
    cdef const double* x
    cdef const int* idx
    cdef double dot, v, m, yi, alpha, c, ay, xj, sj, loss_sum = 0.0
    cdef bint finite
    cdef double mb, sb
    cdef double* w = &ms[0, 0]
    cdef Ahead ah
    # old (mu, sigma) of the coordinates an update touches, to restore on overflow
    cdef double* save = <double*>malloc(2 * (max_row_nnz(&R, order) + 1) * sizeof(double))
    if save == NULL:
        raise MemoryError()
    with nogil:
        ahead_init(&ah, &R, order)
        for j in range(AHEAD_DIST):
            p = ahead_next(&ah)
            if p >= 0:
                CWKIT_PREFETCH(w + 2 * p)
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&R, i, &x, &idx)
            dot = w[2 * (D - 1)] * bias
            v = w[2 * (D - 1) + 1] * bias * bias
            for j in range(nnz):
                p = ahead_next(&ah)
                if p >= 0:
                    CWKIT_PREFETCH(w + 2 * p)     # (mu, sigma) share a cache line
                p = idx[j]
                dot += w[2 * p] * x[j]
                v += w[2 * p + 1] * x[j] * x[j]
            yi = y[i]
            m = yi * dot
            if not (isfinite(m) and isfinite(v)):
                status = NONFINITE_INPUT
                pos = i
                break
            rounds += 1
            if m <= 0.0:
                mistakes += 1
            if m < 1.0:
                loss_sum += 1.0 - m
            alpha = so_step(&h, m, v, &c)
            if alpha == 0.0:
                continue
            ay = alpha * yi
            finite = True
            for j in range(nnz):
                p = idx[j]
                xj = x[j]
                sj = w[2 * p + 1]
                save[2 * j] = w[2 * p]
                save[2 * j + 1] = sj
                w[2 * p] += ay * sj * xj
                if direct:
                    w[2 * p + 1] = sj - c * sj * sj * xj * xj
                else:
                    w[2 * p + 1] = inv_diag_update(sj, c, xj * xj)
                finite &= isfinite(w[2 * p]) & isfinite(w[2 * p + 1])
            mb = w[2 * (D - 1)]
            sb = w[2 * (D - 1) + 1]
            w[2 * (D - 1)] = mb + ay * sb * bias
            if direct:
                w[2 * (D - 1) + 1] = sb - c * sb * sb * bias * bias
            else:
                w[2 * (D - 1) + 1] = inv_diag_update(sb, c, bias * bias)
            finite &= isfinite(w[2 * (D - 1)]) & isfinite(w[2 * (D - 1) + 1])
            if not finite:
                for j in range(nnz):
                    w[2 * idx[j]] = save[2 * j]
                    w[2 * idx[j] + 1] = save[2 * j + 1]
                w[2 * (D - 1)] = mb
                w[2 * (D - 1) + 1] = sb
                status = NONFINITE_STATE
                pos = i
                rounds -= 1
                break
            updates += 1
    free(save)
    return rounds, mistakes, updates, loss_sum, status, pos


def sop_diag_pass(const double[::1] data, const int[::1] indices,
                  const long long[::1] indptr, const int[::1] dense_idx,
                  Py_ssize_t n_cols, const double[::1] y,
                  const Py_ssize_t[::1] order, double bias,
                  double[::1] vv, double[::1] A):
    """One pass of the diagonal second-order perceptron.

    [SOP05] Fig. 3.1 projected on the diagonal (FORMULAS.md section 2): predict
    with w_t = vv / (A + x_t^2); on a mistake vv += y x, A += x^2.
    Returns (rounds, mistakes, updates, loss_sum, status, position).
    """
    cdef Rows R = make_rows(data, indices, indptr, dense_idx, n_cols)
    cdef Py_ssize_t D = vv.shape[0], k, j, nnz, i, p, rounds = 0, mistakes = 0, updates = 0
    cdef Py_ssize_t pos = -1
    cdef int status = OK
    cdef const double* x
    cdef const int* idx
    cdef double score, m, n, yi, xj, loss_sum = 0.0
    cdef Ahead ah
    cdef Py_ssize_t f
    with nogil:
        ahead_init(&ah, &R, order)
        for j in range(AHEAD_DIST):
            f = ahead_next(&ah)
            if f >= 0:
                CWKIT_PREFETCH(&vv[f])
                CWKIT_PREFETCH(&A[f])
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&R, i, &x, &idx)
            score = vv[D - 1] * bias / (A[D - 1] + bias * bias)     # A > 0
            n = bias * bias
            for j in range(nnz):
                f = ahead_next(&ah)
                if f >= 0:
                    CWKIT_PREFETCH(&vv[f])
                    CWKIT_PREFETCH(&A[f])
                p = idx[j]
                xj = x[j]
                score += vv[p] * xj / (A[p] + xj * xj)
                n += xj * xj
            yi = y[i]
            m = yi * score
            if not (isfinite(m) and isfinite(n)):
                status = NONFINITE_INPUT
                pos = i
                break
            rounds += 1
            if m < 1.0:
                loss_sum += 1.0 - m
            if m > 0.0:
                continue
            mistakes += 1
            for j in range(nnz):
                p = idx[j]
                xj = x[j]
                vv[p] += yi * xj
                A[p] += xj * xj
            vv[D - 1] += yi * bias
            A[D - 1] += bias * bias
            updates += 1
    return rounds, mistakes, updates, loss_sum, status, pos


cdef inline double rda_weight(double u, double G, double t, double eta, double lam,
                              double delta) noexcept nogil:
    """AdaGrad-RDA weight from (u_i, G_i, t), FORMULAS.md section 3b:
    w_i = -sign(u_i) eta / (delta + sqrt(G_i)) max(0, |u_i| - lam t)."""
    cdef double a = fabs(u) - lam * t
    if a <= 0.0:
        return 0.0
    a = eta * a / (delta + sqrt(G))        # G > 0 whenever u != 0; delta > 0
    return -a if u > 0.0 else a


def adagrad_pass(const double[::1] data, const int[::1] indices,
                 const long long[::1] indptr, const int[::1] dense_idx,
                 Py_ssize_t n_cols, const double[::1] y,
                 const Py_ssize_t[::1] order, double bias,
                 double[::1] u, double[::1] G, double[::1] aux,
                 double eta, double lam, double delta):
    """One pass of diagonal AdaGrad (RDA with L1) on the hinge loss.

    Weights are computed on demand from (u, G, t), so a round costs O(nnz).
    Returns (rounds, mistakes, updates, loss_sum, status, position).
    """
    cdef Rows R = make_rows(data, indices, indptr, dense_idx, n_cols)
    cdef Py_ssize_t D = u.shape[0], k, j, nnz, i, p, rounds = 0, mistakes = 0, updates = 0
    cdef Py_ssize_t pos = -1
    cdef int status = OK
    cdef const double* x
    cdef const int* idx
    cdef double score, m, n, yi, xj, t = aux[AUX_T], loss_sum = 0.0
    cdef Ahead ah
    cdef Py_ssize_t f
    with nogil:
        ahead_init(&ah, &R, order)
        for j in range(AHEAD_DIST):
            f = ahead_next(&ah)
            if f >= 0:
                CWKIT_PREFETCH(&u[f])
                CWKIT_PREFETCH(&G[f])
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&R, i, &x, &idx)
            score = rda_weight(u[D - 1], G[D - 1], t, eta, lam, delta) * bias
            n = bias * bias
            for j in range(nnz):
                f = ahead_next(&ah)
                if f >= 0:
                    CWKIT_PREFETCH(&u[f])
                    CWKIT_PREFETCH(&G[f])
                p = idx[j]
                score += rda_weight(u[p], G[p], t, eta, lam, delta) * x[j]
                n += x[j] * x[j]
            yi = y[i]
            m = yi * score
            if not (isfinite(m) and isfinite(n)):
                status = NONFINITE_INPUT
                pos = i
                break
            rounds += 1
            t += 1.0
            if m <= 0.0:
                mistakes += 1
            if m >= 1.0:
                continue
            loss_sum += 1.0 - m
            # subgradient of the hinge loss: g = -y x
            for j in range(nnz):
                p = idx[j]
                xj = x[j]
                u[p] -= yi * xj
                G[p] += xj * xj
            u[D - 1] -= yi * bias
            G[D - 1] += bias * bias
            updates += 1
    aux[AUX_T] = t
    return rounds, mistakes, updates, loss_sum, status, pos


def rda_weights(const double[::1] u, const double[::1] G, double t, double eta,
                double lam, double delta, double[::1] out):
    """Materialise AdaGrad-RDA weights w_{t+1} into `out` (for coef_)."""
    cdef Py_ssize_t j
    with nogil:
        for j in range(u.shape[0]):
            out[j] = rda_weight(u[j], G[j], t, eta, lam, delta)


def row_scores(const double[::1] data, const int[::1] indices,
               const long long[::1] indptr, const int[::1] dense_idx,
               Py_ssize_t n_cols, double bias, const double[::1] w,
               const double[::1] s2, double[::1] out_m, double[::1] out_v):
    """Test-time w.x (and x^T diag(s2) x when s2 is not empty) for every row.

    The same row walk as the training drivers, so dense and CSR inputs give
    bit-identical scores.
    """
    cdef Rows R = make_rows(data, indices, indptr, dense_idx, n_cols)
    cdef Py_ssize_t D = w.shape[0], i, j, p, nnz
    cdef bint quad = s2.shape[0] > 0
    cdef const double* x
    cdef const int* idx
    cdef double dot, v
    with nogil:
        for i in range(out_m.shape[0]):
            nnz = get_row(&R, i, &x, &idx)
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


def sop_diag_scores(const double[::1] data, const int[::1] indices,
                    const long long[::1] indptr, const int[::1] dense_idx,
                    Py_ssize_t n_cols, double bias, const double[::1] vv,
                    const double[::1] A, double[::1] out):
    """Test-time scores of the diagonal SOP: sum_i vv_i x_i / (A_i + x_i^2)."""
    cdef Rows R = make_rows(data, indices, indptr, dense_idx, n_cols)
    cdef Py_ssize_t D = vv.shape[0], i, j, p, nnz
    cdef const double* x
    cdef const int* idx
    cdef double score
    with nogil:
        for i in range(out.shape[0]):
            nnz = get_row(&R, i, &x, &idx)
            score = vv[D - 1] * bias / (A[D - 1] + bias * bias)     # A > 0
            for j in range(nnz):
                p = idx[j]
                score += vv[p] * x[j] / (A[p] + x[j] * x[j])
            out[i] = score
