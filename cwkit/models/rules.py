"""The rule table: what the Python layers know about each rule of the compiled core.

One frozen :class:`RuleInfo` per member of ``cwkit._core.Rule``, in ``TABLE``;
the sets the models consult (``GAUSSIAN_RULES``, ``SCALED_RULES``,
``TOPK_RULES``, ...) are derived from it, so that a rule's facts are written
once.  ``tests/test_rules.py`` checks that every ``Rule`` has a row whose
registry name builds an estimator of that rule and has a reference step
(docs/architecture.md, "Adding a rule").
"""
from dataclasses import dataclass

from .. import _core

_R = _core.Rule


@dataclass(frozen=True)
class RuleInfo:
    """The facts of one rule.

    Attributes
    ----------
    rule : cwkit._core.Rule
    name : str
        Its registry name (``cwkit.make(name)``; the reference's name in the tests).
    shapes : tuple of str
        The shapes of state (``ModelSpec.shape``) whose drivers run it.
    gaussian : bool
        Its state is a Gaussian over weights (mean and covariance).
    scaled : bool
        A first-order rule that shrinks w = s v (s != 1): averaging it keeps the sum
        of the scales in the slot AUX_SSUM.
    topk : bool
        It has a multi-class top-k form (``multiclass="topk"``).
    squared_slack : bool
        Its slacks are squared, so that one slack can be shared by all top-k
        constraints (``slack="shared"``).
    may_collapse : {"never", "always", "direct"}
        Whether the variances of its diagonal form can reach 0 in floating point
        (always, or with the subtractive ``diag_update="direct"`` only); its
        driver then notes the row (``cwkit.models.collapse``).  The compiled
        ``may_collapse`` of ``cwkit/_binary.pxi`` says the same.
    sigma_sum : bool
        Its multi-class covariance update may take the direction
        f = sum_y f(x, y) (``sigma_update="sum"``).
    regression : bool
        It has a regression form (``cwkit.make_regressor``): its step on the
        epsilon-insensitive or squared loss of a real target, with the drivers of
        its shapes "first_order", "diagonal" and "full".
    """

    rule: object
    name: str
    shapes: tuple
    gaussian: bool = False
    scaled: bool = False
    topk: bool = False
    squared_slack: bool = False
    may_collapse: str = "never"
    sigma_sum: bool = False
    regression: bool = False


_FO = ("first_order", "kernel_first_order")
_SO = ("diagonal", "full", "kernel_second_order")

#: One row per ``cwkit._core.Rule``, in the enum's order.
TABLE = {info.rule: info for info in (
    RuleInfo(_R.PERCEPTRON, "perceptron", _FO),
    RuleInfo(_R.AVG_PERCEPTRON, "avg-perceptron", _FO),
    RuleInfo(_R.PA, "pa", _FO, topk=True, regression=True),
    RuleInfo(_R.PA1, "pa1", _FO, topk=True, regression=True),
    RuleInfo(_R.PA2, "pa2", _FO, topk=True, squared_slack=True, regression=True),
    RuleInfo(_R.PA_LS, "pa-ls", _FO, topk=True, squared_slack=True),
    RuleInfo(_R.REG_PA, "reg-pa", _FO, scaled=True),
    RuleInfo(_R.L2_PA, "l2-pa", _FO, scaled=True),
    RuleInfo(_R.SOFT_REG_PA, "soft-reg-pa", _FO, scaled=True),
    RuleInfo(_R.CW_VAR, "cw", _SO, gaussian=True, may_collapse="always"),
    RuleInfo(_R.CW_STDEV, "cw-stdev", _SO, gaussian=True, may_collapse="always"),
    RuleInfo(_R.AROW, "arow", _SO, gaussian=True, topk=True, may_collapse="direct",
             sigma_sum=True, regression=True),
    RuleInfo(_R.AROW_H, "arow-h", _SO, gaussian=True, may_collapse="direct", sigma_sum=True),
    RuleInfo(_R.SOP, "sop", ("full", "sop_diagonal")),
    RuleInfo(_R.ADAGRAD, "adagrad", ("adagrad",)),
    RuleInfo(_R.SCW1, "scw1", _SO[:2], gaussian=True, may_collapse="always"),
    RuleInfo(_R.SCW2, "scw2", _SO[:2], gaussian=True, may_collapse="always"),
    RuleInfo(_R.NHERD, "nherd", _SO[:2], gaussian=True, may_collapse="direct"),
)}

#: The rule registered under each name.
RULE_OF = {info.name: rule for rule, info in TABLE.items()}


def _rules(fact):
    return frozenset(rule for rule, info in TABLE.items() if getattr(info, fact))


#: Rules whose state is a Gaussian over weights (CW, AROW).
GAUSSIAN_RULES = _rules("gaussian")
#: The first-order rules that shrink w = s v (averaging keeps AUX_SSUM).
SCALED_RULES = _rules("scaled")
#: The rules with a top-k form.
TOPK_RULES = _rules("topk")
#: The rules whose slacks are squared, so that one slack can be shared by all constraints.
SQUARED_SLACK_RULES = _rules("squared_slack")
#: The rules whose multi-class covariance update may use f = sum_y f(x, y).
SIGMA_SUM_RULES = _rules("sigma_sum")
#: The rules with a regression form (PA, PA-I, PA-II, AROW).
REGRESSION_RULES = _rules("regression")


def names_of(rules):
    """The registry names of `rules`, in the table's order (for messages)."""
    return [info.name for rule, info in TABLE.items() if rule in rules]
