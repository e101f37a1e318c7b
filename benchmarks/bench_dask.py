"""Training over partitions on Dask (``cwkit.distributed.fit``) against sequential passes.

Measures, on the synthetic text-like set (``_synth.text_like``, a train file and a held-out
test file cut from one draw) and on real sets from ``shared/data`` when present:

* test error after each of R rounds with 1, 2 and 4 partitions, for each mixing rule,
  against the sequential model after the same number of passes, of the averaged model
  (``average=True``, what ``cwkit eval`` scores by default) and of its last iterate (the
  model ``average=False`` gives, from the same state);
* wall time of ``fit`` (reading the file included, the cluster's start excluded) on a
  ``LocalCluster`` of 1 and 2 worker processes, one partition per worker, against one
  process that reads the file and makes R passes (``load_svmlight`` + ``fit``);
* bytes of model state sent per round (down and back up).

The load average is printed with every timing, as the machine may be shared.

    python benchmarks/bench_dask.py --rows 1000000 --rounds 5

The timing runs also report the CPU seconds of each process (the driver's includes a
LocalCluster's scheduler and nannies, which run in it) and each round's wall time.
"""
import argparse
import json
import lzma
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _synth  # noqa: E402

import cwkit  # noqa: E402
import cwkit.distributed as cwd  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def load():
    return f"{os.getloadavg()[0]:.1f}"


def synth_files(n_rows, n_test, n_features):
    """Train and test files of one text-like draw (cached in bench_data/)."""
    base = _synth.DATA / f"dask-synth-{n_rows}x{n_features}"
    train, test = _synth.write(f"{base}.svm", test=f"{base}.t.svm", n_test=n_test,
                               n_rows=n_rows, n_features=n_features)
    return str(train), str(test)


_WIDE = {}


def test_error(est, X, y, last=False):
    """Test error of `est` on (X, y), X cut or widened to the model's width once; with
    `last`, of its last iterate (``average=True``: the model ``average=False`` gives)."""
    width = est.n_features_in_
    if X.shape[1] != width:
        key = (id(X), width)
        if key not in _WIDE:
            import scipy.sparse as sp
            _WIDE.clear()
            _WIDE[key] = X[:, :width] if X.shape[1] > width else sp.csr_matrix(
                (X.data, X.indices, X.indptr), shape=(X.shape[0], width))
        X = _WIDE[key]
    return float(np.mean((est._predict_last(X) if last else est.predict(X)) != y))


def sequential(algo, params, train, rounds, X_test, y_test, last=False):
    """Read the file and make `rounds` passes in one process: time and error per pass
    (with `last`, also the last iterate's, ``last``)."""
    t0 = time.perf_counter()
    X, y = cwkit.load_svmlight(train)
    t_read = time.perf_counter() - t0
    est = cwkit.make(algo, **params)
    errors, lasts, t_fit = [], [], 0.0
    classes = np.unique(y)
    for _ in range(rounds):
        t1 = time.perf_counter()
        est.partial_fit(X, y, classes=classes)
        t_fit += time.perf_counter() - t1
        errors.append(test_error(est, X_test, y_test))
        if last:
            lasts.append(test_error(est, X_test, y_test, last=True))
    return {"seconds": t_read + t_fit, "read": t_read, "errors": errors, "last": lasts}


def _cpu(client):
    """CPU seconds so far of the driver (with the scheduler and the nannies of a
    LocalCluster, which run in its process), the scheduler if apart, and each worker."""
    out = {"driver": time.process_time()}
    if client.run_on_scheduler(os.getpid) != os.getpid():
        out["scheduler"] = client.run_on_scheduler(time.process_time)
    for i, (_, c) in enumerate(sorted(client.run(time.process_time).items())):
        out[f"worker{i + 1}"] = c
    return out


def distributed_run(client, algo, params, data, rounds, mixing, X_test, y_test, partitions,
                    per_round=True, last=False):
    """``cwkit.distributed.fit``: wall time, CPU time of each process, and per round its
    seconds, bytes and (`per_round`: else only after the last) test error (with `last`,
    also the last iterate's), which is computed outside the timed span."""
    info, scoring = [], [0.0]

    def cb(r):
        t = time.perf_counter()
        scored = per_round or r["round"] == rounds
        info.append({"round": r["round"], "seconds": r["seconds"], "bytes": r["bytes"],
                     "progressive": r["mistakes"] / max(r["examples"], 1),
                     "test": test_error(r["estimator"], X_test, y_test) if scored else None,
                     "last": test_error(r["estimator"], X_test, y_test, last=True)
                     if scored and last else None})
        scoring[0] += time.perf_counter() - t

    cpu0 = _cpu(client)
    t0 = time.perf_counter()
    cwd.fit(cwkit.make(algo, **params), data, client=client, rounds=rounds, mixing=mixing,
            partitions=partitions, callback=cb)
    wall = time.perf_counter() - t0 - scoring[0]
    cpu1 = _cpu(client)
    cpu = {k: cpu1[k] - cpu0[k] for k in cpu0}
    cpu["driver"] -= scoring[0]
    return {"seconds": wall, "cpu": cpu, "rounds": info}


def cluster(n):
    import distributed
    lc = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", silence_logs=50)
    c = distributed.Client(lc)
    c.wait_for_workers(n)
    return c


def _errors(errors):
    return " ".join(f"{100 * e:.2f}" for e in errors)


def accuracy(client, name, algos, train, test, rounds, parts, mixings, out):
    """Test error per round: sequential passes, and P partitions per mixing rule; each
    of the averaged model (``average=True``, lines ``avg``) and of its last iterate
    (lines ``last``: the model ``average=False`` gives, from the same state)."""
    X_test, y_test = cwkit.load_svmlight(test)
    for algo, params in algos:
        params = {**params, "average": True}
        seq = sequential(algo, params, train, rounds, X_test, y_test, last=True)
        label = algo + "".join(f":{k}={v:g}" for k, v in params.items() if k != "average")
        row = {"data": name, "algo": algo, "params": params, "sequential": seq["errors"],
               "sequential_last": seq["last"], "mixed": {}, "mixed_last": {}}
        for mix in mixings:
            gaussian = algo in ("cw", "arow", "sop")
            if (mix == "confidence" and not gaussian) or (mix == "touched" and gaussian):
                continue
            for p in parts:
                res = distributed_run(client, algo, params, train, rounds, mix, X_test,
                                      y_test, p, last=True)
                for key, kind, seq_errors in (("mixed", "test", seq["errors"]),
                                              ("mixed_last", "last", seq["last"])):
                    errors = [r[kind] for r in res["rounds"]]
                    row[key][f"{mix}/{p}"] = errors
                    print(f"{name}\t{label}\t{'avg' if kind == 'test' else 'last'}\t{mix}\t"
                          f"P={p}\t{_errors(errors)}\t(sequential {_errors(seq_errors)})",
                          flush=True)
        out.append(row)


def timing(train, test, algos, rounds, repeat, out):
    """Wall time: one process against LocalClusters of 1 and 2 workers."""
    X_test, y_test = cwkit.load_svmlight(test)
    clients = {}
    for n in (1, 2):
        t0 = time.perf_counter()
        clients[n] = cluster(n)
        print(f"cluster of {n} started in {time.perf_counter() - t0:.1f} s", flush=True)
    try:
        for algo, params in algos:
            best = {"seq": np.inf, 1: np.inf, 2: np.inf}
            errs, cpus, walls = {}, {}, {}
            loads = []
            for _ in range(repeat):      # interleaved, best of `repeat`
                seq = sequential(algo, params, train, rounds, X_test, y_test)
                best["seq"] = min(best["seq"], seq["seconds"])
                errs["seq"] = seq["errors"][-1]
                loads.append(load())
                for n in (1, 2):
                    res = distributed_run(clients[n], algo, params, train, rounds, "auto",
                                          X_test, y_test, n, per_round=False)
                    if res["seconds"] < best[n]:
                        cpus[n] = res["cpu"]
                        walls[n] = [r["seconds"] for r in res["rounds"]]
                    best[n] = min(best[n], res["seconds"])
                    errs[n] = res["rounds"][-1]["test"]
                    loads.append(load())
                    bytes_ = res["rounds"][0]["bytes"]
            row = {"algo": algo, "rounds": rounds, "seconds": best, "test_error": errs,
                   "cpu": cpus, "round_seconds": walls,
                   "bytes_per_round_2_workers": bytes_, "load": loads,
                   "speedup_2_vs_1": best[1] / best[2], "speedup_2_vs_seq": best["seq"] / best[2]}
            out.append(row)
            print(f"TIME\t{algo}\tseq {best['seq']:.1f} s\t1 worker {best[1]:.1f} s\t"
                  f"2 workers {best[2]:.1f} s\t2 vs 1: {best[1] / best[2]:.2f}x\t2 vs seq: "
                  f"{best['seq'] / best[2]:.2f}x\terrors seq {100 * errs['seq']:.2f} "
                  f"1w {100 * errs[1]:.2f} 2w {100 * errs[2]:.2f}\tbytes/round {bytes_}\t"
                  f"load {' '.join(loads)}", flush=True)
            for n in (1, 2):
                print(f"  {n} worker(s), CPU s: " + " ".join(
                    f"{k} {v:.2f}" for k, v in cpus[n].items()) + "; round walls s: "
                    + " ".join(f"{w:.2f}" for w in walls[n]), flush=True)
    finally:
        for c in clients.values():
            lc = c.cluster
            c.close()
            lc.close()


def real_sets(tmp, names):
    """(name, train, test) of the real sets named and present, decompressed to `tmp`."""
    sets = [("a9a", "adult/a9a.gz", "adult/a9a.t.gz"),
            ("20ng-pc-mac", "text/20ng-pc-mac.train.xz", "text/20ng-pc-mac.test.xz"),
            ("usps", "digits/usps.scale.xz", "digits/usps.scale.t.xz")]
    out = []
    for name, tr, te in sets:
        if name not in names:
            continue
        if not (SHARED / tr).exists():
            print(f"{SHARED / tr} is absent: {name} skipped", flush=True)
            continue
        paths = []
        for rel in (tr, te):
            dst = Path(tmp) / (Path(rel).stem + ".svm")
            opener = lzma.open if rel.endswith(".xz") else __import__("gzip").open
            with opener(SHARED / rel, "rb") as f, open(dst, "wb") as g:
                shutil.copyfileobj(f, g)
            paths.append(str(dst))
        out.append((name, *paths))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--test-rows", type=int, default=50_000)
    ap.add_argument("--features", type=int, default=2**20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--skip", choices=("timing", "accuracy", "real"), action="append",
                    default=[])
    ap.add_argument("--algos", default="pa1,arow,cw",
                    help="of pa1 (C=0.1), pa, perceptron, arow (r=0.1), cw; NAME:K=V sets "
                    "a hyper-parameter (e.g. pa1:C=1, cwkit's default)")
    ap.add_argument("--parts", default="1,2,4", help="partitions of the accuracy runs")
    ap.add_argument("--mixings", default="average,updates,confidence,touched")
    ap.add_argument("--sets", default="a9a,20ng-pc-mac,usps",
                    help="real sets of the accuracy runs (when present)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    if not {"timing", "accuracy"} <= set(args.skip):
        train, test = synth_files(args.rows, args.test_rows, args.features)
        print(f"data {train} ({os.path.getsize(train) / 2**20:.0f} MiB), load {load()}",
              flush=True)
    known = {"pa1": {"C": 0.1}, "pa": {}, "perceptron": {}, "arow": {"r": 0.1}, "cw": {}}
    algos = []
    for item in args.algos.split(","):
        name, _, setting = item.partition(":")
        params = dict(known[name])
        if setting:
            key, _, value = setting.partition("=")
            params[key] = float(value)
        algos.append((name, params))
    parts = tuple(int(p) for p in args.parts.split(","))
    mixings = tuple(args.mixings.split(","))
    results = {"timing": [], "accuracy": []}
    if "timing" not in args.skip:
        timing(train, test, algos, args.rounds, args.repeat, results["timing"])
    if {"accuracy", "real"} <= set(args.skip):
        client = None
    else:
        client = cluster(2)
    try:
        if "accuracy" not in args.skip:
            accuracy(client, "synthetic", algos, train, test, args.rounds, parts, mixings,
                     results["accuracy"])
        if "real" not in args.skip:
            with tempfile.TemporaryDirectory() as tmp:
                for name, tr, te in real_sets(tmp, args.sets.split(",")):
                    accuracy(client, name, algos, tr, te, args.rounds, parts, mixings,
                             results["accuracy"])
    finally:
        if client is not None:
            lc = client.cluster
            client.close()
            lc.close()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
