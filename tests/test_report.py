"""cwkit.report on its own: the formats of `cwkit eval` from a Python result, and
atomic writes."""
import csv
import io
import json
import sys

import numpy as np
import pytest

from cwkit import datasets, report
from cwkit.evaluate import AlgoSpec, evaluate_tasks
from cwkit.registry import algorithms
from cwkit.sources import ArraySource


SPECS = [AlgoSpec("perceptron"), AlgoSpec("pa1", params={"C": 0.5})]


@pytest.fixture(scope="module")
def outcome():
    X1, y1 = datasets.make_twonorm(200, random_state=0)
    X2, y2 = datasets.make_twonorm(150, random_state=1)
    return evaluate_tasks([ArraySource(X1, y1, "one", batch_size=32),
                           ArraySource(X2, y2, "two")],
                          SPECS, curve_every=50)


def test_table(outcome):
    text = report.table(report.without_curves(outcome), SPECS,
                        {"one": ["a note on task one"]})
    lines = text.splitlines()
    assert lines[0] == "data: one  (200 examples, 20 features, 2 classes)"
    assert lines[1] == "  a note on task one"
    assert lines[2].split()[:3] == ["algo", "rank", "examples"]
    rows = {line.split()[0]: line for line in lines[3:5]}
    assert set(rows) == {"perceptron", "pa1"} and rows["pa1"].endswith("C=0.5")
    assert rows["perceptron"].endswith("defaults")
    assert text.count("(* best by online error;") == 2
    assert lines[-1].startswith("mean rank over 2 tasks: ")


def test_json_and_csv_agree(outcome):
    public = report.without_curves(outcome)
    assert all("curves" in t for t in outcome["tasks"])
    assert all("curves" not in t for t in public["tasks"])
    parsed = json.loads(report.json_text(public))
    rows = list(csv.DictReader(io.StringIO(report.results_csv(public))))
    assert list(rows[0]) == report.CSV_FIELDS
    assert len(rows) == 4
    for row, (task, res) in zip(rows, [(t, r) for t in parsed["tasks"] for r in t["results"]]):
        assert (row["data"], row["algo"]) == (task["data"], res["algo"])
        assert int(row["mistakes"]) == res["mistakes"]
        assert float(row["mean_rank"]) == parsed["mean_rank"][res["algo"]]
        assert row["test_error"] == ""  # null


TESTED_SPECS = [AlgoSpec("pa"), AlgoSpec("pa", {"average": False}, label="pa-last")]


@pytest.fixture(scope="module")
def tested():
    """A task with test rows, --cv 3: pa (averaged and last) and pa:average=false."""
    X, y = datasets.make_twonorm(240, random_state=2)
    X = X + np.random.default_rng(3).normal(scale=2.0, size=X.shape)
    return evaluate_tasks([ArraySource(X, y, "noisy")], TESTED_SPECS, cv=3)


def test_table_shows_the_model_the_last_iterate_and_the_average(tested, outcome):
    text = report.table(tested, TESTED_SPECS)
    lines = text.splitlines()
    header = lines[1].split("  ")
    header = [h.strip() for h in header if h.strip()]
    assert header[5:9] == ["updates", "test err", "last err", "avg err"]
    cols = {line.split()[0]: line for line in lines[2:4]}
    avg, last = tested["tasks"][0]["results"]
    assert avg["test_error"] == avg["avg_test_error"] != avg["last_test_error"]
    # pa:average=false: its own (last) iterate in "test err", both columns from one run
    assert last["test_error"] == last["last_test_error"] == avg["last_test_error"]
    assert last["avg_test_error"] == avg["avg_test_error"]

    def shown(res, key):
        return f"{100 * res[key]:.2f}% ± {100 * res[key + '_sd']:.2f}"

    assert (f"{shown(avg, 'test_error')}  {shown(avg, 'last_test_error')}  "
            f"{shown(avg, 'avg_test_error')}") in cols["pa"]
    assert (f"{shown(last, 'last_test_error')}  {shown(last, 'last_test_error')}  "
            f"{shown(avg, 'avg_test_error')}") in cols["pa-last"]
    assert "test err: the model of each name's parameters, the one cwkit train saves" in text
    assert "run: cwkit " in text and "3-fold cross-validation" in text
    assert "  pa-last: average=False fit_intercept=True intercept_scaling=1" in text
    # no test rows: no "last err" column
    plain = report.table(report.without_curves(outcome), SPECS)
    assert "last err" not in plain and "avg err" not in plain and "test err" in plain


def test_a_failed_learner_shows_no_measured_value():
    X, y = datasets.make_twonorm(60, random_state=0)
    specs = [AlgoSpec("pa"), AlgoSpec("l1-pa", {"beta": 0.001})]
    result = evaluate_tasks([ArraySource(X, y, "t")], specs, cv=2)
    row = next(line for line in report.table(result, specs).splitlines()
               if line.startswith("l1-pa"))
    cells = row.split()
    assert cells[1] == "failed" and set(cells[2:-1]) == {"-"} and "%" not in row


def test_numbers_one_way():
    assert report._format_number(1234567) == "1,234,567"
    assert report._format_number(1234.5678) == "1,234.6"     # a mean over trials
    assert report.format_value(1e200) == "1e+200" and report.format_value(0.5) == "0.5"


def test_json_and_csv_give_every_test_error(tested):
    parsed = json.loads(report.json_text(tested))
    rows = list(csv.DictReader(io.StringIO(report.results_csv(tested))))
    keys = [k + s for k in ("test_error", "last_test_error", "avg_test_error")
            for s in ("", "_sd")]
    assert set(keys) <= set(report.CSV_FIELDS)
    for row, res in zip(rows, parsed["tasks"][0]["results"]):
        for key in keys:
            assert (row[key] == "" if res[key] is None else float(row[key]) == res[key]), key
        assert row["cv"] == "3" and row["cwkit"] == parsed["tasks"][0]["run"]["cwkit"]
    assert rows[1]["params"].startswith("average=False;")


def test_curves_csv(outcome):
    rows = list(csv.DictReader(io.StringIO(report.curves_csv(outcome))))
    one = [(int(r["examples"]), int(r["mistakes"])) for r in rows
           if r["data"] == "one" and r["algo"] == "perceptron"]
    assert [e for e, _ in one] == [50, 100, 150, 200]
    final = outcome["tasks"][0]["results"][0]["mistakes"]
    assert one[-1][1] == final and [m for _, m in one] == sorted(m for _, m in one)


def test_jsonable():
    obj = {1: np.float64(0.5), "b": (np.int64(3), float("inf")), "c": [float("nan")]}
    assert report.jsonable(obj) == {"1": 0.5, "b": [3, None], "c": [None]}
    assert report.json_text({"a": np.int32(2)}) == '{\n  "a": 2\n}\n'


def test_format_label():
    assert [report.format_label(v) for v in (np.float64(2.0), 0.25, np.int64(3), "x")] == \
        ["2", "0.25", "3", "x"]


def test_algorithms_text():
    registry = {e["name"]: e for e in algorithms()}
    text = report.algorithms_text(registry)
    body, footer = text.split("\nkernel forms: ")
    names = [line.split()[0] for line in body.splitlines() if not line.startswith(" ")]
    assert names == list(registry)
    assert "budget_policy=" in footer and "kernel_approx=" in footer
    for pname, p in registry["pa1"]["params"].items():
        assert f"\n{'':16}  {pname}={p['default']!r}  ({p['valid']})\n" in text


def test_atomic_write(tmp_path):
    path = tmp_path / "out.txt"
    report.write_text(path, "first\n")
    assert path.read_text() == "first\n"

    def fail(tmp):
        with open(tmp, "w") as f:
            f.write("partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        report.atomic_write(path, fail)
    assert path.read_text() == "first\n"  # the old file, untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]  # no .part left


def test_plot_without_matplotlib(outcome, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(report.PlotUnavailable, match="pip install matplotlib"):
        report.plot(outcome, tmp_path / "c.png")
    assert not (tmp_path / "c.png").exists()


def test_plot(outcome, tmp_path):
    pytest.importorskip("matplotlib")
    report.plot(outcome, tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _png_size(path):
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


@pytest.mark.slow
def test_plot_many_tasks_is_one_summary_figure(tmp_path):
    pytest.importorskip("matplotlib")
    X, y = datasets.make_twonorm(60, random_state=0)
    many = evaluate_tasks([ArraySource(X, y, f"task {i}") for i in range(45)], SPECS,
                          curve_every=20)
    path = tmp_path / "many.png"
    report.plot(many, path)
    width, height = _png_size(path)
    assert width <= 1500 and height <= 600  # not 45 stacked panels (700 x 18,000 px)
    fig = report.figure(many)
    assert len(fig.axes) == 2 and "mean rank over 45 tasks" in fig.axes[0].get_xlabel()
    few = evaluate_tasks([ArraySource(X, y, f"task {i}") for i in range(3)], SPECS,
                         curve_every=20)
    assert len(report.figure(few).axes) == 3 <= report.PLOT_TASK_PANELS


def test_plot_identical_curves_stay_visible():
    pytest.importorskip("matplotlib")
    X, y = datasets.make_twonorm(200, random_state=0)
    twins = [AlgoSpec("perceptron"), AlgoSpec("perceptron", label="perceptron again")]
    outcome = evaluate_tasks([ArraySource(X, y, "one")], twins, curve_every=10)
    (ax,) = report.figure(outcome).axes
    first, second = ax.get_lines()
    assert np.array_equal(first.get_ydata(), second.get_ydata())
    assert first.get_linestyle() != second.get_linestyle()
    assert first.get_marker() != second.get_marker()
    assert first.get_markevery() != second.get_markevery()
