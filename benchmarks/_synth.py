"""Seeded synthetic text-like data shared by the benchmarks.

``text_like()`` returns a CSR matrix and ±1 labels that look like a bag of
words: Zipf-distributed feature ids (made unique and sorted per row),
positive values, L2-normalised rows, labels from a sparse random hyperplane
with label noise.  ``python benchmarks/_synth.py [PATH]`` writes it in
svmlight format with ``cwkit.dump_svmlight`` (default
``bench_data/synth-<rows>x<features>.svm``, reused when it exists).

Values are rounded to 6 significant digits, as LIBSVM's tools (``%g``) and
the files in ``../shared/data`` write them; with the defaults the file is
about 338 MB (200,000 rows, 2**20 features, about 20M nonzeros).

X is built in blocks of rows and written block by block (``write(path,
test=..., n_test=...)`` cuts a train and a test file from one draw), so the
peak memory is about that of X, 12 bytes per nonzero: 2.9 GB for 2,050,000
rows.  ``check_synth.py`` checks that the result is bit for bit that of the
one-piece generator it replaced.
"""
import argparse
import os
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench_data"
BLOCK = 50_000


def text_like(n_rows=200_000, n_features=2**20, nnz_per_row=100, zipf_a=1.2, noise=0.05,
              seed=0, block=BLOCK):
    """Generate a text-like binary classification set.

    Parameters
    ----------
    n_rows, n_features : int
        Shape of X; ``n_features < 2**31``.
    nnz_per_row : int
        Target mean number of distinct features per row; ids are drawn from
        a Zipf law of exponent ``zipf_a`` (truncated to ``n_features``) and
        repeats within a row are merged, so more are drawn than kept.
    noise : float
        Fraction of labels flipped after labelling by the hyperplane.
    seed : int
        Seed of ``numpy.random.default_rng``.
    block : int
        Rows built at a time.  The result does not depend on it: the random
        draws are made in the same order as in one piece, and every row is
        computed by the same operations.

    Returns
    -------
    X : scipy.sparse.csr_matrix of float64, shape (n_rows, n_features)
        Rows have unit L2 norm up to the 6-digit rounding of the values.
    y : ndarray of float64 in {-1, +1}

    Notes
    -----
    Peak memory is about that of X (12 bytes per nonzero) or of the Zipf
    ranks (4 bytes per draw, about 2 draws per nonzero), whichever is
    larger, plus one block's temporaries.
    """
    if not 0 < n_features < 2**31:
        raise ValueError(f"n_features must be in [1, 2**31), got {n_features}")
    rng = np.random.default_rng(seed)
    # Zipf ranks mapped to ids by a fixed random permutation, as hashed
    # vocabularies are; enough draws per row that about nnz_per_row
    # distinct ids remain once repeats are merged.
    rank_to_id = rng.permutation(n_features)
    draws = int(nnz_per_row * 1.95)
    starts = range(0, n_rows, block)
    ends = [min(start + block, n_rows) for start in starts]
    ranks = [_ranks(rng.zipf(zipf_a, size=(end - start) * draws), n_features)
             for start, end in zip(starts, ends)]
    # ranks > n_features (stored as 0) are drawn again, in index order, until none is left
    bad = [np.flatnonzero(r == 0) for r in ranks]
    while any(len(b) for b in bad):
        for i, b in enumerate(bad):
            redrawn = rng.zipf(zipf_a, size=len(b))
            keep = redrawn <= n_features
            ranks[i][b[keep]] = redrawn[keep]
            bad[i] = b[~keep]
    # per block: ids sorted and made unique per row (the ranks are freed as they are used)
    indptr = np.zeros(n_rows + 1, np.int64)
    cols = []
    for i, (start, end) in enumerate(zip(starts, ends)):
        rows = np.repeat(np.arange(end - start, dtype=np.int64), draws)
        keys = np.sort(rows * n_features + rank_to_id[ranks[i] - 1])
        ranks[i] = rows = None
        keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
        row, col = np.divmod(keys, n_features)
        indptr[start + 1:end + 1] = np.bincount(row, minlength=end - start)
        cols.append(col.astype(np.int32))
    np.cumsum(indptr, out=indptr)
    indices = np.concatenate(cols)
    del cols
    # values, row-major, L2-normalised per row
    data = np.empty(int(indptr[-1]))
    for start, end in zip(starts, ends):
        a, b = indptr[start], indptr[end]
        ptr = indptr[start:end + 1] - a
        counts = np.diff(ptr)
        values = rng.exponential(1.0, size=b - a) + 0.1
        sq = np.add.reduceat(values**2, ptr[:-1][counts > 0]) if b > a else values
        norms = np.repeat(np.sqrt(sq), counts[counts > 0])
        data[a:b] = _round6(values / norms)
    X = sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_features))
    return X, _labels(rng, X, noise)


def _labels(rng, X, noise):
    """±1 labels of X's rows by a sparse random hyperplane (split at the
    median score), a fraction ``noise`` of them flipped."""
    support = rng.random(X.shape[1]) < 0.1
    w = np.where(support, rng.standard_normal(X.shape[1]), 0.0)
    score = X @ w
    y = np.where(score > np.median(score), 1.0, -1.0)
    flip = rng.random(X.shape[0]) < noise
    y[flip] = -y[flip]
    return y


def _ranks(draws, n_features):
    """Zipf draws as int32, those above ``n_features`` (to draw again) as 0."""
    return np.where(draws <= n_features, draws, 0).astype(np.int32)


def _round6(v):
    """Round positive values to 6 significant digits: the double nearest to
    the 6-digit decimal m * 10**-k (m and 10**k exact, one rounded division)."""
    k = 5 - np.floor(np.log10(v)).astype(np.int64)
    m = np.rint(v * 10.0**k)
    return np.where(k >= 0, m / 10.0 ** np.maximum(k, 0), m * 10.0 ** np.maximum(-k, 0))


def write(path=None, test=None, n_test=0, **params):
    """Write ``text_like(**params)`` to ``path`` (cached) and return the path.

    With ``test``, the draw has ``n_rows + n_test`` rows: the first
    ``n_rows`` go to ``path``, the last ``n_test`` to ``test``, and the
    pair ``(path, test)`` is returned (cached when both exist).
    """
    n_rows = params.pop("n_rows", 200_000)
    n_features = params.get("n_features", 2**20)
    path = Path(path) if path else DATA / f"synth-{n_rows}x{n_features}.svm"
    files = [path] if test is None else [path, Path(test)]
    if not all(f.exists() for f in files):
        X, y = text_like(n_rows=n_rows + (n_test if test is not None else 0), **params)
        dump(X, y, path, 0, n_rows)
        if test is not None:
            dump(X, y, files[1], n_rows, n_rows + n_test)
    return path if test is None else tuple(files)


def dump(X, y, path, start, stop, block=BLOCK):
    """Write rows ``start:stop`` of ``X, y`` to ``path`` in svmlight format,
    ``block`` rows at a time (no copy of the whole range); the file appears
    complete or not at all."""
    sys.path.insert(0, str(ROOT))
    import cwkit

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "wb") as f:
        for a in range(start, stop, block):
            b = min(a + block, stop)
            cwkit.dump_svmlight(X[a:b], y[a:b], f)
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", help="output file (default: bench_data/...)")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=2**20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(write(args.path, n_rows=args.rows, n_features=args.features, seed=args.seed))


if __name__ == "__main__":
    main()
