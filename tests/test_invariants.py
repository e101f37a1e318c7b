"""Properties every registered binary rule must have, whatever its formula."""
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import last_iterate, make_binary

import cwkit


def _attrs(est):
    out = {"coef_": est.coef_, "intercept_": est.intercept_}
    for name in ("coef_var_", "intercept_var_", "covariance_"):
        try:
            out[name] = getattr(est, name)
        except AttributeError:
            pass
    return out


def _assert_same(a, b):
    ka, kb = _attrs(a), _attrs(b)
    assert ka.keys() == kb.keys()
    for k in ka:
        np.testing.assert_array_equal(ka[k], kb[k], err_msg=k)


@pytest.fixture
def data():
    X, y = make_binary(np.random.default_rng(0), n=200, d=12, sparse_frac=0.5)
    return X, y


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_dense_and_csr_identical(any_case, data, fit_intercept):
    name, params = any_case
    X, y = data
    kw = dict(shuffle=True, random_state=1, n_passes=2, fit_intercept=fit_intercept, **params)
    a = last_iterate(name, **kw).fit(X, y)
    b = last_iterate(name, **kw).fit(sp.csr_matrix(X), y)
    _assert_same(a, b)
    assert (a.mistakes_, a.n_updates_, a.t_) == (b.mistakes_, b.n_updates_, b.t_)
    np.testing.assert_array_equal(a.decision_function(X),
                                  b.decision_function(sp.csr_matrix(X)))


def test_other_sparse_formats_and_float32(any_case, data):
    name, params = any_case
    X, y = data
    a = last_iterate(name, shuffle=False, **params).fit(X, y)
    for Xo in (sp.csc_matrix(X), sp.coo_matrix(X), X.tolist()):
        b = last_iterate(name, shuffle=False, **params).fit(Xo, y)
        _assert_same(a, b)
    X32 = X.astype(np.float32)
    a = last_iterate(name, shuffle=False, **params).fit(X32, y)
    b = last_iterate(name, shuffle=False, **params).fit(X32.astype(np.float64), y)
    _assert_same(a, b)
    c = last_iterate(name, shuffle=False, **params).fit(sp.csr_matrix(X32), y)
    _assert_same(a, c)


def test_partial_fit_in_pieces_equals_one_pass(any_case, data):
    name, params = any_case
    X, y = data
    one = last_iterate(name, **params).partial_fit(X, y)
    parts = last_iterate(name, **params)
    mistakes = 0
    for lo, hi in [(0, 1), (1, 50), (50, 51), (51, 200)]:
        parts.partial_fit(X[lo:hi], y[lo:hi], classes=[-1, 1])
        mistakes += parts.last_mistakes_
    _assert_same(one, parts)
    assert mistakes == one.mistakes_
    assert parts.t_ == one.t_ == 200


def test_fit_is_deterministic_and_resets(any_case, data):
    name, params = any_case
    X, y = data
    a = last_iterate(name, shuffle=True, random_state=3, n_passes=3, **params).fit(X, y)
    b = last_iterate(name, shuffle=True, random_state=3, n_passes=3, **params)
    b.fit(X[:20], y[:20])
    b.fit(X, y)
    _assert_same(a, b)
    assert b.t_ == 600
    c = last_iterate(name, shuffle=True, random_state=4, n_passes=3, **params).fit(X, y)
    assert not np.array_equal(a.coef_, c.coef_) or name in ("sop",)


def test_shuffle_false_is_one_ordered_pass(any_case, data):
    name, params = any_case
    X, y = data
    a = last_iterate(name, shuffle=False, **params).fit(X, y)
    b = last_iterate(name, **params).partial_fit(X, y)
    _assert_same(a, b)


def test_inputs_not_mutated(any_case, data):
    name, params = any_case
    X, y = data
    Xs = sp.csr_matrix(X)
    copies = (X.copy(), y.copy(), Xs.data.copy(), Xs.indices.copy(), Xs.indptr.copy())
    est = last_iterate(name, **params).fit(X, y)
    est.partial_fit(Xs, y)
    est.decision_function(Xs)
    for before, after in zip(copies, (X, y, Xs.data, Xs.indices, Xs.indptr)):
        np.testing.assert_array_equal(before, after)


def test_zero_rows_make_no_update_and_no_nan(any_case):
    name, params = any_case
    X = np.zeros((30, 4))
    y = np.tile([1, -1], 15)
    est = last_iterate(name, fit_intercept=False, **params).partial_fit(X, y)
    if name not in ("sop", "adagrad"):
        assert est.n_updates_ == 0
    assert np.all(est.coef_ == 0)
    for v in _attrs(est).values():
        assert np.all(np.isfinite(v))
    with_icpt = last_iterate(name, **params).partial_fit(X, y)
    for v in _attrs(with_icpt).values():
        assert np.all(np.isfinite(v))


@pytest.mark.parametrize("case", [
    ("cw", {"covariance": "diag"}), ("cw-stdev", {"covariance": "diag"}),
    ("arow", {"covariance": "diag"}), ("arow", {"covariance": "diag", "diag_update": "direct"}),
    ("arow-h", {"covariance": "diag"}), ("cw", {"covariance": "full"}),
    ("arow", {"covariance": "full"}), ("cw-stdev", {"covariance": "full"})],
    ids=lambda c: c if isinstance(c, str) else None)
def test_variances_stay_positive_and_never_increase(case, data):
    name, params = case
    X, y = data
    est = last_iterate(name, **params)
    prev = None
    for t in range(0, 200, 10):
        est.partial_fit(X[t:t + 10], y[t:t + 10], classes=[-1, 1])
        if params.get("covariance") == "full":
            var = np.diag(est.covariance_)
            assert np.all(np.linalg.eigvalsh(est.covariance_) > 0)
        else:
            var = np.append(est.coef_var_, est.intercept_var_)
        assert np.all(var > 0)
        if prev is not None:
            assert np.all(var <= prev)
        prev = var


@pytest.mark.parametrize("name", ["cw", "cw-stdev", "arow", "arow-h"])
def test_many_rounds_drive_variance_toward_zero_without_nan(name):
    """10^5 rounds on the same feature shrink its variance; nothing becomes NaN or 0."""
    X = sp.csr_matrix(np.ones((100_000, 1)))
    y = np.where(np.arange(100_000) % 3 == 0, -1, 1)
    est = last_iterate(name, covariance="diag")
    if name == "cw-stdev":
        # The literal diagonal CW-Stdev collapses Sigma geometrically on contradictory labels
        # (the numpy reference reaches inf/NaN after ~600 rounds): a clear error, no NaN.
        with pytest.raises(cwkit.ModelError, match="smallest variance has collapsed"):
            est.partial_fit(X, y)
        assert np.all(np.isfinite(est.coef_)) and np.all(est.coef_var_ >= 0)
        return
    est.partial_fit(X, y)
    var = np.append(est.coef_var_, est.intercept_var_)
    assert np.all(np.isfinite(var)) and np.all(var > 0)
    assert np.all(np.isfinite(est.coef_)) and var[0] < 1e-3


@pytest.mark.parametrize("scale", [1e-300, 1e-160, 1e150])
def test_extreme_but_representable_values_give_no_nan(any_case, scale):
    name, params = any_case
    X, y = make_binary(np.random.default_rng(2), n=50, d=3)
    try:
        est = last_iterate(name, **params).partial_fit(X * scale, y)
    except cwkit.ModelError as exc:
        assert "row" in str(exc) and "scale the features" in str(exc).lower()
        return
    for v in _attrs(est).values():
        assert np.all(np.isfinite(v))
    assert np.all(np.isfinite(est.decision_function(X * scale)))


def test_overflowing_input_raises_clear_error(any_case):
    name, params = any_case
    X = np.array([[1e300, 1e300, -1e300]])
    with pytest.raises(cwkit.ModelError, match=r"row 0: .*(not finite|overflow)"):
        last_iterate(name, **params).partial_fit(X, [1], classes=[-1, 1])


def test_overflowing_update_leaves_state_as_before():
    est = last_iterate("pa", fit_intercept=False)
    est.partial_fit(np.array([[1.0, 0.0]]), [1], classes=[-1, 1])
    before = est.coef_.copy()
    with pytest.raises(cwkit.ModelError, match="row 0: this update would overflow"):
        est.partial_fit(np.array([[0.0, 1e-160]]), [1])
    np.testing.assert_array_equal(est.coef_, before)


def test_l2_pa_infeasible_beta_names_the_row():
    X = np.array([[1.0, 0.0], [0.1, 0.0]])
    with pytest.raises(cwkit.ModelError, match=r"l2-pa: row 1: beta\^2 \|\|x\|\|\^2 <= 1"):
        last_iterate("l2-pa", beta=2.0, fit_intercept=False).partial_fit(X, [1, 1], classes=[0, 1])


def test_labels_any_two_values_second_is_positive(data):
    X, y = data
    labels = np.where(y > 0, "spam", "ham")
    a = last_iterate("arow").partial_fit(X, labels)
    b = last_iterate("arow").partial_fit(X, y)
    assert list(a.classes_) == ["ham", "spam"]
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert set(a.predict(X)) <= {"ham", "spam"}
    with pytest.raises(ValueError, match="'eggs' is not one of the classes"):
        a.partial_fit(X[:1], ["eggs"])


def test_errors_name_the_problem(data):
    X, y = data
    with pytest.raises(ValueError, match="parameter 'C'.*expected a real number in \\(0"):
        last_iterate("pa1", C=-1.0)
    with pytest.raises(ValueError, match="arow: unknown parameter 'C'"):
        last_iterate("arow", C=1.0)
    with pytest.raises(ValueError, match="unknown algorithm 'paa'"):
        last_iterate("paa")
    with pytest.raises(ValueError, match="parameter 'eta'"):
        cwkit.ConfidenceWeighted(eta=0.4).fit(X, y)
    est = last_iterate("pa1").fit(X, y)
    assert est.partial_fit(X[:, :5], y).n_features_in_ == 12   # narrower: zeros
    with pytest.raises(ValueError, match="NaN, inf"):
        last_iterate("pa1").fit(np.where(X == X[3, 2], np.nan, X), y)
    with pytest.raises(ValueError, match="at least 2 classes"):
        last_iterate("pa1").fit(X, np.ones_like(y))
    with pytest.raises(ValueError, match="pass classes="):
        last_iterate("pa1").partial_fit(X[:3], [1, 1, 1])
    with pytest.raises(ValueError, match="continuous"):
        last_iterate("pa1").fit(X, y + 0.5)
    with pytest.raises(cwkit.NotFittedError, match="not fitted"):
        last_iterate("pa1").predict(X)
    with pytest.raises(ValueError, match="covariance='full' needs"):
        last_iterate("arow", covariance="full").fit(sp.random(3, 5000, format="csr"), [0, 1, 0])


def test_algorithms_lists_every_name_with_defaults():
    names = {a["name"]: a for a in cwkit.algorithms()}
    for n in ("perceptron", "avg-perceptron", "pa", "pa1", "pa2", "pa-ls", "cw", "cw-stdev",
              "arow", "arow-h", "sop", "reg-pa", "l2-pa", "soft-reg-pa", "adagrad"):
        assert n in names and names[n]["description"]
    assert names["arow"]["params"]["r"]["default"] == "auto"
    assert "(0, inf)" in names["pa1"]["params"]["C"]["valid"]
    for a in names.values():
        est = last_iterate(a["name"])
        for p, spec in a["params"].items():
            assert getattr(est, p) == spec["default"]


def test_cw_stdev_invariant_to_initial_variance_a():
    """[ECCW08] Lemma 3: CW-Stdev's predictions do not depend on a (full and diagonal)."""
    X, y = make_binary(np.random.default_rng(9), n=150, d=6)
    for cov in ("diag", "full"):
        base = last_iterate("cw-stdev", covariance=cov, a=1.0,
                            fit_intercept=False).partial_fit(X, y)
        for a in (0.01, 7.0):
            other = last_iterate("cw-stdev", covariance=cov, a=a, fit_intercept=False)
            other.partial_fit(X, y)
            assert other.mistakes_ == base.mistakes_
            np.testing.assert_array_equal(np.sign(other.decision_function(X)),
                                          np.sign(base.decision_function(X)))
            np.testing.assert_allclose(other.coef_ / np.linalg.norm(other.coef_),
                                       base.coef_ / np.linalg.norm(base.coef_), rtol=1e-8)


@pytest.mark.parametrize("name,params", [("reg-pa", {"alpha": 0.05}), ("l2-pa", {"beta": 3.0}),
                                         ("soft-reg-pa", {"alpha": 0.05}), ("pa", {})])
def test_rotation_invariance(name, params):
    """[LMC09] Lemma 3.3: rotating the inputs rotates the weights (no intercept)."""
    rng = np.random.default_rng(4)
    X, y = make_binary(rng, n=80, d=5)
    R, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    a = last_iterate(name, fit_intercept=False, **params).partial_fit(X, y)
    b = last_iterate(name, fit_intercept=False, **params).partial_fit(X @ R.T, y)
    assert a.mistakes_ == b.mistakes_
    np.testing.assert_allclose(b.coef_[0], R @ a.coef_[0], rtol=1e-9, atol=1e-12)


def test_prune_sigma_removes_small_weights_for_prediction_only():
    X, y = make_binary(np.random.default_rng(8), n=100, d=6)
    full = last_iterate("reg-pa").partial_fit(X, y)
    pruned = last_iterate("reg-pa", prune_sigma=1e-2).partial_fit(X, y)
    np.testing.assert_array_equal(full.coef_, pruned.coef_)
    w = full.coef_[0]
    order = np.argsort(np.abs(w), kind="stable")
    keep = w.copy()
    csum = np.cumsum(w[order] ** 2)
    keep[order[csum < 1e-2]] = 0.0
    np.testing.assert_allclose(pruned.decision_function(X), X @ keep + full.intercept_[0])
