"""Mini-batch Passive-Aggressive ([GPA13] Sect. 3.2): the binary and multi-class models.

Both run a compiled driver (``cwkit._core.bpa_pass``, ``mc_bpa_pass``) that
solves each group's dual with Hildreth's method; groups span calls, so the
state carries the rows of an incomplete group (see :class:`cwkit.MiniBatchPA`).
"""
import numpy as np

from .._lazy import issparse
from .._lazy import sparse as sp
from .. import _core
from .._rowdata import as_rows
from .average import mean_of_rounds, round_count
from .binary import NO_SUM, BinaryModel
from .interface import FEATURES, ROWS, ROWS_T, TOP1, PassResult, counts, nonnegative
from .scoring import mc_row_scores

#: The rules, in the order of the drivers' `variant` argument.
BPA_VARIANTS = ("bpa1", "bpa2", "bpa-ls")
_RHO = {"half": 0.5, "inverse": 1.0}


def bpa_rho(C, rho="half"):
    """Ridge ρ of BPA-II / BPA-LS: ``1/(2C)`` (``"half"``) or ``1/C`` (``"inverse"``)."""
    if not (np.isfinite(C) and C > 0):
        raise ValueError(f"C must be a finite number > 0, got {C!r}")
    if rho not in _RHO:
        raise ValueError(f"rho must be 'half' (1/(2C)) or 'inverse' (1/C), got {rho!r}")
    return _RHO[rho] / C


class BinaryBPA(BinaryModel):
    """State of mini-batch PA: the model and the rows carried to the next call.

    ``w0`` is the model after the last joint update; ``w`` (reported) is ``w0``
    updated provisionally with the pending rows of an incomplete group (block
    mode; equal to ``w0`` in sliding mode).  ``pend``/``pend_y`` hold the rows
    carried over (block: the incomplete group; sliding: the last B - 1 rows),
    ``pend_w`` their importance weights, ``n_pend[0]`` their number.  Averaging: ``u``,
    the lazy sum of the reported
    ``w`` after every round (the driver keeps ``w`` up to date row by row), then
    the round count T.
    """

    reads_matrix = True     # the pending rows, the support set: rows.X

    def feature_layout(self):
        return {"w": ROWS, "w0": ROWS, "pend": FEATURES, "u": ROWS_T}

    def initial_state(self, D):
        B = self.spec.batch_size
        st = {"w": np.zeros(D), "w0": np.zeros(D), "pend": np.zeros((B, D - 1)),
              "pend_y": np.zeros(B), "pend_w": np.ones(B), "n_pend": np.zeros(1)}
        if self.spec.average:
            st["u"] = np.zeros(D + 1)
        return st

    def _pass(self, rows, y, order, n_seen, bias, w, flush):
        """One driver pass: its PassResult and the number of rows left pending
        (averaging when not `flush`)."""
        spec, st = self.spec, self.state
        u = NO_SUM if flush else st.get("u", NO_SUM)
        *result, n_left = _core.bpa_pass(rows.view, y, order, n_seen, bias, w,
                                         BPA_VARIANTS.index(spec.bpa_variant), spec.sliding,
                                         spec.batch_size, spec.C, spec.rho, flush, st["w"], u)
        return PassResult(*result), n_left

    def run(self, rows, y, order, bias):
        st = self.state
        n_pend = int(st["n_pend"][0])
        weights = rows.view.weights
        if n_pend:  # the stream goes on: prepend the rows carried over
            X = sp.vstack([sp.csr_matrix(st["pend"][:n_pend]), sp.csr_matrix(rows.X)],
                          format="csr")
            clean = rows.view.clean     # (the rows carried over are not counted again)
            if weights is not None or (st["pend_w"][:n_pend] != 1.0).any():
                weights = np.concatenate([st["pend_w"][:n_pend], np.ones(rows.n_rows)
                                          if weights is None else weights])
            rows = as_rows(X).counting(
                None if clean is None else np.concatenate([np.zeros(n_pend), clean]),
                rows.view.scores).weighted(weights)
            y = np.concatenate([st["pend_y"][:n_pend], y])
            order = np.concatenate([np.arange(n_pend), np.asarray(order) + n_pend])
        result, n_left = self._pass(rows, y, order, n_pend, bias, st["w0"], False)
        status, pos = result.status, result.pos
        tail = order[len(order) - n_left:]
        if status == _core.Status.OK:
            Xt = rows.X[tail]
            st["pend"][:n_left] = Xt.toarray() if issparse(Xt) else Xt
            st["pend_y"][:n_left] = y[tail]
            st["pend_w"][:n_left] = 1.0 if weights is None else weights[tail]
            st["n_pend"][0] = n_left
        if status == _core.Status.OK and not self.spec.average:
            # (averaging: the driver has kept w, the reported model, row by row)
            st["w"][:] = st["w0"]
            if n_left and not self.spec.sliding:
                # the incomplete group, applied provisionally as the stream's last group
                pend_w = st["pend_w"][:n_left]
                provisional, _ = self._pass(
                    as_rows(st["pend"][:n_left]).weighted(
                        None if (pend_w == 1.0).all() else np.ascontiguousarray(pend_w)),
                    st["pend_y"][:n_left], np.arange(n_left), n_left, bias, st["w"], True)
                status = provisional.status
                if status != _core.Status.OK:
                    pos = tail[provisional.pos]
        pos = max(int(pos) - n_pend, 0)  # a row of this call
        return result._replace(status=status, pos=pos)

    def weights(self):
        return mean_of_rounds(self.state, self.last_iterate(self.state))

    def last_weights(self):
        return self.last_iterate(self.state)

    @staticmethod
    def last_iterate(state):
        """The reported model of `state` (the last iterate), shaped as its lazy sum
        ``u`` (without T)."""
        return state["w"]

    def invariants(self):
        st, B = self.state, self.spec.batch_size
        yield counts("n_pend, the number of rows carried over,", st["n_pend"], 0, B - 1)
        yield self.pending_labels(st["pend_y"][:int(st["n_pend"][0])])
        yield nonnegative("pend_w, the weights of the rows carried over,", st["pend_w"])
        yield from round_count(st)

    def pending_labels(self, pend_y):
        """The invariant of the labels of the rows carried over: +-1."""
        return "pend_y must be -1 or +1", bool((np.abs(pend_y) == 1).all())

    def status_detail(self, status):
        if status != _core.Status.QP_NOT_CONVERGED:
            return ""
        return ("the dual of the group ending at this row was not solved to its KKT "
                "tolerance: it is numerically singular, the ridge "
                f"rho = {self.spec.rho:.3g} being below the rounding level of the "
                "products x_j.x_k; scale the features (or use a smaller C)")


class MulticlassBPA(BinaryBPA):
    """Multi-class mini-batch PA on the 1-of-k feature map, `kk` competitors per row.

    The state of :class:`BinaryBPA` with (D, K) weights (class c's block is
    column c, the intercept the last row), run by ``cwkit._core.mc_bpa_pass``;
    ``pend_y`` holds the class codes of the rows carried over.  ``weights`` is
    (K, D) and ``scores`` (n, K).
    """

    def __init__(self, spec):
        self.K = spec.n_classes
        self.kk = 1 if spec.strategy == TOP1 else spec.kk
        self.shared = spec.slack == "shared"
        super().__init__(spec)

    def feature_layout(self):
        return {"w": ROWS, "w0": ROWS, "pend": FEATURES, "u": ((0, self.K, 1),)}

    def initial_state(self, D):
        B, K = self.spec.batch_size, self.K
        st = {"w": np.zeros((D, K)), "w0": np.zeros((D, K)), "pend": np.zeros((B, D - 1)),
              "pend_y": np.zeros(B), "pend_w": np.ones(B), "n_pend": np.zeros(1)}
        if self.spec.average:
            st["u"] = np.zeros(D * K + 1)
        return st

    def _pass(self, rows, y, order, n_seen, bias, w, flush):
        # the class scores of a row are not reported: mistakes are counted in the driver
        spec, st = self.spec, self.state
        u = NO_SUM if flush else st.get("u", NO_SUM)
        *result, n_left = _core.mc_bpa_pass(rows.view, np.ascontiguousarray(y, dtype=np.intp),
                                            np.ascontiguousarray(order, dtype=np.intp), n_seen,
                                            bias, w, BPA_VARIANTS.index(spec.bpa_variant),
                                            spec.sliding, spec.batch_size, self.kk, spec.C,
                                            spec.rho, self.shared, flush, st["w"], u)
        return PassResult(*result), n_left

    def weights(self):
        return super().weights().T

    def last_weights(self):
        return self.state["w"].T

    def last_scores(self, rows, bias):
        return mc_row_scores(rows, self.state["w"], bias)[0]

    def pending_labels(self, pend_y):
        return counts("pend_y, class codes,", pend_y, 0, self.K - 1)

    def scores(self, rows, bias):
        return mc_row_scores(rows, np.ascontiguousarray(self.weights().T), bias)[0]
