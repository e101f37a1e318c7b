"""What a new user meets first on the command line: names close to the right one, files
that are not svmlight data, a rule that lacks the reduction asked for, progress, papers
cited by key, wide files, the rows warnings name. Bad input stays one ``cwkit: error:``
line with the fix and the documented exit status."""
import gzip
import re
import warnings

import numpy as np
import pytest

import cwkit
from cwkit import cli, datasets, references
from cwkit.report import Progress


def run(capsys, *argv):
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def one_error(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cwkit: error: "), err
    return lines[0]


@pytest.fixture
def svm(tmp_path):
    """The shipped data set as a plain file."""
    path = tmp_path / "bc.svm"
    path.write_bytes(datasets.shipped_data_path().read_bytes())
    return path


def _three_classes(tmp_path, n=90):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(n, 4)), np.arange(n) % 3
    path = tmp_path / "three.svm"
    cwkit.dump_svmlight(X, y, str(path))
    return path


def test_train_takes_one_algorithm_with_inline_parameters(capsys, svm, tmp_path):
    out_path = tmp_path / "m.cwk"
    rc, _, err = run(capsys, "train", "--algo", "pa1:kernel=rbf:gamma=0.5", "--param", "C=0.3",
                     svm, "-o", out_path, "-q")
    assert rc == 0, err
    params = cwkit.load(str(out_path)).get_params()
    assert (params["kernel"], params["gamma"], params["C"]) == ("rbf", 0.5, 0.3)
    rc, _, err = run(capsys, "train", "--algos", "arow", svm, "-o", out_path, "-q")
    assert rc == 0 and type(cwkit.load(str(out_path))).__name__ == "AROW"
    rc, _, err = run(capsys, "train", "--algos", "pa,arow", svm, "-o", tmp_path / "x.cwk")
    assert rc == 2 and "train fits one algorithm" in one_error(err)
    assert "cwkit eval --algos" in err and not (tmp_path / "x.cwk").exists()


@pytest.mark.parametrize("argv, hint", [
    (["eval", "--algos", "arwo"], "did you mean 'arow'?"),
    (["train", "--algo", "pa11", "-o", "m.cwk", "x.svm"], "did you mean 'pa1'?"),
    (["eval", "--algos", "arow", "--param", "arow.rr=1"], "did you mean 'r'?"),
    (["eval", "--algos", "arow:covarience=full"], "did you mean 'covariance'?"),
    (["eval", "--pases", "2"], "did you mean '--passes'?"),
], ids=["algorithm", "train-algorithm", "param", "inline-param", "option"])
def test_an_unknown_name_gets_the_closest_known_one(capsys, argv, hint):
    rc, _, err = run(capsys, *argv)
    assert rc == 2 and hint in one_error(err)


def test_files_that_are_not_svmlight_are_named_as_what_they_are(capsys, svm, tmp_path):
    model = tmp_path / "m.cwk"
    assert run(capsys, "train", "--algo", "pa", svm, "-o", model, "-q")[0] == 0
    bom = tmp_path / "bom.svm"
    bom.write_bytes(b"\xef\xbb\xbf" + svm.read_bytes())
    csv = tmp_path / "data.csv"
    csv.write_text("label,f1,f2\n1,0.5,0.25\n-1,0.125,0.75\n")
    csv_gz = tmp_path / "data.csv.gz"
    csv_gz.write_bytes(gzip.compress(b"1,0.5,0.25\n-1,0.125,0.75\n"))
    cases = [(model, "a cwkit model file"), (bom, "UTF-8 byte-order mark"),
             (csv, "looks like CSV"), (csv_gz, "looks like CSV")]
    for path, what in cases:
        for argv in (["eval", path], ["train", "--algo", "pa", path, "-o", tmp_path / "o.cwk"],
                     ["eval", svm, "--test", path], ["predict", model, path]):
            rc, out, err = run(capsys, *argv, "-q")
            assert rc == 1 and what in one_error(err) and str(path) in err, (argv, err)
            assert out == "" and not (tmp_path / "o.cwk").exists()
    assert "cwkit predict" in run(capsys, "eval", model)[2]


def test_a_rule_without_the_reduction_asked_for_is_left_out_not_the_run(capsys, tmp_path):
    path = _three_classes(tmp_path)
    rc, out, err = run(capsys, "eval", "--multiclass", "topk", "--algos", "perceptron,pa",
                       path, "-q")
    assert rc == 0
    table = out.split("\n(* best")[0].splitlines()[2:]     # the rows under the header
    rows = [line.split()[0] for line in table if line.startswith(("pa", "per"))]
    assert rows == ["pa"]
    assert "perceptron: not run: --multiclass topk" in out
    assert err.count("cwkit: warning: perceptron: not run: --multiclass topk") == 1
    assert run(capsys, "eval", "--multiclass", "topk", "--algos", "perceptron,pa", path,
               "-q", "--strict")[0] == 1
    rc, out, err = run(capsys, "eval", "--multiclass", "topk", "--algos", "perceptron", path)
    assert rc == 2 and "--multiclass topk" in one_error(err) and out == ""


def test_progress_shows_the_pass_and_the_share_done(capsys, tmp_path):
    rng = np.random.default_rng(1)
    path = tmp_path / "p.svm"
    cwkit.dump_svmlight(rng.normal(size=(2500, 3)), rng.integers(0, 2, 2500), str(path))
    rc, _, err = run(capsys, "train", "--algo", "pa", "--passes", "2", "--batch-size", "500",
                     path, "-o", tmp_path / "m.cwk")
    assert rc == 0
    lines = [line for line in err.splitlines() if "examples (" in line]
    assert lines[0].startswith(f"cwkit: {path}: pass 1/2, 1,000 examples (20%), ")
    assert any(line.startswith(f"cwkit: {path}: pass 2/2, 4,000 examples (80%), ")
               for line in lines), err
    # rows not known in advance: no percentage
    import io
    stream = io.StringIO()
    progress = Progress(stream)
    progress.start_run("x")
    progress.update(1500, [], pass_no=2, passes=3)
    assert stream.getvalue().startswith("cwkit: x: pass 3/3, 1,500 examples, ")


def test_cited_papers_are_printed_in_full(capsys):
    rc, out, _ = run(capsys, "algos")
    listing, _, cited = out.partition("\nreferences:\n")
    keys = set(re.findall(r"\[([A-Z][A-Za-z]*\d\d)\]", listing))
    assert keys and rc == 0
    for key in keys:
        assert f"  [{key}] {references.REFERENCES[key]}\n" in cited
    rc, out, _ = run(capsys, "algos", "--references")
    assert rc == 0 and out == references.text()
    for command in ("eval", "train", "predict", "algos"):
        with pytest.raises(SystemExit):
            cli._build_parser()[1][command].parse_args(["--help"])
        text = capsys.readouterr().out
        for key in set(re.findall(r"\[([A-Z][A-Za-z]*\d\d)\]", text)):
            assert f"[{key}] {references.REFERENCES[key][:20]}" in text, (command, key)


def test_params_column_prints_large_values_in_exponent_form(capsys):
    rc, out, _ = run(capsys, "eval", "--algos", "arow:a=1e200", "-q")
    assert rc == 0 and "a=1e+200" in out and "0" * 20 not in out


def test_a_file_far_wider_than_its_rows_says_so_and_points_to_hash_bits(capsys, tmp_path):
    wide = tmp_path / "wide.svm"
    wide.write_text("".join(f"{1 if i % 2 else -1} {i + 1}:1 5000000:0.5\n"
                            for i in range(50)))
    rc, _, err = run(capsys, "eval", "--algos", "pa", wide, "-q")
    assert rc == 0
    (line,) = [x for x in err.splitlines() if x.startswith("cwkit: warning:")]
    assert "indices up to 5,000,000 for 50 rows" in line and "--hash-bits" in line
    rc, _, err = run(capsys, "eval", "--algos", "pa", wide, "-q", "--hash-bits", "10")
    assert rc == 0 and err == ""


def test_a_models_warning_names_the_files_row(capsys, tmp_path):
    """The notes name the row of the file (1-based), not a row of an internal chunk."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(300, 5)), rng.integers(0, 2, 300)
    est = cwkit.make("cw-stdev", eta=0.95, covariance="diag")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    (row,) = [int(re.search(r"row (\d+) of X", str(w.message)).group(1)) for w in caught]
    assert row > 8       # beyond the first chunk below
    path = tmp_path / "noisy.svm"
    cwkit.dump_svmlight(X, y, str(path))
    rc, out, err = run(capsys, "eval", "--algos", "cw-stdev:eta=0.95:covariance=diag",
                       "--batch-size", "8", path, "-q")
    assert rc == 0 and f"row {row + 1} of {path}: the variance" in out
    assert "of X" not in out
    rc, _, err = run(capsys, "train", "--algo", "cw-stdev:eta=0.95:covariance=diag",
                     "--batch-size", "8", path, "-o", tmp_path / "m.cwk", "-q")
    assert rc == 0 and f"row {row + 1} of {path}: the variance" in err


def test_labels_outside_the_given_classes_are_one_data_error(capsys, svm):
    rc, out, err = run(capsys, "eval", "--classes", "1,2", svm, "-q")
    assert rc == 1 and out == ""
    line = one_error(err)
    assert f"{svm}:1: label -1 is not among --classes 1, 2" in line or \
        re.search(rf"{re.escape(str(svm))}:\d+: label -1 is not among --classes 1, 2", line)
    rc, _, err = run(capsys, "eval", "--classes=-1,1,2", "--algos", "pa", svm, "-q")
    assert rc == 0, err
