# Multi-class drivers ([CS03]): the 1-of-k feature function
# f(x, y) = e_y (x) x~, one block per class, the intercept last in every block.
# State (D, K) (block c is column c; full covariance keeps mu (K, D)): a
# coordinate's K class weights are adjacent, so a row is scored in one walk of
# nnz + 1 short runs, prefetched ahead (`row_dots`), and an update touches the
# lines that walk brought in.  Coordinate p's run starts at p ld (`ld` = K, or
# more for the diagonal rules' arrays, views of the columns of one wider array
# that keeps a coordinate's means, variances and sums side by side:
# `feature_stride` of _mc_diag.pxi).  The training drivers walk a row once
# to score it (with ||x~||^2 and, diagonal top1, v_y), and once per update;
# ||V||^2 is kept for l2-pa only (as in the binary driver).
#
# top1 ("ovr" False): the binary step of the rule on Delta = f(x, y) - f(x, c)
# against the closest competitor c (labels != y by decreasing score, ties to the
# smaller label).  Delta holds x in block y and -x in block c, so for label +1
#   m = mu_y.x - mu_c.x,  v = v_y + v_c (diagonal),  ||Delta||^2 = 2 ||x~||^2.
# The Perceptron updates only on an argmax mistake, with c = the prediction.
# ovr (True): K binary problems on the same row (label +1 for class y, -1 for
# the others); every class is scored before any class is updated.
# Progressive mistakes are argmax errors (ties to the first class) for every rule
# (`count_argmax` of _driver.pxi).
#
# Provides: the 1-of-k walks over a (D, K) state shared by the multi-class
# drivers (walk_row / row_dots / all_dots with their prefetch, all_sqdots,
# blk_dot, blk_sqdot, blk_sqdot_ahead), the choice of competitors (competitor, top_competitors),
# the update of blocks (blk_add, pair_add, blk_axpy; undone by restore_coords of
# _driver.pxi) and the test-time scores `mc_row_scores`.
# Uses: RowView, Rows, get_row, CWKIT_PREFETCH* (_rows.pxi); restore_coords
# (_driver.pxi).


cdef inline double blk_dot(const double* w, const double* x, const int* idx,
                           Py_ssize_t nnz, double bias, Py_ssize_t D,
                           Py_ssize_t ks) noexcept nogil:
    """w . x~ for one block whose coordinate p is w[p * ks]."""
    cdef double s = w[(D - 1) * ks] * bias
    cdef Py_ssize_t j
    for j in range(nnz):
        s += w[idx[j] * ks] * x[j]
    return s


cdef inline double blk_sqdot(const double* sg, const double* x, const int* idx,
                             Py_ssize_t nnz, double bias, Py_ssize_t D,
                             Py_ssize_t ks) noexcept nogil:
    """sum_i sg_i x~_i^2 for one block (x~^T diag(sg) x~), coordinate p at sg[p * ks]."""
    cdef double s = sg[(D - 1) * ks] * bias * bias
    cdef Py_ssize_t j
    for j in range(nnz):
        s += sg[idx[j] * ks] * x[j] * x[j]
    return s


cdef inline double blk_sqdot_ahead(const double* sg, const double* x, const int* idx,
                                   Py_ssize_t nnz, double bias, Py_ssize_t D, Py_ssize_t ks,
                                   const double* A=NULL) noexcept nogil:
    """`blk_sqdot` (the same sum, bit for bit) of a block whose entries no walk has
    brought in: each is prefetched MC_AHEAD coordinates ahead, and so is the same
    block's entry of A (another array shaped as sg, which the driver reads next)
    unless A is NULL."""
    cdef double s = sg[(D - 1) * ks] * bias * bias
    cdef Py_ssize_t j, t
    for t in range(min(nnz, <Py_ssize_t>MC_AHEAD)):
        CWKIT_PREFETCH(sg + idx[t] * ks)
        if A != NULL:
            CWKIT_PREFETCH(A + idx[t] * ks)
    for j in range(nnz):
        t = j + MC_AHEAD
        if t < nnz:
            CWKIT_PREFETCH(sg + idx[t] * ks)
            if A != NULL:
                CWKIT_PREFETCH(A + idx[t] * ks)
        s += sg[idx[j] * ks] * x[j] * x[j]
    return s


# coordinates ahead whose class weights are prefetched while scoring a sparse row
# (chosen on news20, K = 20, among 8 to 48)
cdef enum:
    MC_AHEAD = 16


cdef struct NextRow:
    # the row a driver scores after the current one: its first MC_AHEAD
    # coordinates are prefetched at the end of the current row
    const int* idx
    Py_ssize_t nnz
    Py_ssize_t y                # its label, for the prefetch of S (diagonal top1)


cdef inline void next_row(const Rows* R, const Py_ssize_t* order, Py_ssize_t n_order,
                          Py_ssize_t k, const Py_ssize_t* y, NextRow* nr) noexcept nogil:
    """The row after position k of `order` (nnz 0 at the end)."""
    cdef const double* x
    nr.nnz = 0
    if k + 1 < n_order:
        nr.nnz = get_row(R, order[k + 1], &x, &nr.idx)
        nr.y = y[order[k + 1]]


cdef inline NextRow no_next_row() noexcept nogil:
    cdef NextRow nr
    nr.nnz = 0
    nr.idx = NULL
    nr.y = 0
    return nr


cdef inline double row_dots(const double* W, Py_ssize_t K, Py_ssize_t ld, const double* x,
                            const int* idx, Py_ssize_t nnz, double bias, Py_ssize_t D, double* out,
                            bint warm, const NextRow* nr, const double* S=NULL,
                            Py_ssize_t ys=-1, double* vy=NULL,
                            const double* A=NULL) noexcept nogil:
    """out[c] = W_c . x~ for every class of a (D, K) state, row p at W + p ld (S and
    A too); returns ||x~||^2.

    A coordinate's K class weights are adjacent, so a row touches nnz + 1 short
    contiguous runs; the state is far larger than the caches, so they are
    prefetched MC_AHEAD coordinates ahead, running on into the first coordinates
    of the next row `nr` (NULL: none), so the next call starts with them in flight
    (`warm`: prefetch this row's first coordinates here, when the previous call did
    not).  S (another (D, K) array the driver reads next) is prefetched alongside:
    whole rows, or only class ys's entry when ys >= 0, and then, if vy is not NULL,
    vy = x~^T diag(S_ys) x~ (in `blk_sqdot`'s order).  With ys >= 0, class ys's
    entry of A (a third (D, K) array, the averaged top-1 driver's lazy sum, which
    its update writes) is prefetched too, unless A is NULL.

    Four coordinates per pass over the classes: out[c] gets their four terms one
    after the other in a register (the order of one coordinate at a time, so the
    sums are the same bit for bit), not a load and a store per coordinate."""
    cdef Py_ssize_t j, c, t, f
    cdef const double* row = W + (D - 1) * ld
    cdef const double* r0
    cdef const double* r1
    cdef const double* r2
    cdef const double* r3
    cdef double x0, x1, x2, x3, o, n = bias * bias, v = 0.0
    cdef bint sum_v = S != NULL and ys >= 0 and vy != NULL
    for c in range(K):
        out[c] = row[c] * bias
    if sum_v:
        v = S[(D - 1) * ld + ys] * bias * bias
    if warm:
        for t in range(min(nnz, <Py_ssize_t>MC_AHEAD)):
            CWKIT_PREFETCH_SPAN(W + idx[t] * ld, K)
            if S != NULL and ys >= 0:
                CWKIT_PREFETCH(S + idx[t] * ld + ys)
            elif S != NULL:
                CWKIT_PREFETCH_SPAN(S + idx[t] * ld, K)
            if A != NULL:
                CWKIT_PREFETCH(A + idx[t] * ld + ys)
    j = 0
    while j < nnz:
        # prefetch MC_AHEAD coordinates ahead of the (up to) four scored now
        for t in range(j + MC_AHEAD, j + MC_AHEAD + 4):
            if t < nnz:
                f = idx[t]
                CWKIT_PREFETCH_SPAN(W + f * ld, K)
                if S != NULL and ys >= 0:
                    CWKIT_PREFETCH(S + f * ld + ys)
                elif S != NULL:
                    CWKIT_PREFETCH_SPAN(S + f * ld, K)
                if A != NULL:
                    CWKIT_PREFETCH(A + f * ld + ys)
            elif nr != NULL and t - nnz < nr.nnz:
                f = nr.idx[t - nnz]
                CWKIT_PREFETCH_SPAN(W + f * ld, K)
                if S != NULL and ys >= 0:
                    CWKIT_PREFETCH(S + f * ld + nr.y)
                if A != NULL:
                    CWKIT_PREFETCH(A + f * ld + nr.y)
        if j + 4 <= nnz:
            x0 = x[j]
            x1 = x[j + 1]
            x2 = x[j + 2]
            x3 = x[j + 3]
            r0 = W + idx[j] * ld
            r1 = W + idx[j + 1] * ld
            r2 = W + idx[j + 2] * ld
            r3 = W + idx[j + 3] * ld
            for c in range(K):
                o = out[c]
                o += r0[c] * x0
                o += r1[c] * x1
                o += r2[c] * x2
                o += r3[c] * x3
                out[c] = o
            t = j + 4
        else:
            r0 = W + idx[j] * ld
            x0 = x[j]
            for c in range(K):
                out[c] += r0[c] * x0
            t = j + 1
        while j < t:
            n += x[j] * x[j]
            if sum_v:
                v += S[idx[j] * ld + ys] * x[j] * x[j]
            j += 1
    if sum_v:
        vy[0] = v
    return n


cdef inline double walk_row(const Rows* R, const Py_ssize_t* order, Py_ssize_t n_order,
                            Py_ssize_t k, const Py_ssize_t* y, NextRow* nr, const double* W,
                            Py_ssize_t K, Py_ssize_t ld, const double* x, const int* idx,
                            Py_ssize_t nnz, double bias, Py_ssize_t D, double* out,
                            const double* S=NULL,
                            Py_ssize_t ys=-1, double* vy=NULL,
                            const double* A=NULL) noexcept nogil:
    """`row_dots` on row x (position k of `order`), prefetching on into the row
    after it; nr: the row after the previous one on entry, after this one on exit."""
    cdef bint warm = nr.nnz < MC_AHEAD
    next_row(R, order, n_order, k, y, nr)
    return row_dots(W, K, ld, x, idx, nnz, bias, D, out, warm, nr, S, ys, vy, A)


cdef inline void all_dots(const double* W, Py_ssize_t K, Py_ssize_t ld, const double* x,
                          const int* idx, Py_ssize_t nnz, double bias, Py_ssize_t D, double* out,
                          const double* W2=NULL, Py_ssize_t y2=-1) noexcept nogil:
    """out[c] = W_c . x~ for every class of a (D, K) state (`row_dots` on one row).
    The same rows of W2 (another (D, K) array the driver reads next) are prefetched
    too: whole rows, or only class y2's entry when y2 >= 0."""
    row_dots(W, K, ld, x, idx, nnz, bias, D, out, True, NULL, W2, y2, NULL)


cdef inline void all_sqdots(const double* S, Py_ssize_t K, Py_ssize_t ld, const double* x,
                            const int* idx, Py_ssize_t nnz, double bias, Py_ssize_t D,
                            double* out) noexcept nogil:
    """out[c] = x~^T diag(S_c) x~ for every class of a (D, K) state, row p at S + p ld."""
    cdef Py_ssize_t j, c
    cdef const double* row = S + (D - 1) * ld
    cdef double xj
    for c in range(K):
        out[c] = row[c] * bias * bias
    for j in range(nnz):
        row = S + idx[j] * ld
        xj = x[j]
        for c in range(K):
            out[c] += row[c] * xj * xj          # the binary drivers' rounding order


cdef inline Py_ssize_t competitor(const double* sc, Py_ssize_t K,
                                  Py_ssize_t y) noexcept nogil:
    """Highest-scoring label other than y, ties to the smaller label (K >= 2)."""
    cdef Py_ssize_t c, best = 1 if y == 0 else 0
    for c in range(best + 1, K):
        if c != y and sc[c] > sc[best]:
            best = c
    return best


cdef inline bint all_finite(const double* sc, Py_ssize_t K) noexcept nogil:
    cdef Py_ssize_t c
    for c in range(K):
        if not isfinite(sc[c]):
            return False
    return True


cdef inline double blk_add(double* w, double c, const double* x, const int* idx,
                           Py_ssize_t nnz, double bias, Py_ssize_t D, double* save,
                           double* dn2, Py_ssize_t ks) noexcept nogil:
    """w += c x~ on one block; old values go to save[0..nnz]; dn2 += change of ||w||^2.

    Returns the sum of the new values (a finiteness check)."""
    cdef Py_ssize_t j, p
    cdef double old, new, chk = 0.0
    for j in range(nnz + 1):
        if j < nnz:
            p = idx[j] * ks
            new = c * x[j]
        else:
            p = (D - 1) * ks
            new = c * bias
        old = w[p]
        save[j] = old
        new = old + new
        w[p] = new
        chk += new
        dn2[0] += new * new - old * old
    return chk


cdef inline void pair_add(double* V, Py_ssize_t K, Py_ssize_t a, Py_ssize_t b, double cfa,
                          double cfb, const double* x, const int* idx, Py_ssize_t nnz,
                          double bias, Py_ssize_t D, double* save_a, double* save_b,
                          double* chk_a, double* chk_b) noexcept nogil:
    """`blk_add` of cfa x~ on block a and of cfb x~ on block b (none if b < 0) of a
    (D, K) state in one walk of the row (a coordinate's entries share its cache
    lines; two independent sums instead of one serial chain), without the change
    of ||V||^2.  Old values go to save_a / save_b[0..nnz], as for `restore_coords`;
    chk_a, chk_b = the sums of the new values, each in `blk_add`'s order."""
    cdef Py_ssize_t j
    cdef double* row
    cdef double xj, old, ca = 0.0, cb = 0.0
    for j in range(nnz + 1):
        if j < nnz:
            row = V + idx[j] * K
            xj = x[j]
        else:
            row = V + (D - 1) * K
            xj = bias
        old = row[a]
        save_a[j] = old
        row[a] = old + cfa * xj
        ca += old + cfa * xj
        if b >= 0:
            old = row[b]
            save_b[j] = old
            row[b] = old + cfb * xj
            cb += old + cfb * xj
    chk_a[0] = ca
    chk_b[0] = cb


cdef inline void blk_axpy(double* w, double c, const double* x, const int* idx,
                          Py_ssize_t nnz, double bias, Py_ssize_t D,
                          Py_ssize_t ks) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(nnz):
        w[idx[j] * ks] += c * x[j]
    w[(D - 1) * ks] += c * bias


def mc_row_scores(RowView rows not None,
                  double bias, const double[:, :] W,
                  const double[:, :] S2, double[:, ::1] out_m, double[:, ::1] out_v):
    """Test-time class scores w_c.x~ (and x~^T diag(s2_c) x~ when S2 is not empty)
    of a (D, K) state, out (n, K): the row walk of the training drivers, so
    dense == CSR bit for bit.  W and S2 may be views of a wider array (a row's
    classes adjacent: `feature_stride`)."""
    cdef Py_ssize_t K = W.shape[1], D = W.shape[0], i, nnz
    cdef Py_ssize_t ldw = W.strides[0] // sizeof(double)
    cdef Py_ssize_t lds = S2.strides[0] // sizeof(double) if S2.shape[0] > 0 else 0
    if (W.strides[1] != sizeof(double) or W.strides[0] % sizeof(double)
            or S2.shape[0] > 0 and (S2.strides[1] != sizeof(double)
                                    or S2.strides[0] % sizeof(double))):
        raise ValueError("mc_row_scores: a row's classes must be adjacent")
    cdef bint quad = S2.shape[0] > 0, warm
    cdef const double* x
    cdef const int* idx
    cdef NextRow nr = no_next_row()
    cdef const double* xn
    with nogil:
        for i in range(out_m.shape[0]):
            nnz = get_row(&rows.R, i, &x, &idx)
            warm = nr.nnz < MC_AHEAD
            nr.nnz = get_row(&rows.R, i + 1, &xn, &nr.idx) if i + 1 < out_m.shape[0] else 0
            row_dots(&W[0, 0], K, ldw, x, idx, nnz, bias, D, &out_m[i, 0], warm, &nr)
            if quad:
                all_sqdots(&S2[0, 0], K, lds, x, idx, nnz, bias, D, &out_v[i, 0])


cdef inline void top_competitors(const double* sc, Py_ssize_t K, Py_ssize_t y,
                                 Py_ssize_t kk, Py_ssize_t* comp,
                                 Py_ssize_t* taken) noexcept nogil:
    """comp[0..kk) = labels != y by decreasing score, ties to the smaller label."""
    cdef Py_ssize_t j, c, best
    for c in range(K):
        taken[c] = 0
    taken[y] = 1
    for j in range(kk):
        best = -1
        for c in range(K):
            if not taken[c] and (best < 0 or sc[c] > sc[best]):
                best = c
        comp[j] = best
        taken[best] = 1
