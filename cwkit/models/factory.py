"""The one model factory: a ModelSpec in, the model of its shape and case out.

The choice "shape of state x (binary | top1 | topk | ovr)" is made here, in
one table, from the spec alone.  A new shape of state or a new way of
training is a module of ``cwkit.models`` whose classes implement
:class:`cwkit.models.interface.Model`, plus its rows in ``TABLE``.
"""
from functools import partial

from . import binary, kernel, l1, minibatch, multiclass, topk
from .rules import REGRESSION_RULES, TOPK_RULES, names_of
from .interface import BINARY, OVR, REGRESSION, TOP1, TOPK
from .ovr import OneVsRest
from .size import check_size

#: (shape, case) -> the callable building the model from its spec.
TABLE = {
    ("first_order", BINARY): binary.FirstOrder,
    ("first_order", TOP1): multiclass.FirstOrder,
    ("first_order", OVR): multiclass.FirstOrder,
    ("first_order", TOPK): topk.pa_family,
    ("diagonal", BINARY): binary.Diagonal,
    ("diagonal", TOP1): multiclass.Diagonal,
    ("diagonal", OVR): multiclass.Diagonal,
    ("diagonal", TOPK): topk.TopKAROWDiagonal,
    ("full", BINARY): binary.Full,
    ("full", TOP1): multiclass.Full,
    ("full", OVR): multiclass.Full,
    ("full", TOPK): topk.TopKAROWFull,
    ("sop_diagonal", BINARY): binary.SOPDiagonal,
    ("sop_diagonal", TOP1): multiclass.SOPDiagonal,
    ("sop_diagonal", OVR): multiclass.SOPDiagonal,
    ("adagrad", BINARY): binary.AdaGrad,
    ("adagrad", TOP1): multiclass.AdaGrad,
    ("adagrad", OVR): multiclass.AdaGrad,
    ("minibatch", BINARY): minibatch.BinaryBPA,
    ("minibatch", TOP1): minibatch.MulticlassBPA,
    ("minibatch", TOPK): minibatch.MulticlassBPA,
    ("minibatch", OVR): partial(OneVsRest, binary=minibatch.BinaryBPA),
    ("l1", BINARY): l1.BinaryL1PA,
    ("l1", TOP1): l1.MulticlassL1PA,
    ("l1", TOPK): l1.MulticlassL1PA,
    ("l1", OVR): partial(OneVsRest, binary=l1.BinaryL1PA),
    ("kernel_first_order", BINARY): kernel.FirstOrderDual,
    ("kernel_first_order", TOP1): kernel.FirstOrderDual,
    ("kernel_first_order", OVR): partial(kernel.KernelOneVsRest, binary=kernel.FirstOrderDual),
    ("kernel_minibatch", BINARY): kernel.MiniBatchDual,
    ("kernel_minibatch", TOP1): kernel.MiniBatchDual,
    ("kernel_minibatch", OVR): partial(kernel.KernelOneVsRest, binary=kernel.MiniBatchDual),
    ("kernel_second_order", BINARY): kernel.SecondOrderDual,
    ("kernel_second_order", TOP1): kernel.SecondOrderDual,
    ("kernel_second_order", OVR): partial(kernel.KernelOneVsRest,
                                          binary=kernel.SecondOrderDual),
}

#: The shapes of state whose binary drivers also run the regression task.
REGRESSION_SHAPES = frozenset({"first_order", "diagonal", "full"})


def build_model(spec):
    """The model of `spec` (a :class:`cwkit.models.interface.ModelSpec`).

    Raises
    ------
    ValueError
        If the rule has no form for the requested strategy (top-k of a rule
        outside the PA family and AROW) or task (regression of a rule outside
        ``REGRESSION_RULES``, or of another shape than ``REGRESSION_SHAPES``), or
        the spec combines options that do not go together.
    cwkit.models.size.ModelSizeError
        If the state would exceed the memory available (checked before
        anything is allocated).
    """
    build = TABLE.get((spec.shape, spec.kind))
    if spec.task == REGRESSION and (spec.shape not in REGRESSION_SHAPES
                                    or spec.rule not in REGRESSION_RULES):
        raise ValueError(f"{spec.owner}: {spec.name or spec.shape} has no regression form; "
                         f"the rules with one are {', '.join(names_of(REGRESSION_RULES))}")
    if spec.kind == TOPK and (build is None or (spec.rule is not None
                                                 and spec.rule not in TOPK_RULES)):
        raise ValueError(
            f"{spec.owner}: multiclass='topk' is defined for the PA family (variant "
            "'pa', 'pa1', 'pa2', 'pa-ls') and AROW with the squared hinge; use "
            "multiclass='top1' or 'ovr' for this rule")
    check_size(spec)
    return build(spec)
