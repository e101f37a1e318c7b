"""The L1-norm-constrained PA ([LMC09] eq. 3.9): binary and multi-class top-1 / top-k.

The update is solved exactly inside the compiled drivers ``l1pa_pass``
(``_l1pa.pxi``) and ``mc_l1pa_pass`` (``_mc_l1pa.pxi``); see
:class:`cwkit.L1ConstrainedPA`.
"""
import numpy as np

from .. import _core
from .average import mean_of_rounds, round_count
from .binary import NO_SUM, BinaryModel
from .interface import ROWS, ROWS_T, TOP1, PassResult
from .multiclass import MulticlassModel


def infeasible_detail(spec, status):
    """The explanation of an update that no w in the L1 ball can make."""
    if status != _core.Status.INFEASIBLE:
        return ""
    return (f"beta * ||x||_inf <= 1 (beta = {spec.beta:g}): no w with ||w||_1 <= beta "
            "has margin 1 on this example; increase beta above 1/||x||_inf (x includes "
            "the intercept feature 1 when fit_intercept=True)")


def in_ball(spec, w):
    """The invariant ||w||_1 <= beta (up to the rounding of the exact update)."""
    return (f"the weights must lie in the L1 ball ||w||_1 <= beta = {spec.beta:g}",
            bool(np.abs(w).sum() <= spec.beta * (1.0 + 1e-9)))


class BinaryL1PA(BinaryModel):
    """The weight vector w (length D, intercept last)."""

    def feature_layout(self):
        return {"w": ROWS, "u": ROWS_T}

    def initial_state(self, D):
        if self.spec.average:   # the lazy sum of w, then the round count T
            return {"w": np.zeros(D), "u": np.zeros(D + 1)}
        return {"w": np.zeros(D)}

    def run(self, rows, y, order, bias):
        return PassResult(*_core.l1pa_pass(rows.view, y, order, bias, self.state["w"],
                                           self.spec.beta, self.state.get("u", NO_SUM)))

    def weights(self):
        return mean_of_rounds(self.state, self.last_weights())

    def last_weights(self):
        return self.last_iterate(self.state)

    @staticmethod
    def last_iterate(state):
        """The last iterate of `state`, shaped as its lazy sum ``u`` (without T)."""
        return state["w"]

    def invariants(self):
        yield in_ball(self.spec, self.state["w"])
        yield from round_count(self.state)

    def status_detail(self, status):
        return infeasible_detail(self.spec, status)


class MulticlassL1PA(MulticlassModel):
    """Multi-class top-1 (``kk = 0``) or top-k (``kk`` competitors): W (D, K),
    intercept last row."""

    def __init__(self, spec):
        super().__init__(spec)
        self.kk = 0 if spec.strategy == TOP1 else spec.kk

    def feature_layout(self):
        return {"W": ROWS, "u": ((0, self.K, 1),)}

    def initial_state(self, K, D):
        if self.spec.average:   # the lazy sum of W (D K), then the round count T
            return {"W": np.zeros((D, K)), "u": np.zeros(D * K + 1)}
        return {"W": np.zeros((D, K))}

    def run(self, rows, codes, order, bias):
        return PassResult(*_core.mc_l1pa_pass(
            *self._args(rows, codes, order), bias, self.state["W"], self.spec.beta, self.kk,
            self.state.get("u", NO_SUM)))

    def weights_dk(self):
        return mean_of_rounds(self.state, self.last_weights_dk())

    def last_weights_dk(self):
        return self.last_iterate(self.state)

    @staticmethod
    def last_iterate(state):
        """The last iterate of `state`, shaped as its lazy sum ``u`` (without T)."""
        return state["W"]

    def invariants(self):
        yield in_ball(self.spec, self.state["W"])
        yield from round_count(self.state)

    def status_detail(self, status):
        return infeasible_detail(self.spec, status)
