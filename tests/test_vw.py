"""Vowpal Wabbit text input: against a plain-Python reader of the format and VW itself."""
import gzip
import json
import io
import random

import numpy as np
import pytest
import scipy.sparse as sp

import cwkit
from cwkit.vw import VWError, iter_vw, load_vw, scan_vw

from test_named import ref_hash

BITS = 10


def ref_parse(text, bits=BITS):
    """The format, one line at a time, in plain Python (labels, weights, tags, rows)."""
    labels, weights, tags, rows = [], [], [], []
    for line in text.decode().split("\n"):
        if not line.strip():
            continue
        head, bar, rest = line.partition("|")
        words = head.split()
        tag = None
        if words and (words[-1].startswith("'") or bar and not head[-1:].isspace()):
            tag = words.pop()       # the last word, when it starts with ' or touches the bar
            tag = tag[1:] if tag.startswith("'") else tag
        labels.append(float(words[0]))
        weights.append(float(words[1]) if len(words) > 1 else 1.0)
        tags.append(tag)
        cols = {}
        for section in rest.split("|") if bar else []:
            ns_hash, ns_value, anon = 0, 1.0, 0
            if section and not section[0].isspace():
                ns, _, value = section.split()[0].partition(":")
                ns_hash, ns_value = ref_hash(ns), float(value or 1)
                section = section[len(section.split()[0]):]
            for feat in section.split():
                name, colon, value = feat.partition(":")
                v = ns_value * (float(value) if colon else 1.0)
                if name:
                    h = ref_hash(name, ns_hash)
                else:
                    h, anon = ns_hash + anon, anon + 1
                if v != 0:
                    j = h & (2**bits - 1)
                    cols[j] = cols[j] + v if j in cols else v
        rows.append(cols)
    indptr = np.cumsum([0] + [len(c) for c in rows])
    indices = [j for c in rows for j in sorted(c)]
    data = [c[j] for c in rows for j in sorted(c)]
    X = sp.csr_matrix((data, indices, indptr), shape=(len(rows), 2**bits))
    return X, np.array(labels), np.array(weights), tags


def random_vw(n, seed=0):
    rng = random.Random(seed)
    names = ["a", "b", "price", "日本", "x_1", "42", "7", "0", "#h", ""]
    lines = []
    for _ in range(n):
        head = [rng.choice(["1", "-1", "2", "0.5e1"])]
        if rng.random() < 0.5:
            head.append(rng.choice(["1", "0.25", "3", "0"]))
        line = " ".join(head)
        if rng.random() < 0.3:
            line += " 'tag" + str(rng.randrange(9))
        for k in range(rng.randint(0, 3)):
            ns = rng.choice(["", "", "ns", "u:2", "9", "q:0.5"])
            feats = []
            for _ in range(rng.randint(1, 5)):
                name = rng.choice(names)
                value = rng.choice(["", ":2", ":-0.5", ":0", ":1e-3"])
                feats.append(name + value if name or value else "x")
            bar = " |" if k == 0 and "'" not in line or rng.random() < 0.5 else "|"
            line += bar + ns + " " + " ".join(feats)
        lines.append(line + rng.choice(["", " ", "\r"]))
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("seed", range(3))
def test_reader_equals_the_reference(seed):
    text = random_vw(300, seed)
    X, y, w, tags = load_vw(io.BytesIO(text), hash_bits=BITS, tags=True)
    R, ry, rw, rtags = ref_parse(text)
    assert X.has_canonical_format
    assert (X.indptr == R.indptr).all() and (X.indices == R.indices).all()
    assert (X.data == R.data).all() and (y == ry).all() and (w == rw).all()
    assert tags == rtags
    chunks = list(iter_vw(io.BytesIO(text), batch_size=37, hash_bits=BITS, chunk_size=100))
    assert (sp.vstack([c[0] for c in chunks]) != X).nnz == 0
    assert np.concatenate([c[2] for c in chunks]).tolist() == w.tolist()
    info = scan_vw(io.BytesIO(text), hash_bits=BITS)
    assert (info.n_samples, info.nnz) == (X.shape[0], X.nnz)
    assert info.classes.tolist() == sorted(set(y.tolist()))


def test_feature_indices_equal_vowpal_wabbits():
    pyvw = pytest.importorskip("vowpalwabbit.pyvw")
    ws = pyvw.Workspace("-b 18 --noconstant --quiet")
    text = random_vw(80, seed=7).replace(b"\r", b"")
    X, _, _ = load_vw(io.BytesIO(text), hash_bits=18)
    for i, line in enumerate(text.decode().splitlines()):
        ex = ws.parse(line)
        cols = {}
        for ns in range(ex.num_namespaces()):
            for k in range(ex.num_features_in(ns)):
                # (the weight VW uses: its index masked to -b bits)
                j, v = ex.feature(ns, k) & (2**18 - 1), ex.feature_weight(ns, k)
                cols[j] = cols.get(j, 0.0) + v
        ws.finish_example(ex)
        row = X[i]
        assert dict(zip(row.indices.tolist(), row.data.tolist())) == pytest.approx(cols)


def test_a_vw_file_and_its_dicts_learn_the_same_model():
    text = b"1 | a b:2 7\n-1 | b c:0.5\n1 | a:3 c\n"
    X, y, _ = load_vw(io.BytesIO(text), hash_bits=BITS)
    rows = [{"a": 1, "b": 2, "7": 1}, {"b": 1, "c": 0.5}, {"a": 3, "c": 1}]
    a = cwkit.make("arow").partial_fit(X, y, classes=[-1, 1])
    b = cwkit.make("arow").use_features(hash_bits=BITS).learn_many(rows, y, classes=[-1, 1])
    assert (a.coef_ == b.coef_).all()


@pytest.mark.parametrize("line, message", [
    (b"1 |a", r"line 3: namespace '\|a' has no features"),
    (b"1 | ", r"line 3: namespace '\|' has no features"),
    (b"1:0.5 2:1 |a x", r"line 3: label '1:0.5' has a ':' \(a cost-sensitive"),
    (b"nan |a x", r"line 3: invalid label 'nan'"),
    (b"1 -2 |a x", r"line 3: invalid importance weight '-2'"),
    (b"1 inf |a x", r"line 3: invalid importance weight 'inf'"),
    (b"|a x", r"line 3: the line has no label"),
    (b"1 |a x:nan", r"line 3: invalid feature 'x:nan'"),
    (b"1 |a x:", r"line 3: invalid feature 'x:'"),
    (b"1 |a:b x", r"line 3: invalid namespace '\|a:b'"),
    (b"1 2 3 4 |a x", r"line 3: too many words before the first '\|' \('4'\)"),
    (b"1 |a x\x00", r"line 3: control byte"),
])
def test_bad_lines_name_the_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.vw"
    path.write_bytes(b"1 |a x\n\n" + line + b"\n1 |a y\n")
    with pytest.raises(VWError, match=f"^{path}, {message}"):
        load_vw(path)
    with pytest.raises(VWError, match=message):
        list(iter_vw(path, batch_size=1))


def test_compressed_and_unlabelled_input(tmp_path):
    path = tmp_path / "d.vw.gz"
    path.write_bytes(gzip.compress(b"1 0.5 | a\n-1 | b\n"))
    X, y, w = load_vw(path)
    assert X.shape == (2, 2**18) and y.tolist() == [1, -1] and w.tolist() == [0.5, 1.0]
    X, y, _ = load_vw(io.BytesIO(b"| a\n"), require_label=False)
    assert np.isnan(y).all() and X.nnz == 1


def test_sums_beyond_a_double_are_refused_naming_the_line_or_row():
    with pytest.raises(VWError, match="line 2: the line's feature values overflow"):
        load_vw(io.BytesIO(b"1 | a\n1 |n:1e300 a:1e300\n"))
    with pytest.raises(ValueError, match="row 1: the values of features sharing a column"):
        cwkit.FeatureHasher().transform([{"a": 1}, {"1": 1e308, "01": 1e308}])


def _vw_file(tmp_path, n=400, name="d.vw"):
    rng = random.Random(0)
    lines = []
    for _ in range(n):
        y = rng.choice([-1, 1])
        words = " ".join(f"w{rng.randrange(40) + (10 if y > 0 else 0)}" for _ in range(6))
        lines.append(f"{y} {rng.choice(['1', '2'])} |t {words} |n a:{rng.random():.3f}")
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_command_line_reads_vw_files(tmp_path, capsys):
    from cwkit.cli import main
    path = _vw_file(tmp_path)
    plain = tmp_path / "d.txt"
    plain.write_bytes(path.read_bytes())
    assert main(["eval", "--algos", "pa,cw,arow", "--format", "json", "-q", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    task = out["tasks"][0]
    assert task["n_examples"] == 400 and task["n_features"] == 2**18
    X, y, w = load_vw(path)
    X = cwkit.text_rows(X)        # the command line's default for Vowpal Wabbit text
    want = cwkit.make("arow").partial_fit(X, y, classes=[-1, 1], sample_weight=w)
    arow = next(r for r in task["results"] if r["algo"] == "arow")
    assert arow["mistakes"] == want.mistakes_
    for argv in (["--format", "vw"], ["--data-format", "vw"]):
        assert main(["eval", "--algos", "arow", "-q", *argv, str(plain)]) == 0
        assert "400" in capsys.readouterr().out
    model = tmp_path / "m.cwk"
    assert main(["train", "--algo", "arow", "-q", str(path), "-o", str(model)]) == 0
    assert main(["predict", str(model), str(path)]) == 0
    labels = capsys.readouterr().out.split()
    assert [float(v) for v in labels] == cwkit.load(model).predict(X).tolist()


@pytest.mark.parametrize("argv, message", [
    (["--zero-based"], "--zero-based is not for Vowpal Wabbit files"),
    (["--n-features", "5"], "--n-features is not for Vowpal Wabbit files"),
])
def test_svmlight_options_are_refused_for_vw_files(tmp_path, capsys, argv, message):
    from cwkit.cli import main
    assert main(["eval", "-q", *argv, str(_vw_file(tmp_path))]) == 2
    assert message in capsys.readouterr().err


def test_a_bad_vw_line_is_named_by_the_command_line(tmp_path, capsys):
    from cwkit.cli import main
    path = tmp_path / "bad.vw"
    path.write_text("1 | a\n-1 | b\n1 |x\n")
    assert main(["eval", "-q", str(path)]) == 1
    assert f"{path}:3: namespace '|x' has no features" in capsys.readouterr().err
