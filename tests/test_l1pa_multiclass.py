"""Multi-class L1-norm-constrained PA (``l1-pa``, ``multiclass="top1"`` and ``"topk"``).

The compiled driver ``mc_l1pa_pass`` against the references of ``reference.py``
after every round (top-1: plain numpy bisection on the dual; top-k: a generic
solver's active set polished by an exact KKT solve -- both other algorithms than
the kernel's), single updates against scipy's optimum of the convex problem with a
KKT certificate, and the estimator protocol (dense == CSR, pieces, save / load, errors).
"""
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import last_iterate, shared_file
from reference_steps import l1pa_step
from reference import (feature, l1_projection, l1_projection_multi, l1pa_top1_run,
                       l1pa_topk_run)
from scipy.optimize import linprog, minimize

import cwkit
from cwkit import _core
from cwkit._rowdata import as_rows
from cwkit.models.interface import TOP1, TOPK, ModelSpec, PassResult
from cwkit.models.l1 import MulticlassL1PA

LABELS = np.array(["ant", "bee", "cat", "dog", "eel"])
# Reference and kernel solve the dual by different exact algorithms (bisection to adjacent
# doubles vs safeguarded Newton stopped at |g| <= 4 eps beta): both are exact up to the
# rounding of sums of size ||W_t||_1 + tau ||Delta||_1, hence an absolute tolerance on
# that scale.
RTOL = 1e-12


def make_data(rng, n=40, d=5, K=4, sparse_frac=0.3, zero_rows=()):
    """Gaussian classes; every nonzero row has ||x||_inf >= 0.5 (feasible for beta > 2)."""
    centres = rng.normal(scale=1.5, size=(K, d))
    y = rng.integers(0, K, size=n)
    X = centres[y] + rng.normal(size=(n, d))
    X[rng.random(X.shape) < sparse_frac] = 0.0
    X[np.abs(X).max(axis=1) < 0.5, 0] = 1.0
    for i in zero_rows:
        X[i] = 0.0
    return X, y


def _weights(est):
    return np.hstack([est.coef_, est.intercept_[:, None]]) if est.fit_intercept else est.coef_


def _close(got, ref, what):
    scale = max(1.0, float(np.abs(ref).max(initial=0.0)))
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=RTOL * scale, err_msg=what)


@pytest.mark.parametrize("beta", [3.0, 1e4])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["icpt", "noicpt"])
def test_matches_reference_every_round(beta, sparse, fit_intercept):
    X, y = make_data(np.random.default_rng(11), zero_rows=(4,))
    ref = l1pa_top1_run(X, y, 4, beta, fit_intercept=fit_intercept)
    est = last_iterate("l1-pa", beta=beta, fit_intercept=fit_intercept)
    Xin = sp.csr_matrix(X) if sparse else X
    n_active = 0
    for t, (mistake, W, lam) in enumerate(ref):
        est.partial_fit(Xin[t:t + 1], LABELS[y[t:t + 1]], classes=LABELS[:4])
        assert est.last_mistakes_ == int(mistake), f"mistake differs in round {t}"
        _close(_weights(est), W, f"W after round {t}")
        assert np.abs(_weights(est)).sum() <= beta * (1.0 + 1e-12)
        n_active += lam > 0.0
    if beta < 100:
        assert n_active >= 10  # the L1 ball shapes most updates
    else:
        assert n_active == 0
    Xa = np.hstack([X, np.ones((len(X), 1))]) if fit_intercept else X
    _close(est.decision_function(Xin), Xa @ ref[-1][1].T, "decision_function")
    assert est.t_ == len(y)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_inactive_ball_is_hard_margin_pa_top1(fit_intercept):
    """A ball too large to bind: the update is PA top-1 ([PA06] Sect. 7), tau = l / ||Delta||^2."""
    X, y = make_data(np.random.default_rng(3), n=60)
    a = last_iterate("l1-pa", beta=1e6, fit_intercept=fit_intercept).partial_fit(X, y)
    b = last_iterate("pa", fit_intercept=fit_intercept, multiclass="top1").partial_fit(X, y)
    assert (a.mistakes_, a.n_updates_) == (b.mistakes_, b.n_updates_)
    _close(_weights(a), _weights(b), "W")


def _generic_qp(v, Z, beta):
    """SLSQP on the smooth reformulation w = p - q, p, q >= 0; margins Z w >= 1 (rows)."""
    d = len(v)

    def fun(pq):
        r = pq[:d] - pq[d:] - v
        return 0.5 * r @ r, np.concatenate([r, -r])

    cons = [{"type": "ineq", "fun": (lambda pq, z=z: z @ (pq[:d] - pq[d:]) - 1.0),
             "jac": (lambda pq, z=z: np.concatenate([z, -z]))} for z in np.atleast_2d(Z)]
    cons.append({"type": "ineq", "fun": lambda pq: beta - pq.sum(),
                 "jac": lambda pq: -np.ones(2 * d)})
    x0 = np.concatenate([np.maximum(v, 0), np.maximum(-v, 0)])
    out = minimize(fun, x0, jac=True, method="SLSQP", constraints=cons,
                   bounds=[(0, None)] * (2 * d), options={"ftol": 1e-15, "maxiter": 3000})
    assert out.status in (0, 8), out.message  # 8: stopped at the limit of precision
    return out.x[:d] - out.x[d:]


def _kkt_residual(v, Z, beta, w, tol=1e-9):
    """Largest violation of the KKT conditions of min 1/2||w - v||^2 s.t. Z w >= 1,
    ||w||_1 <= beta, minimised over the multipliers (a, lam) >= 0 by a linear program:
    stationarity w_i = v_i + (Z'a)_i - lam sign(w_i) where w_i != 0, |v_i + (Z'a)_i| <= lam
    where w_i = 0 (|w_i| <= 1e-13 max|v|: rounding of an exact zero); a multiplier is fixed
    at 0 when its constraint is slack by more than tol."""
    Z = np.atleast_2d(Z)
    k = len(Z)
    on = np.abs(w) > 1e-13 * (1.0 + np.abs(v).max())
    n_on, n_off = on.sum(), (~on).sum()
    sg = np.sign(w[on])
    # variables (a_1..a_k, lam, t); minimise t
    rows = [np.column_stack([Z[:, on].T, -sg, -np.ones(n_on)]),        # A p - b <= t
            np.column_stack([-Z[:, on].T, sg, -np.ones(n_on)]),        # b - A p <= t
            np.column_stack([Z[:, ~on].T, -np.ones(n_off), -np.ones(n_off)]),
            np.column_stack([-Z[:, ~on].T, -np.ones(n_off), -np.ones(n_off)])]
    rhs = [w[on] - v[on], v[on] - w[on], -v[~on], v[~on]]
    margin, norm1 = Z @ w, np.abs(w).sum()
    bounds = ([(0, 0 if m > 1.0 + tol else None) for m in margin]
              + [(0, 0 if norm1 < beta - tol else None), (0, None)])
    lp = linprog(np.eye(k + 2)[-1], A_ub=np.vstack(rows), b_ub=np.concatenate(rhs),
                 bounds=bounds, method="highs")
    assert lp.status == 0, lp.message
    return max(lp.fun, (1.0 - margin).max(), norm1 - beta)


def _random_update(rng, K, d, kk):
    """A random state W_t (K, D), row x, label and its kk closest competitors' Delta_j
    (rows of Z, class-major), with a positive loss, and a beta that often binds."""
    while True:
        D = d + 1
        W0 = rng.normal(size=(K, D)) * rng.uniform(0.1, 1.0)
        if rng.random() < 0.3:
            W0[rng.random(W0.shape) < 0.5] = 0.0
        x = rng.normal(size=d) * (rng.random(d) < 0.8)
        label = int(rng.integers(K))
        xa = np.append(x, 1.0)
        s = W0 @ xa
        comp = sorted((j for j in range(K) if j != label), key=lambda j: (-s[j], j))[:kk]
        Z = np.array([feature(xa, label, K) - feature(xa, c, K) for c in comp])
        if Z[0] @ W0.ravel() < 1.0:
            beta = np.abs(W0).sum() * rng.uniform(0.3, 1.5) + 1.1
            return W0, x, label, Z, beta


def _multiclass_model(beta, K, d, kk):
    """The compiled multi-class L1-PA model: top-1 (kk = 0) or kk competitors."""
    spec = ModelSpec(shape="l1", n_classes=K, n_features=d, beta=beta,
                     strategy=TOP1 if kk == 0 else TOPK, k=max(kk, 1))
    model = MulticlassL1PA(spec)
    assert model.kk == kk
    return model


def _compiled_update(W0, x, label, beta, kk):
    K, D = W0.shape
    model = _multiclass_model(beta, K, D - 1, kk)
    model.state["W"][...] = W0.T
    out = model.run(as_rows(x[None]), np.array([label]), np.array([0]), 1.0)
    assert out.updates == 1 and out.status == _core.Status.OK
    return model.weights().ravel()


@pytest.mark.slow
@pytest.mark.parametrize("K, d", [(3, 2), (3, 4), (5, 3)])
def test_single_update_is_the_optimum(K, d):
    """One compiled top-1 update from a random W_t: scipy's optimum, a KKT certificate,
    the reference."""
    rng = np.random.default_rng(100 * K + d)
    n_active = 0
    for trial in range(25):
        W0, x, label, Z, beta = _random_update(rng, K, d, 1)
        got = _compiled_update(W0, x, label, beta, 0)
        ref, _, lam = l1_projection(W0.ravel(), Z[0], beta)
        n_active += lam > 0
        scale = np.abs(W0).sum() + beta
        assert _kkt_residual(W0.ravel(), Z, beta, got) <= 1e-9 * scale, trial
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(got, _generic_qp(W0.ravel(), Z, beta), rtol=0, atol=1e-6)
    assert n_active >= 5


@pytest.mark.slow
@pytest.mark.parametrize("K, d, kk", [(3, 2, 2), (4, 3, 2), (5, 4, 3), (5, 2, 4)])
def test_topk_single_update_is_the_optimum(K, d, kk):
    """One compiled top-k update: KKT certificate, scipy's optimum, the reference."""
    rng = np.random.default_rng(1000 * K + 10 * d + kk)
    n_active = n_multi = 0
    for trial in range(25):
        W0, x, label, Z, beta = _random_update(rng, K, d, kk)
        got = _compiled_update(W0, x, label, beta, kk)
        scale = np.abs(W0).sum() + beta
        assert _kkt_residual(W0.ravel(), Z, beta, got) <= 1e-9 * scale, trial
        np.testing.assert_allclose(got, _generic_qp(W0.ravel(), Z, beta), rtol=0, atol=1e-6)
        ref = l1_projection_multi(W0.ravel(), Z, beta)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * scale)
        n_active += np.abs(got).sum() >= beta * (1.0 - 1e-12)
        n_multi += np.count_nonzero(Z @ got <= 1.0 + 1e-12) >= 2
    assert n_active >= 5 and n_multi >= 5  # the ball and several margins bind


def test_reference_projection_is_the_optimum():
    """The reference's own projection against scipy and the KKT conditions."""
    rng = np.random.default_rng(5)
    for _ in range(30):
        d = int(rng.integers(2, 9))
        v = rng.normal(size=d) * rng.uniform(0.1, 3.0)
        z = rng.normal(size=d) * (rng.random(d) < 0.7)
        z[0] = z[0] or 1.0
        beta = rng.uniform(1.05, 3.0) / np.abs(z).max()
        w, _, _ = l1_projection(v, z, beta)
        assert _kkt_residual(v, z[None], beta, w) <= 1e-12 * (1.0 + np.abs(v).sum())
        np.testing.assert_allclose(w, _generic_qp(v, z, beta), rtol=0, atol=1e-6)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_two_classes_equal_the_flattened_binary_problem(fit_intercept):
    """K = 2: Delta_t = f(x, y) - f(x, 1 - y) does not depend on W, so the multi-class
    path is the binary l1-pa pass (``l1pa_pass``) on the rows Delta_t with label +1,
    in the flat (D, K) layout (coordinate j K + c), without intercept."""
    X, y = make_data(np.random.default_rng(2), n=50, K=2)
    bias = 1.0 if fit_intercept else 0.0
    Xa = np.hstack([X, np.full((len(X), 1), bias)])
    D = Xa.shape[1]
    Z = np.zeros((len(X), 2 * D))
    for t, (x, label) in enumerate(zip(Xa, y)):
        Z[t, label::2] = x
        Z[t, 1 - label::2] = -x
    model = _multiclass_model(2.5, 2, X.shape[1], 0)
    order = np.arange(len(X))
    mc = model.run(as_rows(X), y.astype(np.intp), order, bias)
    w = np.zeros(2 * D + 1)
    binary = PassResult(*_core.l1pa_pass(as_rows(sp.csr_matrix(Z)).view, np.ones(len(X)),
                                         order, 0.0, w, 2.5, np.empty(0)))
    assert mc.updates == binary.updates > 10
    assert mc.status == binary.status == _core.Status.OK
    assert mc.loss_sum == pytest.approx(binary.loss_sum, rel=1e-12)
    np.testing.assert_array_equal(model.state["W"].ravel(), w[:-1])


@pytest.mark.parametrize("strategy", [{"multiclass": "top1"}, {"multiclass": "topk", "k": 2}],
                         ids=["top1", "topk2"])
def test_dense_equals_csr_bit_for_bit(strategy):
    X, y = make_data(np.random.default_rng(6), n=60, zero_rows=(7,))
    for fit_intercept in (True, False):
        kw = {"beta": 2.5, "fit_intercept": fit_intercept, "n_passes": 2, "shuffle": True,
              "random_state": 1,
              **strategy}
        a = last_iterate("l1-pa", **kw).fit(X, LABELS[y])
        b = last_iterate("l1-pa", **kw).fit(sp.csr_matrix(X), LABELS[y])
        np.testing.assert_array_equal(_weights(a), _weights(b))
        assert (a.mistakes_, a.n_updates_, a.t_) == (b.mistakes_, b.n_updates_, b.t_)
        np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


@pytest.mark.parametrize("strategy", [{"multiclass": "top1"}, {"multiclass": "topk", "k": 2}],
                         ids=["top1", "topk2"])
def test_partial_fit_pieces_save_load_equal_one_pass(tmp_path, strategy):
    X, y = make_data(np.random.default_rng(7), n=60)
    labels = LABELS[y]
    one = last_iterate("l1-pa", beta=2.5, **strategy).partial_fit(X, labels)
    fit = last_iterate("l1-pa", beta=2.5, shuffle=False, **strategy).fit(X, labels)
    np.testing.assert_array_equal(_weights(fit), _weights(one))
    parts = last_iterate("l1-pa", beta=2.5, **strategy)
    mistakes = 0
    for lo, hi in [(0, 1), (1, 9), (9, 30), (30, 60)]:
        parts.partial_fit(X[lo:hi], labels[lo:hi], classes=LABELS[:4])
        mistakes += parts.last_mistakes_
        if lo == 9:
            cwkit.save(parts, tmp_path / "m.npz")
            loaded = cwkit.load(tmp_path / "m.npz")
            np.testing.assert_array_equal(_weights(loaded), _weights(parts))
            assert loaded.get_params() == parts.get_params() and loaded.t_ == parts.t_ == 30
            parts = loaded
    np.testing.assert_array_equal(_weights(parts), _weights(one))
    assert mistakes == one.mistakes_ and parts.n_updates_ > 0
    assert parts.predict(X).dtype == labels.dtype and set(parts.predict(X)) <= set(LABELS[:4])


def test_mistakes_are_argmax_errors_ties_to_the_first_class():
    """W = 0 scores every class 0: the prediction is classes_[0]."""
    X = np.array([[1.0, 0.0]])
    for label, mistake in [("ant", 0), ("cat", 1)]:
        est = last_iterate("l1-pa", beta=3.0).partial_fit(X, [label], classes=LABELS[:4])
        assert est.mistakes_ == mistake and est.n_updates_ == 1


@pytest.mark.parametrize("strategy", ["top1", "topk"])
def test_zero_row_without_intercept_makes_no_update(strategy):
    X, y = np.zeros((4, 3)), np.array(["ant", "bee", "cat", "dog"])
    est = last_iterate("l1-pa", beta=2.0, fit_intercept=False, multiclass=strategy, k=2)
    est.partial_fit(X, y)
    assert est.n_updates_ == 0 and est.mistakes_ == 3 and np.all(est.coef_ == 0)


@pytest.mark.parametrize("strategy", ["top1", "topk"])
@pytest.mark.parametrize("fit_intercept, beta", [(False, 2.0), (True, 1.0)])
def test_infeasible_row_is_named(fit_intercept, beta, strategy):
    X = np.array([[1.0, 0.0], [0.4, -0.3], [0.0, 0.2]])
    if fit_intercept:
        X = X * 0.5
    est = last_iterate("l1-pa", beta=beta, fit_intercept=fit_intercept, multiclass=strategy, k=3)
    bad = 0 if fit_intercept else 1
    with pytest.raises(cwkit.ModelError, match=rf"l1-pa: row {bad}: beta \* \|\|x\|\|_inf <= 1 "
                                               rf"\(beta = {beta:g}\)"):
        est.partial_fit(X, ["ant", "bee", "cat"], classes=LABELS[:4])


@pytest.mark.parametrize("strategy", ["top1", "topk"])
def test_overflowing_row_is_named_and_state_kept(strategy):
    X = np.array([[1.0, 0.0], [0.5, 1.0], [1e200, 1.0]])
    kw = {"beta": 3.0, "multiclass": strategy, "k": 2}
    est = last_iterate("l1-pa", **kw).partial_fit(X[:1], ["ant"], classes=LABELS[:4])
    before = _weights(est).copy()
    with pytest.raises(cwkit.ModelError, match=r"l1-pa: row 1: .* not finite"):
        est.partial_fit(X[1:], ["bee", "cat"])
    assert not np.array_equal(_weights(est), before)  # row 0 of the call was learnt
    ref = last_iterate("l1-pa", **kw).partial_fit(X[:2], ["ant", "bee"], classes=LABELS[:4])
    np.testing.assert_array_equal(_weights(est), _weights(ref))


def test_strategies():
    X, y = make_data(np.random.default_rng(8), n=30)
    est = last_iterate("l1-pa")
    assert est.multiclass == "top1"
    assert isinstance(est.fit(X, y)._model, MulticlassL1PA)
    assert est.coef_.shape == (4, 5) and est.decision_function(X).shape == (30, 4)
    ovr = last_iterate("l1-pa", multiclass="ovr").fit(X, y)
    assert not isinstance(ovr._model, MulticlassL1PA) and ovr.coef_.shape == (4, 5)
    for k, kk in [(1, 1), (2, 2), (3, 3), (10, 3)]:  # k is capped at K - 1
        topk = last_iterate("l1-pa", multiclass="topk", k=k).fit(X, y)
        assert isinstance(topk._model, MulticlassL1PA) and topk._model.kk == kk
    assert est._model.kk == 0


# The reference solves every round's projection with a generic solver: K = 5, k = 3 (the
# most competitors) with an intercept (the rounds with several margins at 1) in the routine
# run, the other sizes and no intercept with the slow checks (-m slow); top-k without an
# intercept runs routinely against top-1 (k = 1) and Hildreth (an inactive ball) below.
@pytest.mark.parametrize("K, k", [pytest.param(4, 2, marks=pytest.mark.slow),
                                  pytest.param(4, 3, marks=pytest.mark.slow),
                                  pytest.param(5, 2, marks=pytest.mark.slow), (5, 3)])
@pytest.mark.parametrize("fit_intercept", [True, pytest.param(False, marks=pytest.mark.slow)],
                         ids=["icpt", "noicpt"])
def test_topk_matches_reference_every_round(K, k, fit_intercept):
    """Dense and CSR rows against one reference run (its solver is the expensive part)."""
    beta = K - 1.0
    X, y = make_data(np.random.default_rng(11), n=30, K=K, zero_rows=(4,))
    ref = l1pa_topk_run(X, y, K, beta, k, fit_intercept=fit_intercept)
    ests = [last_iterate("l1-pa", beta=beta, fit_intercept=fit_intercept, multiclass="topk",
                         k=k) for _ in range(2)]
    n_active = n_multi = 0
    for t, (mistake, W, _) in enumerate(ref):
        for est, Xin in zip(ests, (X, sp.csr_matrix(X))):
            est.partial_fit(Xin[t:t + 1], LABELS[y[t:t + 1]], classes=LABELS[:K])
            assert est.last_mistakes_ == int(mistake), f"mistake differs in round {t}"
            _close(_weights(est), W, f"W after round {t}")
        n_active += np.abs(W).sum() >= beta * (1.0 - 1e-12)
        if fit_intercept:
            Xa = np.append(X[t], 1.0)
            n_multi += np.count_nonzero(np.abs(W[y[t]] @ Xa - np.delete(W, y[t], 0) @ Xa - 1.0)
                                        <= 1e-12) >= 2
    assert n_active >= 10
    assert n_multi >= 3 or not fit_intercept  # rounds with two or more margins at 1


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_topk_with_one_competitor_is_top1(fit_intercept):
    """k = 1: the top-k solver (nested bisection) and the top-1 solver (safeguarded Newton,
    _l1_update) solve the same problem by different algorithms."""
    X, y = make_data(np.random.default_rng(12), n=60)
    a = last_iterate("l1-pa", beta=2.5, fit_intercept=fit_intercept, multiclass="topk", k=1)
    b = last_iterate("l1-pa", beta=2.5, fit_intercept=fit_intercept, multiclass="top1")
    a.partial_fit(X, y)
    b.partial_fit(X, y)
    assert (a.mistakes_, a.n_updates_) == (b.mistakes_, b.n_updates_)
    _close(_weights(a), _weights(b), "W")


@pytest.mark.parametrize("k", [2, 3])
def test_topk_inactive_ball_is_pa_topk(k):
    """A ball too large to bind: the update is k-best MIRA with hard margins ([CS03],
    PA k-best; cwkit's Hildreth path)."""
    X, y = make_data(np.random.default_rng(13), n=60)
    a = last_iterate("l1-pa", beta=1e6, multiclass="topk", k=k).partial_fit(X, y)
    b = last_iterate("pa", multiclass="topk", k=k).partial_fit(X, y)
    assert (a.mistakes_, a.n_updates_) == (b.mistakes_, b.n_updates_)
    _close(_weights(a), _weights(b), "W")


def test_usps_prefix_matches_the_step_reference():
    """Real data (USPS digits, K = 10, D = 257): every round against ``l1pa_step`` on the
    flattened Delta (class-major, the other layout); the ball stays satisfied."""
    path = shared_file("digits/usps.scale.xz")
    X, y = next(iter(cwkit.iter_svmlight(path, batch_size=150, n_features=256)))[:2]
    classes = np.unique(y)
    codes = np.searchsorted(classes, y)
    K, beta = len(classes), 8.0
    est = last_iterate("l1-pa", beta=beta)
    w = np.zeros(K * 257)
    updates = 0
    for t in range(X.shape[0]):
        xa = np.append(X[t].toarray().ravel(), 1.0)
        s = w.reshape(K, -1) @ xa
        c = max((j for j in range(K) if j != codes[t]), key=lambda j: (s[j], -j))
        z = feature(xa, codes[t], K) - feature(xa, c, K)
        if z @ w < 1.0:
            w = l1pa_step(w, z, 1, beta)[0]
        est.partial_fit(X[t], y[t:t + 1], classes=classes)
        updates += est.last_n_updates_
        assert est.last_mistakes_ == int(np.argmax(s) != codes[t])
        _close(_weights(est), w.reshape(K, -1), f"W after round {t}")
    assert np.abs(w).sum() <= beta * (1 + 1e-12) and updates > 50
