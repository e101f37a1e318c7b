"""``class_weight="balanced"`` against the unweighted rule on imbalanced data.

For every registry name but mini-batch PA (which takes no weights), the default
estimator with its last iterate (``average=False``; avg-perceptron averaged) makes one
``fit`` pass (``shuffle=False``, over rows in a seeded random
order) with and without ``class_weight="balanced"``; the held-out balanced accuracy
(the mean of the per-class recalls) is recorded.  The sets are made imbalanced by
keeping a fraction of one class (of several, for USPS) in the training rows and in
the test rows alike:

* a9a: 8,000 random training rows of a9a, its positives (24%) kept at 1/6 (about 5%),
  the first 8,000 rows of a9a.t with the same subsampling;
* 20 Newsgroups pc-mac: the train and test files, class +1 kept at 1/8;
* TREC 2007 spam: the first 6,000 rows in time order (4,000 train, 2,000 test), ham
  kept at 1/6;
* USPS: 4,000 training rows and the test file, digits 5-9 kept at 1/8.

Three seeds (the subsample and the order of the training rows); the figures are
means.  ``../shared/data`` must be present.

    nice python benchmarks/bench_class_weight.py [--data DIR]     # ~2 minutes
"""
import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

import cwkit
from cwkit.svmlight import load_svmlight

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SEEDS = (0, 1, 2)
NAMES = [a["name"] for a in cwkit.algorithms() if not a["name"].startswith("bpa")]
#: The last iterate, as measured for docs/choosing.md (avg-perceptron is averaged by name).
LAST = {name: {"average": False} for name in NAMES if name != "avg-perceptron"}


def _load(rel, n_features=None):
    X, y = load_svmlight(Path(DATA) / rel, n_features=n_features)[:2]
    return X.tocsr(), np.asarray(y)


def _thin(rng, y, minority, keep):
    """Row indices with the rows of the classes `minority` kept at the fraction `keep`."""
    rare = np.isin(y, minority)
    return np.sort(np.flatnonzero(~rare | (rng.random(len(y)) < keep)))


def _sets():
    """name -> function(seed) -> (X_train, y_train, X_test, y_test)."""
    a9a, a9at = _load("adult/a9a.gz", 123), _load("adult/a9a.t.gz", 123)
    pcmac = _load("text/20ng-pc-mac.train.xz"), None
    pcmac = (pcmac[0], _load("text/20ng-pc-mac.test.xz", pcmac[0][0].shape[1]))
    spam = _load("text/trec07p-half.svm.xz")
    usps, uspst = _load("digits/usps.scale.xz", 256), _load("digits/usps.scale.t.xz", 256)

    def a9a_set(seed):
        rng = np.random.default_rng(seed)
        tr = rng.choice(a9a[0].shape[0], 8000, replace=False)
        tr = tr[_thin(rng, a9a[1][tr], [1], 1 / 6)]
        te = _thin(rng, a9at[1][:8000], [1], 1 / 6)
        return a9a[0][tr], a9a[1][tr], a9at[0][te], a9at[1][te]

    def pcmac_set(seed):
        rng = np.random.default_rng(seed)
        (X, y), (Xt, yt) = pcmac
        tr = rng.permutation(_thin(rng, y, [1], 1 / 8))
        te = _thin(rng, yt, [1], 1 / 8)
        return X[tr], y[tr], Xt[te], yt[te]

    def spam_set(seed):
        rng = np.random.default_rng(seed)
        X, y = spam[0][:6000], spam[1][:6000]
        ham = y.min()
        tr = _thin(rng, y[:4000], [ham], 1 / 6)   # the stream keeps its time order
        te = 4000 + _thin(rng, y[4000:], [ham], 1 / 6)
        return X[tr], y[tr], X[te], y[te]

    def usps_set(seed):
        rng = np.random.default_rng(seed)
        tr = rng.choice(usps[0].shape[0], 4000, replace=False)
        tr = tr[_thin(rng, usps[1][tr], [5, 6, 7, 8, 9], 1 / 8)]
        te = _thin(rng, uspst[1], [5, 6, 7, 8, 9], 1 / 8)
        return usps[0][tr], usps[1][tr], uspst[0][te], uspst[1][te]

    return {"a9a": a9a_set, "20ng pc-mac": pcmac_set, "spam": spam_set, "usps": usps_set}


def balanced_accuracy(y, pred):
    return float(np.mean([np.mean(pred[y == c] == c) for c in np.unique(y)]))


def main():
    global DATA
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DATA, type=Path, help="the shared data folder")
    DATA = parser.parse_args().data
    if not DATA.exists():
        print(f"# skipped: {DATA} is absent (this benchmark needs the shared data folder)")
        return 0
    warnings.simplefilter("ignore")
    sets = _sets()
    print("set\tminority share (train)\t" + "\t".join(NAMES))
    wins = {name: 0 for name in NAMES}
    for set_name, make in sets.items():
        plain = {n: [] for n in NAMES}
        balanced = {n: [] for n in NAMES}
        shares = []
        for seed in SEEDS:
            X, y, Xt, yt = make(seed)
            counts = np.unique(y, return_counts=True)[1]
            shares.append(counts.min() / counts.sum())
            for name in NAMES:
                for weight, out in ((None, plain), ("balanced", balanced)):
                    try:
                        est = cwkit.make(name, class_weight=weight,
                                         **LAST.get(name, {})).fit(X, y)
                    except cwkit.ModelError as exc:   # a pass that stops: no model
                        print(f"# {set_name} {name} {weight}: {exc}"[:160])
                        out[name].append(np.nan)
                        continue
                    out[name].append(balanced_accuracy(yt, est.predict(Xt)))
        cells = []
        for name in NAMES:
            p, b = np.mean(plain[name]), np.mean(balanced[name])
            wins[name] += b > p
            cells.append(f"{100 * p:.1f} -> {100 * b:.1f}")
        print(f"{set_name}\t{100 * np.mean(shares):.1f}%\t" + "\t".join(cells))
        sys.stdout.flush()
    print("# sets where balanced beats unweighted: "
          + ", ".join(f"{n} {w}/{len(sets)}" for n, w in wins.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
