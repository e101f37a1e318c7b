"""The choices that defaults leave to the data: covariance="auto"."""
import numpy as np
import pytest
import scipy.sparse as sp

import cwkit
from cwkit import linear
from cwkit.models import rules
from cwkit.models.size import LIMIT_VARIABLE, ModelSizeError

SECOND_ORDER = [*rules.names_of(rules.GAUSSIAN_RULES), "sop"]


def _dense(n=60, d=5, K=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.argmax(X[:, :K], axis=1) if K > 2 else (X[:, 0] > 0).astype(int)
    return X, y


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_auto_is_the_default_and_settles_on_the_data(name):
    assert cwkit.make(name).covariance == "auto"
    X, y = _dense()
    assert cwkit.make(name).fit(X, y).covariance_type_ == "full"
    # the same rows made sparse: 1 entry in 20 nonzero, below AUTO_DENSITY
    Xs = np.zeros((60, 20))
    Xs[:, 0] = X[:, 0]
    assert cwkit.make(name).fit(Xs, y).covariance_type_ == "diag"
    # wide: D^2 above AUTO_FULL_DIM^2
    Xw = np.random.default_rng(1).normal(size=(60, linear.AUTO_FULL_DIM))
    assert cwkit.make(name).fit(Xw, y).covariance_type_ == "diag"
    # explicit values are kept whatever the data
    assert cwkit.make(name, covariance="diag").fit(X, y).covariance_type_ == "diag"
    assert cwkit.make(name, covariance="full").fit(Xs, y).covariance_type_ == "full"


@pytest.mark.parametrize("name", SECOND_ORDER)
@pytest.mark.parametrize("K, strategy", [(2, "top1"), (4, "top1"), (4, "ovr")])
def test_auto_gives_exactly_the_model_of_its_choice(name, K, strategy):
    X, y = _dense(K=K)
    auto = cwkit.make(name, multiclass=strategy).fit(X, y)
    chosen = cwkit.make(name, multiclass=strategy, covariance=auto.covariance_type_).fit(X, y)
    np.testing.assert_array_equal(auto.coef_, chosen.coef_)
    np.testing.assert_array_equal(auto.decision_function(X), chosen.decision_function(X))


def test_the_model_size_rule_of_each_reduction():
    """Full when D^2 (binary), K D^2 (one-vs-rest), (K D)^2 (top-1) <= AUTO_FULL_DIM^2."""
    n = linear.AUTO_FULL_DIM
    d_top1 = n // 4 - 1                    # K D = n with K = 4: the largest full top-1
    X, y = _dense(n=80, d=d_top1 + 1, K=4)
    assert cwkit.make("arow").fit(X[:, :d_top1], y).covariance_type_ == "full"
    assert cwkit.make("arow").fit(X, y).covariance_type_ == "diag"
    d_ovr = int(n / 2) - 1                 # K D^2 = n^2 with K = 4: D = n / 2
    X, y = _dense(n=80, d=d_ovr + 1, K=4)
    assert cwkit.make("arow", multiclass="ovr").fit(X[:, :d_ovr], y).covariance_type_ == "full"
    assert cwkit.make("arow", multiclass="ovr").fit(X, y).covariance_type_ == "diag"
    X, y = _dense(n=80, d=n)
    assert cwkit.make("arow").fit(X[:, :n - 1], y).covariance_type_ == "full"
    assert cwkit.make("arow").fit(X, y).covariance_type_ == "diag"


def test_density_is_judged_on_values_so_dense_and_csr_agree():
    X, y = _dense(n=50, d=12)
    X[:, 1:] = 0.0
    X[::4, 1] = 1.0                       # density (50 + 13) / 600 = 0.105: dense
    csr = sp.csr_matrix(X)
    indptr = csr.indptr.copy()
    indptr[-1] += 1                       # an explicit zero in the last row, column 5
    explicit = sp.csr_matrix((np.append(csr.data, 0.0), np.append(csr.indices, 5), indptr),
                             shape=X.shape)
    assert explicit.nnz == csr.nnz + 1
    choices = {cwkit.make("cw").fit(A, y).covariance_type_ for A in (X, csr, explicit)}
    assert choices == {"full"}
    X[::4, 1] = 0.0                       # 50 / 600 = 0.083: sparse
    choices = {cwkit.make("cw").fit(A, y).covariance_type_ for A in (X, sp.csr_matrix(X))}
    assert choices == {"diag"}


def test_the_choice_is_made_once_at_the_first_call():
    X, y = _dense(n=40, d=12)
    sparse_rows = np.zeros_like(X)
    sparse_rows[:, 0] = X[:, 0]
    est = cwkit.make("arow").partial_fit(sparse_rows[:10], y[:10], classes=[0, 1])
    assert est.covariance_type_ == "diag"
    est.partial_fit(X[10:], y[10:])        # dense rows later: the model keeps its shape
    assert est.covariance_type_ == "diag"
    assert est.fit(X, y).covariance_type_ == "full"     # fit starts again, and chooses again


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_the_choice_is_saved_and_loaded(tmp_path, name):
    X, y = _dense()
    path = tmp_path / "m.cwk"
    for rows in (X, np.hstack([X[:, :1], np.zeros((60, 30))])):
        est = cwkit.make(name).fit(rows, y)
        cwkit.save(est, path)
        back = cwkit.load(path)
        assert back.covariance == "auto" and back.covariance_type_ == est.covariance_type_
        np.testing.assert_array_equal(back.decision_function(rows), est.decision_function(rows))


def test_a_file_without_the_choice_uses_its_explicit_covariance(tmp_path):
    """Files written before "auto" existed hold covariance="diag" or "full" and no choice."""
    import json
    X, y = _dense()
    path = tmp_path / "m.cwk"
    cwkit.save(cwkit.make("arow", covariance="full").fit(X, y), path)
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays["__meta__"].tobytes())
    del meta["choices"], meta["params"]["intercept_scaling"]     # as such files are
    meta["params"]["r"] = 1.0                  # (AROW's r had no "auto" either)
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    assert cwkit.load(path).covariance_type_ == "full"
    meta["params"]["covariance"] = "auto"   # "auto" without its choice: a damaged file
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    with pytest.raises(cwkit.ModelFileError, match="covariance_type_"):
        cwkit.load(path)


def test_the_model_size_check_sees_the_chosen_shape(monkeypatch):
    X, y = _dense(n=20, d=100)
    monkeypatch.setenv(LIMIT_VARIABLE, str(8 * 2 * 101 + 8))     # a diagonal fits, a full not
    assert cwkit.make("arow", covariance="diag").fit(X, y).covariance_type_ == "diag"
    with pytest.raises(ModelSizeError, match="covariance='diag' instead of 'full'"):
        cwkit.make("arow").fit(X, y)


# -- intercept_scaling -------------------------------------------------------------------
NAMES = [a["name"] for a in cwkit.algorithms()]


def test_auto_intercept_scaling_is_1_on_dense_rows_and_0_1_on_sparse_ones():
    X, y = _dense(n=40, d=12)
    sparse_rows = np.zeros_like(X)
    sparse_rows[:, 0] = X[:, 0]           # 1 entry in 12: below AUTO_DENSITY
    for name in NAMES:
        assert cwkit.make(name).intercept_scaling == "auto"
        assert cwkit.make(name).fit(X, y).intercept_scaling_ == 1.0
        # l1-pa keeps 1: beta ||x~||_inf > 1, the condition of a feasible update, then
        # holds on every row for beta > 1; the Perceptron, AdaGrad and AROW were better
        # with 1
        sparse_value = 1.0 if name in ("l1-pa", "perceptron", "avg-perceptron",
                                       "adagrad", "arow", "arow-h") else 0.1
        for rows in (sparse_rows, sp.csr_matrix(sparse_rows)):
            assert cwkit.make(name).fit(rows, y).intercept_scaling_ == sparse_value
        assert cwkit.make(name, intercept_scaling=0.3).fit(X, y).intercept_scaling_ == 0.3


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("K", [2, 4])
def test_intercept_scaling_is_a_constant_feature_of_that_value(name, K):
    """The reference: the same rule without intercept on X with a column of value b."""
    b = 0.3
    X, y = _dense(n=50, d=4, K=K, seed=3)
    est = cwkit.make(name, intercept_scaling=b).fit(X, y)
    ref = cwkit.make(name, fit_intercept=False, intercept_scaling=b).fit(
        np.hstack([X, np.full((50, 1), b)]), y)
    np.testing.assert_allclose(est.coef_, ref.coef_[:, :4], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(est.intercept_, b * ref.coef_[:, 4], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(est.decision_function(X),
                               ref.decision_function(np.hstack([X, np.full((50, 1), b)])),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("covariance", ["diag", "full"])
def test_variances_of_the_intercept_are_of_intercept_(covariance):
    b = 0.3
    X, y = _dense(n=50, d=4, seed=3)
    est = cwkit.make("arow", covariance=covariance, intercept_scaling=b).fit(X, y)
    ref = cwkit.make("arow", covariance=covariance, fit_intercept=False).fit(
        np.hstack([X, np.full((50, 1), b)]), y)
    if covariance == "diag":
        np.testing.assert_allclose(est.intercept_var_, b * b * ref.coef_var_[:, 4], rtol=1e-12)
    else:
        scale = np.array([1.0, 1.0, 1.0, 1.0, b])
        np.testing.assert_allclose(est.covariance_, ref.covariance_[:5, :5]
                                   * np.outer(scale, scale), rtol=1e-12, atol=1e-300)


def test_intercept_scaling_is_saved_and_old_files_keep_1(tmp_path):
    import json
    X, y = _dense()
    sparse_rows = np.hstack([X[:, :1], np.zeros((60, 30))])
    path = tmp_path / "m.cwk"
    est = cwkit.make("pa1").fit(sparse_rows, y)
    cwkit.save(est, path)
    back = cwkit.load(path)
    assert back.intercept_scaling_ == 0.1
    np.testing.assert_array_equal(back.decision_function(sparse_rows),
                                  est.decision_function(sparse_rows))
    # a file written before intercept_scaling existed: no such parameter, a feature of 1
    old = cwkit.make("pa1", intercept_scaling=1.0).fit(sparse_rows, y)
    cwkit.save(old, path)
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays["__meta__"].tobytes())
    del meta["params"]["intercept_scaling"], meta["choices"]
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    back = cwkit.load(path)
    assert back.intercept_scaling == 1.0 and back.intercept_scaling_ == 1.0
    np.testing.assert_array_equal(back.decision_function(sparse_rows),
                                  old.decision_function(sparse_rows))


@pytest.mark.parametrize("name", ["arow", "arow-h"])
def test_arow_auto_r_is_1_on_dense_rows_and_scaled_to_the_rows_on_sparse_ones(name):
    X, y = _dense(n=1500, d=12)
    assert cwkit.make(name).r == "auto"
    assert cwkit.make(name).fit(X, y).r_ == 1.0
    sparse_rows = np.zeros_like(X)
    sparse_rows[:, 0] = 3.0 * X[:, 0]           # 1 entry in 12: below AUTO_DENSITY
    sparse_rows[7, 0] = 0.0                     # an all-zero row counts in the mean
    # the mean squared norm of the first AUTO_ROWS (1000) rows, by a plain loop
    norm2 = sum(float(row @ row) for row in sparse_rows[:1000]) / 1000
    for rows in (sparse_rows, sp.csr_matrix(sparse_rows)):
        est = cwkit.make(name).fit(rows, y)
        np.testing.assert_allclose(est.r_, 0.1 * norm2, rtol=1e-12)
        assert est.resolved_params()["r"] == est.r_
        # exactly the model of the explicit value
        ref = cwkit.make(name, r=est.r_, intercept_scaling=1.0).fit(rows, y)
        np.testing.assert_array_equal(est.coef_, ref.coef_)
    assert cwkit.make(name).fit(np.zeros((5, 40)), [0, 1, 0, 1, 0]).r_ == 0.1   # no norm
    assert cwkit.make(name, r=2.0).fit(sparse_rows, y).r_ == 2.0


def test_arow_r_choice_is_saved_and_a_damaged_file_is_refused(tmp_path):
    import json
    X, y = _dense()
    rows = sp.csr_matrix(np.hstack([X[:, :1], np.zeros((60, 30))]))
    path = tmp_path / "m.cwk"
    est = cwkit.make("arow").fit(rows, y)
    cwkit.save(est, path)
    back = cwkit.load(path)
    assert back.r == "auto" and back.r_ == est.r_
    np.testing.assert_array_equal(back.decision_function(rows), est.decision_function(rows))
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays["__meta__"].tobytes())
    del meta["choices"]["r_"]          # "auto" without its choice
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    with pytest.raises(cwkit.ModelFileError, match="r_"):
        cwkit.load(path)


def test_intercept_scaling_is_validated():
    with pytest.raises(ValueError, match="intercept_scaling"):
        cwkit.make("pa1", intercept_scaling=0.0).fit(*_dense())
    with pytest.raises(ValueError, match="intercept_scaling"):
        cwkit.make("pa1", intercept_scaling="none").fit(*_dense())
