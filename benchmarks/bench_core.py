"""One pass of every rule against scikit-learn, on the same in-memory CSR.

Prints one machine-readable row per learner (tab-separated: learner, seconds,
rows/s, nonzeros/s, ratio to scikit-learn's PA-I nonzeros/s, online error) and
then the single-example ``partial_fit`` call rate.  Targets:
first-order rules >= 1.0x scikit-learn's PA-I, diagonal CW, CW-Stdev and AROW
>= 0.7x, single-example partial_fit >= 20,000 calls/s with 2**20 features.

    python benchmarks/bench_core.py                 # 200,000 x 2**20, ~100 nnz/row
    python benchmarks/bench_core.py --rows 20000     # quicker
    python benchmarks/bench_core.py --suite multiclass --repeat 7   # news20 only

The multi-class suite (``bench_multiclass.py``) follows the binary one: top-1,
one-vs-rest, top-k and all-constraint reductions on 20 Newsgroups against scikit-learn's
one-vs-rest PA-I, with test accuracy next to the speed; it needs ``../shared/data``
and says so when that is absent.

Each timing is the best of ``--repeat`` rounds in which all learners run in turn, every
other round in reverse order, with Python's garbage collector off while a pass is timed,
in process CPU time unless ``--clock wall`` (the machines are shared: the other jobs move
wall time by 2-3x, CPU time much less; every pass timed runs on one thread, so CPU
time is its cost; ratios taken within one run are what we quote).  Both sides
build a fresh estimator per pass, so both allocate their state in the timed call.  The
last two columns give the spread of the ratio over the rounds: its median and its range,
each round's time over scikit-learn's PA-I time in the same round.
"""
import argparse
import gc
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _synth  # noqa: E402
import bench_multiclass  # noqa: E402
from bench_growth import processor_name  # noqa: E402

import cwkit  # noqa: E402

#: The clocks of --clock.
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}

RULES = ["perceptron", "avg-perceptron", "pa", "pa1", "pa2", "pa-ls", "reg-pa", "l2-pa",
         "soft-reg-pa", "cw", "cw-stdev", "arow", "arow-h", "sop", "adagrad"]
SECOND_ORDER = {"cw", "cw-stdev", "arow", "arow-h", "sop", "adagrad"}


def best_of_interleaved(repeat, runs, clock=time.perf_counter):
    """Best time of each run over `repeat` rounds, the runs interleaved within a round so
    that a change of load on the shared machine hits every learner alike (every other
    round in reverse order: no run always follows the same one), each timed by `clock`
    with the garbage collector off.  Returns {label: (best seconds, its output, [the seconds of
    every round])}.  A run's output is freed before the next run is timed (not while it is:
    a model a run returns is not freed on the clock of another)."""
    best = {label: (float("inf"), None, []) for label, _ in runs}
    enabled = gc.isenabled()
    for r in range(repeat):
        for label, fn in (runs if r % 2 == 0 else runs[::-1]):
            out = None
            gc.collect()
            gc.disable()
            try:
                t0 = clock()
                out = fn()
                secs = clock() - t0
            finally:
                if enabled:
                    gc.enable()
            times = best[label][2]
            times.append(secs)
            if secs < best[label][0]:
                best[label] = (secs, out, times)
    return best


def ratio_spread(times, ref_times):
    """The median and range of the per-round ratios ref time / time (higher is better)."""
    ratios = np.asarray(ref_times) / np.asarray(times)
    return np.median(ratios), ratios.min(), ratios.max()


def one_pass_cwkit(name, X, y):
    def run():
        est = cwkit.make(name, shuffle=False)
        est.partial_fit(X, y, classes=[-1.0, 1.0])
        return est.mistakes_
    return run


def one_pass_sklearn(kind, X, y):
    from sklearn.linear_model import SGDClassifier
    from sklearn.linear_model import Perceptron as SkPerceptron

    def run():
        if kind == "pa1":
            est = SGDClassifier(loss="hinge", penalty=None, learning_rate="pa1", eta0=1.0,
                                shuffle=False)
        else:
            est = SkPerceptron(shuffle=False)
        # scikit-learn predicts nothing before it learns: count its online mistakes
        # would need a per-row loop, so report NaN for its online error.
        est.partial_fit(X, y, classes=[-1.0, 1.0])
        return None
    return run


def single_call_rate(X, y, n_calls, factory):
    rows = [X[i:i + 1] for i in range(n_calls)]
    labels = [y[i:i + 1] for i in range(n_calls)]
    est = factory()
    t0 = time.perf_counter()
    for r, lab in zip(rows, labels):
        est.partial_fit(r, lab, classes=[-1.0, 1.0])
    return n_calls / (time.perf_counter() - t0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=2**20)
    ap.add_argument("--nnz", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--rules", default=",".join(RULES))
    ap.add_argument("--suite", choices=["binary", "multiclass", "all"], default="all")
    ap.add_argument("--clock", choices=["cpu", "wall"], default="cpu",
                    help="time the binary passes in process CPU time (default: what a "
                         "shared machine's other jobs move least; every pass timed runs "
                         "on one thread) or wall time")
    args = ap.parse_args(argv)
    if args.suite != "multiclass":
        binary_suite(args)
    if args.suite != "binary":
        print()
        bench_multiclass.main(["--repeat", str(args.repeat)])


def binary_suite(args):

    X, y = _synth.text_like(n_rows=args.rows, n_features=args.features, nnz_per_row=args.nnz)
    nnz = X.nnz
    print(f"# machine: {processor_name()} ({platform.machine()}) "
          f"python {platform.python_version()} numpy {np.__version__}")
    print(f"# data: {X.shape[0]} rows, {X.shape[1]} features, {nnz} nonzeros "
          f"({nnz / X.shape[0]:.1f}/row); {args.clock} time, best of {args.repeat}; load "
          f"average {os.getloadavg()[0]:.1f}")
    print("learner\tseconds\trows_per_s\tnnz_per_s\tratio_to_sklearn_pa1\tonline_error"
          "\tratio_median\tratio_range")

    try:
        import sklearn  # noqa: F401
        have_sklearn = True
    except ImportError:
        have_sklearn = False
        print("# scikit-learn is not installed: ratios are not available")

    runs = []
    if have_sklearn:
        runs += [("sklearn-SGD-pa1", one_pass_sklearn("pa1", X, y)),
                 ("sklearn-Perceptron", one_pass_sklearn("perceptron", X, y))]
    runs += [(name, one_pass_cwkit(name, X, y)) for name in args.rules.split(",")]
    best = best_of_interleaved(args.repeat, runs, CLOCKS[args.clock])
    ref = nnz / best["sklearn-SGD-pa1"][0] if have_sklearn else None
    for label, (secs, mistakes, times) in best.items():
        err = None if mistakes is None else mistakes / X.shape[0]
        ratio = f"{nnz / secs / ref:.2f}" if ref else "nan"
        err_s = f"{err:.4f}" if err is not None else "nan"
        spread = "nan\tnan"
        if ref:
            med, lo, hi = ratio_spread(times, best["sklearn-SGD-pa1"][2])
            spread = f"{med:.2f}\t{lo:.2f}-{hi:.2f}"
        print(f"{label}\t{secs:.4f}\t{X.shape[0] / secs:.0f}\t{nnz / secs:.3g}\t{ratio}\t{err_s}"
              f"\t{spread}")

    calls = min(args.calls, X.shape[0])
    rate = single_call_rate(X, y, calls, lambda: cwkit.make("pa1"))
    print(f"single-example partial_fit, cwkit pa1\t{rate:.0f} calls/s")
    rate = single_call_rate(X, y, calls, lambda: cwkit.make("arow"))
    print(f"single-example partial_fit, cwkit arow\t{rate:.0f} calls/s")
    if have_sklearn:
        from sklearn.linear_model import SGDClassifier
        sk_calls = min(200, calls)
        rate = single_call_rate(X, y, sk_calls, lambda: SGDClassifier(
            loss="hinge", penalty=None, learning_rate="pa1", eta0=1.0))
        print(f"single-example partial_fit, sklearn SGD-pa1\t{rate:.0f} calls/s")


if __name__ == "__main__":
    main()
