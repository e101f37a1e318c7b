"""End-to-end time and peak memory of ``cwkit eval`` against Vowpal Wabbit and scikit-learn.

On the synthetic text-like file of ``benchmarks/_synth.py`` (338 MB with the defaults:
200,000 rows, 2**20 features, about 20M nonzeros) this times, each in a fresh process:

* ``python -m cwkit eval --algos pa,cw,arow FILE`` (three algorithms, one streamed pass);
* one hinge-loss Vowpal Wabbit run, ``python -m vowpalwabbit --loss_function hinge -b 21
  --binary`` on the same data in VW's text format (the conversion is not timed);
* scikit-learn: ``load_svmlight_file`` then three ``partial_fit`` passes, one for each of
  its three online linear learners closest to pa/cw/arow (PassiveAggressiveClassifier with
  the hinge and the squared hinge, Perceptron);

and records each process's wall time (the fastest of ``--repeat`` runs) and peak resident
memory (``ru_maxrss``). cwkit is also timed with ``--n-features``, ``--classes`` and
``--one-based`` given (VW is told ``-b 21``), which skips its scan of the file. It also
runs cwkit on a file with a quarter of the rows, to show that eval's peak memory does not
grow with the file. Targets: cwkit <= 0.5 x VW's wall time and <= 0.2 x scikit-learn's.

Prints one JSON object per measurement, then a summary. Needs ``pip install vowpalwabbit``
(else ``--skip-vw``) and scikit-learn (else ``--skip-sklearn``).
"""
import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _synth  # noqa: E402
from bench_growth import processor_name  # noqa: E402

# Runs a command and reports its wall time and the peak RSS of that child alone.
_LAUNCHER = """
import json, resource, subprocess, sys, time
cmd = json.loads(sys.argv[1])
t0 = time.perf_counter()
proc = subprocess.run(cmd, capture_output=True, text=True)
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"seconds": seconds, "peak_mb": peak / 1024, "rc": proc.returncode,
                  "stdout": proc.stdout[-20000:], "stderr": proc.stderr[-4000:]}))
"""

_SKLEARN = """
import sys, warnings
import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import PassiveAggressiveClassifier, Perceptron
warnings.simplefilter("ignore", FutureWarning)  # PassiveAggressiveClassifier, sklearn >= 1.8
X, y = load_svmlight_file(sys.argv[1], n_features=int(sys.argv[2]))
# recent load_svmlight_file returns int64 indices, which partial_fit refuses
X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
for est in (PassiveAggressiveClassifier(loss="hinge"),
            PassiveAggressiveClassifier(loss="squared_hinge"), Perceptron()):
    est.partial_fit(X, y, classes=[-1.0, 1.0])
print(X.shape[0])
"""


def measure(cmd, env=None, repeat=1):
    """Best (smallest wall time) of ``repeat`` runs, each in a fresh process."""
    full_env = {**os.environ, **(env or {})}
    best = None
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", _LAUNCHER, json.dumps(cmd)],
                             capture_output=True, text=True, env=full_env, check=True)
        result = json.loads(out.stdout)
        if result["rc"] != 0:
            raise SystemExit(f"{cmd[:4]} failed ({result['rc']}):\n{result['stderr']}")
        if best is None or result["seconds"] < best["seconds"]:
            best = result
    best["repeat"] = repeat
    return best


def to_vw(src, dst):
    """svmlight -> VW text format (``label |f idx:val ...``), cached; not timed."""
    if dst.exists():
        return dst
    tmp = dst.with_suffix(".tmp")
    with open(src, "rb") as fin, open(tmp, "wb") as fout:
        for line in fin:
            label, _, feats = line.partition(b" ")
            fout.write(b"%d |f %s" % (1 if float(label) > 0 else -1, feats))
    os.replace(tmp, dst)
    return dst


def run_cwkit(path, algos, repeat, extra=()):
    cmd = [sys.executable, "-m", "cwkit", "eval", "--algos", algos, str(path), "--quiet",
           "--format", "json", *extra]
    res = measure(cmd, env={"PYTHONPATH": str(ROOT)}, repeat=repeat)
    report = json.loads(res.pop("stdout"))
    res.pop("stderr")
    task = report["tasks"][0]
    res["online_error"] = {r["algo"]: r["online_error"] for r in task["results"]}
    res["examples"] = task["n_examples"]
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=2**20)
    ap.add_argument("--algos", default="pa,cw,arow")
    ap.add_argument("--skip-vw", action="store_true")
    ap.add_argument("--skip-sklearn", action="store_true")
    ap.add_argument("--skip-small", action="store_true",
                    help="skip the quarter-size run (memory independence)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per measurement; the fastest is kept (default 3)")
    args = ap.parse_args(argv)

    path = _synth.write(n_rows=args.rows, n_features=args.features)
    size_mb = path.stat().st_size / 2**20
    rows = []

    def emit(row):
        row = {"machine": platform.machine(), "python": platform.python_version(),
               "file_mb": round(size_mb, 1), **row}
        rows.append(row)
        print(json.dumps(row), flush=True)

    emit({"tool": "cwkit", "algos": args.algos, **run_cwkit(path, args.algos, args.repeat)})
    # The same with the width, labels and index base given, as VW is given -b 21: no scan.
    given = ("--n-features", str(args.features), "--classes=-1,1", "--one-based")
    emit({"tool": "cwkit", "algos": args.algos, "options": " ".join(given),
          **run_cwkit(path, args.algos, args.repeat, given)})
    if not args.skip_small:
        small = _synth.write(n_rows=args.rows // 4, n_features=args.features)
        emit({"tool": "cwkit", "algos": args.algos, "rows": args.rows // 4,
              "small_file_mb": round(small.stat().st_size / 2**20, 1),
              **run_cwkit(small, args.algos, args.repeat)})
    if not args.skip_vw:
        vw = to_vw(path, path.with_suffix(".vw"))
        res = measure([sys.executable, "-m", "vowpalwabbit", "--loss_function", "hinge",
                       "-b", "21", "--binary", "-d", str(vw), "--no_stdin"],
                      repeat=args.repeat)
        loss = [ln for ln in res.pop("stderr").splitlines() if ln.startswith("average loss")]
        res.pop("stdout")
        emit({"tool": "vowpalwabbit", "online_error": loss[-1].split("=")[-1].strip()
              if loss else None, **res})
    if not args.skip_sklearn:
        res = measure([sys.executable, "-c", _SKLEARN, str(path), str(args.features)],
                      repeat=args.repeat)
        res.pop("stdout"), res.pop("stderr")
        emit({"tool": "scikit-learn", **res})

    cw = rows[0]["seconds"]
    print(f"\nmachine: {processor_name()}, load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"cwkit eval --algos {args.algos}: {cw:.1f} s, peak {rows[0]['peak_mb']:.0f} MB "
          f"on {size_mb:.0f} MB")
    for row in rows[1:]:
        if row["tool"] == "cwkit" and "options" in row:
            print(f"  with {row['options']} (no scan): {row['seconds']:.1f} s, "
                  f"peak {row['peak_mb']:.0f} MB")
        elif row["tool"] == "cwkit":
            print(f"  same on a quarter of the rows ({row['small_file_mb']:.0f} MB): "
                  f"{row['seconds']:.1f} s, peak {row['peak_mb']:.0f} MB")
        else:
            target = 0.5 if row["tool"] == "vowpalwabbit" else 0.2
            ratio = cw / row["seconds"]
            print(f"  {row['tool']}: {row['seconds']:.1f} s, peak {row['peak_mb']:.0f} MB; "
                  f"cwkit/{row['tool']} = {ratio:.2f} (target <= {target}: "
                  f"{'met' if ratio <= target else 'NOT met'})")


if __name__ == "__main__":
    main()
