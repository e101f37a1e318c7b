"""Reading Vowpal Wabbit text: cwkit's reader beside Vowpal Wabbit's own parser.

Writes a VW file from an svmlight file (each feature's index as its name, in the
default namespace) or, without one, synthetic rows of word names (``w123``) in two
namespaces, then times, on the same file (in the page cache, best of ``--repeat``):
``cwkit.load_vw`` (parse into CSR, labels, weights) and ``vw -d FILE --noop`` run in
process through the ``vowpalwabbit`` package (its parser and example setup, no
learning; the time of starting a workspace on an empty file is subtracted).  Prints
``name seconds MB/s``.

    python benchmarks/bench_vw.py [--svmlight FILE] [--rows N] [--repeat 3]
"""
import argparse
import os
import random
import tempfile
import time

import numpy as np


def write_from_svmlight(path, out, rows):
    import cwkit
    X, y = cwkit.load_svmlight(path)
    X, y = X[:rows], y[:rows]
    with open(out, "w") as f:
        for i in range(X.shape[0]):
            a, b = X.indptr[i], X.indptr[i + 1]
            feats = " ".join(f"{j + 1}:{v:.6g}" for j, v in zip(X.indices[a:b], X.data[a:b]))
            f.write(f"{int(y[i])} | {feats}\n")


def write_synthetic(out, rows, seed=0):
    rng = random.Random(seed)
    with open(out, "w") as f:
        for _ in range(rows):
            words = " ".join(f"w{rng.randrange(100000)}" for _ in range(30))
            nums = " ".join(f"n{k}:{rng.random():.4f}" for k in range(10))
            f.write(f"{rng.choice('+-')}1 {rng.choice(['1', '0.5', '2'])} |text {words} "
                    f"|num {nums}\n")


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--svmlight", help="an svmlight file to convert (default: synthetic)")
    p.add_argument("--rows", type=int, default=100000)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    import cwkit
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.vw")
        if args.svmlight:
            write_from_svmlight(args.svmlight, path, args.rows)
        else:
            write_synthetic(path, args.rows)
        mb = os.path.getsize(path) / 1e6
        X, y, w = cwkit.load_vw(path)
        print(f"# {X.shape[0]} rows, {X.nnz} nonzeros, {mb:.1f} MB")
        t = best(lambda: cwkit.load_vw(path), args.repeat)
        print(f"cwkit-load_vw {t:.3f} {mb / t:.1f}")
        try:
            from vowpalwabbit import pyvw
        except ImportError:
            print("# vowpalwabbit is not installed: pip install vowpalwabbit")
            return
        empty = os.path.join(tmp, "empty.vw")
        open(empty, "w").close()

        def vw(data):
            pyvw.Workspace(f"-d {data} --noop --quiet -b 18").finish()

        t0 = best(lambda: vw(empty), args.repeat)
        t = best(lambda: vw(path), args.repeat) - t0
        print(f"vw-noop {t:.3f} {mb / t:.1f}")
        n = np.count_nonzero(np.isfinite(y))
        print(f"# rows with labels: {n}")


if __name__ == "__main__":
    main()
