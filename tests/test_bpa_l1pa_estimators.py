"""Estimators bpa1 / bpa2 / bpa-ls / l1-pa: the online protocol against plain references."""
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import last_iterate, make_binary

from reference_steps import bpa_step, l1pa_step

import cwkit

PA_OF = {"bpa1": "pa1", "bpa2": "pa2", "bpa-ls": "pa-ls"}


def bpa_reference(X, y, variant, C, B, rho, window, bias, s=None):
    """[GPA13] Sect. 3.2 mini-batch PA with `bpa_step`: per row, (mistake, reported w, c).

    Block: rows of a group are predicted with the model from before the group;
    the reported model after a row includes the incomplete group provisionally.
    Sliding: predict row t, then update with rows t-B+1..t.  Also the row's score.
    `s`: the rows' importance weights (None: 1).
    """
    d = X.shape[1]
    s = np.ones(len(y)) if s is None else s
    w, c = np.zeros(d), (0.0 if bias else None)
    out = []
    group = []
    for t in range(len(y)):
        f = X[t] @ w + (c if bias else 0.0)
        mistake = y[t] * f <= 0
        if window == "sliding":
            lo = max(0, t - B + 1)
            w, c, _ = bpa_step(X[lo:t + 1], y[lo:t + 1], w, c, variant=variant, C=C, rho=rho,
                               s=s[lo:t + 1])
            out.append((mistake, w, c, f))
            continue
        group.append(t)
        if len(group) == B:
            w, c, _ = bpa_step(X[group], y[group], w, c, variant=variant, C=C, rho=rho,
                               s=s[group])
            group = []
            out.append((mistake, w, c, f))
        else:
            wp, cp, _ = bpa_step(X[group], y[group], w, c, variant=variant, C=C, rho=rho,
                                 s=s[group])
            out.append((mistake, wp, cp, f))
    return out


def row_by_row(est, X, y, s=None):
    """partial_fit one row at a time (of importance weight s[t]): per row (mistake, coef,
    intercept)."""
    out = []
    for t in range(X.shape[0]):
        weight = None if s is None else s[t:t + 1]
        est.partial_fit(X[t:t + 1], y[t:t + 1], classes=[-1, 1], sample_weight=weight)
        out.append((est.last_mistakes_ == 1, est.coef_.ravel().copy(), float(est.intercept_[0])))
    return out


@pytest.fixture
def data():
    return make_binary(np.random.default_rng(5), n=60, d=5, sparse_frac=0.4)


@pytest.mark.parametrize("variant", ["bpa1", "bpa2", "bpa-ls"])
@pytest.mark.parametrize("window", ["block", "sliding"])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("sparse", [False, True])
def test_batch_size_one_equals_pa_round_by_round(data, variant, window, fit_intercept, sparse):
    X, y = data
    Xi = sp.csr_matrix(X) if sparse else X
    params = {"C": 0.4, "fit_intercept": fit_intercept}
    got = row_by_row(last_iterate(variant, batch_size=1, window=window, **params), Xi, y)
    ref = row_by_row(last_iterate(PA_OF[variant], **params), Xi, y)
    for (m1, w1, c1), (m2, w2, c2) in zip(got, ref):
        assert m1 == m2
        np.testing.assert_allclose(w1, w2, rtol=1e-12, atol=1e-14)
        assert c1 == pytest.approx(c2, rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("variant, rho", [("bpa1", "half"), ("bpa2", "half"),
                                          ("bpa2", "inverse"), ("bpa-ls", "half"),
                                          ("bpa-ls", "inverse")])
@pytest.mark.parametrize("window", ["block", "sliding"])
@pytest.mark.parametrize("B", [3, 7])
def test_matches_protocol_reference(data, variant, rho, window, B):
    X, y = data
    for fit_intercept in (True, False):
        est = last_iterate(variant, C=0.7, batch_size=B, window=window, fit_intercept=fit_intercept,
                         **({} if variant == "bpa1" else {"rho": rho}))
        got = row_by_row(est, X, y)
        ref = bpa_reference(X, y, variant, 0.7, B, rho, window, fit_intercept)
        for t, ((m1, w1, c1), (m2, w2, c2, _)) in enumerate(zip(got, ref)):
            assert m1 == m2, t
            np.testing.assert_allclose(w1, w2, rtol=1e-9, atol=1e-12, err_msg=str(t))
            assert c1 == pytest.approx(c2 if fit_intercept else 0.0, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("variant, rho", [("bpa1", "half"), ("bpa2", "half"),
                                          ("bpa2", "inverse"), ("bpa-ls", "half")])
@pytest.mark.parametrize("window", ["block", "sliding"])
@pytest.mark.parametrize("sparse", [False, True])
def test_weighted_rows_match_the_weighted_reference_every_round(data, variant, rho, window,
                                                                sparse):
    """One row per call: the rows carried from one call to the next keep their weights."""
    X, y = data
    s = np.random.default_rng(9).choice([0.0, 0.4, 1.0, 2.5], size=len(y))
    est = last_iterate(variant, C=0.7, batch_size=3, window=window,
                       **({} if variant == "bpa1" else {"rho": rho}))
    got = row_by_row(est, sp.csr_matrix(X) if sparse else X, y, s)
    ref = bpa_reference(X, y, variant, 0.7, 3, rho, window, True, s)
    unweighted = bpa_reference(X, y, variant, 0.7, 3, rho, window, True)
    assert not np.allclose(ref[-1][1], unweighted[-1][1])     # the weights matter
    for t, ((m1, w1, c1), (m2, w2, c2, _)) in enumerate(zip(got, ref)):
        assert m1 == m2, t
        np.testing.assert_allclose(w1, w2, rtol=1e-9, atol=1e-12, err_msg=str(t))
        assert c1 == pytest.approx(c2, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("name", ["bpa1", "bpa2", "bpa-ls"])
@pytest.mark.parametrize("params", [{}, {"window": "sliding"}, {"multiclass": "ovr"},
                                    {"multiclass": "top1"}, {"multiclass": "topk", "k": 2}])
def test_unit_weights_and_pieces_are_bit_identical(tmp_path, data, name, params):
    X, y = data
    yy = y if "multiclass" not in params else np.arange(len(y)) % 3
    base = cwkit.make(name, n_passes=2, **params).fit(X, yy)
    ones = cwkit.make(name, n_passes=2, **params).fit(X, yy, sample_weight=np.ones(len(yy)))
    by_class = cwkit.make(name, n_passes=2, class_weight={c: 1 for c in set(yy)},
                          **params).fit(X, yy)
    for est in (ones, by_class):
        assert np.array_equal(est.coef_, base.coef_)
        assert np.array_equal(est.intercept_, base.intercept_)
        assert est.mistakes_ == base.mistakes_
    s = np.random.default_rng(2).uniform(0, 3, len(yy))
    whole = cwkit.make(name, **params).partial_fit(X, yy, classes=np.unique(yy),
                                                   sample_weight=s)
    pieces = cwkit.make(name, **params)
    for lo, hi in [(0, 5), (5, 6), (6, 31), (31, len(yy))]:
        pieces.partial_fit(X[lo:hi], yy[lo:hi], classes=np.unique(yy), sample_weight=s[lo:hi])
        if hi == 31:     # saved and loaded with weighted rows pending
            cwkit.save(pieces, tmp_path / "m.cwk")
            pieces = cwkit.load(tmp_path / "m.cwk")
    assert np.array_equal(pieces.coef_, whole.coef_)
    assert np.array_equal(pieces.intercept_, whole.intercept_)


def test_mistakes_counted_before_the_group_update():
    X, y = np.ones((2, 1)), np.array([1, 1])
    counts = {}
    for B, window in [(1, "block"), (2, "block"), (2, "sliding")]:
        est = last_iterate("bpa1", C=10.0, batch_size=B, window=window, fit_intercept=False)
        counts[B, window] = est.partial_fit(X, y, classes=[-1, 1]).mistakes_
    # block of 2: both rows scored with w = 0; otherwise the first update fixes row 2
    assert counts == {(1, "block"): 1, (2, "block"): 2, (2, "sliding"): 1}


CASES = [("bpa1", {"C": 0.3, "batch_size": 4}),
         ("bpa2", {"C": 0.3, "batch_size": 3, "window": "sliding"}),
         ("bpa-ls", {"C": 0.3, "batch_size": 5, "rho": "inverse"}),
         ("l1-pa", {"beta": 20.0})]


@pytest.mark.parametrize("name, params", CASES, ids=[c[0] for c in CASES])
def test_dense_equals_csr_bit_for_bit(data, name, params):
    X, y = data
    for fit_intercept in (True, False):
        kw = dict(params, fit_intercept=fit_intercept, n_passes=2, shuffle=True,
                  random_state=3)
        a = last_iterate(name, **kw).fit(X, y)
        b = last_iterate(name, **kw).fit(sp.csr_matrix(X), y)
        np.testing.assert_array_equal(a.coef_, b.coef_)
        np.testing.assert_array_equal(a.intercept_, b.intercept_)
        assert (a.mistakes_, a.n_updates_, a.t_) == (b.mistakes_, b.n_updates_, b.t_)
        np.testing.assert_array_equal(a.decision_function(X),
                                      b.decision_function(sp.csr_matrix(X)))


@pytest.mark.parametrize("name, params", CASES, ids=[c[0] for c in CASES])
def test_partial_fit_in_pieces_equals_one_pass(data, name, params):
    X, y = data
    one = last_iterate(name, **params).partial_fit(X, y)
    parts = last_iterate(name, **params)
    mistakes = 0
    for lo, hi in [(0, 1), (1, 7), (7, 8), (8, 33), (33, 60)]:
        parts.partial_fit(X[lo:hi], y[lo:hi], classes=[-1, 1])
        mistakes += parts.last_mistakes_
    np.testing.assert_array_equal(one.coef_, parts.coef_)
    np.testing.assert_array_equal(one.intercept_, parts.intercept_)
    assert mistakes == one.mistakes_ and parts.t_ == one.t_ == 60
    fit = last_iterate(name, shuffle=False, **params).fit(X, y)
    np.testing.assert_array_equal(fit.coef_, one.coef_)


@pytest.mark.parametrize("name, params", CASES, ids=[c[0] for c in CASES])
def test_save_load_in_the_middle_of_a_group(tmp_path, data, name, params):
    X, y = data
    whole = last_iterate(name, **params).partial_fit(X, y)
    first = last_iterate(name, **params).partial_fit(X[:6], y[:6])
    cwkit.save(first, tmp_path / "m.npz")
    resumed = cwkit.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(resumed.coef_, first.coef_)
    resumed.partial_fit(X[6:], y[6:])
    np.testing.assert_array_equal(resumed.coef_, whole.coef_)
    np.testing.assert_array_equal(resumed.intercept_, whole.intercept_)


def test_zero_rows_make_no_update():
    X, y = np.zeros((9, 3)), np.tile([1, -1, 1], 3)
    for name, params in CASES:
        est = last_iterate(name, fit_intercept=False, **params).partial_fit(X, y)
        assert est.n_updates_ == 0 and np.all(est.coef_ == 0)


def test_l1_pa_matches_step_reference_and_stays_in_the_ball(data):
    X, y = data
    keep = np.abs(X).max(axis=1) > 0.5  # every row feasible without an intercept
    X, y = X[keep], y[keep]
    beta = 2.5
    for fit_intercept in (True, False):
        got = row_by_row(last_iterate("l1-pa", beta=beta, fit_intercept=fit_intercept), X, y)
        bias = 1.0 if fit_intercept else 0.0
        w = np.zeros(X.shape[1] + 1)
        n_active = 0
        for t, (mistake, coef, icpt) in enumerate(got):
            x = np.append(X[t], bias)
            m = y[t] * (w @ x)
            assert mistake == (m <= 0), t
            if m < 1:
                w, _, lam = l1pa_step(w, x, y[t], beta)
                n_active += lam > 0
            np.testing.assert_allclose(coef, w[:-1], rtol=1e-12, atol=1e-15)
            assert icpt == pytest.approx(w[-1] if fit_intercept else 0.0, abs=1e-15)
            assert np.abs(coef).sum() + abs(icpt) <= beta * (1 + 1e-12)
        assert n_active > 5


def test_l1_pa_infeasible_row_is_named():
    X = np.array([[1.0, 0.0], [0.4, -0.3]])
    with pytest.raises(cwkit.ModelError, match=r"l1-pa: row 1: beta \* \|\|x\|\|_inf <= 1 "
                                               r"\(beta = 2\)"):
        last_iterate("l1-pa", beta=2.0, fit_intercept=False).partial_fit(X, [1, 1], classes=[0, 1])


def test_numerically_singular_dual_raises_clear_error():
    X, y = make_binary(np.random.default_rng(2), n=12, d=3)
    with pytest.raises(cwkit.ModelError, match=r"bpa-ls: row \d+: .*numerically singular.*"
                                               r"scale the features"):
        last_iterate("bpa-ls", batch_size=4).partial_fit(X * 1e150, y)


@pytest.mark.parametrize("name, kwargs, match", [
    ("bpa1", {"C": np.inf}, "parameter 'C'"),
    ("bpa2", {"batch_size": 0}, "parameter 'batch_size'"),
    ("bpa-ls", {"window": "tumbling"}, "parameter 'window'"),
    ("bpa2", {"rho": 0.5}, "parameter 'rho'"),
    ("l1-pa", {"beta": 0.0}, "parameter 'beta'"),
    ("bpa1", {"rho": "half"}, "bpa1: unknown parameter 'rho'"),
])
def test_bad_parameters(name, kwargs, match):
    with pytest.raises(ValueError, match=match):
        last_iterate(name, **kwargs)


@pytest.mark.parametrize("window", ["block", "sliding"])
def test_one_vs_rest_matches_reference(window):
    """K independent binary problems; a row's prediction is the argmax of the K
    pre-update scores (one-vs-rest, ties to the smallest class)."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(45, 4))
    y = np.argmax(X[:, :3] + 0.5 * rng.normal(size=(45, 3)), axis=1)
    est = last_iterate("bpa2", C=0.5, batch_size=3, window=window,
                     multiclass="ovr").partial_fit(X, y)
    refs = [bpa_reference(X, np.where(y == c, 1.0, -1.0), "bpa2", 0.5, 3, "half", window, True)
            for c in range(3)]
    scores = np.array([[r[3] for r in ref] for ref in refs])
    assert est.mistakes_ == np.count_nonzero(np.argmax(scores, axis=0) != y)
    for c, ref in enumerate(refs):
        np.testing.assert_allclose(est.coef_[c], ref[-1][1], rtol=1e-9, atol=1e-12)
        assert est.intercept_[c] == pytest.approx(ref[-1][2], rel=1e-9, abs=1e-12)
    assert est.decision_function(X).shape == (45, 3)


@pytest.mark.parametrize("name, params", CASES, ids=[c[0] for c in CASES])
def test_one_vs_rest_dense_csr_pieces_and_save_load(tmp_path, name, params):
    params = {**params, "multiclass": "ovr"}  # l1-pa's default is top1
    rng = np.random.default_rng(9)
    X = rng.normal(size=(40, 4)) * (rng.random((40, 4)) < 0.7)
    y = np.array(["a", "b", "c", "d"])[np.argmax(X + 0.3 * rng.normal(size=(40, 4)), axis=1)]
    params = dict(params, multiclass="ovr")
    one = last_iterate(name, **params).partial_fit(X, y)
    csr = last_iterate(name, **params).partial_fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(one.coef_, csr.coef_)
    assert one.mistakes_ == csr.mistakes_ and one.coef_.shape == (4, 4)
    part = last_iterate(name, **params).partial_fit(X[:13], y[:13], classes=list("abcd"))
    cwkit.save(part, tmp_path / "m.npz")
    part = cwkit.load(tmp_path / "m.npz")
    mistakes = part.mistakes_
    part.partial_fit(X[13:], y[13:])
    np.testing.assert_array_equal(part.coef_, one.coef_)
    assert mistakes + part.last_mistakes_ == one.mistakes_
    assert set(one.predict(X)) <= set("abcd")


def test_registry_lists_the_new_names():
    names = {a["name"]: a for a in cwkit.algorithms()}
    assert set(names["bpa2"]["params"]) == {"C", "batch_size", "rho", "window", "slack"}
    assert set(names["bpa1"]["params"]) == {"C", "batch_size", "window"}
    assert names["l1-pa"]["params"]["beta"]["default"] == 100.0
    assert last_iterate("bpa-ls").variant == "bpa-ls"
