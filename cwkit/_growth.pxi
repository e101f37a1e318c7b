# A feature space that grows (cwkit.models.growth): the widening of a model whose
# state arrays are all prefix views of buffers with room, in one call.
# Provides: widen_in_room.  Uses: nothing from the other includes.
from libc.stdint cimport uintptr_t
from libc.string cimport memmove


def widen_in_room(dict state, list plan, Py_ssize_t d_old, Py_ssize_t d_new):
    """Widen, in place, the arrays ``state[key]`` of a model from `d_old` to `d_new`
    features, each a prefix view of a buffer with room (``cwkit.models.growth``).

    `plan` holds one tuple ``(key, buf, data, capacity, inner, tail, width, values,
    prior)`` per array: the C-contiguous float64 buffer, the address of its values,
    its length along axis 0, the entries of a feature and of the tail along axis 0,
    the values of an entry, and the address of ``prior``'s ``inner * width`` values:
    a new feature's (the tuple holds both arrays, so the addresses stay valid).  The
    intercept's entries and the tail move to their new places, the new features get
    the prior, and ``state[key]`` becomes the buffer's first ``(d_new + 1) inner +
    tail`` entries.  Returns False, having changed nothing, when an array is not a
    prefix view of its buffer or a buffer has no room; True otherwise.
    """
    cdef Py_ssize_t capacity, inner, tail, width, first, stop, moved, k, j
    cdef uintptr_t data, values
    cdef double* flat
    cdef double* prior
    for key, buf, _, capacity, inner, tail, _, _, _ in plan:
        if state[key].base is not buf or capacity < (d_new + 1) * inner + tail:
            return False
    for key, buf, data, _, inner, tail, width, values, _ in plan:
        flat = <double*>data
        prior = <double*>values
        k = inner * width
        first = d_old * k                        # the intercept's first value
        moved = ((d_old + 1) * inner + tail) * width - first
        stop = d_new * k
        if moved > 0:
            memmove(flat + stop, flat + first, moved * sizeof(double))
        for j in range(first, stop):
            flat[j] = prior[(j - first) % k]
        state[key] = buf[:(d_new + 1) * inner + tail]
    return True
