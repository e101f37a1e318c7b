"""Model files written by the previous release (5cd7be8) load into today's layouts.

Two layouts changed since: averaged models whose driver kept no lazy sum
(``avg_u`` / ``avg_t`` of the former per-row wrapper, now each driver's ``u``),
and kernel models (``aux`` of 5 values, now 8; the averaged kernel Perceptron's
sum).  The files in ``data/old_models.tar.xz`` were written by that release with
``data/make_old_models.py`` (its docstring says how: a worktree of 5cd7be8 built
in its own venv, then ``PYTHONPATH=<it> python make_old_models.py`` in
``tests/data``): each model fitted on the first 8 of 12 rows, with the
decision_function the old release computed on all 12 rows in ``decisions.npz``.
A loaded file must give those decisions and, where today's rule is the old one,
continue learning (partial_fit on the last 4 rows) as today's model fitted on the
same 8 rows does.
"""
import importlib.util
import tarfile
from pathlib import Path

import numpy as np
import pytest

import cwkit

DATA = Path(__file__).parent / "data"
_spec = importlib.util.spec_from_file_location("make_old_models", DATA / "make_old_models.py")
old = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(old)

#: Files whose model continues under a rule that changed: the "oldest" budget of the
#: first-order duals now shrinks first (the Forgetron), so no fit of today's matches.
NEW_RULE = {"k_pa1_budget"}
LOADED = sorted(old.MODELS)
#: Budgeted files: the old file does not record how many support vectors were ever
#: added (the Forgetron's M), which rules with their own shrinkage never read.
BUDGETED = {"k_regpa_budget"}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    out = tmp_path_factory.mktemp("old_models")
    with tarfile.open(DATA / "old_models.tar.xz") as tar:
        for member in tar.getmembers():
            (out / member.name).write_bytes(tar.extractfile(member).read())
    return out


def _data(name):
    X, y2, y3 = old.rows()
    return X, (y3 if old.MODELS[name][2] else y2)


@pytest.mark.parametrize("name", LOADED)
def test_old_file_decides_as_the_old_release(files, name):
    X, y = _data(name)
    recorded = np.load(files / "decisions.npz")[name]
    est = cwkit.load(files / f"{name}.cwk")
    np.testing.assert_allclose(est.decision_function(X), recorded, rtol=1e-12, atol=1e-15)
    scores = recorded if recorded.ndim == 1 else recorded.argmax(axis=1)
    expect = est.classes_[(scores > 0).astype(int) if recorded.ndim == 1 else scores]
    assert (est.predict(X) == expect).all()


@pytest.mark.parametrize("name", sorted(set(LOADED) - NEW_RULE))
def test_old_file_continues_as_todays_fit(files, name):
    X, y = _data(name)
    est = cwkit.load(files / f"{name}.cwk")
    # today's fit with the choices the file made (a kernel file from before gamma_ was
    # kept: gamma None was 1 / n_features then)
    fresh = type(est)(**est.resolved_params()).fit(X[:8], y[:8])
    est.partial_fit(X[8:], y[8:])
    fresh.partial_fit(X[8:], y[8:])
    np.testing.assert_allclose(est.decision_function(X), fresh.decision_function(X),
                               rtol=1e-12, atol=1e-14)
    if hasattr(fresh, "coef_"):      # (kernel models have none)
        np.testing.assert_allclose(est.coef_, fresh.coef_, rtol=1e-12, atol=1e-14)
    for key, value in fresh._model.state.items():
        got = np.array(est._model.state[key])
        if key == "aux" and name in BUDGETED:
            got[cwkit._core.KAUX_M] = value[cwkit._core.KAUX_M]
        np.testing.assert_allclose(got, value, rtol=1e-12, atol=1e-14, err_msg=key)
    assert (est.t_, est.n_updates_) == (fresh.t_, fresh.n_updates_)


def test_old_budgeted_model_continues_under_the_forgetron(files):
    """The former "oldest" budget removed without shrinking; the upgraded model's
    Forgetron starts from the support set held (Q = 0, M = its size) and shrinks."""
    X, y = _data("k_pa1_budget")
    est = cwkit.load(files / "k_pa1_budget.cwk")
    aux = est._model.state["aux"]
    assert aux[cwkit._core.KAUX_Q] == 0 and aux[cwkit._core.KAUX_M] == aux[cwkit._core.KAUX_N]
    est.partial_fit(X[8:], y[8:])
    aux = est._model.state["aux"]
    assert aux[cwkit._core.KAUX_Q] > 0 and aux[cwkit._core.KAUX_N] == 4
    assert np.isfinite(est.decision_function(X)).all()


def test_old_averaged_sums_are_checked(files, tmp_path):
    """avg_u without avg_t is a damaged file, named as such."""
    with np.load(files / "avg_l1pa.cwk") as z:
        arrays = {k: z[k] for k in z.files if k != "state/avg_t"}
    with open(tmp_path / "m.cwk", "wb") as f:
        np.savez(f, **arrays)
    with pytest.raises(cwkit.ModelFileError, match="damaged .*avg_u and avg_t"):
        cwkit.load(tmp_path / "m.cwk")


@pytest.mark.parametrize("name", LOADED)
def test_old_file_is_described_without_provenance(files, name):
    """A file of the earlier release records no provenance: describe says so (empty) and
    reads the rest as today's."""
    est = cwkit.load(files / f"{name}.cwk")
    described = cwkit.describe(est, top=3)
    assert described["provenance"] == {} and described["hash_bits"] is None
    assert described["counters"]["t_"] == est.t_
    assert described["classes"] == est.classes_.tolist()
