"""Model files: exact round trip, no code execution, clear errors for bad files."""
import json
import os
import sys
import zipfile

import numpy as np
import pytest
from conftest import make_binary

import cwkit


def _fitted_attrs(est):
    out = {}
    for name in ("coef_", "intercept_", "coef_var_", "intercept_var_", "covariance_",
                 "classes_", "n_features_in_", "t_", "mistakes_", "n_updates_"):
        try:
            out[name] = getattr(est, name)
        except AttributeError:
            pass
    return out


@pytest.mark.parametrize("labels", ["int", "str"])
def test_round_trip_is_exact_and_training_continues(any_case, tmp_path, labels):
    name, params = any_case
    X, y = make_binary(np.random.default_rng(1), n=80, d=6)
    if labels == "str":
        y = np.where(y > 0, "pos", "neg")
    est = cwkit.make(name, shuffle=True, random_state=5, **params).fit(X, y)
    path = tmp_path / "model.cwk"
    cwkit.save(est, path)
    back = cwkit.load(path)
    assert type(back) is type(est) and back.get_params() == est.get_params()
    a, b = _fitted_attrs(est), _fitted_attrs(back)
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    np.testing.assert_array_equal(est.decision_function(X), back.decision_function(X))
    est.partial_fit(X, y)
    back.partial_fit(X, y)
    np.testing.assert_array_equal(est.coef_, back.coef_)


def test_a_file_saved_with_shuffle_true_keeps_it(tmp_path):
    """Files of versions whose default was ``shuffle=True`` store it in their params:
    loading keeps that setting (and its seed); only new estimators default to False."""
    X, y = make_binary(np.random.default_rng(2), n=50, d=4)
    default = cwkit.make("arow").fit(X, y)
    path, old = tmp_path / "model.cwk", tmp_path / "old.cwk"
    cwkit.save(default, path)
    assert cwkit.load(path).shuffle is False
    with zipfile.ZipFile(path) as z:
        meta = json.loads(np.lib.format.read_array(z.open("__meta__.npy")).tobytes())
    assert meta["params"]["shuffle"] is False
    meta["params"].update(shuffle=True, random_state=5)
    arrays = dict(np.load(path))
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    with open(old, "wb") as f:
        np.savez(f, **arrays)
    back = cwkit.load(old)
    assert (back.shuffle, back.random_state) == (True, 5)
    np.testing.assert_array_equal(back.coef_, default.coef_)
    seeded = cwkit.make("arow", shuffle=True, random_state=5, n_passes=2)
    np.testing.assert_array_equal(back.set_params(n_passes=2).fit(X, y).coef_,
                                  seeded.fit(X, y).coef_)


@pytest.mark.parametrize("params", [{}, {"window": "sliding"}, {"multiclass": "topk", "k": 2},
                                    {"multiclass": "ovr"}], ids=["block", "sliding", "topk", "ovr"])
def test_file_with_the_former_bpa_state_names_loads(tmp_path, params):
    """A file written when the pending-row count of mini-batch PA was the array ``aux``
    loads and predicts (and continues) exactly as the model it was saved from."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(23, 5))
    y = rng.integers(0, 3 if params else 2, size=23)
    est = cwkit.make("bpa2", batch_size=4, shuffle=False, **params).fit(X, y)

    def former(arrays):
        renamed = {k.replace("n_pend", "aux"): v for k, v in arrays.items()}
        assert sum(k.endswith("/aux") for k in renamed) == (3 if "ovr" in params.values()
                                                            else 1)
        assert any(v.ravel()[0] > 0 for k, v in renamed.items() if k.endswith("/aux"))
        return renamed
    _check_former_file(est, former, X, y, tmp_path)


def _check_former_file(est, former, X, y, tmp_path):
    """The file of `est` with its arrays as `former` turns them into a former layout
    loads, decides, holds the state of `est` and continues as `est`, bit for bit."""
    path, old = tmp_path / "model.cwk", tmp_path / "old.cwk"
    cwkit.save(est, path)
    with np.load(path) as z:
        arrays = former({k: z[k] for k in z.files})
    with open(old, "wb") as f:
        np.savez_compressed(f, **arrays)
    back = cwkit.load(old)
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
    for key, arr in est._model.state.items():
        np.testing.assert_array_equal(back._model.state[key], arr, err_msg=key)
    np.testing.assert_array_equal(back.partial_fit(X[:7], y[:7]).coef_,
                                  est.partial_fit(X[:7], y[:7]).coef_)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_file_with_the_former_adagrad_sums_layout_loads(tmp_path, n_classes):
    """An averaged AdaGrad model written while its sums ``acc`` were two flat blocks
    (the sums, then the rounds they reach; today the pairs interleaved, (D, 2) or
    (D, 2 K)) loads, decides and continues exactly as the model it was saved from."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(30, 5))
    y = rng.integers(0, n_classes, size=30)
    est = cwkit.make("adagrad", average=True, lam=0.05, shuffle=False).fit(X, y)

    def former(arrays):
        blocks = {k: (v.reshape(-1, 2).T.ravel() if k.endswith("acc") else v)
                  for k, v in arrays.items()}
        assert blocks["state/acc"].shape == (12 if n_classes == 2 else 36,)
        return blocks
    _check_former_file(est, former, X, y, tmp_path)


def test_load_never_unpickles(tmp_path, monkeypatch):
    X, y = make_binary(np.random.default_rng(1), n=20, d=3)
    path = tmp_path / "m.cwk"
    cwkit.save(cwkit.make("arow").fit(X, y), path)
    calls = []
    real_load = np.load

    def spy(*args, **kwargs):
        calls.append(kwargs.get("allow_pickle"))
        return real_load(*args, **kwargs)

    monkeypatch.setattr(np, "load", spy)
    cwkit.load(path)
    assert calls == [False]


def test_object_array_in_file_is_refused(tmp_path):
    path = tmp_path / "evil.cwk"
    meta = {"format": "cwkit-model", "version": 1, "class": "AROW", "params": {}}
    with open(path, "wb") as f:
        np.savez(f, __meta__=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                 classes_=np.array([object(), 1], dtype=object))
    with pytest.raises(cwkit.ModelFileError, match="evil.cwk"):
        cwkit.load(path)


def test_bad_files_raise_clear_errors(tmp_path):
    X, y = make_binary(np.random.default_rng(1), n=20, d=3)
    good = tmp_path / "good.cwk"
    cwkit.save(cwkit.make("cw", covariance="diag").fit(X, y), good)
    raw = good.read_bytes()

    truncated = tmp_path / "trunc.cwk"
    truncated.write_bytes(raw[: len(raw) // 2])
    text = tmp_path / "text.cwk"
    text.write_text("1 1:0.5\n")
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, a=np.arange(3))
    wrong_version = tmp_path / "v99.cwk"
    with zipfile.ZipFile(good) as z:
        meta = json.loads(np.lib.format.read_array(z.open("__meta__.npy")).tobytes())
    meta["version"] = 99
    arrays = dict(np.load(good))
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    with open(wrong_version, "wb") as f:
        np.savez(f, **arrays)
    missing = tmp_path / "missing.cwk"
    arrays = dict(np.load(good))
    del arrays["state/mu_sigma"]
    with open(missing, "wb") as f:
        np.savez(f, **arrays)

    for path, pattern in [(truncated, "not a cwkit model file"),
                          (text, "not a cwkit model file"),
                          (foreign, "no metadata"),
                          (wrong_version, "version 99 is not supported"),
                          (missing, "damaged"),
                          (tmp_path / "absent.cwk", "cannot read the model file")]:
        with pytest.raises(cwkit.ModelFileError, match=pattern) as info:
            cwkit.load(path)
        assert str(path) in str(info.value)


def test_save_is_atomic_and_needs_a_fitted_model(tmp_path):
    path = tmp_path / "m.cwk"
    with pytest.raises(cwkit.NotFittedError):
        cwkit.save(cwkit.make("pa1"), path)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(OSError):
        cwkit.save(cwkit.make("pa1").fit([[0.0], [1.0]], [0, 1]), tmp_path / "no" / "m.cwk")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_save_respects_the_umask(tmp_path):
    """A model file gets the permissions open(path, "w") would give, not mkstemp's 0600."""
    est = cwkit.make("pa1").fit([[0.0], [1.0]], [0, 1])
    path = tmp_path / "m.cwk"
    old = os.umask(0o027)
    try:
        cwkit.save(est, path)
    finally:
        os.umask(old)
    assert (path.stat().st_mode & 0o777) == 0o640
    path.chmod(0o604)
    cwkit.save(est, path)
    assert (path.stat().st_mode & 0o777) == 0o604
