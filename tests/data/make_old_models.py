"""Write the model files of tests/test_model_files_compat.py with the previous release.

Run with cwkit 5cd7be8 (the release whose layouts these are) importable, in this folder:
``git worktree add /tmp/wt-old5 5cd7be8``, build it in a venv with numpy, scipy,
cython and setuptools>=77 (``python setup.py build_ext --inplace``), then
``PYTHONPATH=/tmp/wt-old5 python make_old_models.py``.  Each model is fitted on
the first 8 rows of ``rows()`` and saved as ``<name>.cwk``; ``decisions.npz`` holds
its decision_function on all 12 rows as the old release computed it.  The files go
into one ``old_models.tar.xz`` (they share most of their bytes: 11 KB instead of 32).
"""
import tarfile
import tempfile
from pathlib import Path

import numpy as np

import cwkit

#: file name -> (registry name, parameters, multi-class labels?)
MODELS = {
    "avg_full_arow": ("arow", dict(covariance="full", average=True), False),
    "avg_bpa1": ("bpa1", dict(batch_size=3, average=True), False),
    "avg_top1_sop": ("sop", dict(covariance="full", average=True), True),
    "avg_l1pa": ("l1-pa", dict(average=True), False),
    "avg_topk_pa1": ("pa1", dict(average=True, multiclass="topk", k=2), True),
    "avg_ovr_full_arow": ("arow", dict(covariance="full", average=True, multiclass="ovr"),
                          True),
    "avg_adagrad": ("adagrad", dict(average=True, lam=0.05), True),
    "avg_ovr_adagrad": ("adagrad", dict(average=True, lam=0.05, multiclass="ovr"), True),
    "avg_top1_sop_diag": ("sop", dict(covariance="diag", average=True), True),
    "avg_top1_bpa1": ("bpa1", dict(batch_size=3, average=True), True),
    "avg_top1_l1pa": ("l1-pa", dict(average=True), True),
    "k_pa1": ("pa1", dict(kernel="rbf"), False),
    "k_pa1_budget": ("pa1", dict(kernel="rbf", budget=4), False),
    "k_arow": ("arow", dict(kernel="rbf"), False),
    "k_avg_perceptron": ("avg-perceptron", dict(kernel="poly"), False),
    "k_regpa_budget": ("reg-pa", dict(kernel="rbf", budget=4), False),
    "k_top1_pa1": ("pa1", dict(kernel="rbf"), True),
}


def rows():
    """12 rows of 2 features; binary and 3-class labels."""
    X = np.random.default_rng(0).normal(size=(12, 2))
    y3 = np.argmax(np.c_[X, np.full(len(X), 0.2)], axis=1)
    return X, (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int), y3


if __name__ == "__main__":
    X, y2, y3 = rows()
    decisions = {}
    with tempfile.TemporaryDirectory() as tmp, tarfile.open("old_models.tar.xz", "w:xz") as tar:
        for name, (reg, params, multi) in MODELS.items():
            est = cwkit.make(reg, **params).fit(X[:8], (y3 if multi else y2)[:8])
            cwkit.save(est, Path(tmp, name + ".cwk"))
            tar.add(Path(tmp, name + ".cwk"), name + ".cwk")
            decisions[name] = est.decision_function(X)
        np.savez(Path(tmp, "decisions.npz"), **decisions)
        tar.add(Path(tmp, "decisions.npz"), "decisions.npz")
