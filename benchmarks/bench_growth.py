"""A feature space that grows: the cost of a stream whose width grows by one feature
per row, against the same rows given at their final width from the start.

Row i of the stream holds features of index <= i (its last one new), so the two
streams learn the same model bit for bit (checked); the growing one widens the model
at every row.  Both are fed to ``partial_fit`` one row at a time (the single-example
path, where a widening costs most, relative to the row) and in chunks of rows / 10
(at most 1,000).  Every shape of state is measured: first-order, diagonal (CW, AROW,
SOP), AdaGrad, L1-PA, mini-batch PA, full covariance, the multi-class reductions
(top-1, top-k, one-vs-rest) and a kernel form; the full covariance and the kernel
form on fewer rows (their rounds cost O(width^2) and O(support set)).

    PYTHONPATH=. python benchmarks/bench_growth.py [--rows 10000] [--nnz 20] [--only NAME]
"""
import argparse
import time

import numpy as np
import scipy.sparse as sp

import cwkit


def _rows(n, nnz, n_classes, seed=0):
    """CSR rows: row i has `nnz` features of index <= i, i among them; labels +-1 (two
    classes) or 0..n_classes - 1."""
    rng = np.random.default_rng(seed)
    indptr, indices = [0], []
    for i in range(n):
        idx = np.unique(np.append(rng.integers(0, i + 1, size=nnz - 1), i))
        indices.append(idx)
        indptr.append(indptr[-1] + len(idx))
    indices = np.concatenate(indices).astype(np.int32)
    data = rng.normal(size=len(indices))
    X = sp.csr_matrix((data, indices, np.array(indptr)), shape=(n, n))
    if n_classes == 2:
        return X, np.where(X @ rng.normal(size=n) > 0, 1, -1)
    return X, np.argmax(X @ rng.normal(size=(n, n_classes)), axis=1)


def _singles(X, grow):
    """The rows as 1-row CSR matrices: of width i + 1 (grow) or of the final width."""
    d = X.shape[1]
    out = []
    for i in range(X.shape[0]):
        lo, hi = X.indptr[i], X.indptr[i + 1]
        out.append(sp.csr_matrix((X.data[lo:hi], X.indices[lo:hi], [0, hi - lo]),
                                 shape=(1, i + 1 if grow else d)))
    return out


def _chunks(X, size, grow):
    d = X.shape[1]
    return [X[lo:lo + size, :(min(lo + size, d) if grow else d)]
            for lo in range(0, X.shape[0], size)]


def _time(name, params, parts, y, classes, size):
    # intercept_scaling given: "auto" judges the first row, whose width differs
    est = cwkit.make(name, intercept_scaling=0.1, **params)
    labels = [y[i:i + size] for i in range(0, len(y), size)]
    t0 = time.process_time()      # CPU time: the machine may be shared
    for part, lab in zip(parts, labels):
        est.partial_fit(part, lab, classes=classes)
    return time.process_time() - t0, est


def processor_name():
    """The processor's model name (/proc/cpuinfo), which every figure is quoted with."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown processor"


#: (label, registry name, parameters, classes, the share of --rows it runs)
CASES = [
    ("pa1", "pa1", {}, 2, 1.0),
    ("arow diag", "arow", {"covariance": "diag", "r": 1.0}, 2, 1.0),
    ("cw diag", "cw", {"covariance": "diag"}, 2, 1.0),
    ("sop diag", "sop", {"covariance": "diag"}, 2, 1.0),
    ("adagrad", "adagrad", {}, 2, 1.0),
    ("l1-pa", "l1-pa", {}, 2, 0.2),
    ("bpa1", "bpa1", {"batch_size": 4}, 2, 1.0),
    ("arow full", "arow", {"covariance": "full", "r": 1.0}, 2, 0.04),
    ("pa1 top1", "pa1", {}, 3, 1.0),
    ("arow diag top1", "arow", {"covariance": "diag", "r": 1.0}, 3, 1.0),
    ("pa1 topk", "pa1", {"multiclass": "topk", "k": 2}, 3, 1.0),
    ("pa1 ovr", "pa1", {"multiclass": "ovr"}, 3, 1.0),
    ("adagrad top1", "adagrad", {}, 3, 1.0),
    ("bpa1 top1", "bpa1", {"batch_size": 4}, 3, 1.0),
    ("arow full top1", "arow", {"covariance": "full", "r": 1.0}, 3, 0.02),
    ("pa1 rbf kernel", "pa1", {"kernel": "rbf", "gamma": 0.1}, 2, 0.1),
]


def _same(a, b, X):
    """Whether two estimators learnt the same model: the same mistakes and the same
    scores of the rows, bit for bit."""
    return (a.mistakes_ == b.mistakes_
            and np.array_equal(a.decision_function(X), b.decision_function(X)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10000)
    ap.add_argument("--nnz", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", help="the cases whose label starts with this")
    args = ap.parse_args(argv)
    print(f"{processor_name()}; up to {args.rows} rows, {args.nnz} nonzeros each, final "
          f"width the rows; best of {args.repeat}, fixed and growing interleaved")
    print(f"{'rule':<16} {'rows':>6} {'feed':<6} {'fixed s':>8} {'growing s':>10} "
          f"{'ratio':>6}  (CPU s)")
    for label, name, params, n_classes, share in CASES:
        if args.only and not label.startswith(args.only):
            continue
        n = max(50, int(args.rows * share))
        X, y = _rows(n, args.nnz, n_classes)
        size = max(1, min(1000, n // 10))
        classes = np.unique(y)
        feeds = {"row": (1, _singles(X, False), _singles(X, True)),
                 "chunk": (size, _chunks(X, size, False), _chunks(X, size, True))}
        for feed, (rows, fixed, grown) in feeds.items():
            tf = tg = np.inf
            for _ in range(args.repeat):
                a, ea = _time(name, params, fixed, y, classes, rows)
                b, eb = _time(name, params, grown, y, classes, rows)
                tf, tg = min(tf, a), min(tg, b)
            assert _same(ea, eb, X), label
            print(f"{label:<16} {n:>6} {feed:<6} {tf:8.3f} {tg:10.3f} {tg / tf:6.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
