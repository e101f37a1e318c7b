"""Every rule's default hyper-parameters against a small grid, one pass, clean and noisy.

For every registry name, the default estimator (``cwkit.make(name)``) and one
change at a time from it (a small grid per name, plus the intercept: its scale
1, 0.1, 0.01, or none) make one ``fit`` pass (``shuffle=False``) over the
training rows of each data set of ``../shared/data``, clean and with 10% of the
training labels flipped (``cwkit.datasets.flip_labels``, seeded; test labels
stay clean); the held-out test error is recorded.  Anchors on the same splits:
scikit-learn's ``LinearSVC()`` (defaults, many passes: a batch optimum) and
one pass of its PA-I (``SGDClassifier(loss="hinge", penalty=None,
learning_rate="pa1", eta0=1.0)``, one-vs-rest, with its damped intercept).

Data sets (subsampled where said, to fit a shared two-core machine):

* dense binary: the UCI sets scaled to [-1, 1] (heart, breast cancer, Pima,
  ionosphere, BUPA liver, sonar; 5 random 70/30 splits each), twonorm (first
  2,000 rows, 5 splits);
* sparse binary: the three 20 Newsgroups pairs (their train / test files),
  Amazon books and DVD (3 random 70/30 splits), TREC 2007 spam (the first
  6,000 rows in time order: 4,000 train, 2,000 test), a9a (3,000 random rows
  of a9a for training, the first 5,000 of a9a.t for testing);
* multi-class: USPS (3,000 training rows, the test file), MNIST (5,000 / the
  first 5,000 test rows), 20 Newsgroups (all 20 classes, 5,000 random training rows,
  the test file); a full covariance is not run on them (the stacked matrix of
  top-1 has K (d + 1) > 2,500 rows: minutes per pass, and never chosen by "auto").

    nice python benchmarks/bench_defaults.py --out bench_defaults.json   # measure (~30 min)
    python benchmarks/bench_defaults.py --report bench_defaults.json     # the tables of docs
    nice python benchmarks/bench_defaults.py --part covariance           # full vs diag timing
    nice python benchmarks/bench_defaults.py --part average --out bench_average.json
    python benchmarks/bench_defaults.py --part average --report bench_average.json

``--part average`` runs every name's default once with ``average=False`` (the
last iterate) and once with ``average=True`` (the mean of the weights after
each round) on the same sets and splits (no anchors, no grid), and prints the
table "last / averaged" of docs/choosing.md.  ``--max-train N`` keeps the first N
training rows of each split (the test rows unchanged), for a busy machine.

``--part covariance`` times one pass of diagonal and full AROW on seeded dense
Gaussian data (binary: d features; top-1: 10 classes of d features) for
growing d: the cost of the full matrix, which the ``covariance="auto"``
threshold is chosen from.
"""
import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import cwkit
from cwkit.datasets import flip_labels
from cwkit.svmlight import load_svmlight

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
NOISE = 0.1

#: name -> list of one-change variants of its default (the intercept is added to all).
GRID = {
    "perceptron": [], "avg-perceptron": [], "pa": [],
    "pa1": [{"C": c} for c in (0.01, 0.1, 10.0)],
    "pa2": [{"C": c} for c in (0.01, 0.1, 10.0)],
    "pa-ls": [{"C": c} for c in (0.01, 0.1, 10.0)],
    "cw": [{"eta": e} for e in (0.7, 0.8, 0.95)] + [{"a": a} for a in (0.1, 10.0)]
    + [{"covariance": "diag"}, {"covariance": "full"}],
    "cw-stdev": [{"eta": e} for e in (0.6, 0.8, 0.9)] + [{"a": a} for a in (0.1, 10.0)]
    + [{"covariance": "diag"}, {"covariance": "full"}],
    "arow": [{"r": r} for r in (0.01, 0.1, 10.0)] + [{"a": a} for a in (0.1, 10.0)]
    + [{"covariance": "diag"}, {"covariance": "full"}],
    "arow-h": [{"r": r} for r in (0.01, 0.1, 10.0)] + [{"a": a} for a in (0.1, 10.0)]
    + [{"covariance": "diag"}, {"covariance": "full"}],
    "sop": [{"a": a} for a in (0.1, 10.0)] + [{"covariance": "diag"}, {"covariance": "full"}],
    "reg-pa": [{"alpha": a} for a in (0.001, 0.1)],
    "l2-pa": [{"beta": b} for b in (1.0, 100.0)],
    "soft-reg-pa": [{"alpha": a} for a in (0.001, 0.1)] + [{"C": c} for c in (0.1, 10.0)],
    "adagrad": [{"eta": e} for e in (0.1, 10.0)] + [{"lam": v} for v in (1e-4, 1e-3)],
    "bpa1": [{"C": c} for c in (0.1, 10.0)],
    "bpa2": [{"C": c} for c in (0.1, 10.0)],
    "bpa-ls": [{"C": c} for c in (0.1, 10.0)],
    "l1-pa": [{"beta": b} for b in (1.0, 100.0)],
}
#: The intercept variants: the scale of the constant feature, or none.
INTERCEPT = [{"intercept_scaling": 1.0}, {"intercept_scaling": 0.1},
             {"intercept_scaling": 0.01}, {"fit_intercept": False}]

GROUPS = ("dense binary", "sparse binary", "multi-class")


def _load(rel, n_features=None):
    X, y = load_svmlight(DATA / rel, n_features=n_features)[:2]
    return X.tocsr(), np.asarray(y)


def _splits(X, y, n_splits, train_frac=0.7, n_rows=None, seed=0):
    """`n_splits` random train/test splits (the rows shuffled), the first n_rows only."""
    if n_rows is not None:
        X, y = X[:n_rows], y[:n_rows]
    out = []
    for s in range(n_splits):
        p = np.random.default_rng(seed + s).permutation(len(y))
        cut = int(round(train_frac * len(y)))
        out.append((X[p[:cut]], y[p[:cut]], X[p[cut:]], y[p[cut:]]))
    return out


def _pair(train, test, n_train=None, n_test=None, seed=0):
    X, y = _load(train)
    Xt, yt = _load(test)
    d = max(X.shape[1], Xt.shape[1])
    X.resize((X.shape[0], d))
    Xt.resize((Xt.shape[0], d))
    if n_train is not None:
        p = np.random.default_rng(seed).permutation(len(y))[:n_train]
        X, y = X[p], y[p]
    if n_test is not None:
        Xt, yt = Xt[:n_test], yt[:n_test]
    return [(X, y, Xt, yt)]


def data_sets(only=None, max_train=None):
    """(name, group, list of (X, y, X_test, y_test)) for each set that is present; with
    `max_train`, the first `max_train` training rows of each split only (the test rows
    unchanged)."""
    uci = ["heart_scale", "breast-cancer-wisconsin_scale", "pima-diabetes_scale",
           "ionosphere_scale", "liver-bupa_scale", "sonar_scale"]
    specs = [(f, "dense binary", lambda f=f: [tuple(a.toarray() if sp.issparse(a) else a
                                                    for a in s)
                                              for s in _splits(*_load("uci/" + f), 5)])
             for f in uci]
    specs += [
        ("twonorm", "dense binary",
         lambda: [tuple(a.toarray() if sp.issparse(a) else a for a in s)
                  for s in _splits(*_load("uci/twonorm"), 5, n_rows=2000)]),
        ("a9a", "sparse binary",
         lambda: _pair("adult/a9a.gz", "adult/a9a.t.gz", n_train=3000, n_test=5000)),
    ]
    for t in ("pc-mac", "elec-med", "guns-mideast"):
        specs.append((f"20ng-{t}", "sparse binary",
                      lambda t=t: _pair(f"text/20ng-{t}.train.xz", f"text/20ng-{t}.test.xz")))
    for t in ("books", "dvd"):
        specs.append((f"amazon-{t}", "sparse binary",
                      lambda t=t: _splits(*_load(f"text/amazon-{t}.svm.xz"), 3)))

    def trec():
        X, y = _load("text/trec07p-half.svm.xz")
        return [(X[:4000], y[:4000], X[4000:6000], y[4000:6000])]
    specs.append(("trec07p", "sparse binary", trec))

    def dense(pairs):
        return [tuple(a.toarray() if sp.issparse(a) else a for a in s) for s in pairs]
    specs += [
        ("usps", "multi-class",
         lambda: dense(_pair("digits/usps.scale.xz", "digits/usps.scale.t.xz", n_train=3000))),
        ("mnist", "multi-class",
         lambda: dense(_pair("digits/mnist.scale.bz2", "digits/mnist.scale.t.bz2",
                             n_train=5000, n_test=5000))),
        ("news20", "multi-class",
         lambda: _pair("text/news20.mc.train.xz", "text/news20.mc.test.xz", n_train=5000)),
    ]
    for name, group, load in specs:
        if only is not None and name not in only:
            continue
        try:
            splits = load()
            if max_train is not None:
                splits = [(X[:max_train], y[:max_train], Xt, yt) for X, y, Xt, yt in splits]
            yield name, group, splits
        except FileNotFoundError as exc:
            print(f"# {name} skipped: {exc}", file=sys.stderr)


def _fit_test(name, params, X, y, Xt, yt):
    """Test error of one pass, and the seconds of the pass (None if the rule refuses)."""
    try:
        est = cwkit.make(name, **params)
    except ValueError:
        return None, None
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
    except (ValueError, MemoryError):      # e.g. a full covariance of too many features
        return None, None
    sec = time.perf_counter() - t0
    return float(np.mean(est.predict(Xt) != yt)), sec


def _anchors(X, y, Xt, yt):
    try:
        from sklearn.linear_model import SGDClassifier
        from sklearn.svm import LinearSVC
    except ImportError:
        return {}
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svc = LinearSVC().fit(X, y)
        out["LinearSVC"] = float(np.mean(svc.predict(Xt) != yt))
        pa = SGDClassifier(loss="hinge", penalty=None, learning_rate="pa1", eta0=1.0,
                           shuffle=False).partial_fit(X, y, classes=np.unique(y))
        out["sklearn PA-I"] = float(np.mean(pa.predict(Xt) != yt))
    return out


def label(params):
    if not params:
        return "default"
    return ", ".join(f"{k}={v}" for k, v in params.items())


def measure(names, out, only=None, configs=None, max_train=None):
    """Every name's grid (or only `configs`, a list of parameter dicts), every set."""
    results = []            # dicts: set, group, noise, split, learner, config, error, seconds
    for set_name, group, splits in data_sets(only, max_train):
        t_set = time.perf_counter()
        for noise in (0.0, NOISE):
            for s, (X, y, Xt, yt) in enumerate(splits):
                yn = flip_labels(y, noise, seed=1000 + s)[0] if noise else y
                for anchor, err in (_anchors(X, yn, Xt, yt).items() if configs is None
                                    else ()):
                    results.append(dict(set=set_name, group=group, noise=noise, split=s,
                                        learner=anchor, config="default", error=err,
                                        seconds=None))
                for name in names:
                    for params in configs or [{}] + GRID[name] + INTERCEPT:
                        if group == "multi-class" and params.get("covariance") == "full":
                            continue      # (K D)^2 > 2,000^2 here: slow, and never "auto"'s
                        err, sec = _fit_test(name, params, X, yn, Xt, yt)
                        results.append(dict(set=set_name, group=group, noise=noise, split=s,
                                            learner=name, config=label(params), error=err,
                                            seconds=sec))
        print(f"# {set_name}: {time.perf_counter() - t_set:.0f} s", file=sys.stderr, flush=True)
        with open(out, "w") as f:
            json.dump({"cwkit": cwkit.__version__, "results": results}, f)


def _mean_by(results, keys):
    """Mean error over splits, then over sets within a group: {key tuple: (mean, n_sets)}."""
    per_set = {}
    for r in results:
        if r["error"] is None:
            continue
        per_set.setdefault(tuple(r[k] for k in keys) + (r["set"],), []).append(r["error"])
    grouped = {}
    for k, v in per_set.items():
        grouped.setdefault(k[:-1], []).append(np.mean(v))
    return {k: (float(np.mean(v)), len(v)) for k, v in grouped.items()}


def _group_means(paths):
    """The results of one or more files (comma-separated), the sets of each group, the
    means by (learner, config, group, noise) and the (group, noise) columns."""
    results = []
    for path in paths.split(","):
        with open(path) as f:
            results += json.load(f)["results"]
    sets = {}
    for r in results:
        sets.setdefault(r["group"], set()).add(r["set"])
    m = _mean_by(results, ("learner", "config", "group", "noise"))
    cols = [(g, n) for g in GROUPS for n in (0.0, NOISE) if g in sets]
    return results, sets, m, cols


def report(path):
    results, sets, m, cols = _group_means(path)
    learners = list(dict.fromkeys(r["learner"] for r in results))
    head = " | ".join(f"{g}{' noisy' if n else ''}" for g, n in cols)
    print("Mean test error (%) over the sets of each group "
          f"({'; '.join(f'{g}: {len(sets[g])}' for g in GROUPS if g in sets)} sets); "
          "'noisy': 10% of the training labels flipped; '—': the rule refuses it "
          "(e.g. a full covariance of too many features). **Bold**: the best of the name's "
          "rows in that column.\n")
    print(f"| learner | setting | {head} |")
    print("|" + " --- |" * 2 + " ---: |" * len(cols))
    for learner in learners:
        configs = list(dict.fromkeys(r["config"] for r in results if r["learner"] == learner))
        best = {c: min((m[(learner, cf) + c][0] for cf in configs
                        if (learner, cf) + c in m and m[(learner, cf) + c][1] == len(
                            sets[c[0]])), default=None) for c in cols}
        for cf in configs:
            cells = []
            for c in cols:
                v = m.get((learner, cf) + c)
                if v is None or v[1] < len(sets[c[0]]):
                    cells.append("—")
                else:
                    s = f"{100 * v[0]:.1f}"
                    cells.append(f"**{s}**" if best[c] is not None and v[0] == best[c] else s)
            print(f"| {learner} | {cf} | " + " | ".join(cells) + " |")
    print()
    # the defaults, set by set
    names = sorted({r["set"] for r in results}, key=lambda s: [r["set"] for r in results].index(s))
    per = _mean_by(results, ("learner", "config", "set", "noise"))
    print("Test error (%) of each default, set by set (clean / noisy):\n")
    print("| learner | " + " | ".join(names) + " |")
    print("|" + " --- |" + " ---: |" * len(names))
    for learner in learners:
        cells = []
        for s in names:
            a, b = per.get((learner, "default", s, 0.0)), per.get((learner, "default", s, NOISE))
            cells.append("—" if a is None or b is None else
                         f"{100 * a[0]:.1f} / {100 * b[0]:.1f}")
        print(f"| {learner} | " + " | ".join(cells) + " |")


def report_average(path):
    """The table "last / averaged" of every name's default, per group (mean over sets)."""
    results, sets, m, cols = _group_means(path)
    print("| rule | " + " | ".join(f"{g} ({len(sets[g])})" if not n else "noisy"
                                  for g, n in cols) + " |")
    print("| --- |" + " ---: |" * len(cols))
    for learner in dict.fromkeys(r["learner"] for r in results):
        cells = []
        for c in cols:
            a, b = (m.get((learner, f"average={v}") + c) for v in (False, True))
            cells.append("—" if a is None or b is None else
                         f"{100 * a[0]:.1f} / {100 * b[0]:.1f}")
        print(f"| {learner} | " + " | ".join(cells) + " |")


def covariance_timing(repeat=2):
    """Seconds per 1,000 rows of one pass of diagonal and full AROW, dense Gaussian data."""
    print("| case | d | rows | diag ms / 1000 rows | full ms / 1000 rows | full / diag | "
          "diag error | full error |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for case, K, dims in (("binary", 2, (8, 16, 32, 64, 128, 256, 512, 1024)),
                          ("top-1, 10 classes", 10, (4, 8, 16, 32, 64, 128))):
        for d in dims:
            rng = np.random.default_rng(d)
            n = 2000
            X = rng.normal(size=(2 * n, d)) * rng.uniform(0.2, 3.0, size=d)
            W = rng.normal(size=(d, K))
            s = X @ W + 0.5 * np.sqrt(d) * rng.normal(size=(2 * n, K))
            y = (s[:, 0] > 0).astype(int) if K == 2 else np.argmax(s, axis=1)
            res = {}
            for cov in ("diag", "full"):
                best, err = np.inf, None
                for _ in range(repeat):
                    est = cwkit.make("arow", covariance=cov)
                    t0 = time.perf_counter()
                    est.fit(X[:n], y[:n])
                    best = min(best, time.perf_counter() - t0)
                    err = float(np.mean(est.predict(X[n:]) != y[n:]))
                res[cov] = (1000 * best * 1000 / n, err)
            print(f"| {case} | {d} | {n} | {res['diag'][0]:.2f} | {res['full'][0]:.2f} | "
                  f"{res['full'][0] / res['diag'][0]:.0f} | {100 * res['diag'][1]:.1f} | "
                  f"{100 * res['full'][1]:.1f} |", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("grid", "average", "covariance"), default="grid")
    ap.add_argument("--out", default="bench_defaults.json", help="results of --part grid")
    ap.add_argument("--report", metavar="JSON[,JSON...]",
                    help="print the tables of results files (several: of one table)")
    ap.add_argument("--names", help="comma-separated registry names (default: all)")
    ap.add_argument("--sets", help="comma-separated data set names (default: all)")
    ap.add_argument("--max-train", type=int, metavar="N",
                    help="the first N training rows of each split only (a busy machine)")
    args = ap.parse_args(argv)
    show = report_average if args.part == "average" else report
    if args.report:
        show(args.report)
        return
    if args.part == "covariance":
        covariance_timing()
        return
    if not DATA.exists():
        print(f"# skipped: {DATA} is absent (this benchmark needs the shared data folder "
              "next to the repository)")
        return
    names = args.names.split(",") if args.names else [e["name"] for e in cwkit.algorithms()]
    configs = ([{"average": False}, {"average": True}] if args.part == "average" else None)
    measure(names, args.out, args.sets.split(",") if args.sets else None, configs,
            args.max_train)
    show(args.out)


if __name__ == "__main__":
    main()
