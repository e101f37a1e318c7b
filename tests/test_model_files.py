"""Every damaged or inconsistent model file loads exactly or raises ModelFileError.

The damage (``model_file_fuzz``): truncations, changed bytes, each metadata
field deleted or replaced by a value of another type, parameters that fail
validation, labels reversed / duplicated / of the wrong kind, and each state
array missing, of the wrong shape or dtype, or holding NaN, inf, a negative
variance or a fractional count.  It runs in a child process (a crash is a
failure); ``python tests/fuzz_model_files.py`` runs a larger campaign.
"""
import numpy as np
import pytest
from _child import run_child
from model_file_fuzz import original_models

import cwkit


@pytest.mark.slow   # about 30 s of CPU: the routine run keeps the extreme-value fuzz below
@pytest.mark.parametrize("originals", ["ORIGINALS", "KERNEL_ORIGINALS"])
def test_damaged_model_files_load_exactly_or_raise_model_file_error(originals):
    result = run_child(f"""
        import json
        from model_file_fuzz import fuzz, {originals}
        print(json.dumps(fuzz(n_random=4, seed=1, originals={originals}, every=5)))
    """, timeout=600)
    assert result["failures"] == []
    assert result["cases"] > 500
    assert result["errors"] > result["cases"] // 2


@pytest.mark.slow
@pytest.mark.parametrize("originals", ["ORIGINALS", "KERNEL_ORIGINALS"])
def test_extreme_float_parameters_are_refused_or_score_finitely(originals):
    """Each float parameter and choice of every form at the ends of float64's range
    (1e308, the largest, the smallest normal and subnormal): the file is refused, or
    the model's scores are finite (or a one-line ValueError), before and after it
    learns.  An AdaGrad file with eta=1e308 loaded and scored inf."""
    failures = run_child(f"""
        import json
        from model_file_fuzz import fuzz_extremes, {originals}
        print(json.dumps(fuzz_extremes({originals})))
    """, timeout=300)
    assert failures == []


@pytest.mark.parametrize("key, value, message", [
    ("mu_sigma", -1.0, "the variances must be >= 0"),
    ("mu_sigma", np.nan, "holds NaN or inf"),
])
def test_inconsistent_state_is_named(tmp_path, key, value, message):
    X = np.random.default_rng(0).normal(size=(20, 3))
    est = cwkit.make("cw", covariance="diag").fit(X, X[:, 0] > 0)
    est._model.named_state()[key][0, 1] = value    # (a view: written through)
    path = tmp_path / "m.cwk"
    cwkit.save(est, path)
    with pytest.raises(cwkit.ModelFileError, match=message):
        cwkit.load(path)


def test_originals_round_trip(tmp_path):
    from model_file_fuzz import KERNEL_ORIGINALS, ORIGINALS, check
    for est, raw, X, y in original_models(ORIGINALS + KERNEL_ORIGINALS):
        assert check(raw, est, X, y, True, tmp_path) is None


@pytest.mark.parametrize("name, params, where, key", [
    ("adagrad", {}, "params", "eta"),
    ("perceptron", {"multiclass": "ovr"}, "choices", "intercept_scaling_"),
])
def test_weights_that_overflow_with_the_files_parameters_are_refused(tmp_path, name, params,
                                                                     where, key):
    from model_file_fuzz import archive, data, to_bytes, unpack
    X, y = data("int3")
    arrays, meta = unpack(to_bytes(cwkit.make(name, **params).fit(X, y)))
    meta[where][key] = 1e308
    path = tmp_path / "m.cwk"
    path.write_bytes(archive(arrays, meta))
    with pytest.raises(cwkit.ModelFileError, match=f"{key}=1e\\+308.* not finite"):
        cwkit.load(path)


@pytest.mark.parametrize("name", ["pa1", "arow", "adagrad", "avg-perceptron"])
def test_a_score_that_overflows_is_an_error_naming_the_row(name):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    est = cwkit.make(name).fit(X, X[:, 0] > 0)
    huge = np.vstack([X[:2], np.sign(est.coef_) * np.finfo(float).max])
    with pytest.raises(ValueError, match="row 2: the score is not finite"):
        est.decision_function(huge)
    with pytest.raises(ValueError, match="row 2: the score is not finite"):
        est.predict(huge)
    assert np.isfinite(est.decision_function(X)).all()
