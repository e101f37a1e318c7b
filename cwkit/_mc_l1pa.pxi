# Multi-class top-1 and top-k L1-norm-constrained PA ([LMC09] eq. 3.9 with the
# 1-of-k feature function of [CS03]).  The state W is (D, K) C-contiguous,
# read as one flat vector of length K D.  With c the closest competitor,
#   Delta = f(x, y) - f(x, c)   (x~ in block y, -x~ in block c),
#   W <- argmin 1/2 ||W' - W||_F^2  s.t.  W'.Delta >= 1,  ||W'||_1 <= beta,
# where ||W'||_1 sums all K D entries.  This is the binary problem of
# _l1pa.pxi with w = vec(W) and z = Delta (label +1), so the exact solver
# _l1_update is reused on the flat state: the support of Delta is
# {j K + y} with values x~_j and {j K + c} with values -x~_j.  Feasible iff
# beta ||Delta||_inf = beta ||x~||_inf > 1 (for top-k too: every Delta_j has
# ||Delta_j||_inf = ||x~||_inf).
#
# Provides: the top-k solver `_l1k_update` and the driver `mc_l1pa_pass`.
# Uses: RowView, get_row, max_row_nnz (_rows.pxi); Counts, count_argmax,
# Workspace (_driver.pxi); _l1_update, _l1_soft, L1Supp, L1Work, l1_work,
# l1_support, l1_feasible, l1_commit, l1_step, l1_stop (_l1pa.pxi); all_dots,
# all_finite, competitor, top_competitors (_mc_rows.pxi).


# ---- top-k: min 1/2 ||W' - W||^2 s.t. W'.Delta_j >= 1 (j < kk), ||W'||_1 <= beta.
# Lagrangian minimiser W'(A, a, lam) = S_lam(W + sum_j a_j Delta_j): on the support S
# of x~, block y moves by A x~ (A = sum_j a_j), competitor block c_j by -a_j x~, the
# other entries only shrink.  For fixed lam the constraints decouple: with
# T(A) = x~.w'_y - 1, a_j(A) is the smallest a_j >= 0 with x~.w'_{c_j} <= T(A) (the
# exact root of a nondecreasing piecewise-linear function), nonincreasing in A, so
# A solves the increasing equation A = sum_j a_j(A); g(lam) = ||W'||_1 - beta is
# continuous and nonincreasing.  Both roots are bisected to adjacent doubles (a
# monotone equation, so the result is exact up to one rounding unit).  In the
# sign-oriented form p_i = sign(x_i) v_i, a_i = |x_i| of _l1pa.pxi.

cdef double _pl_first_reach(const double* p, double sgn, const double* a, Py_ssize_t s,
                            double lam, double r, L1Break* br) noexcept nogil:
    """Smallest t >= 0 with M(t) = sum_i a_i S_lam(sgn p_i + t a_i) >= r (all a_i > 0).

    M is continuous, nondecreasing, piecewise linear and unbounded: the segment
    holding the root is found from the sorted breakpoints, the root solved on it
    (the algorithm of _l1_tau with a target r)."""
    cdef Py_ssize_t i, nb = 0, j
    cdef double m0 = 0.0, slope = 0.0, t_lo = 0.0, c = 0.0, sl = 0.0
    cdef double a2, m, mnext, mid, u, pi
    for i in range(s):
        m0 += a[i] * _l1_soft(sgn * p[i], lam)
    if m0 >= r:
        return 0.0
    for i in range(s):
        pi = sgn * p[i]
        a2 = a[i] * a[i]
        if pi >= lam or pi < -lam:
            slope += a2
        if pi < -lam:  # leaves the negative side at t = (-lam - p)/a
            br[nb].t = (-lam - pi) / a[i]  # guarded: a > 0 on the support
            br[nb].ds = -a2
            nb += 1
        if pi < lam:  # enters the positive side at t = (lam - p)/a
            br[nb].t = (lam - pi) / a[i]  # guarded: a > 0 on the support
            br[nb].ds = a2
            nb += 1
    qsort(br, nb, sizeof(L1Break), _l1_cmp_break)
    m = m0
    j = nb
    for i in range(nb):
        mnext = m + slope * (br[i].t - t_lo)
        if mnext >= r:
            j = i
            break
        m = mnext
        t_lo = br[i].t
        slope += br[i].ds
    mid = 0.5 * (t_lo + br[j].t) if j < nb else t_lo + 1.0
    for i in range(s):
        pi = sgn * p[i]
        u = pi + mid * a[i]
        if u > lam:
            c += a[i] * (pi - lam)
            sl += a[i] * a[i]
        elif u < -lam:
            c += a[i] * (pi + lam)
            sl += a[i] * a[i]
    if sl <= 0.0:
        return t_lo  # not reached: M increases on the root's segment
    m = (r - c) / sl  # guarded: sl > 0
    return m if m > 0.0 else 0.0


cdef struct L1KWork:
    double* P         # (kk + 1) s: p of block y, then of the competitors' blocks
    double* a         # s: |x_i|
    double* aj        # kk: multipliers of the competitor constraints
    L1Break* br       # 2 s
    double* tab       # 3 (2 s + 1) (kk + 1): a PL table per block (_pl_build)
    Py_ssize_t* ns    # kk + 1: knots of each table
    double* vo        # D K: sorted nonzero |w_i| off the updated entries (L1Supp)
    double* suffix    # D K + 1: suffix sums of vo
    Py_ssize_t m      # entries of vo
    Py_ssize_t s      # support size
    Py_ssize_t kk     # constraints


cdef Py_ssize_t _pl_build(double* tab, Py_ssize_t s, const double* p, double sgn,
                          const double* a, double lam, L1Break* br) noexcept nogil:
    """Table of M(t) = sum_i a_i S_lam(sgn p_i + t a_i) on t >= 0: knots t[i] (t[0] = 0,
    then the sorted breakpoints), M(t[i]) and the slope after t[i], in tab[0:n],
    tab[2s+1:], tab[2(2s+1):].  Built once per lam: the breakpoints depend on lam only,
    so every evaluation for another A costs O(log s) instead of O(s log s)."""
    cdef Py_ssize_t i, nb = 0, n, w = 2 * s + 1
    cdef double m0 = 0.0, slope = 0.0, a2, pi
    cdef double* t = tab
    cdef double* m = tab + w
    cdef double* sl = tab + 2 * w
    for i in range(s):
        pi = sgn * p[i]
        a2 = a[i] * a[i]
        m0 += a[i] * _l1_soft(pi, lam)
        if pi >= lam or pi < -lam:
            slope += a2
        if pi < -lam:  # leaves the negative side
            br[nb].t = (-lam - pi) / a[i]  # guarded: a > 0 on the support
            br[nb].ds = -a2
            nb += 1
        if pi < lam:  # enters the positive side
            br[nb].t = (lam - pi) / a[i]  # guarded: a > 0 on the support
            br[nb].ds = a2
            nb += 1
    qsort(br, nb, sizeof(L1Break), _l1_cmp_break)
    t[0] = 0.0
    m[0] = m0
    sl[0] = slope
    n = 1
    for i in range(nb):
        t[n] = br[i].t
        m[n] = m[n - 1] + sl[n - 1] * (t[n] - t[n - 1])
        sl[n] = sl[n - 1] + br[i].ds
        if sl[n] < 0.0:
            sl[n] = 0.0  # a sum of squares, up to the rounding of the increments
        n += 1
    return n


cdef double _pl_eval(const double* tab, Py_ssize_t s, Py_ssize_t n, double x) noexcept nogil:
    """M(x) from a _pl_build table (x >= 0)."""
    cdef Py_ssize_t lo = 0, hi = n - 1, mid, w = 2 * s + 1
    while lo < hi:  # last knot <= x
        mid = (lo + hi + 1) // 2
        if tab[mid] <= x:
            lo = mid
        else:
            hi = mid - 1
    return tab[w + lo] + tab[2 * w + lo] * (x - tab[lo])


cdef double _pl_reach(const double* tab, Py_ssize_t s, Py_ssize_t n, double r) noexcept nogil:
    """Smallest t >= 0 with M(t) >= r from a _pl_build table (M nondecreasing, unbounded)."""
    cdef Py_ssize_t lo = 0, hi = n, mid, w = 2 * s + 1
    cdef double t
    cdef const double* m = tab + w
    cdef const double* sl = tab + 2 * w
    if m[0] >= r:
        return 0.0
    while lo < hi:  # first knot with M >= r (n if none)
        mid = (lo + hi) // 2
        if m[mid] >= r:
            hi = mid
        else:
            lo = mid + 1
    if sl[lo - 1] <= 0.0:
        return tab[lo - 1]  # not reached: M increases on the segment holding r
    t = tab[lo - 1] + (r - m[lo - 1]) / sl[lo - 1]  # guarded: slope > 0
    if lo < n and t > tab[lo]:
        t = tab[lo]
    return t


cdef void _l1k_tables(L1KWork* W, double lam, Py_ssize_t* ns) noexcept nogil:
    """PL tables of block y (sgn +1) and the competitors (sgn -1: -x~.w'_c) for this lam."""
    cdef Py_ssize_t b, s = W.s, w = 3 * (2 * W.s + 1)
    for b in range(W.kk + 1):
        ns[b] = _pl_build(W.tab + b * w, s, W.P + b * s, 1.0 if b == 0 else -1.0, W.a, lam,
                          W.br)


cdef double _l1k_aj(L1KWork* W, const Py_ssize_t* ns, double A) noexcept nogil:
    """W.aj[j] = the smallest a_j >= 0 with x~.w'_{c_j} <= x~.w'_y - 1 for block y's
    multiplier A (from the tables); returns sum_j a_j."""
    cdef Py_ssize_t j, w = 3 * (2 * W.s + 1)
    cdef double T = _pl_eval(W.tab, W.s, ns[0], A) - 1.0, tot = 0.0
    for j in range(W.kk):
        # -x~.w'_{c_j}(a) = sum_i a_i S_lam(-p_i + a a_i) >= -T
        W.aj[j] = _pl_reach(W.tab + (j + 1) * w, W.s, ns[j + 1], -T)
        tot += W.aj[j]
    return tot


cdef double _l1k_inner(L1KWork* W, double lam, Py_ssize_t* ns) noexcept nogil:
    """A = sum_j a_j at the dual optimum for this lam (W.aj set): the smallest A with
    h(A) = A - sum_j a_j(A) >= 0 (h increases with slope >= 1), bisected to adjacent
    doubles in [0, sum_j a_j(0)]."""
    cdef double lo = 0.0, mid, hi
    _l1k_tables(W, lam, ns)
    hi = _l1k_aj(W, ns, 0.0)
    if hi <= 0.0:
        return 0.0
    while True:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if mid - _l1k_aj(W, ns, mid) >= 0.0:
            hi = mid
        else:
            lo = mid
    _l1k_aj(W, ns, hi)
    return hi


cdef double _l1k_g(L1KWork* W, double lam, double beta, double* A,
                   Py_ssize_t* ns) noexcept nogil:
    """A(lam) (and W.aj) and g(lam) = ||W'||_1 - beta."""
    cdef Py_ssize_t i, j, s = W.s, lo = 0, hi = W.m, mid
    cdef double g = 0.0
    A[0] = _l1k_inner(W, lam, ns)
    for i in range(s):
        g += fabs(_l1_soft(W.P[i] + A[0] * W.a[i], lam))
        for j in range(W.kk):
            g += fabs(_l1_soft(W.P[(j + 1) * s + i] - W.aj[j] * W.a[i], lam))
    while lo < hi:  # first vo entry > lam
        mid = (lo + hi) // 2
        if W.vo[mid] > lam:
            hi = mid
        else:
            lo = mid + 1
    return g + (W.suffix[lo] - lam * (W.m - lo)) - beta


cdef double _l1k_update(const double* w, const L1Supp* S, Py_ssize_t K,
                        const Py_ssize_t* fpos, const double* xs, Py_ssize_t yi,
                        const Py_ssize_t* comp, double beta, double xmax, L1KWork* W,
                        Py_ssize_t* on, double* won) noexcept nogil:
    """The exact top-k update of the flat (D, K) state w (support list S): returns
    lam (NaN if no bracket was found, which a feasible problem does not allow), and
    the new weights won on the (kk + 1) s entries `on` (block y's, then each
    competitor's, on the support of x~); off them they are S_lam(w)."""
    cdef Py_ssize_t i, j, b, blk, it, s = W.s
    cdef double u, vmax, g, A, T, lam = 0.0, lo, hi, mid
    for b in range(W.kk + 1):
        blk = yi if b == 0 else comp[b - 1]
        for i in range(s):
            on[b * s + i] = fpos[i] * K + blk
            u = w[on[b * s + i]]
            W.P[b * s + i] = u if xs[i] > 0.0 else -u
    for i in range(s):
        W.a[i] = fabs(xs[i])
    vmax = _supp_off(S, w, on, (W.kk + 1) * s, W.vo, &W.m)
    W.suffix[W.m] = 0.0
    for i in range(W.m - 1, -1, -1):
        W.suffix[i] = W.suffix[i + 1] + W.vo[i]
    g = _l1k_g(W, 0.0, beta, &A, W.ns)
    if g > 0.0:
        lo = 0.0
        hi = vmax + 1.0 / xmax  # guarded: xmax > 1/beta > 0
        it = 0
        while _l1k_g(W, hi, beta, &A, W.ns) > 0.0:
            lo = hi
            hi = 2.0 * hi
            it += 1
            if it > 2100:
                return NAN
        while True:
            mid = 0.5 * (lo + hi)
            if mid <= lo or mid >= hi:
                break
            if _l1k_g(W, mid, beta, &A, W.ns) > 0.0:
                lo = mid
            else:
                hi = mid
        lam = hi
        A = _l1k_inner(W, lam, W.ns)
    # a_j at the final (lam, A) solved on its segment from the support values (the
    # tables' knots accumulate rounding over the sweep)
    T = -1.0
    for i in range(s):
        T += W.a[i] * _l1_soft(W.P[i] + A * W.a[i], lam)
    for j in range(W.kk):
        W.aj[j] = _pl_first_reach(W.P + (j + 1) * s, -1.0, W.a, s, lam, -T, W.br)
    for i in range(s):
        won[i] = _l1_soft(w[on[i]] + A * xs[i], lam)
        for j in range(W.kk):
            b = (j + 1) * s + i
            won[b] = _l1_soft(w[on[b]] - W.aj[j] * xs[i], lam)
    return lam


cdef inline int l1k_step(double* w, L1Supp* S, Py_ssize_t K, const double* x,
                         const int* idx, Py_ssize_t nnz, double bias, Py_ssize_t D,
                         Py_ssize_t yi, const double* sc, double beta, L1KWork* KW,
                         Py_ssize_t* fpos, double* xs, Py_ssize_t* comp, Py_ssize_t* taken,
                         Py_ssize_t* kon, double* kwon) noexcept nogil:
    """The top-k update of the flat (D, K) state w on row x~ with label yi and
    class scores sc: OK (made), L1_NO_UPDATE, or the Status that stops the pass."""
    cdef Py_ssize_t j, s = 0
    cdef double n = 0.0, zmax = 0.0, lam
    cdef int st
    for j in range(nnz + 1):
        fpos[s] = idx[j] if j < nnz else D - 1
        xs[s] = x[j] if j < nnz else bias
        if xs[s] != 0.0:
            n += xs[s] * xs[s]
            if fabs(xs[s]) > zmax:
                zmax = fabs(xs[s])
            s += 1
    st = l1_feasible(n, s == 0, zmax, beta)
    if st != OK:
        return st
    top_competitors(sc, K, yi, KW.kk, comp, taken)
    KW.s = s
    lam = _l1k_update(w, S, K, fpos, xs, yi, comp, beta, zmax, KW, kon, kwon)
    return OK if l1_commit(S, w, kon, kwon, (KW.kk + 1) * s, lam) else NONFINITE_STATE


cdef inline Py_ssize_t l1_delta(Py_ssize_t K, Py_ssize_t yi, Py_ssize_t c, const double* x,
                                const int* idx, Py_ssize_t nnz, double bias, Py_ssize_t D,
                                Py_ssize_t* on, double* zs) noexcept nogil:
    """The support of Delta = f(x, yi) - f(x, c) in the flat (D, K) state, positions
    increasing, into on / zs; returns its size."""
    cdef Py_ssize_t j, s = 0
    cdef Py_ssize_t lo = yi if yi < c else c
    cdef Py_ssize_t hop = c - yi if yi < c else yi - c
    cdef double sg = 1.0 if yi < c else -1.0   # sign of Delta at j K + lo
    for j in range(nnz):
        if x[j] != 0.0:
            on[s] = idx[j] * K + lo
            zs[s] = sg * x[j]
            on[s + 1] = on[s] + hop
            zs[s + 1] = -sg * x[j]
            s += 2
    if bias != 0.0:
        on[s] = (D - 1) * K + lo
        zs[s] = sg * bias
        on[s + 1] = on[s] + hop
        zs[s + 1] = -sg * bias
        s += 2
    return s


cdef L1KWork l1k_work(Workspace ws, Py_ssize_t kk, Py_ssize_t nk, Py_ssize_t K,
                      const L1Work* L) except *:
    """Scratch of `_l1k_update` for kk competitors and rows of up to nk support
    entries (sharing L's sorted off-support norms)."""
    cdef L1KWork KW
    KW.kk = kk
    KW.P = ws.doubles((kk + 7) * nk + kk + 1 + 3 * (2 * nk + 1) * (kk + 1) + (kk + 1) * nk)
    KW.a = KW.P + (kk + 1) * nk
    KW.br = <L1Break*>(KW.a + nk)      # 2 nk structs of two doubles
    KW.aj = KW.a + 5 * nk
    KW.vo = L.vo
    KW.suffix = L.suffix
    KW.tab = KW.aj + kk + nk
    KW.ns = ws.indices(kk + 1)
    return KW


def mc_l1pa_pass(RowView rows not None, const Py_ssize_t[::1] y,
                 const Py_ssize_t[::1] order, double bias, double[:, ::1] W,
                 double beta, Py_ssize_t kk, double[::1] U):
    """One multi-class pass of the L1-norm-constrained PA; W (D, K) in place.

    kk = 0: top-1 (the binary solver _l1_update on Delta); kk >= 1: top-k with the
    kk highest-scoring competitors (_l1k_update; kk <= K - 1).  Mistakes are argmax
    errors (ties to the first class).  Updates when 1 - (s_y - s_c) > 0 for the
    closest competitor c and x~ is not zero; INFEASIBLE when beta ||x~||_inf <= 1.
    Averaging (U not empty: D K + 1 entries, U[D K] = T) as in `l1pa_pass`, U[:D K]
    the lazy sum of the flat (D, K) W.  An importance weight s makes the fraction
    min(s, 1) of the update (`l1_fraction`).
    Returns (rounds, mistakes, updates, loss_sum, status, position, collapsed).
    """
    cdef Py_ssize_t D = W.shape[0], K = W.shape[1], DK = D * K
    cdef Py_ssize_t smax = 2 * (max_row_nnz(&rows.R, order) + 1), nk = smax // 2
    cdef Py_ssize_t k, i, nnz, s, yi, c
    cdef Counts cnt = counts_start(rows)
    cdef const double* x
    cdef const int* idx
    cdef double m
    cdef int st
    cdef double* w = &W[0, 0]
    cdef Workspace ws = Workspace()
    cdef double* zs = ws.doubles(smax + K)
    cdef double* sc = zs + smax             # K class scores
    cdef Py_ssize_t* on = ws.indices(smax + nk + kk + K + (kk + 1) * nk)
    cdef L1Work L = l1_work(ws, smax, DK)
    cdef L1Supp S = l1_support(ws, w, DK, (kk + 1) * smax)
    # top-k: feature positions and x~ values, competitors, the updated entries and
    # their new weights
    cdef L1KWork KW = l1k_work(ws, kk, nk, K, &L)
    cdef double* xs = KW.aj + kk
    cdef double* kwon = KW.tab + 3 * (2 * nk + 1) * (kk + 1)
    cdef Py_ssize_t* fpos = on + smax
    cdef Py_ssize_t* comp = fpos + nk
    cdef Py_ssize_t* taken = comp + kk
    cdef Py_ssize_t* kon = taken + K
    if U.shape[0] > 0:
        S.avg = &U[0]
        S.t = U[DK]
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&rows.R, i, &x, &idx)
            all_dots(w, K, K, x, idx, nnz, bias, D, sc)
            if not all_finite(sc, K):
                fail_row(&cnt, NONFINITE_INPUT, i)
                break
            yi = y[i]
            count_argmax(&cnt, sc, K, yi, i)
            S.t += 1.0
            c = competitor(sc, K, yi)
            m = sc[yi] - sc[c]
            if m >= 1.0:
                continue
            count_hinge(&cnt, m)
            S.sw = l1_fraction(&cnt, i)
            if S.sw == 0.0:
                continue
            if kk > 0:
                st = l1k_step(w, &S, K, x, idx, nnz, bias, D, yi, sc, beta, &KW, fpos, xs,
                              comp, taken, kon, kwon)
            else:
                s = l1_delta(K, yi, c, x, idx, nnz, bias, D, on, zs)
                st = l1_step(w, &S, on, zs, s, beta, &L)
            if l1_stop(&cnt, st, i):
                S.t -= 1.0
                break
    if S.avg != NULL:
        U[DK] = S.t
    return counts_result(&cnt)
