"""Accuracy of ``kernel_approx=`` (random Fourier / Nyström RBF features feeding a linear
rule) against the exact RBF kernel form of the same rule.

Test error (%), mean ± sd over random 75% / 25% splits, one pass, C and gamma fixed (not
tuned: the comparison is between the feature maps, not a tuned result).

usage: python benchmarks/bench_kernel_approx.py [--splits 5] [--sets ionosphere_scale,...]
Reads the UCI files from a folder ``shared/data/uci`` beside the project folder.
"""
import argparse
import pathlib
import sys

import numpy as np

import cwkit
from cwkit.svmlight import load_svmlight

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "uci"
SETS = {"ionosphere_scale": 0.1, "heart_scale": 0.05, "sonar_scale": 0.1}
FORMS = [("exact", {"kernel": "rbf"}),
         ("RFF 100", {"kernel_approx": "rff", "n_components": 100}),
         ("RFF 500", {"kernel_approx": "rff", "n_components": 500}),
         ("Nyström 50", {"kernel_approx": "nystroem", "n_components": 50}),
         ("Nyström 150", {"kernel_approx": "nystroem", "n_components": 150})]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--algos", default="pa1,arow")
    args = ap.parse_args(argv)
    if not DATA.is_dir():
        sys.exit(f"the UCI files are not in {DATA}")
    print("| data (gamma) | rule | " + " | ".join(f for f, _ in FORMS) + " |")
    print("| --- | --- |" + " --- |" * len(FORMS))
    for name in args.sets.split(","):
        X, y = load_svmlight(DATA / name)[:2]
        gamma = SETS.get(name, 0.1)
        for algo in args.algos.split(","):
            errs = np.zeros((args.splits, len(FORMS)))
            for s in range(args.splits):
                perm = np.random.default_rng(s).permutation(len(y))
                tr, te = perm[:int(0.75 * len(y))], perm[int(0.75 * len(y)):]
                for c, (_, p) in enumerate(FORMS):
                    est = cwkit.make(algo, gamma=gamma, random_state=s, **p) \
                        if "kernel_approx" in p else cwkit.make(algo, gamma=gamma, **p)
                    est.fit(X[tr], y[tr])
                    errs[s, c] = 100 * np.mean(est.predict(X[te]) != y[te])
            print(f"| {name.replace('_scale', '')} ({gamma}) | {algo} | " + " | ".join(
                f"{m:.2f} ± {d:.2f}" for m, d in zip(errs.mean(0), errs.std(0, ddof=1)))
                + " |", flush=True)


if __name__ == "__main__":
    main()
