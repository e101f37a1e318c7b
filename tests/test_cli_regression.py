"""`cwkit eval | train | predict --task regression` against the Python API: the progressive
errors of a hand loop over predict / partial_fit, the test errors, the model file, and the
bad input of the regression task."""
import csv
import io
import json
import re

import numpy as np
import pytest

import cwkit
from cwkit import datasets
from cwkit.cli import main


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def write_targets(path, X, y):
    """An svmlight file of real-valued targets (written with repr: read back exactly)."""
    with open(path, "w") as f:
        for row, target in zip(X, y):
            feats = " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(row) if v != 0)
            f.write(f"{float(target)!r} {feats}\n")
    return path


@pytest.fixture
def files(tmp_path):
    """A training and a test file of a noisy linear target (some zeros: sparse rows)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(160, 4)) * (rng.random((160, 4)) < 0.8)
    y = X @ np.array([1.5, -2.0, 0.5, 1.0]) + 0.7 + 0.1 * rng.normal(size=160)
    train = write_targets(tmp_path / "train.svm", X[:110], y[:110])
    test = write_targets(tmp_path / "test.svm", X[110:], y[110:])
    return train, test, X[:110], y[:110], X[110:], y[110:]


def progressive(est, X, y_train, y_clean, passes=1):
    """The hand loop: each row predicted with the model before its round, then learnt."""
    squared = absolute = 0.0
    first = True
    for _ in range(passes):
        for i in range(len(y_train)):
            x = X[i:i + 1]
            p = 0.0 if first else est.predict(x)[0]
            est.partial_fit(x, y_train[i:i + 1])
            first = False
            squared += (y_clean[i] - p) ** 2
            absolute += abs(y_clean[i] - p)
    n = passes * len(y_train)
    return squared / n, absolute / n


def test_eval_is_the_hand_loop_of_partial_fit_and_predict(capsys, files):
    train, test, X, y, Xt, yt = files
    noisy = datasets.noisy_targets(y, 0.3, seed=4, index=np.arange(y.size))
    rc, out, err = run(capsys, "eval", "--task", "regression", "--algos",
                       "pa1:C=0.5,arow:r=0.5,pa1:average=true", "--noise", 0.3,
                       "--seed", 4, "--passes", 2, "--test", test, "--batch-size", 37,
                       "--format", "json", "-q", train)
    assert rc == 0, err
    task = json.loads(out)["tasks"][0]
    assert (task["task"], task["n_classes"], task["n_examples"]) == ("regression", None, 110)
    assert task["run"]["noise"] == 0.3
    mse = {}
    for res, name in zip(task["results"], ["pa1", "arow", "pa1"]):
        params = res["params"]      # as resolved from the first rows (covariance, ...)
        # (rounds are predicted by the online weights, the last iterate, averaged or not)
        online_mse, online_mae = progressive(
            cwkit.make_regressor(name, **{**params, "average": False}), X, noisy, y, passes=2)
        assert res["online_error"] == pytest.approx(online_mse, rel=1e-12), res["algo"]
        assert res["online_absolute_error"] == pytest.approx(online_mae, rel=1e-12)
        assert res["mistakes"] is None and res["examples"] == 220
        # the model of the parameters, its last iterate and its average, on the test file
        fitted = {avg: cwkit.make_regressor(name, **{**params, "average": avg})
                  for avg in (False, True)}
        errors = {}
        for avg, est in fitted.items():
            for _ in range(2):
                est.partial_fit(X, noisy)
            errors[avg] = yt - est.predict(Xt)
        own = errors[params["average"]]
        assert res["test_error"] == pytest.approx(np.mean(own ** 2), rel=1e-12)
        assert res["test_absolute_error"] == pytest.approx(np.mean(np.abs(own)), rel=1e-12)
        assert res["last_test_error"] == pytest.approx(np.mean(errors[False] ** 2), rel=1e-12)
        assert res["avg_test_error"] == pytest.approx(np.mean(errors[True] ** 2), rel=1e-12)
        mse[res["algo"]] = res["test_error"]
    # the table: rank by test mse, the star, the footer, the run line
    rc, out, err = run(capsys, "eval", "--task", "regression", "--algos",
                       "pa1:C=0.5,arow:r=0.5,pa1:average=true", "--noise", 0.3, "--seed", 4,
                       "--passes", 2, "--test", test, "-q", train)
    lines = out.splitlines()
    assert lines[0].endswith("(110 examples, 4 features, real-valued targets)")
    assert lines[1].split()[:8] == ["algo", "rank", "examples", "online", "mse", "online",
                                    "mae", "updates"]
    best = min(mse, key=mse.get)
    starred = [line.split()[0] for line in lines[2:5] if line.split()[1] == "*"]
    assert starred == [best]
    assert lines[5].startswith("(* best by test mse; test mse: the model of each name's")
    assert "noise sd 0.3, 2 passes" in lines[6]
    # CSV: the classification columns, then the regression ones
    rc, out, err = run(capsys, "eval", "--task", "regression", "--algos", "arow:r=0.5",
                       "--format", "csv", "-q", train)
    row = next(csv.DictReader(io.StringIO(out)))
    assert list(row)[-5:] == ["task", "online_absolute_error", "online_absolute_error_sd",
                              "test_absolute_error", "test_absolute_error_sd"]
    assert row["task"] == "regression" and row["mistakes"] == ""
    assert float(row["online_error"]) == pytest.approx(
        progressive(cwkit.make_regressor("arow", r=0.5), X, y, y)[0], rel=1e-12)


def test_train_then_predict_is_the_python_model(capsys, files, tmp_path):
    train, test, X, y, Xt, yt = files
    model = tmp_path / "m.cwk"
    rc, out, err = run(capsys, "train", "--task", "regression", "--algo", "arow:r=0.5",
                       "--passes", 2, train, "-o", model)
    assert rc == 0, err
    assert "online mse" in err
    loaded = cwkit.load(model)
    est = cwkit.make_regressor("arow", r=0.5)
    est.partial_fit(X, y)
    est.partial_fit(X, y)
    np.testing.assert_array_equal(loaded.predict(Xt), est.predict(Xt))  # bit for bit
    rc, out, err = run(capsys, "predict", model, test, "--precision", 17)
    assert rc == 0, err
    np.testing.assert_array_equal([float(v) for v in out.split()], est.predict(Xt))
    residual = yt - est.predict(Xt)
    assert err == (f"cwkit: {test}: mse {np.mean(residual ** 2):.4g}, mae "
                   f"{np.mean(np.abs(residual)):.4g} ({yt.size} rows)\n")
    rc, out, err = run(capsys, "predict", model, test, "--proba")
    assert rc == 2 and "is a regressor" in err
    rc, out, err = run(capsys, "train", "-i", model, test, "-o", tmp_path / "m2.cwk", "-q")
    assert rc == 0, err
    est.partial_fit(Xt, yt)
    np.testing.assert_array_equal(cwkit.load(tmp_path / "m2.cwk").coef_, est.coef_)
    rc, out, err = run(capsys, "show", model)
    assert rc == 0 and out.startswith(f"{model}: arow (AROWRegressor), a regressor, 4 features")


def test_vowpal_wabbit_targets(capsys, tmp_path):
    """A Vowpal Wabbit file's real-valued labels and importance weights, learnt as
    ``partial_fit`` learns the rows ``load_vw`` reads (treated as text rows)."""
    path = tmp_path / "t.vw"
    path.write_text("2.5 |a x:1 y:2\n-1.25 2 |a y:1 z:0.5\n0.75 |b x:3\n3.5 0.5 |a z:2 x:1\n")
    model = tmp_path / "m.cwk"
    rc, out, err = run(capsys, "train", "--task", "regression", "--algo", "pa1:epsilon=0",
                       path, "-o", model, "-q")
    assert rc == 0, err
    X, y, w = cwkit.load_vw(path)
    est = cwkit.make_regressor("pa1", epsilon=0.0).partial_fit(cwkit.text_rows(X), y,
                                                               sample_weight=w)
    np.testing.assert_array_equal(cwkit.load(model).coef_, est.coef_)
    assert y.tolist() == [2.5, -1.25, 0.75, 3.5]


@pytest.mark.parametrize("argv,message", [
    (["--multiclass", "ovr"], "--multiclass is for classification, not --task regression"),
    (["--class-weight", "balanced"], "--class-weight is for classification"),
    (["--algos", "cw"], "cw has no regression form"),
])
def test_classification_options_are_usage_errors(capsys, files, argv, message):
    rc, out, err = run(capsys, "eval", "--task", "regression", *argv, files[0])
    assert rc == 2 and out == ""
    assert err.startswith(f"cwkit: error: {argv[0]}") or message in err
    assert message in err and err.count("\n") == 1


def test_bad_targets_name_file_and_line(capsys, files, tmp_path):
    rc, out, err = run(capsys, "eval", "--task", "regression")   # the shipped data: classes
    assert rc == 2 and "needs data files" in err
    train = files[0]
    rc, out, err = run(capsys, "eval", train)        # a classifier given real labels
    line, label = re.match(rf"cwkit: error: {re.escape(str(train))}:(\d+): label (\S+) is "
                           "not an integer", err).groups()
    assert rc == 1 and "--task regression" in err and err.count("\n") == 1
    assert float(open(train).readlines()[int(line) - 1].split()[0]) == float(label)
    bad = tmp_path / "bad.svm"
    bad.write_text("1.5 1:1\n2.5 1:2\nnan 1:3\n")
    for command in (["eval"], ["train", "--algo", "pa1", "-o", tmp_path / "m.cwk"]):
        rc, out, err = run(capsys, *command, "--task", "regression", bad)
        assert rc == 1 and err.startswith(f"cwkit: error: {bad}:3: invalid label 'nan'")
        assert err.count("\n") == 1
    assert not (tmp_path / "m.cwk").exists()


def test_algos_lists_the_regressors(capsys):
    rc, out, err = run(capsys, "algos", "--task", "regression", "--format", "json")
    listed = json.loads(out)
    assert rc == 0 and {n: e["params"] for n, e in listed.items()} == {
        e["name"]: e["params"] for e in cwkit.regressors()}
    rc, out, err = run(capsys, "algos", "--task", "regression")
    assert rc == 0 and out.startswith("pa ") and "kernel" not in out
    assert "[PA06] K. Crammer" in out       # the papers cited, in full


def test_a_scan_of_targets_keeps_no_label_set(files, tmp_path):
    """Regression reads the targets without collecting their set (bounded memory):
    the summary is otherwise the same."""
    train = files[0]
    for check in (True, False):
        full = cwkit.scan_svmlight(train, check=check)
        bare = cwkit.scan_svmlight(train, check=check, labels=False)
        assert full.classes.size == 110 and bare.classes.size == 0
        assert bare._replace(classes=None) == full._replace(classes=None)
    path = tmp_path / "t.vw"
    path.write_text("2.5 |a x:1\n-1.5 |a y:2\n")
    assert cwkit.scan_vw(path).classes.tolist() == [-1.5, 2.5]
    assert cwkit.scan_vw(path, labels=False).classes.size == 0
