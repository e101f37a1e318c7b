"""A feature space that grows: the cost of a stream whose width grows by one feature
per row, against the same rows given at their final width from the start.

Row i of the stream holds features of index <= i (its last one new), so the two
streams learn the same model bit for bit (checked); the growing one widens the model
at every row.  Both are fed to ``partial_fit`` one row at a time (the single-example
path, where a widening costs most, relative to the row) and in chunks of 1,000 rows.

    PYTHONPATH=. python benchmarks/bench_growth.py [--rows 20000] [--nnz 20]
"""
import argparse
import time

import numpy as np
import scipy.sparse as sp

import cwkit


def _rows(n, nnz, seed=0):
    """CSR rows: row i has `nnz` features of index <= i, i among them; labels +-1."""
    rng = np.random.default_rng(seed)
    indptr, indices = [0], []
    for i in range(n):
        idx = np.unique(np.append(rng.integers(0, i + 1, size=nnz - 1), i))
        indices.append(idx)
        indptr.append(indptr[-1] + len(idx))
    indices = np.concatenate(indices).astype(np.int32)
    data = rng.normal(size=len(indices))
    X = sp.csr_matrix((data, indices, np.array(indptr)), shape=(n, n))
    w = rng.normal(size=n)
    y = np.where(X @ w > 0, 1, -1)
    return X, y


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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--nnz", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    X, y = _rows(args.rows, args.nnz)
    print(f"{processor_name()}; {args.rows} rows, {args.nnz} "
          f"nonzeros each, final width {X.shape[1]}; best of {args.repeat}")
    print(f"{'rule':<22} {'feed':<10} {'fixed s':>8} {'growing s':>10} {'ratio':>6}  (CPU s)")
    feeds = {"row": (1, _singles(X, False), _singles(X, True)),
             "chunk": (1000, _chunks(X, 1000, False), _chunks(X, 1000, True))}
    for name, params in (("pa1", {}), ("arow", {"covariance": "diag", "r": 1.0}),
                         ("cw", {"covariance": "diag"}), ("adagrad", {}),
                         ("l1-pa", {})):
        for feed, (size, fixed, grown) in feeds.items():
            tf = tg = np.inf
            for _ in range(args.repeat):
                a, ea = _time(name, params, fixed, y, [-1, 1], size)
                b, eb = _time(name, params, grown, y, [-1, 1], size)
                tf, tg = min(tf, a), min(tg, b)
            assert np.array_equal(ea.coef_, eb.coef_) and ea.mistakes_ == eb.mistakes_
            label = name + (" " + params["covariance"] if params else "")
            print(f"{label:<22} {feed:<10} {tf:8.3f} {tg:10.3f} {tg / tf:6.2f}")


if __name__ == "__main__":
    main()
