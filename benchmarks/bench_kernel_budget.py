"""Kernel rules on a budget against scikit-learn's SVC().fit on the same rows.

The first --rows rows of the adult set (a9a, 123 binary features, as dense rows) train
each model once (one pass for the cwkit kernel forms, at their defaults with
``budget=--budget``); the first 5,000 rows of a9a.t test it. Prints the seconds of
``fit`` (wall and CPU: on a shared machine the CPU time depends less on the other jobs),
the test error (%), the support vectors kept and the speed-up over ``SVC()`` of each.

usage: python benchmarks/bench_kernel_budget.py [--rows 20000] [--budget 500]
Reads ``shared/data/adult`` beside the project folder.
"""
import argparse
import pathlib
import sys
import time

import numpy as np

import cwkit
from cwkit.svmlight import load_svmlight

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "adult"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--budget", type=int, default=500)
    ap.add_argument("--names", default="pa1,arow")
    args = ap.parse_args(argv)
    try:
        from sklearn.svm import SVC
    except ImportError:
        sys.exit("bench_kernel_budget.py needs scikit-learn (pip install scikit-learn)")
    if not DATA.is_dir():
        sys.exit(f"the adult files are not in {DATA}")
    X, y = load_svmlight(DATA / "a9a.gz", n_features=123)[:2]
    Xt, yt = load_svmlight(DATA / "a9a.t.gz", n_features=123)[:2]
    X, y = X[:args.rows].toarray(), y[:args.rows]
    Xt, yt = Xt[:5000].toarray(), yt[:5000]
    models = [(f"{n} budget={args.budget}", cwkit.make(n, kernel="rbf", budget=args.budget))
              for n in args.names.split(",")] + [("SVC()", SVC())]
    rows = []
    for label, est in models:
        t, c = time.perf_counter(), time.process_time()
        est.fit(X, y)
        rows.append((label, time.perf_counter() - t, time.process_time() - c,
                     100 * np.mean(est.predict(Xt) != yt), est.support_vectors_.shape[0]))
    svc_s, svc_c = rows[-1][1:3]
    print("model\tfit_s\tfit_cpu_s\ttest_err\tn_SV\tspeed-up\tspeed-up_cpu")
    for label, s, c, err, n in rows:
        print(f"{label}\t{s:.2f}\t{c:.2f}\t{err:.2f}\t{n}\t{svc_s / s:.1f}\t{svc_c / c:.1f}")


if __name__ == "__main__":
    main()
