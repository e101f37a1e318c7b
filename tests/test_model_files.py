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


@pytest.mark.parametrize("key, value, message", [
    ("mu_sigma", -1.0, "the variances must be >= 0"),
    ("mu_sigma", np.nan, "holds NaN or inf"),
])
def test_inconsistent_state_is_named(tmp_path, key, value, message):
    X = np.random.default_rng(0).normal(size=(20, 3))
    est = cwkit.make("cw", covariance="diag").fit(X, X[:, 0] > 0)
    est._model.state[key][0, 1] = value
    path = tmp_path / "m.cwk"
    cwkit.save(est, path)
    with pytest.raises(cwkit.ModelFileError, match=message):
        cwkit.load(path)


def test_originals_round_trip(tmp_path):
    from model_file_fuzz import KERNEL_ORIGINALS, ORIGINALS, check
    for est, raw, X, y in original_models(ORIGINALS + KERNEL_ORIGINALS):
        assert check(raw, est, X, y, True, tmp_path) is None
