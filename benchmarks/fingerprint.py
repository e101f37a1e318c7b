"""Fingerprint every model cwkit trains, to check that a change leaves results bit for bit.

    python benchmarks/fingerprint.py --write fp.json      # before the change
    python benchmarks/fingerprint.py --compare fp.json    # after it: prints the differences

A case is a registry name x task (binary, top1, topk, ovr) x input (dense, CSR) x averaging,
plus the kernel forms (rbf, poly; with and without a budget) and the kernel approximations.
Each case fits one pass with the name's defaults on seeded data, then a second call of
``partial_fit``, and hashes the scores on held-out rows and every public fitted array
(``coef_``, ``intercept_``, variances, dual coefficients, support vectors, ...). Options
given explicitly pin the case, so that a change of a default shows as the default's change
and not as noise: each case names what it sets.
"""
import argparse
import hashlib
import json
import sys
import warnings

import numpy as np
import scipy.sparse as sp

import cwkit
from cwkit.registry import kernel_params

TASKS = ("binary", "top1", "topk", "ovr")


def _data(task, seed=0, n=120, d=12):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.4] = 0.0
    X[5] = 0.0                                   # an all-zero row
    k = 2 if task == "binary" else 4
    W = rng.standard_normal((k, d))
    y = np.argmax(X @ W.T + 0.5 * rng.standard_normal((n, k)), axis=1)
    if task == "binary":
        y = np.where(y == 1, 1, -1)
    return X, y


def _hash(value):
    a = np.ascontiguousarray(np.asarray(value))
    if a.dtype == object:
        return hashlib.sha256(repr(a.tolist()).encode()).hexdigest()[:16]
    return hashlib.sha256(a.dtype.str.encode() + repr(a.shape).encode()
                          + a.tobytes()).hexdigest()[:16]


def _state(est, Xt):
    out = {}
    for key in sorted(vars(est)):
        if not key.endswith("_") or key.startswith("_"):
            continue
        val = getattr(est, key)
        if sp.issparse(val):
            val = val.toarray()
        if isinstance(val, (np.ndarray, float, int, np.floating, np.integer)):
            out[key] = _hash(val)
    for meth in ("decision_function", "predict"):
        try:
            out[meth] = _hash(getattr(est, meth)(Xt))
        except Exception as exc:  # noqa: BLE001 - a fingerprint records what happened
            out[meth] = f"error: {type(exc).__name__}"
    return out


def _cases():
    for entry in cwkit.algorithms():
        name = entry["name"]
        for task in TASKS:
            for average in (False, True):
                params = {"average": average}
                if task != "binary":
                    params["multiclass"] = task
                    if task == "topk":
                        params["k"] = 2
                yield f"{name}|{task}|avg={average}", name, task, params
                if "covariance" in entry["params"] and task in ("binary", "top1"):
                    yield (f"{name}|{task}|avg={average}|diag", name, task,
                           {**params, "covariance": "diag"})
        if kernel_params(name):
            for kern, extra in (("rbf", {"gamma": 0.3}), ("poly", {"degree": 2})):
                for budget in (None, 15):
                    for task in ("binary", "top1"):
                        params = {"kernel": kern, **extra}
                        if budget:
                            params["budget"] = budget
                        if task != "binary":
                            params["multiclass"] = task
                        yield (f"{name}|kernel={kern}|budget={budget}|{task}", name, task,
                               params)
        for approx in ("rff", "nystroem"):
            params = {"kernel_approx": approx, "n_components": 16, "gamma": 0.3,
                      "random_state": 0}
            yield f"{name}|approx={approx}|binary", name, "binary", params


def fingerprint(only=None):
    result = {}
    for case, name, task, params in _cases():
        if only and only not in case:
            continue
        X, y = _data(task)
        Xt, _ = _data(task, seed=1, n=30)
        for kind, conv in (("dense", np.asarray), ("csr", sp.csr_matrix)):
            key = f"{case}|{kind}"
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = cwkit.make(name, **params)
                    est.fit(conv(X[:80]), y[:80])
                    est.partial_fit(conv(X[80:]), y[80:])
                    result[key] = _state(est, conv(Xt))
            except Exception as exc:  # noqa: BLE001
                result[key] = {"error": f"{type(exc).__name__}: {str(exc)[:80]}"}
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", metavar="FILE")
    ap.add_argument("--compare", metavar="FILE")
    ap.add_argument("--only", help="only the cases whose key contains this text")
    args = ap.parse_args(argv)
    fp = fingerprint(args.only)
    if args.write:
        with open(args.write, "w") as f:
            json.dump(fp, f, indent=0, sort_keys=True)
        print(f"{len(fp)} cases written to {args.write}")
    if args.compare:
        with open(args.compare) as f:
            old = json.load(f)
        diffs = 0
        for key in sorted(set(old) | set(fp)):
            if args.only and args.only not in key:
                continue
            a, b = old.get(key), fp.get(key)
            if a is None or b is None:
                print(f"{key}: {'new case' if a is None else 'case gone'}")
                diffs += 1
                continue
            changed = [k for k in sorted(set(a) & set(b)) if a[k] != b[k]]
            if changed:
                diffs += 1
                print(f"{key}: {', '.join(changed)}")
        n = len([k for k in fp if not args.only or args.only in k])
        print(f"{n} cases, {diffs} differences")
        return 1 if diffs else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
