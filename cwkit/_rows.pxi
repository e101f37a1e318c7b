# Row access shared by every driver: a row is (values*, indices*, nnz).
# CSR rows are pointer offsets; dense rows share one arange index array.
#
# Provides: `RowView` (the rows of one validated batch, built once per batch by
# cwkit._rowdata and passed first to every driver; `RowView.counting` adds the
# per-pass options of the counters, see _driver.pxi), the `Rows` struct it holds,
# `get_row`, `max_row_nnz`, `_csr_increasing` (the canonical-rows check of
# cwkit._rowdata), the prefetch macros and `Ahead` (`ahead_start`, `ahead_row`),
# which names the features whose state a driver prefetches AHEAD_DIST nonzeros
# ahead of its scoring walk.
# `csr_row` checks and views one CSR row (``partial_fit`` on one example), with
# `one_csr_entries` and `sort_one_row`, which `_onerow.pxi` shares, as
# `one_dense_entries` (one dense row);
# `RowView.unchecked` and `row_ok`: rows checked by the pass that reads them.
# Uses nothing from the other includes.

from libc.math cimport isfinite
from libc.stdlib cimport malloc, free
cimport numpy as cnp

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define CWKIT_PREFETCH(p) __builtin_prefetch((const void*)(p))
    #else
    #define CWKIT_PREFETCH(p) ((void)0)
    #endif
    /* The cache lines of the n doubles from p.  A macro, not an inline function:
       GCC 12 counts a function whose only effect is a prefetch as `const` and drops
       its calls (no prefetch was left in the drivers that way). */
    #define CWKIT_PREFETCH_SPAN(p, n) do { \\
        const double* cwkit_p_ = (p); Py_ssize_t cwkit_n_ = (n), cwkit_o_; \\
        for (cwkit_o_ = 0; cwkit_o_ < cwkit_n_; cwkit_o_ += 8) \\
            CWKIT_PREFETCH(cwkit_p_ + cwkit_o_); \\
        CWKIT_PREFETCH(cwkit_p_ + cwkit_n_ - 1); \\
    } while (0)
    """
    void CWKIT_PREFETCH(const double* p) noexcept nogil
    void CWKIT_PREFETCH_SPAN(const double* p, Py_ssize_t n) noexcept nogil

cdef struct Rows:
    const double* data
    const int* indices
    const long long* indptr    # NULL for dense input
    const int* dense_idx       # arange(n_cols) for dense input
    Py_ssize_t n_cols
    # CSR rows not checked yet (`RowView.unchecked`): the pass checks each row
    # (`row_ok`) before its indices reach the state
    bint unchecked


cdef Rows make_rows(const double[::1] data, const int[::1] indices,
                    const long long[::1] indptr, const int[::1] dense_idx,
                    Py_ssize_t n_cols):
    """The row view of these arrays; dense input has an empty indptr."""
    cdef Rows R
    R.data = &data[0] if data.shape[0] > 0 else NULL
    R.indices = &indices[0] if indices.shape[0] > 0 else NULL
    R.indptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    R.dense_idx = &dense_idx[0] if dense_idx.shape[0] > 0 else NULL
    R.n_cols = n_cols
    R.unchecked = False
    return R


cdef class RowView:
    """The rows of a batch as every driver reads them: CSR (data, indices,
    indptr) or a dense C-contiguous block (data, dense_idx = arange(n_cols),
    empty indptr).  Holds the `Rows` pointers and the arrays they point into,
    and the per-pass options of `counting` (read by `counts_start`).  A view
    made by `csr_row` points into its own storage instead (`one_ptr`, `own`)."""
    cdef Rows R
    cdef Py_ssize_t n               # rows
    cdef const double[::1] data
    cdef const int[::1] indices
    cdef const long long[::1] indptr
    cdef const int[::1] dense_idx
    cdef readonly object clean      # float64 (n_rows,) or None
    cdef readonly object scores     # float64, C-contiguous, or None
    cdef readonly object weights    # float64 (n_rows,) importance weights, or None
    cdef const double* clean_p
    cdef double* scores_p
    cdef const double* weights_p    # NULL: every row of weight 1
    cdef long long one_ptr[2]       # the indptr of a `csr_row` view
    cdef void* own                  # the sorted entries of a `csr_row` view, or NULL
    cdef object base                # the view whose pointers a `counting` view shares

    def __init__(self, const double[::1] data, const int[::1] indices,
                 const long long[::1] indptr, const int[::1] dense_idx, Py_ssize_t n_cols):
        self.data = data
        self.indices = indices
        self.indptr = indptr
        self.dense_idx = dense_idx
        self.R = make_rows(data, indices, indptr, dense_idx, n_cols)
        if self.R.indptr != NULL:
            self.n = indptr.shape[0] - 1
        else:
            self.n = data.shape[0] // n_cols if n_cols > 0 else 0

    def __dealloc__(self):
        free(self.own)

    @property
    def n_rows(self):
        return self.n

    @property
    def is_unchecked(self):
        """Whether the pass is to check these rows (`unchecked`)."""
        return bool(self.R.unchecked)

    def unchecked(self):
        """This CSR view, marked as not checked: its indptr is (nondecreasing, from 0
        to the number of stored entries), but its rows may hold indices out of order,
        repeated or outside [0, n_cols), or values that are not finite.  Only
        `first_order_pass` and `diag_pass` take such a view: they check each row as
        they reach it (`row_ok`, in the cache lines the pass reads anyway, instead of
        a walk of its own over the whole input) and stop at the first one that is not
        valid with the status ROW_UNCHECKED, before its indices reach the state; the
        caller then undoes the pass and validates the input as a whole."""
        if self.R.indptr == NULL:
            raise ValueError("only CSR rows are checked by the pass")
        cdef RowView v = self.counting(self.clean, self.scores)
        v.R.unchecked = True
        return v

    def counting(self, clean=None, scores=None):
        """A view of the same rows whose passes count each round against
        ``clean[i]`` (float64, one per row, in the driver's labels: +-1 binary,
        class codes multi-class) instead of the label learnt, and write the
        score of each counted round into ``scores`` (float64, C-contiguous;
        binary drivers one value per round, multi-class drivers K; the caller
        sizes it for every row of the pass).  None: that option off."""
        cdef RowView v = RowView.__new__(RowView)
        v.R = self.R
        v.n = self.n
        v.base = self
        v.weights = self.weights
        v.weights_p = self.weights_p
        if clean is not None:
            v.set_clean(clean)
        if scores is not None:
            v.set_scores(scores)
        return v

    def weighted(self, weights):
        """A view of the same rows (and per-pass options) whose rounds learn with
        the importance weight ``weights[i]`` of row i (float64, C-contiguous, one
        per row, finite and >= 0, as the caller has checked); None: weight 1."""
        cdef const double[::1] w
        cdef RowView v = self.counting(self.clean, self.scores)
        v.weights = None
        v.weights_p = NULL
        if weights is not None:
            w = weights
            if w.shape[0] != self.n:
                raise ValueError(f"{w.shape[0]} weights for {self.n} rows")
            v.weights = weights
            v.weights_p = &w[0] if w.shape[0] > 0 else NULL
        return v

    cdef set_clean(self, clean):
        cdef const double[::1] c = clean
        if c.shape[0] != self.n:
            raise ValueError(f"clean has {c.shape[0]} labels for {self.n} rows")
        self.clean = clean
        self.clean_p = &c[0] if c.shape[0] > 0 else NULL

    cdef set_scores(self, scores):
        cdef double[::1] out
        if not scores.flags.c_contiguous:
            raise ValueError("scores must be C-contiguous")
        out = scores.reshape(-1)
        self.scores = scores
        self.scores_p = &out[0] if out.shape[0] > 0 else NULL


cdef unsigned long long* _radix_sort(unsigned long long* a, unsigned long long* tmp,
                                     Py_ssize_t n, Py_ssize_t n_cols) noexcept nogil:
    """Sort the keys a[0..n) (index << 32 | position, index < n_cols) by their index:
    least significant byte first, one pass per byte of n_cols - 1, each a counting
    sort into the other buffer (no data-dependent branches).  Returns the buffer
    that holds the result (a or tmp)."""
    cdef Py_ssize_t count[256]
    cdef Py_ssize_t j, c, total, start
    cdef unsigned long long* t
    cdef int shift = 32
    while shift < 64 and (<unsigned long long>(n_cols - 1) >> (shift - 32)) != 0:
        for c in range(256):
            count[c] = 0
        for j in range(n):
            count[(a[j] >> shift) & 255] += 1
        total = 0
        for c in range(256):
            start = total
            total += count[c]
            count[c] = start
        for j in range(n):
            c = (a[j] >> shift) & 255
            tmp[count[c]] = a[j]
            count[c] += 1
        t = a
        a = tmp
        tmp = t
        shift += 8
    return a


cdef struct OneRow:
    # one CSR row read in place (`one_csr_entries`): its entries, their number, and
    # whether its indices are increasing, or decreasing (scipy's products leave them so)
    const double* data
    const int* indices
    Py_ssize_t nnz
    bint ordered, descending


cdef inline const void* _c_array(a, int typenum, Py_ssize_t* n) noexcept:
    """The data of `a` when it is a 1-D ndarray of `typenum`, C-contiguous, aligned
    and in the machine's byte order (its length in n); else NULL."""
    if not cnp.PyArray_Check(a):
        return NULL
    cdef cnp.ndarray arr = <cnp.ndarray>a
    if (cnp.PyArray_NDIM(arr) != 1 or cnp.PyArray_TYPE(arr) != typenum
            or not cnp.PyArray_ISCARRAY_RO(arr)):
        return NULL
    n[0] = cnp.PyArray_DIM(arr, 0)
    return cnp.PyArray_DATA(arr)


cdef bint one_csr_entries(X, Py_ssize_t n_cols, bint narrower, OneRow* r) except -1:
    """Whether X (a CSR matrix) holds exactly one valid row of `n_cols` columns
    (when `narrower`, of at most `n_cols`), read in place into r.

    Valid: shape (1, c); float64 data and int32 indices, contiguous, of one length
    nnz; int32 or int64 indptr [0, nnz]; the indices unique and in [0, c), the
    values finite (uniqueness is left to `sort_one_row` where the indices are
    neither increasing nor decreasing).  The checks of cwkit._rowdata.as_rows for
    ``partial_fit`` on one row, in one pass over the row."""
    cdef Py_ssize_t j, nnz, n_ptr, n_idx, width
    cdef long long start, stop
    cdef const void* ptr
    cdef const double* data
    cdef const int* indices
    cdef int f, prev = 0
    cdef bint ordered = True, descending = True
    shape = X.shape
    if type(shape) is not tuple or len(shape) != 2:
        return False
    rows, cols = shape
    if type(rows) is not int or type(cols) is not int or rows != 1:
        return False
    if not (cols == n_cols or (narrower and 0 <= cols < n_cols)):
        return False
    width = cols
    data = <const double*>_c_array(X.data, cnp.NPY_DOUBLE, &nnz)
    indices = <const int*>_c_array(X.indices, cnp.NPY_INT32, &n_idx)
    indptr = X.indptr
    ptr = _c_array(indptr, cnp.NPY_INT32, &n_ptr)
    if ptr != NULL and n_ptr == 2:
        start, stop = (<const int*>ptr)[0], (<const int*>ptr)[1]
    else:
        ptr = _c_array(indptr, cnp.NPY_INT64, &n_ptr)
        if ptr == NULL or n_ptr != 2:
            return False
        start, stop = (<const long long*>ptr)[0], (<const long long*>ptr)[1]
    if data == NULL or indices == NULL or n_idx != nnz or start != 0 or stop != nnz:
        return False
    for j in range(nnz):
        f = indices[j]
        if not isfinite(data[j]) or f < 0 or f >= width:
            return False
        if j > 0:
            ordered &= f > prev
            descending &= f < prev
        prev = f
    r.data, r.indices, r.nnz = data, indices, nnz
    r.ordered, r.descending = ordered, descending
    return True


cdef bint one_dense_entries(X, Py_ssize_t n_cols, OneRow* r) except -1:
    """Whether X (an ndarray, not a subclass) holds exactly one valid dense row of
    `n_cols` columns, read in place into r (its values; its indices, every column,
    left to the caller): shape (1, n_cols), float64, C-contiguous, aligned, in the
    machine's byte order, every value finite (the checks of cwkit._rowdata.as_rows,
    whose view of a dense row reads every column as this one does)."""
    cdef Py_ssize_t j, n
    cdef const double* data
    if not cnp.PyArray_CheckExact(X):
        return False
    cdef cnp.ndarray a = <cnp.ndarray>X
    if (cnp.PyArray_NDIM(a) != 2 or cnp.PyArray_DIM(a, 0) != 1
            or cnp.PyArray_DIM(a, 1) != n_cols or cnp.PyArray_TYPE(a) != cnp.NPY_DOUBLE
            or not cnp.PyArray_ISCARRAY_RO(a)):
        return False
    data = <const double*>cnp.PyArray_DATA(a)
    n = n_cols
    for j in range(n):
        if not isfinite(data[j]):
            return False
    r.data, r.indices, r.nnz = data, NULL, n
    r.ordered, r.descending = True, False
    return True


cdef bint sort_one_row(OneRow* r, unsigned long long* keys, double* sdata, int* sidx,
                       Py_ssize_t n_cols) noexcept nogil:
    """The entries of r, whose indices are out of order, in index order in sdata and
    sidx (r then points at them; `keys`: 2 nnz scratch); False where an index
    repeats (as_rows sums them)."""
    cdef Py_ssize_t j, nnz = r.nnz
    cdef const double* data = r.data
    cdef const int* indices = r.indices
    if r.descending:      # reversed (as scipy's products leave them): O(nnz)
        for j in range(nnz):
            sidx[j] = indices[nnz - 1 - j]
            sdata[j] = data[nnz - 1 - j]
    else:               # (index, position) keys sorted: the entries in index order
        for j in range(nnz):
            keys[j] = (<unsigned long long>indices[j] << 32) | <unsigned long long>j
        keys = _radix_sort(keys, keys + nnz, nnz, n_cols)
        for j in range(nnz):
            sidx[j] = <int>(keys[j] >> 32)
            sdata[j] = data[<Py_ssize_t>(keys[j] & 0xffffffffULL)]
            if j > 0 and sidx[j] == sidx[j - 1]:
                return False
    r.data, r.indices = sdata, sidx
    r.ordered = True
    return True


def csr_row(X, Py_ssize_t n_cols, scores):
    """The view of X, one CSR row, whose passes write its score into `scores`
    (float64 (1,), as `RowView.counting`); None unless X holds exactly one valid row
    of `n_cols` columns (`one_csr_entries`).

    Indices out of order are sorted into the view's own storage (X is not
    changed).  None sends the caller to as_rows, which reports what is wrong.
    """
    cdef OneRow r
    cdef unsigned long long* keys
    cdef RowView v
    if not one_csr_entries(X, n_cols, False, &r):
        return None
    v = RowView.__new__(RowView)
    v.data = X.data
    v.indices = X.indices
    if not r.ordered:
        v.own = malloc(r.nnz * (3 * sizeof(unsigned long long) + sizeof(int)))
        if v.own == NULL:
            raise MemoryError()
        keys = <unsigned long long*>v.own
        if not sort_one_row(&r, keys, <double*>(keys + 2 * r.nnz),
                            <int*>(keys + 3 * r.nnz), n_cols):
            return None
    v.R.data = r.data if r.nnz > 0 else NULL
    v.R.indices = r.indices if r.nnz > 0 else NULL
    v.one_ptr[0] = 0
    v.one_ptr[1] = r.nnz
    v.R.indptr = v.one_ptr
    v.R.dense_idx = NULL
    v.R.n_cols = n_cols
    v.n = 1
    v.set_scores(scores)
    return v


cdef inline bint row_ok(const Rows* R, const double* x, const int* idx,
                        Py_ssize_t nnz) noexcept nogil:
    """Whether a row of R meets what `cwkit._rowdata.as_rows` checks: values finite,
    indices strictly increasing, in [0, n_cols).  Two branch-free loops the compiler
    vectorises (finiteness as in `_all_finite`)."""
    cdef Py_ssize_t j
    cdef const unsigned long long* b = <const unsigned long long*>x
    cdef unsigned long long carry = 0
    cdef int descents = 0
    if nnz == 0:
        return True
    for j in range(nnz):
        carry |= (b[j] & 0x7ff0000000000000ULL) + 0x0010000000000000ULL
    for j in range(1, nnz):
        descents |= idx[j] <= idx[j - 1]
    return ((carry >> 63) == 0) & (descents == 0) & (idx[0] >= 0) & (idx[nnz - 1] < R.n_cols)


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


cdef enum:
    # nonzeros between a binary driver's scoring position and the state it prefetches
    AHEAD_DIST = 128


cdef struct Ahead:
    # The stream of nonzeros of the CSR rows named by `order`, read AHEAD_DIST
    # nonzeros ahead of the one being scored, running on across rows: the state of
    # the feature found there is prefetched now (a 2**20-feature state is far larger
    # than the caches; each nonzero is a miss otherwise).  `ahead_row` gives, for a
    # row, the indices to prefetch at each of its nonzeros: where order's rows follow
    # each other in the CSR arrays (no shuffle), the stream is the indices array
    # itself, read in place; else a cursor copies them into `buf`.
    const Rows* R
    const Py_ssize_t* order
    Py_ssize_t n_order          # 0 for dense input: nothing to prefetch
    Py_ssize_t k                # position in `order` of the cursor's row
    const int* idx              # that row's indices
    Py_ssize_t nnz, j           # its length; the cursor's offset in it
    const int* end              # the stream's end where it is one array, else NULL
    int* buf                    # a row's indices to prefetch (0 past the stream)


cdef inline Py_ssize_t ahead_next(Ahead* a) noexcept nogil:
    """The next feature index of the cursor (and advance), or -1 past its end."""
    cdef const double* x
    while a.j >= a.nnz:
        if a.k + 1 >= a.n_order:
            return -1
        a.k += 1
        a.nnz = get_row(a.R, a.order[a.k], &x, &a.idx)
        a.j = 0
    a.j += 1
    return a.idx[a.j - 1]


cdef inline void ahead_start(Ahead* a, const Rows* R, const Py_ssize_t[::1] order,
                             int* buf, const double* p1, Py_ssize_t st1,
                             const double* p2) noexcept nogil:
    """The stream of `order`'s rows (none for dense input or no rows), with the
    state of its first AHEAD_DIST nonzeros prefetched: p1 + st1 f and, unless p2
    is NULL, p2 + f for each feature f.  `buf`: as many ints as the longest row,
    all 0."""
    cdef Py_ssize_t t, f, n = order.shape[0]
    a.R = R
    a.order = &order[0] if n > 0 else NULL
    a.n_order = n if R.indptr != NULL else 0
    a.k = -1
    a.idx = NULL
    a.nnz = 0
    a.j = 0
    a.buf = buf
    a.end = NULL
    if a.n_order > 0 and order[n - 1] - order[0] == n - 1:
        t = 1
        while t < n and order[t] == order[t - 1] + 1:
            t += 1
        if t == n:
            a.end = R.indices + R.indptr[order[n - 1] + 1]
    for t in range(AHEAD_DIST):
        f = ahead_next(a)
        if f >= 0:
            CWKIT_PREFETCH(p1 + st1 * f)
            if p2 != NULL:
                CWKIT_PREFETCH(p2 + f)


cdef inline const int* ahead_row(Ahead* a, const int* idx, Py_ssize_t nnz) noexcept nogil:
    """The features whose state to prefetch at each of the nnz nonzeros of the row
    being scored (`idx`, the next row of the stream): those AHEAD_DIST nonzeros
    further on, 0 past the stream's end (a harmless prefetch of feature 0)."""
    cdef Py_ssize_t j, f, left
    if a.end != NULL:
        left = (a.end - idx) - AHEAD_DIST
        if left >= nnz:
            return idx + AHEAD_DIST
        for j in range(nnz):
            a.buf[j] = idx[AHEAD_DIST + j] if j < left else 0
    elif a.n_order > 0:
        for j in range(nnz):
            f = ahead_next(a)
            a.buf[j] = <int>f if f >= 0 else 0
    return a.buf      # dense input: all 0


def _all_finite(const double[::1] values):
    """Whether every value is finite (neither NaN nor +-inf).

    One pass, no temporaries (``np.isfinite(...).all()`` writes and reads a mask as
    large as the values): a value is not finite when its exponent bits are all
    ones, which adding 1 to the exponent carries into bit 63; the OR of those sums
    is integer arithmetic that the compiler vectorises.
    """
    cdef Py_ssize_t j, n = values.shape[0]
    cdef const unsigned long long* b
    cdef unsigned long long carry = 0, exponent = 0x7ff0000000000000ULL
    if n == 0:
        return True
    b = <const unsigned long long*>&values[0]
    with nogil:
        for j in range(n):
            carry |= (b[j] & exponent) + 0x0010000000000000ULL
    return (carry >> 63) == 0


ctypedef fused _ptr_t:
    int
    long long


def _csr_increasing(const int[::1] indices, const _ptr_t[::1] indptr,
                    Py_ssize_t n_cols=-1, Py_ssize_t chunk=8192):
    """Whether the int32 ``indices`` increase strictly within each row of ``indptr``:
    0 no, 1 yes; 2 yes and (given ``n_cols`` >= 0) every row's first index >= 0 and
    its last < n_cols, so that all of them lie in [0, n_cols).

    One pass without temporary arrays (cwkit._rowdata's check that a CSR matrix is
    canonical, and with n_cols its bound check of canonical rows).  The descents
    (``indices[k] <= indices[k - 1]``) are counted over the whole array, ``chunk``
    entries at a time, by one loop the compiler vectorises (a loop per row spent
    most of its time entering and leaving short rows); those at a row's start are
    not within a row and are taken off again while the chunk is in cache.  The
    caller has checked indptr: from 0, nondecreasing, its last entry at most
    ``len(indices)``.
    """
    cdef Py_ssize_t n = indptr.shape[0] - 1, nnz, k, k0, k1, r = 1, b, last = 0
    cdef Py_ssize_t descents = 0
    cdef int lo, hi, c
    if n <= 0 or indptr[n] == 0:
        return 2 if n_cols >= 0 else 1
    nnz = indptr[n]
    chunk = min(max(chunk, 1), 1 << 30)
    with nogil:
        lo = indices[0]                 # the first row's first index, the last row's last
        hi = indices[nnz - 1]
        k0 = 1
        while k0 < nnz:
            k1 = min(k0 + chunk, nnz)
            c = 0
            for k in range(k0, k1):
                c += indices[k] <= indices[k - 1]
            descents += c
            # the rows starting in [k0, k1), each position once (empty rows repeat it)
            while r < n and indptr[r] < k1:
                b = indptr[r]
                if b >= k0 and b != last:
                    descents -= indices[b] <= indices[b - 1]
                    lo = min(lo, indices[b])
                    hi = max(hi, indices[b - 1])
                    last = b
                r += 1
            if descents:
                break
            k0 = k1
    if descents:
        return 0
    return 2 if 0 <= n_cols and 0 <= lo and hi < n_cols else 1
