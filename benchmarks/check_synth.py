"""Check that ``_synth.py`` builds and writes exactly what the one-piece generator did.

``text_like`` builds X in blocks of rows; this script compares it, for several
parameter sets and block sizes, with the plain one-piece reference below (the
generator as it was before blocks: one sort of every row's keys, one draw of
each kind), array for array and bit for bit (X's data, indices, indptr and
their dtypes, and y); checks that numpy's Generator gives the same variates
drawn in two pieces as in one (which the blocks rely on); and that the
streamed train/test files are byte-identical to ``dump_svmlight`` of the
slices of the reference.

    python benchmarks/check_synth.py                      # a few seconds
    python benchmarks/check_synth.py --against bench_data --rows 400000 --test-rows 40000

``--against DIR`` also generates the ``bench_dask.py`` pair of that size in a
temporary folder and compares its md5 with ``DIR``'s cached files.
"""
import argparse
import hashlib
import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _synth  # noqa: E402

import cwkit  # noqa: E402


def text_like_reference(n_rows=200_000, n_features=2**20, nnz_per_row=100, zipf_a=1.2,
                        noise=0.05, seed=0):
    """The one-piece generator (memory about 60 bytes per draw), up to the
    labels of X, which ``_synth._labels`` gives in both."""
    rng = np.random.default_rng(seed)
    rank_to_id = rng.permutation(n_features)
    draws = int(nnz_per_row * 1.95)
    ranks = rng.zipf(zipf_a, size=n_rows * draws)
    bad = ranks > n_features
    while bad.any():
        ranks[bad] = rng.zipf(zipf_a, size=int(bad.sum()))
        bad = ranks > n_features
    rows = np.repeat(np.arange(n_rows, dtype=np.int64), draws)
    keys = np.sort(rows * n_features + rank_to_id[ranks - 1])
    keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
    row, col = np.divmod(keys, n_features)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(row, minlength=n_rows))])
    values = rng.exponential(1.0, size=len(keys)) + 0.1
    sq = np.add.reduceat(values**2, indptr[:-1][np.diff(indptr) > 0]) if len(keys) else values
    norms = np.repeat(np.sqrt(sq), np.diff(indptr)[np.diff(indptr) > 0])
    values = _synth._round6(values / norms)
    X = sp.csr_matrix((values, col.astype(np.int32), indptr), shape=(n_rows, n_features))
    return X, _synth._labels(rng, X, noise)  # the labelling has no blocks


def same(a, b):
    """Same dtype, shape and bits."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def check_stream():
    """Variates drawn as size a then size b equal those drawn as size a + b."""
    draws = {
        "zipf": lambda g, n: g.zipf(1.2, size=n),
        "exponential": lambda g, n: g.exponential(1.0, size=n),
        "random": lambda g, n: g.random(n),
        "standard_normal": lambda g, n: g.standard_normal(n),
    }
    for name, draw in draws.items():
        for seed in range(3):
            for a, b in [(0, 5), (1, 1), (7, 1000), (12345, 678), (100_000, 3)]:
                one = draw(np.random.default_rng(seed), a + b)
                g = np.random.default_rng(seed)
                two = np.concatenate([draw(g, a), draw(g, b)])
                tail = np.random.default_rng(seed)
                draw(tail, a + b)
                g2 = np.random.default_rng(seed)
                draw(g2, a)
                draw(g2, b)
                assert same(one, two), (name, seed, a, b)
                # and the generator is left in the same state
                assert tail.bit_generator.state == g2.bit_generator.state, (name, seed, a, b)
    print("stream: size a then b == size a + b for zipf, exponential, random, "
          "standard_normal")


CASES = [
    dict(n_rows=1, n_features=2**20),
    dict(n_rows=3000, n_features=2**20),
    dict(n_rows=2000, n_features=1000, nnz_per_row=30, seed=1),    # many re-draw rounds
    dict(n_rows=1500, n_features=50, nnz_per_row=3, zipf_a=1.05, seed=2),
    dict(n_rows=1000, n_features=2**16, nnz_per_row=1, zipf_a=2.0, noise=0.2, seed=3),
    dict(n_rows=500, n_features=7, nnz_per_row=10, seed=4),        # rows of every id
]


def check_arrays():
    for params in CASES:
        Xr, yr = text_like_reference(**params)
        n = params["n_rows"]
        for block in sorted({1, 7, 256, max(n - 1, 1), n, n + 5, _synth.BLOCK}):
            if block == 1 and n > 1500:
                continue  # a Python loop per row: slow, and 7 covers small blocks
            X, y = _synth.text_like(**params, block=block)
            for field in ("data", "indices", "indptr"):
                assert same(getattr(X, field), getattr(Xr, field)), (params, block, field)
            assert X.shape == Xr.shape and same(y, yr), (params, block)
        print(f"arrays: {params} ({Xr.nnz} nonzeros) identical for every block size")


def md5(path):
    h = hashlib.md5()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            h.update(chunk)
    return h.hexdigest()


def check_files(tmp):
    n, n_test = 2500, 700
    Xr, yr = text_like_reference(n_rows=n + n_test, n_features=2**20)
    cwkit.dump_svmlight(Xr[:n], yr[:n], tmp / "ref.svm")
    cwkit.dump_svmlight(Xr[n:], yr[n:], tmp / "ref.t.svm")
    cwkit.dump_svmlight(Xr, yr, tmp / "ref-all.svm")
    train, test = _synth.write(tmp / "new.svm", test=tmp / "new.t.svm", n_test=n_test,
                               n_rows=n, n_features=2**20)
    X, y = _synth.text_like(n_rows=n + n_test, n_features=2**20)
    _synth.dump(X, y, tmp / "blocks.svm", 0, n + n_test, block=333)
    assert md5(train) == md5(tmp / "ref.svm") and md5(test) == md5(tmp / "ref.t.svm")
    assert md5(tmp / "blocks.svm") == md5(tmp / "ref-all.svm")
    single = _synth.write(tmp / "one.svm", n_rows=n + n_test, n_features=2**20)
    assert md5(single) == md5(tmp / "ref-all.svm")
    print("files: write() train/test pair and single file byte-identical to dump_svmlight "
          "of the reference")


def check_against(folder, rows, test_rows, features, tmp):
    name = f"dask-synth-{rows}x{features}"
    new = _synth.write(tmp / f"{name}.svm", test=tmp / f"{name}.t.svm", n_test=test_rows,
                       n_rows=rows, n_features=features)
    for path in new:
        old = Path(folder) / path.name
        a, b = md5(path), md5(old)
        print(f"{path.name}: new {a}, {old} {b}: {'same' if a == b else 'DIFFERENT'}")
        assert a == b


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", help="folder with cached dask-synth-* files to compare")
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--test-rows", type=int, default=40_000)
    ap.add_argument("--features", type=int, default=2**20)
    args = ap.parse_args(argv)
    check_stream()
    check_arrays()
    with tempfile.TemporaryDirectory() as tmp:
        check_files(Path(tmp))
    if args.against:
        with tempfile.TemporaryDirectory(dir=_synth.DATA.parent) as tmp:
            check_against(args.against, args.rows, args.test_rows, args.features, Path(tmp))
    print("all checks passed")


if __name__ == "__main__":
    main()
