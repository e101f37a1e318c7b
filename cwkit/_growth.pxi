# A feature space that grows (cwkit.models.growth): the widening, in place, of a
# model whose state arrays are C-contiguous prefixes of buffers with room.
# Provides: room, widen_in_room, widen_model, widen_dict.  Uses: nothing from the other
# includes.
from libc.string cimport memmove
from cpython.object cimport PyObject_GenericGetDict
cimport numpy as cnp

cnp.import_array()


cdef struct Axis:
    # one axis of an array of at most two: a feature axis holds `blocks` blocks of
    # (d + icpt) entries (the features, then the intercept when icpt) of `inner`
    # values each, then `tail` values; another axis keeps its length n
    bint feature
    Py_ssize_t inner, tail, icpt, blocks, n


cdef inline void axis_set(Axis* a, bint feature, Py_ssize_t inner, Py_ssize_t tail,
                          Py_ssize_t n, Py_ssize_t d_old) noexcept nogil:
    a.feature = feature
    a.n = n
    if feature:
        a.inner = inner
        a.icpt = 1 if tail >= 0 else 0
        a.tail = tail if tail > 0 else 0
        a.blocks = (n - a.tail) // ((d_old + a.icpt) * inner)


cdef inline Py_ssize_t axis_len(const Axis* a, Py_ssize_t d) noexcept nogil:
    """The axis's length for d features."""
    if not a.feature:
        return a.n
    return a.blocks * (d + a.icpt) * a.inner + a.tail


cdef inline Py_ssize_t axis_move(const Axis* a, Py_ssize_t i, Py_ssize_t d_old,
                                 Py_ssize_t d_new) noexcept nogil:
    """The new place of entry i of an axis laid out for d_old features."""
    cdef Py_ssize_t blk = (d_old + a.icpt) * a.inner, b, w
    if not a.feature:
        return i
    if i >= a.blocks * blk:
        return i + a.blocks * (d_new - d_old) * a.inner
    b = i // blk
    w = i - b * blk
    if w >= d_old * a.inner:            # the intercept goes last
        w += (d_new - d_old) * a.inner
    return b * (d_new + a.icpt) * a.inner + w


cdef inline Py_ssize_t axis_prior(const Axis* a, Py_ssize_t i, Py_ssize_t d,
                                  Py_ssize_t* f) noexcept nogil:
    """The entry of the one-feature prior that entry i (d features) takes its value
    from: a new feature's own entries are the prior's feature 0, any other feature's
    (the intercept's included) its intercept's, as two distinct features of the prior.
    f[0] < 0: the feature of the first feature axis, which becomes f[0]; else the
    new feature whose entries are written."""
    cdef Py_ssize_t blk = (d + a.icpt) * a.inner, b, w, g
    if not a.feature:
        return i
    if i >= a.blocks * blk:
        return a.blocks * (1 + a.icpt) * a.inner + (i - a.blocks * blk)
    b = i // blk
    w = i - b * blk
    g = w // a.inner
    if f[0] < 0:
        f[0] = g
    return b * (1 + a.icpt) * a.inner + (0 if g == f[0] else 1) * a.inner + w % a.inner


cdef inline void move(double* dst, const double* src, Py_ssize_t n) noexcept nogil:
    if n > 0 and dst != src:
        memmove(dst, src, n * sizeof(double))


cdef inline void move_axis(double* flat, Py_ssize_t dst, Py_ssize_t src, const Axis* a,
                           Py_ssize_t unit, Py_ssize_t d_old, Py_ssize_t d_new) noexcept nogil:
    """Move the entries of a feature axis (each `unit` doubles) from their places for
    d_old features at flat + src to those for d_new at flat + dst, the last first
    (every entry goes no lower, so nothing unread is overwritten)."""
    cdef Py_ssize_t b, old = (d_old + a.icpt) * a.inner * unit
    cdef Py_ssize_t new = (d_new + a.icpt) * a.inner * unit, step = a.inner * unit
    move(flat + dst + a.blocks * new, flat + src + a.blocks * old, a.tail * unit)
    for b in range(a.blocks - 1, -1, -1):
        move(flat + dst + b * new + d_new * step, flat + src + b * old + d_old * step,
             a.icpt * step)
        move(flat + dst + b * new, flat + src + b * old, d_old * step)


cdef void widen_array(double* flat, const double* prior, Axis* a0, Axis* a1,
                      Py_ssize_t p1, Py_ssize_t d_old, Py_ssize_t d_new) noexcept nogil:
    """Widen the (a0.n, a1.n) array at flat, in place, from d_old to d_new features:
    every entry moved to its new place, then every entry of a new feature set from
    `prior`, the array of a model of one feature (rows of p1 values)."""
    cdef Py_ssize_t n1 = a1.n, m0 = axis_len(a0, d_new), m1 = axis_len(a1, d_new)
    cdef Py_ssize_t i0, i1, b, g, j, f, r
    if not a1.feature:                  # rows of a fixed length: one move per segment
        move_axis(flat, 0, 0, a0, n1, d_old, d_new)
    else:                               # row by row, the last first
        for i0 in range(a0.n - 1, -1, -1):
            move_axis(flat, axis_move(a0, i0, d_old, d_new) * m1, i0 * n1, a1, 1,
                      d_old, d_new)
    a0.n, a1.n = m0, m1
    if a0.feature:                      # the rows of the new features
        for b in range(a0.blocks):
            for g in range(d_old, d_new):
                for j in range(a0.inner):
                    i0 = (b * (d_new + a0.icpt) + g) * a0.inner + j
                    f = -1
                    r = axis_prior(a0, i0, d_new, &f) * p1
                    for i1 in range(m1):
                        flat[i0 * m1 + i1] = prior[r + axis_prior(a1, i1, d_new, &f)]
    if not a1.feature:
        return
    for i0 in range(m0):                # the columns of the new features in other rows
        f = -1
        axis_prior(a0, i0, d_new, &f)
        if a0.feature and d_old <= f < d_new:
            continue                    # a new feature's row: written above
        for b in range(a1.blocks):
            for g in range(d_old, d_new):
                for j in range(a1.inner):
                    i1 = (b * (d_new + a1.icpt) + g) * a1.inner + j
                    f = g
                    r = axis_prior(a0, i0, d_new, &f) * p1
                    flat[i0 * m1 + i1] = prior[r + axis_prior(a1, i1, d_new, &f)]


cdef class Room:
    """One array's entry in the plan of `widen_in_room`: made by `room`."""
    cdef object key, buf, prior
    cdef double* flat
    cdef const double* values
    cdef Py_ssize_t capacity, p1, n0, n1
    cdef bint two
    cdef Axis a0, a1


def room(key, buf, tuple shape, tuple axes, prior):
    """The plan entry of ``state[key]``, of `shape` (one or two axes), a C-contiguous
    prefix of `buf`, a flat float64 buffer: `axes` ``((feature, inner, tail),
    (feature, inner, tail))`` (a feature axis laid out as in
    ``Model.feature_layout``; a 1-d array has a second axis of length 1 that is not),
    `prior` the C-contiguous float64 array of `key` in a model of one feature."""
    cdef Room r = Room.__new__(Room)
    cdef double[::1] flat = buf
    cdef const double[::1] values = prior.reshape(-1)
    r.key, r.buf, r.prior = key, buf, prior
    r.flat = &flat[0]
    r.values = &values[0]
    r.capacity = flat.shape[0]
    r.two = len(shape) == 2
    r.n0 = shape[0]
    r.n1 = shape[1] if r.two else 1
    r.p1 = prior.shape[1] if prior.ndim == 2 else 1
    r.a0.feature, r.a0.inner, r.a0.tail = axes[0]
    r.a1.feature, r.a1.inner, r.a1.tail = axes[1]
    return r


cpdef bint widen_in_room(dict state, list plan, Py_ssize_t d_old, Py_ssize_t d_new) except -1:
    """Widen, in place, the arrays ``state[key]`` of a model from `d_old` to `d_new`
    features, each a C-contiguous prefix of a buffer with room (``cwkit.models.growth``;
    `plan`: a `room` per array).

    Every feature keeps its values, the intercept's entries and the tail move to their
    new places, the new features take the prior's, and ``state[key]`` becomes the
    buffer's prefix of the new shape.  Returns False, having changed nothing, when an
    array is no longer the buffer's prefix or a buffer has no room; True otherwise.
    """
    cdef Room r
    cdef Axis a0, a1
    cdef cnp.npy_intp shape[2]
    cdef cnp.ndarray view
    for r in plan:
        arr = state[r.key]
        if not (isinstance(arr, cnp.ndarray)
                and <object>cnp.PyArray_BASE(<cnp.ndarray>arr) is r.buf):
            return False
        axis_set(&a0, r.a0.feature, r.a0.inner, r.a0.tail, r.n0, d_old)
        axis_set(&a1, r.a1.feature, r.a1.inner, r.a1.tail, r.n1, d_old)
        if r.capacity < axis_len(&a0, d_new) * axis_len(&a1, d_new):
            return False
    for r in plan:
        axis_set(&a0, r.a0.feature, r.a0.inner, r.a0.tail, r.n0, d_old)
        axis_set(&a1, r.a1.feature, r.a1.inner, r.a1.tail, r.n1, d_old)
        widen_array(r.flat, r.values, &a0, &a1, r.p1, d_old, d_new)
        r.n0, r.n1 = a0.n, a1.n
        shape[0], shape[1] = r.n0, r.n1      # the view, made as numpy's slicing would be
        view = cnp.PyArray_SimpleNewFromData(2 if r.two else 1, shape, cnp.NPY_DOUBLE,
                                             r.flat)
        cnp.set_array_base(view, r.buf)
        state[r.key] = view
    return True


cpdef int widen_model(model, Py_ssize_t d_new) except -1:
    """`widen_in_room` on a model's own plan (``model._in_room``, from
    ``cwkit.models.growth``), its ``n_features`` set to `d_new`: 0 when it did nothing
    (no plan, no room, or `d_new` beyond ``model._limit``, the caller's to refuse);
    1 when the width of the model's own spec (``model._own_spec``, which no one else
    holds) was changed in place too; 2 when the model's spec is another, which the
    caller replaces."""
    return widen_dict(model.__dict__, d_new, d_new)


cdef int widen_dict(dict md, Py_ssize_t d_new, object n) except -1:
    """`widen_model` of the model whose __dict__ is `md`, `n` the int `d_new` (the
    one object its widths are set to)."""
    plan = md.get("_in_room")
    limit = md.get("_limit")
    if plan is None or (limit is not None and d_new > limit) or not widen_in_room(
            md["state"], plan, md["n_features"], d_new):
        return 0
    md["n_features"] = n
    spec = md["spec"]
    if spec is not md.get("_own_spec"):
        return 2
    # a frozen dataclass: its field, in place
    (<dict>PyObject_GenericGetDict(spec, NULL))["n_features"] = n
    return 1
