"""The papers' data generators, label noise, binary tasks and the shipped data set."""
import numpy as np
import pytest
import scipy.sparse as sp

from cwkit import datasets


def test_crammer_geometry():
    X, y = datasets.make_crammer(40000, random_state=1)
    assert X.shape == (40000, 20)
    e_long = np.array([1.0, 1.0]) / np.sqrt(2)
    e_short = np.array([-1.0, 1.0]) / np.sqrt(2)
    z_long, z_short = X[:, :2] @ e_long, X[:, :2] @ e_short
    # label = sign of the short-axis coordinate: separable by a line along the long axis
    assert np.array_equal(y, np.where(z_short >= 0, 1, -1))
    assert np.std(z_long) == pytest.approx(10.0, rel=0.02)
    assert np.std(z_short) == pytest.approx(1.0, rel=0.02)
    assert abs(np.corrcoef(z_long, z_short)[0, 1]) < 0.02
    # noise coordinates: N(0, 2) with 2 the variance
    assert np.var(X[:, 2:], axis=0) == pytest.approx(np.full(18, 2.0), rel=0.05)
    assert np.abs(X[:, 2:].mean(axis=0)).max() < 0.05


def test_crammer_options_and_determinism():
    X, _ = datasets.make_crammer(20000, s_long=3, s_short=0.5, n_features=5, random_state=2)
    assert X.shape == (20000, 5)
    assert np.std(X[:, :2] @ np.array([1, 1]) / np.sqrt(2)) == pytest.approx(3, rel=0.03)
    assert np.std(X[:, :2] @ np.array([-1, 1]) / np.sqrt(2)) == pytest.approx(0.5, rel=0.03)
    a, b = datasets.make_crammer(50, random_state=7), datasets.make_crammer(50, random_state=7)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    with pytest.raises(ValueError, match="s_long must be a finite number > 0"):
        datasets.make_crammer(10, s_long=0)
    with pytest.raises(ValueError, match="n_samples must be an integer >= 1"):
        datasets.make_crammer(0)


def test_twonorm_distribution():
    X, y = datasets.make_twonorm(40000, random_state=3)
    a = 2 / np.sqrt(20)
    assert abs(np.mean(y == 1) - 0.5) < 0.01
    for label in (1, -1):
        Z = X[y == label]
        assert np.abs(Z.mean(axis=0) - label * a).max() < 0.05
        assert np.abs(np.cov(Z.T) - np.eye(20)).max() < 0.06
    # the Bayes rule sign(sum x) errs with probability Phi(-2) = 2.28%
    assert np.mean(np.sign(X.sum(axis=1)) != y) == pytest.approx(0.02275, abs=0.004)


def test_drift_schedule_matches_the_paper():
    p = datasets.drift_probabilities(1000)
    assert p.shape == (4000, 4)
    assert np.allclose(p.sum(axis=1), 1.0)
    # [LMC09] Sect. 4.1, phase by phase (P1, P2, N1, N2) at start and end
    expected = [((0.7, 0, 0.3, 0), (0.5, 0, 0.5, 0)), ((0.5, 0, 0.5, 0), (0.3, 0.2, 0.5, 0)),
                ((0, 0.5, 0.2, 0.3), (0, 0.5, 0, 0.5)), ((0, 0.5, 0, 0.5), (0, 0.3, 0, 0.7))]
    for k, (start, end) in enumerate(expected):
        assert p[1000 * k] == pytest.approx(start, abs=1e-3)
        assert p[1000 * k + 999] == pytest.approx(end, abs=1e-3)


def test_drift_stream():
    X, y, cls = datasets.make_drift(2000, random_state=4, return_classes=True)
    assert sp.issparse(X) and X.shape == (8000, 1000)
    assert set(np.unique(X.data).tolist()) == {1.0}
    assert np.array_equal(y, np.where(cls <= 1, 1, -1))
    probs = datasets.drift_probabilities(2000)
    for k in range(4):
        block = slice(2000 * k, 2000 * (k + 1))
        freq = np.bincount(cls[block], minlength=4) / 2000
        assert np.abs(freq - probs[block].mean(axis=0)).max() < 0.04
    # topics: P1 = A1 A2, P2 = B1 C, N1 = B1 B2, N2 = A1 D (halves of 10 words)
    dense = X.toarray()
    halves = {n: dense[:, 10 * i:10 * (i + 1)].mean(axis=1) for i, n in enumerate("ABCDEF")}
    words = {"A1": "A", "A2": "B", "B1": "C", "B2": "D", "C": "E", "D": "F"}
    topic = {0: ("A1", "A2"), 1: ("B1", "C"), 2: ("B1", "B2"), 3: ("A1", "D")}
    for c, own in topic.items():
        for w, h in words.items():
            rate = halves[h][cls == c].mean()
            assert rate == pytest.approx(0.3 if w in own else 0.01, abs=0.02), (c, w)
    assert dense[:, 60:].mean() == pytest.approx(0.01, abs=0.002)


def test_drift_bad_options():
    with pytest.raises(ValueError, match="topic_size must be even"):
        datasets.make_drift(10, topic_size=3)
    with pytest.raises(ValueError, match="n_features must be an integer >= 60"):
        datasets.make_drift(10, n_features=50)
    with pytest.raises(ValueError, match=r"p_topic must be in \[0, 1\]"):
        datasets.make_drift(10, p_topic=1.5)


def _splitmix64(x):
    """Plain-integer SplitMix64 (Steele, Lea, Flood 2014)."""
    mask = 2**64 - 1
    z = (x + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


@pytest.mark.parametrize("seed,stream", [(0, 0), (12345, 1), (2**40 + 3, 3)])
def test_row_uniform_is_splitmix64(seed, stream):
    index = [0, 1, 2, 999, 2**33 + 5]
    key = _splitmix64((_splitmix64(seed) + stream) % 2**64)
    expected = [(_splitmix64((i + key) % 2**64) >> 11) / 2**53 for i in index]
    assert datasets.row_uniform(seed, index, stream).tolist() == expected


def test_row_uniform_is_uniform():
    u = datasets.row_uniform(5, np.arange(200000))
    assert u.min() >= 0 and u.max() < 1
    counts = np.histogram(u, bins=10, range=(0, 1))[0]
    assert np.abs(counts / 20000 - 1).max() < 0.03


def test_flip_labels_binary():
    y = np.where(np.arange(100000) % 3 == 0, 1, -1)
    noisy, flipped = datasets.flip_labels(y, 0.1, seed=3)
    assert flipped.mean() == pytest.approx(0.1, abs=0.005)
    assert np.array_equal(noisy[flipped], -y[flipped])
    assert np.array_equal(noisy[~flipped], y[~flipped])
    # a pure function of (seed, index): chunking does not matter
    parts = [datasets.flip_labels(y[s:s + 777], 0.1, classes=[-1, 1], seed=3,
                                  index=np.arange(s, min(s + 777, y.size)))[0]
             for s in range(0, y.size, 777)]
    assert np.array_equal(np.concatenate(parts), noisy)
    assert not np.array_equal(datasets.flip_labels(y, 0.1, seed=4)[0], noisy)


def test_flip_labels_multiclass_uniform_over_other_labels():
    y = np.full(120000, 2)
    noisy, flipped = datasets.flip_labels(y, 0.5, classes=[0, 1, 2, 3], seed=1)
    assert flipped.mean() == pytest.approx(0.5, abs=0.01)
    assert not np.any(noisy[flipped] == 2)
    freq = np.bincount(noisy[flipped], minlength=4)[[0, 1, 3]] / flipped.sum()
    assert np.abs(freq - 1 / 3).max() < 0.01
    assert np.array_equal(datasets.flip_labels(y, 0.0, seed=1)[0], y)
    with pytest.raises(ValueError, match="noise rate must be in"):
        datasets.flip_labels(y, 1.5)
    with pytest.raises(ValueError, match="not in classes"):
        datasets.flip_labels(y, 0.1, classes=[0, 1])


def test_noisy_targets_are_gaussian_and_a_function_of_seed_and_row():
    y = np.linspace(-1.0, 1.0, 100000)
    noisy = datasets.noisy_targets(y, 0.5, seed=3)
    noise = noisy - y
    assert noise.mean() == pytest.approx(0.0, abs=0.01)
    assert noise.std() == pytest.approx(0.5, rel=0.01)
    assert np.mean(np.abs(noise) < 0.5) == pytest.approx(0.6827, abs=0.01)  # one sd
    # a chunk's noise is the whole stream's rows' (Box-Muller of streams 5 and 6)
    u, v = (datasets.row_uniform(3, np.arange(7, 19), stream=s) for s in (5, 6))
    part = datasets.noisy_targets(y[7:19], 0.5, seed=3, index=np.arange(7, 19))
    np.testing.assert_array_equal(part, noisy[7:19])
    np.testing.assert_allclose(part - y[7:19],
                               0.5 * np.sqrt(-2 * np.log(1 - u)) * np.cos(2 * np.pi * v),
                               rtol=1e-12)
    assert not np.array_equal(datasets.noisy_targets(y, 0.5, seed=4), noisy)
    assert np.array_equal(datasets.noisy_targets(y, 0.0, seed=3), y)
    for bad in (-1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="finite number >= 0"):
            datasets.noisy_targets(y, bad)


def test_binary_tasks():
    pairs = datasets.binary_tasks([3.0, 1.0, 2.0, 1.0], "all-pairs")
    assert pairs == [("1-vs-2", (1.0,), (2.0,)), ("1-vs-3", (1.0,), (3.0,)),
                     ("2-vs-3", (2.0,), (3.0,))]
    assert len(datasets.binary_tasks(range(10), "all-pairs")) == 45
    ova = datasets.binary_tasks([0, 1, 2], "one-vs-all")
    assert ova[1] == ("1-vs-all", (1,), (0, 2))
    mask, yb = datasets.task_rows(np.array([0, 1, 2, 1, 0]), (1,), (0,))
    assert mask.tolist() == [True, True, False, True, True]
    assert yb.tolist() == [-1, 1, 1, -1]
    with pytest.raises(ValueError, match="mode must be"):
        datasets.binary_tasks([0, 1], "pairs")
    with pytest.raises(ValueError, match="at least two classes"):
        datasets.binary_tasks([1, 1], "all-pairs")


def _parse_svmlight_by_hand(path):
    rows, labels = [], []
    for line in path.read_text().splitlines():
        label, *pairs = line.split()
        labels.append(float(label))
        rows.append({int(k): float(v) for k, v in (p.split(":") for p in pairs)})
    X = np.zeros((len(rows), 9))
    for i, r in enumerate(rows):
        for k, v in r.items():
            X[i, k - 1] = v
    return X, np.array(labels)


def test_shipped_data_set():
    path = datasets.shipped_data_path()
    assert path.is_file() and 10_000 < path.stat().st_size < 100_000
    X_ref, y_ref = _parse_svmlight_by_hand(path)
    assert X_ref.shape == (683, 9)
    assert np.bincount((y_ref > 0).astype(int)).tolist() == [444, 239]
    X, y = datasets.load_breast_cancer()
    assert X.shape == (683, 9)
    assert np.array_equal(np.asarray(y), y_ref)
    assert np.allclose(X.toarray() if sp.issparse(X) else X, X_ref)
    assert datasets.SHIPPED_N_FEATURES == X_ref.shape[1] == 9
    assert datasets.SHIPPED_FILE == path.name
