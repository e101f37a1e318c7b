"""The regressors: exact against the per-example references, each update against its
convex problem's optimum, PA-I against scikit-learn's SGD PA regressor, AROW against
ridge regression in closed form, and the regressor protocol (weights, growth, files,
bad input)."""
import numpy as np
import pytest
import scipy.sparse as sp
from reference_regression import arow_step, pa_step, regression_run
from scipy.optimize import minimize

import cwkit
from cwkit.models import rules

RTOL = 1e-12
NAMES = ["pa", "pa1", "pa2", "arow"]
#: (name, parameters) of every regressor form: the PA variants with and without a
#: tube, AROW full and both diagonal updates.
CASES = [("pa", {"epsilon": 0.1}), ("pa1", {"C": 0.3, "epsilon": 0.05}),
         ("pa2", {"C": 0.7, "epsilon": 0.0}), ("arow", {"r": 0.5, "a": 2.0, "covariance": "full"}),
         ("arow", {"r": 0.5, "a": 2.0, "covariance": "diag"}),
         ("arow", {"r": 0.5, "covariance": "diag", "diag_update": "direct"})]


def data(rng, n=30, d=4, zero_rows=(3,)):
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.7)
    X[list(zero_rows)] = 0.0
    y = X @ rng.normal(size=d) + 0.5 + 0.1 * rng.normal(size=n)
    y[0] = 0.0      # the first round's residual is exactly 0: RLS still updates Sigma
    return X, y


def _ref_params(params):
    return {k: v for k, v in params.items() if k in ("C", "epsilon", "r", "a", "covariance",
                                                     "diag_update")}


def check_against_reference(name, params, X, y, *, fit_intercept=True, weights=None,
                            sparse=False):
    reg = cwkit.make_regressor(name, fit_intercept=fit_intercept, intercept_scaling=1.0,
                               **params)
    ref = regression_run(name, X, y, b=1.0 if fit_intercept else 0.0, weights=weights,
                         **_ref_params(params))
    for i, (pred, coef, intercept, sigma) in enumerate(ref):
        row = sp.csr_matrix(X[i:i + 1]) if sparse else X[i:i + 1]
        if i:
            np.testing.assert_allclose(reg.predict(row), [pred], rtol=RTOL, atol=1e-14)
        reg.partial_fit(row, y[i:i + 1],
                        sample_weight=None if weights is None else weights[i:i + 1])
        np.testing.assert_allclose(reg.coef_, coef, rtol=RTOL, atol=1e-14)
        np.testing.assert_allclose(reg.intercept_, [intercept if fit_intercept else 0.0],
                                   rtol=RTOL, atol=1e-14)
        if sigma is not None:
            S = sigma[:-1, :-1] if sigma.ndim == 2 and not fit_intercept else sigma
            got = reg.covariance_ if sigma.ndim == 2 else np.append(reg.coef_var_,
                                                                     reg.intercept_var_)
            np.testing.assert_allclose(got, S, rtol=RTOL, atol=1e-14)
    return reg


@pytest.mark.parametrize("name,params", CASES, ids=lambda c: str(c))
def test_every_round_equals_the_reference(name, params):
    rng = np.random.default_rng(0)
    X, y = data(rng)
    check_against_reference(name, params, X, y)
    check_against_reference(name, params, X, y, fit_intercept=False, sparse=True)
    w = rng.choice([0.0, 0.5, 1.0, 3.0], size=len(y))
    reg = check_against_reference(name, params, X, y, weights=w)
    # fit = one pass of partial_fit, the same model
    one = cwkit.make_regressor(name, intercept_scaling=1.0, **params).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(one.coef_, reg.coef_)
    assert one.t_ == reg.t_ == len(y)


def test_progressive_counters():
    rng = np.random.default_rng(1)
    X, y = data(rng)
    reg = cwkit.make_regressor("pa1", epsilon=0.2, intercept_scaling=1.0)
    noisy = y + rng.normal(size=len(y))
    reg.partial_fit(X, noisy, y_clean=y)
    preds = np.array([p for p, *_ in regression_run("pa1", X, noisy, epsilon=0.2)])
    assert reg.mistakes_ == int(np.sum(np.abs(y - preds) > 0.2))
    np.testing.assert_allclose(reg.squared_error_, np.sum((y - preds) ** 2), rtol=1e-12)
    np.testing.assert_allclose(reg.absolute_error_, np.sum(np.abs(y - preds)), rtol=1e-12)


def pa_optimum(w0, x, y, variant, C, eps):
    """The minimiser of 1/2 ||w - w0||^2 + C xi (PA-I), C xi^2 (PA-II), or with xi = 0
    (PA), subject to |w.x - y| <= eps + xi and xi >= 0, by a generic solver (SLSQP)."""
    d = len(w0)
    slack = {"pa": lambda xi: 0.0, "pa1": lambda xi: C * xi, "pa2": lambda xi: C * xi ** 2}
    cons = [{"type": "ineq", "fun": lambda z: eps + z[d] - (z[:d] @ x - y)},
            {"type": "ineq", "fun": lambda z: eps + z[d] + (z[:d] @ x - y)},
            {"type": "ineq", "fun": lambda z: z[d]}]
    if variant == "pa":
        cons.append({"type": "eq", "fun": lambda z: z[d]})
    res = minimize(lambda z: 0.5 * np.sum((z[:d] - w0) ** 2) + slack[variant](z[d]),
                   np.append(w0, 1.0), constraints=cons, method="SLSQP",
                   options={"ftol": 1e-14, "maxiter": 500})
    return res.x[:d]


@pytest.mark.parametrize("variant", ["pa", "pa1", "pa2"])
def test_pa_step_is_the_optimum_of_its_problem(variant):
    rng = np.random.default_rng(2)
    for _ in range(8):
        C, eps = rng.uniform(0.05, 2.0), rng.uniform(0.0, 0.5)
        w0, x, y = rng.normal(size=3), rng.normal(size=3), 3.0 * rng.normal()
        np.testing.assert_allclose(pa_step(w0, x, y, variant, C, eps),
                                   pa_optimum(w0, x, y, variant, C, eps), atol=1e-6)


def arow_mean_optimum(mu0, P0, x, y, r):
    """The minimiser of 1/2 (m - mu0)^T P0 (m - mu0) + (y - m.x)^2 / (2r), by BFGS."""
    return minimize(lambda m: 0.5 * (m - mu0) @ P0 @ (m - mu0) + (y - m @ x) ** 2 / (2 * r),
                    mu0, tol=1e-14).x


def test_arow_step_is_the_optimum_of_its_objective():
    """AROW regression's update minimises KL(N(mu, S) || N(mu_t, S_t)) + (y - mu.x)^2 /
    (2r) + x^T S x / (2r) ([AROW13] eq. 3 with the squared loss): the mean part against
    a generic solver, the covariance part by its stationarity condition."""
    rng = np.random.default_rng(3)
    for _ in range(5):
        A = rng.normal(size=(3, 3))
        S0 = A @ A.T + 0.5 * np.eye(3)
        mu0, x, y, r = rng.normal(size=3), rng.normal(size=3), rng.normal(), rng.uniform(0.1, 2)
        mu, S = arow_step(mu0, S0, x, y, r)
        P0 = np.linalg.inv(S0)
        np.testing.assert_allclose(mu, arow_mean_optimum(mu0, P0, x, y, r), atol=1e-6)
        # d/dS [1/2 (-log det S + tr(P0 S)) + x^T S x / (2r)] = 0: S^-1 = P0 + x x^T / r
        np.testing.assert_allclose(np.linalg.inv(S), P0 + np.outer(x, x) / r, rtol=1e-9)


def test_arow_full_is_ridge_regression_in_closed_form():
    """After T rows, mu = (X^T X / r + I / a)^-1 X^T y / r (the intercept a feature of
    value 1 with the same prior)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 5))
    y = X @ rng.normal(size=5) + 1.5 + 0.3 * rng.normal(size=200)
    r, a = 0.7, 3.0
    reg = cwkit.make_regressor("arow", r=r, a=a, covariance="full", intercept_scaling=1.0)
    reg.fit(X, y)
    Xa = np.hstack([X, np.ones((200, 1))])
    P = Xa.T @ Xa / r + np.eye(6) / a
    w = np.linalg.solve(P, Xa.T @ y / r)
    np.testing.assert_allclose(np.append(reg.coef_, reg.intercept_), w, rtol=1e-10)
    np.testing.assert_allclose(reg.covariance_, np.linalg.inv(P), rtol=1e-9, atol=1e-15)
    Xt = rng.normal(size=(50, 5))     # held-out rows: the same predictions
    np.testing.assert_allclose(reg.predict(Xt), np.hstack([Xt, np.ones((50, 1))]) @ w,
                               rtol=1e-10)


def test_pa1_equals_scikit_learn_sgd_pa_regressor():
    """PA-I regression is scikit-learn's SGDRegressor(loss="epsilon_insensitive",
    learning_rate="pa1") without an intercept; with one, scikit-learn leaves the
    constant feature out of ||x||^2 (docs/algorithms.md, "Regression")."""
    sklearn_lm = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 6))
    y = X @ rng.normal(size=6) + 0.2 * rng.normal(size=300)
    for C, eps in ((1.0, 0.1), (0.05, 0.0)):
        sgd = sklearn_lm.SGDRegressor(loss="epsilon_insensitive", epsilon=eps,
                                      learning_rate="pa1", eta0=C, penalty=None,
                                      shuffle=False, fit_intercept=False, max_iter=1, tol=None)
        sgd.fit(X, y)
        ours = cwkit.make_regressor("pa1", C=C, epsilon=eps, fit_intercept=False).fit(X, y)
        np.testing.assert_allclose(ours.coef_, sgd.coef_, rtol=1e-10)
        Xt = rng.normal(size=(40, 6))
        np.testing.assert_allclose(ours.predict(Xt), sgd.predict(Xt), rtol=1e-9)


def test_growth_files_and_state_on_bad_input(tmp_path):
    rng = np.random.default_rng(6)
    X, y = data(rng, d=6)
    for name, params in CASES:
        grown = cwkit.make_regressor(name, **params)
        grown.partial_fit(sp.csr_matrix(X[:10, :3]), y[:10])
        grown.partial_fit(sp.csr_matrix(X[10:]), y[10:])      # wider rows grow the model
        padded = np.hstack([X[:10, :3], np.zeros((10, 3))])
        whole = cwkit.make_regressor(name, **params).partial_fit(
            sp.csr_matrix(np.vstack([padded, X[10:]])), y)
        np.testing.assert_allclose(grown.coef_, whole.coef_, rtol=RTOL, atol=1e-15)
        path = tmp_path / f"{name}.npz"
        cwkit.save(grown, path)
        back = cwkit.load(path)
        assert type(back) is type(grown) and back.get_params() == grown.get_params()
        np.testing.assert_array_equal(back.predict(X), grown.predict(X))
        back.partial_fit(X, y)
        grown.partial_fit(X, y)
        np.testing.assert_array_equal(back.coef_, grown.coef_)
        assert cwkit.describe(back)["rule"] == name
        before = grown.coef_.copy()
        bad = y.copy()
        bad[7] = np.inf
        with pytest.raises(ValueError, match="row 7: the target is inf"):
            grown.partial_fit(X, bad)
        with pytest.raises(ValueError, match="X has 2 features, but"):
            grown.partial_fit(X[:, :2], y)
        np.testing.assert_array_equal(grown.coef_, before)


def test_names_refusals_and_the_rule_table():
    assert {rules.RULE_OF[n] for n in NAMES} == rules.REGRESSION_RULES
    assert [e["name"] for e in cwkit.regressors()] == NAMES
    with pytest.raises(ValueError, match="cw has no regression form.*no source defines"):
        cwkit.make_regressor("cw")
    with pytest.raises(ValueError, match="takes no 'multiclass'"):
        cwkit.make_regressor("pa1", multiclass="ovr")
    with pytest.raises(ValueError, match="cwkit.make_regressor"):
        cwkit.make("pa1").fit([[0.0], [1.0], [2.0]], [0.5, 1.5, 2.25])
    reg = cwkit.make_regressor("pa")
    assert not hasattr(reg, "predict_proba") and not hasattr(reg, "decision_function")


def test_score_is_r2():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(7)
    X, y = data(rng, n=60)
    reg = cwkit.make_regressor("arow", r=0.1).fit(X, y)
    w = rng.random(60)
    assert reg.score(X, y) == pytest.approx(sklearn_metrics.r2_score(y, reg.predict(X)),
                                            rel=1e-12)
    assert reg.score(X, y, sample_weight=w) == pytest.approx(
        sklearn_metrics.r2_score(y, reg.predict(X), sample_weight=w), rel=1e-12)


#: The PA rules are one online pass over a stream, as scikit-learn's SGDRegressor is: a
#: row of weight s is not s copies of the row in a shuffled stream, and scikit-learn
#: expects its own SGDRegressor to fail these two checks.  AROW regression (full
#: covariance, which the checks' narrow dense rows choose) is recursive least squares,
#: the same model in any order with a weight s its s copies: it passes every check.
ONLINE_WEIGHTS = {name: "sample_weight is not equivalent to removing/repeating samples."
                  for name in ("check_sample_weight_equivalence_on_dense_data",
                               "check_sample_weight_equivalence_on_sparse_data")}


@pytest.mark.filterwarnings("ignore:Estimator .* does not inherit from")
@pytest.mark.parametrize("name", NAMES)
def test_check_estimator(name):
    """scikit-learn's checks: every one passes, but for the PA rules the two that
    scikit-learn's SGDRegressor fails as well (``ONLINE_WEIGHTS``)."""
    pytest.importorskip("sklearn")
    from sklearn.utils.estimator_checks import check_estimator
    expected = {} if name == "arow" else ONLINE_WEIGHTS
    results = check_estimator(cwkit.make_regressor(name), expected_failed_checks=expected,
                              on_fail=None)
    failed = {r["check_name"] for r in results if r["status"] == "xfail"}
    assert failed == set(expected)
    assert not [r for r in results if r["status"] == "failed"]


@pytest.mark.parametrize("name,params", [CASES[1], CASES[3], CASES[4]], ids=lambda c: str(c))
def test_average_is_the_mean_of_the_rounds(name, params):
    """average=True predicts with the mean of the weights after rounds 1..T (the
    classifiers' averaging), the last iterate's learning unchanged."""
    rng = np.random.default_rng(8)
    X, y = data(rng)
    ref = regression_run(name, X, y, **_ref_params(params))
    avg = cwkit.make_regressor(name, average=True, intercept_scaling=1.0, **params)
    last = cwkit.make_regressor(name, intercept_scaling=1.0, **params)
    for i in range(len(y)):
        avg.partial_fit(X[i:i + 1], y[i:i + 1])
        last.partial_fit(X[i:i + 1], y[i:i + 1])
        mean = np.mean([np.append(c, b) for _, c, b, _ in ref[:i + 1]], axis=0)
        np.testing.assert_allclose(np.append(avg.coef_, avg.intercept_), mean, rtol=1e-10,
                                   atol=1e-13)
    assert avg.squared_error_ == last.squared_error_     # the same online predictions
