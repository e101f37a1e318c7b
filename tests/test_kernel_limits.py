"""Kernel and kernel_approx models: parameters beyond the compiled core, support sets
beyond the budget, feature maps beyond memory, and values beyond float64 give one
clear error (or work), from the API, the command line and model files."""
import json
import re
import subprocess
import sys

import numpy as np
import pytest
from _child import run_child
from model_file_fuzz import archive, to_bytes, unpack

import cwkit
from cwkit.cli import main

X = np.random.default_rng(0).normal(size=(40, 3))
Y = (X[:, 0] > 0).astype(int)


def edited(tmp_path, est, meta_edit=None, **params):
    """The path of `est`'s model file with its metadata edited."""
    arrays, meta = unpack(to_bytes(est))
    meta["params"].update(params)
    if meta_edit:
        meta_edit(meta)
    path = tmp_path / "edited.cwk"
    path.write_bytes(archive(arrays, meta))
    return path


def test_a_file_whose_support_set_exceeds_its_budget_is_refused(tmp_path):
    # (the mini-batch rules wrote past buffers sized from the budget: a crash, so in a child)
    result = run_child(f"""
        import json
        import numpy as np
        import cwkit
        from model_file_fuzz import archive, to_bytes, unpack
        X = np.random.default_rng(0).normal(size=(40, 4))
        y = (X[:, 0] > 0).astype(int)
        out = {{}}
        for name in ["bpa1", "bpa2", "bpa-ls", "pa1", "perceptron", "arow", "cw", "reg-pa"]:
            est = cwkit.make(name, kernel="rbf", budget=6).fit(X, y)
            arrays, meta = unpack(to_bytes(est))
            meta["params"]["budget"] = 2
            path = {str(tmp_path / "b.cwk")!r}
            open(path, "wb").write(archive(arrays, meta))
            try:
                cwkit.load(path).partial_fit(X, y)
                out[name] = "loaded"
            except cwkit.ModelFileError as exc:
                out[name] = str(exc)
        print(json.dumps(out))
    """)
    assert len(result) == 8
    for text in result.values():
        assert "holds 6 vectors, more than budget=2" in text


def test_set_params_of_a_kernel_parameter_takes_effect_at_the_next_fit():
    est = cwkit.make("pa1", kernel="rbf", budget=6).fit(X, Y)
    est.set_params(budget=2)
    for call in (lambda: est.partial_fit(X, Y), lambda: est.predict(X),
                 lambda: cwkit.save(est, "never.cwk")):
        with pytest.raises(ValueError, match="budget was set to 2 after the model was "
                                             "fitted with 6.*call fit"):
            call()
    assert est.fit(X, Y).support_vectors_.shape[0] <= 2
    est.set_params(budget=6)
    est.set_params(budget=2)       # set back: the fitted model is usable again
    est.predict(X)


@pytest.mark.parametrize("params, largest", [
    ({"kernel": "poly", "degree": 2**31}, "2147483647"),
    ({"kernel": "rbf", "budget": 2**63}, "9223372036854775807"),
    ({"kernel_approx": "rff", "gamma": 1e308}, "8.98847e+307"),
])
def test_parameters_beyond_the_core_are_refused_with_the_largest_value(tmp_path, params,
                                                                        largest):
    with pytest.raises(ValueError, match=f"expected .*{re.escape(largest)}"):
        cwkit.make("pa1", **params).fit(X, Y)
    base = {k: v for k, v in params.items() if k in ("kernel", "kernel_approx")}
    path = edited(tmp_path, cwkit.make("pa1", **base).fit(X, Y), **params)
    with pytest.raises(cwkit.ModelFileError, match=re.escape(largest)):
        cwkit.load(path)


def test_cli_refuses_a_huge_degree_in_one_line(tmp_path):
    data = tmp_path / "d.svm"
    cwkit.svmlight.dump_svmlight(X, Y, data)
    proc = subprocess.run([sys.executable, "-m", "cwkit", "train", "--algo", "pa1",
                           "--param", "kernel=poly", "--param", "pa1.degree=" + str(2**63),
                           str(data), "-o", str(tmp_path / "m.cwk")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "2147483647" in proc.stderr


def test_a_huge_polynomial_kernel_is_named_not_blamed_on_the_data():
    est = cwkit.make("pa1", kernel="poly", degree=3).fit(X, Y)
    Z = X.copy()
    Z[7] *= 1e120
    for rows in (Z, __import__("scipy.sparse").sparse.csr_matrix(Z)):
        with pytest.raises(ValueError, match="row 7: the polynomial kernel .* degree=3"):
            est.decision_function(rows)
    with pytest.raises(cwkit.ModelError, match="row 0: .*degree=2147483647"):
        cwkit.make("arow", kernel="poly", degree=2**31 - 1,
                   gamma=1.0 / X.shape[1]).fit(X * 10, Y)


def test_kernel_approx_maps_beyond_memory_are_model_size_errors(tmp_path):
    with pytest.raises(cwkit.ModelSizeError, match="n_components"):
        cwkit.make("pa1", kernel_approx="rff", n_components=2**40).fit(X, Y)

    def wide(meta):       # 2^40 features: a map of 100 * 2^40 values
        meta["n_features_in_"] = meta["choices"]["approx_n_features_"] = 2**40
    path = edited(tmp_path, cwkit.make("pa1", kernel_approx="rff").fit(X, Y), wide)
    with pytest.raises(cwkit.ModelFileError, match="cannot load this model.*n_components"):
        cwkit.load(path)


@pytest.mark.parametrize("key, value", [("approx_n_features_", 4), ("approx_seed_", 2**62),
                                        ("approx_seed_", -1)])
def test_kernel_approx_metadata_that_disagrees_is_refused(tmp_path, key, value):
    def edit(meta):
        meta["choices"][key] = value
    path = edited(tmp_path, cwkit.make("pa1", kernel_approx="rff").fit(X, Y), edit)
    with pytest.raises(cwkit.ModelFileError, match="approx_n_features_|seed"):
        cwkit.load(path)


def test_kernel_approx_is_named_at_the_row_that_overflows():
    Z = X.copy()
    Z[25] *= 1e200
    with pytest.raises(cwkit.ModelError, match="row 25: .*Nystroem landmark") as info:
        cwkit.make("pa1", kernel_approx="nystroem", n_components=40).fit(Z, Y)
    assert info.value.row == 25
    est = cwkit.make("pa1", kernel_approx="rff", random_state=0).fit(X, Y)
    Z[25] = [1e308, 0.0, 0.0]      # its products with the frequencies overflow
    with pytest.raises(cwkit.ModelError, match="row 25: .*random Fourier features"):
        est.predict(Z)


def test_cli_kernel_approx_is_deterministic_by_seed(tmp_path, capsys):
    data = tmp_path / "d.svm"
    cwkit.svmlight.dump_svmlight(X, Y, data)

    def run(seed):
        assert main(["eval", "--algo", "pa1", "--param", "pa1.kernel_approx=nystroem",
                     "--param", "pa1.n_components=5", "--seed", str(seed), "-q", "--format",
                     "json", str(data)]) in (0, None)
        result = json.loads(capsys.readouterr().out)["tasks"][0]["results"][0]
        return result["mistakes"], result["updates"]
    first = run(0)
    assert run(0) == first
    assert any(run(seed) != first for seed in (1, 2))
