# L1-norm-constrained PA ([LMC09] eq. 3.9): the exact
# update of cwkit.l1pa.l1pa_step (its numpy reference), compiled.  For w_t = v
# and z = y x (support S, |S| = s):
#   w(tau, lam) = S_lam(v + tau z)                   (soft-thresholding)
#   tau(lam): exact root of the piecewise-linear margin z.w(tau, lam) = 1
#   lam: root of g(lam) = ||w(tau(lam), lam)||_1 - beta by safeguarded Newton
#        (candidate = exact 2x2 KKT solution on the current support and signs)
# A trial lam costs O(s log s + log D): off the support u_i = v_i, so that part
# of the norm comes from the sorted |v_i| and their suffix sums.
# Off S the update only shrinks (S_lam(0) = 0), so an update costs
# O(s log s + n) for the n nonzero weights, not O(D log D): the drivers keep the
# list of nonzero coordinates (`L1Supp`) through a pass, in increasing |w_i|, and
# the sorted |v_i| are read off it (the same sequence as sorting all of w, so the
# same arithmetic).  Shrinking keeps the order (fl(|w| - lam) is monotone in |w|),
# so after an update only the s new entries are sorted and merged in.
#
# Provides: the solver `_l1_update`, the support list `L1Supp`, the scratch
# `l1_work` / `l1_support`, the step `l1_step` (with `l1_feasible`, `l1_commit`,
# `l1_stop`, also used by _mc_l1pa.pxi) and the driver `l1pa_pass`.
# Uses: RowView, get_row, max_row_nnz (_rows.pxi); Counts, count_margin,
# Workspace (_driver.pxi); Status (_status.pxi).  No numpy.

from libc.stdlib cimport qsort
from libc.math cimport NAN, fabs, isfinite
from libc.float cimport DBL_EPSILON

cdef struct L1Break:
    double t          # breakpoint of the margin in tau
    double ds         # change of its slope there


cdef int _l1_cmp_break(const void* a, const void* b) noexcept nogil:
    cdef double ta = (<const L1Break*>a).t
    cdef double tb = (<const L1Break*>b).t
    return (ta > tb) - (ta < tb)


cdef inline double _l1_soft(double u, double lam) noexcept nogil:
    if u > lam:
        return u - lam
    if u < -lam:
        return u + lam
    return 0.0


cdef struct L1Work:
    double* p         # s: sign(z_i) v_i
    double* a         # s: |z_i|
    double* vs        # s: v_i on the support
    double* us        # s: v_i + tau z_i on the support
    L1Break* br       # 2 s
    double* vo        # D: sorted nonzero |v_i| off the support
    double* suffix    # D + 1: suffix sums of vo
    double* won       # s: the new weights on the support
    Py_ssize_t m      # entries of vo


cdef struct L1Key:
    double a          # |w_i|
    Py_ssize_t i


cdef int _l1_cmp_key(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const L1Key*>a).a
    cdef double y = (<const L1Key*>b).a
    return (x > y) - (x < y)


cdef struct L1Supp:
    # the coordinates of w that are not zero, in increasing |w_i|; D zeroed flags;
    # scratch keys (as many as w's nonzeros at the start of the pass, and as the
    # entries one update sets); averaging (avg not NULL): the lazy sum of w, and t
    # the round of the next update (`_supp_commit`); sw in (0, 1] the fraction of
    # the update the next commit makes (an importance weight, `l1_fraction`)
    Py_ssize_t* idx
    Py_ssize_t n
    unsigned char* mark
    L1Key* keys
    double* avg
    double t
    double sw


cdef void _supp_init(L1Supp* S, const double* w, Py_ssize_t D) noexcept nogil:
    """S.idx = the nonzero coordinates of w by increasing |w_i| (once per pass)."""
    cdef Py_ssize_t i
    S.n = 0
    for i in range(D):
        if w[i] != 0.0:
            S.keys[S.n].a = fabs(w[i])
            S.keys[S.n].i = i
            S.n += 1
    qsort(S.keys, S.n, sizeof(L1Key), _l1_cmp_key)
    for i in range(S.n):
        S.idx[i] = S.keys[i].i


cdef double _supp_off(const L1Supp* S, const double* w, const Py_ssize_t* on, Py_ssize_t s,
                      double* vo, Py_ssize_t* m) noexcept nogil:
    """vo[:m] = the nonzero |w_i| off the coordinates `on`, sorted increasingly;
    returns max |w_i| over all coordinates."""
    cdef Py_ssize_t t, i
    cdef double a, vmax = 0.0
    for t in range(s):
        S.mark[on[t]] = 1
    m[0] = 0
    for t in range(S.n):
        i = S.idx[t]
        a = fabs(w[i])
        if a > vmax:
            vmax = a
        if not S.mark[i]:
            vo[m[0]] = a
            m[0] += 1
    for t in range(s):
        S.mark[on[t]] = 0
    return vmax


cdef void _supp_commit(L1Supp* S, double* w, const Py_ssize_t* on, const double* won,
                       Py_ssize_t s, double lam) noexcept nogil:
    """w <- S_lam(w) off `on`, w[on] <- won, and the support list updated: the
    shrunk entries keep their order, the nonzero new ones are sorted and merged.
    With S.sw != 1 the fraction sw of that change, w <- w + sw (new - w) (|w_i|
    then shrinks by sw min(lam, |w_i|): still nondecreasing in |w_i|, the order is
    kept).  Averaging (S.avg not NULL): S.avg += S.t (w new - old) on the entries that
    change ([FS99]; the support and `on`, the cost of the update itself)."""
    cdef Py_ssize_t t, i, n = 0, nk = 0, out
    cdef double old, nw, ta = S.t, sw = S.sw
    cdef bint part = sw != 1.0
    cdef double* avg = S.avg           # (locals: the stores to w cannot move them)
    for t in range(s):
        S.mark[on[t]] = 1
    for t in range(S.n):
        i = S.idx[t]
        if not S.mark[i]:
            old = w[i]
            w[i] = old + sw * (_l1_soft(old, lam) - old) if part else _l1_soft(old, lam)
            if avg != NULL:
                avg[i] += ta * (w[i] - old)
            if w[i] != 0.0:
                S.idx[n] = i
                n += 1
    for t in range(s):
        i = on[t]
        nw = w[i] + sw * (won[t] - w[i]) if part else won[t]
        if avg != NULL:
            avg[i] += ta * (nw - w[i])
        w[i] = nw
        S.mark[i] = 0
        if nw != 0.0:
            S.keys[nk].a = fabs(nw)
            S.keys[nk].i = i
            nk += 1
    qsort(S.keys, nk, sizeof(L1Key), _l1_cmp_key)
    # merge from the back: idx[:n] and keys[:nk] into idx[:n + nk]
    S.n = n + nk
    out = n + nk - 1
    t = n - 1
    while nk > 0:
        if t >= 0 and fabs(w[S.idx[t]]) > S.keys[nk - 1].a:
            S.idx[out] = S.idx[t]
            t -= 1
        else:
            S.idx[out] = S.keys[nk - 1].i
            nk -= 1
        out -= 1


cdef double _l1_tau(const L1Work* W, Py_ssize_t s, double lam) noexcept nogil:
    """Smallest tau >= 0 with margin sum_i a_i S_lam(p_i + tau a_i) >= 1 (exact)."""
    cdef Py_ssize_t i, nb = 0, j
    cdef double m0 = 0.0, slope = 0.0, t_lo = 0.0, c = 0.0, sl = 0.0
    cdef double a2, m, mnext, mid, u
    for i in range(s):
        m0 += W.a[i] * _l1_soft(W.p[i], lam)
    if m0 >= 1.0:
        return 0.0
    for i in range(s):
        a2 = W.a[i] * W.a[i]
        if W.p[i] >= lam or W.p[i] < -lam:
            slope += a2
        if W.p[i] < -lam:  # leaves the negative side at t = (-lam - p)/a
            W.br[nb].t = (-lam - W.p[i]) / W.a[i]  # guarded: a > 0 on the support
            W.br[nb].ds = -a2
            nb += 1
        if W.p[i] < lam:  # enters the positive side at t = (lam - p)/a
            W.br[nb].t = (lam - W.p[i]) / W.a[i]  # guarded: a > 0 on the support
            W.br[nb].ds = a2
            nb += 1
    qsort(W.br, nb, sizeof(L1Break), _l1_cmp_break)
    m = m0
    j = nb
    for i in range(nb):
        mnext = m + slope * (W.br[i].t - t_lo)
        if mnext >= 1.0:
            j = i
            break
        m = mnext
        t_lo = W.br[i].t
        slope += W.br[i].ds
    mid = 0.5 * (t_lo + W.br[j].t) if j < nb else t_lo + 1.0
    # On the root's segment: m(tau) = sum_pos a(p - lam) + sum_neg a(p + lam) + tau sl
    for i in range(s):
        u = W.p[i] + mid * W.a[i]
        if u > lam:
            c += W.a[i] * (W.p[i] - lam)
            sl += W.a[i] * W.a[i]
        elif u < -lam:
            c += W.a[i] * (W.p[i] + lam)
            sl += W.a[i] * W.a[i]
    if sl <= 0.0:
        return 0.0  # not reached: the margin increases on the root's segment
    m = (1.0 - c) / sl  # guarded: sl > 0
    return m if m > 0.0 else 0.0


cdef double _l1_g(const L1Work* W, const double* zs, Py_ssize_t s, double lam,
                  double beta, double* tau, Py_ssize_t* n_off,
                  double* s_off) noexcept nogil:
    """tau(lam), us, and g(lam) = ||S_lam(u)||_1 - beta; off-support count/sum > lam."""
    cdef Py_ssize_t i, lo = 0, hi = W.m, mid
    cdef double g = 0.0, r
    tau[0] = _l1_tau(W, s, lam)
    for i in range(s):
        W.us[i] = W.vs[i] + tau[0] * zs[i]
        r = fabs(W.us[i]) - lam
        if r > 0.0:
            g += r
    while lo < hi:  # first vo entry > lam
        mid = (lo + hi) // 2
        if W.vo[mid] > lam:
            hi = mid
        else:
            lo = mid + 1
    n_off[0] = W.m - lo
    s_off[0] = W.suffix[lo]
    return g + (s_off[0] - lam * n_off[0]) - beta


cdef double _l1_update(const double* w, const L1Supp* S, const Py_ssize_t* on,
                       const double* zs, Py_ssize_t s, double beta, double zmax,
                       L1Work* W) noexcept nogil:
    """The exact solution of (3.9) for w_t = w (support list S): returns lam, and
    W.won the new weights on `on`; off `on` they are S_lam(w)."""
    cdef Py_ssize_t i, it, n_off, n_off_hi, n
    cdef double vmax, tau, g, s_off, s_off_hi, lam, lam_lo, lam_hi, tau_hi, g_hi
    cdef double sig, a11, a12, zv, sv, r1, r2, det, cand
    cdef double eps = DBL_EPSILON
    for i in range(s):
        W.vs[i] = w[on[i]]
        W.a[i] = fabs(zs[i])
        W.p[i] = W.vs[i] if zs[i] > 0.0 else -W.vs[i]
    vmax = _supp_off(S, w, on, s, W.vo, &W.m)
    W.suffix[W.m] = 0.0
    for i in range(W.m - 1, -1, -1):
        W.suffix[i] = W.suffix[i + 1] + W.vo[i]
    lam = 0.0
    g = _l1_g(W, zs, s, 0.0, beta, &tau, &n_off, &s_off)
    if g > 0.0:
        lam_lo = 0.0
        lam_hi = vmax + 1.0 / zmax  # guarded: zmax > 1/beta > 0
        while True:
            g_hi = _l1_g(W, zs, s, lam_hi, beta, &tau_hi, &n_off_hi, &s_off_hi)
            if g_hi <= 0.0:
                break
            lam_lo = lam_hi
            lam_hi = 2.0 * lam_hi
        lam, tau, g, n_off, s_off = lam_hi, tau_hi, g_hi, n_off_hi, s_off_hi
        for it in range(300):
            if fabs(g) <= 4.0 * eps * beta:
                break
            n = n_off
            a11 = 0.0
            a12 = 0.0
            zv = 0.0
            sv = 0.0
            for i in range(s):
                if fabs(W.us[i]) > lam:
                    sig = 1.0 if W.us[i] > 0.0 else -1.0
                    n += 1
                    a11 += zs[i] * zs[i]
                    a12 += sig * zs[i]
                    zv += zs[i] * W.vs[i]
                    sv += sig * W.vs[i]
            r1 = 1.0 - zv
            r2 = beta - (sv + s_off)
            det = a12 * a12 - a11 * n  # <= 0 by Cauchy-Schwarz
            if tau > 0.0 and det < -4.0 * eps * a11 * n:
                cand = (a11 * r2 - a12 * r1) / det  # guarded: det < 0
            elif tau == 0.0 and n > 0:
                cand = (sv + s_off - beta) / n  # guarded: n > 0
            else:
                cand = NAN
            if fabs(cand - lam) <= 4.0 * eps * lam:
                break  # lam solves the KKT system of its own piece
            if not (lam_lo < cand < lam_hi):
                if lam_hi - lam_lo <= 4.0 * eps * lam_hi:
                    lam = lam_hi  # bracket collapsed: its feasible end
                    tau = tau_hi
                    break
                cand = 0.5 * (lam_lo + lam_hi)
            lam = cand
            g = _l1_g(W, zs, s, lam, beta, &tau, &n_off, &s_off)
            if g > 0.0:
                lam_lo = lam
            else:
                lam_hi = lam
                tau_hi = tau
    for i in range(s):
        W.won[i] = _l1_soft(W.vs[i] + tau * zs[i], lam)
    return lam


cdef L1Work l1_work(Workspace ws, Py_ssize_t smax, Py_ssize_t n) except *:
    """Scratch of `_l1_update` for up to smax support entries of z and a state of
    n coordinates."""
    cdef L1Work W
    W.p = ws.doubles(9 * smax + 2 * n + 1)
    W.a = W.p + smax
    W.vs = W.a + smax
    W.us = W.vs + smax
    W.br = <L1Break*>(W.us + smax)     # 2 smax structs of two doubles
    W.won = W.us + 5 * smax
    W.vo = W.won + smax
    W.suffix = W.vo + n
    return W


cdef L1Supp l1_support(Workspace ws, const double* w, Py_ssize_t n,
                       Py_ssize_t n_new) except *:
    """The support list of w (n coordinates), with key scratch for its nonzeros
    now and for the n_new entries one update sets."""
    cdef L1Supp S
    cdef Py_ssize_t i, nz = 0
    for i in range(n):
        if w[i] != 0.0:
            nz += 1
    S.idx = ws.indices(n)
    S.mark = ws.flags(n)
    S.keys = <L1Key*>ws.take((nz if nz > n_new else n_new) * sizeof(L1Key), False)
    S.avg = NULL
    S.t = 0.0
    S.sw = 1.0
    _supp_init(&S, w, n)
    return S


cdef inline double l1_fraction(const Counts* cnt, Py_ssize_t i) noexcept nogil:
    """The fraction of L1-PA's update that row i's importance weight s makes: min(s, 1)
    (the update, a projection onto the L1 ball, already satisfies the margin; going
    further would leave the ball)."""
    return min(row_weight(cnt, i), 1.0)      # (`hard_fraction` of the other rules)


cdef enum:
    L1_NO_UPDATE = -1   # `l1_feasible`: z = 0 cannot move the margin (PA's convention)


cdef inline int l1_feasible(double n, bint zero, double zmax, double beta) noexcept nogil:
    """Whether an update with ||z||^2 = n and ||z||_inf = zmax can be made: OK,
    L1_NO_UPDATE (`zero`: z = 0), NONFINITE_INPUT, or INFEASIBLE (beta ||z||_inf <= 1)."""
    if not isfinite(n):
        return NONFINITE_INPUT
    if zero:
        return L1_NO_UPDATE
    if beta * zmax <= 1.0:
        return INFEASIBLE
    return OK


cdef inline bint l1_commit(L1Supp* S, double* w, const Py_ssize_t* on, const double* won,
                           Py_ssize_t s, double lam) noexcept nogil:
    """Apply an update (`_supp_commit`) unless lam or a new weight is not finite
    (off `on` the new w = S_lam(w) is finite when w and lam are: O(s), not O(D))."""
    cdef Py_ssize_t j
    cdef double chk = lam
    for j in range(s):
        chk += won[j]
    if not isfinite(chk):
        return False
    _supp_commit(S, w, on, won, s, lam)
    return True


cdef inline int l1_step(double* w, L1Supp* S, const Py_ssize_t* on, const double* zs,
                        Py_ssize_t s, double beta, L1Work* W) noexcept nogil:
    """The update of w with z = zs on the coordinates `on`: OK (made), or
    L1_NO_UPDATE, or the Status that stops the pass."""
    cdef Py_ssize_t j
    cdef double n = 0.0, zmax = 0.0, lam
    cdef int st
    for j in range(s):
        n += zs[j] * zs[j]
        if fabs(zs[j]) > zmax:
            zmax = fabs(zs[j])
    st = l1_feasible(n, n == 0.0, zmax, beta)
    if st != OK:
        return st
    lam = _l1_update(w, S, on, zs, s, beta, zmax, W)
    return OK if l1_commit(S, w, on, W.won, s, lam) else NONFINITE_STATE


cdef inline bint l1_stop(Counts* cnt, int st, Py_ssize_t i) noexcept nogil:
    """Count an `l1_step`: an update, nothing, or (True) the pass stops at row i."""
    if st == OK:
        cnt.updates += 1
    elif st != L1_NO_UPDATE:
        fail_round(cnt, st, i)
        return True
    return False


def l1pa_pass(RowView rows not None, const double[::1] y, const Py_ssize_t[::1] order,
              double bias, double[::1] w, double beta, double[::1] u):
    """One pass of the L1-norm-constrained PA; w (length D, intercept last) in place.

    Updates when y w.x < 1 and x (with its intercept feature) is not zero;
    INFEASIBLE when beta ||x||_inf <= 1.  An importance weight s makes the fraction
    min(s, 1) of the update (`l1_fraction`).  Averaging (u not empty: D + 1
    entries, u[D] = T the rounds so far): u[:D] += t (w new - old) on the update of
    round t, so that w_1 + ... + w_T = (T + 1) w_T - u[:D] ([FS99]).
    Returns (rounds, mistakes, updates, loss_sum, status, position, collapsed).
    """
    cdef Py_ssize_t D = w.shape[0], smax = max_row_nnz(&rows.R, order) + 1
    cdef Py_ssize_t k, i, j, nnz, s
    cdef Counts cnt = counts_start(rows, y)
    cdef const double* x
    cdef const int* idx
    cdef double f, m
    cdef Workspace ws = Workspace()
    cdef double* zs = ws.doubles(smax)
    cdef Py_ssize_t* on = ws.indices(smax)
    cdef L1Work W = l1_work(ws, smax, D)
    cdef L1Supp S = l1_support(ws, &w[0], D, smax)
    if u.shape[0] > 0:
        S.avg = &u[0]
        S.t = u[D]
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            nnz = get_row(&rows.R, i, &x, &idx)
            f = w[D - 1] * bias
            for j in range(nnz):
                f += w[idx[j]] * x[j]
            m = y[i] * f
            if not count_margin(&cnt, m, 0.0, i):
                break
            S.t += 1.0
            S.sw = l1_fraction(&cnt, i)
            if m >= 1.0 or S.sw == 0.0:
                continue
            s = 0
            for j in range(nnz):
                if x[j] != 0.0:
                    on[s] = idx[j]
                    zs[s] = y[i] * x[j]
                    s += 1
            if bias != 0.0:
                on[s] = D - 1
                zs[s] = y[i] * bias
                s += 1
            if l1_stop(&cnt, l1_step(&w[0], &S, on, zs, s, beta, &W), i):
                S.t -= 1.0
                break
    if S.avg != NULL:
        u[D] = S.t
    return counts_result(&cnt)
