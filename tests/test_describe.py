"""Reading a model: cwkit.describe, `cwkit show`, and the provenance model files keep."""
import json

import numpy as np
import pytest

import cwkit
from cwkit.cli import main


def _svm(path, X, y):
    path.write_text("".join(f"{t} " + " ".join(f"{j + 1}:{v!r}" for j, v in enumerate(row))
                            + "\n" for row, t in zip(X.tolist(), y.tolist())))
    return str(path)


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 6))
    y = np.where(X @ rng.normal(size=6) > 0, 1, -1)
    return _svm(tmp_path / "a.svm", X[:50], y[:50]), _svm(tmp_path / "b.svm", X[50:], y[50:])


@pytest.mark.parametrize("name, params", [("arow", {"covariance": "diag"}),
                                          ("arow", {"covariance": "full"}),
                                          ("cw", {}), ("pa1", {"C": 0.5})])
def test_describe_lists_the_largest_weights_with_their_variances(name, params):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    y = np.where(X[:, 0] - X[:, 3] > 0, 1, -1)
    est = cwkit.make(name, **params).fit(X, y)
    d = cwkit.describe(est, top=3)
    assert d["rule"] == name and d["params"] == est.resolved_params()
    assert d["classes"] == [-1, 1] and d["n_features"] == 5 and d["provenance"] == {}
    assert d["counters"] == {"t_": 60, "mistakes_": est.mistakes_, "n_updates_": est.n_updates_}
    w = est.coef_[0]
    order = np.argsort(-np.abs(w), kind="stable")[:3]
    assert [t["column"] for t in d["top_weights"]] == order.tolist()
    assert [t["weight"] for t in d["top_weights"]] == w[order].tolist()
    if name == "pa1":
        assert all(t["variance"] is None for t in d["top_weights"])
    else:
        var = (est.coef_var_[0] if est.covariance_type_ == "diag"
               else np.diagonal(est.covariance_)[:5])
        assert [t["variance"] for t in d["top_weights"]] == var[order].tolist()
    assert d["intercept"] == est.intercept_.tolist()


def test_show_is_describe_of_the_file_and_records_provenance(capsys, tmp_path, files):
    first, more = files
    model, model2 = tmp_path / "m.cwk", tmp_path / "m2.cwk"
    assert main(["train", "--algo", "arow", first, "-o", str(model), "--quiet"]) == 0
    assert main(["train", "-i", str(model), more, "-o", str(model2), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["show", str(model2), "--top", "4", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown == json.loads(json.dumps(cwkit.describe(cwkit.load(model2), top=4)))
    prov = shown["provenance"]
    assert prov["cwkit"] == cwkit.__version__ and prov["data"] == [first, more]
    assert prov["created"] == cwkit.load(model).provenance_["created"] <= prov["saved"]
    assert prov["zero_based"] is False and prov["passes"] == 1 and shown["hash_bits"] is None
    assert shown["params"]["covariance"] == "full" and shown["params"]["average"] is False
    assert shown["counters"]["t_"] == 80 and len(shown["top_weights"]) == 4
    # the file's index of a feature: its column + 1 in a one-based file
    assert all(t["index"] == t["column"] + 1 for t in shown["top_weights"])
    assert main(["show", str(model2)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"{model2}: arow (AROW), 2 classes (-1, 1), 6 features\n")
    assert f"data {first}, {more}" in text and "covariance=full" in text
    assert "top 6 weights by magnitude:" in text


def test_show_of_a_bad_file_is_one_error_line(capsys, tmp_path):
    bad = tmp_path / "x.cwk"
    bad.write_text("hello")
    assert main(["show", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"cwkit: error: {bad}:") and len(err.splitlines()) == 1


def test_save_records_provenance_and_a_damaged_one_is_refused(tmp_path):
    est = cwkit.make("pa").fit(np.eye(4), [0, 1, 0, 1])
    path = tmp_path / "m.cwk"
    cwkit.save(est, path, provenance={"data": ["d.svm"], "hash_bits": 18})
    back = cwkit.load(path)
    assert back.provenance_["data"] == ["d.svm"] and back.provenance_["hash_bits"] == 18
    assert cwkit.describe(back)["hash_bits"] == 18
    # a provenance that is not a mapping: a damaged file, named
    import io
    import zipfile
    with zipfile.ZipFile(path) as z:
        arrays = {n: z.read(n) for n in z.namelist()}
    meta = json.loads(np.load(io.BytesIO(arrays["__meta__.npy"])).tobytes())
    meta["provenance"] = [1]
    buf = io.BytesIO()
    np.save(buf, np.frombuffer(json.dumps(meta).encode(), np.uint8))
    arrays["__meta__.npy"] = buf.getvalue()
    with zipfile.ZipFile(path, "w") as z:
        for n, b in arrays.items():
            z.writestr(n, b)
    with pytest.raises(cwkit.ModelFileError, match="provenance is not a mapping"):
        cwkit.load(path)
