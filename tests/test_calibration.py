"""predict_proba: the slope fit, its window of progressive rounds, ranking, files."""
import json
import zipfile

import numpy as np
import pytest
from conftest import last_iterate, make_binary
from scipy.optimize import minimize_scalar
from scipy.special import expit, log_softmax

import cwkit
from cwkit.models import calibration
from cwkit.models.calibration import Calibration, fit_slope, fit_slopes, smoothed_targets

NAMES = [a["name"] for a in cwkit.algorithms()]


def make_multiclass(rng, n=90, d=5, K=4):
    centres = rng.normal(scale=1.5, size=(K, d))
    y = rng.integers(0, K, size=n)
    return centres[y] + rng.normal(size=(n, d)), y


def nll(a, S, codes, T=None):
    """The smoothed-target negative log-likelihood of softmax(a S), written out."""
    T = smoothed_targets(codes, S.shape[1]) if T is None else T
    return -(T * log_softmax(a * S, axis=1)).sum()


@pytest.mark.parametrize("K", [2, 3, 7])
@pytest.mark.parametrize("seed", range(4))
def test_slope_is_the_likelihood_optimum(K, seed):
    """fit_slope against scipy's bounded scalar minimiser of the written-out objective."""
    rng = np.random.default_rng(seed)
    n = 200
    codes = rng.integers(0, K, size=n)
    S = rng.normal(size=(n, K)) * rng.uniform(0.1, 30)
    S[np.arange(n), codes] += rng.uniform(0.2, 3) * np.abs(S).mean()
    a = fit_slope(S, smoothed_targets(codes, K))
    ref = minimize_scalar(nll, bounds=(0.0, 50 * a + 1.0), args=(S, codes), method="bounded",
                          options={"xatol": 1e-12 * a})
    assert nll(a, S, codes) <= ref.fun + 1e-9 * abs(ref.fun)
    np.testing.assert_allclose(a, ref.x, rtol=1e-5)


def test_binary_targets_are_platts():
    codes = np.array([1, 1, 1, 0, 1, 0])
    T = smoothed_targets(codes, 2)
    np.testing.assert_allclose(T[codes == 1, 1], (4 + 1) / (4 + 2))
    np.testing.assert_allclose(T[codes == 0, 1], 1 / (2 + 2))
    np.testing.assert_allclose(T.sum(axis=1), 1.0)


def test_slope_of_useless_or_empty_scores():
    """Scores against the labels: the smallest slope (still ordered as the scores);
    no rows or all-zero scores: the default slope."""
    S = np.column_stack([np.zeros(4), [2.0, -1.0, 3.0, -2.0]])
    a = fit_slope(S, smoothed_targets(np.array([0, 1, 0, 1]), 2))
    assert 0 < a <= calibration.MIN_SLOPE / 3.0
    assert fit_slope(np.zeros((0, 2)), np.zeros((0, 2))) == calibration.DEFAULT_SLOPE
    assert fit_slope(np.zeros((3, 2)), np.full((3, 2), 0.5)) == calibration.DEFAULT_SLOPE
    assert (Calibration(2).slopes() == calibration.DEFAULT_SLOPE).all()


@pytest.mark.parametrize("K", [2, 5])
def test_a_slope_per_predicted_side(K):
    """Two classes: a side's slope is the optimum over the rows predicted on that side
    (targets smoothed over the whole window), the shared one with fewer than MIN_ROWS
    rows; more classes: the shared slope for all."""
    rng = np.random.default_rng(K)
    n = 600
    codes = rng.integers(0, K, size=n)
    S = rng.normal(size=(n, K))
    S[np.arange(n), codes] += 1.0
    T = smoothed_targets(codes, K)
    shared = fit_slope(S, T)
    if K > 2:
        np.testing.assert_array_equal(fit_slopes(S, codes), shared)
        return
    S[:, 1] -= 0.6
    pred = S.argmax(axis=1)
    a = fit_slopes(S, codes)
    for c in range(2):
        m = pred == c
        assert m.sum() >= calibration.MIN_ROWS and a[c] != shared
        assert a[c] == fit_slope(S[m], T[m])
        assert nll(a[c], S[m], None, T[m]) <= nll(shared, S[m], None, T[m])
    S[:, 1] -= 2.5                      # class 1 is rarely the largest score
    pred = S.argmax(axis=1)
    assert 0 < (pred == 1).sum() < calibration.MIN_ROWS
    a = fit_slopes(S, codes)
    assert a[1] == fit_slope(S, T) and a[0] == fit_slope(S[pred == 0], T[pred == 0])


def test_window_keeps_the_last_rounds_in_order():
    cal = Calibration(3, window=5)
    rng = np.random.default_rng(0)
    S, codes = rng.normal(size=(13, 3)), rng.integers(0, 3, size=13)
    for lo, hi in [(0, 2), (2, 3), (3, 11), (11, 13)]:
        cal.add(S[lo:hi], codes[lo:hi])
        kept = min(hi, 5)
        got_S, got_c = cal.rounds()
        np.testing.assert_array_equal(got_S, S[hi - kept:hi])
        np.testing.assert_array_equal(got_c, codes[hi - kept:hi])
    assert cal.seen == 13
    np.testing.assert_array_equal(cal.slopes(), fit_slopes(S[8:], codes[8:]))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("K", [2, 4])
def test_probabilities_rank_as_the_scores(name, K):
    """Binary: P(classes_[1]) increases with decision_function; multi-class: every row's
    probabilities are ordered as its scores; the largest is predict's class."""
    rng = np.random.default_rng(4)
    X, y = make_binary(rng, n=120, d=5) if K == 2 else make_multiclass(rng, n=120)
    est = last_iterate(name).fit(X[:80], y[:80])
    P = est.predict_proba(X[80:])
    s = est.decision_function(X[80:])
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    assert (P >= 0).all() and (P <= 1).all()
    np.testing.assert_array_equal(est.classes_[P.argmax(axis=1)], est.predict(X[80:]))
    if K == 2:
        order = np.argsort(s, kind="stable")
        assert (np.diff(P[order, 1]) >= 0).all() and (np.diff(s[order]) >= 0).all()
        a = est._calibration.slopes()[(s > 0).astype(int)]
        np.testing.assert_allclose(P[:, 1], expit(a * s), rtol=1e-12)
    else:
        for p_row, s_row in zip(P, s):
            order = np.argsort(s_row, kind="stable")
            assert (np.diff(p_row[order]) >= 0).all()


@pytest.mark.parametrize("name", ["pa1", "cw", "arow", "adagrad", "l1-pa"])
@pytest.mark.parametrize("K", [2, 3])
def test_rounds_are_the_scores_before_each_update(name, K):
    """The window holds each row's decision_function just before the row was learnt."""
    rng = np.random.default_rng(9)
    X, y = make_binary(rng, n=40, d=4) if K == 2 else make_multiclass(rng, n=40, K=3)
    est = last_iterate(name).fit(X, y)
    one = last_iterate(name)
    expected = []
    for i in range(len(y)):
        expected.append(one.decision_function(X[i:i + 1])[0] if i else
                        np.zeros(K) if K > 2 else 0.0)
        one.partial_fit(X[i:i + 1], y[i:i + 1], classes=np.unique(y))
    S, codes = est._calibration.rounds()
    np.testing.assert_allclose(S, np.array(expected), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(codes, np.searchsorted(est.classes_, y))


def test_fit_resets_and_partial_fit_adds():
    rng = np.random.default_rng(1)
    X, y = make_binary(rng, n=200, d=5)
    est = last_iterate("pa1").fit(X[:100], y[:100])
    assert est._calibration.seen == 100
    est.partial_fit(X[100:150], y[100:150])
    assert est._calibration.seen == 150
    twin = last_iterate("pa1").partial_fit(X[:100], y[:100]).partial_fit(X[100:150], y[100:150])
    np.testing.assert_array_equal(est._calibration.rounds()[0], twin._calibration.rounds()[0])
    np.testing.assert_array_equal(est._calibration.slopes(), twin._calibration.slopes())
    est.fit(X[150:], y[150:])
    fresh = last_iterate("pa1").fit(X[150:], y[150:])
    assert est._calibration.seen == 50
    np.testing.assert_array_equal(est.predict_proba(X), fresh.predict_proba(X))


def test_passes_add_rounds():
    """Every pass of fit records its rounds (window permitting)."""
    X, y = make_binary(np.random.default_rng(2), n=60, d=4)
    est = last_iterate("arow", n_passes=3).fit(X, y)
    assert est._calibration.seen == 180


@pytest.mark.parametrize("K", [2, 3])
def test_save_load_keeps_the_rounds(tmp_path, K):
    rng = np.random.default_rng(3)
    X, y = make_binary(rng, n=90, d=4) if K == 2 else make_multiclass(rng, n=90, K=3)
    est = last_iterate("cw").fit(X, y)
    cwkit.save(est, tmp_path / "m.cwk")
    back = cwkit.load(tmp_path / "m.cwk")
    np.testing.assert_array_equal(back.predict_proba(X), est.predict_proba(X))
    est.partial_fit(X[:30], y[:30])
    back.partial_fit(X[:30], y[:30])
    np.testing.assert_array_equal(back.predict_proba(X), est.predict_proba(X))


def _rewrite(path, out, drop=(), replace=None):
    arrays = dict(np.load(path, allow_pickle=False))
    for key in drop:
        del arrays[key]
    arrays.update(replace or {})
    with open(out, "wb") as f:
        np.savez(f, **arrays)


def test_old_file_without_rounds_loads_with_the_default_slope(tmp_path):
    """A file written before the rounds were saved: the default slope until new rounds."""
    X, y = make_binary(np.random.default_rng(5), n=80, d=4)
    est = last_iterate("pa1").fit(X, y)
    cwkit.save(est, tmp_path / "new.cwk")
    _rewrite(tmp_path / "new.cwk", tmp_path / "old.cwk",
             drop=("calibration/scores", "calibration/labels"))
    old = cwkit.load(tmp_path / "old.cwk")
    np.testing.assert_array_equal(old.decision_function(X), est.decision_function(X))
    np.testing.assert_allclose(old.predict_proba(X)[:, 1],
                               expit(calibration.DEFAULT_SLOPE * old.decision_function(X)),
                               rtol=1e-12)
    old.partial_fit(X[:40], y[:40])
    assert old._calibration.seen == 40


@pytest.mark.parametrize("damage", ["nan", "label", "shape", "one"])
def test_damaged_rounds_are_a_clear_error(tmp_path, damage):
    X, y = make_binary(np.random.default_rng(6), n=30, d=3)
    cwkit.save(last_iterate("pa1").fit(X, y), tmp_path / "m.cwk")
    z = dict(np.load(tmp_path / "m.cwk", allow_pickle=False))
    S, L = z["calibration/scores"].copy(), z["calibration/labels"].copy()
    if damage == "nan":
        S[3] = np.nan
    elif damage == "label":
        L[0] = 2
    elif damage == "shape":
        S = S[:-1]
    _rewrite(tmp_path / "m.cwk", tmp_path / "bad.cwk",
             drop=("calibration/labels",) if damage == "one" else (),
             replace={"calibration/scores": S} if damage == "one" else
             {"calibration/scores": S, "calibration/labels": L})
    with pytest.raises(cwkit.ModelFileError, match="calibration rounds"):
        cwkit.load(tmp_path / "bad.cwk")


def test_file_meta_is_unchanged(tmp_path):
    """The rounds are arrays of their own: the metadata keeps its format and version."""
    X, y = make_binary(np.random.default_rng(8), n=30, d=3)
    cwkit.save(last_iterate("arow").fit(X, y), tmp_path / "m.cwk")
    with zipfile.ZipFile(tmp_path / "m.cwk") as z:
        meta = json.loads(np.lib.format.read_array(z.open("__meta__.npy")).tobytes())
        assert {"calibration/scores.npy", "calibration/labels.npy"} <= set(z.namelist())
    assert meta["version"] == 1
