"""The model factory: every entry of its table builds a Model from a spec alone."""
import numpy as np
import pytest

import cwkit
from cwkit import _core
from cwkit._rowdata import as_rows
from cwkit.models.factory import TABLE, build_model
from cwkit.models.interface import BINARY, Model, ModelSpec, PassResult

#: A rule for each shape whose drivers take one.
RULES = {"first_order": _core.Rule.PA1, "diagonal": _core.Rule.AROW, "full": _core.Rule.AROW,
         "sop_diagonal": _core.Rule.SOP, "adagrad": _core.Rule.ADAGRAD,
         "kernel_first_order": _core.Rule.PA1, "kernel_second_order": _core.Rule.AROW}


@pytest.mark.parametrize("shape, case", sorted(TABLE), ids=lambda v: str(v))
def test_every_table_entry_builds_a_model_that_runs(shape, case):
    K = 2 if case == BINARY else 3
    spec = ModelSpec(shape=shape, n_classes=K, n_features=4, rule=RULES.get(shape),
                     strategy="top1" if case == BINARY else case, k=2, eta=1.0, delta=1e-8,
                     beta=10.0, rho=0.5, batch_size=2, name="test", owner="test")
    model = build_model(spec)
    assert isinstance(model, Model)
    assert all(a.dtype == np.float64 for a in model.state.values())
    rng = np.random.default_rng(0)
    X = rng.normal(size=(9, 4))
    target = np.where(rng.random(9) < 0.5, 1.0, -1.0) if K == 2 else np.arange(9) % K
    result = model.run(as_rows(X), target, np.arange(9), 1.0)
    assert isinstance(result, PassResult) and result.status == _core.Status.OK
    assert result.rounds == 9
    scores = model.scores(as_rows(X), 1.0)
    assert scores.shape == ((9,) if K == 2 else (9, K))
    if shape.startswith("kernel_"):
        with pytest.raises(AttributeError, match="no primal weights"):
            model.weights()
    else:
        assert np.shape(model.weights()) == ((5,) if K == 2 else (K, 5))


def test_every_registered_name_builds_through_the_table():
    X = np.random.default_rng(1).normal(size=(12, 3))
    for entry in cwkit.algorithms():
        for strategy in ("top1", "ovr"):
            est = cwkit.make(entry["name"], multiclass=strategy)
            est._choose(as_rows(X), 3)
            spec = est._spec(3, X.shape[1])
            assert (spec.shape, spec.kind) in TABLE
            assert spec.name == entry["name"] and spec.owner == entry["class"]


def test_a_model_error_carries_its_row_and_reason():
    """raise_status: the message names the estimator and row; `row` and `reason` give them
    apart (evaluate maps the row of a call to the row of the file)."""
    import numpy as np
    import pytest

    import cwkit

    X = np.array([[1.0, 0.0], [1e200, 1e200], [0.0, 1.0]])
    with pytest.raises(cwkit.ModelError) as info:
        cwkit.make("pa1").fit(X, [0, 1, 0])
    exc = info.value
    assert exc.row == 1 and str(exc) == f"pa1: row 1: {exc.reason}"
    assert exc.reason.startswith("the score or squared norm of this example is not finite")
