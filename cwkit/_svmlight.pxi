# svmlight/libsvm tokenizer and writer.
#
# Provides: SvmStatus, _svm_parse, _svm_bounds, _svm_scan, _svm_format.  Uses
# nothing from the other includes.
#
# Reading: `_svm_parse` turns complete lines of a bytes buffer into CSR arrays,
# labels and query ids, with no Python object per token and without the GIL.
# The caller (cwkit/svmlight.py) cuts the stream into blocks that end with
# b"\n", grows the output arrays when told SVM_CAPACITY (parsing resumes at
# the line that did not fit) and turns other statuses into exceptions.
# Indices are stored less `shift` (1 for a one-based file: the column, in the
# pass that reads them; 0 stores them raw), range checks on the raw values.
#
# Numbers: a token must match [+-]?(d+(.d*)?|.d+)([eE][+-]?d+)? -- no hex, no
# inf/nan, no locale-specific decimal point.  Up to 19 digits are
# accumulated exactly; when the digits fit in 53 bits and |exponent| <= 22 the
# value is one correctly rounded IEEE operation on two exact doubles (Clinger's
# fast path, W. D. Clinger, "How to read floating point numbers accurately",
# PLDI 1990, Sect. 4), otherwise the C library's strtod, correctly rounded,
# converts a canonical copy of the token with no decimal point
# ("<digits>e<exp>"), so the result does not depend on LC_NUMERIC.  Either way
# the value equals Python's float() of the token bit for bit.  Labels and
# feature tokens whose mantissa has at most 15 digits (and exponent at most 4)
# are first read 16 and 8 bytes at a time (cwkit_svm_run, cwkit_svm_value)
# into the same digits and power of ten; anything else (errors included) is
# left to the byte-by-byte readers.
#
# Writing: `_svm_format` renders rows with Python's shortest round-tripping
# repr into one C buffer per call: an exact fast path for up to 15 digits
# (see _svm_put_double), CPython's dtoa (PyOS_double_to_string) otherwise.

from libc.stdlib cimport strtod, malloc, free
from libc.string cimport memcpy, memchr
from libc.math cimport isfinite, fabs, floor, log10, rint
from libc.stdint cimport uint64_t
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.mem cimport PyMem_Free

cdef extern from "float.h":
    # 0 when double arithmetic is evaluated in double (SSE2, ARM64): the fast
    # path is exact only then, so it is disabled on x87 extended precision.
    int FLT_EVAL_METHOD

cdef extern from "Python.h":
    char* PyOS_double_to_string(double val, char format_code, int precision,
                                int flags, int* type) except NULL


cpdef enum SvmStatus:
    SVM_OK = 0
    SVM_BAD_LABEL = 1
    SVM_BAD_QID = 2
    SVM_MISSING_COLON = 3
    SVM_BAD_INDEX = 4
    SVM_NEGATIVE_INDEX = 5
    SVM_INDEX_OVERFLOW = 6
    SVM_ZERO_INDEX = 7
    SVM_INDEX_RANGE = 8
    SVM_UNSORTED = 9
    SVM_DUPLICATE = 10
    SVM_BAD_VALUE = 11
    SVM_NONFINITE_VALUE = 12
    SVM_NON_TEXT = 13
    SVM_MISSING_QID = 14
    SVM_CAPACITY = 15


# Byte classes: a token byte, a separator, end of line, start of a comment,
# or a byte no token may contain (control or non-ASCII; comments may).
cdef enum:
    _C_TOKEN = 0
    _C_SPACE = 1
    _C_NEWLINE = 2
    _C_HASH = 3
    _C_CONTROL = 4

cdef unsigned char _svm_class[256]


cdef void _svm_init_tables() noexcept:
    cdef int b
    for b in range(256):
        _svm_class[b] = _C_CONTROL if (b < 32 or b >= 127) else _C_TOKEN
    for b in b" \t\r\x0b\x0c":
        _svm_class[b] = _C_SPACE
    _svm_class[10] = _C_NEWLINE
    _svm_class[35] = _C_HASH


_svm_init_tables()

# Number parser results.
cdef enum:
    _NUM_OK = 0
    _NUM_SYNTAX = 1
    _NUM_NONFINITE = 2

# Exponents are capped here while reading: any larger one over/underflows.
cdef enum:
    _EXP_CAP = 100000000

# The output's room is faulted in this many nonzeros at a time, when the
# tokenizer is within half of it: in the caches still when it is written.
cdef enum:
    _POPULATE = 32768


cdef inline bint _is_digit(unsigned char c) noexcept nogil:
    return 48 <= c <= 57


# Feature tokens, labels and values are read 8 and 16 bytes at a time (SWAR, "SIMD
# within a register", as in [Lem21]) where they fit in a window of 32 bytes: one
# mask of the window's non-digits (bit j for t[j]: with SSE2, every x86-64, two
# 16-byte compares; else four 8-byte SWAR masks) gives the token's shape by a few
# bit operations instead of a byte loop (so that the next token's position does
# not wait for a chain of compares, and tokens overlap in the processor), and up
# to 8 digits are combined into their value by three multiply-shifts.  A number
# "[+-]<i digits>[.<f digits>][e[+-]<1-4 digits>]" (i, f <= 8, i + f >= 1) is read
# so: its digits as an integer m < 10**16 and its power of ten x (the exponent
# less f), the value +-m * 10**x; when m <= 2**53 and |x| <= 22 that is one
# correctly rounded operation on two exact doubles (Clinger's fast path, as in
# _svm_number).  Anything else (errors included) is left to the byte-by-byte
# readers, whose results are the same.
cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    static inline uint64_t cwkit_load_le64(const unsigned char* p) {
        uint64_t x;
        memcpy(&x, p, 8);
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        x = __builtin_bswap64(x);
    #endif
        return x;
    }
    /* The number of trailing zero bits of m != 0. */
    static inline int cwkit_ctz64(uint64_t m) {
    #if defined(__GNUC__) || defined(__clang__)
        return __builtin_ctzll(m);
    #else
        int n = 0;
        while (!(m & 1)) {
            m >>= 1;
            n++;
        }
        return n;
    #endif
    }
    /* Bit j set when t[j] (j < 32) is not an ASCII digit, and the sentinels 32 and 63
       (so that the mask shifted right by up to 32 is never zero): with SSE2 (every
       x86-64) two 16-byte compares, else four 8-byte SWAR masks. */
    #define CWKIT_SENTINELS ((1ULL << 32) | (1ULL << 63))
    #if defined(__SSE2__)
    #include <emmintrin.h>
    static inline uint64_t cwkit_nondigits32(const unsigned char* t) {
        const __m128i zero = _mm_set1_epi8('0'), nine = _mm_set1_epi8(9);
        __m128i a = _mm_sub_epi8(_mm_loadu_si128((const __m128i*)t), zero);
        __m128i b = _mm_sub_epi8(_mm_loadu_si128((const __m128i*)(t + 16)), zero);
        /* a byte d = c - '0' is a digit iff min(d, 9) == d (unsigned) */
        uint32_t da = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(a, nine), a));
        uint32_t db = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(b, nine), b));
        return (uint64_t)(uint32_t)~(da | (db << 16)) | CWKIT_SENTINELS;
    }
    #else
    static inline uint64_t cwkit_nondigit_bits(uint64_t x) {
        uint64_t t = x ^ 0x3030303030303030ULL;
        t = (((t & 0x7F7F7F7F7F7F7F7FULL) + 0x7676767676767676ULL) | t)
            & 0x8080808080808080ULL;
        return ((t >> 7) * 0x0102040810204080ULL) >> 56;
    }
    static inline uint64_t cwkit_nondigits32(const unsigned char* t) {
        return cwkit_nondigit_bits(cwkit_load_le64(t))
            | (cwkit_nondigit_bits(cwkit_load_le64(t + 8)) << 8)
            | (cwkit_nondigit_bits(cwkit_load_le64(t + 16)) << 16)
            | (cwkit_nondigit_bits(cwkit_load_le64(t + 24)) << 24) | CWKIT_SENTINELS;
    }
    #endif
    /* The newlines and colons in p[0:n], added to *nl and *co: with SSE2 16 bytes at a
       time into byte counters, summed every 255 steps (before they can wrap). */
    static inline void cwkit_count_nl_colon(const unsigned char* p, Py_ssize_t n,
                                            Py_ssize_t* nl, Py_ssize_t* co) {
        Py_ssize_t i = 0, a = 0, b = 0;
    #if defined(__SSE2__)
        const __m128i cn = _mm_set1_epi8(10), cc = _mm_set1_epi8(58);
        const __m128i zero = _mm_setzero_si128();
        while (n - i >= 16) {
            __m128i sn = zero, sc = zero, s;
            Py_ssize_t steps = (n - i) / 16, k;
            if (steps > 255)
                steps = 255;
            for (k = 0; k < steps; k++, i += 16) {
                __m128i x = _mm_loadu_si128((const __m128i*)(p + i));
                sn = _mm_sub_epi8(sn, _mm_cmpeq_epi8(x, cn));   /* a match is -1 */
                sc = _mm_sub_epi8(sc, _mm_cmpeq_epi8(x, cc));
            }
            s = _mm_sad_epu8(sn, zero);
            a += _mm_cvtsi128_si32(s) + _mm_cvtsi128_si32(_mm_unpackhi_epi64(s, s));
            s = _mm_sad_epu8(sc, zero);
            b += _mm_cvtsi128_si32(s) + _mm_cvtsi128_si32(_mm_unpackhi_epi64(s, s));
        }
    #endif
        for (; i < n; i++) {
            a += p[i] == 10;
            b += p[i] == 58;
        }
        *nl += a;
        *co += b;
    }
    /* Fault in the pages of p[0:n] for writing in one call (Linux 5.14+:
       MADV_POPULATE_WRITE), ahead of the tokenizer's writes: the same pages zeroed as
       one trap each would, without the traps.  Pages already in place (memory freed
       by a batch and reused by the next, as the command line's malloc keeps it) are
       left as they are: mincore says so in a fifth of the time the populate call
       takes to walk them.  Errors are ignored (the pages then fault in as they are
       written); elsewhere nothing. */
    #if defined(__linux__)
    #include <sys/mman.h>
    #include <unistd.h>
    #ifndef MADV_POPULATE_WRITE
    #define MADV_POPULATE_WRITE 23
    #endif
    #define CWKIT_RESIDENT_PAGES 256
    static inline void cwkit_populate(void* p, size_t n) {
        static uintptr_t page = 0;
        unsigned char resident[CWKIT_RESIDENT_PAGES];
        uintptr_t a;
        size_t len, pages, k;
        if (page == 0)
            page = (uintptr_t)sysconf(_SC_PAGESIZE);
        a = (uintptr_t)p & ~(page - 1);
        len = (uintptr_t)p + n - a;
        pages = (len + page - 1) / page;
        if (pages <= CWKIT_RESIDENT_PAGES && mincore((void*)a, len, resident) == 0) {
            for (k = 0; k < pages && (resident[k] & 1); k++) {
            }
            if (k == pages)
                return;
        }
        (void)madvise((void*)a, len, MADV_POPULATE_WRITE);
    }
    #else
    static inline void cwkit_populate(void* p, size_t n) {
        (void)p;
        (void)n;
    }
    #endif
    static const double cwkit_pow10[23] = {
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
        1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};   /* exact: 10**22 < 2**53 * 2**22 */
    /* x << s, 0 for s = 64. */
    static inline uint64_t cwkit_shl(uint64_t x, int s) {
        return s < 64 ? x << s : 0;
    }
    /* The value of the n <= 8 digits at p (the first the most significant): the bytes
       past them shifted out, the 8 digits combined pairwise by three multiply-shifts. */
    static inline uint64_t cwkit_digits8(const unsigned char* p, int n) {
        uint64_t x = cwkit_shl(cwkit_load_le64(p), 64 - 8 * n);   /* zeros: leading 0s */
        x = ((x & 0x0F0F0F0F0F0F0F0FULL) * 2561) >> 8;
        x = ((x & 0x00FF00FF00FF00FFULL) * 6553601) >> 16;
        return ((x & 0x0000FFFF0000FFFFULL) * 42949672960001ULL) >> 32;
    }
    /* A separator, end of line or comment ('\\t', '\\n', '\\v', '\\f', '\\r', ' ', '#'). */
    static inline int cwkit_ends_token(unsigned char c) {
        return c < 64 && ((0x0000000900003E00ULL >> c) & 1);
    }
    /* The mantissa "<k digits>[.<f digits>]" at d (k + f <= 15, e = k + f + 1 with the
       point, else k) as m * 10**x: with SSE2 its 16 bytes in one register, the point
       taken out by shifting the integer digits up one byte (0 above them, so that m
       < 10**15) and the digits combined pairwise in three steps (x = k - 15); else two
       8-digit words (k, f <= 8, else 0 is returned, x = -f).  Returns 1. */
    #if defined(__SSE2__) && (defined(__x86_64__) || defined(_M_X64))
    static const unsigned char cwkit_ones_from[32] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255};
    /* The 16 bytes whose lanes j >= i are 0xFF. */
    static inline __m128i cwkit_from(int i) {
        return _mm_loadu_si128((const __m128i*)(cwkit_ones_from + 16 - i));
    }
    static inline int cwkit_mantissa(const unsigned char* d, int k, int e, uint64_t* m,
                                     int* x) {
        __m128i y = _mm_sub_epi8(_mm_loadu_si128((const __m128i*)d), _mm_set1_epi8('0'));
        __m128i gk = cwkit_from(k + 1);
        /* lanes 1..k the integer digits, k+1..e-1 the fraction's, 0 elsewhere */
        __m128i v = _mm_or_si128(_mm_andnot_si128(gk, _mm_slli_si128(y, 1)),
                                 _mm_andnot_si128(cwkit_from(e), _mm_and_si128(y, gk)));
        /* 16-bit lanes 10 a + b of their bytes a, b (the low 16 bits of (a + 256 b) *
           2561 are a + 256 (10 a + b)); 32-bit lanes 100 c + d; 64-bit 10**4 g + h */
        v = _mm_srli_epi16(_mm_mullo_epi16(v, _mm_set1_epi16(2561)), 8);
        v = _mm_madd_epi16(v, _mm_set1_epi32(0x00010064));
        v = _mm_add_epi64(_mm_mul_epu32(v, _mm_set1_epi64x(10000)), _mm_srli_epi64(v, 32));
        *m = (uint64_t)_mm_cvtsi128_si64(v) * 100000000
            + (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(v, v));
        *x = k - 15;
        return 1;
    }
    #else
    static const uint64_t cwkit_pow10_u64[9] = {
        1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
    static inline int cwkit_mantissa(const unsigned char* d, int k, int e, uint64_t* m,
                                     int* x) {
        int f = e - k - (e > k);
        if (k > 8 || f > 8)
            return 0;
        *m = cwkit_digits8(d, k) * cwkit_pow10_u64[f] + cwkit_digits8(d + k + 1, f);
        *x = -f;
        return *m <= 9007199254740992ULL;
    }
    #endif
    /* The number "[+-]<k digits>[.<f digits>][e[+-]<1-4 digits>]" (1 <= k + f <= 15)
       at v, w the mask of v's non-digits (bit j for v[j], as cwkit_nondigits32's shifted,
       sentinels included): its length (the byte after it not checked), its value as
       +-m * 10**x (m < 10**16) in *m, *x and *neg; 0 for any other shape. */
    static inline int cwkit_number(const unsigned char* v, uint64_t w, uint64_t* m,
                                   int* x, int* neg) {
        int s = (v[0] == '-') | (v[0] == '+');
        const unsigned char* d = v + s;
        int k, e, dot, es, xd;
        w >>= s;
        k = cwkit_ctz64(w);                 /* integer digits */
        dot = d[k] == '.';
        e = dot ? cwkit_ctz64(w & (w - 1)) : k;     /* the end of the mantissa */
        if (e - dot == 0 || e - dot > 15 || !cwkit_mantissa(d, k, e, m, x))
            return 0;
        *neg = v[0] == '-';
        if ((d[e] | 0x20) == 'e') {         /* an exponent: rare */
            es = (d[e + 1] == '-') | (d[e + 1] == '+');
            xd = cwkit_ctz64(w >> (e + 1 + es));     /* its digits */
            if (xd == 0 || xd > 4)
                return 0;
            *x += (d[e + 1] == '-' ? -1 : 1) * (int)cwkit_digits8(d + e + 1 + es, xd);
            e += 1 + es + xd;
        }
        return s + e;
    }
    /* The number at v of cwkit_number's shape (w as there) with m <= 2**53 and
       |x| <= 22: its length, its value in *val, one correctly rounded operation on two
       exact doubles; 0 for any other token. */
    static inline int cwkit_svm_value(const unsigned char* v, uint64_t w, double* val) {
        uint64_t m;
        int x, neg, len = cwkit_number(v, w, &m, &x, &neg);
        double d;
        if (len == 0 || m > 9007199254740992ULL || x < -22 || x > 22)
            return 0;
        d = (double)(int64_t)m;                    /* exact: m <= 2**53 */
        d = x < 0 ? d / cwkit_pow10[-x] : d * cwkit_pow10[x];
        *val = neg ? -d : d;
        return len;
    }
    /* The feature token "<1-8 digits>:<number>" at t (t[:48] readable) whose index is in
       [lo, hi] and number is cwkit_svm_value's, followed within t[:32] by a separator:
       its length, its index in *idx and its value in *val; 0 for any other token. */
    static inline int cwkit_svm_pair(const unsigned char* t, long long lo, long long hi,
                                     long long* idx, double* val) {
        uint64_t mask = cwkit_nondigits32(t);
        int n = cwkit_ctz64(mask), len;
        long long i;
        if (n == 0 || n > 8 || t[n] != ':')
            return 0;
        i = (long long)cwkit_digits8(t, n);
        if (i < lo || i > hi)
            return 0;
        len = cwkit_svm_value(t + n + 1, mask >> (n + 1), val);
        if (len == 0)
            return 0;
        len += n + 1;
        if (len >= 32 || !cwkit_ends_token(t[len]))
            return 0;
        *idx = i;
        return len;
    }
    /* Append the feature token at buf[p] and those that follow it one space apart
       while they are of cwkit_svm_pair's shape, start before fast_end and fit (*nnz <
       cap), their indices increasing from lo (the first) up to hi, stored less shift.
       Returns where it stopped: after the last token read (at a byte other than a
       space), or at the start of a token not read, with *slow set.  *idx and *ts
       become the last token's index and start.  The usual token, "<1-8 digits>:<k
       digits>.<f digits>" (k >= 1) and a separator, is read here, anything else by
       cwkit_svm_pair; each value's division is done in the loop (the next token does
       not wait for it).  Not inlined: its own registers for the loop. */
    #if defined(__GNUC__) || defined(__clang__)
    __attribute__((noinline))
    #endif
    static Py_ssize_t cwkit_svm_run(const unsigned char* buf, Py_ssize_t p,
                                    Py_ssize_t fast_end, long long lo, long long hi,
                                    long long shift, double* data, int* indices,
                                    Py_ssize_t* nnz_io, Py_ssize_t cap, long long* idx,
                                    Py_ssize_t* ts, int* slow) {
        const unsigned char* t = buf + p;
        const unsigned char* last = NULL;
        const unsigned char* tend = buf + fast_end;
        Py_ssize_t nnz = *nnz_io;
        long long i;
        uint64_t mask, w, m;
        int n, k, e, x;
        double v;
        unsigned char c;
        *slow = 1;
        for (; nnz < cap && t < tend; t++) {
            mask = cwkit_nondigits32(t);
            n = cwkit_ctz64(mask);
            if ((unsigned)(n - 1) > 7 || t[n] != ':')
                break;
            i = (long long)cwkit_digits8(t, n);
            if (i < lo || i > hi)
                break;
            w = mask >> (n + 1);
            k = cwkit_ctz64(w);
            e = cwkit_ctz64(w & (w - 1));
            if (k == 0 || e > 16 || t[n + 1 + k] != '.')
                goto other;
            c = t[n + 1 + e];
            if ((c != ' ' && !cwkit_ends_token(c))
                    || !cwkit_mantissa(t + n + 1, k, e, &m, &x))
                goto other;
            v = (double)(int64_t)m / cwkit_pow10[-x];   /* exact operands: x <= 0 */
            goto store;
        other:      /* anything else: a sign, an exponent, no point, long */
            e = cwkit_svm_pair(t, lo, hi, &i, &v) - n - 1;
            if (e < 0)
                break;
            c = t[n + 1 + e];
        store:
            data[nnz] = v;
            indices[nnz] = (int)(i - shift);
            nnz++;
            lo = i + 1;
            last = t;
            t += n + 1 + e;
            if (c != ' ') {
                *slow = 0;
                break;
            }
        }
        *nnz_io = nnz;
        if (last != NULL) {
            *idx = lo - 1;
            *ts = last - buf;
        }
        return t - buf;
    }
    """
    uint64_t cwkit_load_le64(const unsigned char* p) noexcept nogil
    void cwkit_count_nl_colon(const unsigned char* p, Py_ssize_t n, Py_ssize_t* nl,
                              Py_ssize_t* co) noexcept nogil
    uint64_t cwkit_nondigits32(const unsigned char* t) noexcept nogil
    int cwkit_ends_token(unsigned char c) noexcept nogil
    int cwkit_svm_value(const unsigned char* v, uint64_t w, double* val) noexcept nogil
    Py_ssize_t cwkit_svm_run(const unsigned char* buf, Py_ssize_t p, Py_ssize_t fast_end,
                             long long lo, long long hi, long long shift, double* data,
                             int* indices, Py_ssize_t* nnz_io, Py_ssize_t cap,
                             long long* idx, Py_ssize_t* ts, int* slow) noexcept nogil
    const double cwkit_pow10[23]
    void cwkit_populate(void* p, size_t n) noexcept nogil


cdef int _svm_slow_number(const unsigned char* s, const unsigned char* e,
                          long long exp10, double* out) noexcept nogil:
    # strtod on "[-]<all mantissa digits>e<exp10>", exp10 already adjusted
    # for the fraction digits; no '.', so LC_NUMERIC plays no part.
    cdef char stack[128]
    cdef char* buf = stack
    cdef Py_ssize_t cap = (e - s) + 32
    cdef Py_ssize_t n = 0
    cdef const unsigned char* p = s
    cdef char digits[24]
    cdef int nd = 0
    cdef unsigned long long a
    cdef char* end
    if cap > 128:
        buf = <char*>malloc(cap)
        if buf == NULL:        # a token of ~100+ bytes and no memory left
            return _NUM_SYNTAX
    if p[0] == 45:      # '-'
        buf[n] = 45
        n += 1
    while p < e and (p[0] | 0x20) != 101:   # up to 'e' / 'E'
        if _is_digit(p[0]):
            buf[n] = <char>p[0]
            n += 1
        p += 1
    buf[n] = 101
    n += 1
    if exp10 < 0:
        buf[n] = 45
        n += 1
        a = <unsigned long long>(-exp10)
    else:
        a = <unsigned long long>exp10
    while True:
        digits[nd] = <char>(48 + a % 10)
        nd += 1
        a = a // 10
        if a == 0:
            break
    while nd > 0:
        nd -= 1
        buf[n] = digits[nd]
        n += 1
    buf[n] = 0
    out[0] = strtod(buf, &end)
    if buf != stack:
        free(buf)
    return _NUM_OK if isfinite(out[0]) else _NUM_NONFINITE


cdef inline int _svm_number(const unsigned char* s, double* out,
                            const unsigned char** endp) noexcept nogil:
    # Reads the longest prefix of s that can be part of a number and sets
    # *endp after it; the caller checks what follows (a separator).
    cdef const unsigned char* p = s
    cdef const unsigned char* digits
    cdef bint neg = False
    cdef bint eneg = False
    cdef uint64_t mant = 0
    cdef Py_ssize_t ndig, nfrac = 0
    cdef long long ex = 0
    cdef unsigned int d
    cdef double v
    if p[0] == 43 or p[0] == 45:   # '+' '-'
        neg = p[0] == 45
        p += 1
    digits = p
    while True:
        d = <unsigned int>p[0] - 48
        if d > 9:
            break
        mant = mant * 10 + d        # wraps beyond 19 digits: then unused
        p += 1
    ndig = p - digits
    if p[0] == 46:   # '.'
        p += 1
        digits = p
        while True:
            d = <unsigned int>p[0] - 48
            if d > 9:
                break
            mant = mant * 10 + d
            p += 1
        nfrac = p - digits
        ndig += nfrac
    endp[0] = p
    if ndig == 0:
        return _NUM_SYNTAX
    if (p[0] | 0x20) == 101:   # 'e' / 'E'
        p += 1
        if p[0] == 43 or p[0] == 45:
            eneg = p[0] == 45
            p += 1
        if <unsigned int>p[0] - 48 > 9:
            endp[0] = p
            return _NUM_SYNTAX
        while True:
            d = <unsigned int>p[0] - 48
            if d > 9:
                break
            if ex < _EXP_CAP:
                ex = ex * 10 + d
            p += 1
        if eneg:
            ex = -ex
        endp[0] = p
    ex -= nfrac                     # value = mant * 10**ex when ndig <= 19
    if (FLT_EVAL_METHOD == 0 and ndig <= 19 and mant <= 9007199254740992ULL
            and -22 <= ex <= 22):
        v = <double>mant   # exact: mant <= 2**53
        if ex >= 0:
            v = v * cwkit_pow10[ex]
        else:
            v = v / cwkit_pow10[-ex]   # divisor >= 10: never zero
        out[0] = -v if neg else v
        return _NUM_OK
    return _svm_slow_number(s, p, ex, out)


cdef struct SvmOut:
    double* data
    int* indices
    long long* indptr         # indptr[r + 1] is written when row r is complete
    double* labels
    long long* label_ptr      # multilabel only, else NULL
    long long* qids
    long long shift           # subtracted from each raw index stored
    Py_ssize_t cap_nnz
    Py_ssize_t cap_rows
    Py_ssize_t cap_labels
    Py_ssize_t n_rows
    Py_ssize_t nnz
    Py_ssize_t n_labels
    long long min_raw         # smallest / largest raw index seen, the line
    long long max_raw         # of their first occurrence and its token
    Py_ssize_t min_line
    Py_ssize_t min_tok
    Py_ssize_t max_line
    Py_ssize_t max_tok


cdef struct SvmErr:
    Py_ssize_t line           # complete lines before the stop (or the end)
    Py_ssize_t tok_start
    Py_ssize_t tok_end
    Py_ssize_t next_line      # where parsing may resume


cdef inline Py_ssize_t _svm_token_end(const unsigned char* buf, Py_ssize_t p) noexcept nogil:
    while _svm_class[buf[p]] == _C_TOKEN:
        p += 1
    return p


cdef inline bint _svm_ends_token(unsigned char c) noexcept nogil:
    # a separator, end of line or comment (classes 1..3)
    return <unsigned int>_svm_class[c] - 1 < 3


cdef int _svm_bad_token(const unsigned char* buf, Py_ssize_t ts, int status,
                        SvmErr* err) noexcept nogil:
    # Records the token starting at ts; a control byte in it means the input
    # is not text, whatever else is wrong with it.
    cdef Py_ssize_t te = _svm_token_end(buf, ts)
    err.tok_start = ts
    if _svm_class[buf[te]] == _C_CONTROL:
        err.tok_end = te + 1
        return SVM_NON_TEXT
    err.tok_end = te
    return status


cdef inline int _svm_labels(const unsigned char* buf, Py_ssize_t* pos, Py_ssize_t fast_end,
                            bint multilabel, SvmOut* o, SvmErr* err) noexcept nogil:
    """The label(s) of the row starting at buf[pos]: one number, or with
    `multilabel` a comma-separated list (none when the first token is a
    feature); pos moves past them.  A label starting before fast_end is
    tried with cwkit_svm_value first.  Returns a status."""
    cdef Py_ssize_t ts = pos[0], te, p
    cdef double val
    cdef const unsigned char* ne
    cdef int r, n
    if not multilabel:
        if ts < fast_end:
            n = cwkit_svm_value(buf + ts, cwkit_nondigits32(buf + ts), &val)
            if n != 0 and n < 32 and cwkit_ends_token(buf[ts + n]):
                o.labels[o.n_rows] = val
                pos[0] = ts + n
                return SVM_OK
        r = _svm_number(buf + ts, &val, &ne)
        pos[0] = ne - buf
        if r != _NUM_OK or not _svm_ends_token(buf[pos[0]]):
            return _svm_bad_token(buf, ts, SVM_BAD_LABEL, err)
        o.labels[o.n_rows] = val
        return SVM_OK
    te = _svm_token_end(buf, ts)
    p = ts
    while p < te and buf[p] != 58:   # ':'
        p += 1
    if p != te:                      # no labels: the token is a feature
        return SVM_OK
    p = ts
    while True:
        if o.n_labels >= o.cap_labels:
            return SVM_CAPACITY
        r = _svm_number(buf + p, &val, &ne)
        p = ne - buf
        if r != _NUM_OK or not (buf[p] == 44 or _svm_ends_token(buf[p])):
            return _svm_bad_token(buf, ts, SVM_BAD_LABEL, err)
        o.labels[o.n_labels] = val
        o.n_labels += 1
        if buf[p] != 44:
            break
        p += 1
    pos[0] = p
    return SVM_OK


cdef inline int _svm_qid(const unsigned char* buf, Py_ssize_t ts, Py_ssize_t* pos,
                         long long* q, SvmErr* err) noexcept nogil:
    """The query id of the token "qid:<int>" at buf[ts]; pos moves past it.
    Returns a status."""
    cdef Py_ssize_t p = ts + 4, ds
    cdef uint64_t uq = 0
    cdef bint neg = buf[p] == 45
    if buf[p] == 45 or buf[p] == 43:
        p += 1
    ds = p
    while _is_digit(buf[p]) and p - ds < 20:
        uq = uq * 10 + (buf[p] - 48)   # a 20th digit is rejected below
        p += 1
    if (p == ds or p - ds > 19 or not _svm_ends_token(buf[p])
            or uq > 9223372036854775807ULL + neg):
        return _svm_bad_token(buf, ts, SVM_BAD_QID, err)
    q[0] = <long long>(0ULL - uq) if neg else <long long>uq
    pos[0] = p
    return SVM_OK


cdef inline int _svm_index(const unsigned char* buf, Py_ssize_t ts, Py_ssize_t* pos,
                           long long* idx, long long min_idx, long long max_idx,
                           long long prev, SvmErr* err) noexcept nogil:
    """The feature index of the token at buf[ts] (up to its ':', where pos stops),
    checked against the range and the previous index.  Returns a status."""
    cdef Py_ssize_t p = ts, ds, te
    cdef unsigned int d
    cdef long long v = 0
    cdef bint neg = buf[p] == 45
    cdef int status
    cdef const unsigned char* ne
    if neg or buf[p] == 43:     # '-' (an error below) or '+' (as strtol)
        p += 1
    ds = p
    while True:
        d = <unsigned int>buf[p] - 48
        if d > 9:
            break
        if v <= 2147483647:
            v = v * 10 + d
        p += 1
    if buf[p] != 58 or p == ds or neg:
        te = _svm_token_end(buf, ts)
        ne = buf + ts
        while ne < buf + te and ne[0] != 58:
            ne += 1
        if ne == buf + te:
            status = SVM_MISSING_COLON
        elif neg and p > ds and buf[p] == 58:
            status = SVM_NEGATIVE_INDEX
        else:
            status = SVM_BAD_INDEX
        return _svm_bad_token(buf, ts, status, err)
    if v > 2147483647:
        return _svm_bad_token(buf, ts, SVM_INDEX_OVERFLOW, err)
    if v < min_idx:
        return _svm_bad_token(buf, ts, SVM_ZERO_INDEX, err)
    if v > max_idx:
        return _svm_bad_token(buf, ts, SVM_INDEX_RANGE, err)
    if v <= prev:
        return _svm_bad_token(buf, ts, SVM_DUPLICATE if v == prev else SVM_UNSORTED, err)
    idx[0] = v
    pos[0] = p
    return SVM_OK


cdef inline Py_ssize_t _svm_next_line(const unsigned char* buf, Py_ssize_t pos,
                                      Py_ssize_t end) noexcept nogil:
    """The start of the line after the one holding buf[pos] (buf[end - 1] is b"\\n")."""
    cdef const void* nl = memchr(buf + pos, 10, end - pos)
    return (<const unsigned char*>nl - buf) + 1


cdef inline void _svm_end_row(SvmOut* o, long long prev, long long q, Py_ssize_t line,
                              Py_ssize_t ts) noexcept nogil:
    """Close a parsed row: its last index (for the range report), query id and
    the row pointers."""
    if prev > o.max_raw:
        o.max_raw = prev
        o.max_line = line
        o.max_tok = ts
    o.qids[o.n_rows] = q
    if o.label_ptr != NULL:
        o.label_ptr[o.n_rows + 1] = o.n_labels
    o.indptr[o.n_rows + 1] = o.nnz
    o.n_rows += 1


cdef int _svm_parse_lines(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                          Py_ssize_t fast_end, long long min_idx, long long max_idx,
                          bint multilabel, bint need_qid, SvmOut* o,
                          SvmErr* err) noexcept nogil:
    # Parses lines in buf[pos:end]; buf[end - 1] must be b"\n" so that every
    # scan stops inside the buffer.  Feature tokens starting before fast_end
    # are read by cwkit_svm_run first (it reads 48 bytes from a token's
    # start).  On error the partial row is dropped.
    cdef Py_ssize_t line = 0
    cdef Py_ssize_t ts = 0, p, line_start = pos, row_nnz0 = 0, row_lab0 = 0
    cdef Py_ssize_t row_ts = 0, t0
    cdef Py_ssize_t ahead = o.nnz      # the output's room faulted in up to here
    cdef long long idx, prev, q, lo
    cdef int slow
    cdef Py_ssize_t n
    cdef int status = SVM_OK
    cdef int r
    cdef unsigned char k
    cdef double val
    cdef bint first, has_qid
    cdef const unsigned char* ne
    while pos < end:
        line_start = pos
        row_nnz0 = o.nnz
        row_lab0 = o.n_labels
        while _svm_class[buf[pos]] == _C_SPACE:
            pos += 1
        k = _svm_class[buf[pos]]
        if k == _C_NEWLINE or k == _C_HASH:
            pos = _svm_next_line(buf, pos, end)
            line += 1
            continue
        if o.n_rows >= o.cap_rows:
            status = SVM_CAPACITY
            break
        if o.nnz + _POPULATE // 2 > ahead and ahead < o.cap_nnz:
            n = min(<Py_ssize_t>_POPULATE, o.cap_nnz - ahead)
            cwkit_populate(o.data + ahead, n * sizeof(double))
            cwkit_populate(o.indices + ahead, n * sizeof(int))
            ahead += n
        ts = row_ts = pos
        first = True
        has_qid = False
        q = 0
        # label(s)
        status = _svm_labels(buf, &pos, fast_end, multilabel, o, err)
        if status != SVM_OK:
            break
        prev = -1
        lo = max(min_idx, 0)
        while True:
            while _svm_class[buf[pos]] == _C_SPACE:
                pos += 1
            k = _svm_class[buf[pos]]
            if k == _C_NEWLINE:
                pos += 1
                break
            if k == _C_HASH:
                pos = _svm_next_line(buf, pos, end)
                break
            ts = pos
            if (first and buf[ts] == 113 and buf[ts + 1] == 105 and buf[ts + 2] == 100
                    and buf[ts + 3] == 58):   # "qid:" (a shorter token stops at a separator)
                first = False
                status = _svm_qid(buf, ts, &pos, &q, err)
                if status != SVM_OK:
                    break
                has_qid = True
                continue
            first = False
            if ts < fast_end:
                n = o.nnz
                t0 = ts
                pos = cwkit_svm_run(buf, ts, fast_end, lo, max_idx, o.shift, o.data,
                                    o.indices, &o.nnz, o.cap_nnz, &idx, &ts, &slow)
                if o.nnz > n:
                    if prev < 0 and o.indices[n] + o.shift < o.min_raw:
                        o.min_raw = o.indices[n] + o.shift
                        o.min_line = line
                        o.min_tok = t0
                    prev = idx
                    lo = idx + 1
                if not slow or _svm_class[buf[pos]] != _C_TOKEN:
                    continue        # (a separator after a space: the loop skips it)
                ts = pos
            # the token at ts byte by byte
            status = _svm_index(buf, ts, &p, &idx, min_idx, max_idx, prev, err)
            if status != SVM_OK:
                break
            r = _svm_number(buf + p + 1, &val, &ne)
            pos = ne - buf
            if r != _NUM_OK or not _svm_ends_token(buf[pos]):
                status = _svm_bad_token(
                    buf, ts, SVM_NONFINITE_VALUE if r == _NUM_NONFINITE else SVM_BAD_VALUE,
                    err)
                break
            if o.nnz >= o.cap_nnz:
                status = SVM_CAPACITY
                break
            if prev < 0 and idx < o.min_raw:
                o.min_raw = idx
                o.min_line = line
                o.min_tok = ts
            o.data[o.nnz] = val
            o.indices[o.nnz] = <int>(idx - o.shift)
            o.nnz += 1
            prev = idx
            lo = idx + 1
        if status != SVM_OK:
            break
        if need_qid and not has_qid:
            status = _svm_bad_token(buf, row_ts, SVM_MISSING_QID, err)
            break
        _svm_end_row(o, prev, q, line, ts)
        line += 1
    err.line = line
    if status != SVM_OK:
        o.nnz = row_nnz0
        o.n_labels = row_lab0
        if status == SVM_CAPACITY:
            err.tok_start = err.tok_end = err.next_line = line_start
        else:
            err.next_line = _svm_next_line(buf, err.tok_start, end)
    return status


def _svm_parse(const unsigned char[::1] buf, Py_ssize_t pos, Py_ssize_t end,
               double[::1] data, int[::1] indices, long long[::1] indptr,
               double[::1] labels, long long[::1] label_ptr, long long[::1] qids,
               Py_ssize_t n_rows, Py_ssize_t nnz, Py_ssize_t n_labels,
               long long min_idx, long long max_idx, bint multilabel, bint need_qid,
               long long shift=0):
    """Parse the lines of ``buf[pos:end]`` into preallocated arrays.

    Rows, nonzeros and labels are appended after the first ``n_rows``,
    ``nnz`` and ``n_labels`` entries; ``indptr[n_rows]`` (and
    ``label_ptr[n_rows]`` when ``multilabel``) must already hold the start
    offsets, and ``buf[end - 1]`` must be ``b"\\n"``.  Indices must lie in
    ``[min_idx, max_idx]`` (raw, as written); each is stored less ``shift`` (0 or
    1: a one-based file's columns, without a second pass).  Without ``multilabel`` the
    label of row ``r`` goes to ``labels[r]`` and ``label_ptr`` is unused.

    Returns ``(status, n_rows, nnz, n_labels, (min_raw, min_line, min_tok),
    (max_raw, max_line, max_tok), (lines, tok_start, tok_end, resume))``.
    ``lines`` counts the complete lines before the stop (all lines when the
    status is ``SVM_OK``); min/max are the extreme raw indices with the line
    (counted from 0 at ``pos``) and offset of their first occurrence.  On a
    bad line everything before it is kept and ``resume`` is the start of the
    next line; on ``SVM_CAPACITY`` it is the start of the line that did not
    fit, to be parsed again once the arrays have grown.
    """
    cdef SvmOut o
    cdef SvmErr err
    cdef int status
    cdef Py_ssize_t fast_end
    if (pos < 0 or end > buf.shape[0] or n_rows < 0 or nnz < 0 or n_labels < 0
            or indptr.shape[0] < n_rows + 1
            or (multilabel and label_ptr.shape[0] < n_rows + 1)):
        raise ValueError("_svm_parse: inconsistent buffer or output sizes")
    if not 0 <= shift <= 1:
        raise ValueError("_svm_parse: shift must be 0 or 1")
    if end > pos and buf[end - 1] != 10:
        raise ValueError("_svm_parse: the block must end with a newline")
    o.data = &data[0] if data.shape[0] > 0 else NULL
    o.indices = &indices[0] if indices.shape[0] > 0 else NULL
    o.indptr = &indptr[0]
    o.labels = &labels[0] if labels.shape[0] > 0 else NULL
    o.label_ptr = &label_ptr[0] if multilabel else NULL
    o.qids = &qids[0] if qids.shape[0] > 0 else NULL
    o.shift = shift
    o.cap_nnz = min(data.shape[0], indices.shape[0])
    o.cap_rows = min(indptr.shape[0] - 1, qids.shape[0])
    if multilabel:
        o.cap_rows = min(o.cap_rows, label_ptr.shape[0] - 1)
        o.cap_labels = labels.shape[0]
    else:
        o.cap_rows = min(o.cap_rows, labels.shape[0])
        o.cap_labels = 0
    o.n_rows = n_rows
    o.nnz = nnz
    o.n_labels = n_labels
    o.min_raw = 2147483648
    o.max_raw = -1
    o.min_line = o.min_tok = o.max_line = o.max_tok = -1
    err.line = err.tok_start = err.tok_end = 0
    err.next_line = end
    # the fast readers' operations are exact only when double arithmetic is (see
    # _svm_number); they read 48 bytes from a token's start
    fast_end = buf.shape[0] - 48 if FLT_EVAL_METHOD == 0 else 0
    if end > pos:
        with nogil:
            status = _svm_parse_lines(&buf[0], pos, end, fast_end, min_idx, max_idx,
                                      multilabel, need_qid, &o, &err)
    else:
        status = SVM_OK
    return (status, o.n_rows, o.nnz, o.n_labels,
            (o.min_raw, o.min_line, o.min_tok), (o.max_raw, o.max_line, o.max_tok),
            (err.line, err.tok_start, err.tok_end, err.next_line))


def _svm_bounds(const unsigned char[::1] buf, Py_ssize_t start, Py_ssize_t stop):
    """``(newlines, colons)`` in ``buf[start:stop]``: bounds on the rows and the
    nonzeros that parsing those bytes can give (every row ends with a newline,
    every nonzero has a ':'), so that pieces of a block can be parsed at once
    straight into their places in one output."""
    cdef Py_ssize_t nl = 0, co = 0
    if not 0 <= start <= stop <= buf.shape[0]:
        raise ValueError("_svm_bounds: range out of the buffer")
    if stop == start:
        return 0, 0
    with nogil:
        cwkit_count_nl_colon(&buf[start], stop - start, &nl, &co)
    return nl, co


# The summary scan: per row only the label, the first and the last feature
# index (indices strictly increase in a valid row, so they are its smallest and
# largest), everything between found by memchr.  It reports "unsure" on any
# of those tokens it does not recognise, and the caller then parses fully.
cdef enum:
    _SCAN_CLASSES = 256       # distinct labels kept; more: unsure


cdef struct SvmScan:
    Py_ssize_t n_rows
    Py_ssize_t n_zero         # rows whose first index is 0
    Py_ssize_t lines
    long long min_raw
    long long max_raw
    Py_ssize_t min_line
    Py_ssize_t min_tok
    Py_ssize_t max_line
    Py_ssize_t max_tok
    int n_classes
    uint64_t classes[_SCAN_CLASSES]   # bit patterns of the distinct labels


cdef inline long long _svm_scan_index(const unsigned char* buf, Py_ssize_t p,
                                      Py_ssize_t e) noexcept nogil:
    """The index of the feature token at buf[p] (before e): [+]digits then ':',
    at most 2**31 - 1; -1 when it is not that."""
    cdef Py_ssize_t ds
    cdef long long v = 0
    if buf[p] == 43:   # '+'
        p += 1
    ds = p
    while p < e and _is_digit(buf[p]):
        if v <= 2147483647:
            v = v * 10 + (buf[p] - 48)
        p += 1
    if p == ds or p >= e or buf[p] != 58 or v > 2147483647:
        return -1
    return v


cdef int _svm_scan_lines(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                         SvmScan* s) noexcept nogil:
    # buf[end - 1] is b"\n".  Returns 0, or 1 (unsure) at a token it does not know.
    cdef Py_ssize_t line = 0, nl, e, p, q, ts
    cdef const unsigned char* ne
    cdef const void* hp
    cdef double val
    cdef long long first, last
    cdef uint64_t bits
    cdef int k
    cdef unsigned char c
    while pos < end:
        while _svm_class[buf[pos]] == _C_SPACE:
            pos += 1
        c = _svm_class[buf[pos]]
        nl = <const unsigned char*>memchr(buf + pos, 10, end - pos) - buf
        if c == _C_NEWLINE or c == _C_HASH:
            pos = nl + 1
            line += 1
            continue
        if _svm_number(buf + pos, &val, &ne) != _NUM_OK or not _svm_ends_token(ne[0]):
            return 1
        memcpy(&bits, &val, 8)
        for k in range(s.n_classes):
            if s.classes[k] == bits:
                break
        else:
            if s.n_classes == _SCAN_CLASSES:
                return 1
            s.classes[s.n_classes] = bits
            s.n_classes += 1
        p = ne - buf
        hp = memchr(buf + p, 35, nl - p)
        e = (<const unsigned char*>hp - buf) if hp != NULL else nl
        while p < e and _svm_class[buf[p]] == _C_SPACE:
            p += 1
        if (p + 4 <= e and buf[p] == 113 and buf[p + 1] == 105 and buf[p + 2] == 100
                and buf[p + 3] == 58):   # "qid:" (its value is not read here)
            while p < e and _svm_class[buf[p]] == _C_TOKEN:
                p += 1
            if p < e and _svm_class[buf[p]] != _C_SPACE:
                return 1
            while p < e and _svm_class[buf[p]] == _C_SPACE:
                p += 1
        if p < e:
            first = _svm_scan_index(buf, p, e)
            q = e
            while _svm_class[buf[q - 1]] == _C_SPACE:   # stops at the first token
                q -= 1
            ts = q
            while ts > p and _svm_class[buf[ts - 1]] != _C_SPACE:
                ts -= 1
            last = _svm_scan_index(buf, ts, q)
            if first < 0 or last < first or (last == first and ts != p):
                return 1
            if first < s.min_raw:
                s.min_raw = first
                s.min_line = line
                s.min_tok = p
            if first == 0:
                s.n_zero += 1
            if last > s.max_raw:
                s.max_raw = last
                s.max_line = line
                s.max_tok = ts
        s.n_rows += 1
        pos = nl + 1
        line += 1
    s.lines = line
    return 0


def _svm_scan(const unsigned char[::1] buf, Py_ssize_t end):
    """Summarise the complete lines of ``buf[:end]`` (``buf[end - 1]`` is ``b"\\n"``):
    ``(n_rows, lines, n_zero, (min_raw, min_line, min_tok), (max_raw, max_line,
    max_tok), labels)``, ``labels`` the distinct labels as a list; None when a
    label, qid or first or last feature token is not recognised (parse fully)."""
    cdef SvmScan s
    cdef int status = 0
    cdef int k
    cdef double v
    if end < 0 or end > buf.shape[0] or (end > 0 and buf[end - 1] != 10):
        raise ValueError("_svm_scan: the block must end with a newline")
    s.n_rows = s.n_zero = s.lines = 0
    s.min_raw = 2147483648
    s.max_raw = -1
    s.min_line = s.min_tok = s.max_line = s.max_tok = -1
    s.n_classes = 0
    if end > 0:
        with nogil:
            status = _svm_scan_lines(&buf[0], 0, end, &s)
    if status:
        return None
    labels = []
    for k in range(s.n_classes):
        memcpy(&v, &s.classes[k], 8)
        labels.append(v)
    return (s.n_rows, s.lines, s.n_zero, (s.min_raw, s.min_line, s.min_tok),
            (s.max_raw, s.max_line, s.max_tok), labels)


cdef inline Py_ssize_t _svm_put_int(char* out, long long v) noexcept:
    cdef char tmp[24]
    cdef int n = 0
    cdef Py_ssize_t k = 0
    cdef unsigned long long a
    if v < 0:
        out[0] = 45
        k = 1
        a = <unsigned long long>0 - <unsigned long long>v
    else:
        a = <unsigned long long>v
    while True:
        tmp[n] = <char>(48 + a % 10)
        n += 1
        a = a // 10
        if a == 0:
            break
    while n > 0:
        n -= 1
        out[k] = tmp[n]
        k += 1
    return k


cdef inline Py_ssize_t _svm_put_double(char* out, double v) except -1:
    # Python's repr(v) without a trailing ".0": the shortest decimal that
    # reads back as v.  Fast path for 1e-4 <= |v| < 1e15 (repr's fixed
    # notation): c = rint(|v| * 10**k) on the 15-significant-digit grid.  If
    # a decimal of at most 15 digits reads back as v, it lies within half an
    # ulp (1.1e-16 relative) of v, so on that grid it is c (the product's
    # rounding error adds at most 0.11 to the 0.11 distance, < 0.5): c with
    # its trailing zeros dropped is the shortest.  c / 10**k == |v| checks it
    # with the reader's own exact operation (c <= 2**53, 10**k exact).
    # Otherwise (16 or 17 digits, or other magnitudes) CPython's dtoa.
    cdef double a = fabs(v)
    cdef double c
    cdef int k, e10, nd, i
    cdef uint64_t m
    cdef char digits[24]
    cdef char* s
    cdef Py_ssize_t n = 0
    if 1e-4 <= a < 1e15:
        e10 = <int>floor(log10(a))
        k = 14 - e10
        if k > 18:
            k = 18
        c = rint(a * cwkit_pow10[k])
        if c > 9007199254740992.0 and k > 0:   # log10 rounded up: one digit too many
            k -= 1
            c = rint(a * cwkit_pow10[k])
        if c <= 9007199254740992.0 and c / cwkit_pow10[k] == a:   # 10**k >= 1
            m = <uint64_t>c
            while k > 0 and m % 10 == 0:
                m = m // 10
                k -= 1
            nd = 0
            while True:
                digits[nd] = <char>(48 + m % 10)
                nd += 1
                m = m // 10
                if m == 0:
                    break
            if v < 0:
                out[n] = 45
                n += 1
            if nd <= k:                     # 0.000ddd
                out[n] = 48
                out[n + 1] = 46
                n += 2
                for i in range(k - nd):
                    out[n] = 48
                    n += 1
            for i in range(nd - 1, -1, -1):
                if i == k - 1 and nd > k:
                    out[n] = 46
                    n += 1
                out[n] = digits[i]
                n += 1
            return n
    s = PyOS_double_to_string(v, b'r', 0, 0, NULL)
    while s[n] != 0:
        out[n] = s[n]
        n += 1
    PyMem_Free(s)
    return n


def _svm_format(const double[::1] data, const long long[::1] indices,
                const long long[::1] indptr, const double[::1] labels,
                const long long[::1] label_ptr, const long long[::1] qids,
                bint with_qid, long long index_offset,
                Py_ssize_t row_start, Py_ssize_t row_end):
    """Render rows ``row_start:row_end`` as svmlight lines (bytes).

    Row ``i`` has labels ``labels[label_ptr[i]:label_ptr[i + 1]]`` (joined by
    commas), ``qid:qids[i]`` when ``with_qid``, and features
    ``indices[j] + index_offset : data[j]`` for ``j`` in
    ``indptr[i]:indptr[i + 1]``.  Numbers use Python's shortest repr that
    round-trips (``repr(float)``), written without a trailing ``.0``.
    """
    cdef Py_ssize_t i, j, n = 0
    cdef Py_ssize_t cap = 1
    cdef char* out
    if not (0 <= row_start <= row_end < indptr.shape[0] and row_end < label_ptr.shape[0]
            and (not with_qid or row_end <= qids.shape[0])
            and 0 <= indptr[row_start] <= indptr[row_end] <= min(data.shape[0], indices.shape[0])
            and 0 <= label_ptr[row_start] <= label_ptr[row_end] <= labels.shape[0]):
        raise ValueError("_svm_format: rows out of range of the arrays")
    # Upper bounds: a repr is at most 24 bytes, an int64 at most 20.
    cap += (indptr[row_end] - indptr[row_start]) * (20 + 1 + 24 + 1)
    cap += (label_ptr[row_end] - label_ptr[row_start]) * (24 + 1)
    cap += (row_end - row_start) * (4 + 20 + 1 + 1)
    out = <char*>malloc(cap)
    if out == NULL:
        raise MemoryError()
    try:
        for i in range(row_start, row_end):
            for j in range(label_ptr[i], label_ptr[i + 1]):
                if j > label_ptr[i]:
                    out[n] = 44
                    n += 1
                n += _svm_put_double(out + n, labels[j])
            if with_qid:
                memcpy(out + n, b" qid:", 5)
                n += 5
                n += _svm_put_int(out + n, qids[i])
            for j in range(indptr[i], indptr[i + 1]):
                out[n] = 32
                n += 1
                n += _svm_put_int(out + n, indices[j] + index_offset)
                out[n] = 58
                n += 1
                n += _svm_put_double(out + n, data[j])
            out[n] = 10
            n += 1
        return PyBytes_FromStringAndSize(out, n)
    finally:
        free(out)
