# Row access shared by every driver: a row is (values*, indices*, nnz).
# CSR rows are pointer offsets; dense rows share one arange index array.

cdef struct Rows:
    const double* data
    const int* indices
    const long long* indptr    # NULL for dense input
    const int* dense_idx       # arange(n_cols) for dense input
    Py_ssize_t n_cols


cdef inline Py_ssize_t get_row(const Rows* R, Py_ssize_t i, const double** x,
                               const int** idx) noexcept nogil:
    cdef long long start
    if R.indptr != NULL:
        start = R.indptr[i]
        x[0] = R.data + start
        idx[0] = R.indices + start
        return <Py_ssize_t>(R.indptr[i + 1] - start)
    x[0] = R.data + i * R.n_cols
    idx[0] = R.dense_idx
    return R.n_cols


cdef Py_ssize_t max_row_nnz(const Rows* R, const Py_ssize_t[::1] order) noexcept nogil:
    """The largest number of stored entries among the rows named in `order`."""
    cdef Py_ssize_t k, i, nnz, best = 0
    if R.indptr == NULL:
        return R.n_cols
    for k in range(order.shape[0]):
        i = order[k]
        nnz = <Py_ssize_t>(R.indptr[i + 1] - R.indptr[i])
        if nnz > best:
            best = nnz
    return best
