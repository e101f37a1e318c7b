"""`python -m cwkit ...`: every option against plain-numpy references, the JSON schema of
docs/cli.md, error messages and exit statuses."""
import bz2
import csv
import gzip
import io
import json
import lzma
import platform
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest

import cwkit
from cwkit import _blas, _malloc, cli, datasets
from cwkit.cli import main

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- helpers

def write_svm(path, X, y, opener=open):
    with opener(path, "wt") as f:
        for row, label in zip(X, y):
            feats = " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(row) if v != 0)
            f.write(f"{label:g} {feats}\n")
    return str(path)


def make_data(n=300, d=5, seed=0, flip=0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X @ rng.normal(size=d) + 0.3 > 0, 1, -1)
    y[rng.random(n) < flip] *= -1
    return X, y


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def run_json(capsys, *argv):
    rc, out, err = run(capsys, *argv, "--format", "json", "--quiet")
    assert rc == 0, err
    return json.loads(out)


def augment(X):
    return np.hstack([X, np.ones((X.shape[0], 1))])


def ref_perceptron(X, y_train, y_clean=None, passes=1, every=0, average=False):
    """Rosenblatt's perceptron with a constant feature ([Ros58]), progressive; with
    ``average`` the w returned is the mean of the weights after every round ([FS99])."""
    y_clean = y_train if y_clean is None else y_clean
    Xa = augment(X)
    w = np.zeros(Xa.shape[1])
    total = np.zeros(Xa.shape[1])
    mistakes = updates = seen = 0
    curve = []
    for _ in range(passes):
        for x, yt, yc in zip(Xa, y_train, y_clean):
            s = w @ x
            mistakes += yc * s <= 0
            if yt * s <= 0:
                w += yt * x
                updates += 1
            total += w
            seen += 1
            if every and seen % every == 0:
                curve.append((seen, mistakes))
    return (total / seen if average else w), mistakes, updates, curve


def check_both_test_errors(res, X, y, Xt, yt, **options):
    """``avg_test_error`` is the averaged perceptron's, ``last_test_error`` the last
    iterate's (the reference with and without the average), ``test_error`` the plain
    perceptron's (the model of the name)."""
    w_avg = ref_perceptron(X, y, average=True, **options)[0]
    w_last = ref_perceptron(X, y, **options)[0]
    assert error_rate(w_avg, Xt, yt) != error_rate(w_last, Xt, yt)   # the test can tell
    assert res["avg_test_error"] == pytest.approx(error_rate(w_avg, Xt, yt))
    assert res["last_test_error"] == pytest.approx(error_rate(w_last, Xt, yt))
    assert res["test_error"] == res["last_test_error"] and res["params"]["average"] is False


def ref_pa1(X, y, C, average=False):
    """PA-I with a constant feature: tau = min(C, loss / ||x~||^2) ([PA06]); with
    `average`, the mean of the weights after every round."""
    Xa = augment(X)
    w = np.zeros(Xa.shape[1])
    total = np.zeros_like(w)
    mistakes = 0
    for x, t in zip(Xa, y):
        s = w @ x
        mistakes += t * s <= 0
        loss = max(0.0, 1 - t * s)
        if loss > 0:
            w += min(C, loss / (x @ x)) * t * x
        total += w
    return (total / len(y) if average else w), mistakes


def error_rate(w, X, y):
    return float(np.mean(np.where(augment(X) @ w > 0, 1, -1) != y))


@pytest.fixture
def data(tmp_path):
    X, y = make_data()
    Xt, yt = make_data(n=200, seed=1)
    return X, y, Xt, yt, write_svm(tmp_path / "train.svm", X, y), \
        write_svm(tmp_path / "test.svm", Xt, yt)


# ----------------------------------------------------------------------------- schema

RESULT_KEYS = {"algo": str, "params": dict, "examples": (int, float), "mistakes": (int, float),
               "online_error": float, "updates": (int, float), "test_error": (float, type(None)),
               "last_test_error": (float, type(None)), "avg_test_error": (float, type(None)),
               "passes": int, "seconds": float, "online_error_sd": (float, type(None)),
               "test_error_sd": (float, type(None)), "last_test_error_sd": (float, type(None)),
               "avg_test_error_sd": (float, type(None)), "trials": int,
               "tuned": (dict, list, type(None)), "failed": (dict, type(None)),
               "notes": list}
TASK_KEYS = {"data": str, "n_examples": int, "n_features": int, "n_classes": int,
             "results": list, "seconds": float, "interrupted": bool, "run": dict}


def check_schema(report):
    """The schema documented in docs/cli.md."""
    assert set(report) == {"tasks", "mean_rank"}
    assert report["mean_rank"] is None or all(
        isinstance(k, str) and isinstance(v, float) for k, v in report["mean_rank"].items())
    for task in report["tasks"]:
        assert set(task) == set(TASK_KEYS)
        for key, kind in TASK_KEYS.items():
            assert isinstance(task[key], kind), key
        for res in task["results"]:
            assert set(res) == set(RESULT_KEYS)
            for key, kind in RESULT_KEYS.items():
                assert isinstance(res[key], kind), (key, res[key])


@pytest.mark.parametrize(("cli_run", "env", "expected"), [
    (True, {}, str(_blas.POLL_BITS)),
    (True, {"OPENBLAS_THREAD_TIMEOUT": "28"}, "28"),     # the user's choice stays
    (True, {"GOTO_THREAD_TIMEOUT": "28"}, None),         # (its older name)
    (False, {}, None),                                   # a library import: nothing
])
def test_command_line_limits_blas_polling(monkeypatch, cli_run, env, expected):
    monkeypatch.setattr(_blas.os, "environ", dict(env))
    monkeypatch.setattr(_blas, "launched_as_cli", lambda: cli_run)
    _blas.limit_polling()
    assert _blas.os.environ.get("OPENBLAS_THREAD_TIMEOUT") == expected


@pytest.mark.parametrize(("cli_run", "env", "expected"), [
    (True, {}, True),
    (True, {"MALLOC_TRIM_THRESHOLD_": "131072"}, False),    # the user's choice stays
    (True, {"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=131072"}, False),
    (False, {}, False),                                   # a library import: nothing
])
def test_command_line_keeps_freed_memory(monkeypatch, cli_run, env, expected):
    """The command line's glibc keeps the memory of freed batches for the next ones: five
    4 MB arrays made and freed ten times fault their pages in once, not ten times."""
    if not (sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"):
        pytest.skip("glibc's mallopt only")
    monkeypatch.setattr(_malloc.os, "environ", dict(env))
    monkeypatch.setattr(_malloc, "launched_as_cli", lambda: cli_run)
    assert _malloc.keep_freed_memory() is expected
    if not expected:
        return
    code = ("import resource, numpy as np, cwkit._malloc as m\n"
            "m.launched_as_cli = lambda: {keep}; m.keep_freed_memory()\n"
            "f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
            "for _ in range(10):\n"
            "    arrays = [np.ones(1 << 19) for _ in range(5)]\n"
            "    del arrays\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)\n")
    faults = [int(subprocess.run([sys.executable, "-c", code.format(keep=keep)],
                                 capture_output=True, text=True, check=True).stdout)
              for keep in (False, True)]
    assert faults[1] < 0.3 * faults[0], faults


def test_docs_describe_every_json_key():
    doc = (ROOT / "docs" / "cli.md").read_text()
    for key in list(RESULT_KEYS) + list(TASK_KEYS) + ["mean_rank", "tasks"]:
        assert f"`{key}`" in doc, key


# ----------------------------------------------------------------------------- eval

def test_eval_matches_reference_perceptron(capsys, data):
    X, y, Xt, yt, train, test = data
    report = run_json(capsys, "eval", "--algos", "perceptron", train, "--test", test,
                      "--passes", "3", "--batch-size", "64")
    check_schema(report)
    w, mistakes, updates, _ = ref_perceptron(X, y, passes=3)
    (task,) = report["tasks"]
    assert (task["n_examples"], task["n_features"], task["n_classes"]) == (300, 5, 2)
    (res,) = task["results"]
    assert res["examples"] == 900 and res["passes"] == 3
    assert res["mistakes"] == mistakes and res["updates"] == updates
    assert res["online_error"] == pytest.approx(mistakes / 900)
    check_both_test_errors(res, X, y, Xt, yt, passes=3)
    assert report["mean_rank"] is None


def test_eval_params(capsys, data):
    X, y, *_, train, _ = data
    report = run_json(capsys, "eval", "--algos", "pa1,pa1:C=0.05", "--param", "pa1.C=0.3",
                      train)
    a, b = report["tasks"][0]["results"]
    assert (a["algo"], a["params"]["C"]) == ("pa1", 0.3)
    assert (b["algo"], b["params"]["C"]) == ("pa1:C=0.05", 0.05)
    assert a["mistakes"] == ref_pa1(X, y, 0.3)[1]
    assert b["mistakes"] == ref_pa1(X, y, 0.05)[1]


def test_eval_noise_counts_against_clean_labels(capsys, data):
    X, y, Xt, yt, train, test = data
    report = run_json(capsys, "eval", "--algos", "perceptron", "--noise", "0.2", "--seed", "5",
                      train, "--test", test, "--batch-size", "50")
    noisy, flipped = datasets.flip_labels(y, 0.2, classes=[-1, 1], seed=5)
    assert 30 < flipped.sum() < 90
    w, mistakes, updates, _ = ref_perceptron(X, noisy, y_clean=y)
    (res,) = report["tasks"][0]["results"]
    assert res["mistakes"] == mistakes and res["updates"] == updates
    check_both_test_errors(res, X, noisy, Xt, yt, y_clean=y)


def test_eval_cross_validation(capsys, data):
    X, y, *_, train, _ = data
    report = run_json(capsys, "eval", "--algos", "perceptron", "--cv", "4", "--seed", "2",
                      train)
    check_schema(report)
    fold = np.floor(4 * datasets.row_uniform(2, np.arange(300), stream=3)).astype(int)
    online, test, last = [], [], []
    for k in range(4):
        w, m, _, _ = ref_perceptron(X[fold != k], y[fold != k])
        w_avg = ref_perceptron(X[fold != k], y[fold != k], average=True)[0]
        online.append(m / np.sum(fold != k))
        test.append(error_rate(w_avg, X[fold == k], y[fold == k]))
        last.append(error_rate(w, X[fold == k], y[fold == k]))
    (res,) = report["tasks"][0]["results"]
    assert res["trials"] == 4
    assert res["online_error"] == pytest.approx(np.mean(online))
    assert res["online_error_sd"] == pytest.approx(np.std(online, ddof=1))
    assert test != last
    assert res["avg_test_error"] == pytest.approx(np.mean(test))
    assert res["avg_test_error_sd"] == pytest.approx(np.std(test, ddof=1))
    assert res["test_error"] == res["last_test_error"]      # the plain perceptron's
    assert res["last_test_error"] == pytest.approx(np.mean(last))
    assert res["last_test_error_sd"] == pytest.approx(np.std(last, ddof=1))


def test_eval_grid_first_half(capsys, data):
    X, y, *_, train, _ = data
    grid = [0.001, 0.01, 0.1, 1.0]
    report = run_json(capsys, "eval", "--algos", "pa1", "--grid",
                      "pa1.C=" + ",".join(map(str, grid)), "--tune-on", "first-half", train)
    # each value's averaged model (pa1's default) trained on the first half, scored on
    # the second
    best = min(grid, key=lambda c: error_rate(ref_pa1(X[:150], y[:150], c, average=True)[0],
                                              X[150:], y[150:]))
    (res,) = report["tasks"][0]["results"]
    assert res["tuned"] == {"C": best} and res["params"]["C"] == best
    assert res["mistakes"] == ref_pa1(X, y, best)[1]


def test_eval_grid_shuffled_run_is_deterministic(capsys, data):
    *_, train, _ = data
    argv = ("eval", "--algos", "pa1,perceptron", "--grid", "pa1.C=0.01,0.1,1", train)
    a, b = run_json(capsys, *argv), run_json(capsys, *argv)
    assert a["tasks"][0]["results"][0]["tuned"] == b["tasks"][0]["results"][0]["tuned"]
    assert a["tasks"][0]["results"][0]["tuned"]["C"] in (0.01, 0.1, 1)
    assert a["tasks"][0]["results"][1]["tuned"] is None
    rc, out, _ = run(capsys, *argv, "--quiet")
    assert rc == 0 and "(tuned)" in out


def test_eval_repeats_reshuffle_a_file(capsys, data):
    *_, train, _ = data
    res = run_json(capsys, "eval", "--algos", "perceptron", "--shuffle", "--repeats", "3",
                   train)["tasks"][0]["results"][0]
    single = [run_json(capsys, "eval", "--algos", "perceptron", "--shuffle", "--seed", str(s),
                       train)["tasks"][0]["results"][0]["mistakes"] for s in range(3)]
    assert res["trials"] == 3 and res["mistakes"] == pytest.approx(np.mean(single))


def test_eval_shuffle(capsys, data):
    X, y, *_, train, _ = data
    base = ("eval", "--algos", "perceptron", "--passes", "2", train)
    plain = run_json(capsys, *base, "--no-shuffle")["tasks"][0]["results"][0]
    assert plain["mistakes"] == ref_perceptron(X, y, passes=2)[1]
    s1 = run_json(capsys, *base, "--shuffle", "--seed", "1")["tasks"][0]["results"][0]
    s1b = run_json(capsys, *base, "--shuffle", "--seed", "1")["tasks"][0]["results"][0]
    s2 = run_json(capsys, *base, "--shuffle", "--seed", "2")["tasks"][0]["results"][0]
    assert s1["mistakes"] == s1b["mistakes"] and s1["examples"] == 600
    assert len({plain["mistakes"], s1["mistakes"], s2["mistakes"]}) > 1


def test_eval_several_files_mean_rank(capsys, tmp_path):
    files = []
    for seed in range(3):
        X, y = make_data(n=150, seed=10 + seed, flip=0.2)
        files.append(write_svm(tmp_path / f"t{seed}.svm", X, y))
    report = run_json(capsys, "eval", "--algos", "perceptron,pa,arow", *files)
    check_schema(report)
    assert [t["data"] for t in report["tasks"]] == files
    from scipy.stats import rankdata

    ranks = [rankdata([r["online_error"] for r in t["results"]]) for t in report["tasks"]]
    expected = {a: float(np.mean([r[i] for r in ranks]))
                for i, a in enumerate(["perceptron", "pa", "arow"])}
    assert report["mean_rank"] == pytest.approx(expected)
    _, out, _ = run(capsys, "eval", "--algos", "perceptron,pa,arow", "--quiet", *files)
    assert "mean rank over 3 tasks" in out


def test_average_ranks_against_scipy():
    from scipy.stats import rankdata

    from cwkit.evaluate import average_ranks

    rng = np.random.default_rng(0)
    for _ in range(50):
        values = rng.integers(0, 4, size=rng.integers(1, 8)).astype(float)
        assert np.array_equal(average_ranks(values), rankdata(values))


def test_eval_table_and_csv(capsys, data):
    *_, train, test = data
    rc, out, _ = run(capsys, "eval", "--algos", "perceptron,arow", train, "--test", test,
                     "--quiet")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"data: {train}")
    header = lines[1].split()
    assert header[:4] == ["algo", "rank", "examples", "mistakes"]
    assert "examples/s" in lines[1] and "best by test error" in out
    report = run_json(capsys, "eval", "--algos", "perceptron,arow", train, "--test", test)
    rc, out, _ = run(capsys, "eval", "--algos", "perceptron,arow", train, "--test", test,
                     "--quiet", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["algo"] for r in rows] == ["perceptron", "arow"]
    for row, res in zip(rows, report["tasks"][0]["results"]):
        assert int(row["mistakes"]) == res["mistakes"]
        assert float(row["test_error"]) == pytest.approx(res["test_error"])
        assert row["data"] == train


def test_eval_shipped_data_set(capsys):
    """Without a data file eval runs on the shipped set and says so once: under the table's
    title, or on stderr when the output is JSON or CSV."""
    rc, out, err = run(capsys, "eval", "--algos", "perceptron,pa,cw,arow")
    assert rc == 0 and err == ""
    assert "breast-cancer" in out.splitlines()[0]
    assert out.count("no data file given") == 1 and "Breast Cancer" in out.splitlines()[1]
    rc, out, err = run(capsys, "eval", "--algos", "pa", "--format", "csv")
    assert rc == 0 and err.count("no data file given") == 1 and "Breast Cancer" in err
    assert "no data file given" not in out
    report = run_json(capsys, "eval", "--algos", "perceptron")
    X, y = datasets.load_breast_cancer()
    X = X.toarray() if hasattr(X, "toarray") else X
    task = report["tasks"][0]
    assert (task["n_examples"], task["n_features"]) == (683, 9)
    assert task["results"][0]["mistakes"] == ref_perceptron(X, y)[1]


@pytest.mark.slow
def test_eval_curve_and_plot(capsys, data, tmp_path):
    X, y, *_, train, _ = data
    curve, plot = tmp_path / "c.csv", tmp_path / "c.png"
    rc, _, err = run(capsys, "eval", "--algos", "perceptron,pa", train, "--curve", curve,
                     "--curve-every", "40", "--plot", plot, "--quiet", "--batch-size", "64")
    assert rc == 0, err
    rows = list(csv.DictReader(curve.open()))
    mine = [(int(r["examples"]), int(r["mistakes"])) for r in rows if r["algo"] == "perceptron"]
    _, mistakes, _, ref = ref_perceptron(X, y, every=40)
    assert mine == ref + [(300, mistakes)]
    assert {r["trial"] for r in rows} == {"0"}
    pytest.importorskip("matplotlib")
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_eval_plot_without_matplotlib(capsys, data, tmp_path, monkeypatch):
    *_, train, _ = data
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    plot = tmp_path / "c.png"
    rc, out, err = run(capsys, "eval", "--algos", "pa", train, "--plot", plot, "--quiet")
    assert rc == 2 and "pip install matplotlib" in err and not plot.exists() and out == ""
    rc, _, err = run(capsys, "eval", "--algos", "pa", train, "--curve",
                     tmp_path / "nowhere" / "c.csv")
    assert rc == 2 and "--curve: the folder of" in err


def test_eval_progress(capsys):
    argv = ("eval", "--algos", "pa", "--synthetic", "crammer", "--n-samples", "5000",
            "--test-size", "0", "--batch-size", "500")
    rc, _, err = run(capsys, *argv)
    lines = [ln for ln in err.splitlines() if "examples" in ln]
    assert rc == 0 and [ln.split(": ")[2].split(", ")[:2] for ln in lines] == [
        ["pass 1/1", "1,000 examples (20%)"], ["pass 1/1", "2,000 examples (40%)"],
        ["pass 1/1", "4,000 examples (80%)"]]
    assert "online error pa" in lines[0] and "/s" in lines[0]
    rc, _, err = run(capsys, *argv, "--quiet")
    assert err == ""
    # a tuning run names every value it tries
    rc, _, err = run(capsys, "eval", "--algos", "pa1", "--grid", "pa1.C=0.1,1", "--synthetic",
                     "crammer", "--n-samples", "2000", "--test-size", "0")
    tuning = next(ln for ln in err.splitlines() if "(tuning)" in ln)
    assert "online error pa1 C=0.1 " in tuning and ", pa1 C=1 " in tuning


def test_progress_rewrites_in_place_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    from cwkit.report import Progress
    stream = Tty()
    p = Progress(stream)
    p.start_run("x")
    p.update(10, [])
    p.end_run()
    assert stream.getvalue().startswith("\r\x1b[K") and "\n" not in stream.getvalue()


@pytest.mark.parametrize("suffix,opener", [(".gz", gzip.open), (".bz2", bz2.open),
                                           (".xz", lzma.open)])
def test_eval_compressed_files(capsys, tmp_path, suffix, opener):
    X, y = make_data(n=120)
    plain = run_json(capsys, "eval", "--algos", "arow", write_svm(tmp_path / "a.svm", X, y))
    packed = run_json(capsys, "eval", "--algos", "arow",
                      write_svm(tmp_path / f"a.svm{suffix}", X, y, opener))
    assert packed["tasks"][0]["results"][0]["mistakes"] == \
        plain["tasks"][0]["results"][0]["mistakes"]


def test_eval_stdin(capsys, tmp_path, monkeypatch):
    X, y = make_data(n=120)
    path = write_svm(tmp_path / "a.svm.gz", X, y, gzip.open)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(Path(path).read_bytes())))
    report = run_json(capsys, "eval", "--algos", "perceptron", "--passes", "2", "-")
    assert report["tasks"][0]["data"] == "stdin"
    assert report["tasks"][0]["results"][0]["mistakes"] == ref_perceptron(X, y, passes=2)[1]


def test_eval_n_features_and_zero_based(capsys, tmp_path):
    X, y = make_data(n=100, d=3)
    path = tmp_path / "z.svm"
    path.write_text("".join(f"{label} " + " ".join(f"{j}:{float(v)!r}" for j, v in enumerate(row))
                            + "\n" for row, label in zip(X, y)))
    auto = run_json(capsys, "eval", "--algos", "perceptron", path)["tasks"][0]
    assert auto["n_features"] == 3
    assert auto["results"][0]["mistakes"] == ref_perceptron(X, y)[1]
    forced = run_json(capsys, "eval", "--algos", "perceptron", "--zero-based",
                      "--n-features", "7", path)["tasks"][0]
    assert forced["n_features"] == 7
    assert forced["results"][0]["mistakes"] == auto["results"][0]["mistakes"]
    one = run_json(capsys, "eval", "--algos", "perceptron", "--one-based", "--n-features", "4",
                   write_svm(tmp_path / "o.svm", X, y))["tasks"][0]
    assert one["n_features"] == 4


def test_eval_synthetic_crammer(capsys):
    report = run_json(capsys, "eval", "--algos", "perceptron", "--synthetic", "crammer",
                      "--n-samples", "400", "--test-size", "500", "--seed", "3")
    check_schema(report)
    X, y = datasets.make_crammer(400, random_state=np.random.default_rng([3, 0, 0]))
    Xt, yt = datasets.make_crammer(500, random_state=np.random.default_rng([3, 0, 1]))
    w, mistakes, _, _ = ref_perceptron(X, y)
    (res,) = report["tasks"][0]["results"]
    assert report["tasks"][0]["data"] == "synthetic:crammer"
    assert res["mistakes"] == mistakes
    check_both_test_errors(res, X, y, Xt, yt)


def test_eval_synthetic_repeats_twonorm_and_drift(capsys):
    report = run_json(capsys, "eval", "--algos", "perceptron", "--synthetic", "twonorm",
                      "--n-samples", "200", "--test-size", "100", "--repeats", "3")
    res = report["tasks"][0]["results"][0]
    per_trial = []
    for r in range(3):
        X, y = datasets.make_twonorm(200, random_state=np.random.default_rng([0, r, 0]))
        per_trial.append(ref_perceptron(X, y)[1])
    assert res["trials"] == 3 and res["mistakes"] == pytest.approx(np.mean(per_trial))
    assert res["online_error_sd"] == pytest.approx(np.std(per_trial, ddof=1) / 200)
    report = run_json(capsys, "eval", "--algos", "pa,reg-pa", "--synthetic", "drift",
                      "--n-per-phase", "50", "--drift-features", "200")
    task = report["tasks"][0]
    assert (task["n_examples"], task["n_features"]) == (200, 200)
    assert task["results"][0]["test_error"] is None


def test_eval_reports_the_model_the_last_iterate_and_the_average(capsys, data):
    """test_error is that of cwkit.make(name, **params), last_test_error and
    avg_test_error those of average=False / True, on the same split, in JSON and CSV."""
    *_, train, test = data
    X, y = cwkit.load_svmlight(train)[:2]
    Xt, yt = cwkit.load_svmlight(test, n_features=X.shape[1])[:2]
    argv = ("eval", "--algos", "pa1,arow,cw:average=false,sop", "--param", "arow.average=true",
            "--param", "sop.average=false", train, "--test", test)
    report = run_json(capsys, *argv)
    check_schema(report)
    pa1, arow, cw, sop = report["tasks"][0]["results"]

    def err(name, **p):
        return float(np.mean(cwkit.make(name, **p).fit(X, y).predict(Xt) != yt))

    assert pa1["test_error"] == pa1["avg_test_error"] == err("pa1") == err("pa1", average=True)
    assert pa1["last_test_error"] == err("pa1", average=False) != pa1["test_error"]
    for res, name, value in ((arow, "arow", True), (cw, "cw", False), (sop, "sop", False)):
        assert res["test_error"] == err(name, average=value)
        assert res["last_test_error"] == err(name, average=False)
        assert res["avg_test_error"] == err(name, average=True)
        assert res["params"]["average"] is value
    rc, out, _ = run(capsys, *argv, "--format", "csv", "--quiet")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert float(rows[0]["last_test_error"]) == pa1["last_test_error"]
    assert float(rows[1]["avg_test_error"]) == arow["avg_test_error"]
    rc, out, _ = run(capsys, *argv, "--quiet")
    assert out.splitlines()[1].split()[7:13] == ["test", "err", "last", "err", "avg", "err"]


def test_eval_tasks_report_both_test_errors(capsys, tmp_path):
    X, y, path = _three_class(tmp_path)
    report = run_json(capsys, "eval", "--algos", "pa", "--tasks", "one-vs-all", path,
                      "--test", path)
    for task, c in zip(report["tasks"], (1, 2, 3)):
        yb = np.where(y == c, 1, -1)
        (res,) = task["results"]
        for key, value in (("avg_test_error", True), ("last_test_error", False)):
            est = cwkit.make("pa", average=value).partial_fit(X, yb, classes=[-1, 1])
            assert res[key] == pytest.approx(np.mean(est.predict(X) != yb)), (c, key)


def test_eval_without_test_rows_does_not_average(capsys, data):
    """No test rows: the learners are the models of their parameters, nothing more."""
    *_, train, _ = data
    report = run_json(capsys, "eval", "--algos", "pa1,arow", train)
    pa1, arow = report["tasks"][0]["results"]
    assert pa1["params"]["average"] is True and arow["params"]["average"] is False
    for res in (pa1, arow):
        assert res["last_test_error"] is None and res["avg_test_error"] is None


def _three_class(tmp_path):
    rng = np.random.default_rng(4)
    centers = rng.normal(scale=3, size=(3, 4))
    labels = rng.integers(0, 3, 240)
    X = centers[labels] + rng.normal(size=(240, 4))
    return X, labels + 1, write_svm(tmp_path / "mc.svm", X, labels + 1)


def test_eval_tasks_all_pairs_and_one_vs_all(capsys, tmp_path):
    X, y, path = _three_class(tmp_path)
    report = run_json(capsys, "eval", "--algos", "perceptron", "--tasks", "all-pairs", path)
    assert [t["data"] for t in report["tasks"]] == [f"{path}:{a}-vs-{b}"
                                                    for a, b in ((1, 2), (1, 3), (2, 3))]
    for task, (a, b) in zip(report["tasks"], ((1, 2), (1, 3), (2, 3))):
        mask = (y == a) | (y == b)
        yb = np.where(y[mask] == a, 1, -1)
        assert task["n_examples"] == mask.sum()
        assert task["results"][0]["mistakes"] == ref_perceptron(X[mask], yb)[1]
    report = run_json(capsys, "eval", "--algos", "perceptron", "--tasks", "one-vs-all", path)
    assert len(report["tasks"]) == 3
    assert report["tasks"][1]["results"][0]["mistakes"] == \
        ref_perceptron(X, np.where(y == 2, 1, -1))[1]


def ref_multiclass_perceptron(X, y_train, y_clean):
    """1-of-k perceptron, top-1 ([CS03]): on a mistake W[y] += x~,
    W[yhat] -= x~; yhat = argmax, ties to the smallest label; labels 0..K-1."""
    W = np.zeros((3, X.shape[1] + 1))
    mistakes = 0
    for x, yt, yc in zip(augment(X), y_train, y_clean):
        pred = int(np.argmax(W @ x))
        mistakes += pred != yc
        if pred != yt:
            W[yt] += x
            W[pred] -= x
    return mistakes


def test_eval_multiclass_top1(capsys, tmp_path):
    X, y, path = _three_class(tmp_path)
    report = run_json(capsys, "eval", "--algos", "perceptron", "--multiclass", "top1", path)
    task = report["tasks"][0]
    assert task["n_classes"] == 3
    res = task["results"][0]
    assert res["params"] == {"multiclass": "top1", "k": 1, "average": False,
                             "fit_intercept": True, "intercept_scaling": 1.0}
    assert res["mistakes"] == ref_multiclass_perceptron(X, y - 1, y - 1)
    # noise: another label uniformly at random; mistakes against the clean labels
    report = run_json(capsys, "eval", "--algos", "perceptron", "--noise", "0.3", path)
    noisy, flipped = datasets.flip_labels(y, 0.3, classes=[1, 2, 3], seed=0)
    assert flipped.sum() > 40
    assert report["tasks"][0]["results"][0]["mistakes"] == \
        ref_multiclass_perceptron(X, noisy - 1, y - 1)


def test_eval_multiclass_one_vs_rest(capsys, tmp_path):
    X, y, path = _three_class(tmp_path)
    report = run_json(capsys, "eval", "--algos", "perceptron", "--multiclass", "ovr", path)
    # one-vs-rest: K binary perceptrons scored before any is updated; argmax predicts
    W = np.zeros((3, 5))
    mistakes = 0
    for x, label in zip(augment(X), y - 1):
        scores = W @ x
        mistakes += int(np.argmax(scores)) != label
        for k in range(3):
            t = 1.0 if k == label else -1.0
            if t * scores[k] <= 0:
                W[k] += t * x
    assert report["tasks"][0]["results"][0]["mistakes"] == mistakes


def test_python_api_evaluate_tasks():
    from cwkit.evaluate import AlgoSpec, evaluate_tasks
    from cwkit.sources import ArraySource

    (X1, y1), (X2, y2) = make_data(n=150, seed=20), make_data(n=150, seed=21)
    report = evaluate_tasks([ArraySource(X1, y1, "one", batch_size=32),
                             ArraySource(X2, y2, "two")],
                            [AlgoSpec("perceptron"), AlgoSpec("pa")])
    check_schema(report)
    assert [t["data"] for t in report["tasks"]] == ["one", "two"]
    assert report["tasks"][0]["results"][0]["mistakes"] == ref_perceptron(X1, y1)[1]
    assert report["tasks"][1]["results"][0]["mistakes"] == ref_perceptron(X2, y2)[1]
    assert set(report["mean_rank"]) == {"perceptron", "pa"}


# ----------------------------------------------------------------------------- train/predict

def test_train_and_predict(capsys, data, tmp_path):
    X, y, Xt, _, train, test = data
    model = tmp_path / "m.cwk"
    rc, _, err = run(capsys, "train", "--algo", "perceptron", train, "-o", model,
                     "--passes", "2", "--quiet")
    assert rc == 0 and model.exists(), err
    w = ref_perceptron(X, y, passes=2)[0]
    rc, out, _ = run(capsys, "predict", model, test)
    assert rc == 0
    assert out.split() == [str(v) for v in np.where(augment(Xt) @ w > 0, 1, -1)]
    rc, out, _ = run(capsys, "predict", model, test, "--scores", "--no-header")
    assert np.allclose([float(v) for v in out.split()], augment(Xt) @ w)
    # features beyond the model's width (never seen in training) have weight 0
    wide = tmp_path / "wide.svm"
    wide.write_text("".join(line.rstrip("\n") + " 9:2.5\n"
                            for line in Path(test).read_text().splitlines(True)))
    rc, out_wide, _ = run(capsys, "predict", model, wide, "--scores", "--ignore-extra-features",
                          "--no-header")
    assert rc == 0 and np.allclose([float(v) for v in out_wide.split()], augment(Xt) @ w)
    dest = tmp_path / "labels.txt"
    rc, out, _ = run(capsys, "predict", model, test, "-o", dest)
    assert rc == 0 and out == "" and len(dest.read_text().split()) == 200


def test_train_params_and_proba(capsys, data, tmp_path):
    X, y, Xt, _, train, test = data
    model = tmp_path / "arow.cwk"
    rc, _, err = run(capsys, "train", "--algo", "arow", "--param", "r=0.5", train, "-o", model)
    assert rc == 0 and "trained arow on 300 examples" in err
    loaded = cwkit.load(model)
    assert loaded.r == 0.5
    rc, out, _ = run(capsys, "predict", model, test, "--proba", "--precision", "17")
    header, *lines = out.splitlines()
    assert header == "-1 1"
    proba = np.array([[float(v) for v in ln.split()] for ln in lines])
    ref = cwkit.make("arow", r=0.5).partial_fit(X, y)
    assert np.array_equal(proba, ref.predict_proba(Xt))


# ----------------------------------------------------------------------------- help, algos

@pytest.mark.parametrize("command", ["eval", "train", "predict", "algos"])
def test_help(capsys, command):
    rc, out, _ = run(capsys, command, "--help")
    assert rc == 0 and "examples:" in out and f"cwkit {command}" in out


def test_help_gives_the_exit_statuses(capsys):
    for argv in (["--help"], ["eval", "--help"]):
        rc, out, _ = run(capsys, *argv)
        assert rc == 0 and "exit status:" in out and "130  interrupted" in out
        assert "--strict" in out


def test_algos(capsys):
    rc, out, _ = run(capsys, "algos")
    registry = cwkit.algorithms()
    assert rc == 0
    for entry in registry:
        assert entry["name"] in out and entry["description"] in out
    rc, out, _ = run(capsys, "algos", "--format", "json")
    listed = json.loads(out)
    arow = next(e for e in registry if e["name"] == "arow")
    assert listed["arow"]["params"]["r"]["default"] == arow["params"]["r"]["default"]


def test_module_and_console_script():
    assert 'cwkit = "cwkit.cli:main"' in (ROOT / "pyproject.toml").read_text()
    # the package under test (installed, or built in place), run from elsewhere
    site = Path(cwkit.__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-m", "cwkit", "algos"], check=False,
                          capture_output=True, text=True, cwd=tempfile.gettempdir(),
                          env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0 and "arow" in proc.stdout


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize("argv,message", [
    (["eval", "--algos", "pa,nope"], "--algos: unknown algorithm 'nope'"),
    (["eval", "--algos", "arow", "--param", "arow.rr=1"], "unknown parameter 'rr' for arow"),
    (["eval", "--algos", "arow", "--param", "arow.r=-1"], "arow.r=-1"),
    (["eval", "--algos", "arow", "--param", "pa.C=1"], "'pa' is not among --algos"),
    (["eval", "--algos", "arow", "--param", "r=1"], "expected ALGO.PARAM=VALUE"),
    (["eval", "--algos", "pa1", "--grid", "pa1.C="], "expected KEY=VALUE"),
    (["eval", "--noise", "1.5"], "expected a probability in [0, 1]"),
    (["eval", "--passes", "0"], "expected an integer from 1 to 9223372036854775807"),
    (["eval", "--cv", "1"], "--cv: must be >= 2"),
    (["eval", "--bogus"], "unrecognized arguments: --bogus"),
    (["eval", "--repeats", "3", "--cv", "3"], "--repeats and --cv exclude each other"),
    (["eval", "--repeats", "3"], "--repeats on data files needs --shuffle"),
    (["eval", "--cv", "3", "--test", "t.svm", "d.svm"], "--cv and --test exclude each other"),
    (["eval", "--synthetic", "crammer", "d.svm"], "--synthetic and data files exclude"),
    (["eval", "--test", "t.svm"], "one test file per data file"),
    (["predict", "m", "d", "--scores", "--proba"], "--scores and --proba exclude each other"),
    (["train", "--algo", "nope", "x.svm", "-o", "m"], "--algo: unknown algorithm 'nope'"),
])
def test_usage_errors(capsys, argv, message):
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and out == ""
    assert err.startswith("cwkit: error: ") and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_data_errors(capsys, tmp_path, data):
    *_, train, _ = data
    rc, _, err = run(capsys, "eval", tmp_path / "missing.svm")
    assert rc == 1 and err == f"cwkit: error: {tmp_path / 'missing.svm'}: no such file\n"
    bad = tmp_path / "bad.svm"
    bad.write_text("1 1:0.5 2:1\n-1 1:0.25\n+1 3:zz\n")
    curve = tmp_path / "curve.csv"
    rc, out, err = run(capsys, "eval", bad, "--curve", curve, "--quiet")
    assert rc == 1 and out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"cwkit: error: {bad}:3:")
    assert not curve.exists() and list(tmp_path.glob("*cwkit-unfinished*")) == []
    not_model = tmp_path / "model.cwk"
    not_model.write_text("hello")
    rc, _, err = run(capsys, "predict", not_model, train)
    assert rc == 1 and err.startswith(f"cwkit: error: {not_model}:") and "model" in err
    model, out_file = tmp_path / "pa.cwk", tmp_path / "pred.txt"
    assert run(capsys, "train", "--algo", "pa", train, "-o", model, "--quiet")[0] == 0
    rc, _, err = run(capsys, "predict", model, bad, "-o", out_file)
    assert rc == 1 and not out_file.exists()
    rc, out, _ = run(capsys, "predict", model, train, "--proba", "--no-header")
    assert rc == 0 and np.allclose([sum(map(float, ln.split())) for ln in out.splitlines()], 1.0)
    rc, _, err = run(capsys, "train", "--algo", "pa", bad, "-o", tmp_path / "x.cwk")
    assert rc == 1 and not (tmp_path / "x.cwk").exists()


def test_debug_shows_the_traceback(tmp_path):
    with pytest.raises(cli.DataError, match="missing.svm: no such file"):
        main(["eval", str(tmp_path / "missing.svm"), "--debug"])
    with pytest.raises(cli.UsageError, match="unknown algorithm"):
        main(["eval", "--algos", "nope", "--debug"])


def test_output_into_a_closed_pipe_stops_quietly(tmp_path):
    """`cwkit predict model data | head -1`: no traceback, no error message."""
    X, y = datasets.make_twonorm(20000, random_state=0)
    data = tmp_path / "d.svm"
    cwkit.dump_svmlight(X, y, data)
    model = tmp_path / "m.cwk"
    cwkit.save(cwkit.make("pa1").fit(X, y), model)
    site = Path(cwkit.__file__).resolve().parents[1]
    proc = subprocess.Popen([sys.executable, "-m", "cwkit", "predict", str(model), str(data),
                             "--scores"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=tempfile.gettempdir(),
                            env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait() in (0, 141) and err == ""


# ----------------------------------------------------------------------------- outputs first

def test_outputs_are_checked_before_any_data_is_read(capsys, tmp_path):
    """A bad output path or plot format is a usage error before the data are read (here a
    malformed file, which would be a data error), never a failure after the work."""
    bad = tmp_path / "bad.svm"
    bad.write_text("1 1:0.5\n+1 3:zz\n")
    missing = tmp_path / "missing" / "m.cwk"
    for argv, message in [
        (["eval", bad, "--plot", tmp_path / "out.txt"], "--plot: "),
        (["eval", bad, "--curve", missing], "--curve: the folder of"),
        (["train", "--algo", "pa", bad, "-o", missing], f"--output: the folder of {missing}"),
        (["train", "--algo", "pa", bad, "-o", tmp_path], "is a folder"),
        (["predict", bad, bad, "-o", missing], "--output: the folder of"),
    ]:
        rc, out, err = run(capsys, *argv, "--quiet")
        assert rc == 2 and out == "" and message in err, (argv, err)
        assert "cwkit-unfinished" not in err and len(err.splitlines()) == 1
    pytest.importorskip("matplotlib")
    rc, _, err = run(capsys, "eval", bad, "--plot", tmp_path / "out.txt")
    assert "cannot write .txt images" in err and ".png" in err


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_output_files_respect_the_umask(capsys, data, tmp_path):
    import os
    *_, train, _ = data
    old = os.umask(0o027)
    try:
        model, curve = tmp_path / "m.cwk", tmp_path / "c.csv"
        assert run(capsys, "train", "--algo", "pa", train, "-o", model, "--quiet")[0] == 0
        assert run(capsys, "eval", "--algos", "pa", train, "--curve", curve, "--quiet")[0] == 0
        assert (model.stat().st_mode & 0o777) == 0o640
        assert (curve.stat().st_mode & 0o777) == 0o640
        model.chmod(0o600)  # a file replaced keeps its permissions, as with open(path, "w")
        assert run(capsys, "train", "--algo", "pa", train, "-o", model, "--quiet")[0] == 0
        assert (model.stat().st_mode & 0o777) == 0o600
    finally:
        os.umask(old)


# ----------------------------------------------------------------------------- failing learners

def _cw_fails_at_row_48(tmp_path):
    """A file on which cw's update overflows at row 48 (1-based) while pa and arow go on.

    Widened to 1,000 columns (one value in the last row's last column, so that the file
    has them too): on wide sparse rows covariance="auto" keeps the diagonal covariance,
    whose update overflows."""
    X, y = datasets.make_twonorm(100, random_state=0)
    X[37, 3] = X[38, 3] = 1e100
    X[39, 3], X[40, 3] = 1e150, 1e154
    X = np.hstack([X, np.zeros((100, 980))])
    X[99, 999] = 1.0
    path = tmp_path / "huge.svm"
    cwkit.dump_svmlight(X, y, path)
    return X, y, path


def test_a_failing_learner_is_reported_in_its_row(capsys, tmp_path):
    X, y, path = _cw_fails_at_row_48(tmp_path)
    with pytest.raises(cwkit.ModelError, match="row 47"):
        cwkit.make("cw").partial_fit(X, y, classes=[-1, 1])
    argv = ["eval", "--algos", "pa,cw,arow", path, "--batch-size", "16", "--quiet"]
    report = run_json(capsys, *argv)
    check_schema(report)
    pa, cw, arow = report["tasks"][0]["results"]
    assert pa["failed"] is None and arow["failed"] is None and pa["examples"] == 100
    assert cw["failed"]["row"] == 48 and cw["failed"]["file"] == str(path)
    assert "overflow" in cw["failed"]["error"] and cw["test_error"] is None
    assert cw["examples"] == 32  # the chunks it completed
    assert pa["mistakes"] == cwkit.make("pa").partial_fit(X, y).mistakes_
    rc, out, err = run(capsys, *argv)
    assert rc == 0 and "cw failed at row 48 of" in err and "cwkit: warning:" in err
    row = next(line for line in out.splitlines() if line.startswith("cw "))
    assert row.split()[1] == "failed"
    assert f"  cw: failed at row 48 of {path}: this update would overflow" in out
    rows = list(csv.DictReader(io.StringIO(run(capsys, *argv, "--format", "csv")[1])))
    assert rows[1]["failed"].startswith("failed at row 48") and rows[0]["failed"] == ""
    # --strict: the same output, status 1
    rc, out_strict, _ = run(capsys, *argv, "--strict")
    assert rc == 1 and out_strict.split("\n")[0] == out.split("\n")[0]
    # every value of a grid fails on the tuning run: that row fails, the others go on
    report = run_json(capsys, "eval", "--algos", "pa,cw", path, "--grid", "cw.a=1,1",
                      "--tune-on", "first-half")
    pa, cw = report["tasks"][0]["results"]
    assert pa["failed"] is None and cw["failed"]["row"] == 48
    assert cw["failed"]["error"].startswith("every value of --grid failed")
    # train: a model that failed half-way is not saved
    model = tmp_path / "cw.cwk"
    rc, _, err = run(capsys, "train", "--algo", "cw", path, "-o", model, "--quiet")
    assert rc == 1 and not model.exists()
    assert err.startswith(f"cwkit: error: {path}, row 48: this update would overflow")
    # every learner fails: status 1 with the table printed
    rc, out, err = run(capsys, "eval", "--algos", "cw", path, "--quiet")
    assert rc == 1 and "failed at row" in out


def test_a_failing_learner_row_is_the_file_row_through_filters_and_shuffles(capsys, tmp_path):
    """Row 61 of the file cannot be learnt (its squared norm overflows): every report names
    row 61, whatever the chunks, the shuffle, the noise or the binary task it is in."""
    X, _ = datasets.make_twonorm(120, random_state=0)
    X[60, 2] = 1e200
    y3 = np.arange(120) % 3  # row 61 (index 60) has label 0
    path = tmp_path / "multi.svm"
    cwkit.dump_svmlight(X, y3, path)
    def failing(*argv):
        rc, out, err = run(capsys, "eval", path, "--format", "json", "--quiet", *argv)
        assert rc == 1 and "failed at row 61" in err  # every learner (of a task) failed
        return json.loads(out)

    report = failing("--algos", "pa,arow", "--shuffle", "--noise", "0.2", "--batch-size", "7",
                     "--curve", tmp_path / "c.csv", "--curve-every", "10")
    assert [r["failed"]["row"] for r in report["tasks"][0]["results"]] == [61, 61]
    assert report["tasks"][0]["results"][0]["failed"]["error"].startswith(
        "the score or squared norm of this example is not finite")  # no row of a chunk
    report = failing("--algos", "pa", "--tasks", "all-pairs", "--batch-size", "5")
    failed = {t["data"].rsplit(":", 1)[1]: t["results"][0]["failed"] for t in report["tasks"]}
    assert failed["1-vs-2"] is None
    for task in ("0-vs-1", "0-vs-2"):
        assert (failed[task]["row"], failed[task]["file"]) == (61, str(path))
    report = failing("--algos", "pa", "--cv", "3")
    assert report["tasks"][0]["results"][0]["failed"]["row"] == 61


def test_model_warnings_become_notes(capsys, data, monkeypatch, tmp_path):
    *_, train, _ = data
    original = cwkit.linear.PassiveAggressive.partial_fit

    def noisy(self, *args, **kwargs):
        import warnings
        warnings.warn("variances collapsed", RuntimeWarning, stacklevel=2)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cwkit.linear.PassiveAggressive, "partial_fit", noisy)
    argv = ["eval", "--algos", "pa,arow", train, "--batch-size", "100", "--quiet"]
    rc, out, err = run(capsys, *argv)
    assert rc == 0 and "variances collapsed" not in err
    assert "  pa: note: RuntimeWarning: variances collapsed (3 times)" in out
    report = run_json(capsys, *argv)
    pa, arow = report["tasks"][0]["results"]
    assert pa["notes"] == ["RuntimeWarning: variances collapsed (3 times)"]
    assert arow["notes"] == []
    rc, _, err = run(capsys, "train", "--algo", "pa", train, "-o", tmp_path / "m.cwk",
                     "--batch-size", "100", "--quiet")
    assert rc == 0 and err == ("cwkit: warning: pa: RuntimeWarning: variances "
                               "collapsed (3 times)\n")


# ----------------------------------------------------------------------------- mismatches

def test_predict_on_a_file_of_another_width_or_labels(capsys, data, tmp_path):
    *_, train, test = data
    model = tmp_path / "m.cwk"
    assert run(capsys, "train", "--algo", "pa", train, "-o", model, "--quiet")[0] == 0
    wide = tmp_path / "wide.svm"
    wide.write_text("1 1:1 9:2.5\n-1 2:1\n")
    rc, out, err = run(capsys, "predict", model, wide)
    assert rc == 1 and out == "" and len(err.splitlines()) == 1
    assert f"{wide}: the model {model} has 5 features, the file has 9" in err
    # labels the model never saw: a warning, the predictions still come
    other = tmp_path / "other.svm"
    other.write_text("0 1:1\n2 2:1\n1 3:1\n")
    rc, out, err = run(capsys, "predict", model, other)
    assert rc == 0 and len(out.split()) == 3
    assert err == (f"cwkit: warning: {other}: labels 0, 2 are not among the model's classes "
                   f"(-1, 1); each row still gets one of the model's classes, and no error "
                   f"rate is reported\n")


def test_eval_test_labels_unseen_in_training(capsys, data, tmp_path):
    X, y, Xt, yt, train, _ = data
    test01 = write_svm(tmp_path / "t01.svm", Xt, (yt > 0).astype(int))
    rc, out, err = run(capsys, "eval", "--algos", "pa", train, "--test", test01, "--quiet")
    assert rc == 1 and out == ""
    assert err == (f"cwkit: error: {test01}: test labels 0 never occur in the training data "
                   f"{train} (labels -1, 1); every such row would count as a mistake\n")


def test_a_lone_index_0_in_a_one_based_file_warns(capsys, tmp_path):
    lone = tmp_path / "lone.svm"
    lone.write_text("1 1:1 3:1\n-1 2:1\n-1 0:1 2:1\n1 3:2\n")
    with pytest.warns(cwkit.SvmlightWarning, match=f"{lone}:3: the only index 0"):
        cwkit.load_svmlight(lone)
    for read in (cwkit.scan_svmlight, lambda f: list(cwkit.iter_svmlight(f))):
        with pytest.warns(cwkit.SvmlightWarning, match=f"{lone}:3: the only index 0"):
            read(lone)
    rc, _, err = run(capsys, "eval", "--algos", "pa", lone, "--quiet")
    assert rc == 0 and err.startswith(f"cwkit: warning: {lone}:3: the only index 0 of the "
                                      f"data ('0:1') makes it zero-based")
    rc, _, err = run(capsys, "eval", "--algos", "pa", lone, "--quiet", "--zero-based")
    assert rc == 0 and err == ""
    with warnings.catch_warnings():  # index 0 in several rows: a zero-based file
        warnings.simplefilter("error")
        cwkit.load_svmlight(io.BytesIO(b"1 0:1\n-1 0:2 1:1\n"))


# ----------------------------------------------------------------------------- smaller checks

def test_small_usage_and_data_errors(capsys, data, tmp_path):
    *_, train, _ = data
    rc, out, err = run(capsys, "eval", "--cv", "0", train, "--quiet")
    assert rc == 2 and out == "" and "--cv: must be >= 2, got 0" in err
    empty = tmp_path / "empty.svm"
    empty.write_text("# only a comment\n\n")
    for argv in (["eval", empty], ["train", "--algo", "pa", empty, "-o", tmp_path / "m"]):
        rc, _, err = run(capsys, *argv, "--quiet")
        assert rc == 1 and err == f"cwkit: error: {empty}: no examples (an empty file, or " \
                                  f"only blank and comment lines)\n"
    half = tmp_path / "half.svm"
    half.write_text("1 1:1\n# a comment\n-1 2:1\n0.5 1:2\n")
    rc, _, err = run(capsys, "eval", half, "--quiet")
    assert rc == 1 and err.startswith(f"cwkit: error: {half}:4: label 0.5 is not an integer")
    zero = tmp_path / "zero.svm"
    zero.write_text("1 1:1\n-1 0:1\n")
    rc, _, err = run(capsys, "eval", zero, "--one-based", "--quiet")
    assert rc == 1 and "pass --zero-based if" in err and "zero_based" not in err
    rc, _, err = run(capsys, "eval", train, "--n-features", "2", "--one-based",
                     "--classes=-1,1", "--quiet")
    assert rc == 1 and "beyond --n-features 2" in err
    multi = tmp_path / "multi.svm"
    multi.write_text("1 1:1\n2 2:1\n3 1:1 2:1\n")
    rc, out, err = run(capsys, "eval", "--algos", "sop,perceptron", "--multiclass", "topk",
                       multi, "--quiet")
    assert rc == 2 and out == "" and err.startswith("cwkit: error: --multiclass topk: ")
    assert "Perceptron" in err and len(err.splitlines()) == 1
    rc, _, err = run(capsys, "train", "--algo", "sop", "--multiclass", "topk", multi,
                     "-o", tmp_path / "m.cwk")
    assert rc == 2 and "--multiclass topk" in err


def test_a_model_out_of_memory_fails_its_row(capsys, data, monkeypatch):
    *_, train, _ = data

    def no_memory(self, *args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(cwkit.linear.PassiveAggressive, "partial_fit", no_memory)
    report = run_json(capsys, "eval", "--algos", "pa,arow", train)
    pa, arow = report["tasks"][0]["results"]
    assert pa["failed"]["error"] == "MemoryError" and pa["failed"]["row"] == 1
    assert arow["failed"] is None


# ----------------------------------------------------------------------------- Ctrl-C

def _interrupt_at(monkeypatch, examples):
    """KeyboardInterrupt from the progress hook once ``examples`` rows are learnt."""
    def update(self, seen, learners, *where):
        if seen >= examples:
            raise KeyboardInterrupt

    monkeypatch.setattr(cwkit.report.Progress, "update", update)


def test_ctrl_c_prints_what_is_finished(capsys, tmp_path, monkeypatch):
    X, y = make_data(n=3000)
    a, b = write_svm(tmp_path / "a.svm", X, y), write_svm(tmp_path / "b.svm", X[:500], y[:500])
    _interrupt_at(monkeypatch, 2000)
    argv = ["eval", "--algos", "perceptron,pa", b, a, "--batch-size", "500", "--quiet"]
    rc, out, err = run(capsys, *argv, "--format", "json")
    assert rc == 130 and "cwkit: interrupted: the results of 2 of 2 task(s)" in err
    report = json.loads(out)
    check_schema(report)
    done, partial = report["tasks"]
    assert not done["interrupted"] and done["results"][0]["examples"] == 500
    assert partial["interrupted"] and partial["results"][0]["examples"] == 2000
    assert partial["results"][0]["mistakes"] == ref_perceptron(X[:2000], y[:2000])[1]
    rc, out, _ = run(capsys, *argv)
    assert rc == 130 and "INTERRUPTED: partial results" in out
    rc, out, _ = run(capsys, *argv, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rc == 130 and [r["interrupted"] for r in rows] == ["false"] * 2 + ["true"] * 2
    # train: nothing saved; predict -o: nothing written
    model = tmp_path / "m.cwk"
    rc, _, err = run(capsys, "train", "--algo", "pa", a, "-o", model, "--batch-size", "500")
    assert rc == 130 and not model.exists()
    assert "cwkit: interrupted after 2,000 examples (" in err and "no model saved" in err


def test_sigint_in_the_middle_of_a_run(tmp_path):
    """A real Ctrl-C (SIGINT) during a long run: the table so far, status 130."""
    import signal

    X, y = make_data(n=2000)
    path = write_svm(tmp_path / "d.svm", X, y)
    site = Path(cwkit.__file__).resolve().parents[1]
    proc = subprocess.Popen([sys.executable, "-X", "faulthandler", "-m", "cwkit", "eval",
                             "--algos", "pa,arow",
                             path, "--passes", "100000", "--batch-size", "500"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tempfile.gettempdir(),
                            env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    for line in proc.stderr:  # progress lines: 1,000, 2,000, 4,000, ... examples
        if "8,000 examples" in line:
            break
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:  # where every thread of the child stands, then fail
        proc.send_signal(signal.SIGABRT)
        out, err = proc.communicate()
        raise AssertionError("no exit 120 s after SIGINT; the child's threads:\n"
                             + err[-4000:]) from None
    assert proc.returncode == 130, err
    assert "INTERRUPTED: partial results" in out and "pa" in out and "arow" in out
    assert "cwkit: interrupted: the results of 1 of 1 task(s)" in err
    examples = int(next(ln for ln in out.splitlines()
                        if ln.startswith("pa")).split()[2].replace(",", ""))
    assert examples >= 8000 and examples % 500 == 0


# ----------------------------------------------------------------------------- --hash-bits

def test_hash_bits_bound_the_width(capsys, tmp_path):
    X, y = make_data(n=200, d=4)
    path = tmp_path / "wide.svm"
    # the same four features at indices up to 2**30: folded mod 2**4 they are 1..4 again
    with path.open("w") as f:
        for row, label in zip(X, y):
            feats = " ".join(f"{i}:{v!r}" for i, v in sorted(
                (j + 1 + (j % 2) * 2**30, float(v)) for j, v in enumerate(row)))
            f.write(f"{label} {feats}\n")
    narrow = write_svm(tmp_path / "narrow.svm", X, y)
    report = run_json(capsys, "eval", "--algos", "perceptron", path, "--hash-bits", "4")
    assert report["tasks"][0]["n_features"] == 16
    assert report["tasks"][0]["results"][0]["mistakes"] == ref_perceptron(X, y)[1]
    model = tmp_path / "m.cwk"
    rc, _, err = run(capsys, "train", "--algo", "perceptron", path, "--hash-bits", "4",
                     "-o", model, "--quiet")
    assert rc == 0, err
    assert cwkit.load(model).coef_.shape[-1] == 16 and cwkit.load(model).hash_bits_ == 4
    rc, hashed, _ = run(capsys, "predict", model, path, "--hash-bits", "4", "--scores")
    rc2, plain, _ = run(capsys, "predict", model, narrow, "--scores")
    rc3, kept, _ = run(capsys, "predict", model, path, "--scores")   # the model's B
    assert rc == rc2 == rc3 == 0 and hashed == plain == kept
    # the model keeps its B: other widths are refused with both values
    rc, out, err = run(capsys, "predict", model, path, "--hash-bits", "3")
    assert rc == 1 and not out
    assert err == (f"cwkit: error: {model}: the model was trained with --hash-bits 4, the "
                   "data are given --hash-bits 3\n")
    # a model whose file does not say (an earlier cwkit's): its width must be 2^B
    old = cwkit.load(model)
    del old.hash_bits_
    cwkit.save(old, model)
    rc, _, err = run(capsys, "predict", model, path, "--hash-bits", "3")
    assert rc == 1 and "the model has 16 features, --hash-bits 3 folds the data into 8" in err
    rc, _, err = run(capsys, "predict", model, path)
    assert rc == 1 and "or with --hash-bits?" in err
    for argv in (["eval", path, "--hash-bits", "4", "--n-features", "16"],
                 ["train", "--algo", "pa", path, "--hash-bits", "4", "--n-features", "16",
                  "-o", model],
                 ["eval", path, "--hash-bits", "32"]):
        rc, _, err = run(capsys, *argv)
        assert rc == 2 and "--hash-bits" in err
    # 2^31 columns are more than a model takes: refused as the option is read
    rc, _, err = run(capsys, "train", "--algo", "pa", path, "--hash-bits", "31", "-o", model)
    assert rc == 2 and err.startswith("cwkit: error: argument --hash-bits: expected an "
                                      "integer from 1 to 30") and err.count("\n") == 1


@pytest.mark.parametrize("bits", [0, 31, "4", True])
def test_a_model_file_with_bad_hash_bits_is_damaged(tmp_path, bits):
    X, y = make_data(n=20, d=4)
    path = tmp_path / "m.cwk"
    cwkit.save(cwkit.make("pa").fit(X, y), path)
    with np.load(path) as f:
        arrays = dict(f)
    meta = json.loads(arrays["__meta__"].tobytes())
    arrays["__meta__"] = np.frombuffer(json.dumps({**meta, "hash_bits": bits}).encode(),
                                       np.uint8)
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    with pytest.raises(cwkit.ModelFileError, match="hash_bits is not an integer from 1 "
                       "to 30"):
        cwkit.load(path)


def test_results_are_printed_before_the_output_files_are_written(capsys, data, tmp_path,
                                                                 monkeypatch):
    *_, train, _ = data

    def disk_full(path, text):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(cwkit.report, "write_text", disk_full)
    curve = tmp_path / "c.csv"
    rc, out, err = run(capsys, "eval", "--algos", "pa", train, "--curve", curve, "--quiet")
    assert rc == 1 and out.startswith(f"data: {train}") and "pa *" in out
    assert err == f"cwkit: error: {curve}: No space left on device\n"


def test_predict_with_a_damaged_model_file(capsys, data, tmp_path):
    """One line naming the file once, exit 1, no traceback, for a file that is not a model
    and for one whose arrays were damaged."""
    train, test = data[4], data[5]
    model = tmp_path / "m.cwk"
    assert run(capsys, "train", "--algo", "pa1", train, "-o", model)[0] == 0
    junk = tmp_path / "junk.cwk"
    junk.write_bytes(b"not a model")
    damaged = tmp_path / "damaged.cwk"
    blob = bytearray(model.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    damaged.write_bytes(bytes(blob))
    for path in (junk, damaged):
        rc, out, err = run(capsys, "predict", path, test)
        assert rc == 1 and out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"cwkit: error: {path}: ")
        assert lines[0].count(str(path)) == 1 and "Traceback" not in err and "pickle" not in err


# ----------------------------------------------------------------------------- --parse-jobs

def test_parse_jobs_never_change_results(capsys, data, tmp_path, monkeypatch):
    monkeypatch.setattr(cwkit.svmlight, "_PIECE_MIN", 64)    # cut the small file's blocks
    *_, path, _ = data
    reports = []
    for jobs in ("1", "3"):
        report = run_json(capsys, "eval", "--algos", "pa,arow", path, "--parse-jobs", jobs,
                          "--batch-size", "7")
        reports.append([(r["mistakes"], r["updates"]) for r in report["tasks"][0]["results"]])
        rc, _, err = run(capsys, "train", "--algo", "arow", path, "--parse-jobs", jobs,
                         "-o", tmp_path / f"m{jobs}.cwk", "--quiet")
        assert rc == 0, err
        rc, out, err = run(capsys, "predict", tmp_path / f"m{jobs}.cwk", path, "--scores",
                           "--parse-jobs", jobs)
        assert rc == 0, err
        reports.append(out)
    assert reports[:2] == reports[2:]
    rc, _, err = run(capsys, "eval", path, "--parse-jobs", "0")
    assert rc == 2 and "--parse-jobs" in err


@pytest.mark.parametrize(("cores", "algos", "jobs"), [
    (2, "pa", 1), (2, "pa,cw,arow", 1), (4, "pa", 3), (4, "pa,cw,arow", 1),
    (8, "pa,cw,arow", 4), (16, "pa", 4), (1, "pa", 1)])
def test_parse_jobs_default_leaves_the_learners_their_cores(capsys, data, monkeypatch,
                                                             tmp_path, cores, algos, jobs):
    """eval and train parse with the cores their learners leave (at least 1, at most 4);
    an explicit --parse-jobs is kept."""
    *_, path, _ = data
    monkeypatch.setattr(cwkit.svmlight, "usable_cores", lambda: cores)
    made = []
    real = cwkit.sources.SvmlightSource

    def spy(*args, **kwargs):
        made.append(kwargs["n_jobs"])
        return real(*args, **kwargs)

    monkeypatch.setattr(cwkit.sources, "SvmlightSource", spy)
    run_json(capsys, "eval", "--algos", algos, path)
    model = tmp_path / "m.cwk"
    rc, _, err = run(capsys, "train", "--algo", "pa", path, "--quiet", "-o", model)
    assert rc == 0, err
    rc, _, err = run(capsys, "train", "--algo", "pa", path, "--quiet", "-o", model,
                     "--parse-jobs", "3")
    assert rc == 0, err
    one = max(1, min(4, cores - 1))
    assert made == [jobs, one, 3]


def test_bad_line_reported_as_a_full_scan_would(tmp_path, capsys):
    """The scan reads only each row's label and first and last index: a bad token
    between them is found by the pass over the rows, or before a summary error (the odd
    label of line 5), and reported as the full scan reports it, with no result."""
    good = "1 1:1 2:1\n-1 2:1 3:1\n"
    for bad, tail in (("1 1:1 3:x 4:1\n", ""), ("1 5:1 2:1 6:1\n", "0.5 1:1\n"),
                      ("-1 3:1 0:1 4:1\n", "")):
        path = tmp_path / "bad.svm"
        path.write_text(good * 3000 + bad + good + tail)
        with pytest.raises(cwkit.SvmlightError) as full:
            cwkit.scan_svmlight(path)
        assert full.value.line == 6001
        for argv in (["eval", path, "--batch-size", "100"],
                     ["train", "--algo", "pa", path, "-o", tmp_path / "m.npz"]):
            rc, out, err = run(capsys, *argv, "--quiet")
            assert (rc, out) == (1, "")
            assert err == f"cwkit: error: {path}:6001: {full.value.message}\n"
        assert not (tmp_path / "m.npz").exists()


@pytest.mark.parametrize("multiclass", [False, True], ids=["binary", "three-class"])
def test_eval_ranks_the_model_train_saves_for_every_name(capsys, tmp_path, multiclass):
    """For every name, eval's test error is the error of `cwkit train` -> `cwkit predict`
    on the same files, exactly: one default everywhere."""
    if multiclass:
        X, y, _ = _three_class(tmp_path)
        train = write_svm(tmp_path / "tr.svm", X[:150], y[:150])
        test = write_svm(tmp_path / "te.svm", X[150:], y[150:])
        yt = y[150:]
    else:
        X, y = make_data(n=200, seed=3)
        Xt, yt = make_data(n=100, seed=4)
        train, test = write_svm(tmp_path / "tr.svm", X, y), write_svm(tmp_path / "te.svm", Xt, yt)
    names = [e["name"] for e in cwkit.algorithms()]
    report = run_json(capsys, "eval", "--algos", ",".join(names), train, "--test", test)
    by_name = {r["algo"]: r for r in report["tasks"][0]["results"]}
    for name in names:
        model = tmp_path / f"{name}.cwk"
        rc, _, err = run(capsys, "train", "--algo", name, train, "-o", model, "--quiet")
        assert rc == 0, err
        rc, out, _ = run(capsys, "predict", model, test, "--quiet")
        predicted = np.array([float(v) for v in out.split()])
        res = by_name[name]
        assert res["test_error"] == np.mean(predicted != yt), name
        assert res["test_error"] == res["avg_test_error" if res["params"]["average"]
                                        else "last_test_error"], name


def test_predict_reports_the_error_and_log_loss_of_a_labelled_file(capsys, tmp_path):
    """Test mode: the error rate (and with --proba the log loss) on stderr; --quiet
    silences it; --scores / --proba print a header of the columns' classes at %.6g."""
    X, y, path = _three_class(tmp_path)
    model = tmp_path / "m.cwk"
    assert run(capsys, "train", "--algo", "pa1", path, "-o", model, "--quiet")[0] == 0
    est = cwkit.load(model)
    wrong = int(np.count_nonzero(est.predict(X) != y))
    rc, out, err = run(capsys, "predict", model, path)
    assert rc == 0 and err == (f"cwkit: {path}: error {100 * wrong / y.size:.2f}% "
                               f"({wrong} of {y.size} rows)\n")
    rc, out, err = run(capsys, "predict", model, path, "--proba")
    P = est.predict_proba(X)
    loss = -np.mean(np.log(np.clip(P[np.arange(y.size), y - 1], 1e-15, 1)))
    assert err.endswith(f", log loss {loss:.4f}\n") and f"error {100 * wrong / y.size:.2f}%" in err
    header, first = out.splitlines()[:2]
    assert header == "1 2 3" and first == " ".join(f"{v:.6g}" for v in P[0])
    rc, out, err = run(capsys, "predict", model, path, "--scores", "--precision", "3",
                       "--quiet")
    assert err == "" and out.splitlines()[1] == " ".join(
        f"{v:.3g}" for v in est.decision_function(X[:1])[0])
    # labels the model does not know (an unlabelled file's placeholders): no test line
    unlabelled = write_svm(tmp_path / "u.svm", X, np.full(y.size, 7))
    rc, out, err = run(capsys, "predict", model, unlabelled)
    assert rc == 0 and "rows)" not in err and "no error rate" in err
    assert len(out.split()) == y.size


def _same_model(a, b):
    a, b = cwkit.load(a), cwkit.load(b)
    assert a.get_params() == b.get_params()
    assert all(np.array_equal(a._model.state[k], b._model.state[k]) for k in a._model.state)
    assert (a.t_, a.mistakes_, a.n_updates_) == (b.t_, b.mistakes_, b.n_updates_)
    assert all(np.array_equal(u, v) for u, v in zip(a._calibration.rounds(),
                                                     b._calibration.rounds()))


def test_train_goes_on_from_a_model_as_one_run_on_both_files(capsys, tmp_path):
    """`train -i model.cwk more.svm` is, bit for bit, one run on the two files together,
    for every name; `-i` with --passes is more passes."""
    X, y = make_data(n=260, seed=5)
    first, more = write_svm(tmp_path / "a.svm", X[:120], y[:120]), \
        write_svm(tmp_path / "b.svm", X[120:], y[120:])
    both = write_svm(tmp_path / "ab.svm", X, y)
    for name in [e["name"] for e in cwkit.algorithms()]:
        m1, m2, m3 = (tmp_path / f"{name}{i}.cwk" for i in (1, 2, 3))
        for argv in (("--algo", name, first, "-o", m1), ("-i", m1, more, "-o", m2),
                     ("--algo", name, both, "-o", m3)):
            # (chunks of 40 rows end on mini-batch PA's groups of 4, whose scratch rows
            # past the pending count would otherwise differ)
            rc, _, err = run(capsys, "train", *argv, "--quiet", "--batch-size", "40")
            assert rc == 0, (name, err)
        _same_model(m2, m3)
    once, twice = tmp_path / "p1.cwk", tmp_path / "p2.cwk"
    assert run(capsys, "train", "--algo", "cw", first, "-o", once, "--quiet")[0] == 0
    assert run(capsys, "train", "-i", once, first, "-o", once, "--quiet")[0] == 0
    assert run(capsys, "train", "--algo", "cw", first, "--passes", "2", "-o", twice,
               "--quiet")[0] == 0
    _same_model(once, twice)


def test_train_i_refuses_parameters_that_contradict_the_model(capsys, tmp_path):
    X, y = make_data(n=60, seed=6)
    path, model = write_svm(tmp_path / "a.svm", X, y), tmp_path / "m.cwk"
    assert run(capsys, "train", "--algo", "pa1", "--param", "C=0.5", path, "-o", model,
               "--quiet")[0] == 0
    for argv, said in ((("--algo", "arow"), "the model is pa1, not arow"),
                       (("--param", "C=0.1"), "C=0.1 contradicts the model's C=0.5"),
                       (("--param", "r=1"), "pa1 has no parameter 'r'")):
        rc, _, err = run(capsys, "train", "-i", model, *argv, path, "-o", tmp_path / "x.cwk")
        assert rc == 2 and said in err and not (tmp_path / "x.cwk").exists()
    # the same values are no contradiction
    assert run(capsys, "train", "-i", model, "--algo", "pa1", "--param", "C=0.5", path,
               "-o", tmp_path / "y.cwk", "--quiet")[0] == 0
    rc, _, err = run(capsys, "train", "-i", model, write_svm(tmp_path / "t.svm", X, y + 5),
                     "-o", tmp_path / "x.cwk")
    assert rc == 1 and "are not among the classes of the model" in err
    # the model's --hash-bits go on; another B contradicts it, both named
    hashed = tmp_path / "h.cwk"
    assert run(capsys, "train", "--algo", "pa1", "--hash-bits", "6", path, "-o", hashed,
               "--quiet")[0] == 0
    rc, _, err = run(capsys, "train", "-i", hashed, "--hash-bits", "7", path, "-o",
                     tmp_path / "x.cwk")
    assert rc == 2 and "--hash-bits 7 contradicts the model, trained with --hash-bits 6" in err
    rc, _, err = run(capsys, "train", "-i", model, "--hash-bits", "7", path, "-o",
                     tmp_path / "x.cwk")
    assert rc == 2 and "trained without --hash-bits" in err
    assert not (tmp_path / "x.cwk").exists()
    assert run(capsys, "train", "-i", hashed, path, "-o", tmp_path / "h2.cwk", "--quiet")[0] == 0
    assert cwkit.load(tmp_path / "h2.cwk").hash_bits_ == 6
    rc, _, err = run(capsys, "train", path, "-o", tmp_path / "x.cwk")
    assert rc == 2 and "--algo is required (or -i MODEL" in err
