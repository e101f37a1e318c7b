# The sweep of a symmetric matrix kept as its lower triangle packed by rows (row p's
# entries q <= p at p (p + 1) / 2 + q) that takes pending rank-one terms and gives the
# matrix-vector product in the same pass: the kernel full-covariance drivers' `lr_mv`
# and `lr_flush` (_kernel.pxi), where their time goes on a budget.
#
# Written in C twice with the same arithmetic, so that every processor and every path
# give the same bits: a plain form (the definition; any compiler) and a vector form of
# four doubles a vector (gcc / clang vector extensions: two SSE2 or NEON instructions
# each, or, compiled a second time for AVX2 on x86-64 and called when the processor has
# it, `__builtin_cpu_supports`, one AVX2 instruction).  Each entry takes its terms in
# their order as a + s_t (u_tp u_tq), and the product's sums have a fixed order whatever
# the vector width (four interleaved sums, lane q mod 4, the remainder into the first,
# then (s0 + s1) + (s2 + s3): what a four-lane vector holds; the plain form's four
# scalars the same).  No multiply-add is fused (no "fma" target; setup.py passes
# -ffp-contract=off, which builds for processors with FMA need).
#
# Provides: cwkit_tri_rows, and for tests `_simd_level` (the path's private switch, to
# compare the paths bit for bit) and `_tri_sweep` (the sweep itself).
# Uses nothing from the other includes.

cdef extern from *:
    """
    #if defined(__clang__)
    #pragma STDC FP_CONTRACT OFF
    #endif

    /* Rows 0 .. P - 1 of the packed triangle A take the m terms s[t] u_t u_t^T
       (u_t = U + t ld; up to 32); with x, out[q] += x_p a_pq for q < p and
       out[p] = sum_{q <= p} a_pq x_q. */
    static void cwkit_tri_rows_plain(double* A, Py_ssize_t P,
                                     const double* U, const double* s, Py_ssize_t m,
                                     Py_ssize_t ld, const double* x, double* out) {
        Py_ssize_t p, q, t, nb;
        double up[32], s0, s1, s2, s3, r0, r1, r2, r3, xp;
        double* row;
        const double* u;
        for (p = 0; p < P; p++) {
            row = A + ((p * (p + 1)) >> 1);
            nb = (p + 1) & ~(Py_ssize_t)3;
            for (t = 0; t < m; t++) up[t] = U[t * ld + p];
            xp = x != NULL ? x[p] : 0.0;
            s0 = s1 = s2 = s3 = 0.0;
            for (q = 0; q < nb; q += 4) {
                r0 = row[q]; r1 = row[q + 1]; r2 = row[q + 2]; r3 = row[q + 3];
                for (t = 0; t < m; t++) {
                    u = U + t * ld + q;
                    r0 += s[t] * (up[t] * u[0]);
                    r1 += s[t] * (up[t] * u[1]);
                    r2 += s[t] * (up[t] * u[2]);
                    r3 += s[t] * (up[t] * u[3]);
                }
                row[q] = r0; row[q + 1] = r1; row[q + 2] = r2; row[q + 3] = r3;
                if (x != NULL) {
                    out[q] += xp * r0; out[q + 1] += xp * r1;
                    out[q + 2] += xp * r2; out[q + 3] += xp * r3;
                    s0 += r0 * x[q]; s1 += r1 * x[q + 1];
                    s2 += r2 * x[q + 2]; s3 += r3 * x[q + 3];
                }
            }
            for (; q <= p; q++) {
                r0 = row[q];
                for (t = 0; t < m; t++) r0 += s[t] * (up[t] * U[t * ld + q]);
                row[q] = r0;
                if (x != NULL) {
                    out[q] += xp * r0;
                    s0 += r0 * x[q];
                }
            }
            if (x != NULL) out[p] = (s0 + s1) + (s2 + s3);
        }
    }

    #if defined(__GNUC__) || defined(__clang__)
    /* The vector form: four doubles a vector (gcc / clang vector extensions: each
       lane's product and sum rounded as the plain form's; the compiler makes two
       SSE2 or NEON instructions of each, or one AVX2 instruction where the function
       targets AVX2). */
    #define CWKIT_TRI_V4 1
    #if defined(__GNUC__) && !defined(__clang__)
    #pragma GCC diagnostic push
    /* gcc 12 takes the rows' u_tp vectors for unset when m is a constant */
    #pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
    #endif
    #define CWKIT_TRI_INLINE __attribute__((always_inline)) static inline
    typedef double cwkit_v4 __attribute__((vector_size(32)));
    /* Four doubles in memory at any address, read or written in place (as
       immintrin.h's __m256d_u); no vector passes by value (its ABI depends on the
       target). */
    typedef double cwkit_v4u __attribute__((vector_size(32), may_alias, aligned(8)));
    #define CWKIT_V4(p) (*(cwkit_v4u*)(p))
    #define CWKIT_V4_SET1(a) ((cwkit_v4){(a), (a), (a), (a)})

    /* r (entries q .. q + 3 of row p) takes the m terms: vs[t] = s_t, vu[t] = u_tp. */
    CWKIT_TRI_INLINE void cwkit_tri_take4(cwkit_v4* r, const double* U, Py_ssize_t ld,
                                          Py_ssize_t q, const cwkit_v4* vs,
                                          const cwkit_v4* vu, Py_ssize_t m) {
        Py_ssize_t t;
        for (t = 0; t < m; t++)
            *r = *r + vs[t] * (vu[t] * CWKIT_V4(U + t * ld + q));
    }

    /* Row p from entry q (a multiple of 4; acc: the four sums of the entries before
       q) to its end: takes the terms (s_t in sl[t] and vs[t], u_tp in up[t] and
       vu[t]), adds x_p a_pq' to out[q'] and sets out[p] to the sum. */
    CWKIT_TRI_INLINE void cwkit_tri_finish(double* row, Py_ssize_t p, Py_ssize_t q,
                                           const cwkit_v4* acc, const double* U,
                                           Py_ssize_t ld, const double* sl,
                                           const double* up, const cwkit_v4* vs,
                                           const cwkit_v4* vu, Py_ssize_t m,
                                           const double* x, double* out) {
        Py_ssize_t t;
        double sum[4], r0, xp = x[p];
        cwkit_v4 r, o, a = *acc, vxp = CWKIT_V4_SET1(xp);
        for (; q + 4 <= p + 1; q += 4) {
            r = CWKIT_V4(row + q);
            cwkit_tri_take4(&r, U, ld, q, vs, vu, m);
            CWKIT_V4(row + q) = r;
            o = CWKIT_V4(out + q) + vxp * r;
            CWKIT_V4(out + q) = o;
            a = a + r * CWKIT_V4(x + q);
        }
        CWKIT_V4(sum) = a;
        for (; q <= p; q++) {
            r0 = row[q];
            for (t = 0; t < m; t++) r0 += sl[t] * (up[t] * U[t * ld + q]);
            row[q] = r0;
            out[q] += xp * r0;
            sum[0] += r0 * x[q];
        }
        out[p] = (sum[0] + sum[1]) + (sum[2] + sum[3]);
    }

    /* `cwkit_tri_rows_plain` with x, four entries a vector, rows taken in pairs:
       rows p and p + 1 share the loads of u_t, x and out over the entries
       q < p & ~3, row p's contribution to out[q] added before row p + 1's, as one
       row after the other; then each row's remaining entries (`cwkit_tri_finish`),
       p's first, as out[p] must have its sum before row p + 1 adds to it.  m a
       constant where inlined. */
    CWKIT_TRI_INLINE void cwkit_tri_v4_m(double* A, Py_ssize_t P, const double* U,
                                         const double* s, Py_ssize_t m, Py_ssize_t ld,
                                         const double* x, double* out) {
        Py_ssize_t p, q, t, jb;
        double sl[32], up0[32], up1[32];
        double* row0;
        double* row1;
        cwkit_v4 vs[32], vu0[32], vu1[32], r0, r1, u, o, xq, acc0, acc1, vx0, vx1;
        for (t = 0; t < m; t++) {
            sl[t] = s[t];
            vs[t] = CWKIT_V4_SET1(sl[t]);
        }
        for (p = 0; p + 1 < P; p += 2) {
            row0 = A + ((p * (p + 1)) >> 1);
            row1 = row0 + p + 1;
            for (t = 0; t < m; t++) {
                up0[t] = U[t * ld + p];
                up1[t] = U[t * ld + p + 1];
                vu0[t] = CWKIT_V4_SET1(up0[t]);
                vu1[t] = CWKIT_V4_SET1(up1[t]);
            }
            vx0 = CWKIT_V4_SET1(x[p]);
            vx1 = CWKIT_V4_SET1(x[p + 1]);
            acc0 = acc1 = CWKIT_V4_SET1(0.0);
            jb = p & ~(Py_ssize_t)3;
            for (q = 0; q < jb; q += 4) {
                r0 = CWKIT_V4(row0 + q);
                r1 = CWKIT_V4(row1 + q);
                for (t = 0; t < m; t++) {
                    u = CWKIT_V4(U + t * ld + q);
                    r0 = r0 + vs[t] * (vu0[t] * u);
                    r1 = r1 + vs[t] * (vu1[t] * u);
                }
                CWKIT_V4(row0 + q) = r0;
                CWKIT_V4(row1 + q) = r1;
                o = CWKIT_V4(out + q) + vx0 * r0;
                o = o + vx1 * r1;
                CWKIT_V4(out + q) = o;
                xq = CWKIT_V4(x + q);
                acc0 = acc0 + r0 * xq;
                acc1 = acc1 + r1 * xq;
            }
            cwkit_tri_finish(row0, p, jb, &acc0, U, ld, sl, up0, vs, vu0, m, x, out);
            cwkit_tri_finish(row1, p + 1, jb, &acc1, U, ld, sl, up1, vs, vu1, m, x, out);
        }
        if (p < P) {
            for (t = 0; t < m; t++) {
                up0[t] = U[t * ld + p];
                vu0[t] = CWKIT_V4_SET1(up0[t]);
            }
            acc0 = CWKIT_V4_SET1(0.0);
            cwkit_tri_finish(A + ((p * (p + 1)) >> 1), p, 0, &acc0, U, ld, sl, up0, vs,
                             vu0, m, x, out);
        }
    }

    /* The vector form (x not NULL) with the usual numbers of pending terms as
       constants (0 after a round without an update, 1 or 2 after one). */
    CWKIT_TRI_INLINE void cwkit_tri_v4(double* A, Py_ssize_t P, const double* U,
                                       const double* s, Py_ssize_t m, Py_ssize_t ld,
                                       const double* x, double* out) {
        switch (m) {
        case 0: cwkit_tri_v4_m(A, P, U, s, 0, ld, x, out); break;
        case 1: cwkit_tri_v4_m(A, P, U, s, 1, ld, x, out); break;
        case 2: cwkit_tri_v4_m(A, P, U, s, 2, ld, x, out); break;
        default: cwkit_tri_v4_m(A, P, U, s, m, ld, x, out);
        }
    }

    static void cwkit_tri_rows_v4(double* A, Py_ssize_t P, const double* U,
                                  const double* s, Py_ssize_t m, Py_ssize_t ld,
                                  const double* x, double* out) {
        cwkit_tri_v4(A, P, U, s, m, ld, x, out);
    }

    #if defined(__x86_64__)
    #define CWKIT_TRI_AVX2 1
    __attribute__((target("avx2")))
    static void cwkit_tri_rows_avx2(double* A, Py_ssize_t P, const double* U,
                                    const double* s, Py_ssize_t m, Py_ssize_t ld,
                                    const double* x, double* out) {
        cwkit_tri_v4(A, P, U, s, m, ld, x, out);
    }
    #endif
    #if defined(__GNUC__) && !defined(__clang__)
    #pragma GCC diagnostic pop
    #endif
    #endif

    /* The path: 2 the vector form compiled for AVX2, 1 the vector form for the
       build's target, 0 the plain form; -1 until the processor is asked. */
    static int cwkit_tri_level = -1;

    static int cwkit_tri_simd(int level) {
        int best = 0;
    #ifdef CWKIT_TRI_V4
        best = 1;
    #endif
    #ifdef CWKIT_TRI_AVX2
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2")) best = 2;
    #endif
        cwkit_tri_level = level < 0 || level > best ? best : level;
        return cwkit_tri_level;
    }

    static void cwkit_tri_rows(double* A, Py_ssize_t P, const double* U,
                               const double* s, Py_ssize_t m, Py_ssize_t ld,
                               const double* x, double* out) {
        if (cwkit_tri_level < 0) cwkit_tri_simd(-1);
    #ifdef CWKIT_TRI_AVX2
        if (cwkit_tri_level == 2 && x != NULL) {
            cwkit_tri_rows_avx2(A, P, U, s, m, ld, x, out);
            return;
        }
    #endif
    #ifdef CWKIT_TRI_V4
        if (cwkit_tri_level >= 1 && x != NULL) {
            cwkit_tri_rows_v4(A, P, U, s, m, ld, x, out);
            return;
        }
    #endif
        cwkit_tri_rows_plain(A, P, U, s, m, ld, x, out);
    }
    """
    int cwkit_tri_simd(int level) noexcept nogil
    void cwkit_tri_rows(double* A, Py_ssize_t P, const double* U,
                        const double* s, Py_ssize_t m, Py_ssize_t ld, const double* x,
                        double* out) noexcept nogil


def _simd_level(int level=-1):
    """The packed sweeps' path (private, for tests): 0 the plain form, 1 the vector
    form for the build's target, 2 the vector form for AVX2; -1 (the default) the best
    the build and the processor have, and a level above that gives that best.
    Returns the path now in use."""
    return cwkit_tri_simd(level)


def _tri_sweep(double[::1] A, const double[:, ::1] U, const double[::1] s,
               const double[::1] x, double[::1] out):
    """`cwkit_tri_rows` on the packed triangle A (P = x's length rows) with the terms
    s[t] U[t] U[t]^T, x and out (private, for tests; x empty: the terms only)."""
    cdef Py_ssize_t P = out.shape[0]
    if A.shape[0] != P * (P + 1) // 2 or U.shape[0] != s.shape[0] or U.shape[0] > 32 or \
            (U.shape[0] > 0 and U.shape[1] < P) or x.shape[0] not in (0, P):
        raise ValueError("_tri_sweep: shapes do not fit")
    cwkit_tri_rows(&A[0] if P > 0 else NULL, P, &U[0, 0] if U.shape[0] > 0 else NULL,
                   &s[0] if s.shape[0] > 0 else NULL, U.shape[0],
                   U.shape[1] if U.shape[0] > 0 else 0,
                   &x[0] if x.shape[0] > 0 else NULL, &out[0] if P > 0 else NULL)
