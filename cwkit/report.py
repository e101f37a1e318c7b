"""What ``cwkit`` shows: progress on stderr, then text table, JSON, CSV, curves, plots.

:class:`Progress` is handed to :func:`cwkit.evaluate.evaluate` or
:func:`~cwkit.evaluate.train`, which tell it of each chunk learnt. The other functions take
the result of :func:`cwkit.evaluate.evaluate_tasks` (``{"tasks": [...], "mean_rank":
...}``, the JSON schema of docs/cli.md) and return text, except :func:`plot`, which draws
into a file. Files are written with :func:`atomic_write`: to a temporary file moved into
place on success, so an error leaves no partial file.
"""
import csv
import io
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

from .evaluate import task_ranks
from ._atomic import atomic_write

__all__ = [
    "CSV_FIELDS",
    "PLOT_TASK_PANELS",
    "REGRESSION_CSV_FIELDS",
    "PlotUnavailable",
    "Progress",
    "algorithms_text",
    "atomic_write",
    "check_writable",
    "curves_csv",
    "failure_lines",
    "figure",
    "format_label",
    "json_text",
    "jsonable",
    "matplotlib_pyplot",
    "plot",
    "plot_format",
    "results_csv",
    "table",
    "write_text",
    "without_curves",
]


class PlotUnavailable(ImportError):
    """matplotlib, an optional extra, is not installed."""


class Progress:
    """Progress of runs: one line rewritten in place on a terminal, else lines at 1k, 2k,
    4k, ... examples; each shows the examples seen, their rate and every learner's online
    error (by its ``shown`` name: a tuning run's learners by the values they try).

    Parameters
    ----------
    stream : file-like, default sys.stderr
    enabled : bool, default True
        False: show nothing (``--quiet``).
    """

    FIRST_LINE = 1000  # examples at the first line when not on a terminal; then doubling
    REDRAW_SECONDS = 0.2  # least time between two redraws on a terminal

    def __init__(self, stream=None, enabled=True):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled
        self.label = ""
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.next_line = self.FIRST_LINE
        self.last_draw = 0.0
        self.start = time.perf_counter()
        self.dirty = False

    def start_run(self, label):
        """A new run named ``label`` starts: rate and line schedule restart."""
        self.label = label
        self.start = time.perf_counter()
        self.next_line = self.FIRST_LINE

    def update(self, examples, learners, pass_no=0, passes=1, total=None):
        """Show ``examples`` seen so far (in pass ``pass_no`` of ``passes``, 0-based; their
        percentage of ``total``, the examples of every pass, when known) and each learner's
        online error, when due."""
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.tty:
            if now - self.last_draw < self.REDRAW_SECONDS:
                return
        elif examples < self.next_line:
            return
        while self.next_line <= examples:
            self.next_line *= 2
        self.last_draw = now
        rate = examples / max(now - self.start, 1e-9)
        errs = ", ".join(f"{lr.shown} {lr.online_text()}" for lr in learners)
        share = f" ({100.0 * examples / total:.0f}%)" if total else ""
        text = (f"cwkit: {self.label}: pass {pass_no + 1}/{passes}, {examples:,} "
                f"examples{share}, {rate:,.0f}/s, online error {errs}")
        if self.tty:
            self.stream.write("\r\x1b[K" + text)
            self.dirty = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def end_run(self):
        """Clear the line drawn in place on a terminal."""
        if self.enabled and self.tty and self.dirty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.dirty = False


def _format_number(x):
    """A count for the table: ``-`` for None, thousands separated; a mean over trials (a
    float) with one decimal."""
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:,.1f}"
    return f"{x:,}"


def format_value(v):
    """A parameter's value as the command line takes it: floats in ``%g`` (1e+200, not
    200 digits), booleans and words as they are."""
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _format_error(mean, sd):
    """An error rate in percent, with ``± sd`` when there is one (``-`` for None)."""
    if mean is None:
        return "-"
    text = f"{100.0 * mean:.2f}%"
    return text + (f" ± {100.0 * sd:.2f}" if sd is not None else "")


def _format_mean_error(mean, sd):
    """A mean squared or absolute error with four significant digits, with ``± sd``
    (two) when there is one (``-`` for None)."""
    if mean is None:
        return "-"
    return f"{mean:.4g}" + (f" ± {sd:.2g}" if sd is not None else "")


#: The error columns of the table: (header, result key), the last two shown where a
#: learner of the task has them.
ERROR_COLUMNS = (("test err", "test_error"), ("last err", "last_test_error"),
                 ("avg err", "avg_test_error"))

#: A regression task's: the mean squared errors of ``ERROR_COLUMNS`` and the mean
#: absolute error of the model of the parameters, each shown where a learner has it.
REGRESSION_ERROR_COLUMNS = (("test mse", "test_error"), ("test mae", "test_absolute_error"),
                            ("last mse", "last_test_error"), ("avg mse", "avg_test_error"))


class _Columns:
    """What a task's table shows of its results: the online columns after ``examples``
    (header, result key), the error columns, how errors are written and the words of
    the footer."""

    def __init__(self, regression):
        if regression:
            self.online = (("online mse", "online_error"),
                           ("online mae", "online_absolute_error"))
            self.errors, self.format = REGRESSION_ERROR_COLUMNS, _format_mean_error
            self.test, self.last, self.avg = "test mse", "last mse", "avg mse"
            self.online_by = "online mse"
        else:
            self.online = (("mistakes", "mistakes"), ("online err", "online_error"))
            self.errors, self.format = ERROR_COLUMNS, _format_error
            self.test, self.last, self.avg = "test err", "last err", "avg err"
            self.online_by = "online error"

    def cell(self, res, key):
        """The text of the result's value of ``key``."""
        if key == "mistakes":
            return _format_number(res[key])
        return self.format(res.get(key), res.get(key + "_sd"))


def run_line(run, regression=False):
    """The run's settings (the ``run`` object of the JSON) as one line of text
    (``regression``: ``noise`` is the standard deviation of the targets' noise)."""
    if not run:
        return ""
    where = (f"{run['cv']}-fold cross-validation" if run.get("cv")
             else f"test file {run['test']}" if run.get("test") else "no test rows")
    passes = run["passes"]
    noise = f"noise sd {run['noise']:g}" if regression else f"noise {run['noise']:g}"
    parts = [f"cwkit {run['cwkit']}", f"seed {run['seed']}", noise,
             f"{passes} pass{'es' * (passes != 1)}",
             "shuffled" if run["shuffle"] else "stored order", where]
    if run.get("repeats", 1) > 1:
        parts.append(f"{run['repeats']} repeats")
    if run.get("tuned"):
        parts.append(f"--grid tuned on {run['tune_on']}")
    if run.get("dask"):
        parts.append(_dask_text(run["dask"]))
    return "run: " + ", ".join(parts)


def _dask_text(dask):
    """The ``dask`` object of a run (``eval --dask``) as text."""
    rounds = dask["rounds"]
    return (f"on Dask {dask['cluster']}: {rounds} round{'s' * (rounds != 1)} of "
            f"{dask['mixing']} mixing, one pass per partition each")


def table(report, specs, notes=None):
    """The results as text tables, one per task, then the mean rank over tasks.

    Parameters
    ----------
    report : dict
        ``{"tasks": [...], "mean_rank": ...}`` as :func:`cwkit.evaluate.evaluate_tasks`
        returns it.
    specs : list of AlgoSpec
        The compared algorithms (their explicit parameters are shown).
    notes : dict, optional
        Task name -> lines printed under the task's title.

    Returns
    -------
    str
    """
    notes = notes or {}
    out = io.StringIO()
    shown = {s.label: s for s in specs}
    for task in report["tasks"]:
        ranks = task_ranks(task)
        regression = task.get("task") == "regression"
        cols = _Columns(regression)
        labels = ("real-valued targets" if regression
                  else f"{task['n_classes']} classes")
        out.write(f"data: {task['data']}  ({task['n_examples']:,} examples, "
                  f"{task['n_features']:,} features, {labels})\n")
        if task.get("interrupted"):
            out.write("  INTERRUPTED: partial results, the counters as far as each "
                      "learner got\n")
        for note in notes.get(task["data"], []):
            out.write(f"  {note}\n")
        header = ["algo", "rank", "examples", *(h for h, _ in cols.online), "updates",
                  *(h for h, _ in cols.errors), "passes", "seconds", "examples/s", "params"]
        # the last iterate's and the average's columns where a learner has them
        errors = [key for h, key in cols.errors
                  if key == "test_error" or any(res.get(key) is not None
                                                for res in task["results"])]
        header = [h for h in header if h not in dict(cols.errors)
                  or dict(cols.errors)[h] in errors]
        rows, remarks, resolved = [], [], []
        best = min((r for r, res in zip(ranks, task["results"]) if not res.get("failed")),
                   default=None)
        for rank, res in zip(ranks, task["results"]):
            spec = shown[res["algo"]]
            explicit = {**spec.params, **(res["tuned"] if isinstance(res["tuned"], dict)
                                          else {})}
            params = " ".join(f"{k}={format_value(v)}" for k, v in explicit.items()) \
                or "defaults"
            if res["tuned"] is not None and not isinstance(res["tuned"], dict):
                params += " (tuned per trial: " + "; ".join(
                    " ".join(f"{k}={format_value(v)}" for k, v in t.items()) if t else "-"
                    for t in res["tuned"]) + ")"
            elif res["tuned"]:
                params += " (tuned)"
            resolved.append(f"  {res['algo']}: " + " ".join(
                f"{k}={format_value(v)}" for k, v in res["params"].items()))
            rate = res["examples"] * res["trials"] / res["seconds"] if res["seconds"] else 0
            remarks.extend(f"  {res['algo']}: {line}" for line in failure_lines(res))
            measured = [
                _format_number(res["examples"]), *(cols.cell(res, key) for _, key in cols.online),
                _format_number(res["updates"]), *(cols.cell(res, key) for key in errors),
                str(res["passes"]), f"{res['seconds']:.3f}", f"{rate:,.0f}"]
            if res.get("failed"):   # counters of a model that stopped half-way: none
                measured = ["-"] * len(measured)
            rows.append([res["algo"] + (" *" if rank == best else ""),
                         "failed" if res.get("failed") else f"{rank:g}", *measured, params])
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
        left = {0, len(header) - 1}
        for row in [header] + rows:
            cells = [c.ljust(w) if i in left else c.rjust(w)
                     for i, (c, w) in enumerate(zip(row, widths))]
            out.write("  ".join(cells).rstrip() + "\n")
        out.writelines(line + "\n" for line in remarks)
        ok = [r for r in task["results"] if not r.get("failed")]
        tested = bool(ok) and all(r["test_error"] is not None for r in ok)
        by = ("test error" if not regression else cols.test) if tested else cols.online_by
        trials = task["results"][0]["trials"] if task["results"] else 1
        extra = f"; means over {trials} trials, ± one standard deviation" if trials > 1 else ""
        tested = (f"; {cols.test}: the model of each name's parameters, the one cwkit "
                  "train saves" if tested else "")
        tested += f"; {cols.last}: its last iterate" if "last_test_error" in errors else ""
        tested += f"; {cols.avg}: its average of the weights" if "avg_test_error" in errors \
            else ""
        out.write(f"(* best by {by}{tested}{extra}; {task['seconds']:.2f} s in total)\n")
        line = run_line(task.get("run"), regression)
        out.write(line + "\n" if line else "")
        out.write("parameters as resolved:\n" + "\n".join(resolved) + "\n\n")
    if report["mean_rank"] is not None:
        ranked = sorted(report["mean_rank"].items(), key=lambda kv: kv[1])
        out.write(f"mean rank over {len(report['tasks'])} tasks: "
                  + ", ".join(f"{a} {r:.2f}" for a, r in ranked) + "\n")
    return out.getvalue()


CSV_FIELDS = ["data", "algo", "params", "tuned", "examples", "mistakes", "online_error",
              "online_error_sd", "updates", "test_error", "test_error_sd", "last_test_error",
              "last_test_error_sd", "avg_test_error", "avg_test_error_sd", "passes",
              "seconds", "trials", "mean_rank", "failed", "notes", "interrupted",
              "cwkit", "seed", "noise", "shuffle", "test", "cv", "repeats", "dask"]

#: The columns a regression run adds after ``CSV_FIELDS`` (``task`` is "regression").
REGRESSION_CSV_FIELDS = ["task", "online_absolute_error", "online_absolute_error_sd",
                         "test_absolute_error", "test_absolute_error_sd"]


def failure_lines(res):
    """A result's failure and notes as lines of text (none when it ran cleanly)."""
    lines = []
    failed = res.get("failed")
    if failed:
        lines.append(f"failed at row {failed['row']} of {failed['file']}"
                     + (f" (trial {failed['trial'] + 1})" if res["trials"] > 1 else "")
                     + f": {failed['error']}")
    lines.extend(f"note: {note}" for note in res.get("notes") or [])
    return lines


def results_csv(report):
    """The results as CSV, one row per task and algorithm (columns ``CSV_FIELDS``, then
    ``REGRESSION_CSV_FIELDS`` when a task is a regression)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    fields = CSV_FIELDS + (REGRESSION_CSV_FIELDS if any(
        t.get("task") == "regression" for t in report["tasks"]) else [])
    writer.writerow(fields)
    mean_rank = report["mean_rank"] or {}
    for task in report["tasks"]:
        for res in task["results"]:
            failed = res.get("failed")
            run = {k: v for k, v in (task.get("run") or {}).items() if k != "passes"}
            if run.get("dask"):
                run["dask"] = _dask_text(run["dask"])
            row = {**run, **res, "data": task["data"], "task": task.get("task", "classification"),
                   "mean_rank": mean_rank.get(res["algo"]),
                   "params": _params_text(res["params"]),
                   "tuned": (None if res["tuned"] is None else _params_text(res["tuned"])
                             if isinstance(res["tuned"], dict) else
                             "|".join(_params_text(t or {}) for t in res["tuned"])),
                   "failed": failure_lines({**res, "notes": []})[0] if failed else None,
                   "notes": "; ".join(res.get("notes") or []) or None,
                   "interrupted": "true" if task.get("interrupted") else "false"}
            writer.writerow(["" if row.get(f) is None else row[f] for f in fields])
    return out.getvalue()


def _params_text(params):
    return ";".join(f"{k}={format_value(v)}" for k, v in params.items())


def jsonable(obj):
    """``obj`` with numpy scalars as Python ones and non-finite floats as None."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def check_writable(path):
    """Raise ValueError, naming ``path``, unless a file can be written there: its folder
    exists and is writable and ``path`` is not a folder."""
    path = Path(path)
    folder = path.parent
    if path.is_dir():
        raise ValueError(f"{path} is a folder, not a file name")
    if not folder.is_dir():
        raise ValueError(f"the folder of {path} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"the folder of {path} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"{path} is not writable")


def write_text(path, text):
    """Write ``text`` to ``path`` atomically (:func:`atomic_write`)."""
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    atomic_write(path, write)


def curves_csv(report):
    """The learning curves as CSV: ``data, algo, trial, examples, mistakes``."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["data", "algo", "trial", "examples", "mistakes"])
    for task in report["tasks"]:
        for trial, rows in enumerate(task.get("curves", [])):
            for algo, examples, mistakes in rows:
                writer.writerow([task["data"], algo, trial, examples, mistakes])
    return out.getvalue()


def matplotlib_pyplot():
    """matplotlib.pyplot on the Agg backend, or :class:`PlotUnavailable` saying how to
    install it."""
    try:
        import matplotlib
    except ImportError:
        raise PlotUnavailable("--plot needs matplotlib, an optional extra: "
                         "pip install matplotlib") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_format(path):
    """The image format of ``path`` from its suffix (none: ``"png"``).

    Raises :class:`PlotUnavailable` without matplotlib and ValueError for a suffix
    matplotlib cannot write, naming those it can.
    """
    plt = matplotlib_pyplot()
    kind = Path(path).suffix[1:].lower() or "png"
    supported = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    if kind not in supported:
        raise ValueError(f"{path}: matplotlib cannot write .{kind} images (it writes "
                         f"{', '.join('.' + k for k in sorted(supported))})")
    return kind


PLOT_TASK_PANELS = 6
"""Tasks drawn as one panel of curves each; with more tasks (e.g. the 45 of
``--tasks all-pairs`` on 10 classes) :func:`plot` draws one summary figure instead."""

_LINE_STYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "v", "D", "x", "+", "*")


def plot(report, path):
    """Draw :func:`figure` of ``report`` into ``path`` (atomic; the format from the
    suffix, :func:`plot_format`)."""
    plt = matplotlib_pyplot()
    kind = plot_format(path)
    fig = figure(report)
    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, format=kind))
    finally:
        plt.close(fig)


def figure(report):
    """The matplotlib figure of ``report``.

    Up to ``PLOT_TASK_PANELS`` tasks: one panel per task with each algorithm's cumulative
    mistakes (mean over trials); more tasks: one summary of two panels, each algorithm's
    mean rank over the tasks and its error on every task (test error where every learner
    has one, else online error) with their mean. Each algorithm has its own line style
    and marker, the markers staggered, so that identical curves stay visible; a learner
    that failed is labelled so.
    """
    plt = matplotlib_pyplot()
    tasks = report["tasks"]
    if len(tasks) > PLOT_TASK_PANELS:
        return _summary_figure(plt, report)
    fig, axes = plt.subplots(len(tasks), 1, figsize=(7, 4 * len(tasks)), squeeze=False)
    for ax, task in zip(axes[:, 0], tasks):
        curves = {}
        for rows in task.get("curves", []):
            per_trial = {}
            for algo, examples, mistakes in rows:
                per_trial.setdefault(algo, []).append((examples, mistakes))
            for algo, pts in per_trial.items():
                curves.setdefault(algo, []).append(pts)
        failed = {r["algo"] for r in task["results"] if r.get("failed")}
        for i, (algo, trials) in enumerate(curves.items()):
            n = min(len(t) for t in trials)
            x = [p[0] for p in trials[0][:n]]
            y = np.mean([[p[1] for p in t[:n]] for t in trials], axis=0)
            ax.plot(x, y, label=algo + (" (failed)" if algo in failed else ""),
                    **_style(i, len(curves), n))
        ax.set_title(task["data"] + (" (interrupted)" if task.get("interrupted") else ""))
        ax.set_xlabel("examples")
        ax.set_ylabel("cumulative mistakes" + (" (mean over trials)"
                                               if len(task.get("curves", [])) > 1 else ""))
        ax.legend()
    fig.tight_layout()
    return fig


def _style(i, n_lines, n_points):
    """Line style, width and marker of the ``i``-th of ``n_lines`` curves of ``n_points``
    points: markers about every tenth point, shifted per curve; lines drawn first (under
    the others) are wider, so a curve equal to a later one shows around it."""
    every = max(n_points // 10, 1)
    start = i * max(every // n_lines, 1) % every
    return {"linestyle": _LINE_STYLES[i % len(_LINE_STYLES)],
            "linewidth": 1.0 + 2.0 * (n_lines - 1 - i) / max(n_lines - 1, 1),
            "marker": _MARKERS[i % len(_MARKERS)],
            "markevery": (min(start, n_points - 1), every),
            "markersize": 5, "fillstyle": "none"}


def _summary_figure(plt, report):
    tasks = report["tasks"]
    algos = [r["algo"] for r in tasks[0]["results"]]
    errors = {a: [] for a in algos}
    for task in tasks:
        ok = [r for r in task["results"] if not r.get("failed")]
        key = "test_error" if ok and all(r["test_error"] is not None for r in ok) \
            else "online_error"
        for r in task["results"]:
            if not r.get("failed") and r["algo"] in errors:
                errors[r["algo"]].append(100.0 * r[key])
    ranks = report.get("mean_rank") or {}
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 0.5 * len(algos) + 2.5))
    positions = np.arange(len(algos))
    left.barh(positions, [ranks.get(a, np.nan) for a in algos])
    left.set_yticks(positions, algos)
    left.invert_yaxis()
    left.set_xlabel(f"mean rank over {len(tasks)} tasks (1 = best)")
    for i, algo in enumerate(algos):
        values = errors[algo]
        jitter = np.linspace(-0.25, 0.25, len(values)) if len(values) > 1 else [0.0]
        right.plot(values, i + np.asarray(jitter), linestyle="none",
                   marker=_MARKERS[i % len(_MARKERS)], fillstyle="none", alpha=0.6)
        if values:
            right.plot([np.mean(values)] * 2, [i - 0.35, i + 0.35], color="black")
    right.set_yticks(positions, algos)
    right.invert_yaxis()
    right.set_xlabel("error per task, % (bar: the mean)")
    right.set_title("test error where every learner has one, else online", fontsize=9)
    fig.suptitle(f"{len(tasks)} tasks" + (" (interrupted)" if tasks[-1].get("interrupted")
                                           else ""))
    fig.tight_layout()
    return fig


def format_label(v):
    """A predicted value as ``cwkit predict`` prints it: integral floats without '.0'."""
    if isinstance(v, (float, np.floating)):
        return str(int(v)) if float(v).is_integer() else repr(float(v))
    return str(v)


def model_text(path, d):
    """:func:`cwkit.describe`'s dict as the text of ``cwkit show``."""
    prov = d["provenance"]
    regressor = d["classes"] is None        # (a regressor has no classes)
    what = ("a regressor" if regressor else f"{len(d['classes'])} classes "
            f"({', '.join(format_label(c) for c in d['classes'])})")
    missed = ("rounds outside the epsilon tube" if regressor else "online mistakes")
    lines = [f"{path}: {d['rule']} ({d['class']}), {what}, {d['n_features']:,} features",
             "parameters: " + " ".join(f"{k}={format_value(v)}"
                                       for k, v in d["params"].items()),
             f"hash bits: {'-' if d['hash_bits'] is None else d['hash_bits']}",
             f"counters: {d['counters']['t_']:,} rounds learnt (t_), "
             f"{d['counters']['mistakes_']:,} {missed} (mistakes_), "
             f"{d['counters']['n_updates_']:,} updates (n_updates_)"]
    if prov:
        first = [k for k in ("cwkit", "created", "saved", "data") if k in prov]
        shown = [(k, prov[k]) for k in first + [k for k in prov if k not in first]
                 if prov[k] is not None and prov[k] != []]
        lines.append("provenance: " + ", ".join(
            f"{k} {', '.join(map(str, v)) if isinstance(v, list) else format_value(v)}"
            for k, v in shown))
    else:
        lines.append("provenance: - (saved by an earlier cwkit, or never saved)")
    if d["top_weights"] is None:
        lines.append("weights: dual (a kernel model): none to list")
    else:
        lines.append(f"intercept: {' '.join(f'{v:.6g}' for v in d['intercept'])}")
        lines.append(f"top {len(d['top_weights'])} weights by magnitude:")
        header = ["class", "column", "index", "weight", "variance"]
        rows = [[("-" if w["class"] is None else format_label(w["class"])), str(w["column"]),
                 "-" if w["index"] is None else str(w["index"]), f"{w['weight']:.6g}",
                 "-" if w["variance"] is None else f"{w['variance']:.6g}"]
                for w in d["top_weights"]]
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
        lines.extend("  " + "  ".join(c.rjust(w) for c, w in zip(r, widths))
                     for r in [header] + rows)
    return "\n".join(lines) + "\n"


def without_curves(report):
    """The report without the per-task ``curves`` (what the table, JSON and CSV show)."""
    return {"tasks": [{k: v for k, v in t.items() if k != "curves"} for t in report["tasks"]],
            "mean_rank": report["mean_rank"]}


def json_text(obj):
    """``obj`` as indented JSON text ending with a newline (see :func:`jsonable`)."""
    return json.dumps(jsonable(obj), indent=2) + "\n"


def algorithms_text(registry, regression=False):
    """The registry as ``cwkit algos`` prints it: name and description, then one line per
    hyper-parameter with its default and valid values (``regression``: the regressors'
    registry, whose names have no kernel forms)."""
    lines = []
    for name, info in registry.items():
        lines.append(f"{name:<16}{info['description']}")
        lines.extend(f"{'':<16}  {pname}={p['default']!r}  ({p['valid']})"
                     for pname, p in info["params"].items())
        if info.get("kernel"):
            lines.append(f"{'':<16}  kernel form: {', '.join(info['kernel'])}")
    if regression:
        lines.append("regressors (--task regression, cwkit.make_regressor): also "
                     "fit_intercept, intercept_scaling, n_passes, shuffle, random_state, "
                     "average (False: the last iterate)")
        return "".join(line + "\n" for line in lines)
    lines.append("kernel forms: kernel='rbf'|'poly'|'linear', gamma>0 (None: "
                 "1/(n_features X.var())), degree>=1 (3), coef0 (0.0), budget>=1 (None), "
                 "budget_policy='oldest' (the Forgetron)|'smallest'|'shrink' (reg-pa, l2-pa, "
                 "soft-reg-pa; their default); see docs/algorithms.md \"Kernel forms\"")
    lines.append("approximate features, every rule: kernel_approx='rff'|'nystroem', gamma>0 "
                 "(None: 1/n_features), n_components>=1 (100)")
    return "".join(line + "\n" for line in lines)
