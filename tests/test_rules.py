"""The rule table (``cwkit.models.rules``) is complete and true.

Every ``cwkit._core.Rule`` has a row; its registry name builds an estimator of
that rule in one of the row's shapes and has a plain numpy reference step; and
each derived set says what the models do: top-k and the shared slack accepted
exactly for the rules the table says, the Gaussian rules the estimators with a
confidence, the scaled rules the ones averaging keeps the sum of the scales for,
``sigma_update`` a parameter of the rules allowed the "sum" update.
docs/architecture.md's "Adding a rule" is kept true by these tests.
"""
import numpy as np
import pytest
import reference

import cwkit
from cwkit import _core, registry
from cwkit.base import GaussianMixin
from cwkit.models import rules

RULES = list(_core.Rule)
X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.5], [0.2, 1.0], [0.5, 0.5], [1.0, 1.0]])
Y2 = np.array([0, 1, 0, 1, 0, 1])
Y3 = np.array([0, 1, 2, 1, 0, 2])


def test_every_rule_has_one_row_with_its_own_name():
    assert list(rules.TABLE) == RULES
    for rule, info in rules.TABLE.items():
        assert info.rule == rule
    assert len(rules.RULE_OF) == len(RULES)
    assert set(rules.RULE_OF) <= {entry["name"] for entry in registry.algorithms()}


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_name_builds_the_rule_and_has_a_reference_step(rule):
    info = rules.TABLE[rule]
    assert info.name in reference.RULES
    covariances = ("diag", "full") if "covariance" in cwkit.make(info.name).get_params() else ()
    for cov in covariances or (None,):
        est = cwkit.make(info.name, **({"covariance": cov} if cov else {}))
        if info.name == "perceptron":
            est.set_params(average=False)
        est.fit(X, Y2)
        assert est._model.spec.rule == rule
        assert est._model.spec.shape in info.shapes
        assert isinstance(est, GaussianMixin) == info.gaussian
        assert ("sigma_update" in est.get_params()) == info.sigma_sum


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_topk_and_shared_slack_exactly_where_the_table_says(rule):
    info = rules.TABLE[rule]
    est = cwkit.make(info.name, multiclass="topk", k=2)
    if info.topk:
        est.fit(X, Y3)
    else:
        with pytest.raises(ValueError, match="multiclass='topk'"):
            est.fit(X, Y3)
    if "slack" in est.get_params() and info.topk:
        shared = est.set_params(slack="shared")
        if info.squared_slack:
            shared.fit(X, Y3)
        else:
            with pytest.raises(ValueError, match="slack='shared'"):
                shared.fit(X, Y3)


@pytest.mark.parametrize("rule", [r for r in RULES if "first_order" in rules.TABLE[r].shapes],
                         ids=lambda r: r.name)
def test_scaled_rules_are_those_whose_scale_moves(rule):
    """A scaled rule shrinks w = s v (s leaves 1); averaging it keeps the sum of the
    scales, a slot the others do not have."""
    info = rules.TABLE[rule]
    params = {"beta": 1.0} if info.name == "l2-pa" else {}
    est = cwkit.make(info.name, average=False, **params).fit(X, Y2)
    assert (est._model.state["aux"][_core.AUX_S] != 1.0) == info.scaled
    est = cwkit.make(info.name, average=True, **params).fit(X, Y2)
    assert (est._model.state["aux"].size > _core.AUX_SSUM) == info.scaled


def test_derived_sets():
    assert rules.names_of(rules.GAUSSIAN_RULES) == ["cw", "cw-stdev", "arow", "arow-h", "scw1",
                                                    "scw2", "nherd"]
    assert rules.names_of(rules.TOPK_RULES) == ["pa", "pa1", "pa2", "pa-ls", "arow"]
