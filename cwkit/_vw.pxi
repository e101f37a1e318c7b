# Vowpal Wabbit's text format: the tokenizer.
#
# Provides: VWStatus, _vw_parse.  Uses _svm_number and its results (_NUM_OK) from
# _svmlight.pxi, _name_hash and _canonical (a row's entries sorted, duplicates
# summed) from _hash.pxi.
#
# A line is `[label [weight [initial]]] [tag]|ns[:v] name[:value] ... |ns ...`:
# the words before the first '|' are the label, the importance weight (default
# 1) and Vowpal Wabbit's initial prediction (read, not used), then the tag: the
# last word when it starts with ' or touches the '|'.  Each '|' opens a
# namespace: a name right after the bar (its value v scaling its features,
# default 1), or none (a space after the bar: the default namespace).  A
# feature `name:value` (value 1 when omitted) gets the column of Vowpal
# Wabbit's hash of its name seeded with the namespace's hash (0 for the
# default namespace; `_name_hash`), the low `bits` bits; a feature with an
# empty name (`:value`) the namespace's hash plus its rank among the
# namespace's unnamed features, as Vowpal Wabbit numbers them.  Features of value 0 are
# dropped (as Vowpal Wabbit does), a column a line has twice gets the sum.
# Tokens are separated by spaces or tabs (\r, \v, \f too); a blank line is
# skipped; numbers are read by _svm_number (decimal, finite, no nan/inf).

from libc.stdlib cimport realloc
from libc.math cimport NAN

cpdef enum VWStatus:
    VW_OK = 0
    VW_BAD_LABEL = 1
    VW_COST_LABEL = 2
    VW_LABEL_WORDS = 3
    VW_BAD_WEIGHT = 4
    VW_NO_LABEL = 5
    VW_EMPTY_NAMESPACE = 6
    VW_BAD_VALUE = 7
    VW_BAD_NS_VALUE = 8
    VW_NON_TEXT = 9
    VW_BAD_INITIAL = 10
    VW_CAPACITY = 11
    VW_NO_MEMORY = 12
    VW_OVERFLOW = 13

# byte classes: part of a token, separator, end of line, bar, not text
cdef enum:
    _V_TOKEN = 0
    _V_SPACE = 1
    _V_NEWLINE = 2
    _V_BAR = 3
    _V_CONTROL = 4

cdef unsigned char _vw_class[256]


cdef void _vw_init_tables() noexcept:
    cdef int b
    for b in range(256):
        _vw_class[b] = _V_CONTROL if (b < 32 or b == 127) else _V_TOKEN
    for b in b" \t\r\x0b\x0c":
        _vw_class[b] = _V_SPACE
    _vw_class[10] = _V_NEWLINE
    _vw_class[124] = _V_BAR


_vw_init_tables()


cdef struct VWOut:
    double* data
    int* indices
    long long* indptr
    double* labels
    double* weights
    long long* tags           # per row: start and end of its tag in the buffer, or -1, -1
    Py_ssize_t cap_nnz
    Py_ssize_t cap_rows
    Py_ssize_t n_rows
    Py_ssize_t nnz


cdef struct VWScratch:
    unsigned long long* keys  # 2 * cap: the keys and the sort's other buffer
    double* vals
    Py_ssize_t cap


cdef inline Py_ssize_t _vw_token_end(const unsigned char* buf, Py_ssize_t p) noexcept nogil:
    while _vw_class[buf[p]] == _V_TOKEN:
        p += 1
    return p


cdef inline bint _vw_read(const unsigned char* buf, Py_ssize_t s, Py_ssize_t e,
                          double* out) noexcept nogil:
    """Whether buf[s:e] is exactly one finite decimal number (then in out)."""
    cdef const unsigned char* ne
    if s >= e:
        return False
    return _svm_number(buf + s, out, &ne) == _NUM_OK and ne == buf + e


cdef inline int _vw_room(VWScratch* w, Py_ssize_t n) noexcept nogil:
    """Make room for n entries in the scratch row; 0, or -1 without memory."""
    cdef Py_ssize_t cap = w.cap
    cdef unsigned long long* keys
    cdef double* vals
    if n <= cap:
        return 0
    while cap < n:
        cap *= 2
    keys = <unsigned long long*>realloc(w.keys, 2 * cap * sizeof(unsigned long long))
    if keys == NULL:
        return -1
    w.keys = keys
    vals = <double*>realloc(w.vals, cap * sizeof(double))
    if vals == NULL:
        return -1
    w.vals = vals
    w.cap = cap
    return 0


cdef int _vw_line(const unsigned char* buf, Py_ssize_t p, Py_ssize_t nl, int bits,
                  bint need_label, VWOut* o, VWScratch* w,
                  Py_ssize_t* tok_start, Py_ssize_t* tok_end) noexcept nogil:
    """Parse the line buf[p:nl] (not blank) into row o.n_rows; a status."""
    cdef Py_ssize_t ws[4]
    cdef Py_ssize_t we[4]
    cdef Py_ssize_t nw = 0, q, te, colon, n = 0, ns_start, n_ns, anon
    cdef Py_ssize_t bar = nl, tag_s = -1, tag_e = -1
    cdef double label = NAN, weight = 1.0, initial, value, ns_value
    cdef uint64_t mask = (<uint64_t>1 << bits) - 1
    cdef uint64_t ns_hash, h
    cdef unsigned char c
    cdef unsigned int d
    cdef bint digits
    cdef const unsigned char* ne
    # the words before the first bar
    q = p
    while q < nl:
        c = _vw_class[buf[q]]
        if c == _V_SPACE:
            q += 1
            continue
        if c == _V_BAR:
            bar = q
            break
        te = q
        while _vw_class[buf[te]] == _V_TOKEN:
            te += 1
        if _vw_class[buf[te]] == _V_CONTROL:
            tok_start[0], tok_end[0] = q, te + 1
            return VW_NON_TEXT
        if nw == 4:
            tok_start[0], tok_end[0] = q, te
            return VW_LABEL_WORDS
        ws[nw], we[nw] = q, te
        nw += 1
        q = te
    if nw > 0 and (buf[ws[nw - 1]] == 39 or (bar < nl and we[nw - 1] == bar)):   # the tag
        nw -= 1
        tag_s, tag_e = ws[nw] + (buf[ws[nw]] == 39), we[nw]
    if nw > 3:
        tok_start[0], tok_end[0] = ws[3], we[3]
        return VW_LABEL_WORDS
    if nw == 0 and need_label:
        tok_start[0] = tok_end[0] = p
        return VW_NO_LABEL
    if nw > 0:
        tok_start[0], tok_end[0] = ws[0], we[0]
        if memchr(buf + ws[0], 58, we[0] - ws[0]) != NULL:
            return VW_COST_LABEL
        if not _vw_read(buf, ws[0], we[0], &label):
            return VW_BAD_LABEL
    if nw > 1:
        tok_start[0], tok_end[0] = ws[1], we[1]
        if not _vw_read(buf, ws[1], we[1], &weight) or not weight >= 0:
            return VW_BAD_WEIGHT
    if nw > 2:
        tok_start[0], tok_end[0] = ws[2], we[2]
        if not _vw_read(buf, ws[2], we[2], &initial):
            return VW_BAD_INITIAL
    # the namespaces
    q = bar
    while q < nl:           # buf[q] is a bar
        ns_start = q
        q += 1
        ns_hash = 0
        ns_value = 1.0
        anon = 0
        if _vw_class[buf[q]] == _V_TOKEN:     # the namespace's name[:value]
            te = _vw_token_end(buf, q)
            if _vw_class[buf[te]] == _V_CONTROL:
                tok_start[0], tok_end[0] = ns_start, te + 1
                return VW_NON_TEXT
            colon = q
            while colon < te and buf[colon] != 58:
                colon += 1
            if colon < te and not _vw_read(buf, colon + 1, te, &ns_value):
                tok_start[0], tok_end[0] = ns_start, te
                return VW_BAD_NS_VALUE
            ns_hash = _name_hash(buf + q, colon - q, 0)
            q = te
        n_ns = 0
        while True:
            c = _vw_class[buf[q]]
            if c == _V_SPACE:
                q += 1
                continue
            if c != _V_TOKEN:
                break
            # one walk over the name, reading its value as a number meanwhile (the
            # hash of a name of digits, _name_hash's first case)
            colon = q
            digits = True
            h = 0
            while buf[colon] != 58 and _vw_class[buf[colon]] == _V_TOKEN:
                d = <unsigned int>buf[colon] - 48
                if d > 9:
                    digits = False
                h = 10 * h + d
                colon += 1
            value = 1.0
            te = colon
            if buf[colon] == 58:
                if (_svm_number(buf + colon + 1, &value, &ne) != _NUM_OK
                        or _vw_class[ne[0]] == _V_TOKEN):
                    te = _vw_token_end(buf, q)
                    tok_start[0] = q
                    tok_end[0] = te + (_vw_class[buf[te]] == _V_CONTROL)
                    return VW_NON_TEXT if _vw_class[buf[te]] == _V_CONTROL else VW_BAD_VALUE
                te = ne - buf
            if _vw_class[buf[te]] == _V_CONTROL:
                tok_start[0], tok_end[0] = q, te + 1
                return VW_NON_TEXT
            value = ns_value * value
            if colon == q:
                h = ns_hash + <uint64_t>anon
                anon += 1
            elif digits:
                h = h + ns_hash
            else:
                h = _murmur3_32(buf + q, colon - q, <uint32_t>ns_hash)
            n_ns += 1
            q = te
            if value == 0:
                continue
            if _vw_room(w, n + 1) < 0:
                return VW_NO_MEMORY
            w.keys[n] = ((h & mask) << 32) | <unsigned long long>n
            w.vals[n] = value
            n += 1
        if c == _V_CONTROL:
            tok_start[0], tok_end[0] = q, q + 1
            return VW_NON_TEXT
        if n_ns == 0:
            tok_start[0] = ns_start
            tok_end[0] = _vw_token_end(buf, ns_start + 1)
            return VW_EMPTY_NAMESPACE
    if o.n_rows >= o.cap_rows or o.nnz + n > o.cap_nnz:
        return VW_CAPACITY
    n = _canonical(w.keys, w.keys + w.cap, w.vals, o.data + o.nnz, o.indices + o.nnz,
                   n, <Py_ssize_t>1 << bits)
    for q in range(o.nnz, o.nnz + n):
        if not isfinite(o.data[q]):     # a value times its namespace's, or a sum
            tok_start[0] = tok_end[0] = p
            return VW_OVERFLOW
    o.nnz += n
    o.labels[o.n_rows] = label
    o.weights[o.n_rows] = weight
    o.tags[2 * o.n_rows] = tag_s
    o.tags[2 * o.n_rows + 1] = tag_e
    o.n_rows += 1
    o.indptr[o.n_rows] = o.nnz
    return VW_OK


def _vw_parse(const unsigned char[::1] buf, Py_ssize_t pos, Py_ssize_t end, int bits,
              bint need_label, double[::1] data, int[::1] indices, long long[::1] indptr,
              double[::1] labels, double[::1] weights, long long[::1] tags,
              Py_ssize_t n_rows, Py_ssize_t nnz):
    """Parse the lines of ``buf[pos:end]`` (``buf[end - 1]`` is ``b"\\n"``) into the
    arrays after their first ``n_rows`` rows and ``nnz`` entries (``indptr[n_rows]``
    holds ``nnz``): columns in ``[0, 2**bits)``, labels (NaN for a line without one,
    an error when `need_label`), importance weights, and per row the start and end
    of its tag in `buf` (-1, -1 without).

    Returns ``(status, n_rows, nnz, (lines, tok_start, tok_end, resume))``:
    ``lines`` the complete lines before the stop; on an error everything before
    the bad line is kept and ``resume`` is the start of the next line; on
    ``VW_CAPACITY`` it is the start of the line that did not fit.
    """
    cdef VWOut o
    cdef VWScratch w
    cdef int status = VW_OK
    cdef Py_ssize_t line = 0, p, nl, start, tok_start = 0, tok_end = 0, resume = end
    cdef const void* hit
    if (pos < 0 or end > buf.shape[0] or n_rows < 0 or nnz < 0 or not 1 <= bits <= 31
            or indptr.shape[0] < n_rows + 1 or tags.shape[0] < 2 * (indptr.shape[0] - 1)):
        raise ValueError("_vw_parse: inconsistent buffer or output sizes")
    if end > pos and buf[end - 1] != 10:
        raise ValueError("_vw_parse: the block must end with a newline")
    o.data = &data[0] if data.shape[0] > 0 else NULL
    o.indices = &indices[0] if indices.shape[0] > 0 else NULL
    o.indptr = &indptr[0]
    o.labels = &labels[0] if labels.shape[0] > 0 else NULL
    o.weights = &weights[0] if weights.shape[0] > 0 else NULL
    o.tags = &tags[0] if tags.shape[0] > 0 else NULL
    o.cap_nnz = min(data.shape[0], indices.shape[0])
    o.cap_rows = min(indptr.shape[0] - 1, labels.shape[0], weights.shape[0])
    o.n_rows = n_rows
    o.nnz = nnz
    w.cap = 64
    w.keys = <unsigned long long*>malloc(2 * w.cap * sizeof(unsigned long long))
    w.vals = <double*>malloc(w.cap * sizeof(double))
    if w.keys == NULL or w.vals == NULL:
        free(w.keys)
        free(w.vals)
        raise MemoryError()
    if end > pos:
        with nogil:
            p = pos
            while p < end:
                hit = memchr(&buf[0] + p, 10, end - p)
                nl = <const unsigned char*>hit - &buf[0]
                start = p
                while _vw_class[buf[p]] == _V_SPACE:
                    p += 1
                if p < nl:
                    status = _vw_line(&buf[0], p, nl, bits, need_label, &o, &w,
                                      &tok_start, &tok_end)
                    if status != VW_OK:
                        resume = start if status == VW_CAPACITY else nl + 1
                        break
                line += 1
                p = nl + 1
    free(w.keys)
    free(w.vals)
    if status == VW_NO_MEMORY:
        raise MemoryError()
    return status, o.n_rows, o.nnz, (line, tok_start, tok_end, resume)
