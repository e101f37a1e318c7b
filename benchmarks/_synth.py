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
"""
import argparse
import os
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench_data"


def text_like(n_rows=200_000, n_features=2**20, nnz_per_row=100, zipf_a=1.2, noise=0.05,
              seed=0):
    """Generate a text-like binary classification set.

    Parameters
    ----------
    n_rows, n_features : int
        Shape of X.
    nnz_per_row : int
        Target mean number of distinct features per row; ids are drawn from
        a Zipf law of exponent ``zipf_a`` (truncated to ``n_features``) and
        repeats within a row are merged, so more are drawn than kept.
    noise : float
        Fraction of labels flipped after labelling by the hyperplane.
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    X : scipy.sparse.csr_matrix of float64, shape (n_rows, n_features)
        Rows have unit L2 norm up to the 6-digit rounding of the values.
    y : ndarray of float64 in {-1, +1}
    """
    rng = np.random.default_rng(seed)
    # Zipf ranks mapped to ids by a fixed random permutation, as hashed
    # vocabularies are; enough draws per row that about nnz_per_row
    # distinct ids remain once repeats are merged.
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
    values = _round6(values / norms)
    X = sp.csr_matrix((values, col.astype(np.int32), indptr), shape=(n_rows, n_features))
    support = rng.random(n_features) < 0.1
    w = np.where(support, rng.standard_normal(n_features), 0.0)
    score = X @ w
    y = np.where(score > np.median(score), 1.0, -1.0)
    flip = rng.random(n_rows) < noise
    y[flip] = -y[flip]
    return X, y


def _round6(v):
    """Round positive values to 6 significant digits: the double nearest to
    the 6-digit decimal m * 10**-k (m and 10**k exact, one rounded division)."""
    k = 5 - np.floor(np.log10(v)).astype(np.int64)
    m = np.rint(v * 10.0**k)
    return np.where(k >= 0, m / 10.0 ** np.maximum(k, 0), m * 10.0 ** np.maximum(-k, 0))


def write(path=None, **params):
    """Write ``text_like(**params)`` to ``path`` (cached) and return the path."""
    n_rows = params.get("n_rows", 200_000)
    n_features = params.get("n_features", 2**20)
    path = Path(path) if path else DATA / f"synth-{n_rows}x{n_features}.svm"
    if not path.exists():
        sys.path.insert(0, str(ROOT))
        import cwkit

        path.parent.mkdir(parents=True, exist_ok=True)
        X, y = text_like(**params)
        tmp = path.with_suffix(path.suffix + ".tmp")
        cwkit.dump_svmlight(X, y, tmp)
        os.replace(tmp, path)
    return path


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
