"""cwkit.sources: the chunks an evaluation reads, and the rows `cwkit predict` reads."""
import numpy as np
import pytest
import scipy.sparse as sp

import cwkit
from cwkit import datasets, sources


def collect(source):
    chunks = list(source.chunks())
    X = sp.vstack([c[0] for c in chunks]) if sp.issparse(chunks[0][0]) \
        else np.vstack([c[0] for c in chunks])
    return X, np.concatenate([c[1] for c in chunks]), np.concatenate([c[2] for c in chunks])


def test_array_source():
    X, y = datasets.make_twonorm(100, random_state=0)
    src = sources.ArraySource(X, y, "t", batch_size=30)
    assert [c[0].shape[0] for c in src.chunks()] == [30, 30, 30, 10]
    Xc, yc, index = collect(src)
    assert np.array_equal(Xc, X) and np.array_equal(yc, y)
    assert np.array_equal(index, np.arange(100)) and src.count() == 100
    with pytest.raises(ValueError, match="X has 100 rows but y has 99"):
        sources.ArraySource(X, y[:-1], "bad")


def test_svmlight_source_scans_only_what_is_not_given():
    path = datasets.shipped_data_path()
    src = sources.SvmlightSource(path, batch_size=100)
    assert src.needs_scan and src.n_examples is None
    assert src.count() == 683 and not src.needs_scan
    assert src.n_features == datasets.SHIPPED_N_FEATURES and src.classes.tolist() == [-1, 1]
    X, y = datasets.load_breast_cancer()
    Xc, yc, index = collect(src)
    assert (Xc != X).nnz == 0 and np.array_equal(yc, y)
    assert np.array_equal(index, np.arange(683))
    given = sources.SvmlightSource(path, n_features=9, zero_based=False, classes=[-1, 1])
    assert not given.needs_scan and given.n_examples is None
    assert collect(given)[0].shape == (683, 9) and given.n_examples == 683  # counted


def test_filtered_source():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = rng.integers(0, 3, 50)
    base = sources.ArraySource(X, y, "three", batch_size=16)
    task = sources.FilteredSource(base, (0,), (2,), "0-vs-2")
    assert task.count() == np.count_nonzero(y != 1)
    Xc, yc, index = collect(task)
    keep = y != 1
    assert np.array_equal(Xc, X[keep]) and np.array_equal(yc, np.where(y[keep] == 0, 1, -1))
    assert np.array_equal(index, np.arange(keep.sum()))


def test_synthetic():
    make = sources.synthetic("crammer", seed=3, n_samples=40, test_size=20, batch_size=16)
    assert make.name == "synthetic:crammer"
    (a, a_test), (b, _), (c, _) = make(0), make(0), make(1)
    assert np.array_equal(a.X, b.X) and not np.array_equal(a.X, c.X)
    assert a.X.shape == (40, 20) and a_test.X.shape == (20, 20)
    assert a.name == "synthetic:crammer" and a_test.name == "synthetic:crammer:test"
    X, y = datasets.make_crammer(40, random_state=np.random.default_rng([3, 0, 0]))
    assert np.array_equal(a.X, X) and np.array_equal(a.y, y)
    twonorm, none = sources.synthetic("twonorm", test_size=0)(0)
    assert twonorm.n_examples == sources.TWONORM_TRAIN_SIZE and none is None
    drift, none = sources.synthetic("drift", n_per_phase=10, n_features=100)(0)
    assert drift.X.shape == (40, 100) and none is None
    with pytest.raises(ValueError, match="kind must be one of"):
        sources.synthetic("spiral")


def test_rows_for_model(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("1 0:1 4:2\n-1 2:3\n")  # zero-based: index 0 occurs
    narrow = list(sources.rows_for_model(path, 3, batch_size=1))
    assert [X.shape for X in narrow] == [(1, 3), (1, 3)]
    assert narrow[0].toarray().tolist() == [[1, 0, 0]]  # feature 4 is beyond the model
    wide = next(sources.rows_for_model(path, 8))
    assert wide.shape == (2, 8) and wide.toarray()[0].tolist() == [1, 0, 0, 0, 2, 0, 0, 0]
    other = tmp_path / "o.svm"
    other.write_text("1 1:1 4:2\n-1 2:3\n")  # no index 0: one-based
    one_based = next(sources.rows_for_model(other, 4))
    assert one_based.toarray().tolist() == [[1, 0, 0, 2], [0, 3, 0, 0]]
    X, _ = cwkit.load_svmlight(path, n_features=8)
    assert (wide != X).nnz == 0
