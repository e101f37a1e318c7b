"""Named features: rows of 20 named features per second, cwkit's dict path beside river's PA.

Prints a ``# machine:`` line (the processor's model name, cores, load average, the
clock), then one machine-readable row per measurement (``name rows_per_second``):
cwkit's ``pa``, ``pa1``, ``pa2``, ``arow`` and ``cw`` (two classes, hashed into 2^18
columns, their defaults; ``--classes K``: K classes, the multi-class top-1 models;
``--names vocabulary``: an exact growing vocabulary, ``features="vocabulary"``; ``arow``
and ``cw`` diagonal, as their default is at 2^18 columns) through
``learn_one`` (one dict per call), ``predict_one``,
``predict_proba_one``, ``learn_many`` and ``predict_many`` (lists of ``--batch``
dicts), cwkit's PA-I regressor through ``learn_one`` and ``predict_one``, and river's
``PAClassifier`` (the peer, PA-I with C=1) and ``PARegressor`` through ``learn_one``,
``predict_one`` and ``predict_proba_one``: the same dict objects, in the same loop, in
one run.  Each figure is the best of ``--repeat`` rounds in which every measurement runs
in turn, every other round in reverse order, learning each time on a fresh model
(``bench_core.best_of_interleaved``, the garbage collector off while a run is timed), in
process CPU time unless ``--clock wall`` (the machine is shared: other jobs move wall
time far more than CPU time; every run is one thread).  ``--only`` limits cwkit's rules
(river's rows are always measured).  river is optional (the rows of a missing package
are skipped, saying so).

    python benchmarks/bench_named.py [--rows N] [--features 20] [--vocab 100000] [--repeat 3]
                                     [--classes 2] [--names hash|vocabulary]
"""
import argparse
import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import CLOCKS, best_of_interleaved  # noqa: E402
from bench_growth import processor_name  # noqa: E402

RULES = ("pa", "pa1", "pa2", "arow", "cw")


def stream(n, n_features, vocab, seed=0):
    rng = random.Random(seed)
    names = [f"w{i}" for i in range(vocab)]
    rows = [{rng.choice(names): rng.random() for _ in range(n_features)} for _ in range(n)]
    return rows, [rng.random() < 0.5 for _ in range(n)]


def class_labels(n, n_classes, seed=1):
    """Labels 0 .. n_classes - 1 of n rows (cwkit's rows of ``--classes``)."""
    rng = random.Random(seed)
    return [rng.randrange(n_classes) for _ in range(n)]


def _learn_one(make, rows, y):
    def run():
        model = make()
        for x, label in zip(rows, y):
            model.learn_one(x, label)
        return model    # (freed after the clock stops: a stream's model is kept)
    return run


def _learn_many(make, rows, y, batch):
    def run():
        model = make()
        for i in range(0, len(rows), batch):
            model.learn_many(rows[i:i + batch], y[i:i + batch])
        return model
    return run


def _predict(model, rows, method):
    def run():
        for x in rows:
            method(model, x)
    return run


def _predict_many(model, rows, batch):
    def run():
        for i in range(0, len(rows), batch):
            model.predict_many(rows[i:i + batch])
    return run


def cwkit_runs(rows, y, batch, rules, n_classes=2, names="hash"):
    """(label, run) of every cwkit measurement (`n_classes` classes: labels of their own)."""
    import cwkit
    runs = []
    classes = [False, True]
    if n_classes != 2:
        y, classes = class_labels(len(rows), n_classes), list(range(n_classes))
    for name in rules:
        # (the first row gives the classes: the rows after it are learnt one per call)
        def make(name=name):
            return cwkit.make(name).use_features(names).learn_one(
                rows[0], y[0], classes=classes)
        fitted = make()
        _learn_one(lambda m=fitted: m, rows, y)()
        runs += [(f"cwkit-{name}-learn_one", _learn_one(make, rows, y))]
        runs += [(f"cwkit-{name}-{method}", _predict(fitted, rows, getattr(type(fitted), method)))
                 for method in ("predict_one", "predict_proba_one")]
        runs += [(f"cwkit-{name}-learn_many", _learn_many(make, rows, y, batch)),
                 (f"cwkit-{name}-predict_many", _predict_many(fitted, rows, batch))]
    targets = [1.0 if v else -1.0 for v in y]
    def make_reg():
        return cwkit.make_regressor("pa1").use_features(names)
    reg = make_reg()
    _learn_one(lambda: reg, rows, targets)()
    return runs + [
        ("cwkit-pa1-regressor-learn_one", _learn_one(make_reg, rows, targets)),
        ("cwkit-pa1-regressor-predict_one", _predict(reg, rows, type(reg).predict_one))]


def river_runs(rows, y):
    """(label, run) of every river measurement ([] without river)."""
    try:
        from river import linear_model
    except ImportError:
        print("# river is not installed: pip install river")
        return []
    runs = []
    targets = [1.0 if v else -1.0 for v in y]
    for name, make, labels, methods in (
            ("PAClassifier", lambda: linear_model.PAClassifier(C=1.0), y,
             ("predict_one", "predict_proba_one")),
            ("PARegressor", lambda: linear_model.PARegressor(C=1.0), targets,
             ("predict_one",))):
        fitted = make()
        _learn_one(lambda m=fitted: m, rows, labels)()
        runs += [(f"river-{name}-learn_one", _learn_one(make, rows, labels))]
        runs += [(f"river-{name}-{method}", _predict(fitted, rows, getattr(type(fitted), method)))
                 for method in methods]
    return runs


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=50000)
    p.add_argument("--features", type=int, default=20)
    p.add_argument("--vocab", type=int, default=100000)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    p.add_argument("--classes", type=int, default=2,
                   help="cwkit's classes (river's PAClassifier always has two)")
    p.add_argument("--names", choices=("hash", "vocabulary"), default="hash",
                   help="cwkit's feature names: hashed into 2^18 columns, or a vocabulary")
    p.add_argument("--only", default=",".join(RULES),
                   help="cwkit's rules, comma-separated (default: all of them)")
    args = p.parse_args()
    rows, y = stream(args.rows, args.features, args.vocab)
    print(f"# machine: {processor_name()}, {os.cpu_count()} cores, load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f"; {args.clock} time; cwkit: "
          f"{args.classes} classes, names {args.names}")
    runs = (cwkit_runs(rows, y, args.batch, args.only.split(","), args.classes, args.names)
            + river_runs(rows, y))
    best = best_of_interleaved(args.repeat, runs, CLOCKS[args.clock])
    for label, _ in runs:
        print(f"{label} {len(rows) / best[label][0]:.0f}")


if __name__ == "__main__":
    main()
