"""Every binary rule against the plain numpy reference, state compared after every round."""
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import OTHER_SHAPES, case_id, last_iterate, make_binary
from reference import binary_run, binary_scores


RTOL = 1e-12


def _ref_params(name, params):
    p = {k: v for k, v in params.items() if k != "covariance"}
    return p


def _est_state(est, full):
    out = {"coef": est.coef_[0], "intercept": est.intercept_[0]}
    if hasattr(type(est), "coef_var_"):
        if full:
            out["covariance"] = est.covariance_
        else:
            out["coef_var"] = est.coef_var_[0]
            out["intercept_var"] = est.intercept_var_[0]
    return out


def _close(a, b, what, rnd):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=RTOL * scale,
                               err_msg=f"{what} differs after round {rnd}")


def _compare_run(name, params, X, y, sparse, fit_intercept):
    full = params.get("covariance") == "full"
    ref = binary_run(name, X, y, fit_intercept=fit_intercept,
                     covariance=params.get("covariance", "diag"), **_ref_params(name, params))
    est = last_iterate(name, fit_intercept=fit_intercept, **params)
    Xin = sp.csr_matrix(X) if sparse else X
    for t, (mistake, state) in enumerate(ref):
        est.partial_fit(Xin[t:t + 1], y[t:t + 1], classes=[-1, 1])
        assert est.last_mistakes_ == int(mistake), f"mistake differs in round {t}"
        got = _est_state(est, full)
        for key, val in state.items():
            if key == "intercept_var" and not fit_intercept:
                continue
            _close(got[key], val, key, t)
    assert est.t_ == len(y)
    scores = binary_scores(name, ref[-1][1], X, fit_intercept=fit_intercept,
                           covariance=params.get("covariance", "diag"))
    _close(est.decision_function(Xin), scores, "decision_function", len(y))
    return est


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["icpt", "noicpt"])
def test_rule_matches_reference_every_round(binary_case, sparse, fit_intercept):
    name, params = binary_case
    rng = np.random.default_rng(7)
    X, y = make_binary(rng, n=40, d=5, zero_rows=(3,), sparse_frac=0.3)
    _compare_run(name, params, X, y, sparse, fit_intercept)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("case", OTHER_SHAPES, ids=[case_id(c) for c in OTHER_SHAPES])
def test_other_shapes_match_reference_every_round(case, sparse):
    name, params = case
    rng = np.random.default_rng(8)
    X, y = make_binary(rng, n=40, d=5, zero_rows=(3,), sparse_frac=0.3)
    _compare_run(name, params, X, y, sparse, True)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["icpt", "noicpt"])
def test_l2_pa_with_binding_norm_constraint(sparse, fit_intercept):
    """Unit-norm rows and beta = 1.5: feasible on every round, and ||w|| <= beta binds."""
    rng = np.random.default_rng(5)
    X, y = make_binary(rng, n=60, d=5)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    est = _compare_run("l2-pa", {"beta": 1.5}, X, y, sparse, fit_intercept)
    w = np.append(est.coef_[0], est.intercept_[0])
    assert np.linalg.norm(w) == pytest.approx(1.5, rel=1e-9)


def test_total_mistakes_of_one_pass_match_reference(binary_case):
    """One partial_fit call over many rows counts the same mistakes as the reference."""
    name, params = binary_case
    rng = np.random.default_rng(11)
    X, y = make_binary(rng, n=300, d=8)
    ref = binary_run(name, X, y, covariance=params.get("covariance", "diag"),
                     **_ref_params(name, params))
    est = last_iterate(name, **params).partial_fit(X, y)
    assert est.mistakes_ == sum(m for m, _ in ref)
    _close(est.coef_[0], ref[-1][1]["coef"], "coef", len(y))


@pytest.mark.parametrize("name", ["cw", "arow"])
@pytest.mark.parametrize("covariance", ["diag", "full"])
def test_predict_confidence_is_gaussian_probability(name, covariance):
    """P(+1) = Phi(mu.x / sqrt(x^T Sigma x)), computed here from the fitted attributes."""
    from scipy.special import ndtr
    rng = np.random.default_rng(3)
    X, y = make_binary(rng, n=60, d=4)
    est = last_iterate(name, covariance=covariance).fit(X, y)
    Xa = np.hstack([X, np.ones((len(X), 1))])
    mu = np.append(est.coef_[0], est.intercept_[0])
    S = (est.covariance_ if covariance == "full"
         else np.diag(np.append(est.coef_var_[0], est.intercept_var_[0])))
    p = ndtr(Xa @ mu / np.sqrt(np.einsum("ij,jk,ik->i", Xa, S, Xa)))
    proba = est.predict_confidence(X)
    np.testing.assert_allclose(proba[:, 1], p, rtol=1e-10)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


@pytest.mark.parametrize("intercept", [False, True])
def test_diagonal_inverse_update_keeps_its_guards(intercept):
    """The diagonal update 1/sigma_i += c x_i^2 computed in bulk without branches
    (cwkit/_binary.pxi `diag_step`) gives NaN where a guard of `inv_diag_update`
    applies: c = inf (AROW with a subnormal r) on an explicit zero feature, and a
    collapsed variance 0 under a feature whose square overflows.  Those variances
    must be the guarded ones (unchanged), not NaN nor an overflow error."""
    X1 = sp.csr_matrix((np.array([1.0, 0.0, 2.0]), np.array([0, 1, 2], dtype=np.int32),
                        np.array([0, 3])), shape=(1, 3))
    X2 = sp.csr_matrix((np.array([1e160, 1.0]), np.array([0, 1], dtype=np.int32),
                        np.array([0, 2])), shape=(1, 3))
    est = last_iterate("arow", r=1e-320, covariance="diag", fit_intercept=intercept)
    est.partial_fit(X1, [1.0], classes=[-1.0, 1.0])
    # c = 1/r = inf: sigma / (1 + inf) = 0 where x != 0; the stored zero keeps 1
    np.testing.assert_array_equal(est.coef_var_[0], [0.0, 1.0, 0.0])
    est.partial_fit(X2, [-1.0])      # x_0^2 = inf on sigma_0 = 0: stays 0
    np.testing.assert_array_equal(est.coef_var_[0], [0.0, 0.0, 0.0])
    assert np.all(np.isfinite(est.coef_)) and est.coef_[0, 1] < -1e159    # an update made
