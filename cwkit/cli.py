"""The command line: ``python -m cwkit eval | train | predict | show | algos`` (docs/cli.md).

This module parses arguments, turns files and options into sources
(:mod:`cwkit.sources`) and calls :mod:`cwkit.evaluate`; :mod:`cwkit.report` formats
and writes what comes back.

Exit status: 0 on success, 1 for data errors (unreadable or malformed file, a model file
that is not one) and for ``eval`` runs in which every learner of a task failed (any
learner with ``--strict``), 2 for usage errors (unknown algorithm or parameter, bad
value), 130 when interrupted. Errors are one line on stderr, ``cwkit: error: ...``;
``--debug`` shows the traceback.
"""
import argparse
import contextlib
import os
import re
import sys
import tempfile
import time
import warnings

import numpy as np

from . import _collector, _interrupt, datasets, references, sources
from ._diagnose import did_you_mean, not_svmlight
from ._params import MAX_HASH_BITS, SSIZE_MAX
from ._weights import check_class_weight
from ._version import __version__
from .sources import DEFAULT_SHUFFLE_WINDOW, TASKS
from .svmlight import SvmlightError, default_jobs, label_line, scan_ahead, scan_svmlight
from .text import ROW_TREATMENTS, treat_rows
from .vw import is_vw_path, iter_vw

__all__ = ["main"]


def _import_commands():
    """Import the modules the commands run (the registry, the learners, the model files,
    the report: about 0.1 s), once the arguments are parsed and the data's summary scan
    started (`_scan_ahead`), which goes on meanwhile."""
    global AlgoSpec, Interrupted, evaluate, fitted_task, make_tested, mean_ranks, train
    global ModelFileError, describe, load, save, APPROX_PARAMS, KERNEL_PARAMS, KernelMixin
    global kernel_refused, algorithms, kernel_params, make, name_of, make_regressor
    global regressors, report
    from . import report
    from .evaluate import (AlgoSpec, Interrupted, evaluate, fitted_task, make_tested,
                           mean_ranks, train)
    from .persist import ModelFileError, describe, load, save
    from .kernel_approx import APPROX_PARAMS
    from .kernels import KERNEL_PARAMS, KernelMixin
    from .models.mixing import kernel_refused
    from .registry import algorithms, kernel_params, make, name_of
    from .regression import make_regressor, regressors


class UsageError(Exception):
    """A bad command line: exit status 2."""


class DataError(Exception):
    """Bad data or model file: exit status 1."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        unknown = re.match(r"unrecognized arguments: (-[^\s=]+)", message)
        if unknown:
            message += did_you_mean(unknown.group(1), self._option_string_actions)
        raise UsageError(message)

    def format_help(self):
        """The help, then the full citation of each paper it cites by key ([AROW13])."""
        text = super().format_help()
        return text + references.cited(text)


# ---------------------------------------------------------------------------- registry

class _Registry(dict):
    """The names of a task's estimators, ``{name: {"description": str, "params": {param:
    {"default", "valid"}}, "kernel": (kernel parameters)}}``; ``make`` builds one."""

    def __init__(self, entries, build, kernel=None):
        kernel = kernel_params if kernel is None else kernel
        super().__init__((e["name"], {"description": e["description"], "params": e["params"],
                                      "kernel": kernel(e["name"])}) for e in entries)
        self.make = build


def _registry(task="classification"):
    """The classifiers (:func:`cwkit.algorithms`), or the regressors of ``--task
    regression`` (``cwkit.regressors``)."""
    if task == "regression":
        return _Registry(regressors(), make_regressor, kernel=lambda name: ())
    return _Registry(algorithms(), make)


#: ``--algos`` by default, by task
DEFAULT_ALGOS = {"classification": "pa,cw,arow", "regression": "pa1,arow"}


def _parse_value(text):
    """A command-line value: int, float, true/false, none, else the string."""
    low = text.strip().lower()
    if low in ("true", "yes"):
        return True
    if low in ("false", "no"):
        return False
    if low in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _parse_specs(algos_text, param_args, grid_args, registry, option="--algos"):
    """``--algos`` (``option``), ``--param`` and ``--grid`` into a list of AlgoSpec."""
    specs = []
    for entry in (e.strip() for e in algos_text.split(",")):
        if not entry:
            raise UsageError(f"{option}: empty algorithm name in {algos_text!r}")
        name, *inline = entry.split(":")
        if name not in registry and any(e["name"] == name for e in algorithms()):
            # a classifier's name given to the regressors: make_regressor says why not
            try:
                registry.make(name)
            except ValueError as exc:
                raise UsageError(f"{option}: {exc}") from None
        if name not in registry:
            raise UsageError(f"{option}: unknown algorithm {name!r}"
                             f"{did_you_mean(name, registry)} (known: "
                             f"{', '.join(sorted(registry))}; see `cwkit algos`)")
        spec = AlgoSpec(name=name, label=entry)
        given = dict(_split_assignment(item, option) for item in inline)
        given = {key: _parse_value(value) for key, value in given.items()}
        for key, value in given.items():   # checked together: gamma needs its kernel
            spec.params[key] = _checked(registry, name, key, value, option, given)
        specs.append(spec)
    by_name = {}
    for spec in specs:
        by_name.setdefault(spec.name, []).append(spec)
        if spec.label != spec.name:
            by_name.setdefault(spec.label, []).append(spec)
    for option, args in (("--param", param_args), ("--grid", grid_args)):
        for arg in args or []:
            target, value = _split_assignment(arg, option)
            if "." not in target:
                raise UsageError(f"{option} {arg}: expected ALGO.PARAM=VALUE")
            algo, key = target.rsplit(".", 1)
            if algo not in by_name:
                raise UsageError(f"{option} {arg}: {algo!r} is not among --algos")
            for spec in by_name[algo]:
                if option == "--param":
                    value_ = _checked(registry, spec.name, key, _parse_value(value), option,
                                      spec.params)
                    if key not in spec.params or spec.label == spec.name:
                        spec.params[key] = value_
                else:
                    values = [_checked(registry, spec.name, key, _parse_value(v), option,
                                       spec.params)
                              for v in value.split(",") if v.strip()]
                    if not values:
                        raise UsageError(f"{option} {arg}: no values")
                    spec.grid[key] = values
    return specs


def _split_assignment(text, option):
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise UsageError(f"{option}: expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


#: Common parameters that may also be set per algorithm (NAME:KEY=VALUE, --param, --grid).
PER_ALGORITHM_COMMON = ("average",)


def _checked(registry, name, key, value, where, given=None):
    """`value` of `key` for `name`, checked by building it with `given` (the other
    parameters of that algorithm: the kernel parameters go together)."""
    params = registry[name]["params"]
    # a kernel parameter of a rule without a kernel form: make() says so
    if key not in params and key not in registry[name].get("kernel", ()) \
            and key not in KERNEL_PARAMS and key not in APPROX_PARAMS \
            and key not in PER_ALGORITHM_COMMON:
        known = sorted(params) + list(PER_ALGORITHM_COMMON)
        raise UsageError(f"{where}: unknown parameter {key!r} for {name}"
                         f"{did_you_mean(key, known)} (known: {', '.join(known)})")
    try:
        registry.make(name, **{**(given or {}), key: value})
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{where}: {name}.{key}={value!r}: {exc}") from None
    return value


# ---------------------------------------------------------------------------- data

class _Spool:
    """``-`` (stdin) copied to a temporary file so it can be scanned and read per pass."""

    MAGIC = ((b"\x1f\x8b", ".gz"), (b"BZh", ".bz2"), (b"\xfd7zXZ\x00", ".xz"))

    def __init__(self):
        self.paths = []

    def path(self, name):
        if name != "-":
            if not os.path.exists(name):
                raise DataError(f"{name}: no such file")
            return name
        head = sys.stdin.buffer.read(6)
        suffix = next((s for m, s in self.MAGIC if head.startswith(m)), ".svm")
        fd, tmp = tempfile.mkstemp(prefix="cwkit-stdin-", suffix=suffix)
        self.paths.append(tmp)
        with os.fdopen(fd, "wb") as out:
            out.write(head)
            while block := sys.stdin.buffer.read(1 << 20):
                out.write(block)
        return tmp

    def close(self):
        for p in self.paths:
            with contextlib.suppress(OSError):
                os.unlink(p)


def _zero_based(args):
    if args.zero_based:
        return True
    if args.one_based:
        return False
    return "auto"


def _classes(args):
    if not args.classes:
        return None
    return np.array(sorted({_parse_value(c) for c in args.classes.split(",")}))


def _is_vw(args, name):
    """Whether the data file `name` is Vowpal Wabbit text: ``--data-format``, else its
    suffix (``.vw``, ``.vw.gz``, ``.vw.bz2``, ``.vw.xz``)."""
    if args.data_format is not None:
        return args.data_format == "vw"
    return is_vw_path(name)


def _check_vw_options(args, names):
    """The svmlight-only options are refused for Vowpal Wabbit files, before any reading."""
    if not any(_is_vw(args, n) for n in names):
        return
    given = [opt for opt, on in (("--n-features", getattr(args, "n_features", None)),
                                 ("--zero-based", args.zero_based),
                                 ("--one-based", args.one_based),
                                 ("--dask", getattr(args, "dask", None))) if on]
    if given:
        raise UsageError(f"{given[0]} is not for Vowpal Wabbit files (their columns are "
                         "hashed into 2^B, --hash-bits B, default 18)")


def _rows_of(args, name):
    """The treatment of the rows of the data file `name`: ``--rows``, else "text" for
    Vowpal Wabbit text and "raw" for svmlight (:mod:`cwkit.text`)."""
    if args.rows is not None:
        return args.rows
    return "text" if _is_vw(args, name) else "raw"


def _file_source(path, name, args, opened):
    """A file task (appended to ``opened``); scanned now if the label set, width or index
    base is not given."""
    classes = _classes(args)
    labels = args.task == "classification"    # (regression: the targets' set not kept)
    if _is_vw(args, name):
        src = sources.VWSource(path, name=name, batch_size=args.batch_size,
                               classes=classes, hash_bits=args.hash_bits,
                               rows=_rows_of(args, name), labels=labels)
    else:
        src = sources.SvmlightSource(path, name=name, batch_size=args.batch_size,
                                     n_features=args.n_features,
                                     zero_based=_zero_based(args), classes=classes,
                                     hash_bits=args.hash_bits, n_jobs=args.parse_jobs,
                                     rows=_rows_of(args, name), labels=labels,
                                     scan_jobs=args.scan_jobs)
    opened.append(src)
    if src.needs_scan:
        src.classes = None      # the file's own, checked against --classes
        src.scan()
        if args.task == "classification":
            _check_labels(src.classes, src.path, src.name)
        if args.hash_bits is None and not _is_vw(args, name):   # (else B bounds it)
            _check_width(src)
        if classes is not None:
            _check_given_classes(src, classes)
    return src


def _check_given_classes(src, classes):
    """The labels of the file are among ``--classes`` (which may name more)."""
    extra = np.setdiff1d(src.classes, classes)
    if extra.size:
        line = label_line(src.path, extra[0])
        raise DataError(f"{src.name}:{line}: label {report.format_label(extra[0])} is not "
                        f"among --classes {_labels_text(classes)} (the file's labels: "
                        f"{_labels_text(src.classes)})")
    src.classes = classes


#: widths up to which no file is too wide for its rows (4,194,304 weights: 32 MB a model)
WIDE = 2 ** 22


def _check_width(src):
    """Say so, before any model is made, when the file's indices reach far beyond what its
    rows can fill: every model holds a weight per index (a mistyped index, or hashed ids
    written without folding), and --hash-bits bounds that."""
    n, rows = src.n_features, src.n_examples
    if n > max(WIDE, 100 * rows):
        print(f"cwkit: warning: {src.name}: indices up to {n:,} for {rows:,} rows: every "
              f"model holds {n:,} weights per class ({8 * n / 1e6:,.0f} MB as float64, "
              "several times that for second-order rules and averaging), far more than "
              "the rows can fill; --hash-bits B folds the indices into 2^B columns (e.g. "
              "--hash-bits 20)", file=sys.stderr)


def _check_labels(classes, path, name):
    """Class labels in svmlight files are integers: 0.5 is a typo or a regression file
    (`classes`: the labels found in the file `path`, called `name`)."""
    odd = [c for c in np.asarray(classes).tolist() if not float(c).is_integer()]
    if odd:
        line = label_line(path, odd[0])
        raise DataError(f"{name}:{line}: label "
                        f"{report.format_label(odd[0])} is not an integer: a classifier's "
                        "labels name classes (real-valued targets are learnt with --task "
                        "regression; or a typo?)")


# ---------------------------------------------------------------------------- commands

def _eval(args, spool):
    if args.format in ("svmlight", "vw"):     # the data's format, the output a table
        if args.data_format not in (None, args.format):
            raise UsageError(f"--format {args.format} and --data-format {args.data_format} "
                             "disagree")
        args.data_format, args.format = args.format, "table"
    _check_task_options(args)
    specs = _parse_specs(args.algos or DEFAULT_ALGOS[args.task], args.param, args.grid,
                         _registry(args.task))
    _check_eval_options(args)
    _check_vw_options(args, [*args.data, *(args.test or [])])
    multiclass, left_out = _multiclass_params(args, specs)
    for line in left_out:
        print(f"cwkit: warning: {line}", file=sys.stderr)
    _check_dask_options(args, specs)
    if args.dask:
        return _eval_dask(args, spool, specs, multiclass, left_out)
    _learning_parse_jobs(args, len(specs))
    notes = {}
    opened = []
    with _bad_lines_first(opened):
        tasks, tests = (_synthetic_task(args) if args.synthetic
                        else _file_tasks(args, spool, notes, opened))
        for src in tasks:
            if not callable(src):
                _check_two_classes(src, args.task)
                _check_class_weight(args, src)
    options = {"task": args.task, "passes": args.passes, "shuffle": args.shuffle,
               "seed": args.seed,
               "noise": args.noise, "cv": args.cv or 0, "repeats": args.repeats,
               "tune_on": args.tune_on, "multiclass_params": multiclass,
               "curve_every": args.curve_every if (args.curve or args.plot) else 0,
               "shuffle_window": args.shuffle_window,
               "progress": report.Progress(enabled=not args.quiet)}
    results = []
    try:
        for src, tst in zip(tasks, tests):
            results.append(evaluate(src, specs, test=tst, **options))
    except KeyboardInterrupt as exc:  # show what is finished, then exit 130
        options["progress"].end_run()
        if isinstance(exc, Interrupted):
            results.append(exc.result)
        if not results:
            raise
        partial = ", the last one partial" if results[-1]["interrupted"] else ""
        print(f"cwkit: interrupted: the results of {len(results)} of {len(tasks)} "
              f"task(s){partial}", file=sys.stderr)
    outcome = {"tasks": results, "mean_rank": mean_ranks(results)}
    for task in results:    # the learners left out, under each table's title
        notes.setdefault(task["data"], []).extend(left_out)
    _write_outcome(args, outcome, specs, notes)
    if args.curve:
        report.write_text(args.curve, report.curves_csv(outcome))
    if args.plot:
        report.plot(outcome, args.plot)
    status = max(_eval_status(outcome, args.strict), int(bool(left_out and args.strict)))
    return 130 if results[-1]["interrupted"] or len(results) < len(tasks) else status


def _write_outcome(args, outcome, specs, notes):
    """The results of ``eval`` on stdout, as ``--format`` asks: one table, JSON or CSV for
    every eval (written first: a failure to write ``--curve`` or ``--plot`` then loses no
    results)."""
    public = report.without_curves(outcome)
    if args.format == "json":
        text = report.json_text(public)
    elif args.format == "csv":
        text = report.results_csv(public)
    else:
        text = report.table(public, specs, notes)
    sys.stdout.write(text)
    sys.stdout.flush()


def _eval_status(outcome, strict):
    """0, or 1 when every learner of a task failed or, with ``--strict``, any did; each
    failure is also said on stderr."""
    status = 0
    for task in outcome["tasks"]:
        failed = [r for r in task["results"] if r["failed"]]
        for res in failed:
            task_name = "" if task["data"] == res["failed"]["file"] else f" ({task['data']})"
            print(f"cwkit: warning: {res['algo']}{task_name} {report.failure_lines(res)[0]}",
                  file=sys.stderr)
        if failed and (strict or len(failed) == len(task["results"])):
            status = 1
    return status


def _check_eval_options(args):
    """Usage errors of ``eval`` that the parser cannot see, before any data is read."""
    if args.task == "classification" and args.noise > 1:
        raise UsageError(f"--noise: expected a probability in [0, 1], got {args.noise:g} "
                         "(with --task regression: the standard deviation of the targets' "
                         "noise)")
    if args.cv is not None and args.cv < 2:
        raise UsageError(f"--cv: must be >= 2, got {args.cv} (leave --cv out for no "
                         f"cross-validation)")
    if args.cv and args.test:
        raise UsageError("--cv and --test exclude each other (cross-validation makes its "
                         "own test folds)")
    if args.synthetic and args.data:
        raise UsageError("--synthetic and data files exclude each other")
    if args.repeats > 1 and args.cv:
        raise UsageError("--repeats and --cv exclude each other (the folds are the trials)")
    if args.repeats > 1 and not (args.synthetic or args.shuffle):
        raise UsageError("--repeats on data files needs --shuffle (else every trial is the "
                         "same run)")
    if args.test and len(args.test) != len(args.data):
        raise UsageError(f"--test: give one test file per data file "
                         f"({len(args.data)} data files, {len(args.test)} --test)")
    _check_output("--curve", args.curve)
    _check_output("--plot", args.plot)
    if args.plot:
        try:
            report.plot_format(args.plot)  # fail before a long run, not after it
        except report.PlotUnavailable as exc:
            raise UsageError(str(exc)) from None
        except ValueError as exc:
            raise UsageError(f"--plot: {exc}") from None
    _check_hash_bits(args)
    if args.synthetic and args.hash_bits is not None:
        raise UsageError("--hash-bits is for data files, not --synthetic")
    if args.synthetic and args.tasks:
        raise UsageError("--tasks needs multi-class data; the synthetic tasks are binary")


def _check_hash_bits(args):
    if args.hash_bits is not None and args.n_features is not None:
        raise UsageError("--hash-bits and --n-features exclude each other (--hash-bits B "
                         "means 2^B features)")


def _check_output(option, path):
    """An output file that could not be written is a usage error before any data is read,
    not a failure after the work is done."""
    if path is None:
        return
    try:
        report.check_writable(path)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None


def _synthetic_task(args):
    """``--synthetic``: one task, fresh data per trial, its own test set."""
    task = sources.synthetic(args.synthetic, seed=args.seed, n_samples=args.n_samples,
                             test_size=args.test_size, s_long=args.s_long,
                             s_short=args.s_short, n_per_phase=args.n_per_phase,
                             n_features=args.drift_features, batch_size=args.batch_size)
    return [task], [None]


@contextlib.contextmanager
def _bad_lines_first(opened):
    """A DataError found in the summaries of the files (their labels, rows) is raised
    only if no file of ``opened``, checked in the order read, has a bad line: the scans
    read only what the summaries need (``SvmlightSource.scan``)."""
    try:
        yield
    except DataError:
        for src in opened:
            src.verify()
        raise


def _file_tasks(args, spool, notes, opened):
    """The tasks of the data files (or the shipped data set) and their test sources, each
    appended to ``opened``; ``notes`` gets the lines the table prints under a task."""
    names = args.data
    if not names:
        names = [str(datasets.shipped_data_path())]
        label = f"{datasets.SHIPPED_FILE} (shipped)"
        if not args.quiet and args.format != "table":   # a table says so under its title
            print(f"cwkit: no data file given; using the data set shipped with cwkit: "
                  f"{datasets.SHIPPED_DESCRIPTION}", file=sys.stderr)
        notes[label] = ["no data file given: " + datasets.SHIPPED_DESCRIPTION]
        labels = [label]
        args.n_features = args.n_features or datasets.SHIPPED_N_FEATURES
    else:
        labels = ["stdin" if n == "-" else n for n in names]
    tasks, tests = [], []
    for i, (name, label) in enumerate(zip(names, labels)):
        src = _file_source(spool.path(name), label, args, opened)
        tst = None
        if args.test:
            tname = args.test[i]
            if _is_vw(args, tname):
                tst = sources.VWSource(spool.path(tname), name=tname,
                                       batch_size=args.batch_size, hash_bits=args.hash_bits,
                                       rows=src.rows, labels=src.labels)
            else:
                tst = sources.SvmlightSource(
                    spool.path(tname), name=tname, batch_size=args.batch_size,
                    zero_based=src.zero_based, n_features=args.n_features,
                    hash_bits=args.hash_bits, n_jobs=args.parse_jobs, rows=src.rows,
                    labels=src.labels, scan_jobs=args.scan_jobs)
            opened.append(tst)
            tst.scan()
            if args.task == "classification":
                _check_test_labels(tst, src)
            if args.n_features is None:
                # train and test share one index space: the wider of the two
                src.n_features = tst.n_features = max(src.n_features, tst.n_features)
        if args.tasks:
            for tname_, pos, neg in datasets.binary_tasks(src.classes, args.tasks):
                tasks.append(sources.FilteredSource(src, pos, neg, f"{label}:{tname_}"))
                tests.append(sources.FilteredSource(tst, pos, neg, f"{tst.name}:{tname_}")
                             if tst is not None else None)
        else:
            tasks.append(src)
            tests.append(tst)
    return tasks, tests


def _check_test_labels(test, train):
    """A test file with labels the training data never had: every such row would count as
    a mistake, so the test error would mean nothing."""
    unseen = np.setdiff1d(test.classes, train.classes)
    if unseen.size:
        raise DataError(f"{test.name}: test labels {_labels_text(unseen)} never occur in the "
                        f"training data {train.name} (labels {_labels_text(train.classes)}); "
                        f"every such row would count as a mistake")
    test.classes = train.classes


def _labels_text(labels):
    return ", ".join(report.format_label(v) for v in labels)


def _multiclass_params(args, specs):
    """``--multiclass``, ``--k`` and ``--class-weight`` as estimator parameters (only those
    given), and the lines saying which specs were left out, checked before any data is
    read: a rule without that reduction is taken out of ``specs`` (the others run), and is
    a usage error when no rule has it."""
    params = {k: v for k, v in (("multiclass", args.multiclass), ("k", args.k),
                                ("class_weight", args.class_weight)) if v is not None}
    left_out, errors = [], []
    if "multiclass" in params:
        probe_X, probe_y = np.eye(3), np.arange(3)  # the reduction is checked on first fit
        for spec in specs:
            try:
                make(spec.name, **{**spec.params, "multiclass": params["multiclass"]}
                     ).partial_fit(probe_X, probe_y)
            except ValueError as exc:
                left_out.append(spec)
                errors.append(f"--multiclass {args.multiclass}: {exc}")
    if left_out and len(left_out) == len(specs):
        raise UsageError(errors[0])
    specs[:] = [s for s in specs if s not in left_out]
    return params, [f"{s.label}: not run: {e}" for s, e in zip(left_out, errors)]


#: The options of classification only, refused with ``--task regression``: those of
#: labels that name classes, then those not written for regression.
_FOR_CLASSES = (("--multiclass", "multiclass"), ("--k", "k"),
                ("--class-weight", "class_weight"), ("--classes", "classes"),
                ("--tasks", "tasks"))
_NOT_FOR_REGRESSION = (("--synthetic", "synthetic"), ("--curve", "curve"),
                       ("--plot", "plot"), ("--dask", "dask"))


def _check_task_options(args):
    """With ``--task regression``, an option of classification only is a usage error,
    before any data is read (``args.task`` settled: classification by default)."""
    args.task = args.task or "classification"
    if args.task == "classification":
        return
    for option, attr in _FOR_CLASSES + _NOT_FOR_REGRESSION:
        if getattr(args, attr, None) is None:
            continue
        if (option, attr) in _FOR_CLASSES:
            raise UsageError(f"{option} is for classification, not --task regression (a "
                             "regressor has one real-valued output, not classes)")
        raise UsageError(f"{option} is not supported with --task regression")
    if getattr(args, "data", None) == []:
        raise UsageError("--task regression needs data files (the data set shipped with "
                         "cwkit, which eval runs without any, is a classification task)")


def _check_class_weight(args, src):
    """A label of ``--class-weight`` that the data do not hold is an error before any
    learning."""
    try:
        check_class_weight(args.class_weight, np.asarray(src.classes))
    except ValueError as exc:
        raise DataError(f"--class-weight: {src.name}: {exc}") from None


def _check_two_classes(src, task="classification"):
    """A task has rows, and a classification task two classes at least."""
    if src.n_examples == 0:
        raise DataError(f"{src.name}: no examples (an empty file, or only blank and comment "
                        f"lines)")
    if task == "classification" and src.classes.size < 2:
        raise DataError(f"{src.name}: needs at least two classes, found "
                        f"{src.classes.tolist()}")


def _train(args, spool):
    start = None
    if args.initial is not None:
        start, spec, multiclass = _continued(args)
        counts = (start.mistakes_, start.n_updates_)   # the file's, before this run
    _check_task_options(args)
    registry = _registry(args.task)
    if start is None:
        if args.algo is None:
            raise UsageError("--algo is required (or -i MODEL, to go on training a model)")
        if "," in args.algo:
            raise UsageError(f"--algo: train fits one algorithm, got {args.algo!r}: train "
                             "each on its own, or compare them with `cwkit eval --algos`")
        (spec,) = _parse_specs(args.algo, _train_params(args), [], registry, "--algo")
    _check_output("--output", args.output)
    _check_hash_bits(args)
    _check_vw_options(args, [args.data])
    if start is None:
        multiclass, _ = _multiclass_params(args, [spec])    # (one spec: left out is an error)
    _check_dask_options(args, [spec])
    if args.dask:
        if start is not None:
            raise UsageError("-i is not supported with --dask")
        return _train_dask(args, spool, spec, multiclass)
    _learning_parse_jobs(args, 1)
    opened = []
    with _bad_lines_first(opened):
        src = _file_source(spool.path(args.data), args.data, args, opened)
        _check_two_classes(src, args.task)
        if start is not None:
            _check_continued(args, src, start)
        _check_class_weight(args, src)
    progress = report.Progress(enabled=not args.quiet)
    try:
        learner = train(src, spec, passes=args.passes, shuffle=args.shuffle, seed=args.seed,
                        shuffle_window=args.shuffle_window, multiclass_params=multiclass,
                        progress=progress, start=start, task=args.task)
    except Interrupted as exc:
        progress.end_run()
        lr = exc.result
        print(f"cwkit: interrupted after {lr.examples:,} examples ({_online(lr)}, "
              f"{lr.updates:,} updates); no model saved", file=sys.stderr)
        return 130
    for note in learner.note_lines():  # warnings of the model, as eval shows them
        print(f"cwkit: warning: {spec.name}: {note}", file=sys.stderr)
    if args.task == "classification":
        # the run's counters, as fit(n_passes=...) keeps them (not the last chunk's); a
        # continued model's go on from the file's
        before = (0, 0) if start is None else counts
        learner.model.mistakes_ = before[0] + learner.mistakes
        learner.model.n_updates_ = before[1] + learner.updates
    learner.model.hash_bits_ = args.hash_bits     # kept in the file (predict checks it)
    learner.model.rows_ = src.rows                 # kept in the file (predict applies it)
    save(learner.model, args.output,            # all or nothing
         provenance=_train_provenance(args, src.zero_based))
    if not args.quiet:
        print(f"cwkit: trained {spec.name} on {learner.examples:,} examples "
              f"({args.passes} pass{'es' * (args.passes > 1)}, {_online(learner)}, "
              f"{learner.updates:,} updates); saved {args.output}", file=sys.stderr)
    return 0


def _online(learner):
    """A learner's online errors as ``train`` reports them."""
    if learner.task == "regression":
        return (f"online mse {learner.online_error():.4g}, mae "
                f"{learner.absolute / max(learner.examples, 1):.4g}")
    return f"{learner.mistakes:,} online mistakes"


def _hash_bits_of_model(args, model, width, path):
    """``--hash-bits`` for `model`: the B its file keeps (``cwkit train --hash-bits B``),
    which the data are folded with when the option is not given and which another B
    contradicts; for a model that does not say (a file of an earlier cwkit, a model
    fitted from Python), B such that the data fold into the model's width."""
    bits = getattr(model, "hash_bits_", None)
    if bits is not None and args.hash_bits not in (None, bits):
        raise DataError(f"{path}: the model was trained with --hash-bits {bits}, the "
                        f"data are given --hash-bits {args.hash_bits}")
    if bits is None and args.hash_bits is not None and width != 1 << args.hash_bits:
        raise DataError(f"{path}: the model has {width} features, --hash-bits "
                        f"{args.hash_bits} folds the data into {1 << args.hash_bits} (was "
                        "it trained without --hash-bits, or with another B?)")
    return bits if args.hash_bits is None else args.hash_bits


def _train_provenance(args, zero_based=None):
    """What ``cwkit train`` records of how it made a model (:func:`cwkit.save`)."""
    return {"data": ["stdin" if args.data == "-" else args.data],
            "hash_bits": args.hash_bits,
            "zero_based": None if zero_based in (None, "auto") else bool(zero_based),
            "passes": args.passes, "shuffle": args.shuffle, "seed": args.seed}


def _train_params(args):
    """``train --param KEY=VALUE`` as ``--param ALGO.KEY=VALUE`` of ``eval``."""
    name = args.algo.split(":", 1)[0]   # NAME[:KEY=VALUE...], as in eval's --algos
    return [p if "." in p.split("=", 1)[0] else f"{name}.{p}" for p in args.param or []]


def _load_model(path):
    """The model of file `path`, or a DataError naming it."""
    if not os.path.exists(path):
        raise DataError(f"{path}: no such file")
    try:
        return load(path)
    except ModelFileError as exc:    # names the file and what is wrong, in one line
        raise DataError(str(exc)) from exc
    except OSError as exc:
        raise DataError(f"{path}: {exc.strerror or exc}") from exc


def _continued(args):
    """``train -i MODEL``: the model, its spec and ``{}``; parameters given that differ
    from the model's (``--algo``, ``--param``, ``--multiclass``, ``--k``,
    ``--class-weight``, ``--task``) are a usage error,
    since the model's own go on."""
    model = _load_model(args.initial)
    name = name_of(model)
    where = f"-i {args.initial}"
    task = "regression" if _is_regressor(model) else "classification"
    if args.task not in (None, task):
        kind = "regressor" if task == "regression" else "classifier"
        raise UsageError(f"{where}: the model is a {kind}, not --task {args.task}")
    args.task = task
    if args.algo is not None and args.algo.partition(":")[0] != name:
        raise UsageError(f"{where}: the model is {name}, not {args.algo}")
    have = model.get_params()
    given = {}
    inline = [] if args.algo is None else args.algo.split(":")[1:]
    for text in [*inline, *(args.param or [])]:
        key, value = _split_assignment(text, "--param")
        given[key.rpartition(".")[2]] = _parse_value(value)
    given.update((k, v) for k, v in (("multiclass", args.multiclass), ("k", args.k),
                                     ("class_weight", args.class_weight)) if v is not None)
    for key, value in given.items():
        if key not in have:
            raise UsageError(f"{where}: {name} has no parameter {key!r}")
        if have[key] != value and not (isinstance(have[key], float) and value == have[key]):
            raise UsageError(f"{where}: {key}={value} contradicts the model's "
                             f"{key}={have[key]} (a model goes on with its own parameters)")
    bits = getattr(model, "hash_bits_", None)
    if args.hash_bits is not None and args.hash_bits != bits and not (
            bits is None and _n_features(model) == 1 << args.hash_bits):
        was = ("without --hash-bits" if bits is None else f"with --hash-bits {bits}")
        raise UsageError(f"{where}: --hash-bits {args.hash_bits} contradicts the model, "
                         f"trained {was} (a model goes on with its own features)")
    kept = getattr(model, "rows_", None)
    if kept is not None and args.rows not in (None, kept):
        raise UsageError(f"{where}: --rows {args.rows} contradicts the model, trained with "
                         f"--rows {kept}")
    args.algo = name
    if args.hash_bits is None:
        args.hash_bits = bits
    if args.rows is None:
        args.rows = kept
    return model, AlgoSpec(name), {}


def _check_continued(args, src, model):
    """The data of ``train -i``: labels among the model's classes (a wider file widens the
    model, as one run on the files together would)."""
    if _is_regressor(model):
        return
    unseen = np.setdiff1d(src.classes, model.classes_)
    if unseen.size:
        raise DataError(f"{src.name}: labels {_labels_text(unseen)} are not among the "
                        f"classes of the model {args.initial} ({_labels_text(model.classes_)})")
    src.classes = model.classes_


def _rows_of_model(args, model):
    """``--rows`` for `model`: the treatment its file keeps (``cwkit train``), which
    another ``--rows`` contradicts; for a model that does not say, ``--rows`` or the
    data format's default."""
    kept = getattr(model, "rows_", None)
    if kept is not None and args.rows not in (None, kept):
        raise DataError(f"{args.model}: the model was trained with --rows {kept}, the data "
                        f"are given --rows {args.rows}")
    return kept if kept is not None else _rows_of(args, args.data)


def _n_features(model):
    n = getattr(model, "n_features_in_", None)
    if n is None:
        n = np.shape(model.coef_)[-1]
    return int(n)


def _predict(args, spool):
    if args.scores and args.proba:
        raise UsageError("--scores and --proba exclude each other")
    _check_output("--output", args.output)
    model = _load_model(args.model)
    regression = _is_regressor(model)
    if regression and (args.scores or args.proba):
        raise UsageError(f"--{'scores' if args.scores else 'proba'} is for classifiers: "
                         f"{args.model} is a regressor, whose predictions are its scores")
    path = spool.path(args.data)
    width = _n_features(model)
    args.hash_bits = _hash_bits_of_model(args, model, width, args.model)
    rows = _rows_of_model(args, model)
    if _is_vw(args, args.data):
        _check_vw_options(args, [args.data])
        bits = 18 if args.hash_bits is None else args.hash_bits
        if 1 << bits != width:
            raise DataError(f"{args.data}: the model {args.model} has {width} features, "
                            f"Vowpal Wabbit rows hashed into 2^{bits} have {1 << bits} "
                            "(give the --hash-bits it was trained with)")
        chunks = ((treat_rows(X, rows), y) for X, y, _ in iter_vw(
            path, batch_size=args.batch_size, hash_bits=bits, require_label=False))
        return _write_predictions(args, model, chunks, labelled=True)
    info = scan_svmlight(path, zero_based=_zero_based(args), hash_bits=args.hash_bits,
                         n_jobs=args.parse_jobs, labels=not regression)
    if info.n_features > width and not args.ignore_extra_features:
        raise DataError(f"{args.data}: the model {args.model} has {width} features, the "
                        f"file has {info.n_features} (was it trained on other data, or "
                        f"with --hash-bits?); --ignore-extra-features drops the extra ones")
    known = set() if regression else set(np.asarray(model.classes_).tolist())
    unseen = [] if regression else [c for c in info.classes.tolist() if c not in known]
    if unseen:
        print(f"cwkit: warning: {args.data}: labels {_labels_text(unseen)} are not among "
              f"the model's classes ({_labels_text(model.classes_)}); each row still gets "
              f"one of the model's classes, and no error rate is reported", file=sys.stderr)
    chunks = sources.rows_for_model(path, width, batch_size=args.batch_size,
                                    zero_based=bool(info.zero_based),
                                    hash_bits=args.hash_bits, n_jobs=args.parse_jobs,
                                    labels=True, rows=rows)
    return _write_predictions(args, model, chunks, labelled=not unseen)


def _is_regressor(model):
    """Whether a loaded model is a regressor (``cwkit.make_regressor``): its file's class
    says so."""
    return getattr(model, "_estimator_type", None) == "regressor"


def _write_predictions(args, model, rows, labelled):
    """Write one line per row of the chunks `rows` of ``(X, y)`` (labels, scores or
    probabilities; a regressor's predictions), and the error rate on stderr when
    `labelled` and every ``y`` is one of the model's classes (a regressor's mean squared
    and absolute errors, when every ``y`` is a number)."""
    regression = _is_regressor(model)
    tally = (_RegressionTally(labelled) if regression
             else _Tally(model.classes_, labelled=labelled))

    def write(f):
        if (args.scores or args.proba) and not args.no_header:
            f.write(" ".join(_columns(model, args.scores)) + "\n")
        for X, y in rows:
            if regression:
                values = labels = np.asarray(model.predict(X))
            else:
                scores = np.asarray(model.decision_function(X))
                labels = model._labels(scores)
                values = (scores if args.scores
                          else np.asarray(model._calibration.proba(scores)) if args.proba
                          else labels)
            tally.add(labels, y, values if args.proba else None)
            if args.scores or args.proba or regression:
                f.writelines(" ".join(f"{v:.{args.precision}g}" for v in np.atleast_1d(row))
                             + "\n" for row in values)
            else:
                f.writelines(report.format_label(v) + "\n" for v in values)

    try:
        if args.output:
            def to_file(tmp):
                with open(tmp, "w", encoding="utf-8") as f:
                    write(f)
            report.atomic_write(args.output, to_file)
        else:
            write(sys.stdout)
    except KeyboardInterrupt:
        sys.stdout.flush()
        where = f"; {args.output} not written" if args.output else " written"
        print(f"cwkit: interrupted after {tally.rows:,} predictions{where}", file=sys.stderr)
        return 130
    if not args.quiet and tally.labelled and tally.rows:
        print(f"cwkit: {args.data}: {tally.text()}", file=sys.stderr)
    return 0


def _columns(model, scores):
    """The header of ``--scores`` / ``--proba``: the class of each column (binary scores:
    one column, > 0 meaning the second class)."""
    classes = model.classes_ if not scores or len(model.classes_) > 2 else model.classes_[1:]
    return [report.format_label(c) for c in classes]


class _Tally:
    """What ``cwkit predict`` says of a labelled file: its error rate, and the log loss
    of ``--proba`` (the mean of -ln p of each row's label, p clipped at 1e-15)."""

    def __init__(self, classes, labelled):
        self.classes, self.labelled = np.asarray(classes), labelled
        self.rows = self.errors = 0
        self.log_loss = None

    def add(self, predicted, y, proba=None):
        self.rows += y.size
        if self.labelled and not np.all(np.isin(y, self.classes)):
            self.labelled = False    # a Vowpal Wabbit row without a label (NaN), or unseen
        if not self.labelled:
            return
        self.errors += int(np.count_nonzero(predicted != y))
        if proba is not None:
            p = proba[np.arange(y.size), np.searchsorted(self.classes, y)]
            self.log_loss = (self.log_loss or 0.0) - float(
                np.sum(np.log(np.clip(p, 1e-15, 1.0))))

    def text(self):
        line = (f"error {100.0 * self.errors / self.rows:.2f}% ({self.errors:,} of "
                f"{self.rows:,} rows)")
        if self.log_loss is not None:
            line += f", log loss {self.log_loss / self.rows:.4f}"
        return line


class _RegressionTally:
    """What ``cwkit predict`` says of a file of targets given to a regressor: the mean
    squared and absolute errors of its predictions."""

    def __init__(self, labelled):
        self.labelled = labelled
        self.rows = 0
        self.squared = self.absolute = 0.0

    def add(self, predicted, y, proba=None):
        self.rows += y.size
        if self.labelled and not np.isfinite(y).all():
            self.labelled = False    # a Vowpal Wabbit row without a label (NaN)
        if not self.labelled:
            return
        residual = y - predicted
        self.squared += float(residual @ residual)
        self.absolute += float(np.abs(residual).sum())

    def text(self):
        return (f"mse {self.squared / self.rows:.4g}, mae {self.absolute / self.rows:.4g} "
                f"({self.rows:,} rows)")


def _show(args, spool):
    model = _load_model(args.model)
    described = describe(model, top=args.top)
    if args.format == "json":
        sys.stdout.write(report.json_text(described))
    else:
        sys.stdout.write(report.model_text(args.model, described))
    return 0


def _algos(args, spool):
    if args.references:     # every paper, by the key the docs and messages cite it with
        sys.stdout.write(references.text())
        return 0
    registry = _registry(args.task or "classification")
    if args.format == "json":
        sys.stdout.write(report.json_text(registry))
    else:
        listing = report.algorithms_text(registry, args.task == "regression")
        sys.stdout.write(listing + references.cited(listing))
    return 0


# ---------------------------------------------------------------------------- --dask

def _check_dask_options(args, specs):
    """What ``--dask`` excludes, before any data is read or any cluster started."""
    if not args.dask:
        if args.rounds != 1 or args.mixing != "auto":
            raise UsageError("--rounds and --mixing go with --dask")
        return
    _local_workers(args.dask)
    try:
        _distributed()._require_dask()
    except ImportError as exc:
        raise UsageError(f"--dask: {exc}") from None
    if args.passes != 1:
        raise UsageError("--dask trains by mixing rounds, one pass per shard each: use "
                         "--rounds instead of --passes")
    if args.hash_bits is not None:
        raise UsageError("--hash-bits is not supported with --dask")
    if args.rows == "text":
        raise UsageError("--rows text is not supported with --dask")
    for option, given in (("--cv", getattr(args, "cv", None)),
                          ("--class-weight", args.class_weight),
                          ("--grid", getattr(args, "grid", None)),
                          ("--noise", getattr(args, "noise", 0.0)),
                          ("--synthetic", getattr(args, "synthetic", None)),
                          ("--tasks", getattr(args, "tasks", None)),
                          ("--curve", getattr(args, "curve", None)),
                          ("--plot", getattr(args, "plot", None))):
        if given:
            raise UsageError(f"{option} is not supported with --dask")
    if getattr(args, "repeats", 1) > 1:
        raise UsageError("--repeats is not supported with --dask")
    data = args.data if isinstance(args.data, list) else [args.data]
    if len(data) != 1:
        raise UsageError("--dask takes one training file (cut into one partition per "
                         "worker)")
    for spec in specs:
        if isinstance(make(spec.name, **spec.params), KernelMixin):
            raise UsageError(f"--dask: {kernel_refused(spec.label)}")


def _local_workers(where):
    """N of ``--dask local:N`` (None for an address), checked before any work."""
    if where != "local" and not where.startswith("local:"):
        return None
    n = where.partition(":")[2] or str(os.cpu_count() or 1)
    if not n.isdigit() or int(n) < 1:
        raise UsageError(f"--dask: expected local:N with N >= 1 workers, got {where!r}")
    return int(n)


@contextlib.contextmanager
def _dask_client(where, debug):
    """A Dask client for ``--dask local:N`` (a local cluster of N worker processes, made
    and closed here) or ``--dask ADDRESS`` (a running scheduler).  Dask's own log (its
    workers' tracebacks of a task that failed, of a worker that died) is shown with
    ``--debug`` only: otherwise an error is the one line ``main`` prints."""
    distributed = _distributed()._require_dask()     # (checked: _check_dask_options)
    from distributed.utils import silence_logging_cmgr
    level = 30 if debug else 60      # warnings and errors, or nothing
    n, cluster, client = _local_workers(where), None, None
    with contextlib.ExitStack() as stack:
        stack.enter_context(silence_logging_cmgr(level))
        try:
            if n is not None:
                cluster = stack.enter_context(distributed.LocalCluster(
                    n_workers=n, threads_per_worker=1, processes=True,
                    dashboard_address=":0", silence_logs=level))
            client = stack.enter_context(distributed.Client(cluster or where, timeout=30))
        except Exception as exc:      # e.g. a worker killed while the cluster starts
            if debug:
                raise
            what = "the local cluster did not start" if n else "cannot connect to the scheduler"
            raise DataError(f"--dask {where}: {what} "
                            f"({_distributed()._first_line(exc)})") from None
        try:
            yield client
        except _distributed().WorkerLost as exc:
            raise DataError(f"--dask: {exc}") from None


def _distributed():
    from . import distributed   # imports Dask only when --dask is given
    return distributed


def _dask_fit(args, spool, spec, multiclass, progress_label, tested=False):
    """Fit one algorithm over the partitions of the training file: (estimator, rounds,
    whether the model of the parameters averages, whether both the average and the last
    iterate are tested: ``make_tested``)."""
    est, averaged, both = make_tested(spec.name, {**multiclass, **spec.params,
                                                  "random_state": args.seed}, tested)
    path = spool.path(args.data if isinstance(args.data, str) else args.data[0])
    per_round = []

    def show(info):
        per_round.append(info)
        if not args.quiet:
            print(f"cwkit: {progress_label}: round {info['round']}: {info['examples']:,} "
                  f"examples on {info['shards']} shards, progressive error "
                  f"{100.0 * info['mistakes'] / max(info['examples'], 1):.2f}%, "
                  f"{info['seconds']:.2f} s", file=sys.stderr)

    with _dask_client(args.dask, args.debug) as client:
        _distributed().fit(est, path, client=client, rounds=args.rounds,
                           mixing=args.mixing, shuffle=args.shuffle,
                           zero_based=_zero_based(args), n_features=args.n_features,
                           callback=show)
    _check_labels(est.classes_, path, path)
    return est, per_round, averaged, both


def _train_dask(args, spool, spec, multiclass):
    est, per_round, _, _ = _dask_fit(args, spool, spec, multiclass, args.algo)
    save(est, args.output)
    if not args.quiet:
        print(f"cwkit: trained {args.algo} on {per_round[0]['examples']:,} examples "
              f"({args.rounds} round{'s' * (args.rounds > 1)} on {per_round[0]['shards']} "
              f"shards, {est.mistakes_:,} online mistakes, {est.n_updates_:,} updates); saved "
              f"{args.output}", file=sys.stderr)
    return 0


def _eval_dask(args, spool, specs, multiclass, left_out):
    """``eval --dask``: each algorithm trained over the partitions (a progress line per
    round on stderr), then the table, JSON or CSV of every eval: its counters over every
    round (each partition's mistakes on its own rows), the test errors with ``--test``,
    ranked as :func:`cwkit.evaluate.evaluate` ranks them; the run records the cluster,
    the rounds and the mixing, each learner's mixing resolved among its parameters."""
    t_start = time.perf_counter()
    test = None
    if args.test:
        test = sources.SvmlightSource(spool.path(args.test[0]), name=args.test[0],
                                      batch_size=args.batch_size, n_features=args.n_features,
                                      zero_based=_zero_based(args)).scan()
    fits, rounds = [], []
    for spec in specs:
        est, per_round, averaged, both = _dask_fit(args, spool, spec, multiclass,
                                                   spec.label, tested=test is not None)
        fits.append((est, averaged, both, (
            per_round[0]["examples"], sum(r["examples"] for r in per_round),
            sum(r["mistakes"] for r in per_round), sum(r["updates"] for r in per_round),
            sum(r["seconds"] for r in per_round))))
        rounds.append([{"round": r["round"], "examples": r["examples"],
                        "mistakes": r["mistakes"],
                        "progressive_error": r["mistakes"] / max(r["examples"], 1),
                        "seconds": r["seconds"], "bytes": r["bytes"]} for r in per_round])
    run = {"cwkit": __version__, "seed": args.seed, "noise": 0.0, "passes": args.rounds,
           "shuffle": args.shuffle, "test": args.test[0] if args.test else None, "cv": 0,
           "repeats": 1, "tune_on": args.tune_on, "tuned": False,
           "dask": {"cluster": args.dask, "rounds": args.rounds, "mixing": args.mixing}}
    task = fitted_task(args.data[0], specs, fits, test=test, passes=args.rounds, run=run,
                       seconds=time.perf_counter() - t_start)
    for res, (est, *_), per_round in zip(task["results"], fits, rounds):
        res["params"]["mixing"] = _distributed().resolved_mixing(est, args.mixing)
        res["rounds"] = per_round
    outcome = {"tasks": [task], "mean_rank": None}
    _write_outcome(args, outcome, specs, {task["data"]: list(left_out)})
    return max(_eval_status(outcome, args.strict), int(bool(left_out and args.strict)))


# ---------------------------------------------------------------------------- parser

EXIT_STATUS = """\
exit status:
  0    success (eval: also when some learners failed; they are reported in their rows)
  1    data error (unreadable or malformed file, FILE:LINE on stderr); eval: every
       learner of a task failed, or any with --strict (the results are printed first)
  2    usage error (bad option or value, an output that cannot be written), before any
       data is read
  130  interrupted (Ctrl-C): what was finished is printed first
"""

EVAL_DESCRIPTION = """\
Compare online learners the way the papers do: every example is predicted, then
learnt; then the test set is scored.

'test err' is the error of the model each name's parameters give, the one
`cwkit train` saves with the same parameters (average="auto" by default: the
average of the weights for every rule but AROW, AROW-H and NHERD; NAME:average=true or
false sets it); the rank and the star follow it. 'last err' (the last iterate)
and 'avg err' (the average of the weights) are both scored from the same run
where the rule has an average. The online error is the same for both.
"""

EVAL_EXAMPLES = """\
examples:
  cwkit eval                                     # the shipped data set, pa, cw, arow
  cwkit eval --algos pa,cw,arow data.svm --test data.t.svm
  cwkit eval --algos pa,arow --param arow.r=0.1 --passes 5 --shuffle data.svm.xz
  cwkit eval --algos pa1,arow --grid pa1.C=0.01,0.1,1 --grid arow.r=0.01,0.1,1 data.svm
  cwkit eval --algos pa,cw,arow --noise 0.1 --cv 10 data.svm
  cwkit eval --algos pa,pa:average=false data.svm --test data.t.svm   # last iterate only
  cwkit eval --algos pa,cw,arow a.svm b.svm c.svm          # + mean rank over tasks
  cwkit eval --synthetic crammer --noise 0.1 --repeats 10 --algos perceptron,pa,arow
  cwkit eval --tasks all-pairs --algos pa,arow mnist.scale.bz2 --test mnist.scale.t.bz2
  cwkit eval --task regression --algos pa1,arow --noise 0.5 data.svm --test data.t.svm
  cwkit eval --format json --curve curve.csv --plot curve.png data.svm
  zcat data.svm.gz | cwkit eval --algos arow -
"""


def _common(p):
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


def _data_options(p):
    g = p.add_argument_group("data")
    g.add_argument("--n-features", type=_positive_int, metavar="D",
                   help="number of features (default: the largest index found)")
    z = g.add_mutually_exclusive_group()
    z.add_argument("--zero-based", action="store_true",
                   help="feature indices start at 0 (default: detected)")
    z.add_argument("--one-based", action="store_true", help="feature indices start at 1")
    g.add_argument("--classes", metavar="L1,L2,...",
                   help="the label set (default: the labels found in the data)")
    g.add_argument("--batch-size", type=_positive_int, default=sources.DEFAULT_BATCH_SIZE,
                   metavar="N", help="rows read per chunk (default %(default)s)")
    _hash_bits_option(g)
    _data_format_option(g, p.prog.endswith("eval"))
    _rows_option(g)
    _parse_jobs_option(g)


def _data_format_option(group, eval_command=False):
    names = ("--data-format",) if eval_command else ("--data-format", "--format")
    group.add_argument(*names, dest="data_format", choices=("svmlight", "vw"),
                       help="the data files' format: svmlight/libsvm, or Vowpal Wabbit's "
                       "text (columns hashed into 2^B, --hash-bits B, default 18) "
                       "(default: vw for .vw, .vw.gz, .vw.bz2, .vw.xz files, else svmlight)"
                       + ("; --format vw and --format svmlight say the same" if eval_command
                          else ""))


def _rows_option(group):
    group.add_argument("--rows", choices=ROW_TREATMENTS,
                       help="the rows as read (raw), or the text treatment (text: each value "
                       "v as sign(v) log(1 + |v|), each row then of unit L2 norm) (default: "
                       "text for Vowpal Wabbit files, raw for svmlight; a model keeps it)")


def _parse_jobs_option(group):
    group.add_argument("--parse-jobs", type=_positive_int, metavar="N",
                       help="threads parsing the data files at the same time (default: the "
                       "cores, at most 4, less one per learner of eval and train, at least "
                       "1; 1 turns parallel parsing off); eval's learners run on as many "
                       "threads as the cores; never changes the results")


def _learning_parse_jobs(args, n_learners):
    """``--parse-jobs`` by default for data parsed while learners learn (eval, train):
    the cores the learners leave, at least 1 and at most 4.  A learner's pass keeps a
    core busy while the next block is parsed, so more parsing threads than the cores
    left only take turns with the learners (on 2 cores, one parsing thread made eval
    of pa,cw,arow 1.07x and of pa alone 1.08x faster than two; benchmarks/README.md).
    The learners run on a thread per core (``cwkit.evaluate``): the parser, ahead by up
    to four pieces, idles while they are the slower side.  The files' summary scans,
    before any learner starts, take every core by default (``scan_jobs``)."""
    args.scan_jobs = _scan_jobs(args)
    if args.parse_jobs is None:
        args.parse_jobs = default_jobs(busy=n_learners)


def _scan_jobs(args):
    """The threads of the data files' summary scans: ``--parse-jobs``, else every core."""
    return args.parse_jobs or default_jobs()


def _scan_ahead(args):
    """Start the summary scan of the data file ``eval`` or ``train`` reads first on a
    helper thread (:func:`cwkit.svmlight.scan_ahead`; not for stdin, Vowpal Wabbit text,
    ``--synthetic`` or ``--dask``, nor when the options give the whole summary), so that
    it overlaps the import of the command's modules (its threads those of the scan: it
    takes longer than the import, after which they have every core); the command's own
    scan of that file takes it up.  Returns that scan (or None), for
    `main` to discard if the command did not."""
    if args.command not in ("eval", "train") or args.dask or getattr(args, "synthetic", None):
        return None
    if (args.n_features or args.hash_bits) and args.classes and (args.zero_based
                                                                 or args.one_based):
        return None
    names = args.data if isinstance(args.data, list) else [args.data]
    if names and names[0] != "-" and not _is_vw(args, names[0]):
        return scan_ahead(names[0], _scan_jobs(args))
    return None


def _hash_bits_option(group):
    group.add_argument("--hash-bits", type=_hash_bits, metavar="B",
                       help="fold every feature index into 2^B columns (index mod 2^B; "
                       "repeated ones in a row summed): memory bounded by B whatever the "
                       "indices, as Vowpal Wabbit's -b")


def _learning_options(p):
    g = p.add_argument_group("learning")
    g.add_argument("--task", choices=TASKS,
                   help="classification (labels name classes), or regression (real-valued "
                   "labels learnt by the regressors: pa, pa1, pa2, arow; progressive and "
                   "test errors are mean squared and absolute errors) (default "
                   "classification)")
    g.add_argument("--passes", type=_positive_int, default=1, metavar="N",
                   help="passes over the training data (default 1)")
    g.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=False,
                   help="shuffle each pass (default: no, the stored order)")
    g.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    g.add_argument("--shuffle-window", type=_positive_int, default=DEFAULT_SHUFFLE_WINDOW,
                   metavar="N", help="rows shuffled together (bounded memory; default "
                   "%(default)s)")
    g.add_argument("--multiclass", choices=("top1", "topk", "ovr"),
                   help="multi-class reduction (default: the estimator's)")
    g.add_argument("--k", type=_positive_int, help="constraints per round for --multiclass topk")
    g.add_argument("--class-weight", type=_class_weight, metavar="balanced|CLASS:W,...",
                   help="an importance weight per class, multiplying the rows' own (a "
                   "Vowpal Wabbit file's): balanced (n / (K n_c), n_c the rows of class c "
                   "seen so far) or a weight per label, 1 for a label not named (a first "
                   "label with a minus: --class-weight=-1:0.5,1:2)")
    d = p.add_argument_group("distributed training (needs: pip install dask distributed)")
    d.add_argument("--dask", metavar="local:N|ADDRESS",
                   help="train over partitions of the file on Dask: local:N starts N "
                   "worker processes here, ADDRESS (tcp://host:8786) uses a running "
                   "scheduler; one partition per worker thread (see docs/scaling.md)")
    d.add_argument("--rounds", type=_positive_int, default=1, metavar="R",
                   help="with --dask: rounds of parameter mixing, one pass per shard each "
                   "(default 1)")
    d.add_argument("--mixing", choices=("auto", "average", "updates", "confidence", "touched"),
                   default="auto", help="with --dask: how the shards' models are mixed "
                   "(default auto: confidence for cw, arow, sop; average otherwise; "
                   "touched, for first-order rules: each weight's change averaged over "
                   "the shards that changed it)")


def _int_at_least(lo, what, hi=None):
    """An argparse type: an integer >= lo (and <= hi), else "expected <what>, got '...'"."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = lo - 1
        if value < lo or hi is not None and value > hi:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value
    return parse


# (counts beyond a Py_ssize_t, the compiled core's, are refused here with the largest)
_positive_int = _int_at_least(1, f"an integer from 1 to {SSIZE_MAX}", hi=SSIZE_MAX)
_nonnegative_int = _int_at_least(0, f"an integer from 0 to {SSIZE_MAX}", hi=SSIZE_MAX)
_hash_bits = _int_at_least(1, f"an integer from 1 to {MAX_HASH_BITS} (2^B columns; a model "
                           "takes fewer than 2^31)", hi=MAX_HASH_BITS)


def _class_weight(text):
    """``--class-weight``: "balanced", or ``CLASS:W,...`` as a dict label -> weight
    (finite, >= 0; the label parsed as ``--classes`` labels are)."""
    if text.strip() == "balanced":
        return "balanced"
    weights = {}
    for item in text.split(","):
        label, sep, value = item.rpartition(":")
        try:
            weight = float(value)
        except ValueError:
            weight = -1.0
        if not sep or not label.strip() or not (0.0 <= weight < float("inf")):
            raise argparse.ArgumentTypeError(
                f"expected balanced or CLASS:W,... with each W a finite number >= 0, "
                f"got {item!r}")
        weights[_parse_value(label)] = weight
    return weights


#: what ``--noise`` takes, by task
_NOISE_VALUES = ("a probability in [0, 1] (or, with --task regression, a standard "
                 "deviation >= 0)")


def _noise(text):
    """``--noise``: a finite number >= 0 (a probability for classification, checked with
    the task: ``_check_task_options``)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected {_NOISE_VALUES}, got {text!r}")
    return value


def _build_parser():
    parser = _Parser(prog="cwkit", description="Online linear classifiers and regressors: "
                     "compare, train, predict. `cwkit COMMAND --help` for each command.",
                     epilog=EXIT_STATUS, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"cwkit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    fmt = argparse.RawDescriptionHelpFormatter

    p = sub.add_parser("eval", help="compare online learners on data (progressive validation)",
                       description=EVAL_DESCRIPTION,
                       epilog=EVAL_EXAMPLES + "\n" + EXIT_STATUS, formatter_class=fmt)
    p.add_argument("data", nargs="*", help="svmlight/libsvm files (.gz/.bz2/.xz; - for "
                   "stdin); none: the small data set shipped with cwkit")
    p.add_argument("--algos", metavar="A,B,...",
                   help="algorithms (see `cwkit algos`); NAME:KEY=VALUE adds an inline "
                   "parameter, e.g. sop,sop:covariance=full; the kernel parameters (kernel, "
                   "gamma, degree, coef0, budget, budget_policy, average) select a kernel "
                   "form: pa1:kernel=rbf:gamma=0.5:budget=100; kernel_approx=rff|nystroem "
                   "(gamma, n_components) feeds any linear rule approximate RBF features: "
                   "arow:kernel_approx=rff:gamma=0.5 (default pa,cw,arow; with --task "
                   "regression pa1,arow)")
    p.add_argument("--test", action="append", metavar="FILE",
                   help="test file scored after training (one per data file): the model "
                   "of the parameters ('test err', as `cwkit train` saves it), its last "
                   "iterate ('last err') and its average ('avg err')")
    p.add_argument("--format", choices=("table", "json", "csv", "svmlight", "vw"),
                   default="table", help="the output (default table); svmlight or vw: "
                   "the data files' format instead (as --data-format)")
    p.add_argument("--strict", action="store_true",
                   help="exit with status 1 if any learner fails (default: a learner that "
                   "fails is reported in its row and the others go on; the status is 1 "
                   "only when every learner of a task fails)")
    p.add_argument("--param", action="append", metavar="ALGO.KEY=VALUE",
                   help="hyper-parameter, repeatable (e.g. arow.r=0.1)")
    p.add_argument("--grid", action="append", metavar="ALGO.KEY=V1,V2,...",
                   help="values to tune over, repeatable: each trains the model the table "
                   "reports on part of the training rows and is scored on the rest")
    p.add_argument("--tune-on", choices=("shuffled", "first-half"), default="shuffled",
                   help="held-out run for --grid: a shuffled run of 70%% of the training "
                   "rows scored on the other 30%% (default), or the first half scored on "
                   "the second")
    p.add_argument("--cv", type=int, metavar="K",
                   help="K-fold cross-validation (mean ± sd)")
    p.add_argument("--repeats", type=_positive_int, default=1, metavar="R",
                   help="independent trials: fresh synthetic data or reshuffles (mean ± sd)")
    p.add_argument("--noise", type=_noise, default=0.0, metavar="P",
                   help="replace training labels with probability P (scored on clean "
                   "labels); with --task regression, add Gaussian noise of standard "
                   "deviation P to the training targets (scored on the clean targets)")
    p.add_argument("--tasks", choices=("all-pairs", "one-vs-all"),
                   help="binary tasks built from multi-class data")
    s = p.add_argument_group("synthetic data (instead of files)")
    s.add_argument("--synthetic", choices=sources.SYNTHETIC,
                   help="crammer: rotated Gaussian in R^20 ([AROW13], [ECCW08]); twonorm: "
                   "Breiman ([GPA13]); drift: four-phase stream ([LMC09])")
    s.add_argument("--n-samples", type=_positive_int, metavar="N",
                   help=f"training size (crammer {sources.CRAMMER_TRAIN_SIZE}, "
                   f"twonorm {sources.TWONORM_TRAIN_SIZE})")
    s.add_argument("--test-size", type=_nonnegative_int, default=10000, metavar="N",
                   help="test size for crammer/twonorm (default 10000; 0: none)")
    s.add_argument("--s-long", type=float, default=10.0, help="crammer: long-axis sd (10)")
    s.add_argument("--s-short", type=float, default=1.0, help="crammer: short-axis sd (1)")
    s.add_argument("--n-per-phase", type=_positive_int, default=800, metavar="N",
                   help="drift: examples per phase (800)")
    s.add_argument("--drift-features", type=_positive_int, default=1000, metavar="D",
                   help="drift: vocabulary size (1000)")
    o = p.add_argument_group("curves and progress")
    o.add_argument("--curve", metavar="FILE.csv", help="write cumulative mistakes")
    o.add_argument("--curve-every", type=_positive_int, default=100, metavar="N",
                   help="curve point every N examples (default 100)")
    o.add_argument("--plot", metavar="FILE.png", help="draw the curves (needs matplotlib)")
    _learning_options(p)
    _data_options(p)
    _common(p)
    p.set_defaults(run=_eval)

    p = sub.add_parser("train", help="fit one algorithm on a file and save the model",
                       description="Fit an algorithm on a file (streamed) and save it with "
                       "cwkit.save.", formatter_class=fmt, epilog="examples:\n"
                       "  cwkit train --algo arow --param r=0.1 data.svm -o model.cwk\n"
                       "  cwkit train --algo pa1 --param C=0.1 --passes 5 --shuffle "
                       "data.svm.gz -o pa1.cwk\n"
                       "  cwkit train -i model.cwk more.svm -o model2.cwk\n")
    p.add_argument("data", help="svmlight/libsvm file (- for stdin)")
    p.add_argument("--algo", "--algos", metavar="NAME[:KEY=VALUE...]",
                   help="the algorithm (see `cwkit algos`), with inline parameters as in "
                   "eval's --algos: pa1:kernel=rbf:gamma=0.5; required unless -i")
    p.add_argument("-i", "--initial", metavar="MODEL",
                   help="go on training this model (a file of `cwkit train` or cwkit.save) "
                   "on DATA: the same model as one run on its data and DATA together; "
                   "--algo, --param, --multiclass, --k and --hash-bits, if given, must be "
                   "the model's")
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="hyper-parameter, repeatable")
    p.add_argument("-o", "--output", required=True, metavar="MODEL", help="model file")
    _learning_options(p)
    _data_options(p)
    _common(p)
    p.set_defaults(run=_train)

    p = sub.add_parser("predict", help="predict labels (or scores) with a saved model",
                       description="One prediction per input row, one line each. When "
                       "every label of the file is one of the model's classes, the error "
                       "rate (and with --proba the log loss) goes to stderr (--quiet: "
                       "not).",
                       formatter_class=fmt, epilog="examples:\n"
                       "  cwkit predict model.cwk data.svm > labels.txt\n"
                       "  cwkit predict model.cwk data.svm --proba -o proba.txt\n")
    p.add_argument("model", help="model file written by `cwkit train` or cwkit.save")
    p.add_argument("data", help="svmlight/libsvm file (- for stdin)")
    p.add_argument("--scores", action="store_true", help="decision scores instead of labels")
    p.add_argument("--proba", action="store_true",
                   help="calibrated class probabilities instead of labels")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE, not stdout")
    p.add_argument("--no-header", action="store_true",
                   help="no header line (the class of each column) before --scores or "
                   "--proba")
    p.add_argument("--precision", type=_positive_int, default=6, metavar="N",
                   help="significant digits of --scores and --proba, and of a regressor's "
                   "predictions (default 6, %%.6g)")
    d = p.add_argument_group("data")
    z = d.add_mutually_exclusive_group()
    z.add_argument("--zero-based", action="store_true", help="indices start at 0")
    z.add_argument("--one-based", action="store_true", help="indices start at 1")
    d.add_argument("--batch-size", type=_positive_int, default=sources.DEFAULT_BATCH_SIZE,
                   metavar="N")
    _hash_bits_option(d)
    _data_format_option(d)
    _rows_option(d)
    _parse_jobs_option(d)
    d.add_argument("--ignore-extra-features", action="store_true",
                   help="drop features beyond the model's width (default: such a file is "
                   "an error, as it was likely not the model's kind of data)")
    _common(p)
    p.set_defaults(run=_predict)

    p = sub.add_parser("show", help="what a saved model is: rule, parameters, provenance, "
                       "largest weights", description="A model file read: its rule and "
                       "parameters as resolved, classes, width, hash bits, counters, "
                       "provenance (cwkit version, data files, dates) and its largest "
                       "weights with their variances; cwkit.describe(model) in Python.",
                       formatter_class=fmt, epilog="examples:\n  cwkit show model.cwk\n"
                       "  cwkit show model.cwk --top 20 --format json\n")
    p.add_argument("model", help="model file written by `cwkit train` or cwkit.save")
    p.add_argument("--top", type=_nonnegative_int, default=10, metavar="N",
                   help="the N weights of largest magnitude (default 10)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    _common(p)
    p.set_defaults(run=_show)

    p = sub.add_parser("algos", help="list the algorithms and their hyper-parameters",
                       description="The registry: names, descriptions, hyper-parameters "
                       "with defaults and ranges.", formatter_class=fmt,
                       epilog="examples:\n  cwkit algos\n  cwkit algos --format json\n"
                       "  cwkit algos --task regression\n  cwkit algos --references\n")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--task", choices=TASKS, help="regression: list the regressors "
                   "(cwkit.make_regressor) instead of the classifiers")
    p.add_argument("--references", action="store_true",
                   help="print the papers cited by key, such as [AROW13], in full")
    _common(p)
    p.set_defaults(run=_algos)
    return parser, sub.choices


def _parse(argv):
    """Parse ``argv``; a command's options and file names may be intermixed."""
    parser, commands = _build_parser()
    if argv and argv[0] in commands:
        args = commands[argv[0]].parse_intermixed_args(argv[1:])
        args.command = argv[0]
        return args
    return parser.parse_args(argv)


_KEYWORD_OPTIONS = ((re.compile(r"\bzero_based=True\b"), "--zero-based"),
                    (re.compile(r"\bzero_based=False\b"), "--one-based"),
                    (re.compile(r"\bn_features=(\d+)"), r"--n-features \1"))


def _data_error_message(exc):
    """``FILE:LINE: message``, the reader's Python keywords named as their options."""
    path, line = getattr(exc, "path", None), getattr(exc, "line", None)
    msg = str(exc)
    if isinstance(exc, SvmlightError):
        for keyword, option in _KEYWORD_OPTIONS:
            msg = keyword.sub(option, msg)
    if isinstance(exc, OSError) and getattr(exc, "filename", None) is not None:
        return f"{exc.filename}: {exc.strerror or msg}"
    if path is not None:
        where = f"{path}:{line}" if line is not None else f"{path}"
        for prefix in (f"{path}, line {line}: ", f"{where}: ", f"{path}: "):
            if msg.startswith(prefix):
                msg = msg[len(prefix):]
                break
        msg = f"{where}: {msg}"
    return msg


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """A warning (e.g. of the svmlight reader) as one line ``cwkit: warning: ...``."""
    print(f"cwkit: warning: {message}", file=sys.stderr)


def main(argv=None):
    """Run the command line; returns the exit status (0, 1 data error, 2 usage error)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv
    spool = _Spool()
    started = _interrupt.holding()
    ahead = None
    try:
        try:
            args = _parse(argv)
        except SystemExit as exc:  # --help
            return int(exc.code or 0)
        ahead = _scan_ahead(args)
        _import_commands()
        # a Ctrl-C pressed while cwkit and the command's modules were imported or the
        # arguments parsed is raised here: argparse's own clean-up, and an import's,
        # fail when interrupted half-way
        _interrupt.release()
        _collector.resume()     # (the modules are imported: what they made is kept for good)
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return args.run(args, spool)
    except UsageError as exc:
        if debug:
            raise
        print(f"cwkit: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader went away (`cwkit predict ... | head`): stop quietly, as
        # command-line tools killed by SIGPIPE do, without a second error at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except (DataError, ValueError, OSError) as exc:
        if debug:
            raise
        path = getattr(exc, "path", None)
        msg = (path is not None and not_svmlight(path)) or _data_error_message(exc)
        print(f"cwkit: error: {msg}", file=sys.stderr)
        return 1
    except MemoryError:
        if debug:
            raise
        print("cwkit: error: out of memory (a smaller --batch-size or --shuffle-window, or "
              "fewer features, needs less)", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("cwkit: interrupted", file=sys.stderr)
        return 130
    finally:
        _collector.resume()         # (where the command did not start: --help, usage errors)
        _interrupt.finish(started)  # the status is decided: a Ctrl-C now changes nothing
        spool.close()               # (nor stops the clean-up half-way)
        if ahead is not None:
            ahead.discard()
