"""Named features: rows of 20 named features per second, cwkit's dict path beside river's PA.

Prints one machine-readable row per measurement (``name rows_per_second``): cwkit's PA
(``pa``, hard margin, and ``pa1``) through ``learn_one`` (one dict per call),
``learn_many`` (lists of ``--batch`` dicts) and ``predict_one``, and river's
``PAClassifier`` (the peer, PA-I with C=1) and ``PARegressor`` through ``learn_one``
and ``predict_one``, on the same rows, in one run.  river is optional (the rows of a
missing package are skipped, saying so).

    python benchmarks/bench_named.py [--rows N] [--features 20] [--vocab 100000]
"""
import argparse
import random
import time


def stream(n, n_features, vocab, seed=0):
    rng = random.Random(seed)
    names = [f"w{i}" for i in range(vocab)]
    rows = [{rng.choice(names): rng.random() for _ in range(n_features)} for _ in range(n)]
    return rows, [rng.random() < 0.5 for _ in range(n)]


def rate(fn, n):
    t = time.perf_counter()
    fn()
    return n / (time.perf_counter() - t)


def _learn_one(clf, rows, y):
    for x, label in zip(rows, y):
        clf.learn_one(x, label)


def _learn_many(clf, rows, y, batch):
    for i in range(0, len(rows), batch):
        clf.learn_many(rows[i:i + batch], y[i:i + batch], classes=[False, True])


def _predict_many(clf, rows, batch):
    for i in range(0, len(rows), batch):
        clf.predict_many(rows[i:i + batch])


def cwkit_rows(rows, y, batch):
    import cwkit
    out = {}
    for name in ("pa", "pa1"):
        one = cwkit.make(name).learn_one(rows[0], y[0])
        out[f"cwkit-{name}-learn_one"] = rate(lambda c=one: _learn_one(c, rows, y), len(rows))
        out[f"cwkit-{name}-predict_one"] = rate(
            lambda c=one: [c.predict_one(x) for x in rows], len(rows))
        many = cwkit.make(name)
        out[f"cwkit-{name}-learn_many"] = rate(lambda c=many: _learn_many(c, rows, y, batch),
                                               len(rows))
        out[f"cwkit-{name}-predict_many"] = rate(lambda c=many: _predict_many(c, rows, batch),
                                                 len(rows))
    return out


def river_rows(rows, y):
    try:
        from river import linear_model
    except ImportError:
        print("# river is not installed: pip install river")
        return {}
    out = {}
    for name, model, target in (("PAClassifier", linear_model.PAClassifier(C=1.0), y),
                                ("PARegressor", linear_model.PARegressor(C=1.0),
                                 [1.0 if v else -1.0 for v in y])):
        def one(model=model, target=target):
            for x, label in zip(rows, target):
                model.learn_one(x, label)

        out[f"river-{name}-learn_one"] = rate(one, len(rows))
        out[f"river-{name}-predict_one"] = rate(lambda m=model: [m.predict_one(x)
                                                                 for x in rows], len(rows))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=50000)
    p.add_argument("--features", type=int, default=20)
    p.add_argument("--vocab", type=int, default=100000)
    p.add_argument("--batch", type=int, default=1000)
    args = p.parse_args()
    rows, y = stream(args.rows, args.features, args.vocab)
    results = {**cwkit_rows(rows, y, args.batch), **river_rows(rows, y)}
    for name, value in results.items():
        print(f"{name} {value:.0f}")


if __name__ == "__main__":
    main()
