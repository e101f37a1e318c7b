"""How good are the probabilities? Held-out log loss, Brier score and calibration error.

For each data set and learner (one pass, file order), on the held-out rows:

* ``cwkit``: ``predict_proba``, softmax(a s) of the scores with the slope a fitted on
  the progressive scores of the last ``cwkit.models.calibration.WINDOW`` training rounds;
* ``gaussian``: ``predict_confidence`` of CW and AROW, the probability under the Gaussian
  over weights (``predict_proba`` before cwkit 0.x);
* ``sklearn``: scikit-learn's ``CalibratedClassifierCV(model, cv=3, method="sigmoid")``
  over the same cwkit learner (three learners on 2/3 of the rows each, Platt's sigmoid
  fitted on the held-out third, their probabilities averaged; one-vs-rest sigmoids then
  normalised for several classes).

Metrics: log loss (mean -log p of the true class, p clipped at 1e-15 as scikit-learn's
``log_loss``), Brier score (mean squared distance of the probability vector to the
one-hot label, summed over classes: twice scikit-learn's binary ``brier_score_loss``),
ECE (expected calibration error: 15 equal-width bins of the largest probability, the
row-weighted mean |accuracy - confidence|), and the test error.

``--windows`` also refits the slope on the last w progressive rounds for several w
(and on all rounds) and reports the held-out log loss of each: the choice of WINDOW.

Data (skipped when absent): ``../shared/data`` (see its README): spam (TREC 2007,
first 70 % of the stream to train, the rest to test, in time order), sentiment
(Amazon books, 70 / 30), the three 20 Newsgroups pairs and a9a (their train / test
files), USPS and 20 Newsgroups (10 and 20 classes, train / test files).

    python benchmarks/bench_calibration.py                # every set, pa1 cw arow
    python benchmarks/bench_calibration.py --sets usps a9a --windows

Needs scikit-learn for the ``sklearn`` rows (installed by the benchmark's user, not a
dependency of cwkit).
"""
import argparse
import warnings
from pathlib import Path

import numpy as np

import cwkit
from cwkit.models import calibration
from cwkit.svmlight import load_svmlight

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

#: name -> (train file, test file or None for a 70 / 30 split of train, n_features)
SETS = {
    "spam": ("text/trec07p-half.svm.xz", None, None),
    "books": ("text/amazon-books.svm.xz", None, None),
    "pc-mac": ("text/20ng-pc-mac.train.xz", "text/20ng-pc-mac.test.xz", None),
    "elec-med": ("text/20ng-elec-med.train.xz", "text/20ng-elec-med.test.xz", None),
    "guns-mideast": ("text/20ng-guns-mideast.train.xz", "text/20ng-guns-mideast.test.xz",
                     None),
    "a9a": ("adult/a9a.gz", "adult/a9a.t.gz", 123),
    "usps": ("digits/usps.scale.xz", "digits/usps.scale.t.xz", None),
    "news20": ("text/news20.mc.train.xz", "text/news20.mc.test.xz", None),
}
LEARNERS = ("pa1", "cw", "arow")
WINDOWS = (128, 512, 2048, 8192)
EPS = 1e-15


def load(name):
    """(X, y, Xt, yt) of a set, or None when its files are absent."""
    train, test, d = SETS[name]
    paths = [DATA / train] + ([DATA / test] if test else [])
    if not all(p.exists() for p in paths):
        return None
    X, y = load_svmlight(paths[0], n_features=d)[:2]
    if test is None:
        cut = int(0.7 * X.shape[0])
        return X[:cut], y[:cut], X[cut:], y[cut:]
    Xt, yt = load_svmlight(paths[1], n_features=d)[:2]
    width = max(X.shape[1], Xt.shape[1])
    X.resize((X.shape[0], width))
    Xt.resize((Xt.shape[0], width))
    return X, y, Xt, yt


def metrics(P, y, classes, bins=15):
    """(log loss, Brier, ECE, error) of probabilities P (n, K) for labels y."""
    codes = np.searchsorted(classes, y)
    n = len(y)
    p_true = P[np.arange(n), codes]
    onehot = np.zeros_like(P)
    onehot[np.arange(n), codes] = 1.0
    conf = P.max(axis=1)
    hit = P.argmax(axis=1) == codes
    which = np.minimum((conf * bins).astype(int), bins - 1)
    ece = sum(abs(hit[which == b].mean() - conf[which == b].mean()) * (which == b).sum()
              for b in range(bins) if (which == b).any()) / n
    return (float(-np.mean(np.log(np.clip(p_true, EPS, 1.0)))),
            float(np.mean(((P - onehot) ** 2).sum(axis=1))), float(ece), float(1.0 - hit.mean()))


def rows_of(name, learner, data, sklearn_rows, windows):
    X, y, Xt, yt = data
    est = cwkit.make(learner)
    if windows:
        calibration.WINDOW = X.shape[0]       # keep every round, refit on suffixes below
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    calibration.WINDOW = WINDOW_DEFAULT
    out = [(name, learner, "cwkit" if not windows else "cwkit all", *metrics(
        est.predict_proba(Xt), yt, est.classes_))]
    if windows:
        S, codes = est._calibration.rounds()
        scores = est.decision_function(Xt)
        for w in windows:
            if w < len(codes):
                cal = calibration.Calibration(len(est.classes_), window=w)
                cal.add(S, codes)
                out.append((name, learner, f"cwkit w={w}",
                            *metrics(cal.proba(scores), yt, est.classes_)))
        return out
    if hasattr(est, "predict_confidence"):
        out.append((name, learner, "gaussian",
                    *metrics(est.predict_confidence(Xt), yt, est.classes_)))
    if sklearn_rows:
        from sklearn.calibration import CalibratedClassifierCV
        sk = CalibratedClassifierCV(cwkit.make(learner), cv=3, method="sigmoid")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sk.fit(X, y)
        out.append((name, learner, "sklearn cv=3", *metrics(sk.predict_proba(Xt), yt,
                                                            sk.classes_)))
    return out


WINDOW_DEFAULT = calibration.WINDOW


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    ap.add_argument("--learners", nargs="+", default=list(LEARNERS))
    ap.add_argument("--windows", action="store_true",
                    help="held-out log loss of the slope fitted on the last w rounds")
    args = ap.parse_args(argv)
    try:
        import sklearn  # noqa: F401
        sklearn_rows = True
    except ImportError:
        sklearn_rows = False
        print("# scikit-learn is not installed: no 'sklearn' rows")
    print("set\tlearner\tprobabilities\tlog_loss\tbrier\tece\terror")
    for name in args.sets:
        data = load(name)
        if data is None:
            print(f"# {name}: data files absent under {DATA}, skipped")
            continue
        for learner in args.learners:
            for row in rows_of(name, learner, data, sklearn_rows,
                               WINDOWS if args.windows else ()):
                print("\t".join(row[:3]) + "\t" + "\t".join(f"{v:.4f}" for v in row[3:]),
                      flush=True)


if __name__ == "__main__":
    main()
