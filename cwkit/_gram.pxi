# Kernel functions and the Gram matrix of a group of rows, written once for the
# mini-batch drivers (primal and kernel, binary and multi-class) and the kernel drivers.
#
# k~(a, b) = k(a, b) + bias^2: the kernel of the augmented rows (the intercept as a
# constant feature); the linear kernel's k~ is the primal rules' x~_a.x~_b.  Dot
# products of two rows walk their sorted indices, so dense and CSR rows give
# bit-identical values.
#
# Provides: Kernel, KernelFn, kernel_fn, kernel_value, sparse_dot, gram_row.
# Uses: Rows, get_row (_rows.pxi).

from libc.math cimport exp, pow


cpdef enum Kernel:
    KERNEL_LINEAR = 0
    KERNEL_POLY = 1
    KERNEL_RBF = 2


cdef struct KernelFn:
    int kind
    int degree
    double gamma
    double coef0
    double bias2


cdef KernelFn kernel_fn(int kind, double gamma, int degree, double coef0,
                        double bias) noexcept nogil:
    cdef KernelFn kf
    kf.kind = kind
    kf.gamma = gamma
    kf.degree = degree
    kf.coef0 = coef0
    kf.bias2 = bias * bias
    return kf


cdef inline double kernel_value(const KernelFn* kf, double dot, double sa,
                                double sb) noexcept nogil:
    """k~(a, b) from a.b and the squared norms of a and b."""
    cdef double base, p, d
    cdef int e
    if kf.kind == KERNEL_LINEAR:
        return dot + kf.bias2
    if kf.kind == KERNEL_POLY:
        base = kf.gamma * dot + kf.coef0
        if kf.degree > 3:           # (a loop of degree products would take seconds at 2^31)
            return pow(base, kf.degree) + kf.bias2
        p = base
        for e in range(1, kf.degree):
            p *= base
        return p + kf.bias2
    d = sa + sb - 2.0 * dot
    if d < 0.0:
        d = 0.0                     # rounding of a near-duplicate pair
    d *= -kf.gamma
    # exp rounds to 0 below -745.14 (a narrow width: most values): the call is skipped
    return (0.0 if d < -746.0 else exp(d)) + kf.bias2


cdef inline double sparse_dot(const double* xa, const int* ia, Py_ssize_t na,
                              const double* xb, const int* ib, Py_ssize_t nb,
                              double s) noexcept nogil:
    """s + x_a . x_b by merging sorted indices (terms added in increasing index
    order), so that dense and CSR rows give the same sums."""
    cdef Py_ssize_t p = 0, q = 0
    while p < na and q < nb:
        if ia[p] == ib[q]:
            s += xa[p] * xb[q]
            p += 1
            q += 1
        elif ia[p] < ib[q]:
            p += 1
        else:
            q += 1
    return s


cdef inline void gram_row(const Rows* R, const Py_ssize_t* rows, Py_ssize_t r,
                          const KernelFn* kf, double init, const double* sqr,
                          double* out) noexcept nogil:
    """Row r of a group's Gram matrix, its lower triangle: out[r2] = k~(x_rows[r2],
    x_rows[r]) for r2 = 0..r (sqr[r2]: ||x_rows[r2]||^2, read by the RBF kernel only;
    init 0).  kf NULL: the linear x~.x~' summed from `init` = bias^2 in index order
    (the order of ||x~||^2 in the multi-class top-k driver)."""
    cdef const double* xa
    cdef const double* xb
    cdef const int* ia
    cdef const int* ib
    cdef Py_ssize_t r2, nb, na = get_row(R, rows[r], &xa, &ia)
    cdef double dot
    for r2 in range(r + 1):
        nb = get_row(R, rows[r2], &xb, &ib)
        dot = sparse_dot(xb, ib, nb, xa, ia, na, init)
        if kf == NULL:
            out[r2] = dot
        elif kf.kind == KERNEL_RBF:
            out[r2] = kernel_value(kf, dot, sqr[r2], sqr[r])
        else:
            out[r2] = kernel_value(kf, dot, 0.0, 0.0)
