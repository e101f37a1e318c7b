"""The cost of ``average=True``: one pass of every shape of state, averaged and not.

Data: seeded synthetic CSR rows (``--rows`` rows, 100 features, 10% nonzeros, 2
or 5 classes).  For each shape (the rule, its covariance, the multi-class
strategy) the same estimator makes one ``fit`` pass with ``average=False`` and
``average=True``, interleaved; prints one tab-separated row per shape: shape,
rows/s without and with averaging (CPU time, ``time.process_time``, the best of
``--repeat`` rounds) and their ratio (the averaged pass's CPU time over the plain
one's).  Run from a checkout whose drivers average every shape natively, and from
one that still wraps some of them (``cwkit.models.average.Averaged``, one driver
call and O(K D) per row) to compare.

    python benchmarks/bench_average.py                 # best of 5 rounds, 2,000 rows
    python benchmarks/bench_average.py --rows 500 --repeat 3
"""
import argparse
import time

import numpy as np
import scipy.sparse as sp

import cwkit

#: (label, name, parameters, classes)
SHAPES = [
    ("binary pa1 (first-order)", "pa1", {}, 2),
    ("binary arow diag", "arow", {"covariance": "diag"}, 2),
    ("binary arow full", "arow", {"covariance": "full"}, 2),
    ("binary sop full", "sop", {"covariance": "full"}, 2),
    ("binary bpa1 B=8 block", "bpa1", {"batch_size": 8}, 2),
    ("binary bpa1 B=8 sliding", "bpa1", {"batch_size": 8, "window": "sliding"}, 2),
    ("binary l1-pa", "l1-pa", {"beta": 5.0}, 2),
    ("top1 arow full", "arow", {"covariance": "full"}, 5),
    ("ovr arow full", "arow", {"covariance": "full", "multiclass": "ovr"}, 5),
    ("top1 sop diag", "sop", {"covariance": "diag"}, 5),
    ("top1 adagrad", "adagrad", {}, 5),
    ("ovr adagrad", "adagrad", {"multiclass": "ovr"}, 5),
    ("topk2 pa1", "pa1", {"multiclass": "topk", "k": 2}, 5),
    ("topk2 arow diag", "arow", {"multiclass": "topk", "k": 2, "covariance": "diag"}, 5),
    ("top1 bpa1 B=8 block", "bpa1", {"batch_size": 8}, 5),
    ("ovr bpa1 B=8 block", "bpa1", {"batch_size": 8, "multiclass": "ovr"}, 5),
    ("top1 l1-pa", "l1-pa", {"beta": 5.0}, 5),
    ("topk2 l1-pa", "l1-pa", {"beta": 5.0, "multiclass": "topk", "k": 2}, 5),
]


def data(n, K, d=100, density=0.1, seed=0):
    """Seeded CSR rows with labels from a random linear rule with 10% noise."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=rng)
    X.data = rng.normal(size=X.nnz)
    y = np.argmax(X @ rng.normal(size=(d, K)), axis=1)
    flip = rng.random(n) < 0.1
    y[flip] = rng.integers(0, K, flip.sum())
    return X, y


def cpu_seconds(name, params, average, X, y):
    est = cwkit.make(name, average=average, **params)
    t0 = time.process_time()
    est.fit(X, y)
    return time.process_time() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    print("shape\tplain rows/s\taveraged rows/s\tCPU time averaged / plain")
    for label, name, params, K in SHAPES:
        X, y = data(args.rows, K)
        best = {False: np.inf, True: np.inf}
        for _ in range(args.repeat):
            for average in (False, True):
                best[average] = min(best[average], cpu_seconds(name, params, average, X, y))
        print(f"{label}\t{args.rows / best[False]:,.0f}\t{args.rows / best[True]:,.0f}\t"
              f"{best[True] / best[False]:.2f}", flush=True)


if __name__ == "__main__":
    main()
