"""One pass of the multi-class reductions on 20 Newsgroups against scikit-learn.

Data: ``../shared/data/text/news20.mc.{train,test}.xz`` (20 classes, 173k
features, 11,314 / 7,532 rows, (1 + log tf) idf, L2-normalised, shuffled).
Each learner makes one ``partial_fit`` pass over the same in-memory CSR, in
file order; scikit-learn's reference is ``SGDClassifier(loss="hinge",
penalty=None, learning_rate="pa1", eta0=1.0)`` (PA-I, one-vs-rest).  Prints one
tab-separated row per learner: learner, seconds, examples/s, ratio to
scikit-learn's examples/s, online error (progressive mistakes / rows; not
available for scikit-learn), test accuracy.  Targets (issue 5): top-1 >= 2x and
ovr >= 1x scikit-learn's examples/s; top-k with K = 20, k = 5 >= 5,000 examples/s.

    python benchmarks/bench_multiclass.py              # best of 3 passes per learner
    python benchmarks/bench_multiclass.py --repeat 1

Each timing is the best of ``--repeat`` runs (the machines are shared and noisy).
"""
import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

import cwkit
from cwkit.svmlight import load_svmlight

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "text"

LEARNERS = [
    ("top1 pa1", "pa1", {"multiclass": "top1"}),
    ("top1 cw", "cw", {"multiclass": "top1"}),
    ("top1 arow", "arow", {"multiclass": "top1"}),
    ("ovr pa1", "pa1", {"multiclass": "ovr"}),
    ("topk5 pa1", "pa1", {"multiclass": "topk", "k": 5}),
    ("topk5 arow", "arow", {"multiclass": "topk", "k": 5}),
    ("all pa1", "pa1", {"multiclass": "topk", "k": 19}),
]


def best_of(repeat, fn):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def load():
    train, test = DATA / "news20.mc.train.xz", DATA / "news20.mc.test.xz"
    for f in (train, test):
        if not f.exists():
            sys.exit(f"{f} is absent: this benchmark needs the shared data folder next to "
                     "the repository")
    X, y = load_svmlight(train)[:2]
    Xt, yt = load_svmlight(test)[:2]
    d = max(X.shape[1], Xt.shape[1])
    X.resize((X.shape[0], d))
    Xt.resize((Xt.shape[0], d))
    return X, y, Xt, yt


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    X, y, Xt, yt = load()
    classes = np.unique(y)
    n = X.shape[0]
    print(f"# news20.mc: {n} train / {Xt.shape[0]} test rows, {X.shape[1]} features, "
          f"{len(classes)} classes, {X.nnz} nonzeros; python {platform.python_version()}, "
          f"{platform.machine()}")
    print("learner\tseconds\texamples/s\tratio_to_sklearn\tonline_error\ttest_accuracy")

    rows = []
    try:
        from sklearn.linear_model import SGDClassifier
    except ImportError:
        SGDClassifier = None
        print("# scikit-learn is not installed: no reference row, ratios are NaN")
    sk_rate = np.nan
    if SGDClassifier is not None:
        def sk_run():
            est = SGDClassifier(loss="hinge", penalty=None, learning_rate="pa1", eta0=1.0,
                                shuffle=False)
            return est.partial_fit(X, y, classes=classes)
        sec, est = best_of(args.repeat, sk_run)
        sk_rate = n / sec
        rows.append(("sklearn ovr pa1", sec, sk_rate, np.nan, est.score(Xt, yt)))

    for label, name, params in LEARNERS:
        def run(name=name, params=params):
            return cwkit.make(name, shuffle=False, **params).partial_fit(X, y, classes=classes)
        sec, est = best_of(args.repeat, run)
        rows.append((label, sec, n / sec, est.mistakes_ / n, est.score(Xt, yt)))

    for label, sec, rate, err, acc in rows:
        print(f"{label}\t{sec:.4f}\t{rate:.0f}\t{rate / sk_rate:.2f}\t{err:.4f}\t{acc:.4f}")


if __name__ == "__main__":
    main()
