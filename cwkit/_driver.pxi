# The pieces of a training driver that every driver shares, declared once, so
# that a driver is only the loop specific to it (after scikit-learn's
# declare-once helpers; the rule's step is a parameter, as lightning passes
# the loss).
#
# Provides:
#   Counts, counts_start, row_weight, count_round, count_hinge, count_margin, argmax_first,
#     count_argmax, fail_row, fail_round, counts_result: the counters every pass
#     returns, and the one way a pass stops at a row (status + position, its
#     round undone if counted); the per-pass options a RowView carries (rounds
#     counted against other labels, the scores of the rounds);
#   Task, regression_round: the learning task of a pass and the round of a
#     regression (its residual's direction and epsilon-insensitive loss, counted);
#   normal_pair, newly_tiny, any_newly_tiny, count_collapse: the first row
#     whose update collapsed a variance;
#   Workspace: the one allocator of driver scratch (freed in one place);
#   S_MIN, S_MAX, scaled_rescale: the scaled weight vector w = s v;
#   DiagUpdate, sigma_step: the diagonal covariance steps of CW, AROW, SCW, NHERD;
#   restore_coords: undo an update of the coordinates of one row.
# Uses: Status (_status.pxi); RowView (_rows.pxi).

from libc.float cimport DBL_MAX, DBL_MIN
from libc.math cimport sqrt, fabs, isfinite, isinf
from libc.stdlib cimport malloc, calloc, free


cdef struct Counts:
    Py_ssize_t rounds       # rows predicted
    Py_ssize_t mistakes     # of them wrongly
    Py_ssize_t updates      # updates made
    double loss_sum         # hinge losses at prediction time
    int status              # a Status
    Py_ssize_t pos          # the row the pass stopped at, -1 if none
    Py_ssize_t collapsed    # the first row whose update collapsed a variance, -1 if none
    # the per-pass options of the RowView (`RowView.counting`), NULL when off:
    const double* clean     # per row, the label the round is counted against
    double* out             # the scores of the counted rounds, in their order
    const double* y         # binary: the labels learnt (+-1), to recover the score
    const double* wt        # the rows' importance weights (`RowView.weighted`), NULL: all 1


cdef inline Counts counts_start(RowView rows, const double[::1] y=None) noexcept:
    """The counters of a pass over `rows` (with its per-pass options); binary
    drivers pass their labels y (+-1)."""
    cdef Counts n
    n.rounds = 0
    n.mistakes = 0
    n.updates = 0
    n.loss_sum = 0.0
    n.status = OK
    n.pos = -1
    n.collapsed = -1
    n.clean = rows.clean_p
    n.out = rows.scores_p
    n.y = &y[0] if y is not None and y.shape[0] > 0 else NULL
    n.wt = rows.weights_p
    return n


cdef inline double row_weight(const Counts* n, Py_ssize_t i) noexcept nogil:
    """The importance weight of row i: 1 without weights."""
    return n.wt[i] if n.wt != NULL else 1.0


cdef inline void count_round(Counts* n, bint mistake) noexcept nogil:
    """Count this round (and its mistake)."""
    n.rounds += 1
    if mistake:
        n.mistakes += 1


cdef inline void count_hinge(Counts* n, double m) noexcept nogil:
    """Add the hinge loss max(0, 1 - m) of margin m."""
    if m < 1.0:
        n.loss_sum += 1.0 - m


cdef inline void fail_row(Counts* n, int status, Py_ssize_t i) noexcept nogil:
    """Stop at row i, whose round was not counted yet; the driver breaks next."""
    n.status = status
    n.pos = i


cdef inline void fail_round(Counts* n, int status, Py_ssize_t i) noexcept nogil:
    """Stop at row i and undo the count of its round; the driver breaks next."""
    n.status = status
    n.pos = i
    n.rounds -= 1


cdef inline bint count_margin(Counts* n, double m, double q, Py_ssize_t i) noexcept nogil:
    """A binary round of row i with margin m = y_i s (q: ||x||^2 or x^T Sigma x):
    count it with its hinge loss, or stop (False) when m or q is not finite.

    The round is a mistake when m <= 0, or with clean labels when
    y_clean_i s = m y_clean_i y_i <= 0 (y = +-1: exact); the hinge loss is the
    one of the label learnt.  With the scores output, s = m y_i (exact) goes to
    its position."""
    if not (isfinite(m) and isfinite(q)):
        fail_row(n, NONFINITE_INPUT, i)
        return False
    if n.out != NULL:
        n.out[n.rounds] = m * n.y[i]
    count_round(n, (m * n.clean[i] * n.y[i] if n.clean != NULL else m) <= 0.0)
    count_hinge(n, m)
    return True


# The learning task of a pass (also `cwkit._core.Task`): what a round learns from its
# score.  A classification round has a label y = +-1 and margin m = y score, and the
# steps act on the hinge's argument 1 - m; a regression round (`regression_round`)
# has a real target y, the direction sign(y - score) in place of the label and the
# epsilon-insensitive loss |y - score| - epsilon in place of 1 - m ([PA06] Sect. 4).
cpdef enum Task:
    CLASSIFICATION = 0
    REGRESSION = 1


cdef inline bint regression_round(Counts* n, double target, double score, double q,
                                  double eps, Py_ssize_t i, double* sgn,
                                  double* loss) noexcept nogil:
    """A regression round of row i with target `target`, prediction `score` and q
    (||x||^2 or x^T Sigma x): count it, or stop (False) when score or q is not finite.

    The round adds its squared error (target - score)^2 to the loss sum and is a
    mistake when |target - score| > eps, or with clean targets (`RowView.counting`)
    |clean_i - score| > eps; with the scores output, the prediction goes to its
    position.  Sets sgn = sign(target - score) (+1 for 0), the direction of the
    update, and loss = |target - score| - eps, the epsilon-insensitive loss before
    its clip at 0 (eps = 0: the absolute residual)."""
    cdef double res = target - score, counted
    if not (isfinite(score) and isfinite(q)):
        fail_row(n, NONFINITE_INPUT, i)
        return False
    if n.out != NULL:
        n.out[n.rounds] = score
    counted = n.clean[i] - score if n.clean != NULL else res
    count_round(n, fabs(counted) > eps)
    n.loss_sum += res * res
    sgn[0] = 1.0 if res >= 0.0 else -1.0
    loss[0] = fabs(res) - eps
    return True


cdef inline Py_ssize_t argmax_first(const double* sc, Py_ssize_t K) noexcept nogil:
    """Index of the largest score, ties to the first."""
    cdef Py_ssize_t c, best = 0
    for c in range(1, K):
        if sc[c] > sc[best]:
            best = c
    return best


cdef inline Py_ssize_t count_argmax(Counts* n, const double* sc, Py_ssize_t K, Py_ssize_t yi,
                                    Py_ssize_t i) noexcept nogil:
    """A multi-class round of row i (label yi) with finite class scores sc[0..K):
    count it, a mistake when the prediction (the argmax, ties to the first
    class) is not yi, or with clean labels not row i's clean class; with the
    scores output, the K scores go to its row.  Returns the prediction."""
    cdef Py_ssize_t c, pred = argmax_first(sc, K)
    if n.out != NULL:
        for c in range(K):
            n.out[n.rounds * K + c] = sc[c]
    count_round(n, pred != (<Py_ssize_t>n.clean[i] if n.clean != NULL else yi))
    return pred


cdef inline bint normal_pair(double mu, double s) noexcept nogil:
    """True only if mu is finite and the variance s in [DBL_MIN, DBL_MAX] (not
    collapsed); False also for some finite pairs (|mu| + s > DBL_MAX): a quick test
    whose False sends a driver to its exact checks."""
    return (s >= DBL_MIN) & (fabs(mu) + s <= DBL_MAX)


cdef inline bint newly_tiny(double old, double new) noexcept nogil:
    """Whether a variance step took `old` >= DBL_MIN to `new` < DBL_MIN.

    Below the smallest normal double a variance has lost its relative precision
    and the next few multiplicative shrinks make it exactly 0, from where its
    weight never moves again (``cwkit.models.collapse``).  The variances of the
    diagonal rules never grow, so this is the round where one first falls below.
    """
    return (new < DBL_MIN) & (old >= DBL_MIN)


cdef inline bint any_newly_tiny(const double* sg, const double* old, const int* idx,
                                Py_ssize_t nnz, Py_ssize_t ks, Py_ssize_t os) noexcept nogil:
    """`newly_tiny` for one of a row's coordinates p = idx[j]: new variance sg[p ks],
    old one old[j os]."""
    cdef Py_ssize_t j
    for j in range(nnz):
        if newly_tiny(old[j * os], sg[idx[j] * ks]):
            return True
    return False


cdef inline void count_collapse(Counts* n, bint tiny, Py_ssize_t i) noexcept nogil:
    """Row i's update, made, collapsed a variance (`tiny`): note it if it is the first."""
    if tiny and n.collapsed < 0:
        n.collapsed = i


cdef inline tuple counts_result(const Counts* n):
    """(rounds, mistakes, updates, loss_sum, status, position, collapsed): what a
    pass returns."""
    return n.rounds, n.mistakes, n.updates, n.loss_sum, n.status, n.pos, n.collapsed


cdef enum:
    WS_BLOCKS = 12


cdef class Workspace:
    """Scratch buffers of one pass: each taken with `doubles` / `indices`
    (MemoryError on failure), all freed together when the workspace goes."""
    cdef void* blocks[WS_BLOCKS]
    cdef int n

    cdef void* take(self, Py_ssize_t nbytes, bint zero) except NULL:
        cdef void* p
        if self.n == WS_BLOCKS:
            raise MemoryError("Workspace: too many buffers")
        nbytes = nbytes if nbytes > 0 else 1
        p = calloc(nbytes, 1) if zero else malloc(nbytes)
        if p == NULL:
            raise MemoryError()
        self.blocks[self.n] = p
        self.n += 1
        return p

    cdef double* doubles(self, Py_ssize_t n) except NULL:
        """n doubles, not initialised."""
        return <double*>self.take(n * sizeof(double), False)

    cdef Py_ssize_t* indices(self, Py_ssize_t n) except NULL:
        """n indices, not initialised."""
        return <Py_ssize_t*>self.take(n * sizeof(Py_ssize_t), False)

    cdef unsigned char* flags(self, Py_ssize_t n) except NULL:
        """n flags, all 0."""
        return <unsigned char*>self.take(n, True)

    def __dealloc__(self):
        cdef int k
        for k in range(self.n):
            free(self.blocks[k])


# Rescale w = s*v into v once s leaves this range (O(D), rare).
cdef double S_MIN = 1e-100
cdef double S_MAX = 1e100


cdef inline double scaled_rescale(double* v, Py_ssize_t n, Py_ssize_t stride, double s,
                                  double* vn2, Py_ssize_t cols=1) noexcept nogil:
    """The scale s of w = s v after a shrink: when s has left [S_MIN, S_MAX],
    v (n rows `stride` apart of `cols` adjacent entries) <- s v, ||v||^2 <- s^2
    ||v||^2 and s <- 1."""
    cdef Py_ssize_t j, c
    if s < S_MIN or s > S_MAX:
        for j in range(n):
            for c in range(cols):
                v[j * stride + c] *= s
        vn2[0] *= s * s
        return 1.0
    return s


cdef inline double inv_diag_update(double s, double c, double x2) noexcept nogil:
    """sigma <- 1 / (1/sigma + c x^2), evaluated as sigma / (1 + c x^2 sigma).

    Literal arithmetic: an overflowing increment gives 0; a zero variance stays
    0 and a zero feature leaves sigma as it is, also for c = inf (no 0 * inf).
    """
    if s == 0.0 or x2 == 0.0:
        return s
    return s / (1.0 + c * x2 * s)


# The diagonal covariance steps (`sigma_step`), also `cwkit._core.DiagUpdate`.
cpdef enum DiagUpdate:
    DIAG_INVERSE = 0        # 1/sigma += c x^2: the update of Sigma^-1 projected
    DIAG_DIRECT = 1         # sigma -= c sigma^2 x^2: the update of Sigma projected
    DIAG_EXACT = 2          # sigma <- sigma / (1 + c x^2 sigma)^2: NHERD's "exact"


cdef inline double sigma_step(double s, double c, int mode, double x) noexcept nogil:
    """The diagonal covariance step on one coordinate with feature value x:
    1/sigma += c x^2 ([CW08], [AROW09]), or with DIAG_DIRECT the projected
    sigma -= c sigma^2 x^2 ([AROW13] eq. 14 with beta = c), or with DIAG_EXACT
    sigma / (1 + c x^2 sigma)^2 ([NHERD10]'s "exact" diagonal, c = C; a zero
    variance or feature leaves sigma as it is, as `inv_diag_update`)."""
    cdef double q
    if mode == DIAG_DIRECT:
        return s - c * s * s * x * x
    if mode == DIAG_EXACT:
        if s == 0.0 or x == 0.0:
            return s
        q = 1.0 + c * (x * x) * s
        return s / (q * q)
    return inv_diag_update(s, c, x * x)


cdef inline void restore_coords(double* w, const double* save, const int* idx, Py_ssize_t nnz,
                                Py_ssize_t D, Py_ssize_t ks, Py_ssize_t width) noexcept nogil:
    """Undo an update of the coordinates of a row (and the intercept D - 1) of a
    state whose coordinate p holds `width` values from w[p * ks]: save holds their
    old values, row order, the intercept last."""
    cdef Py_ssize_t j, t, p
    for j in range(nnz + 1):
        p = (idx[j] if j < nnz else D - 1) * ks
        for t in range(width):
            w[p + t] = save[width * j + t]
