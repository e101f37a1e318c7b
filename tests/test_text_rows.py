"""The text treatment of rows (cwkit.text_rows) and the command line's --rows."""
import json
import math

import numpy as np
import pytest
import scipy.sparse as sp

import cwkit
from cwkit.cli import main


def _reference(rows):
    """Row by row, value by value: sign(v) log(1 + |v|), then the row over its norm."""
    out = []
    for row in rows:
        logs = [math.copysign(math.log1p(abs(v)), v) for v in row]
        norm = math.sqrt(sum(v * v for v in logs))
        out.append([v / norm if norm else 0.0 for v in logs])
    return np.array(out)


def _counts(seed=0, n=30, d=12):
    rng = np.random.default_rng(seed)
    X = rng.poisson(0.4, size=(n, d)).astype(float) * rng.choice([1.0, -1.0, 2.5], size=(n, d))
    X[3] = 0.0                     # an all-zero row stays zero
    X[4] = 0.0
    X[4, 7] = 1e300                # a value whose square overflows: its logarithm does not
    return X


def test_text_rows_is_the_per_row_reference():
    X = _counts()
    want = _reference(X)
    dense = cwkit.text_rows(X)
    np.testing.assert_allclose(dense, want, rtol=1e-14, atol=0)
    got = cwkit.text_rows(sp.csr_matrix(X))
    assert sp.isspmatrix_csr(got) and got.nnz == np.count_nonzero(X)
    np.testing.assert_allclose(got.toarray(), want, rtol=1e-14, atol=0)
    np.testing.assert_allclose(np.linalg.norm(want[np.any(X != 0, axis=1)], axis=1), 1.0,
                               rtol=1e-15)
    # the input is not changed; presence rows (all ones) become 1/sqrt(n) each
    np.testing.assert_array_equal(X, _counts())
    ones = cwkit.text_rows(np.array([[1.0, 0.0, 1.0, 1.0, 1.0]]))
    np.testing.assert_allclose(ones, [[0.5, 0.0, 0.5, 0.5, 0.5]], rtol=1e-15)


def _text_file(tmp_path, n=300, seed=1):
    """Raw word counts of two kinds of messages, as Vowpal Wabbit text and svmlight."""
    rng = np.random.default_rng(seed)
    vw, svm = [], []
    for _ in range(n):
        y = int(rng.choice([-1, 1]))
        counts = {}
        for _ in range(int(rng.integers(1, 40))):
            w = int(rng.integers(1, 60)) + (20 if y > 0 else 0)
            counts[w] = counts.get(w, 0) + 1
        feats = " ".join(f"{w}:{c}" for w, c in sorted(counts.items()))
        vw.append(f"{y} | {feats}")     # the default namespace: column j for name j
        svm.append(f"{y} {feats}")
    (tmp_path / "d.vw").write_text("\n".join(vw) + "\n")
    (tmp_path / "d.svm").write_text("\n".join(svm) + "\n")
    return tmp_path / "d.vw", tmp_path / "d.svm"


def _mistakes(capsys, *argv):
    assert main(["eval", "--algos", "arow", "--format", "json", "-q", *map(str, argv)]) == 0
    return json.loads(capsys.readouterr().out)["tasks"][0]["results"][0]["mistakes"]


def test_the_command_line_treats_vw_text_rows_by_default(tmp_path, capsys):
    vw, svm = _text_file(tmp_path)
    X, y, _ = cwkit.load_vw(vw)
    treated = cwkit.make("arow").partial_fit(cwkit.text_rows(X), y, classes=[-1, 1])
    raw = cwkit.make("arow").partial_fit(X, y, classes=[-1, 1])
    assert treated.mistakes_ != raw.mistakes_        # the test can tell them apart
    assert _mistakes(capsys, vw) == treated.mistakes_
    assert _mistakes(capsys, "--rows", "text", vw) == treated.mistakes_
    assert _mistakes(capsys, "--rows", "raw", vw) == raw.mistakes_
    # svmlight: raw by default, the same learning as the Vowpal Wabbit file with --rows text
    Xs, ys = cwkit.load_svmlight(svm)
    assert _mistakes(capsys, svm) == cwkit.make("arow").partial_fit(
        Xs, ys, classes=[-1, 1]).mistakes_
    assert _mistakes(capsys, "--rows", "text", "--hash-bits", "18", svm) == treated.mistakes_


def test_a_model_keeps_its_treatment_and_predict_applies_it(tmp_path, capsys):
    vw, svm = _text_file(tmp_path)
    X, y, _ = cwkit.load_vw(vw)
    model = tmp_path / "m.cwk"
    assert main(["train", "--algo", "arow", "-q", str(vw), "-o", str(model)]) == 0
    est = cwkit.load(model)
    assert est.rows_ == "text"
    assert main(["predict", str(model), str(vw)]) == 0
    got = [float(v) for v in capsys.readouterr().out.split()]
    assert got == est.predict(cwkit.text_rows(X)).tolist()
    # the svmlight copy, in the same columns: the
    # model's treatment, not svmlight's default
    assert main(["predict", "--hash-bits", "18", "--zero-based", str(model), str(svm)]) == 0
    assert [float(v) for v in capsys.readouterr().out.split()] == got
    assert main(["predict", "--rows", "raw", str(model), str(vw)]) == 1
    assert "trained with --rows text" in capsys.readouterr().err
    # a damaged treatment in the file is refused at load
    with np.load(model, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays["__meta__"].tobytes())
    meta["rows"] = "tfidf"
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    with open(model, "wb") as f:
        np.savez(f, **arrays)
    with pytest.raises(cwkit.ModelFileError, match="rows"):
        cwkit.load(model)
