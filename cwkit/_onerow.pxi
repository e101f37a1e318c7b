# `partial_fit` on one CSR or dense row in one compiled call: the single-example
# stream of a fitted two-class first-order or diagonal model.
#
# Provides: `partial_fit`, the classifiers' method (bound by cwkit.base.OnlineClassifier):
# the round run by the estimator's `NamedOne` on the row read in place (or sorted into
# the path's buffers), its label compared as bytes with the classes'; the estimator's
# `_partial_fit` for any other call.  `csr_types`: the matrix types it reads.
# Uses: NamedOne, _dict_of, _one_of (_named.pxi); OneRow, one_csr_entries,
# one_dense_entries, sort_one_row (_rows.pxi).

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy

cdef tuple _CSR_TYPES = ()      # scipy's csr_matrix and csr_array, once imported


def csr_types(*types):
    """Set the matrix types whose single rows `partial_fit` takes in one call
    (scipy.sparse's csr_matrix and csr_array, not subclasses: cwkit._rowdata sets
    them once scipy.sparse is imported)."""
    global _CSR_TYPES
    _CSR_TYPES = types


cdef bint _integer_value(const void* p, int t, Py_ssize_t size, double* out) noexcept:
    """The integer of numpy type `t` (`size` bytes) at p as a float64, as numpy casts
    it (C's conversion, to nearest); False where `t` is not an integer type."""
    cdef int8_t i1
    cdef int16_t i2
    cdef int32_t i4
    cdef int64_t i8
    cdef uint8_t u1
    cdef uint16_t u2
    cdef uint32_t u4
    cdef uint64_t u8
    if not cnp.PyTypeNum_ISINTEGER(t):
        return False
    if cnp.PyTypeNum_ISSIGNED(t):
        if size == 1:
            memcpy(&i1, p, 1)
            out[0] = <double>i1
        elif size == 2:
            memcpy(&i2, p, 2)
            out[0] = <double>i2
        elif size == 4:
            memcpy(&i4, p, 4)
            out[0] = <double>i4
        elif size == 8:
            memcpy(&i8, p, 8)
            out[0] = <double>i8
        else:
            return False
    elif size == 1:
        memcpy(&u1, p, 1)
        out[0] = <double>u1
    elif size == 2:
        memcpy(&u2, p, 2)
        out[0] = <double>u2
    elif size == 4:
        memcpy(&u4, p, 4)
        out[0] = <double>u4
    elif size == 8:
        memcpy(&u8, p, 8)
        out[0] = <double>u8
    else:
        return False
    return True


cdef Py_ssize_t _label_code(NamedOne one, y) except -2:
    """The class index (0 or 1) of the label in `y`, a 1-D ndarray of one label, as
    numpy's == finds it among the path's classes: of the classes' very dtype, the
    same bytes (bools, integers) or value (float64); float64 against integer
    classes, the value against the classes cast to float64 (numpy's promotion);
    -1, for anything else (another label, NaN, another dtype or shape), which the
    general path decides."""
    cdef cnp.ndarray a, c
    cdef int t, tc
    cdef Py_ssize_t size, k
    cdef double u, v
    cdef bint same
    cdef void* p
    if not cnp.PyArray_CheckExact(y) or not cnp.PyArray_CheckExact(one.classes):
        return -1
    a, c = <cnp.ndarray>y, <cnp.ndarray>one.classes
    if cnp.PyArray_NDIM(a) != 1 or cnp.PyArray_DIM(a, 0) != 1:
        return -1
    t, tc = cnp.PyArray_TYPE(a), cnp.PyArray_TYPE(c)
    size = cnp.PyArray_ITEMSIZE(a)
    same = <void*>cnp.PyArray_DESCR(a) == <void*>cnp.PyArray_DESCR(c)
    for k in range(2):
        p = cnp.PyArray_GETPTR1(c, k)
        if same and (cnp.PyTypeNum_ISBOOL(t) or cnp.PyTypeNum_ISINTEGER(t)):
            if memcmp(cnp.PyArray_DATA(a), p, size) == 0:
                return k
            continue
        if t != cnp.NPY_DOUBLE or not cnp.PyArray_ISNOTSWAPPED(a):
            return -1
        if same:
            memcpy(&v, p, sizeof(double))
        elif not (cnp.PyArray_ISNOTSWAPPED(c)
                  and _integer_value(p, tc, cnp.PyArray_ITEMSIZE(c), &v)):
            return -1
        memcpy(&u, cnp.PyArray_DATA(a), sizeof(double))
        if u == v:
            return k
    return -1


cdef int _row_round(NamedOne one, est, dict d, X, y) except? -100:
    """``partial_fit``'s round of `est` (whose __dict__ is `d`) on the row X of
    label `y`, under its lock, as `NamedOne.learn` returns it; 0, having done
    nothing, where the path is not taken: not a two-class path, not that of `est`
    any more, X not one valid CSR row (of a type of `csr_types`) of at most
    ``n_features_in_`` columns or dense row of exactly as many, or the label not
    one `_label_code` takes.  A dense row is read as the CSR row of all its columns
    (the general path's dense view reads every column too)."""
    cdef OneRow r
    cdef Py_ssize_t code, j
    cdef bint known, ok
    cdef bint dense = type(X) is np.ndarray
    if one.classes is None or one.K or not (dense or type(X) in _CSR_TYPES):
        return 0
    code = _label_code(one, y)
    if code < 0 or not one.locked(d):
        return 0
    try:
        known = one.unchanged(d, True)
        if not (known or one.current(est, d, True)):
            return 0
        ok = (one_dense_entries(X, one.D - 1, &r) if dense
              else one_csr_entries(X, one.D - 1, True, &r))
        if not ok:
            return 0
        one.room(r.nnz)
        if dense:
            for j in range(r.nnz):
                one.idx[j] = <int>j
            r.indices = one.idx
        elif not (r.ordered or sort_one_row(&r, one.keys, one.data, one.idx, one.D - 1)):
            return 0
        one.code[0] = code
        return one.round(d, r.data, r.indices, r.nnz, one.y_pos if code else one.y_neg,
                         code, known)
    finally:
        one.lock.leave()


def partial_fit(self, X, y, classes=None, sample_weight=None, *, y_clean=None):
    """One online pass over the rows in the given order (one row, one round).

    Parameters
    ----------
    X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
        Rows of any width: wider than any seen, the model grows first, each new
        feature at the rule's prior (weight 0, variance ``a``), exactly as if
        every earlier row had had zeros there; narrower rows are padded with
        zeros.  ``n_features_in_`` becomes the widest width learnt.
    y : array-like of shape (n_samples,)
    classes : array-like, optional
        All labels the stream may hold; needed on the first call when the
        first batch may not contain every class.  Ignored later.
    y_clean : array-like of shape (n_samples,), optional
        The labels each round is counted against (``mistakes_``) while ``y``
        is learnt: the label-noise protocol of [AROW13] Sect. 5, ``y`` the
        noisy labels and ``y_clean`` the true ones.  Each must be one of the
        classes.  Learning does not depend on it.
    sample_weight : array-like of shape (n_samples,), optional
        As for :meth:`fit`.

    Returns
    -------
    self

    Notes
    -----
    ``t_``, ``mistakes_`` and ``n_updates_`` add up over the calls since the last
    ``fit``; ``last_mistakes_`` and ``last_n_updates_`` are this call's.

    One CSR row (or dense row of ``n_features_in_`` float64 values) of a fitted
    two-class first-order or diagonal model, with its label in an array of the
    classes' dtype (or float64), is learnt in one compiled call (the
    estimator's ``cwkit._core.NamedOne``, which ``learn_one`` runs too): the same
    checks, driver, counters and calibration round, bit for bit; any other call
    takes the estimator's ``_partial_fit``.
    """
    cdef dict d
    cdef NamedOne one
    cdef int done
    if sample_weight is None and y_clean is None:
        d = _dict_of(self)
        one = _one_of(d)
        if one is not None:
            done = _row_round(one, self, d, X, y)
            if done == 1:
                return self
            if done:
                return self._one_done(done)
    return self._partial_fit(X, y, classes, sample_weight, y_clean=y_clean)
