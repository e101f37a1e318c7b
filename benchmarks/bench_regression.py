"""One pass of PA-I regression against scikit-learn's SGD PA regressor, on the same CSR.

The rows are ``_synth.text_like``'s (unit-norm text-like CSR, 2**20 features, about 100
nonzeros a row); the targets are a random hyperplane's scores plus Gaussian noise.
scikit-learn's pass is ``SGDRegressor(loss="epsilon_insensitive", learning_rate="pa1",
eta0=C, penalty=None, shuffle=False).partial_fit`` (the replacement of its deprecated
``PassiveAggressiveRegressor``); cwkit's is ``make_regressor("pa1").partial_fit``, and the
diagonal AROW regression (recursive least squares) pass is timed beside them.  Prints
one tab-separated row per learner (learner, seconds, rows/s, ratio of its speed to
scikit-learn's, progressive mean squared error where the learner counts one) and the
processor.  Target: PA-I regression >= 1.2x scikit-learn's pass, in the same run.

    python benchmarks/bench_regression.py                    # 100,000 x 2**20
    python benchmarks/bench_regression.py --rows 20000       # quicker
"""
import argparse
import platform
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _synth  # noqa: E402
from bench_core import best_of_interleaved  # noqa: E402
from bench_growth import processor_name  # noqa: E402

import cwkit  # noqa: E402


def regression_rows(n_rows, n_features, nnz, seed=0):
    """CSR rows and real targets: a random hyperplane's scores, plus noise of sd 0.1."""
    X, _ = _synth.text_like(n_rows=n_rows, n_features=n_features, nnz_per_row=nnz,
                            seed=seed)
    rng = np.random.default_rng(seed + 1)
    y = X @ rng.normal(size=n_features) + 0.5 + 0.1 * rng.normal(size=n_rows)
    return X, y


def one_pass_cwkit(name, X, y, **params):
    def run():
        est = cwkit.make_regressor(name, **params).partial_fit(X, y)
        return est.squared_error_ / est.t_
    return run


def one_pass_sklearn(X, y, C, epsilon):
    from sklearn.linear_model import SGDRegressor

    def run():
        SGDRegressor(loss="epsilon_insensitive", epsilon=epsilon, learning_rate="pa1",
                     eta0=C, penalty=None, shuffle=False).partial_fit(X, y)
        return None     # (scikit-learn counts no progressive error)
    return run


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--features", type=int, default=2**20)
    ap.add_argument("--nnz", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    import sklearn
    print(f"# machine: {processor_name()} ({platform.machine()}), cwkit "
          f"{cwkit.__version__}, scikit-learn {sklearn.__version__}")
    X, y = regression_rows(args.rows, args.features, args.nnz)
    print(f"# data: {X.shape[0]} x {X.shape[1]}, {X.nnz / X.shape[0]:.1f} nonzeros/row")
    C, eps = 1.0, 0.1
    runs = [("sklearn SGDRegressor pa1", one_pass_sklearn(X, y, C, eps)),
            ("cwkit pa1", one_pass_cwkit("pa1", X, y, C=C, epsilon=eps)),
            ("cwkit arow (diag)", one_pass_cwkit("arow", X, y, covariance="diag"))]
    best = best_of_interleaved(args.repeat, runs)
    base = best["sklearn SGDRegressor pa1"][0]
    print("learner\tseconds\trows/s\tspeed vs scikit-learn\tprogressive MSE")
    for label, (secs, mse, _) in best.items():
        print(f"{label}\t{secs:.4f}\t{X.shape[0] / secs:,.0f}\t{base / secs:.2f}\t"
              f"{'' if mse is None else f'{mse:.4g}'}")


if __name__ == "__main__":
    main()
