# Named features: the 32-bit hash of a name and the rows of dicts as CSR.
#
# Provides: `_murmur3_32` (MurmurHash3_x86_32), `_name_hash` (Vowpal Wabbit's
# hash of a name), `murmurhash3_32` and `name_hash` (their Python entries),
# `NamedStatus` and `_named_rows` (rows of named features to canonical CSR
# arrays), `_dict_objects`, `_exact_dict` and `_vocab_dict` (a dict row's entries,
# read so that their misses overlap; its hashed keys, or its vocabulary's
# columns), `named_one` (one row hashed into a `RowView` of its own, for
# `learn_one`).  Uses `_radix_sort` from _rows.pxi (the
# sort of a row's entries), `NameTable` from _vocab.pxi (a vocabulary's columns).
#
# MurmurHash3_x86_32 is Austin Appleby's public-domain hash (SMHasher,
# MurmurHash3.cpp), the hash Vowpal Wabbit and scikit-learn's FeatureHasher use:
# its 4-byte blocks are read little-endian whatever the machine, so a name has
# the same hash on every platform and Python version.  A name's hash is Vowpal
# Wabbit's (`hashstring` of its hashstring.h): a name made only of the digits
# 0-9 hashes to its decimal value plus the seed (mod 2**64), any other name to
# MurmurHash3_x86_32 of its UTF-8 bytes with the seed (truncated to 32 bits).
# The seed is 0 for a name outside any namespace, else the hash of the
# namespace's name (seed 0); the feature's column is the hash's low `bits` bits.

from libc.stdint cimport uint32_t, uint64_t
from libc.math cimport isfinite
from cpython.dict cimport PyDict_Next, PyDict_GetItem
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.float cimport PyFloat_AsDouble
from cpython.object cimport PyObject

cdef extern from *:
    """
    static inline uint32_t cwkit_load_le32(const unsigned char* p) {
        return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16)
               | ((uint32_t)p[3] << 24);
    }
    static inline uint32_t cwkit_rotl32(uint32_t x, int r) {
        return (x << r) | (x >> (32 - r));
    }
    /* The UTF-8 bytes of an exact str (NULL, no error left set: another type, or a
       str with lone surrogates); whether v is an exact float, its value in out. */
    static inline const char* cwkit_exact_str(PyObject* k, Py_ssize_t* n) {
        const char* s;
        if (!PyUnicode_CheckExact(k)) return NULL;
        if (PyUnicode_IS_COMPACT_ASCII(k)) {     /* its characters are its UTF-8 */
            *n = PyUnicode_GET_LENGTH(k);
            return (const char*)PyUnicode_DATA(k);
        }
        s = PyUnicode_AsUTF8AndSize(k, n);
        if (s == NULL) PyErr_Clear();
        return s;
    }
    /* Whether k is an exact str of ASCII characters (its UTF-8 bytes its own). */
    static inline int cwkit_ascii_str(PyObject* k) {
        return PyUnicode_CheckExact(k) && PyUnicode_IS_COMPACT_ASCII(k);
    }
    static inline int cwkit_exact_float(PyObject* v, double* out) {
        if (!PyFloat_CheckExact(v)) return 0;
        *out = PyFloat_AS_DOUBLE(v);
        return 1;
    }
    """
    uint32_t cwkit_load_le32(const unsigned char* p) noexcept nogil
    uint32_t cwkit_rotl32(uint32_t x, int r) noexcept nogil
    const char* cwkit_exact_str(PyObject* k, Py_ssize_t* n) noexcept
    bint cwkit_exact_float(PyObject* v, double* out) noexcept
    bint cwkit_ascii_str(PyObject* k) noexcept


cdef uint32_t _murmur3_32(const unsigned char* key, Py_ssize_t n,
                          uint32_t seed) noexcept nogil:
    """MurmurHash3_x86_32 of the n bytes at key."""
    cdef uint32_t h = seed, k
    cdef uint32_t c1 = 0xcc9e2d51UL, c2 = 0x1b873593UL
    cdef Py_ssize_t i, nblocks = n // 4
    cdef const unsigned char* tail = key + nblocks * 4
    for i in range(nblocks):
        k = cwkit_load_le32(key + 4 * i)
        k *= c1
        k = cwkit_rotl32(k, 15)
        k *= c2
        h ^= k
        h = cwkit_rotl32(h, 13)
        h = h * 5 + 0xe6546b64UL
    k = 0
    if n & 3 == 3:
        k ^= <uint32_t>tail[2] << 16
    if n & 3 >= 2:
        k ^= <uint32_t>tail[1] << 8
    if n & 3 >= 1:
        k ^= tail[0]
        k *= c1
        k = cwkit_rotl32(k, 15)
        k *= c2
        h ^= k
    h ^= <uint32_t>n
    h ^= h >> 16
    h *= 0x85ebca6bUL
    h ^= h >> 13
    h *= 0xc2b2ae35UL
    h ^= h >> 16
    return h


cdef inline uint64_t _name_hash(const unsigned char* s, Py_ssize_t n,
                                uint64_t seed) noexcept nogil:
    """Vowpal Wabbit's hash of the name s[0..n): its decimal value plus seed when it
    is only digits (the empty name: seed), else MurmurHash3_x86_32 seeded with the
    seed's low 32 bits."""
    cdef uint64_t v = 0
    cdef Py_ssize_t i
    for i in range(n):
        if s[i] < 48 or s[i] > 57:
            return _murmur3_32(s, n, <uint32_t>seed)
        v = 10 * v + (s[i] - 48)
    return v + seed


def murmurhash3_32(const unsigned char[::1] data, uint32_t seed=0):
    """MurmurHash3_x86_32 of the bytes `data` with `seed`, an int in [0, 2**32)."""
    return _murmur3_32(&data[0] if data.shape[0] else NULL, data.shape[0], seed)


def name_hash(const unsigned char[::1] name, uint64_t seed=0):
    """Vowpal Wabbit's hash of the UTF-8 bytes `name` with `seed` (see the header)."""
    return _name_hash(&name[0] if name.shape[0] else NULL, name.shape[0], seed)


cpdef enum NamedStatus:
    NAMED_OK = 0
    NAMED_BAD_ROW = 1        # not a dict nor a list, tuple, set or frozenset of names
    NAMED_BAD_NAME = 2       # a name neither str nor int (or a str with lone surrogates)
    NAMED_BAD_VALUE = 3      # a value that is not a real number
    NAMED_NONFINITE = 4      # NaN or infinite
    NAMED_TOO_MANY = 5       # a vocabulary beyond 2**31 - 1 names
    NAMED_OVERFLOW = 6       # values sharing a column sum beyond the range of a double


cdef inline unsigned long long _hashed_key(
        const unsigned char* s, Py_ssize_t k, bint signed, uint64_t mask, Py_ssize_t n,
        double* val) noexcept nogil:
    """The sort key of entry n, the name s[0..k) hashed: its column (the low bits of
    its hash, `mask`) << 32 | n; its value `val` negated when `signed` and bit 31 of
    MurmurHash3_x86_32 of the name is set."""
    if signed and _murmur3_32(s, k, 0) >> 31:
        val[0] = -val[0]
    return ((_name_hash(s, k, 0) & mask) << 32) | <unsigned long long>n


cdef Py_ssize_t _dict_objects(dict row, PyObject** objs, Py_ssize_t cap) noexcept:
    """The entries' objects of the dict `row` into `objs` (name, value, ...: 2 cap
    of them), all their loads issued together (a stream's names are scattered in
    memory and seldom in cache: their misses overlap there rather than follow one
    another): their number, -1 for a dict of more than `cap` entries."""
    cdef Py_ssize_t n = 0, pos = 0
    cdef PyObject* pk
    cdef PyObject* pv
    while PyDict_Next(row, &pos, &pk, &pv):
        if n == cap:
            return -1
        objs[2 * n] = pk
        objs[2 * n + 1] = pv
        CWKIT_PREFETCH(<const double*>pv)
        # the name's header and its bytes after it (on two cache lines where the str
        # straddles them: Python 3.11's str of up to 15 ASCII characters take 64-byte
        # blocks from a pool's 48th byte on)
        CWKIT_PREFETCH(<const double*>pk)
        CWKIT_PREFETCH(<const double*>pk + 7)
        n += 1
    return n


cdef Py_ssize_t _exact_dict(dict row, PyObject** objs, unsigned long long* keys,
                            double* vals, Py_ssize_t cap, bint signed,
                            uint64_t mask) noexcept:
    """The entries of the dict `row` hashed as `_hashed_key` hashes them (their
    number), where every name is an exact str and every value an exact float; -1
    (nothing reported) for any other dict, or one of more than `cap` entries.

    Read in two passes: the entries' objects first (`_dict_objects`), then each
    name hashed."""
    cdef Py_ssize_t n = _dict_objects(row, objs, cap), k, size
    cdef const char* s
    cdef double val
    for k in range(n):
        s = cwkit_exact_str(objs[2 * k], &size)
        if s == NULL or not cwkit_exact_float(objs[2 * k + 1], &val):
            return -1
        keys[k] = _hashed_key(<const unsigned char*>s, size, signed, mask, k, &val)
        vals[k] = val
    return n


cdef Py_ssize_t _vocab_dict(NameTable t, PyObject** objs, Py_ssize_t n,
                            unsigned long long* keys, double* vals, bint grow) except -3:
    """The columns in the vocabulary `t` of a dict row's n entries (`_dict_objects`'s
    `objs`), where every name is an ASCII str and every value a finite float: their
    number, each entry's key its column << 32 | its place, its value in `vals`; a
    new name appended where `grow` (in the row's order), else left out.  -1, having
    done nothing, for any other row; -2 where the vocabulary is full (the caller
    takes the row's new names out again).

    Read in passes, so that the misses of one name overlap those of the others: each
    name's and value's type and value checked (before any name is appended), its hash
    read and its first slot prefetched; each name's first candidate slot found
    (`NameTable.candidate`), the name held there prefetched where it is another
    object; then each name's column (`NameTable.find`)."""
    cdef Py_ssize_t k, j, nnz = 0
    cdef PyObject* held
    cdef uint64_t mask, i
    cdef uint32_t tag
    cdef double val
    for k in range(n):
        if not (cwkit_ascii_str(objs[2 * k]) and cwkit_exact_float(objs[2 * k + 1], &val)
                and isfinite(val)):
            return -1
        vals[k] = val
        tag = t.tag(<object>objs[2 * k])
        keys[k] = tag
        t.prefetch(tag)
    mask = t.mask
    for k in range(n):      # keys[k]: the first candidate slot << 32 | the tag
        tag = <uint32_t>keys[k]
        i = t.candidate(objs[2 * k], tag, tag & mask)
        held = t.slots[i].name
        if held != NULL and held != objs[2 * k]:
            CWKIT_PREFETCH(<const double*>held)
            CWKIT_PREFETCH(<const double*>held + 7)
        keys[k] = (i << 32) | tag
    for k in range(n):
        tag = <uint32_t>keys[k]
        # (from the candidate slot while the table has not been resized)
        j = t.find(objs[2 * k], tag, (keys[k] >> 32) if t.mask == mask else tag & t.mask)
        if j < 0:
            if not grow:
                continue
            j = t.append(<object>objs[2 * k], tag)
            if j < 0:
                return -2
        keys[nnz] = (<unsigned long long>j << 32) | <unsigned long long>nnz
        vals[nnz] = vals[k]
        nnz += 1
    return nnz


cdef inline bint _is_names(object row):
    return type(row) is list or type(row) is tuple or isinstance(row, (set, frozenset))


cdef object _one_name(object key, const unsigned char** s, Py_ssize_t* n):
    """The name `key` as a str (an int as its decimal text), s and n pointing at its
    UTF-8 bytes (valid while the str lives); None for any other key, or a str with
    lone surrogates."""
    if type(key) is not str:
        if isinstance(key, int) and not isinstance(key, bool):
            key = str(int(key))
        elif not isinstance(key, str):
            return None
    try:
        s[0] = <const unsigned char*>PyUnicode_AsUTF8AndSize(key, n)
    except UnicodeEncodeError:
        return None
    return key


cdef int _one_value(object v, double* out) except -1:
    """A feature's value as a double: NAMED_OK, NAMED_BAD_VALUE or NAMED_NONFINITE."""
    if type(v) is float:
        out[0] = <double>v
    elif isinstance(v, (str, bytes, complex)):    # no parsing of text, no complex parts
        return NAMED_BAD_VALUE
    else:
        try:
            out[0] = PyFloat_AsDouble(v)    # int, bool, numpy scalars: what float() takes
        except (TypeError, ValueError, OverflowError):
            return NAMED_BAD_VALUE
    return NAMED_OK if isfinite(out[0]) else NAMED_NONFINITE


cdef Py_ssize_t _canonical(unsigned long long* keys, unsigned long long* tmp,
                           double* vals, double* data_out, int* idx_out,
                           Py_ssize_t n, Py_ssize_t n_cols) noexcept nogil:
    """Write the n entries (column keys[k] >> 32 of value vals[k & 0xffffffff]) sorted by
    column, values of a column summed in their order; returns the entries written."""
    cdef unsigned long long* s = keys
    cdef unsigned long long key
    cdef Py_ssize_t k, i, m = -1
    cdef int j, last = -1
    if n <= 32:     # short rows: insertion sort (the keys are distinct)
        for k in range(1, n):
            key = keys[k]
            i = k
            while i > 0 and keys[i - 1] > key:
                keys[i] = keys[i - 1]
                i -= 1
            keys[i] = key
    else:
        s = _radix_sort(keys, tmp, n, n_cols)
    for k in range(n):
        j = <int>(s[k] >> 32)
        if j != last:
            m += 1
            idx_out[m] = j
            data_out[m] = vals[s[k] & 0xffffffffULL]
            last = j
        else:
            data_out[m] += vals[s[k] & 0xffffffffULL]
    return m + 1


def _named_rows(list rows, int bits, bint signed, NameTable vocab, bint grow):
    """Rows of named features as canonical CSR arrays.

    Each row is a dict of name -> value or a list, tuple, set or frozenset of
    names (each of value 1); a name is a str or an int (its decimal text).
    With `vocab` None a name's column is the low `bits` bits of its hash
    (`_name_hash`, seed 0), its value negated with `signed` when bit 31 of
    MurmurHash3_x86_32 of the name is set; otherwise its column in the
    vocabulary (`vocab`, a `NameTable`; a new name is appended when `grow`,
    else it is dropped).  Returns ``(status, nnz, row,
    name, value, data, indices, indptr)``: the arrays (``data[:nnz]``,
    ``indices[:nnz]``, ``indptr``); on an error, the row, name and value at
    fault.  The caller rolls back the names a failed call appended to the
    vocabulary.

    A dict of str names and float values is read by `_exact_dict` (hashed) or
    `_vocab_dict` (ASCII names in a vocabulary); any other row, or a row whose
    sums are not all finite, entry by entry (which finds the entry at fault).
    """
    cdef Py_ssize_t r, k, n, total = 0, start, cap = 0
    cdef Py_ssize_t nr = len(rows), j, max_n = 0, pos
    cdef Py_ssize_t n_cols = (<Py_ssize_t>1 << bits) if vocab is None else 2147483647
    cdef uint64_t mask = (<uint64_t>1 << bits) - 1
    cdef PyObject* pk
    cdef PyObject* pv
    cdef const unsigned char* s
    cdef double val
    cdef int status
    cdef void* buf = NULL
    cdef unsigned long long* keys
    cdef unsigned long long* tmp
    cdef double* vals
    cdef PyObject** objs
    cdef double[::1] data
    cdef int[::1] indices
    cdef long long[::1] indptr
    cdef object row, key, value, name
    for r in range(nr):
        row = rows[r]
        if isinstance(row, dict) or _is_names(row):
            n = len(row)
            cap += n
            max_n = max(max_n, n)
    out_data = np.empty(cap, np.float64)
    out_indices = np.empty(cap, np.int32)
    out_indptr = np.empty(nr + 1, np.int64)
    data, indices, indptr = out_data, out_indices, out_indptr
    # keys (2 max_n: the sort's room too), values, objects (2 max_n)
    buf = malloc((max_n + 1) * (2 * sizeof(unsigned long long) + sizeof(double)
                                + 2 * sizeof(PyObject*)))
    if buf == NULL:
        raise MemoryError()
    keys = <unsigned long long*>buf
    tmp = keys + max_n
    vals = <double*>(keys + 2 * (max_n + 1))
    objs = <PyObject**>(vals + max_n + 1)
    try:
        indptr[0] = 0
        for r in range(nr):
            row = rows[r]
            start = total
            if type(row) is dict and len(row) <= cap - total:
                if vocab is None:
                    n = _exact_dict(row, objs, keys, vals, max_n, signed, mask)
                else:
                    n = _dict_objects(row, objs, max_n)
                    if n >= 0:
                        n = _vocab_dict(vocab, objs, n, keys, vals, grow)
                        n_cols = vocab.n
                if n >= 0:
                    total += _canonical(keys, tmp, vals, &data[start], &indices[start],
                                        n, n_cols)
                    for k in range(start, total):
                        if not isfinite(data[k]):
                            total = start    # (read again entry by entry below)
                            break
                    else:
                        indptr[r + 1] = total
                        continue
            n = 0
            if isinstance(row, dict):
                if len(row) > max_n or total + len(row) > cap:
                    return (NAMED_BAD_ROW, total, r, None, None,     # changed meanwhile
                            out_data, out_indices, out_indptr)
                pos = 0
                while PyDict_Next(row, &pos, &pk, &pv):
                    key = <object>pk
                    value = <object>pv
                    status = _one_value(value, &val)
                    name = _one_name(key, &s, &k)
                    if name is None:
                        status = NAMED_BAD_NAME
                    if status != NAMED_OK:
                        return status, total, r, key, value, out_data, out_indices, out_indptr
                    if vocab is None:
                        keys[n] = _hashed_key(s, k, signed, mask, n, &val)
                    else:
                        j = vocab.index(name, grow)
                        if j == -3:
                            return (NAMED_TOO_MANY, total, r, key, value,
                                    out_data, out_indices, out_indptr)
                        if j < 0:
                            continue
                        keys[n] = (<unsigned long long>j << 32) | <unsigned long long>n
                    vals[n] = val
                    n += 1
            elif _is_names(row):
                if len(row) > max_n or total + len(row) > cap:
                    return NAMED_BAD_ROW, total, r, None, None, out_data, out_indices, out_indptr
                for key in row:
                    name = _one_name(key, &s, &k)
                    if name is None:
                        return (NAMED_BAD_NAME, total, r, key, None,
                                out_data, out_indices, out_indptr)
                    val = 1.0
                    if vocab is None:
                        keys[n] = _hashed_key(s, k, signed, mask, n, &val)
                    else:
                        j = vocab.index(name, grow)
                        if j == -3:
                            return (NAMED_TOO_MANY, total, r, key, None,
                                    out_data, out_indices, out_indptr)
                        if j < 0:
                            continue
                        keys[n] = (<unsigned long long>j << 32) | <unsigned long long>n
                    vals[n] = val
                    n += 1
            else:
                return NAMED_BAD_ROW, total, r, None, None, out_data, out_indices, out_indptr
            if vocab is not None:
                n_cols = vocab.n
            total += _canonical(keys, tmp, vals, &data[start], &indices[start], n, n_cols)
            for k in range(start, total):
                if not isfinite(data[k]):
                    return NAMED_OVERFLOW, start, r, None, None, out_data, out_indices, out_indptr
            indptr[r + 1] = total
    finally:
        free(buf)
    return NAMED_OK, total, nr, None, None, out_data, out_indices, out_indptr


def named_one(row, int bits, bint signed, scores):
    """The `RowView` of one named row (a dict of name -> value, or a list, tuple, set
    or frozenset of names) hashed into ``2**bits`` columns as `_named_rows` hashes it
    (no vocabulary), its entries in the view's own storage, whose passes write the
    row's score into `scores` (float64 (1,), as `RowView.counting`); None for any row
    `_named_rows` would refuse, whose call reports it.  ``learn_one``'s row: no
    array, no matrix, no Python code per feature."""
    cdef Py_ssize_t n = 0, k, pos = 0, cap, nnz, n_cols = <Py_ssize_t>1 << bits
    cdef uint64_t mask = (<uint64_t>1 << bits) - 1
    cdef PyObject* pk
    cdef PyObject* pv
    cdef const unsigned char* s
    cdef double val
    cdef unsigned long long* keys
    cdef double* vals
    cdef double* data
    cdef int* idx
    cdef bint is_dict = type(row) is dict
    cdef double[::1] out
    cdef object name
    cdef RowView v
    if not (is_dict or _is_names(row)):
        return None
    cap = len(row)
    v = RowView.__new__(RowView)
    v.own = malloc(cap * (2 * sizeof(unsigned long long) + 2 * sizeof(double) + sizeof(int))
                   + 1)
    if v.own == NULL:
        raise MemoryError()
    keys = <unsigned long long*>v.own
    vals = <double*>(keys + 2 * cap)
    data = vals + cap
    idx = <int*>(data + cap)
    if is_dict:
        while PyDict_Next(row, &pos, &pk, &pv):
            if n == cap or _one_value(<object>pv, &val) != NAMED_OK:
                return None
            name = _one_name(<object>pk, &s, &k)    # (s lives as long as name)
            if name is None:
                return None
            keys[n] = _hashed_key(s, k, signed, mask, n, &val)
            vals[n] = val
            n += 1
    else:
        for key in row:
            name = _one_name(key, &s, &k)
            if n == cap or name is None:
                return None
            val = 1.0
            keys[n] = _hashed_key(s, k, signed, mask, n, &val)
            vals[n] = val
            n += 1
    nnz = _canonical(keys, keys + cap, vals, data, idx, n, n_cols)
    for k in range(nnz):
        if not isfinite(data[k]):
            return None
    v.R.data = data
    v.R.indices = idx
    v.one_ptr[0] = 0
    v.one_ptr[1] = nnz
    v.R.indptr = v.one_ptr
    v.R.dense_idx = NULL
    v.R.n_cols = n_cols
    v.n = 1
    out = scores
    v.scores = scores
    v.scores_p = &out[0]
    return v
