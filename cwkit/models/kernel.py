"""Kernel models: the dual form of the rules, a support set and its coefficients.

f_c(x) = sum_j coef_j,c k~(x_j, x) with k~(a, b) = k(a, b) + bias^2: the
intercept is the augmented constant feature of the primal models, so that
with the linear kernel (poly, degree 1, gamma 1, coef0 0) a dual model makes
the primal model's decisions.  The support vectors are kept as CSR rows
(``sv_data``, ``sv_indices``, ``sv_indptr``, stored as float64 so that a model
file holds plain float arrays) with their squared norms ``sv_sqn``; the
compiled drivers are in ``_kernel.pxi``.

* :class:`FirstOrderDual`: perceptron, averaged perceptron, PA, PA-I, PA-II,
  PA-LS, and the [LMC09] family (binary and top-1): ``coef`` (n, 1 or K) with
  the scale s of ``aux`` (f = s coef^T k~), ``u`` the averaging sums.
* :class:`SecondOrderDual`: CW-Var, CW-Stdev, AROW, AROW-H (binary and top-1):
  mu = sum_j coef_j phi(x_j), Sigma = a I + Phi^T Z Phi ([AROW13] Sect. 4); ``u``
  the averaging sums, as the first-order models'.
* :class:`KernelOneVsRest`: K binary dual models.
"""
import copy

import numpy as np
from .._lazy import issparse, sparse as sp

from .. import _core
from .._rowdata import as_rows
from .minibatch import BPA_VARIANTS
from .interface import FEATURES, NO_ROW, TOP1, Model, PassResult, counts, nonnegative, positive
from .ovr import OneVsRest
from .scoring import argmax_proba, sign_proba

#: Largest support set scored by dense matrix products (n_SV * n_features values),
#: for dense rows.
DENSE_SUPPORT = 2 ** 24

#: Kernel values per block of the blocked scoring (bounds its memory).
BLOCK = 2 ** 20

#: Rows of room added to an unbudgeted second-order model (its Z grows as n^2).
SO_CHUNK = 256

#: The ridge lam of the projection of a removed support item onto the kept ones
#: (second-order rules on a budget): (K + lam I)^-1, in the kernel's units (a
#: millionth of the RBF kernel's range), keeps the inverse finite when support
#: vectors repeat.
PROJECTION_RIDGE = 1e-6

KERNELS = {"linear": _core.Kernel.KERNEL_LINEAR, "poly": _core.Kernel.KERNEL_POLY,
           "rbf": _core.Kernel.KERNEL_RBF}
POLICIES = {"oldest": _core.BudgetPolicy.BUDGET_OLDEST,
            "smallest": _core.BudgetPolicy.BUDGET_SMALLEST,
            "shrink": _core.BudgetPolicy.BUDGET_SHRINK}


def _row_nnz(rows, order):
    """The stored entries of the rows named in `order`."""
    if rows.sparse:
        return int(np.diff(rows.X.indptr)[order].sum())
    return rows.n_features * len(order)


class DualModel(Model):
    """A support set and the coefficients of a dual rule (see the module)."""

    reads_matrix = True     # the pending rows, the support set: rows.X

    #: coef columns: 1 (binary) or K (top-1)
    width = 1

    def __init__(self, spec):
        self.spec = spec
        self.rule = spec.rule
        self.n_features = spec.n_features
        aux = np.zeros(_core.KAUX_SIZE)
        aux[_core.AUX_S] = 1.0
        self.state = {"sv_data": np.zeros(0), "sv_indices": np.zeros(0),
                      "sv_indptr": np.zeros(1), "sv_sqn": np.zeros(0), "aux": aux}
        self.state.update(self.coef_state(0))

    # -- the support set -----------------------------------------------------
    @property
    def n_support(self):
        return int(self.state["aux"][_core.KAUX_N])

    def support(self):
        """(data, int32 indices, int64 indptr, sqn) of the compact support set."""
        st = self.state
        return (st["sv_data"], st["sv_indices"].astype(np.int32),
                st["sv_indptr"].astype(np.int64), st["sv_sqn"])

    def kernel_args(self):
        spec = self.spec
        return KERNELS[spec.kernel], float(spec.gamma), int(spec.degree), float(spec.coef0)

    def run(self, rows, target, order, bias):
        """One pass in chunks that each fit the room given to the driver."""
        order = np.asarray(order, dtype=np.intp)
        y = np.asarray(target, dtype=np.float64)
        rounds = mistakes = updates = 0
        loss = 0.0
        pos = 0
        while pos < len(order):
            part = order[pos:pos + self.chunk(len(order) - pos)]
            r = PassResult(*self.run_chunk(self.chunk_rows(rows, pos, len(part)), y, part,
                                           bias))
            rounds += r.rounds
            mistakes += r.mistakes
            updates += r.updates
            loss += r.loss_sum
            if r.status != _core.Status.OK:
                return PassResult(rounds, mistakes, updates, loss, r.status, r.pos)
            pos += len(part)
        return PassResult(rounds, mistakes, updates, loss, _core.Status.OK, NO_ROW)

    @staticmethod
    def chunk_rows(rows, pos, n):
        """The rows of the chunk of `n` rounds from round `pos`: the drivers write
        the scores of the counting options from the chunk's first round."""
        clean, scores = rows.view.clean, rows.view.scores
        if scores is None:
            return rows
        return rows.counting(clean, scores[pos:pos + n])

    def chunk(self, remaining):
        return remaining

    #: support vectors one update may add before the budget removes any
    per_update = 1

    #: times a row may join the support set in one pass (a sliding window's B updates)
    repeats = 1

    def buffers(self, rows, part):
        """Working copies of the support set with room for the rows of `part`."""
        n = self.n_support
        cap = n + self.repeats * len(part)
        if self.spec.budget > 0:
            cap = min(cap, self.spec.budget + self.per_update)
        st = self.state
        nnz = len(st["sv_data"])
        room = nnz + self.repeats * _row_nnz(rows, part)
        data = np.zeros(room)
        idx = np.zeros(room, dtype=np.int32)
        data[:nnz] = st["sv_data"]
        idx[:nnz] = st["sv_indices"]
        indptr = st["sv_indptr"].astype(np.int64)
        start = np.zeros(cap, dtype=np.int64)
        length = np.zeros(cap, dtype=np.int64)
        sqn = np.zeros(cap)
        start[:n] = indptr[:-1]
        length[:n] = np.diff(indptr)
        sqn[:n] = st["sv_sqn"]
        aux = st["aux"].copy()
        aux[_core.KAUX_USED] = nnz
        return cap, data, idx, start, length, sqn, aux

    def compact(self, data, idx, start, length, sqn, aux):
        """The state's support set from the driver's buffers (holes removed)."""
        n = int(aux[_core.KAUX_N])
        start, length = start[:n], length[:n]
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(length, out=indptr[1:])
        take = np.repeat(start - indptr[:-1], length) + np.arange(indptr[-1])
        st = self.state
        st["sv_data"] = data[take]
        st["sv_indices"] = idx[take].astype(np.float64)
        st["sv_indptr"] = indptr.astype(np.float64)
        st["sv_sqn"] = sqn[:n].copy()
        aux[_core.KAUX_USED] = indptr[-1]
        st["aux"] = aux

    # -- file shapes ------------------------------------------------------------
    def adopt_shapes(self, shapes):
        """Allocate the state for the shapes of a model file's arrays (`shapes`:
        name -> shape), checking that they describe one support set."""
        try:
            n = shapes["sv_indptr"][0] - 1
            nnz = shapes["sv_data"][0]
        except (KeyError, IndexError, TypeError):
            raise ValueError("the support set's arrays are missing") from None
        want = {"sv_data": (nnz,), "sv_indices": (nnz,), "sv_indptr": (n + 1,),
                "sv_sqn": (n,), "aux": (_core.KAUX_SIZE,), **self.state_shapes(n, shapes)}
        if n < 0 or any(tuple(shapes.get(k, ())) != v for k, v in want.items()):
            raise ValueError(f"the support set's arrays do not fit together ({shapes})")
        self.state = {k: np.zeros(v) for k, v in want.items()}

    def state_shapes(self, n, shapes):
        """The shapes of the arrays beside the support set's, for n support vectors
        (`shapes`: the file's)."""
        return {k: v.shape for k, v in self.coef_state(n).items()}

    def invariants(self):
        st = self.state
        n = len(st["sv_sqn"])
        indptr, ind = st["sv_indptr"], st["sv_indices"]
        aux = st["aux"]
        yield counts("the support vector count aux[3]", aux[_core.KAUX_N:_core.KAUX_N + 1],
                     n, n)
        yield from rows_invariants("sv_", st["sv_data"], ind, indptr, st["sv_sqn"],
                                   self.n_features)
        yield (f"the support set holds {n} vectors, more than budget={self.spec.budget}",
               self.spec.budget == 0 or n <= self.spec.budget)
        yield counts("the count of support vectors added aux[6]",
                     aux[_core.KAUX_M:_core.KAUX_M + 1], n, np.inf)

    def reported(self, bias):
        """The model whose support set and coefficients are reported (itself)."""
        return self

    # -- averaging ----------------------------------------------------------------
    @property
    def averaged(self):
        """Whether the state keeps the averaging sums ``u`` (``average=True``)."""
        return self.spec.dual_average

    def mean_of_rounds(self, c):
        """The coefficients `c` (the last iterate's), or with averaging their mean over
        the rounds, (u_j + P c_j) / t: ``u`` sums them up to P = aux[7] rounds ago (the
        drivers add P c_j before an update changes c), t = aux[2] the rounds."""
        aux = self.state["aux"]
        if self.averaged and aux[_core.AUX_T] > 0:
            return (self.state["u"] + aux[_core.KAUX_P] * c) / aux[_core.AUX_T]
        return c

    def round_invariants(self):
        aux = self.state["aux"]
        yield counts("the round count aux[2]", aux[_core.AUX_T:_core.AUX_T + 1], 0, np.inf)
        yield counts("the rounds since the averaging sums aux[7]",
                     aux[_core.KAUX_P:_core.KAUX_P + 1], 0, aux[_core.AUX_T])

    def weights(self):
        raise AttributeError("a kernel model has no primal weights (coef_); see "
                             "support_vectors_ and dual_coef_")

    def scores_and_v(self, rows, bias, coef, Z=None, a0=0.0):
        """(f(x) per row and coef column, x~^T Sigma x~ per row when Z is given)."""
        # dense rows: one BLAS product per block; CSR rows: the compiled rows (a dense
        # copy of a sparse support set costs more than it saves: 2.4x against 6.3x
        # SVC's speed at 5,000 features, 1% dense, bench_kernel.py)
        if not rows.sparse and self.n_support * self.n_features <= DENSE_SUPPORT:
            return self.blocked_scores(rows, bias, coef, Z, a0)
        data, idx, indptr, sqn = self.support()
        out = np.empty((rows.n_rows, coef.shape[1]))
        out_v = np.empty(rows.n_rows if Z is not None else 0)
        _core.kernel_scores(rows.view, bias, *self.kernel_args(), data, idx, indptr, sqn,
                            np.ascontiguousarray(coef),
                            np.empty((0, 0)) if Z is None else np.ascontiguousarray(Z),
                            a0, out, out_v)
        return self.finite(out, out_v)

    def finite(self, out, out_v):
        """(out, out_v), or ValueError naming the first row whose scores are not finite:
        kernel values beyond float64 (huge features, or a polynomial kernel's degree)
        would give NaN (inf - inf) and a constant prediction."""
        bad = ~np.isfinite(out).all(axis=1)
        if out_v.size:
            bad |= ~np.isfinite(out_v)
        if bad.any():
            raise ValueError(f"{self.spec.name}: row {int(np.argmax(bad))}: "
                             f"{self.nonfinite_reason()}")
        return out, out_v

    def nonfinite_reason(self):
        """Why a row's kernel values are not finite, naming the parameters that can cause it."""
        spec = self.spec
        if spec.kernel == "poly":
            return ("the polynomial kernel (gamma x.x' + coef0)^degree of this example is "
                    f"not finite in float64 with gamma={spec.gamma:.6g}, "
                    f"degree={spec.degree}, coef0={spec.coef0:.6g}: use a smaller degree "
                    "or gamma, or scale the features")
        return ("the kernel values of this example are not finite in float64 (feature "
                "values too large for float64 arithmetic); scale the features")

    def status_detail(self, status):
        return self.nonfinite_reason() if status == _core.Status.NONFINITE_INPUT else ""


    def blocked_scores(self, rows, bias, coef, Z, a0):
        """`scores_and_v` by blocks of rows: the dots with the support set as one matrix
        product (BLAS) with the support set dense, then the kernel elementwise."""
        data, idx, indptr, sqn = self.support()
        S = np.zeros((self.n_support, self.n_features))
        S[np.repeat(np.arange(self.n_support), np.diff(indptr)), idx] = data
        X = rows.X
        out = np.empty((rows.n_rows, coef.shape[1]))
        out_v = np.empty(rows.n_rows if Z is not None else 0)
        step = max(1, BLOCK // max(self.n_support, 1))
        for a in range(0, rows.n_rows, step):
            Xb = X[a:a + step]
            dot = np.asarray(Xb @ S.T)
            xn = np.asarray(Xb.multiply(Xb).sum(axis=1)).ravel() if rows.sparse else \
                np.einsum("ij,ij->i", Xb, Xb)
            K = self.kernel_of(dot, xn[:, None], sqn[None, :], bias)
            with np.errstate(over="ignore", invalid="ignore"):     # reported by `finite`
                out[a:a + step] = K @ coef
                if Z is not None:
                    kxx = self.kernel_of(xn, xn, xn, bias)
                    out_v[a:a + step] = a0 * kxx + np.einsum("ij,jk,ik->i", K, Z, K)
        return self.finite(out, out_v)

    def kernel_of(self, dot, sa, sb, bias):
        """k~ from dots and squared norms (numpy; the forms of `_kernel.pxi`)."""
        spec = self.spec
        with np.errstate(over="ignore", invalid="ignore"):     # reported by `finite`
            return kernel_from_dots(dot, sa, sb, spec.kernel, spec.gamma, spec.degree,
                                    spec.coef0) + bias * bias


def rows_invariants(prefix, data, ind, indptr, sqn, n_features):
    """The invariants of CSR rows kept as the arrays ``{prefix}data``, ``indices``,
    ``indptr`` and ``sqn`` (their squared norms), for :meth:`Model.invariants`."""
    n = len(sqn)
    yield counts(f"{prefix}indptr", indptr, 0, len(data))
    yield (f"{prefix}indptr must start at 0, end at the number of entries and not decrease",
           bool(indptr[0] == 0 and indptr[-1] == len(data) and (np.diff(indptr) >= 0).all()))
    yield counts(f"{prefix}indices", ind, 0, n_features - 1)
    # the row of each entry: empty rows (all-zero vectors) hold none
    rows = np.repeat(np.arange(n), np.diff(indptr).astype(np.int64))
    within = rows[1:] == rows[:-1]
    yield (f"{prefix}indices must increase within each row",
           bool((np.diff(ind)[within] > 0).all()))
    sq = np.bincount(rows, weights=data ** 2, minlength=n)
    yield (f"{prefix}sqn must be the squared norms of the rows",
           bool(np.allclose(sq, sqn, rtol=1e-9, atol=0)))


def kernel_from_dots(dot, sa, sb, kernel, gamma, degree, coef0):
    """k(a, b) from a.b and the squared norms (numpy; the forms of `_kernel.pxi`)."""
    if kernel == "linear":
        return dot
    if kernel == "poly":
        return (gamma * dot + coef0) ** int(degree)
    return np.exp(-gamma * np.maximum(sa + sb - 2.0 * dot, 0.0))


class FirstOrderDual(DualModel):
    """Perceptron, averaged perceptron, PA family and [LMC09] family in dual form."""

    def __init__(self, spec):
        # one column per class for top-1; one-vs-rest's binary models have one
        self.width = spec.n_classes if spec.kind == TOP1 else 1
        self.K = spec.n_classes if spec.kind == TOP1 else None
        super().__init__(spec)

    @property
    def averaged(self):
        return super().averaged or self.rule == _core.Rule.AVG_PERCEPTRON

    def coef_state(self, n):
        return {"coef": np.zeros((n, self.width)),
                "u": np.zeros((n if self.averaged else 0, self.width))}

    def run_chunk(self, rows, y, part, bias):
        cap, data, idx, start, length, sqn, aux = self.buffers(rows, part)
        n, st, spec = self.n_support, self.state, self.spec
        coef = np.zeros((cap, self.width))
        coef[:n] = st["coef"]
        u = np.zeros((cap if self.averaged else 0, self.width))
        u[:len(st["u"])] = st["u"]
        result = _core.kernel_fo_pass(
            rows.view, y, part, bias, *self.kernel_args(), self.rule, spec.C, spec.alpha,
            spec.beta, spec.budget, POLICIES[spec.budget_policy], data, idx, start, length,
            sqn, coef, u, aux)
        self.compact(data, idx, start, length, sqn, aux)
        n = int(aux[_core.KAUX_N])
        st["coef"] = coef[:n].copy()
        st["u"] = u[:n if len(u) else 0].copy()
        return result

    def dual_coef(self, last=False):
        """(n, 1 or K): the coefficients of f, or averaged over the rounds:
        (u_j + P s coef_j) / t (see `kernel_fo_pass`); with `last`, those of the last
        iterate (what the model without averaging has)."""
        st = self.state
        aux = st["aux"]
        c = aux[_core.AUX_S] * st["coef"]
        return c if last else self.mean_of_rounds(c)

    def scores(self, rows, bias, last=False):
        out = self.scores_and_v(rows, bias, self.dual_coef(last))[0]
        return out[:, 0] if self.width == 1 else out

    def last_scores(self, rows, bias):
        return self.scores(rows, bias, last=True)

    def invariants(self):
        yield from super().invariants()
        aux = self.state["aux"]
        yield positive("the scale aux[0]", aux[_core.AUX_S:_core.AUX_S + 1])
        yield nonnegative("the norm aux[1]", aux[_core.AUX_VN2:_core.AUX_VN2 + 1])
        yield from self.round_invariants()


class SecondOrderDual(DualModel):
    """CW-Var, CW-Stdev, AROW, AROW-H in dual form: binary, or top-1 over the stacked
    blocks, whose support items are (x_j, e_{y_j} - e_{c_j}) (``pairs``: (y_j, c_j))."""

    def __init__(self, spec):
        self.K = spec.n_classes if spec.kind == TOP1 else None
        super().__init__(spec)

    def coef_state(self, n):
        st = {"coef": np.zeros((n, 1)), "Z": np.zeros((n, n))}
        if self.spec.budget > 0:
            st["G"] = np.zeros((n, n))
        if self.K:
            st["pairs"] = np.zeros((n, 2))
        if self.averaged:
            st["u"] = np.zeros((n, 1))
        return st

    def state_shapes(self, n, shapes):
        want = super().state_shapes(n, shapes)
        if "G" not in shapes:       # a file written before G was kept: built at the next call
            want.pop("G", None)
        return want

    def chunk(self, remaining):
        if self.spec.budget > 0:
            return remaining
        return min(remaining, max(self.n_support, SO_CHUNK))

    def run_chunk(self, rows, y, part, bias):
        cap, data, idx, start, length, sqn, aux = self.buffers(rows, part)
        n, st, spec = self.n_support, self.state, self.spec
        mu = np.zeros(cap)
        mu[:n] = st["coef"][:, 0]
        Z = np.zeros((cap, cap))
        Z[:n, :n] = st["Z"]
        u = np.zeros(cap if self.averaged else 0)
        if self.averaged:
            u[:n] = st["u"][:, 0]
        G = np.zeros((cap, cap) if spec.budget > 0 else (0, 0))
        if spec.budget > 0:
            G[:n, :n] = st["G"] if "G" in st else self.gram_inverse(bias)
        args = (*self.kernel_args(), self.rule, spec.phi, spec.r, spec.a)
        slots = np.arange(cap, dtype=np.intp)
        support = (spec.budget, POLICIES[spec.budget_policy], data, idx, start, length, sqn,
                   mu, Z, G, slots, PROJECTION_RIDGE)
        if self.K:
            pairs = np.zeros((cap, 2))
            pairs[:n] = st["pairs"]
            result = _core.kernel_so_top1_pass(rows.view, y.astype(np.intp), part, bias,
                                               *args, self.K, *support, pairs, u, aux)
            st["pairs"] = pairs[:int(aux[_core.KAUX_N])].copy()
        else:
            result = _core.kernel_so_pass(rows.view, y, part, bias, *args, *support, u, aux)
        self.compact(data, idx, start, length, sqn, aux)
        n = int(aux[_core.KAUX_N])
        st["coef"] = mu[:n, None].copy()
        st["Z"] = Z[np.ix_(slots[:n], slots[:n])]      # by slot -> in item order
        if spec.budget > 0:
            st["G"] = G[np.ix_(slots[:n], slots[:n])]
        else:
            st.pop("G", None)
        if self.averaged:
            st["u"] = u[:n, None].copy()
        return result

    def gram_inverse(self, bias):
        """(K + lam I)^-1 for the support items' Gram matrix K (top-1: the items'
        (e_i.e_j) k~(x_i, x_j)), lam = `PROJECTION_RIDGE`: what the driver keeps up to
        date on a budget, kept in the state as ``G`` from one call to the next; built
        here (O(n^3), n <= budget) only for a model file written before ``G`` was kept."""
        data, idx, indptr, sqn = self.support()
        n = self.n_support
        S = sp.csr_matrix((data, idx, indptr), shape=(n, self.n_features))
        K = self.kernel_of((S @ S.T).toarray(), sqn[:, None], sqn[None, :], bias)
        if self.K:
            E = self.class_directions()
            K *= E @ E.T
        return np.linalg.inv(K + PROJECTION_RIDGE * np.eye(n))

    def class_directions(self):
        """E (n, K): e_{y_j} - e_{c_j} per support item (top-1)."""
        pairs = self.state["pairs"].astype(np.intp)
        E = np.zeros((len(pairs), self.K))
        E[np.arange(len(pairs)), pairs[:, 0]] += 1.0
        E[np.arange(len(pairs)), pairs[:, 1]] -= 1.0
        return E

    def dual_coef(self, last=False):
        """(n, 1) binary; (n, K) top-1: coef_j (e_{y_j} - e_{c_j}); averaged over the
        rounds (`mean_of_rounds`) unless `last`."""
        coef = self.state["coef"]
        if not last:
            coef = self.mean_of_rounds(coef)
        return coef * self.class_directions() if self.K else coef

    def proba_args(self, rows, bias):
        """(mu.x, x^T Sigma x) per row (top-1: per row and class, with the diagonal
        block Sigma_cc: x^T Sigma_cc x = a k~(x, x) + k^T E_c Z E_c k); averaging: the
        mean's mu with the last Sigma, as the primal rules."""
        Z, a = self.state["Z"], float(self.spec.a)
        if not self.K:
            m, v = self.scores_and_v(rows, bias, self.dual_coef(), Z, a)
            return m[:, 0], v
        E, coef = self.class_directions(), self.dual_coef()
        cols = [self.scores_and_v(rows, bias, coef[:, [c]], E[:, [c]] * Z * E[:, c], a)
                for c in range(self.K)]
        return (np.column_stack([m[:, 0] for m, _ in cols]),
                np.column_stack([v for _, v in cols]))

    def scores(self, rows, bias, last=False):
        out = self.scores_and_v(rows, bias, self.dual_coef(last))[0]
        return out if self.K else out[:, 0]

    def last_scores(self, rows, bias):
        return self.scores(rows, bias, last=True)

    def proba(self, rows, bias):
        if self.K:
            return argmax_proba(*self.proba_args(rows, bias))
        return sign_proba(*self.proba_args(rows, bias))

    def invariants(self):
        yield from super().invariants()
        for key in ("Z", "G"):
            M = self.state.get(key)
            if M is not None:
                yield f"{key} must be symmetric", bool(np.allclose(M, M.T, rtol=1e-9,
                                                                   atol=1e-300))
        yield from self.round_invariants()
        if self.K:
            pairs = self.state["pairs"]
            yield counts("pairs, class codes,", pairs, 0, self.K - 1)
            yield "pairs must name two classes", bool((pairs[:, 0] != pairs[:, 1]).all())


class MiniBatchDual(DualModel):
    """Mini-batch PA, BPA-I / BPA-II / BPA-LS, in dual form: binary, or top-1 over the
    stacked blocks (support items (x_j, tau_j (e_{y_j} - e_{c_j}))): the support set,
    ``coef`` (n, 1 or K), and the rows of an incomplete group carried to the next call
    (``pend``, ``pend_y``, ``pend_w`` their importance weights, ``n_pend``) as in
    :class:`cwkit.models.minibatch.BinaryBPA`; the reported model applies that group
    provisionally (block windows).

    Averaging (``average=True``): the mean over the rounds of the model each round
    reports (the support set, and an incomplete group's provisional step), kept by the
    driver as ``u`` (the support vectors' sums, lazily: aux[7] rounds behind),
    ``pend_u`` (the pending rows' sums) and, without a budget, the rows whose group
    left them out with a nonzero sum (``gh_*``: their CSR rows, squared norms and sums
    ``gh_u``).  On a budget a row that leaves the support set, or never joins it,
    takes its sum with it."""

    def __init__(self, spec):
        self.per_update = spec.batch_size
        self.repeats = spec.batch_size if spec.sliding else 1
        self.K = spec.n_classes if spec.kind == TOP1 else None
        self.width = self.K or 1
        super().__init__(spec)

    def feature_layout(self):
        return {"pend": FEATURES}  # the support set is sparse

    def coef_state(self, n):
        B = self.spec.batch_size
        st = {"coef": np.zeros((n, self.width)), "pend": np.zeros((B, self.n_features)),
              "pend_y": np.zeros(B), "pend_w": np.ones(B), "n_pend": np.zeros(1)}
        if self.averaged:
            st.update({"u": np.zeros((n, self.width)), "pend_u": np.zeros((B, self.width)),
                       "gh_data": np.zeros(0), "gh_indices": np.zeros(0),
                       "gh_indptr": np.zeros(1), "gh_sqn": np.zeros(0),
                       "gh_u": np.zeros((0, self.width))})
        return st

    def state_shapes(self, n, shapes):
        want = super().state_shapes(n, shapes)
        if self.averaged:
            try:
                g, nnz = shapes["gh_indptr"][0] - 1, shapes["gh_data"][0]
            except (KeyError, IndexError, TypeError):
                raise ValueError("the averaged model's rows are missing") from None
            want.update({"gh_data": (nnz,), "gh_indices": (nnz,), "gh_indptr": (g + 1,),
                         "gh_sqn": (g,), "gh_u": (g, self.width)})
        return want

    def run(self, rows, y, order, bias, flush=False):
        st, spec = self.state, self.spec
        y = np.asarray(y, dtype=np.float64)
        order = np.asarray(order, dtype=np.intp)
        n_pend = int(st["n_pend"][0])
        weights = rows.view.weights
        if n_pend:  # the stream goes on: prepend the rows carried over
            given = rows
            rows = as_rows(sp.vstack([sp.csr_matrix(st["pend"][:n_pend]),
                                      sp.csr_matrix(rows.X)], format="csr"))
            clean, scores = given.view.clean, given.view.scores
            if clean is not None or scores is not None:
                # the carried rows were counted before: their clean labels are not read
                rows = rows.counting(None if clean is None else np.concatenate(
                    [st["pend_y"][:n_pend], clean]), scores)
            if weights is not None or (st["pend_w"][:n_pend] != 1.0).any():
                weights = np.concatenate([st["pend_w"][:n_pend], np.ones(given.n_rows)
                                          if weights is None else weights])
                rows = rows.weighted(weights)
            y = np.concatenate([st["pend_y"][:n_pend], y])
            order = np.concatenate([np.arange(n_pend), order + n_pend])
        cap, data, idx, start, length, sqn, aux = self.buffers(rows, order)
        n, w = self.n_support, self.width
        coef = np.zeros((cap, w))
        coef[:n] = st["coef"]
        u, pu, gu = self.sum_buffers(cap, len(order))
        grouping = (BPA_VARIANTS.index(spec.bpa_variant), spec.sliding, spec.batch_size,
                    spec.C, spec.rho, flush, spec.budget, POLICIES[spec.budget_policy],
                    data, idx, start, length, sqn)
        if self.K:
            *result, n_left = _core.kernel_bpa_top1_pass(
                rows.view, y.astype(np.intp), order, n_pend, bias, *self.kernel_args(),
                *grouping, coef, u, pu, gu, aux)
        else:
            flat = [np.ascontiguousarray(a[:, 0]) for a in (coef, u, pu, gu)]
            *result, n_left = _core.kernel_bpa_pass(
                rows.view, y, order, n_pend, bias, *self.kernel_args(), *grouping, *flat,
                aux)
            coef, u, pu, gu = (a[:, None] for a in flat)
        self.compact(data, idx, start, length, sqn, aux)
        n = int(aux[_core.KAUX_N])
        st["coef"] = coef[:n].copy()
        if self.averaged:
            st["u"] = u[:n].copy()
            st["pend_u"] = pu
            self.keep_ghosts(rows, order, gu)
        result = PassResult(*result)
        if result.status == _core.Status.OK:
            tail = order[len(order) - n_left:]
            Xt = rows.X[tail]
            st["pend"][:n_left] = Xt.toarray() if issparse(Xt) else Xt
            st["pend_y"][:n_left] = y[tail]
            st["pend_w"][:n_left] = 1.0 if weights is None else weights[tail]
            st["n_pend"][0] = n_left
        return result._replace(pos=max(int(result.pos) - n_pend, 0)
                               if result.status != _core.Status.OK else NO_ROW)

    def sum_buffers(self, cap, rounds):
        """The driver's averaging sums: u (room as coef), pend_u, and one row of gu per
        round for the rows a group leaves out (none on a budget or in a sliding
        window); empty without averaging."""
        w = self.width
        if not self.averaged:
            return np.zeros((0, w)), np.zeros((0, w)), np.zeros((0, w))
        st = self.state
        u = np.zeros((cap, w))
        u[:len(st["u"])] = st["u"]
        ghosts = self.spec.budget == 0 and not self.spec.sliding
        return u, st["pend_u"].copy(), np.zeros((rounds if ghosts else 0, w))

    def keep_ghosts(self, rows, order, gu):
        """Append the rows the driver left in gu (a nonzero sum) to the gh_* arrays."""
        pos = np.flatnonzero((gu != 0.0).any(axis=1))
        if not len(pos):
            return
        R = sp.csr_matrix(rows.X[order[pos]])
        R.eliminate_zeros()
        R.sort_indices()
        st = self.state
        st["gh_data"] = np.concatenate([st["gh_data"], R.data])
        st["gh_indices"] = np.concatenate([st["gh_indices"], R.indices.astype(np.float64)])
        st["gh_indptr"] = np.concatenate([st["gh_indptr"], st["gh_indptr"][-1] + R.indptr[1:]])
        st["gh_sqn"] = np.concatenate([st["gh_sqn"],
                                       np.asarray(R.multiply(R).sum(axis=1)).ravel()])
        st["gh_u"] = np.concatenate([st["gh_u"], gu[pos]])

    def last_iterate(self, bias):
        """The model of the last round: with rows pending in block mode, a copy with
        their group applied (flushed)."""
        if int(self.state["n_pend"][0]) == 0 or self.spec.sliding:
            return self
        model = copy.deepcopy(self)
        model.run(as_rows(np.zeros((0, self.n_features))), np.zeros(0), np.zeros(0, np.intp),
                  bias, flush=True)
        return model

    def reported(self, bias):
        """The last iterate (`last_iterate`), or with averaging the mean of the rounds'
        models (`AveragedDual`)."""
        if not self.averaged or self.state["aux"][_core.AUX_T] == 0:
            return self.last_iterate(bias)
        st = self.state
        aux = st["aux"]
        n_pend = int(st["n_pend"][0])
        pend = sp.csr_matrix(st["pend"][:n_pend])
        keep = (st["pend_u"][:n_pend] != 0.0).any(axis=1)
        pend = pend[keep]
        pend.sort_indices()
        sums = np.concatenate([st["u"] + aux[_core.KAUX_P] * st["coef"], st["gh_u"],
                               st["pend_u"][:n_pend][keep]])
        ptr = [st["sv_indptr"], st["gh_indptr"][1:] + st["sv_indptr"][-1],
               pend.indptr[1:] + st["sv_indptr"][-1] + st["gh_indptr"][-1]]
        return AveragedDual(self, np.concatenate([st["sv_data"], st["gh_data"], pend.data]),
                            np.concatenate([st["sv_indices"], st["gh_indices"],
                                            pend.indices.astype(np.float64)]),
                            np.concatenate(ptr),
                            np.concatenate([st["sv_sqn"], st["gh_sqn"],
                                            np.asarray(pend.multiply(pend).sum(axis=1))
                                            .ravel()]),
                            sums / aux[_core.AUX_T])

    def dual_coef(self):
        return self.state["coef"]

    def scores(self, rows, bias):
        model = self.reported(bias)
        out = model.scores_and_v(rows, bias, model.dual_coef())[0]
        return out if self.K else out[:, 0]

    def last_scores(self, rows, bias):
        model = self.last_iterate(bias)
        out = model.scores_and_v(rows, bias, model.dual_coef())[0]
        return out if self.K else out[:, 0]

    def invariants(self):
        yield from super().invariants()
        st, B = self.state, self.spec.batch_size
        yield counts("n_pend, the number of rows carried over,", st["n_pend"], 0, B - 1)
        yield nonnegative("pend_w, the weights of the rows carried over,", st["pend_w"])
        pend_y = st["pend_y"][:int(st["n_pend"][0])]
        if self.K:
            yield counts("pend_y, class codes,", pend_y, 0, self.K - 1)
        else:
            yield "pend_y must be -1 or +1", bool((np.abs(pend_y) == 1).all())
        if self.averaged:
            yield from self.round_invariants()
            yield from rows_invariants("gh_", st["gh_data"], st["gh_indices"],
                                       st["gh_indptr"], st["gh_sqn"], self.n_features)


class AveragedDual(DualModel):
    """The averaged model of a :class:`MiniBatchDual` (what it reports and scores): its
    own support set (the support vectors, the rows a group left out, the pending
    rows) and the mean of their coefficients over the rounds."""

    def __init__(self, model, data, indices, indptr, sqn, coef):
        self.spec = model.spec
        self.rule = model.rule
        self.n_features = model.n_features
        self.width = model.width
        aux = np.zeros(_core.KAUX_SIZE)
        aux[_core.KAUX_N] = len(sqn)
        self.state = {"sv_data": data, "sv_indices": indices, "sv_indptr": indptr,
                      "sv_sqn": sqn, "aux": aux, "coef": coef}

    def coef_state(self, n):
        return {"coef": np.zeros((n, self.width))}

    def dual_coef(self):
        return self.state["coef"]

    def scores(self, rows, bias):
        out = self.scores_and_v(rows, bias, self.dual_coef())[0]
        return out if self.width > 1 else out[:, 0]


class KernelOneVsRest(OneVsRest):
    """K binary dual models (``multiclass="ovr"``); their state arrays are replaced
    as their support sets grow, so ``state`` is read from them each time."""

    def __init__(self, spec, binary):
        self.K = spec.n_classes
        self.models = [binary(spec) for _ in range(spec.n_classes)]

    @property
    def state(self):
        return {f"{c}/{key}": arr for c, model in enumerate(self.models)
                for key, arr in model.state.items()}

    def weights(self):
        return self.models[0].weights()

    def scores(self, rows, bias):
        return np.column_stack([model.scores(rows, bias) for model in self.models])

    def last_scores(self, rows, bias):
        return np.column_stack([model.last_scores(rows, bias) for model in self.models])

    def proba(self, rows, bias):
        """P(class c has the largest score) from the K independent Gaussian scores."""
        M, V = zip(*(model.proba_args(rows, bias) for model in self.models))
        return argmax_proba(np.column_stack(M), np.column_stack(V))

    def adopt_shapes(self, shapes):
        for c, model in enumerate(self.models):
            prefix = f"{c}/"
            model.adopt_shapes({k[len(prefix):]: v for k, v in shapes.items()
                                if k.startswith(prefix)})
