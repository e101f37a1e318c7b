# The pieces of a training driver that every driver shares, declared once, so
# that a driver is only the loop specific to it (after scikit-learn's
# declare-once helpers; the rule's step is a parameter, as lightning passes
# the loss).
#
# Provides:
#   Counts, counts_start, count_round, count_hinge, count_margin, fail_row,
#     fail_round, counts_result: the counters every pass returns, and the one
#     way a pass stops at a row (status + position, its round undone if counted);
#   Workspace: the one allocator of driver scratch (freed in one place);
#   S_MIN, S_MAX, scaled_rescale: the scaled weight vector w = s v;
#   sigma_step: the diagonal covariance step of CW and AROW;
#   restore_coords: undo an update of the coordinates of one row.
# Uses: Status (_status.pxi).

from libc.math cimport sqrt, fabs, isfinite, isinf
from libc.stdlib cimport malloc, calloc, free


cdef struct Counts:
    Py_ssize_t rounds       # rows predicted
    Py_ssize_t mistakes     # of them wrongly
    Py_ssize_t updates      # updates made
    double loss_sum         # hinge losses at prediction time
    int status              # a Status
    Py_ssize_t pos          # the row the pass stopped at, -1 if none


cdef inline Counts counts_start() noexcept nogil:
    cdef Counts n
    n.rounds = 0
    n.mistakes = 0
    n.updates = 0
    n.loss_sum = 0.0
    n.status = OK
    n.pos = -1
    return n


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
    """A binary round of row i with margin m (q: ||x||^2 or x^T Sigma x): count it
    (a mistake when m <= 0) with its hinge loss, or stop (False) when m or q is
    not finite."""
    if not (isfinite(m) and isfinite(q)):
        fail_row(n, NONFINITE_INPUT, i)
        return False
    count_round(n, m <= 0.0)
    count_hinge(n, m)
    return True


cdef inline tuple counts_result(const Counts* n):
    """(rounds, mistakes, updates, loss_sum, status, position): what a pass returns."""
    return n.rounds, n.mistakes, n.updates, n.loss_sum, n.status, n.pos


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
                                  double* vn2) noexcept nogil:
    """The scale s of w = s v after a shrink: when s has left [S_MIN, S_MAX],
    v (n entries `stride` apart) <- s v, ||v||^2 <- s^2 ||v||^2 and s <- 1."""
    cdef Py_ssize_t j
    if s < S_MIN or s > S_MAX:
        for j in range(n):
            v[j * stride] *= s
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


cdef inline double sigma_step(double s, double c, bint direct, double x) noexcept nogil:
    """The diagonal covariance step on one coordinate with feature value x:
    1/sigma += c x^2 ([CW08], [AROW09]), or with `direct` the projected
    sigma -= c sigma^2 x^2 ([AROW13] eq. 14 with beta = c)."""
    if direct:
        return s - c * s * s * x * x
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
