"""Kernel forms: the dual models against plain numpy dual references after every
round, the degree-1 polynomial kernel against the primal rules, budgets, files,
the command line and the registry's refusals."""
import numpy as np
import pytest
import scipy.sparse as sp

import cwkit
from cwkit._rowdata import as_rows
from conftest import last_iterate, saved_loaded_and_learning_on
from reference_kernel import (bpa_run, default_bias, first_order_run, gram, second_order_run,
                              second_order_top1_run)

FIRST_ORDER = [("perceptron", {}), ("avg-perceptron", {}), ("pa", {}), ("pa1", {"C": 0.3}),
               ("pa2", {"C": 0.3}), ("pa-ls", {"C": 0.3}), ("reg-pa", {"alpha": 0.05}),
               ("l2-pa", {"beta": 10.0}), ("soft-reg-pa", {"C": 0.3, "alpha": 0.05})]
SECOND_ORDER = [("arow", {"r": 0.3, "a": 1.5}), ("arow-h", {"r": 0.3, "a": 1.5}),
                ("cw", {"eta": 0.8, "a": 0.7}), ("cw-stdev", {"eta": 0.8, "a": 0.7})]
KERNELS = [("rbf", {"gamma": 0.3}), ("poly", {"gamma": 0.5, "degree": 2, "coef0": 1.0})]


def data(n=40, d=5, K=2, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random((n, d)) < 0.3] = 0.0
    if K == 2:
        y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1, -1)
    else:
        y = rng.integers(0, K, size=n)
    return (sp.csr_matrix(X) if sparse else X), X, y


def _check_round(est, X, ids, coef):
    sv = est.support_vectors_.toarray()
    assert sv.shape == (len(ids), X.shape[1])
    np.testing.assert_array_equal(sv, X[ids])
    np.testing.assert_allclose(est.dual_coef_, coef.T, rtol=1e-10, atol=1e-13)
    if coef.shape[1] == 1:     # by sign, as SVC's per label
        np.testing.assert_array_equal(est.n_support_, [(coef < 0).sum(), (coef > 0).sum()])
    else:       # per class: the support vectors each class's score uses
        np.testing.assert_array_equal(est.n_support_, np.count_nonzero(coef, axis=0))


@pytest.mark.parametrize("kernel,kp", KERNELS, ids=[k for k, _ in KERNELS])
@pytest.mark.parametrize("name,params", FIRST_ORDER, ids=[n for n, _ in FIRST_ORDER])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_first_order_binary_every_round(name, params, kernel, kp, sparse):
    Xin, X, y = data(sparse=sparse)
    est = last_iterate(name, kernel=kernel, **kp, **params)
    mistakes = 0
    for i, (ids, coef, mistake) in enumerate(first_order_run(name, X, y, kernel=kernel, kp=kp,
                                                              **params)):
        est.partial_fit(Xin[i:i + 1], y[i:i + 1], classes=[-1, 1])
        mistakes += mistake
        _check_round(est, X, ids, coef)
    # test-time scores: the contract decision_function = dual_coef_ K(SV, X) + intercept_
    Kt = gram(X[ids], X, kernel, bias=0.0, **kp)
    np.testing.assert_allclose(est.decision_function(Xin),
                               (est.dual_coef_ @ Kt)[0] + est.intercept_[0], rtol=1e-10,
                               atol=1e-12)
    fitted = last_iterate(name, kernel=kernel, **kp, **params).fit(Xin, y)
    assert fitted.mistakes_ == mistakes
    np.testing.assert_array_equal(fitted.dual_coef_, est.dual_coef_)


@pytest.mark.parametrize("name,params", FIRST_ORDER, ids=[n for n, _ in FIRST_ORDER])
def test_first_order_top1_every_round(name, params):
    K = 4
    Xin, X, y = data(n=50, K=K, seed=3)
    est = last_iterate(name, kernel="rbf", gamma=0.4, **params)
    mistakes = 0
    for i, (ids, coef, mistake) in enumerate(first_order_run(name, X, y, K, kernel="rbf",
                                                              kp={"gamma": 0.4}, **params)):
        est.partial_fit(Xin[i:i + 1], y[i:i + 1], classes=np.arange(K))
        mistakes += mistake
        _check_round(est, X, ids, coef)
    assert last_iterate(name, kernel="rbf", gamma=0.4, **params).fit(Xin, y).mistakes_ == mistakes
    scores = est.decision_function(Xin)
    assert scores.shape == (len(y), K)
    np.testing.assert_allclose(scores, (est.dual_coef_ @ gram(X[ids], X, "rbf", gamma=0.4,
                                                                bias=0.0)).T
                               + est.intercept_, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kernel,kp", KERNELS, ids=[k for k, _ in KERNELS])
@pytest.mark.parametrize("name,params", SECOND_ORDER, ids=[n for n, _ in SECOND_ORDER])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_second_order_every_round(name, params, kernel, kp, sparse):
    Xin, X, y = data(sparse=sparse, seed=1)
    est = last_iterate(name, kernel=kernel, **kp, **params)
    for i, (ids, mu, Z, _) in enumerate(second_order_run(name, X, y, kernel=kernel, kp=kp,
                                                          **params)):
        est.partial_fit(Xin[i:i + 1], y[i:i + 1], classes=[-1, 1])
        _check_round(est, X, ids, mu)
        np.testing.assert_allclose(est._model.state["Z"], Z, rtol=1e-9, atol=1e-12)
    # x^T Sigma x at test time gives the Gaussian probabilities
    Kt = gram(X[ids], X, kernel, bias=default_bias(kernel), **kp)
    v = params["a"] * np.diag(gram(X, X, kernel, bias=default_bias(kernel), **kp)) + np.einsum(
        "ij,ik,kj->j", Kt, Z, Kt)
    m = mu[:, 0] @ Kt
    from scipy.special import ndtr
    np.testing.assert_allclose(est.predict_confidence(Xin)[:, 1], ndtr(m / np.sqrt(v)), rtol=1e-9)


PRIMAL = [(n, p) for n, p in FIRST_ORDER] + [
    (n, {**p, "covariance": "full"}) for n, p in SECOND_ORDER]


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("name,params", PRIMAL, ids=[n for n, _ in PRIMAL])
def test_degree_one_poly_is_the_primal_rule(name, params, fit_intercept):
    """poly, degree 1, gamma 1, coef0 0 (+ the intercept's bias^2) is the primal rule."""
    Xin, X, y = data(n=60, seed=5)
    primal = last_iterate(name, fit_intercept=fit_intercept, **params)
    kp = {k: v for k, v in params.items() if k != "covariance"}
    dual = last_iterate(name, kernel="poly", degree=1, gamma=1.0, coef0=0.0,
                      fit_intercept=fit_intercept, **kp)
    for i in range(len(y)):
        primal.partial_fit(X[i:i + 1], y[i:i + 1], classes=[-1, 1])
        dual.partial_fit(X[i:i + 1], y[i:i + 1], classes=[-1, 1])
        assert dual.mistakes_ == primal.mistakes_, i
        np.testing.assert_allclose(dual.decision_function(X), primal.decision_function(X),
                                   rtol=1e-9, atol=1e-9)
    w = dual.dual_coef_ @ dual.support_vectors_.toarray()
    np.testing.assert_allclose(w[0], primal.coef_[0], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(dual.intercept_, primal.intercept_, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", ["perceptron", "pa", "pa2", "reg-pa"])
def test_degree_one_poly_is_the_primal_top1(name):
    Xin, X, y = data(n=60, K=3, seed=6)
    primal = last_iterate(name).fit(X, y)
    dual = last_iterate(name, kernel="poly", degree=1, gamma=1.0).fit(X, y)
    assert dual.mistakes_ == primal.mistakes_
    np.testing.assert_allclose(dual.decision_function(X), primal.decision_function(X),
                               rtol=1e-9, atol=1e-9)


LMC09 = FIRST_ORDER[6:]
BUDGET_CASES = ([(n, p, pol) for n, p in FIRST_ORDER + SECOND_ORDER
                 for pol in ("oldest", "smallest")]
                + [(n, p, "shrink") for n, p in LMC09])


# averaged: the first-order rules but the Perceptron's (avg-perceptron is averaged already;
# the second-order rules': test_second_order_average_every_round)
@pytest.mark.parametrize("name,params,policy,average",
                         [(*c, False) for c in BUDGET_CASES]
                         + [(*c, True) for c in BUDGET_CASES
                            if c[0] in dict(FIRST_ORDER) and "perceptron" not in c[0]],
                         ids=lambda c: str(c))
def test_budget_every_round(name, params, policy, average):
    Xin, X, y = data(n=50, seed=2)
    B = 6
    est = last_iterate(name, kernel="rbf", gamma=0.5, budget=B, budget_policy=policy,
                     **({"average": True} if average else {}), **params)
    if name in dict(SECOND_ORDER):
        run = second_order_run(name, X, y, kernel="rbf", kp={"gamma": 0.5}, budget=B,
                               policy=policy, **params)
        run = ((ids, mu, Z) for ids, mu, Z, _ in run)
    else:
        run = ((ids, coef, None) for ids, coef, _ in first_order_run(
            name, X, y, kernel="rbf", kp={"gamma": 0.5}, budget=B, policy=policy,
            average=average, **params))
    for i, (ids, coef, Z) in enumerate(run):
        est.partial_fit(Xin[i:i + 1], y[i:i + 1], classes=[-1, 1])
        _check_round(est, X, ids, coef)
        if Z is not None:       # Z after the Schur complements of the removed items
            np.testing.assert_allclose(est._model.state["Z"], Z, rtol=1e-9, atol=1e-12)
        assert est.support_vectors_.shape[0] <= B
    assert est.support_vectors_.shape[0] == B   # the budget was reached: removals tested
    if Z is not None:       # one call: its slots reused and its pending terms flushed
        whole = last_iterate(name, kernel="rbf", gamma=0.5, budget=B, budget_policy=policy,
                             **({"average": True} if average else {}), **params).fit(Xin, y)
        _check_round(whole, X, ids, coef)
        np.testing.assert_allclose(whole._model.state["Z"], Z, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name,K,policy", [("arow", 2, "smallest"), ("cw", 2, "oldest"),
                                            ("arow", 3, "oldest")])
def test_second_order_budget_split_calls_are_one_call(name, K, policy, tmp_path):
    """On a budget the projection's G = (K + lam I)^-1 is kept from one call to the
    next (and in the model file): calls of any size, a save and a load between them,
    give the one-call model (to rounding: the support set's order in the matrices
    differs after removals).  A file without G (written before it was kept) rebuilds it."""
    _, X, y = data(n=90, K=K, seed=6)
    X = np.vstack([X, X[:30] + 1e-9])           # near-duplicates: an ill-conditioned K
    y = np.concatenate([y, y[:30]])
    make = lambda: last_iterate(name, kernel="rbf", gamma=0.5, budget=8,    # noqa: E731
                                budget_policy=policy)
    whole = make().fit(X, y)
    split = make()
    cuts = [0, 1, 2, 9, 40, 41, 77, 100, len(y)]
    for i, (a, b) in enumerate(zip(cuts, cuts[1:])):
        split.partial_fit(X[a:b], y[a:b], classes=np.unique(y))
        if i == 4:
            cwkit.save(split, tmp_path / "m.cwk")
            split = cwkit.load(tmp_path / "m.cwk")
    assert set(split._model.state) == set(whole._model.state) and "G" in whole._model.state
    for key, value in whole._model.state.items():
        np.testing.assert_allclose(split._model.state[key], value, rtol=1e-9, atol=1e-12,
                                   err_msg=key)
    np.testing.assert_allclose(split.decision_function(X), whole.decision_function(X),
                               rtol=1e-9, atol=1e-10)
    with np.load(tmp_path / "m.cwk") as z:       # the same file without G
        arrays = {k: z[k] for k in z.files if k != "state/G"}
    with open(tmp_path / "old.cwk", "wb") as f:
        np.savez(f, **arrays)
    old = cwkit.load(tmp_path / "old.cwk")
    assert "G" not in old._model.state
    old.partial_fit(X[41:], y[41:])
    np.testing.assert_allclose(old.decision_function(X), whole.decision_function(X),
                               rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("policy", ["oldest", "smallest"])
def test_second_order_budget_keeps_sigma_psd(policy):
    """Many removals (budget 10 over 600 rows): Z stays negative semi-definite, so
    Sigma = a I + Phi^T Z Phi stays positive semi-definite (0 <= v <= a k~(x, x)) and
    kernel AROW keeps learning ("oldest"; removing Z's row and column alone made v
    negative and the model stop updating, at about the majority class's error); with
    the removed coefficient projected onto the kept items, both policies learn (dropped,
    "smallest" stayed near the majority class's error)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(800, 2))
    y = np.where(np.linalg.norm(X, axis=1) < 1.2, 1, -1)
    est = last_iterate("arow", kernel="rbf", gamma=1.0, budget=10, budget_policy=policy)
    est.fit(X[:600], y[:600])
    model = est._model
    assert model.state["aux"][6] > 100           # M: well over the budget were added
    Z = model.state["Z"]
    assert np.linalg.eigvalsh(Z).max() <= 1e-12 * np.abs(Z).max()
    mu, v = model.proba_args(est._rows(X[600:]), est._bias)
    assert (v >= 0).all() and (v <= est.a * (1 + est._bias ** 2) + 1e-12).all()
    assert np.mean(est.predict(X[600:]) != y[600:]) < 0.1



def _tri_sweep_reference(A, U, s, x, out):
    """The packed sweep by its definition, in the order it promises: row p of the lower
    triangle (packed by rows) takes each term in turn as a + s_t (u_tp u_tq); then
    out[q] += x_p a_pq (q < p) and out[p] = (s0 + s1) + (s2 + s3), lane l summing the
    entries q = l mod 4 of the full blocks of four, the rest into s0."""
    A, out = A.copy(), out.copy()
    for p in range(len(out)):
        row = A[p * (p + 1) // 2:(p + 1) * (p + 2) // 2]
        for t in range(len(s)):
            row += s[t] * (U[t, p] * U[t, :p + 1])
        if len(x):
            out[:p] += x[p] * row[:p]
            lanes = [0.0] * 4
            nb = (p + 1) // 4 * 4
            for q in range(p + 1):
                lanes[q % 4 if q < nb else 0] += row[q] * x[q]
            out[p] = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
    return A, out


@pytest.fixture
def simd_default():
    from cwkit import _core
    yield _core
    _core._simd_level(-1)


def test_packed_sweep_same_bits_on_every_path(simd_default):
    """The kernel full-covariance drivers' sweep (the pending rank-one terms taken and
    the product, one pass over a packed triangle) gives its definition's bits on every
    path the build and the processor have (plain C, the vector form for the build's
    target, the vector form for AVX2): every size up to a few blocks of four and the
    pairs of rows, the tails, 0 to 5 terms and 32 (the most that can be pending), with
    and without the product."""
    core = simd_default
    rng = np.random.default_rng(3)
    paths = sorted({core._simd_level(level) for level in (0, 1, 2)})
    cases = [(P, m) for P in range(0, 23) for m in (0, 1, 2, 3, 5)] + [(41, 32)]
    for P, m in cases:
        A = rng.normal(size=P * (P + 1) // 2)
        U = rng.normal(size=(m, P + 3))
        s = rng.normal(size=m)
        for x in (rng.normal(size=P), np.empty(0)):
            out = rng.normal(size=P)
            want = _tri_sweep_reference(A, U, s, x, out)
            for level in paths:
                core._simd_level(level)
                got = A.copy(), out.copy()
                core._tri_sweep(got[0], U, s, x, got[1])
                np.testing.assert_array_equal(got[0], want[0], err_msg=f"{P} {m} {level}")
                np.testing.assert_array_equal(got[1], want[1], err_msg=f"{P} {m} {level}")


def test_kernel_arow_same_bits_on_every_path(simd_default):
    """Kernel AROW on a budget and CW without one learn the same bits on every path of
    their sweeps."""
    core = simd_default
    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 4))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    runs = []
    for path in sorted({core._simd_level(level) for level in (0, 1, 2)}):
        core._simd_level(path)
        runs.append([(e.dual_coef_, e._model.state["Z"]) for e in (
            last_iterate("arow", kernel="rbf", gamma=0.5, budget=37).fit(X, y),
            last_iterate("cw", kernel="rbf", gamma=0.5).fit(X[:120], y[:120]))])
    for run in runs[1:]:
        for (coef, Z), (coef0, Z0) in zip(run, runs[0]):
            np.testing.assert_array_equal(coef, coef0)
            np.testing.assert_array_equal(Z, Z0)


@pytest.mark.parametrize("name,params", FIRST_ORDER[:1] + FIRST_ORDER[2:3])
def test_forgetron_shrinks(name, params):
    """"oldest" shrinks by phi_t ([DSS08]) on this stream: Q moved and stays within
    15 M / 32, and the Perceptron's weights are no longer all +-1 (plain removal's)."""
    Xin, X, y = data(n=80, seed=2)
    kw = dict(kernel="rbf", gamma=0.5, budget=4, **params)
    est = last_iterate(name, budget_policy="oldest", **kw).fit(X, y)
    aux = est._model.state["aux"]
    assert aux[5] != 0 and aux[5] <= 15 / 32 * aux[6]   # Q <= 15 M / 32, M: vectors added
    if name == "perceptron":
        assert np.abs(est.dual_coef_).min() < 1.0   # without phi_t every weight is +-1


@pytest.mark.parametrize("name,params", FIRST_ORDER, ids=[n for n, _ in FIRST_ORDER])
@pytest.mark.parametrize("K", [2, 4])
def test_average_every_round(name, params, K):
    """average=True: the running mean of the dual coefficients over the rounds."""
    Xin, X, y = data(n=50, K=K, seed=5)
    est = last_iterate(name, kernel="rbf", gamma=0.4, **params,
                     **({} if "perceptron" in name else {"average": True}))
    classes = [-1, 1] if K == 2 else np.arange(K)
    for i, (ids, coef, _) in enumerate(first_order_run(name, X, y, K, kernel="rbf",
                                                        kp={"gamma": 0.4},
                                                        average=name != "perceptron",
                                                        **params)):
        est.partial_fit(Xin[i:i + 1], y[i:i + 1], classes=classes)
        _check_round(est, X, ids, coef)
    plain = last_iterate(name, kernel="rbf", gamma=0.4, **params).fit(Xin, y)
    fitted = last_iterate(name, kernel="rbf", gamma=0.4, **params,
                        **({} if "perceptron" in name else {"average": True})).fit(Xin, y)
    assert plain.mistakes_ == fitted.mistakes_  # averaging reports, never changes the run
    np.testing.assert_allclose(fitted.dual_coef_, est.dual_coef_, rtol=1e-12)
    if "perceptron" not in name:
        assert not np.allclose(plain.dual_coef_, est.dual_coef_)


@pytest.mark.parametrize("name,p", [("reg-pa", {"alpha": 1.0}),    # (soft-reg-pa: -m slow)
                                    pytest.param("soft-reg-pa", {"alpha": 1.0, "C": 0.3},
                                                 marks=pytest.mark.slow)])
def test_average_survives_the_scale_folding(name, p):
    """Over 400 rounds the [LMC09] scale s halves at every update, far beyond the
    range it is folded back from: the averages, sums of the same-signed weights, still
    match the plain sum of every round's coefficients."""
    _, X, y = data(n=400, seed=6)
    est = last_iterate(name, kernel="rbf", gamma=0.4, average=True, **p).fit(X, y)
    *_, (ids, coef, _) = first_order_run(name, X, y, kernel="rbf", kp={"gamma": 0.4},
                                         average=True, **p)
    _check_round(est, X, ids, coef)


@pytest.mark.parametrize("name", ["pa1", "avg-perceptron", "arow"])
def test_budget_larger_than_rounds_is_unbudgeted(name):
    Xin, X, y = data(n=30, seed=4)
    a = last_iterate(name, kernel="rbf", gamma=0.5, budget=31).fit(X, y)
    b = last_iterate(name, kernel="rbf", gamma=0.5).fit(X, y)
    assert a.mistakes_ == b.mistakes_
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


def test_dense_and_csr_agree_and_save_load(tmp_path):
    Xs, X, y = data(n=60, K=3, seed=8, sparse=True)
    for name, extra in (("pa1", {}), ("arow", {"multiclass": "ovr"}), ("cw", {}),
                        ("avg-perceptron", {"multiclass": "ovr"}), ("bpa2", {"batch_size": 4}),
                        ("bpa2", {"batch_size": 4, "multiclass": "top1"})):
        d = last_iterate(name, kernel="rbf", gamma=0.3, budget=10, **extra).fit(X, y)
        s = last_iterate(name, kernel="rbf", gamma=0.3, budget=10, **extra).fit(Xs, y)
        # training is identical; test-time scores are matrix products (BLAS rounding)
        np.testing.assert_array_equal(d.dual_coef_, s.dual_coef_)
        np.testing.assert_allclose(d.decision_function(X), s.decision_function(Xs),
                                   rtol=1e-12, atol=1e-14)
        assert d.mistakes_ == s.mistakes_
        path = tmp_path / f"{name}.cwk"
        cwkit.save(s, path)
        back = cwkit.load(path)
        assert type(back) is type(s) and back.get_params() == s.get_params()
        np.testing.assert_array_equal(back.decision_function(X), s.decision_function(X))
        # training goes on from the loaded state exactly as from the original (59 rows:
        # mini-batch PA has 3 rows of an incomplete group pending)
        back.partial_fit(X[:59], y[:59])
        s.partial_fit(X[:59], y[:59])
        path2 = tmp_path / f"{name}-2.cwk"
        cwkit.save(s, path2)
        np.testing.assert_array_equal(cwkit.load(path2).decision_function(X),
                                      s.decision_function(X))
        np.testing.assert_array_equal(back.decision_function(X), s.decision_function(X))


def test_ovr_contract():
    _, X, y = data(n=60, K=3, seed=9)
    est = last_iterate("arow", kernel="rbf", gamma=0.3, multiclass="ovr").fit(X, y)
    Kt = gram(est.support_vectors_.toarray(), X, "rbf", gamma=0.3, bias=0.0)
    np.testing.assert_allclose(est.decision_function(X),
                               (est.dual_coef_ @ Kt).T + est.intercept_, rtol=1e-10)
    # probabilities: the argmax of K independent Gaussian scores, as the primal ovr
    from cwkit.models.scoring import argmax_proba
    M, V = zip(*(m.proba_args(as_rows(X), est._bias) for m in est._model.models))
    P = est.predict_confidence(X)
    np.testing.assert_allclose(P, argmax_proba(np.column_stack(M), np.column_stack(V)))
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert (np.argmax(P, axis=1) == np.argmax(est.decision_function(X), axis=1)).mean() > 0.9


def test_refusals():
    for name in ("sop", "adagrad", "l1-pa"):
        with pytest.raises(ValueError, match=f"{name} has no kernel form"):
            last_iterate(name, kernel="poly")
    with pytest.raises(ValueError, match="sop has no kernel form"):
        last_iterate("sop", kernel="rbf")
    with pytest.raises(ValueError, match="give kernel='rbf' or kernel='poly'"):
        last_iterate("pa1", gamma=0.5)
    with pytest.raises(ValueError, match="not one of its kernel form's"):
        last_iterate("arow", kernel="rbf", covariance="full")
    with pytest.raises(ValueError, match="topk"):
        last_iterate("pa1", kernel="rbf", multiclass="topk")
    with pytest.raises(ValueError, match="gamma"):
        last_iterate("pa1", kernel="rbf", gamma=-1.0)
    with pytest.raises(ValueError, match="budget"):
        last_iterate("pa1", kernel="rbf", budget=0)
    # degree and coef0 are the polynomial kernel's: refused at once by make, and by fit
    for kw in ({"degree": 2}, {"coef0": 1.0}, {"degree": 3, "coef0": 0.0}):
        with pytest.raises(ValueError, match="of kernel='poly' only; kernel='rbf'"):
            cwkit.make("pa1", kernel="rbf", **kw)
        est = cwkit.kernels.KernelAROW(**kw)
        with pytest.raises(ValueError, match="of kernel='poly' only"):
            est.fit(np.eye(3), [0, 1, 0])
        assert not hasattr(est, "classes_")
    assert cwkit.make("pa1", kernel="poly", degree=2).resolved_params()["coef0"] == 0.0
    with pytest.raises(ValueError, match="own shrinkage"):
        last_iterate("pa1", kernel="rbf", budget=5, budget_policy="shrink")
    assert last_iterate("reg-pa", kernel="rbf").budget_policy == "shrink"
    _, X, y = data(n=20, K=3)
    assert type(last_iterate("pa1", kernel="linear")) is cwkit.PassiveAggressive
    est = last_iterate("pa1", kernel="rbf").fit(X, y)
    assert not hasattr(est, "coef_")


def test_defaults_from_the_data(tmp_path):
    """gamma=None is scikit-learn's "scale", 1 / (n_features X.var()) of the first rows,
    dense and CSR alike, kept by save / load; the RBF intercept's bias^2 is 0.1 (1 for
    poly); the PA, [LMC09], CW and mini-batch kernel forms average by default, the others
    do not."""
    Xin, X, y = data(n=40, seed=4, sparse=True)
    gamma = 1.0 / (X.shape[1] * X.var())
    for rows in (X, Xin):
        est = cwkit.make("pa1", kernel="rbf").fit(rows, y)
        assert est.gamma_ == pytest.approx(gamma, rel=1e-12)
        assert est.resolved_params()["gamma"] == est.gamma_
        assert est.intercept_scaling_ == np.sqrt(0.1) and est._averaging()
    same = cwkit.make("pa1", kernel="rbf", gamma=est.gamma_, average=True,
                      intercept_scaling=np.sqrt(0.1)).fit(Xin, y)
    np.testing.assert_array_equal(same.dual_coef_, est.dual_coef_)
    back = saved_loaded_and_learning_on(est, tmp_path / "m.npz", X, X[:5] * 3, y[:5])
    assert back.gamma_ == est.gamma_
    assert cwkit.make("pa1", kernel="poly").fit(X, y).intercept_scaling_ == 1.0
    assert cwkit.make("pa1", kernel="rbf", gamma=0.7).fit(X, y).gamma_ == 0.7
    assert cwkit.make("pa1", kernel="rbf").fit(np.ones((4, 3)), [0, 1, 0, 1]).gamma_ == 1.0
    for name in ("perceptron", "arow", "arow-h"):
        assert not cwkit.make(name, kernel="rbf")._averaging()
    for name in ("avg-perceptron", "pa", "pa2", "reg-pa", "cw", "cw-stdev", "bpa1", "bpa-ls"):
        assert cwkit.make(name, kernel="rbf")._averaging()
    # the plain kernel perceptron accepts average=, the name's fixed value overridden
    assert cwkit.make("perceptron", kernel="rbf", average=True)._averaging()


def test_defaults_near_svc_on_sonar():
    """One pass at the defaults on 5 stratified 75/25 splits of sonar: kernel PA-I within
    4 points of scikit-learn's SVC() (the full table: docs/choosing.md)."""
    from conftest import shared_file
    svm = pytest.importorskip("sklearn.svm")
    selection = pytest.importorskip("sklearn.model_selection")
    X, y = cwkit.svmlight.load_svmlight(shared_file("uci/sonar_scale"))[:2]
    X = X.toarray()
    splits = selection.StratifiedShuffleSplit(5, test_size=0.25, random_state=0).split(X, y)
    errs = np.array([[np.mean(est.fit(X[tr], y[tr]).predict(X[te]) != y[te])
                      for est in (svm.SVC(), cwkit.make("pa1", kernel="rbf"))]
                     for tr, te in splits])
    svc, pa1 = 100 * errs.mean(axis=0)
    assert pa1 <= svc + 4, (pa1, svc)


def test_nonfinite_row_is_reported():
    est = last_iterate("pa1", kernel="rbf", gamma=0.5)
    X = np.array([[1.0, 0.0], [1e200, 1e200]])
    with pytest.raises(ValueError, match="row 1"):
        est.fit(X, [1, -1])


def test_cli_kernel_and_grid(tmp_path, capsys):
    from cwkit import cli
    _, X, y = data(n=40, seed=1)
    path = tmp_path / "d.svm"
    with open(path, "w") as f:
        for xi, yi in zip(X, y):
            f.write(f"{yi} " + " ".join(f"{j + 1}:{v}" for j, v in enumerate(xi) if v) + "\n")
    rc = cli.main(["eval", "--algos", "pa1:kernel=rbf:gamma=0.5,arow:kernel=poly:degree=2",
                   "--grid", "pa1.gamma=0.1,1", "--format", "json", str(path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "pa1:kernel=rbf" in out and "arow:kernel=poly" in out
    assert cli.main(["eval", "--algos", "sop:kernel=rbf", str(path)]) == 2
    assert "sop has no kernel form" in capsys.readouterr().err


@pytest.mark.parametrize("kernel,kp", KERNELS, ids=[k for k, _ in KERNELS])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_compiled_and_blocked_scores_agree(kernel, kp, sparse, monkeypatch):
    """Large support sets are scored by the compiled kernel rows, small ones by blocked
    matrix products: the two agree (Gaussian probabilities included)."""
    from cwkit.models import kernel as km
    Xin, X, y = data(n=60, seed=12, sparse=sparse)
    for name in ("pa1", "arow"):
        est = last_iterate(name, kernel=kernel, **kp).fit(Xin, y)
        blocked = est.decision_function(Xin)
        p_blocked = est.predict_confidence(Xin) if name == "arow" else None
        monkeypatch.setattr(km, "DENSE_SUPPORT", -1)
        np.testing.assert_allclose(est.decision_function(Xin), blocked, rtol=1e-11,
                                   atol=1e-13)
        if p_blocked is not None:
            np.testing.assert_allclose(est.predict_confidence(Xin), p_blocked, rtol=1e-10)
        monkeypatch.undo()


@pytest.mark.parametrize("gamma", [0.3, 1e4], ids=["wide", "narrow"])
@pytest.mark.parametrize("name,params", [("pa1", {"C": 0.3}), ("avg-perceptron", {}),
                                         ("bpa1", {"batch_size": 4, "C": 0.5}),
                                         ("bpa-ls", {"batch_size": 3, "C": 0.5})],
                         ids=["pa1", "avg-perceptron", "bpa1", "bpa-ls"])
def test_dense_support_vectors_and_a_narrow_width(name, params, gamma):
    """Dense rows: support vectors holding every feature are walked four at a time, a few
    rows with a zero (fewer entries) break the runs; the narrow width makes every kernel
    value off the diagonal exp's 0 (the call skipped).  The fit (whose mini-batch updates
    reuse their rows' predictions) is the reference's."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(45, 5))
    X[[6, 13, 14, 30, 31, 32], 2] = 0.0
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1, -1)
    kp = {"gamma": gamma}
    if name.startswith("bpa"):
        run = list(bpa_run(name, X, y, params["batch_size"], params["C"], "rbf", kp))
    else:
        run = list(first_order_run(name, X, y, kernel="rbf", kp=kp, **params))
    ids, coef, _ = run[-1]
    est = last_iterate(name, kernel="rbf", **kp, **params).fit(X, y)
    assert est.mistakes_ == sum(mistake for *_, mistake in run)
    _check_round(est, X, ids, np.reshape(coef, (len(ids), -1)))


@pytest.mark.parametrize("gamma", [700.0, 744.0, 745.0, 745.1, 745.2, 746.0, 800.0])
def test_rbf_values_down_to_the_least_subnormal(gamma):
    """exp(-gamma d) is computed until it rounds to 0: the compiled rows (CSR) give
    exp's value, subnormal ones included, and 0 past it."""
    import math
    X = sp.csr_matrix(np.array([[1.0, 0.0]]))
    est = last_iterate("pa", kernel="rbf", gamma=gamma, fit_intercept=False)
    est.partial_fit(X, [1], classes=[-1, 1])
    far = sp.csr_matrix(np.array([[1.0, 1.0]]))          # ||x - x_0||^2 = 1
    want = est.dual_coef_[0, 0] * math.exp(-gamma)
    assert est.decision_function(far)[0] == want
    assert (want > 0.0) == (gamma < 745.14)


@pytest.mark.parametrize("variant", ["bpa1", "bpa2", "bpa-ls"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_minibatch_every_round(variant, sparse):
    Xin, X, y = data(n=30, seed=13, sparse=sparse)
    kp = {"gamma": 0.4}
    est = last_iterate(variant, kernel="rbf", batch_size=4, C=0.5, **kp)
    mistakes = 0
    for i, (ids, coef, mistake) in enumerate(bpa_run(variant, X, y, 4, 0.5, "rbf", kp)):
        est.partial_fit(Xin[i:i + 1], y[i:i + 1], classes=[-1, 1])
        mistakes += mistake
        assert est.last_mistakes_ == mistake
        _check_round(est, X, ids, coef[:, None])
    fitted = last_iterate(variant, kernel="rbf", batch_size=4, C=0.5, **kp).fit(Xin, y)
    assert fitted.mistakes_ == mistakes
    np.testing.assert_allclose(fitted.decision_function(Xin), est.decision_function(Xin),
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("variant", ["bpa1", "bpa2", "bpa-ls"])
@pytest.mark.parametrize("B,window", [(1, "block"), (4, "block"), (8, "sliding")])
def test_minibatch_degree_one_poly_is_the_primal_rule(variant, B, window):
    # sliding: a row joins the support set once per window it is in (up to B times)
    Xin, X, y = data(n=50, seed=14)
    kw = dict(batch_size=B, C=0.5, window=window)
    primal = last_iterate(variant, **kw).fit(X, y)
    dual = last_iterate(variant, kernel="poly", degree=1, gamma=1.0, **kw).fit(X, y)
    assert dual.support_vectors_.shape[0] <= B * 50
    assert dual.mistakes_ == primal.mistakes_
    np.testing.assert_allclose(dual.decision_function(X), primal.decision_function(X),
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("variant,K", [("bpa1", 2), ("bpa2", 3), ("bpa-ls", 2)])
def test_minibatch_weights_every_round(variant, K):
    """Importance weights (0 among them) scale each row's loss term in its group's dual
    (the box s_k C, the ridge rho / s_k): the reference after every round, row by row (the
    rows of an incomplete group keep their weights from call to call); weights of 1 are
    no weights, bit for bit."""
    Xin, X, y = data(n=30, K=K, seed=25)
    s = np.random.default_rng(3).choice([0.0, 0.3, 1.0, 2.5], size=len(y))
    kw = dict(kernel="rbf", gamma=0.4, batch_size=4, C=0.5, multiclass="top1")
    est = last_iterate(variant, **kw)
    classes = [-1, 1] if K == 2 else np.arange(K)
    for i, (ids, coef, _) in enumerate(bpa_run(variant, X, y, 4, 0.5, "rbf", {"gamma": 0.4},
                                               K=None if K == 2 else K, s=s)):
        est.partial_fit(Xin[i:i + 1], y[i:i + 1], classes=classes, sample_weight=s[i:i + 1])
        np.testing.assert_array_equal(est.support_vectors_.toarray(), X[ids])
        np.testing.assert_allclose(est.dual_coef_, np.reshape(coef, (len(ids), -1)).T,
                                   rtol=1e-12, atol=1e-15)
    ones = last_iterate(variant, **kw).fit(Xin, y, sample_weight=np.ones(len(y)))
    plain = last_iterate(variant, **kw).fit(Xin, y)
    np.testing.assert_array_equal(ones.dual_coef_, plain.dual_coef_)
    assert not np.allclose(est.decision_function(Xin), ones.decision_function(Xin))


@pytest.mark.parametrize("variant", ["bpa1", "bpa2", "bpa-ls"])
def test_minibatch_weighted_group_is_the_scipy_optimum(variant):
    """With k~(a, b) = a.b + 1 (degree-1 polynomial, intercept 1) one weighted group from
    the zero model is the optimum of the weighted primal problem by a generic solver
    (SLSQP, ``test_minibatch.primal_reference``)."""
    from test_minibatch import primal_reference
    rng = np.random.default_rng(26)
    for C in (0.05, 1.0, 20.0):
        X = rng.normal(size=(5, 3))
        y = rng.choice([-1, 1], size=5)
        s = rng.choice([0.0, 0.3, 1.0, 2.5], size=5)
        est = last_iterate(variant, kernel="poly", degree=1, gamma=1.0, coef0=0.0,
                           intercept_scaling=1.0, batch_size=5, C=C)
        est.partial_fit(X, y, classes=[-1, 1], sample_weight=s)
        w = est.dual_coef_[0] @ est.support_vectors_.toarray()
        w_ref, c_ref = primal_reference(X, y.astype(float), np.zeros(3), 0.0, variant, C,
                                        "half", s)
        np.testing.assert_allclose(w, w_ref, rtol=1e-4, atol=1e-4)
        assert est.intercept_[0] == pytest.approx(c_ref, rel=1e-4, abs=1e-4)


@pytest.mark.parametrize("window", ["block", "sliding"])
def test_minibatch_weights_degree_one_poly_is_the_weighted_primal(window):
    """Weighted, in pieces (the rows carried over keep their weights): the degree-1
    polynomial kernel form is the weighted primal rule."""
    _, X, y = data(n=50, seed=27)
    s = np.random.default_rng(4).choice([0.0, 0.5, 1.0, 3.0], size=len(y))
    kw = dict(batch_size=4, C=0.5, window=window)
    primal = last_iterate("bpa2", **kw).fit(X, y, sample_weight=s)
    dual = last_iterate("bpa2", kernel="poly", degree=1, gamma=1.0, **kw)
    for a in range(0, 50, 7):
        dual.partial_fit(X[a:a + 7], y[a:a + 7], classes=[-1, 1], sample_weight=s[a:a + 7])
    assert dual.mistakes_ == primal.mistakes_
    np.testing.assert_allclose(dual.decision_function(X), primal.decision_function(X),
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("policy", ["oldest", "smallest"])
@pytest.mark.parametrize("variant", ["bpa1", "bpa-ls"])
def test_minibatch_budget(policy, variant):
    _, X, y = data(n=60, seed=15)
    est = last_iterate(variant, kernel="rbf", gamma=0.5, batch_size=4, budget=5,
                     budget_policy=policy, C=0.5)
    for i, (ids, coef, _) in enumerate(bpa_run(variant, X, y, 4, 0.5, "rbf", {"gamma": 0.5},
                                               budget=5, policy=policy)):
        est.partial_fit(X[i:i + 1], y[i:i + 1], classes=[-1, 1])
        _check_round(est, X, ids, coef[:, None])
        assert est.support_vectors_.shape[0] <= 5
    assert est.support_vectors_.shape[0] == 5
    big = last_iterate("bpa1", kernel="rbf", gamma=0.5, batch_size=4, budget=61).fit(X, y)
    free = last_iterate("bpa1", kernel="rbf", gamma=0.5, batch_size=4).fit(X, y)
    np.testing.assert_array_equal(big.dual_coef_, free.dual_coef_)


@pytest.mark.parametrize("variant", ["bpa1", "bpa2", "bpa-ls"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_minibatch_top1_every_round(variant, sparse):
    Xin, X, y = data(n=30, K=3, seed=16, sparse=sparse)
    kp = {"gamma": 0.4}
    kw = dict(kernel="rbf", batch_size=4, C=0.5, multiclass="top1", **kp)
    est = last_iterate(variant, **kw)
    mistakes = 0
    for i, (ids, coef, mistake) in enumerate(bpa_run(variant, X, y, 4, 0.5, "rbf", kp, K=3)):
        est.partial_fit(Xin[i:i + 1], y[i:i + 1], classes=[0, 1, 2])
        mistakes += mistake
        assert est.last_mistakes_ == mistake
        _check_round(est, X, ids, coef)
    assert len(ids) > 8
    fitted = last_iterate(variant, **kw).fit(Xin, y)
    assert fitted.mistakes_ == mistakes
    np.testing.assert_allclose(fitted.decision_function(Xin), est.decision_function(Xin),
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("variant", ["bpa1", "bpa2", "bpa-ls"])
@pytest.mark.parametrize("B,window", [(1, "block"), (4, "block"), (3, "sliding")])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_minibatch_top1_degree_one_poly_is_the_primal_rule(variant, B, window, fit_intercept):
    Xin, X, y = data(n=60, K=4, seed=17)
    kw = dict(batch_size=B, C=0.5, window=window, multiclass="top1",
              fit_intercept=fit_intercept)
    primal = last_iterate(variant, **kw)
    dual = last_iterate(variant, kernel="poly", degree=1, gamma=1.0, **kw)
    for i in range(0, 60, 7):        # calls that split the groups
        primal.partial_fit(X[i:i + 7], y[i:i + 7], classes=[0, 1, 2, 3])
        dual.partial_fit(X[i:i + 7], y[i:i + 7], classes=[0, 1, 2, 3])
        assert dual.mistakes_ == primal.mistakes_, i
        np.testing.assert_allclose(dual.decision_function(X), primal.decision_function(X),
                                   rtol=1e-9, atol=1e-9)
    assert primal.mistakes_ > 0
    w = dual.dual_coef_ @ dual.support_vectors_.toarray()
    np.testing.assert_allclose(w, primal.coef_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(dual.intercept_, primal.intercept_, rtol=1e-9, atol=1e-9)


# (variant, K, C, gamma, budget policy or None, weighted): bpa1 with C = 5 has rows that
# a completed group leaves out after their provisional steps (kept by the average)
BPA_AVERAGE_CASES = [("bpa1", 2, 5.0, 0.4, None, False), ("bpa2", 2, 0.5, 0.4, "oldest", False),
                     ("bpa-ls", 3, 0.5, 0.4, None, True), ("bpa1", 3, 5.0, 0.05, None, False),
                     ("bpa1", 3, 5.0, 0.05, "smallest", True)]


@pytest.mark.parametrize("variant,K,C,gamma,policy,weighted", BPA_AVERAGE_CASES, ids=str)
def test_minibatch_average_every_round(variant, K, C, gamma, policy, weighted, tmp_path):
    """average=True of kernel mini-batch PA (binary, top-1; a budget of 5 and none;
    weighted rows): after every call of one row (each carrying its incomplete group to
    the next) the mean of the reference's per-round models, the provisional step of the
    incomplete group included (rows left out keep their sums without a budget); one call
    gives the same; the run is the last iterate's; a model file keeps the sums."""
    Xin, X, y = data(n=30, K=K, seed=13)
    s = np.random.default_rng(3).choice([0.0, 0.3, 1.0, 2.5], size=len(y)) if weighted \
        else None
    kw = dict(kernel="rbf", gamma=gamma, batch_size=4, C=C, multiclass="top1",
              **({} if policy is None else {"budget": 5, "budget_policy": policy}))
    est = last_iterate(variant, average=True, **kw)
    classes = [-1, 1] if K == 2 else np.arange(K)
    for i, (ids, coef, _) in enumerate(bpa_run(
            variant, X, y, 4, C, "rbf", {"gamma": gamma}, K=None if K == 2 else K, s=s,
            average=True, **({} if policy is None else {"budget": 5, "policy": policy}))):
        est.partial_fit(Xin[i:i + 1], y[i:i + 1], classes=classes,
                        sample_weight=None if s is None else s[i:i + 1])
        np.testing.assert_array_equal(est.support_vectors_.toarray(), X[ids])
        np.testing.assert_allclose(est.dual_coef_, np.reshape(coef, (len(ids), -1)).T,
                                   rtol=1e-12, atol=1e-15)
    left_out = len(est._model.state["gh_sqn"])
    assert left_out > 0 if policy is None and C == 5.0 else left_out == 0
    assert policy is None or est._model.n_support == 5
    whole = last_iterate(variant, average=True, **kw).fit(Xin, y, sample_weight=s)
    np.testing.assert_allclose(whole.dual_coef_, est.dual_coef_, rtol=1e-12, atol=1e-15)
    plain = last_iterate(variant, **kw).fit(Xin, y, sample_weight=s)
    assert plain.mistakes_ == est.mistakes_   # averaging reports, never changes the run
    np.testing.assert_array_equal(est._predict_last(X), plain.predict(X))
    np.testing.assert_array_equal(whole._model.last_scores(as_rows(X), whole._bias),
                                  plain._model.scores(as_rows(X), plain._bias))
    back = saved_loaded_and_learning_on(est, tmp_path / "m.cwk", X, X[:9], y[:9])
    np.testing.assert_array_equal(back.dual_coef_, est.dual_coef_)


@pytest.mark.parametrize("variant,K,window,multiclass",
                         [("bpa1", 2, "block", "top1"), ("bpa-ls", 3, "block", "top1"),
                          ("bpa2", 3, "sliding", "top1"), ("bpa1", 3, "block", "ovr")])
def test_minibatch_average_degree_one_poly_is_the_primal_average(variant, K, window,
                                                                 multiclass):
    """With the linear kernel the averaged kernel form reports the linear mini-batch PA's
    average (its rounds' models, the incomplete group's provisional step included), over
    calls that split the groups."""
    _, X, y = data(n=50, K=K, seed=14)
    kw = dict(batch_size=4, C=5.0, window=window, multiclass=multiclass, average=True)
    primal = cwkit.make(variant, **kw)
    dual = cwkit.make(variant, kernel="poly", degree=1, gamma=1.0, **kw)
    classes = [-1, 1] if K == 2 else np.arange(K)
    for a in range(0, 50, 7):
        primal.partial_fit(X[a:a + 7], y[a:a + 7], classes=classes)
        dual.partial_fit(X[a:a + 7], y[a:a + 7], classes=classes)
        assert dual.mistakes_ == primal.mistakes_
        np.testing.assert_allclose(dual.decision_function(X), primal.decision_function(X),
                                   rtol=1e-9, atol=1e-9)
    if multiclass == "top1":
        np.testing.assert_allclose(dual.dual_coef_ @ dual.support_vectors_.toarray(),
                                   np.atleast_2d(primal.coef_), rtol=1e-9, atol=1e-9)
        # bpa1: rows left out by their completed group, after provisional steps
        assert variant != "bpa1" or len(dual._model.state["gh_sqn"]) > 0


@pytest.mark.parametrize("policy", ["oldest", "smallest"])
@pytest.mark.parametrize("variant", ["bpa1", "bpa-ls"])
def test_minibatch_top1_budget(policy, variant):
    _, X, y = data(n=50, K=3, seed=18)
    kw = dict(kernel="rbf", gamma=0.5, batch_size=4, C=0.5, multiclass="top1")
    est = last_iterate(variant, budget=6, budget_policy=policy, **kw)
    for i, (ids, coef, _) in enumerate(bpa_run(variant, X, y, 4, 0.5, "rbf", {"gamma": 0.5},
                                               budget=6, policy=policy, K=3)):
        est.partial_fit(X[i:i + 1], y[i:i + 1], classes=[0, 1, 2])
        _check_round(est, X, ids, coef)
        assert len(ids) <= 6
    assert len(ids) == 6
    big = last_iterate(variant, budget=51, budget_policy=policy, **kw).fit(X, y)
    free = last_iterate(variant, **kw).fit(X, y)
    assert big.mistakes_ == free.mistakes_
    np.testing.assert_array_equal(big.dual_coef_, free.dual_coef_)
    np.testing.assert_array_equal(big.decision_function(X), free.decision_function(X))


def test_random_fourier_features_approximate_the_rbf_kernel():
    from cwkit.kernel_approx import RandomFourierFeatures
    Xs, X, _ = data(n=30, seed=16, sparse=True)
    K = gram(X, X, "rbf", gamma=0.3, bias=0.0)
    errs = []
    for D in (100, 10000):
        rff = RandomFourierFeatures(gamma=0.3, n_components=D, random_state=0)
        Z = rff.fit_transform(X)
        np.testing.assert_allclose(rff.transform(Xs), Z, rtol=1e-12, atol=1e-14)
        errs.append(np.abs(Z @ Z.T - K).max())
    assert errs[1] < 0.05 and errs[1] < errs[0] / 3      # O(1 / sqrt(D))


@pytest.mark.parametrize("kernel,kp", KERNELS, ids=[k for k, _ in KERNELS])
def test_nystroem_is_exact_on_its_landmarks(kernel, kp):
    from cwkit.kernel_approx import Nystroem
    Xs, X, _ = data(n=25, seed=17, sparse=True)
    K = gram(X, X, kernel, bias=0.0, **kp)
    Z = Nystroem(kernel=kernel, n_components=25, random_state=0, **kp).fit_transform(Xs)
    np.testing.assert_allclose(Z @ Z.T, K, rtol=1e-7, atol=1e-8)
    half = Nystroem(kernel=kernel, n_components=12, random_state=0, **kp).fit(X)
    Zh = half.transform(X)
    L = np.flatnonzero((X[:, None, :] == half.landmarks_[None]).all(-1).any(1))
    np.testing.assert_allclose((Zh @ Zh.T)[np.ix_(L, L)], K[np.ix_(L, L)], rtol=1e-7,
                               atol=1e-8)


@pytest.mark.parametrize("name,params", SECOND_ORDER, ids=[n for n, _ in SECOND_ORDER])
def test_second_order_top1_every_round(name, params):
    K = 3
    Xin, X, y = data(n=40, K=K, seed=18)
    est = last_iterate(name, kernel="rbf", gamma=0.4, **params)
    mistakes = 0
    for i, (ids, coef, mistake) in enumerate(second_order_top1_run(
            name, X, y, K, kernel="rbf", kp={"gamma": 0.4}, **params)):
        est.partial_fit(Xin[i:i + 1], y[i:i + 1], classes=np.arange(K))
        mistakes += mistake
        _check_round(est, X, ids, coef)
    assert last_iterate(name, kernel="rbf", gamma=0.4, **params).fit(X, y).mistakes_ == mistakes


SO_AVERAGE_CASES = [("arow", 2, None), ("cw", 2, "oldest"), ("arow-h", 2, "smallest"),
                    ("arow", 3, None), ("cw-stdev", 3, "oldest"), ("arow", 3, "smallest")]


@pytest.mark.parametrize("name,K,policy", SO_AVERAGE_CASES, ids=str)
def test_second_order_average_every_round(name, K, policy, tmp_path):
    """average=True of kernel CW / AROW (binary, top-1; with a budget of 5 and without):
    the mean of the per-round dual coefficients of the reference after every round (a
    removed item's past leaves with it; "oldest" shrinks the kept ones by phi_t),
    reported by the lazy sums of the driver; the run itself is the last iterate's; a
    model file keeps the sums (learning goes on from it bit for bit)."""
    Xin, X, y = data(n=40, K=K, seed=24)
    params = dict(SECOND_ORDER)[name]
    kw = dict(kernel="rbf", gamma=0.4, **params,
              **({} if policy is None else {"budget": 5, "budget_policy": policy}))
    est = last_iterate(name, average=True, **kw)
    ref = dict(kernel="rbf", kp={"gamma": 0.4}, average=True, **params,
               **({} if policy is None else {"budget": 5, "policy": policy}))
    run = (second_order_run(name, X, y, **ref) if K == 2 else
           second_order_top1_run(name, X, y, K, **ref))
    classes = [-1, 1] if K == 2 else np.arange(K)
    for i, (ids, coef, *_) in enumerate(run):
        est.partial_fit(Xin[i:i + 1], y[i:i + 1], classes=classes)
        np.testing.assert_array_equal(est.support_vectors_.toarray(), X[ids])
        np.testing.assert_allclose(est.dual_coef_, coef.T, rtol=1e-12, atol=1e-15)
    assert policy is None or len(ids) == 5     # the budget was reached: removals tested
    plain = last_iterate(name, **kw).fit(X, y)
    assert plain.mistakes_ == est.mistakes_   # averaging reports, never changes the run
    np.testing.assert_array_equal(est._predict_last(X), plain.predict(X))
    back = saved_loaded_and_learning_on(est, tmp_path / "m.cwk", X, X[:9], y[:9])
    np.testing.assert_array_equal(back.dual_coef_, est.dual_coef_)


@pytest.mark.parametrize("name,params", SECOND_ORDER, ids=[n for n, _ in SECOND_ORDER])
def test_second_order_top1_degree_one_poly_is_the_primal_rule(name, params):
    _, X, y = data(n=60, K=3, seed=19)
    primal = last_iterate(name, covariance="full", **params).fit(X, y)
    dual = last_iterate(name, kernel="poly", degree=1, gamma=1.0, **params).fit(X, y)
    assert dual.mistakes_ == primal.mistakes_
    np.testing.assert_allclose(dual.decision_function(X), primal.decision_function(X),
                               rtol=1e-9, atol=1e-9)
    # the diagonal blocks Sigma_cc of the stacked covariance give the same probabilities
    np.testing.assert_allclose(dual.predict_confidence(X), primal.predict_confidence(X), rtol=1e-7,
                               atol=1e-9)


@pytest.mark.parametrize("name,K,params", [("pa1", 2, {}), ("pa1", 3, {}), ("arow", 2, {}),
                                           ("arow", 3, {}), ("pa1", 3, {"multiclass": "ovr"}),
                                           ("bpa1", 2, {"batch_size": 3})])
def test_counts_against_clean_labels_and_records_scores(name, K, params):
    """The label-noise protocol and the progressive scores reach the kernel drivers:
    rounds counted against y_clean (the reference: each row predicted before it is
    learnt, one row at a time) and predict_proba fitted on those rounds (monotone)."""
    Xin, X, y = data(n=45, K=K, seed=23)
    rng = np.random.default_rng(5)
    y_clean = y.copy()
    flip = rng.random(len(y)) < 0.3
    y_clean[flip] = (y[flip] + 1) % K if K > 2 else -y[flip]
    classes = np.unique(np.concatenate([y, y_clean]))
    kw = dict(kernel="rbf", gamma=0.5, **params)
    est = last_iterate(name, **kw).partial_fit(Xin, y, classes=classes, y_clean=y_clean)
    ref = last_iterate(name, **kw)
    wrong = 0
    for i in range(len(y)):
        # a fresh model scores 0: a binary mistake (y s <= 0), multi-class class 0
        s = ref.decision_function(Xin[i:i + 1])[0] if i else (0.0 if K == 2 else np.zeros(K))
        wrong += int(y_clean[i] * s <= 0 if K == 2 else np.argmax(s) != y_clean[i])
        ref.partial_fit(Xin[i:i + 1], y[i:i + 1], classes=classes)
    plain = last_iterate(name, **kw).partial_fit(Xin, y, classes=classes).mistakes_
    same = last_iterate(name, **kw).partial_fit(Xin, y, classes=classes, y_clean=y).mistakes_
    assert same == plain
    if name != "bpa1":
        assert est.mistakes_ == wrong
    else:   # a row is predicted by the model before its group: count y and -y (binary)
        anti = last_iterate(name, **kw).partial_fit(Xin, y, classes=classes, y_clean=-y)
        # every row is a mistake for one of them; both for the first group (score 0)
        assert plain + anti.mistakes_ == len(y) + params["batch_size"]
    P = est.predict_proba(Xin)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert (np.argmax(P, axis=1) == np.argmax(np.atleast_2d(est.decision_function(Xin).T).T
                                              if K > 2 else np.column_stack(
                                                  [-est.decision_function(Xin),
                                                   est.decision_function(Xin)]), axis=1)).all()


@pytest.mark.parametrize("name", ["arow", "pa1", "sop", "bpa1", "l1-pa", "adagrad"])
@pytest.mark.parametrize("approx", ["rff", "nystroem"])
def test_kernel_approx_parameter(name, approx, tmp_path):
    """kernel_approx= feeds any linear rule the feature map's rows: the same model as the
    rule fit on the map's output, and a model file keeps the map (no pickle)."""
    from cwkit.kernel_approx import Nystroem, RandomFourierFeatures
    Xin, X, y = data(n=80, seed=21, sparse=True)
    est = last_iterate(name, kernel_approx=approx, gamma=0.3, n_components=20, random_state=3)
    est.fit(Xin[:60], y[:60])
    if approx == "rff":
        fmap = RandomFourierFeatures(0.3, 20, est.approx_seed_).fit(X[:60])
    else:
        fmap = Nystroem("rbf", 0.3, n_components=20).fit(np.array(est.landmarks_))
        rows = {tuple(r) for r in X[:60]}
        assert all(tuple(r) in rows for r in est.landmarks_)
    plain = last_iterate(name).fit(fmap.transform(X[:60]), y[:60])
    # (CSR rows here, dense rows there: the map's products agree to rounding)
    np.testing.assert_allclose(est.coef_, plain.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.decision_function(Xin[60:]),
                               plain.decision_function(fmap.transform(X[60:])), rtol=1e-9,
                               atol=1e-12)
    assert est.n_features_in_ == 5 and est.coef_.shape[-1] == 20
    saved_loaded_and_learning_on(est, tmp_path / "m.cwk", X, X[60:], y[60:])


@pytest.mark.parametrize("approx", ["rff", "nystroem"])
def test_kernel_approx_gamma_from_the_data(approx, tmp_path):
    """kernel_approx's gamma=None is "scale" of the first rows, as the exact kernel forms':
    the model of that gamma given, kept by save / load; a file from before gamma_ was kept
    loads with None's value then, 1 / n_features, and decides as that gamma's fit."""
    import json
    Xin, X, y = data(n=40, seed=4, sparse=True)
    est = last_iterate("arow", kernel_approx=approx, n_components=12, random_state=2)
    est.fit(Xin, y)
    assert est.gamma_ == pytest.approx(1.0 / (X.shape[1] * X.var()), rel=1e-12)
    assert est.resolved_params()["gamma"] == est.gamma_
    given = last_iterate("arow", kernel_approx=approx, n_components=12, random_state=2,
                         gamma=est.gamma_).fit(Xin, y)
    np.testing.assert_array_equal(given.coef_, est.coef_)
    back = saved_loaded_and_learning_on(est, tmp_path / "m.cwk", X, X[:5] * 3, y[:5])
    assert back.gamma_ == est.gamma_
    old = last_iterate("arow", kernel_approx=approx, n_components=12, random_state=2,
                       gamma=1.0 / X.shape[1]).fit(Xin, y)
    cwkit.save(old, tmp_path / "old.cwk")
    with np.load(tmp_path / "old.cwk") as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays.pop("__meta__").tobytes())
    meta["params"]["gamma"] = None
    del meta["choices"]["gamma_"]
    with open(tmp_path / "old.cwk", "wb") as f:
        np.savez(f, __meta__=np.frombuffer(json.dumps(meta).encode(), np.uint8), **arrays)
    loaded = cwkit.load(tmp_path / "old.cwk")
    assert loaded.gamma == None and loaded.gamma_ == 1.0 / X.shape[1]  # noqa: E711
    np.testing.assert_array_equal(loaded.decision_function(X), old.decision_function(X))


@pytest.mark.parametrize("name", ["arow", "pa1"])
@pytest.mark.parametrize("approx", ["rff", "nystroem"])
def test_kernel_approx_maps_single_csr_rows(name, approx):
    """partial_fit on one CSR row at a time (the single-example path of two-class linear
    rules) maps each row as a batch does: the model of one partial_fit of them all."""
    import copy
    Xin, X, y = data(n=40, seed=5, sparse=True)
    est = last_iterate(name, kernel_approx=approx, gamma=0.3, n_components=20, random_state=3)
    est.partial_fit(Xin[:20], y[:20])
    batch = copy.deepcopy(est).partial_fit(Xin[20:], y[20:])
    for i in range(20, 40):
        est.partial_fit(Xin[i], y[i:i + 1])
    assert est.t_ == batch.t_
    # (one row's map against the batch's: the same products up to rounding)
    np.testing.assert_allclose(est.coef_, batch.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.intercept_, batch.intercept_, rtol=1e-9, atol=1e-12)


def test_kernel_approx_refusals_and_cli(tmp_path, capsys):
    with pytest.raises(ValueError, match="kernel_approx"):
        last_iterate("pa1", kernel_approx="fourier")
    with pytest.raises(ValueError, match="does not go with kernel_approx"):
        last_iterate("pa1", kernel_approx="rff", budget=5)
    with pytest.raises(ValueError, match="n_components"):
        last_iterate("arow", kernel_approx="rff", n_components=0)
    from cwkit.cli import main
    _, X, y = data(n=60, seed=22)
    f = tmp_path / "d.svm"
    from cwkit.svmlight import dump_svmlight
    dump_svmlight(X, y, f)
    assert main(["eval", "--algos", "arow:kernel_approx=rff:gamma=0.5:n_components=30",
                 "--format", "json", str(f)]) == 0
    assert "kernel_approx" in capsys.readouterr().out


@pytest.mark.parametrize("name,params", FIRST_ORDER[1:], ids=[n for n, _ in FIRST_ORDER[1:]])
@pytest.mark.parametrize("K", [2, 3])
def test_average_degree_one_poly_is_the_primal_average(name, params, K):
    """average=True in the dual with the linear kernel reports the primal rule's average
    (the primal averaging of cwkit.models.average, computed apart; the Perceptron's
    average is avg-perceptron)."""
    _, X, y = data(n=60, K=K, seed=23)
    extra = {} if name == "avg-perceptron" else {"average": True}
    primal = last_iterate(name, **params, **extra).fit(X, y)
    dual = last_iterate(name, kernel="poly", degree=1, gamma=1.0, **params, **extra).fit(X, y)
    assert dual.mistakes_ == primal.mistakes_
    np.testing.assert_allclose(dual.decision_function(X), primal.decision_function(X),
                               rtol=1e-9, atol=1e-9)
