"""Integer parameters beyond what the compiled core counts are refused by validation,
with the largest accepted value, from the API, the command line and model files."""
import re

import numpy as np
import pytest
from model_file_fuzz import archive, to_bytes, unpack

import cwkit
from cwkit import _params, kernel_approx, kernels
from cwkit.base import COMMON
from cwkit.cli import main

X = np.random.default_rng(0).normal(size=(40, 3))
Y = (X[:, 0] > 0).astype(int)


def _ints(constraints):
    """{parameter: its Int constraint} of `constraints` (an Optional's inner one too)."""
    out = {}
    for key, c in constraints.items():
        c = getattr(c, "inner", c)
        if isinstance(c, _params.Int):
            out[key] = c
    return out


def _integer_parameters():
    """(name, form's parameters, parameter, largest) for every integer parameter of every rule, its
    kernel and kernel_approx forms included."""
    cases = []
    for name in (a["name"] for a in cwkit.algorithms()):
        for extra in ({}, {"kernel": "rbf"}, {"kernel_approx": "rff"}):
            try:
                est = cwkit.make(name, **extra)
            except ValueError:      # no such form for this rule
                continue
            every = {**COMMON, **kernels._CONSTRAINTS, **kernel_approx._APPROX_CONSTRAINTS,
                     **type(est)._constraints}
            for key, c in _ints(every).items():
                if key in est.get_params():     # (degree is the polynomial kernel's)
                    form = {**extra, "kernel": "poly"} if key == "degree" else extra
                    cases.append((name, form, key, c.hi))
    return cases


CASES = _integer_parameters()


def test_every_integer_parameter_has_a_bound_of_the_core():
    found = {key for _, _, key, _ in CASES}
    assert {"n_passes", "k", "batch_size", "degree", "budget", "n_components"} <= found
    assert all(hi in (_params.INT_MAX, _params.SSIZE_MAX) for *_, hi in CASES)


@pytest.mark.slow
@pytest.mark.parametrize("name, extra, key, largest", CASES,
                         ids=[f"{n}-{'-'.join(e.values()) or 'linear'}-{k}"
                              for n, e, k, _ in CASES])
def test_one_beyond_the_largest_is_refused_from_the_api_and_files(tmp_path, name, extra,
                                                                   key, largest):
    message = f"'{key}'; expected .*{re.escape(str(largest))}"
    with pytest.raises(ValueError, match=message):
        cwkit.make(name, **extra, **{key: largest + 1})
    est = cwkit.make(name, **extra)
    est.set_params(**{key: largest})
    est._validate_params()          # the largest itself is valid
    arrays, meta = unpack(to_bytes(cwkit.make(name, **extra).fit(X, Y)))
    meta["params"][key] = largest + 1
    path = tmp_path / "edited.cwk"
    path.write_bytes(archive(arrays, meta))
    with pytest.raises(cwkit.ModelFileError, match=re.escape(str(largest))):
        cwkit.load(path)


def test_passes_times_rows_beyond_the_core_are_refused_before_any_work():
    largest = _params.SSIZE_MAX // len(X)
    est = cwkit.make("pa1", n_passes=largest + 1)
    with pytest.raises(ValueError, match=f"at most {largest} passes over {len(X)} rows"):
        est.fit(X, Y)
    assert not hasattr(est, "classes_")


@pytest.mark.parametrize("argv", [
    ["--passes", str(2**63)],
    ["--k", str(2**63), "--multiclass", "topk"],
    ["--param", f"bpa1.batch_size={2**63}"],
    ["--param", "bpa1.kernel=rbf", "--param", f"bpa1.budget={2**63}"],
])
def test_the_command_line_refuses_them_in_one_line(tmp_path, capsys, argv):
    data = tmp_path / "d.svm"
    cwkit.dump_svmlight(X, Y, data)
    rc = main(["eval", "--algos", "bpa1", str(data), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("cwkit: error: ") and err.count("\n") == 1, err
    assert str(_params.SSIZE_MAX) in err
