"""Top-k multi-class updates: k-best MIRA for the PA family, S000's AROW (FORMULAS.md Sect. 4).

Each example's update solves a small dual QP with Hildreth's method
(``hildreth_solve`` of ``cwkit/_qp.pxi``, the routine behind
:func:`cwkit.qp.hildreth`) inside the compiled driver, so a pass makes no
per-example Python call.  PA-LS top-k (equality constraints, every round) runs
the multi-class mini-batch driver with groups of one row
(:class:`cwkit.minibatch.MulticlassBPA`).
"""

from . import _core
from . import _engines as E
from . import multiclass as M

R = _core.Rule
TOPK_RULES = {R.PA: "pa", R.PA1: "pa1", R.PA2: "pa2", R.PA_LS: "pa-ls", R.AROW: "arow"}


class TopKPA(M.FirstOrder):
    """PA / PA-I / PA-II with the k highest-scoring competitors (state of top1)."""

    def __init__(self, rule, hyper, n_classes, n_features, kk, shared):
        super().__init__(rule, hyper, n_classes, n_features, False, False)
        self.kk = kk
        self.shared = shared

    def run(self, rows, codes, order, bias):
        st = self.state
        return _core.mc_topk_pa_pass(*self._args(rows, codes, order), bias, self.kk, st["v"],
                                     st["aux"], self.rule, self.hyper["C"], self.shared)


class _TopKAROW:
    """AROW with the k highest-scoring competitors; Sigma updated with f or Delta_1."""

    def run(self, rows, codes, order, bias):
        st, h = self.state, self.hyper
        return _core.mc_topk_arow_pass(*self._args(rows, codes, order), bias, self.kk,
                                       st["mu"], st["Sigma" if self.full else "sigma"],
                                       self.full, h["r"], h["direct"], self.sum_update)


class TopKAROWDiagonal(_TopKAROW, M.Diagonal):
    full = False

    def __init__(self, rule, hyper, n_classes, n_features, kk, sum_update):
        super().__init__(rule, hyper, n_classes, n_features, False, sum_update)
        self.kk = kk


class TopKAROWFull(_TopKAROW, M.Full):
    full = True

    def __init__(self, rule, hyper, n_classes, n_features, kk, sum_update):
        super().__init__(rule, hyper, n_classes, n_features, False, sum_update)
        self.kk = kk


def make_topk_model(est, engine_cls, rule, hyper, n_classes, n_features):
    """The ``multiclass="topk"`` model of `est` (PA, PA-I, PA-II or AROW)."""
    if rule not in TOPK_RULES:
        raise ValueError(
            f"{type(est).__name__}: multiclass='topk' is defined for the PA family (variant "
            "'pa', 'pa1', 'pa2', 'pa-ls') and AROW with the squared hinge; use "
            "multiclass='top1' or 'ovr' for this rule")
    kk = min(int(est.k), n_classes - 1)
    if rule == R.AROW:
        sum_update = getattr(est, "sigma_update", "auto") in ("auto", "sum")
        cls = TopKAROWFull if engine_cls is E.Full else TopKAROWDiagonal
        return cls(rule, hyper, n_classes, n_features, kk, sum_update)
    slack = getattr(est, "slack", "per-constraint")
    if slack == "shared" and rule not in (R.PA2, R.PA_LS):
        raise ValueError(f"{type(est).__name__}: slack='shared' is the squared-slack "
                         "structure of PA-II and PA-LS; use variant='pa2' or 'pa-ls', or "
                         "slack='per-constraint'")
    if rule == R.PA_LS:
        # PA-LS top-k is mini-batch PA-LS with groups of one row (S002 eqs. 7-9, 19)
        from .minibatch import multiclass_bpa
        return multiclass_bpa(est._name(), "bpa-ls", hyper["C"], "half", 1, False, n_classes,
                              n_features, kk, slack == "shared")
    return TopKPA(rule, hyper, n_classes, n_features, kk, slack == "shared")
