"""The kernel forms at their defaults against scikit-learn's SVC(), and the intercept and
gamma treatments behind those defaults.

Per data set: --splits stratified 75% / 25% splits (scikit-learn's StratifiedShuffleSplit,
random_state 0; a set larger than --max-rows is first cut to a random --max-rows rows);
on each, every model is fitted on the training part (--passes passes, shuffled when
more than one) and its test error taken. Prints the mean test error (%) per set and
model, tab-separated, and the seconds each column took in all.

* ``--mode defaults``: ``SVC()`` and ``cwkit.make(name, kernel="rbf")`` for the rules
  with a kernel form, nothing else given.
* ``--mode treatments``: kernel PA-I (C=1) under each intercept treatment (a constant
  bias^2 = 1 added to the kernel, bias^2 = 0.1, no intercept), last iterate and
  averaged, with gamma from scikit-learn's "scale" (1 / (n_features X.var())) and from
  the median heuristic (1 / the median squared distance between training rows).
* ``--mode average``: the rules named by ``--names`` (default ``AVERAGED``, the
  second-order forms), at their defaults and with ``average=False`` and ``True`` (what
  "auto" should be).
* ``--mode approx``: pa1 and arow fed approximate RBF features (``kernel_approx="rff"``
  and ``"nystroem"``, 100 components, random_state 0) with gamma 1 / n_features (None's
  value before) and with scikit-learn's "scale" of the training rows (None's value now).

usage: python benchmarks/kernel_defaults.py [--mode defaults|treatments|average|approx]
       [--passes 1] [--splits 10] [--names arow,cw]
       [--sets NAME,...] [--max-rows 2000]
Reads the UCI files from a folder ``shared/data/uci`` beside the project folder; a set
named by a path (``digits/usps.scale.xz``, ``adult/a9a.gz``) is read from ``shared/data``.
"""
import argparse
import pathlib
import sys
import time

import numpy as np

import cwkit
from cwkit.svmlight import load_svmlight

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "uci"
SETS = ("breast-cancer-wisconsin_scale", "pima-diabetes_scale", "heart_scale",
        "ionosphere_scale", "liver-bupa_scale", "sonar_scale", "twonorm")
RULES = ("pa1", "pa2", "avg-perceptron", "reg-pa", "arow", "cw", "bpa1")
AVERAGED = ("arow", "cw")


def median_gamma(X, rng, m=500):
    """1 / the median squared distance between (at most m) rows of X."""
    A = X[rng.choice(len(X), min(len(X), m), replace=False)]
    sq = (A * A).sum(axis=1)
    d = sq[:, None] + sq[None, :] - 2 * A @ A.T
    return 1.0 / np.median(d[np.triu_indices(len(A), 1)])


def models(mode, X, names=AVERAGED):
    """(label, estimator) pairs of the mode for the training rows X (`names`: the rules
    of ``--mode average``)."""
    from sklearn.svm import SVC
    out = [("SVC()", SVC())]
    if mode == "defaults":
        return out + [(name, cwkit.make(name, kernel="rbf")) for name in RULES]
    if mode == "average":
        return out + [(f"{name}{' avg' if average else ''}",
                       cwkit.make(name, kernel="rbf", average=average))
                      for name in names for average in (False, True)]
    if mode == "approx":
        gammas = {"1/d": 1.0 / X.shape[1], "scale": 1.0 / (X.shape[1] * X.var())}
        return out + [(f"{name} {approx} {g}",
                       cwkit.make(name, kernel_approx=approx, gamma=gamma, random_state=0))
                      for approx in ("rff", "nystroem") for name in ("pa1", "arow")
                      for g, gamma in gammas.items()]
    gammas = {"scale": 1.0 / (X.shape[1] * X.var()),
              "median": median_gamma(X, np.random.default_rng(0))}
    intercepts = {"b2=1": {"intercept_scaling": 1.0},
                  "b2=0.1": {"intercept_scaling": np.sqrt(0.1)},
                  "none": {"fit_intercept": False}}
    for g, gamma in gammas.items():
        for b, kw in intercepts.items():
            for average in (False, True):
                out.append((f"{g} {b}{' avg' if average else ''}",
                            cwkit.make("pa1", kernel="rbf", gamma=gamma, average=average,
                                       **kw)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("defaults", "treatments", "average", "approx"),
                    default="defaults")
    ap.add_argument("--passes", type=int, default=1)
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--max-rows", type=int, default=2000)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--names", default=",".join(AVERAGED))
    args = ap.parse_args(argv)
    try:
        from sklearn.model_selection import StratifiedShuffleSplit
    except ImportError:
        sys.exit("kernel_defaults.py needs scikit-learn (pip install scikit-learn)")
    if not DATA.is_dir():
        sys.exit(f"the UCI files are not in {DATA}")
    header = None
    seconds = None
    for name in args.sets.split(","):
        X, y = load_svmlight(DATA / name if (DATA / name).exists() else DATA.parent / name)[:2]
        X = X.toarray()
        if len(y) > args.max_rows:
            keep = np.random.default_rng(0).permutation(len(y))[:args.max_rows]
            X, y = X[keep], y[keep]
        errs = []
        split = StratifiedShuffleSplit(args.splits, test_size=0.25, random_state=0)
        for tr, te in split.split(X, y):
            row = []
            for label, est in models(args.mode, X[tr], args.names.split(",")):
                if args.passes > 1:
                    est.set_params(**({"n_passes": args.passes, "shuffle": True,
                                       "random_state": 0} if label != "SVC()" else {}))
                t = time.perf_counter()
                est.fit(X[tr], y[tr])
                took = time.perf_counter() - t
                row.append((label, 100 * np.mean(est.predict(X[te]) != y[te]), took))
            if header is None:
                header = [label for label, _, _ in row]
                seconds = np.zeros(len(header))
                print("set\trows\t" + "\t".join(header), flush=True)
            errs.append([e for _, e, _ in row])
            seconds += [s for _, _, s in row]
        print(f"{name}\t{len(y)}\t" + "\t".join(f"{e:.1f}" for e in np.mean(errs, axis=0)),
              flush=True)
    print("seconds\t\t" + "\t".join(f"{s:.1f}" for s in seconds))


if __name__ == "__main__":
    main()
