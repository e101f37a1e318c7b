"""Top-k multi-class updates: k-best MIRA for the PA family ([CS03], [PA06]), AROW's top-k.

Each example's update solves a small dual QP with Hildreth's method ([CZ97];
``hildreth_solve`` of ``cwkit/_qp.pxi``, the routine behind
:func:`cwkit.qp.hildreth`) inside the compiled driver, so a pass makes no
per-example Python call.  PA-LS top-k (equality constraints, every round) is
the multi-class mini-batch model with groups of one row
(:class:`cwkit.models.minibatch.MulticlassBPA`, [GPA13] eq. 19).
"""
from dataclasses import replace

import numpy as np

from .. import _core
from . import multiclass
from .interface import PassResult
from .minibatch import MulticlassBPA, bpa_rho
from .rules import SQUARED_SLACK_RULES


class TopKPA(multiclass.FirstOrder):
    """PA / PA-I / PA-II with the k highest-scoring competitors (state of top1)."""

    def __init__(self, spec):
        super().__init__(spec)
        self.kk = spec.kk
        self.shared = spec.slack == "shared"

    def run(self, rows, codes, order, bias):
        st = self.named_state()
        return PassResult(*_core.mc_topk_pa_pass(
            *self._args(rows, codes, order), bias, self.kk, st["v"], st["aux"], self.rule,
            self.spec.C, self.shared, st["u"]))


def pa_family(spec):
    """The top-k model of PA, PA-I, PA-II ([PA06] Sect. 7) or PA-LS."""
    if spec.slack == "shared" and spec.rule not in SQUARED_SLACK_RULES:
        raise ValueError(f"{spec.owner}: slack='shared' is the squared-slack "
                         "structure of PA-II and PA-LS; use variant='pa2' or 'pa-ls', or "
                         "slack='per-constraint'")
    if spec.rule == _core.Rule.PA_LS:
        # PA-LS top-k is mini-batch PA-LS with groups of one row ([GPA13] eqs. 7-9, 19)
        return MulticlassBPA(replace(spec, shape="minibatch", bpa_variant="bpa-ls",
                                     rho=bpa_rho(spec.C, "half"), batch_size=1,
                                     sliding=False))
    return TopKPA(spec)


class _TopKAROW:
    """AROW with the k highest-scoring competitors; Sigma updated with f or Delta_1
    ([AROW13] Fig. 2, eqs. 25-30)."""

    def __init__(self, spec):
        super().__init__(spec)
        self.kk = spec.kk

    @staticmethod
    def sigma_sum(spec):
        return spec.sigma_update in ("auto", "sum")

    def run(self, rows, codes, order, bias):
        st, spec = self.named_state(), self.spec
        if not spec.average:
            u = np.empty((0, self.K))
        else:               # full: the flat (K D + 1) lazy sum as one row
            u = st["u"].reshape(1, -1) if self.full else st["u"]
        return PassResult(*_core.mc_topk_arow_pass(
            *self._args(rows, codes, order), bias, self.kk, st["mu"],
            st["Sigma" if self.full else "sigma"], self.full, spec.r, spec.direct,
            self.sum_update, u))


class TopKAROWDiagonal(_TopKAROW, multiclass.Diagonal):
    full = False


class TopKAROWFull(_TopKAROW, multiclass.Full):
    full = True
