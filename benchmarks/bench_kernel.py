"""Kernel prediction against scikit-learn's SVC.decision_function, same support set.

An RBF SVC is fitted (scikit-learn, installed by this script's user, not by cwkit);
its support vectors and dual coefficients are copied into a cwkit kernel model
(the dual state is plain arrays), both decision functions are checked to agree, and
the time of scoring n rows is compared, best of --repeat interleaved rounds.
Prints one tab-separated row per case and the ratio (SVC time / cwkit time: > 1
means cwkit is faster).

usage: python benchmarks/bench_kernel.py [--repeat 5]
"""
import argparse
import sys
import time

import numpy as np
import scipy.sparse as sp

import cwkit


def copy_svc(svc, X, y, gamma, sparse):
    """A cwkit kernel PA-I holding the SVC's support set and coefficients."""
    est = cwkit.make("pa1", kernel="rbf", gamma=gamma, fit_intercept=False)
    est.partial_fit(X[:1], y[:1], classes=np.unique(y))
    model = est._model
    S = sp.csr_matrix(svc.support_vectors_)
    S.sort_indices()
    S.eliminate_zeros()
    n = S.shape[0]
    st = model.state
    st["sv_data"] = S.data.astype(np.float64)
    st["sv_indices"] = S.indices.astype(np.float64)
    st["sv_indptr"] = S.indptr.astype(np.float64)
    st["sv_sqn"] = np.asarray(S.multiply(S).sum(axis=1)).ravel()
    dual = svc.dual_coef_.toarray() if sp.issparse(svc.dual_coef_) else svc.dual_coef_
    st["coef"] = np.ascontiguousarray(dual.T)
    st["u"] = np.zeros((0, 1))
    st["aux"][:] = [1.0, 0.0, 0.0, n, S.nnz]
    assert model.state_problem() is None, model.state_problem()
    return est


def seconds(fn, X):
    t = time.perf_counter()
    fn(X)
    return time.perf_counter() - t


def main(argv=None):
    try:
        from sklearn.svm import SVC
    except ImportError:
        sys.exit("bench_kernel.py needs scikit-learn (pip install scikit-learn)")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    print("case\tn_test\tn_SV\td\tsvc_s\tcwkit_s\tratio")
    for d, n_train, n_test, density in ((20, 2000, 20000, 1.0), (300, 2000, 5000, 1.0),
                                        (5000, 2000, 5000, 0.01)):
        X = rng.normal(size=(n_train + n_test, d))
        if density < 1:
            X = sp.random(n_train + n_test, d, density=density, random_state=0,
                          data_rvs=rng.standard_normal, format="csr")
        w = rng.normal(size=d)
        y = np.where(X @ w + 0.5 * rng.normal(size=X.shape[0]) > 0, 1, -1)
        Xtr, Xte = X[:n_train], X[n_train:]
        gamma = 1.0 / d
        svc = SVC(kernel="rbf", gamma=gamma, C=1.0).fit(Xtr, y[:n_train])
        est = copy_svc(svc, Xtr, y, gamma, sp.issparse(X))
        ref = svc.decision_function(Xte) - svc.intercept_[0]
        np.testing.assert_allclose(est.decision_function(Xte), ref, rtol=1e-9, atol=1e-9)
        t_svc = t_cw = np.inf
        for _ in range(args.repeat):       # interleaved
            t_svc = min(t_svc, seconds(svc.decision_function, Xte))
            t_cw = min(t_cw, seconds(est.decision_function, Xte))
        kind = "csr" if sp.issparse(X) else "dense"
        print(f"{kind}\t{n_test}\t{len(svc.support_)}\t{d}\t{t_svc:.4f}\t{t_cw:.4f}\t"
              f"{t_svc / t_cw:.2f}")


if __name__ == "__main__":
    main()
