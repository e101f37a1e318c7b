# An exact vocabulary's names and columns, in the compiled core.
#
# Provides: `NameTable` (feature names (str) -> columns in order of first
# appearance, the names held in column order; `cwkit.features.Vocabulary`'s
# table), its probes for a row's names in passes (`home`, `candidate`, `find`,
# `append`).  Uses CWKIT_PREFETCH (_rows.pxi).
#
# Open addressing with linear probing over a power-of-two number of 16-byte slots
# (the name, the low 32 bits of its str hash, its column), at most half of them
# in use.  A name's first slot follows from its hash alone, which CPython keeps in
# the str object once computed, so the slots of all the names of a row can be
# prefetched before any is probed (`NamedOne.looked_up`), where a dict's look-up
# reads its index, then its entry, one name after the other.  A slot holds the
# name itself: a row whose names are the objects the vocabulary holds (a stream
# of interned or reused names) matches by address; any other name compares
# equal where its code units do, as CPython compares str keys.  The slots are
# always those of the names inserted in column order (a resize inserts them anew in
# that order), and only the newest names are ever taken out (a rejected call's):
# no other name's probe passed through their slots when it was inserted, so
# emptying those slots leaves the table as it was before they came.

from libc.stdint cimport int32_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, realloc
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_DECREF
from cpython.unicode cimport PyUnicode_FromObject

cdef extern from *:
    """
    /* Whether the str a and b (ready: canonical) are equal: the same kind, length
       and code units, as CPython compares str keys. */
    static inline int cwkit_same_str(PyObject* a, PyObject* b) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(a);
        int kind = (int)PyUnicode_KIND(a);
        return n == PyUnicode_GET_LENGTH(b) && kind == (int)PyUnicode_KIND(b)
               && memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)n * kind) == 0;
    }
    /* The hash of the exact str k: the one kept in it, computed where it has none. */
    static inline Py_hash_t cwkit_str_hash(PyObject* k) {
    #if PY_VERSION_HEX < 0x030E0000
        Py_hash_t h = ((PyASCIIObject*)k)->hash;
        return h != -1 ? h : PyObject_Hash(k);
    #else
        return PyObject_Hash(k);
    #endif
    }
    """
    bint cwkit_same_str(PyObject* a, PyObject* b) noexcept
    Py_hash_t cwkit_str_hash(PyObject* k) except? -1

cdef struct NameSlot:
    PyObject* name      # NULL: an empty slot
    uint32_t tag        # the low 32 bits of the name's hash (its first slot's index)
    int32_t col


cdef struct NameCol:
    PyObject* name      # a column's name (held)
    uint32_t tag

cdef enum:
    MAX_NAMES = 2147483647      # the most names a vocabulary holds (its columns: C ints)


cdef class NameTable:
    """The names of an exact vocabulary and their columns, in order of first
    appearance (``cwkit.features.Vocabulary``'s table).

    Parameters
    ----------
    names : iterable of str, optional
        The names of the first columns, in order (distinct).
    """
    cdef NameSlot* slots
    cdef uint64_t mask          # the slots' number - 1
    cdef NameCol* cols          # the names in column order
    cdef readonly Py_ssize_t n  # the names
    cdef Py_ssize_t cols_cap

    def __cinit__(self):
        self.slots = <NameSlot*>calloc(16, sizeof(NameSlot))
        if self.slots == NULL:
            raise MemoryError()
        self.mask = 15

    def __init__(self, names=()):
        cdef Py_ssize_t n
        for name in names:
            n = self.n
            if not isinstance(name, str) or self.index(name, True) != n:
                raise ValueError(f"vocabulary names must be distinct str, got {name!r:.60}")

    def __dealloc__(self):
        cdef Py_ssize_t j
        for j in range(self.n):
            Py_DECREF(<object>self.cols[j].name)
        free(self.cols)
        free(self.slots)

    def __len__(self):
        return self.n

    def __reduce__(self):
        return NameTable, (self.names(),)

    def names(self):
        """The names in column order (a new list)."""
        return [<object>self.cols[j].name for j in range(self.n)]

    cdef inline uint32_t tag(self, object name) except? 0:
        """The tag of the exact str `name`: its hash's low 32 bits (kept in the str
        once computed)."""
        return <uint32_t>cwkit_str_hash(<PyObject*>name)

    cdef inline void prefetch(self, uint32_t tag) noexcept:
        """Prefetch the first slot of a name of this tag."""
        CWKIT_PREFETCH(<const double*>&self.slots[tag & self.mask])

    cdef inline uint64_t candidate(self, PyObject* key, uint32_t tag, uint64_t i) noexcept:
        """From slot i on (the first slot of `key`, of that tag, or a slot before
        which no slot is empty or may hold it), the first slot that is empty, holds
        `key` itself, or a name of its tag."""
        cdef NameSlot* s
        while True:
            s = &self.slots[i]
            if s.name == NULL or s.name == key or s.tag == tag:
                return i
            i = (i + 1) & self.mask

    cdef inline Py_ssize_t find(self, PyObject* key, uint32_t tag, uint64_t i) noexcept:
        """The column of the exact str `key` of that tag, probed from slot i (as in
        `candidate`); -1 where it is not a name of the table."""
        cdef NameSlot* s
        while True:
            i = self.candidate(key, tag, i)
            s = &self.slots[i]
            if s.name == NULL:
                return -1
            if s.name == key or cwkit_same_str(s.name, key):
                return s.col
            i = (i + 1) & self.mask

    cdef Py_ssize_t append(self, object name, uint32_t tag) except -2:
        """Append the exact str `name` of that tag, not in the table, as the next
        column: its column; -3 (nothing done) where the table holds the most names
        a vocabulary holds."""
        cdef NameCol* cols
        cdef uint64_t i
        if self.n >= MAX_NAMES:
            return -3
        if self.n == self.cols_cap:
            cols = <NameCol*>realloc(self.cols, max(2 * self.cols_cap, 64) * sizeof(NameCol))
            if cols == NULL:
                raise MemoryError()
            self.cols = cols
            self.cols_cap = max(2 * self.cols_cap, 64)
        if 2 * (<uint64_t>self.n + 1) > self.mask + 1:
            self.resize(2 * (self.mask + 1))
        i = tag & self.mask
        while self.slots[i].name != NULL:
            i = (i + 1) & self.mask
        Py_INCREF(name)
        self.slots[i].name = <PyObject*>name
        self.slots[i].tag = tag
        self.slots[i].col = <int32_t>self.n
        self.cols[self.n].name = <PyObject*>name
        self.cols[self.n].tag = tag
        self.n += 1
        return self.n - 1

    cdef int resize(self, uint64_t size) except -1:
        """The names inserted anew, in column order, into `size` (a power of two)
        slots."""
        cdef NameSlot* new = <NameSlot*>calloc(size, sizeof(NameSlot))
        cdef uint64_t i, mask = size - 1
        cdef Py_ssize_t j
        if new == NULL:
            raise MemoryError()
        for j in range(self.n):
            i = self.cols[j].tag & mask
            while new[i].name != NULL:
                i = (i + 1) & mask
            new[i].name = self.cols[j].name
            new[i].tag = self.cols[j].tag
            new[i].col = <int32_t>j
        free(self.slots)
        self.slots = new
        self.mask = mask
        return 0

    cpdef Py_ssize_t index(self, name, bint grow) except -2:
        """The column of the name `name` (a str: a subclass's text); -1 where it is
        new and not `grow`; appended where it is new and `grow` (-3: the table is
        full, nothing done)."""
        cdef uint32_t tag
        cdef Py_ssize_t j
        if type(name) is not str:
            name = PyUnicode_FromObject(name)
        tag = self.tag(name)
        j = self.find(<PyObject*>name, tag, tag & self.mask)
        if j >= 0 or not grow:
            return j
        return self.append(name, tag)

    cpdef truncate(self, Py_ssize_t size):
        """Forget the names of columns `size` on (those a rejected call appended)."""
        cdef NameCol* c
        cdef uint64_t i
        while self.n > size:
            c = &self.cols[self.n - 1]
            i = c.tag & self.mask
            while self.slots[i].name != c.name:
                i = (i + 1) & self.mask
            self.slots[i].name = NULL
            self.n -= 1
            Py_DECREF(<object>c.name)
