"""End-to-end comparisons of cwkit with svmloader and Vowpal Wabbit, ratios in one run.

On the synthetic text-like file of ``benchmarks/_synth.py`` (with the defaults 200,000
rows, 2**20 features, about 20M nonzeros, 335 MB), every command runs in a fresh
process, file in the page cache, cwkit's modules byte-compiled first (as an installed
package has them); each figure is the median of ``--repeat`` rounds, and within a round
the commands run one after another (cwkit and its peers alternately):

* load: ``python -c "import cwkit; cwkit.load_svmlight(FILE)"`` against svmloader's
  ``load_svmfile`` and scikit-learn's ``load_svmlight_file`` (skipped with
  ``--no-sklearn``), whole process; and the load call alone, imports excluded (timed
  inside the same processes, after ``import cwkit, scipy.sparse``: svmloader imports
  scipy.sparse with itself, cwkit on its first call); cwkit's parallel parsing (the
  default) against ``n_jobs=1``;
* eval: ``python -m cwkit eval --algos pa,cw,arow FILE`` against one Vowpal Wabbit
  learner (hinge loss, ``-b 21``, one pass, no cache file) reading the same rows in VW's
  text format (converted once, not timed);
* noise: the same eval with ``--noise 0.1`` against the clean eval; the eval with
  ``--parse-jobs 2`` against the default (the cores the three learners leave: 1 on 2
  cores);
* import: ``python -c "import cwkit"`` against a bare interpreter and against
  ``import numpy, scipy.sparse``;
* partial_fit: single-row calls per second (2**20 features, pa1 and arow) on canonical
  CSR rows and on rows that scipy does not mark sorted (``diags(1 / norms) @ X``),
  timed in one process, the two kinds interleaved.

Prints a header (machine, versions, commit), the wall time of every run and the load
average at the end as ``#`` lines, then one tab-separated row per comparison:
what, cwkit seconds, peer, peer seconds, ratio (cwkit's time / the peer's: lower is
better; for partial_fit calls per second, higher is better), target, met. The peers
(``vowpalwabbit``, ``svmloader``, ``scikit-learn``) are installed into the running
environment when absent, for this benchmark only: cwkit does not depend on them. Quick
check: ``--rows 20000 --repeat 1``; the eval's rows alone (against VW, ``--parse-jobs 2``
and ``--noise 0.1``): ``--eval-only``; the single-row ``partial_fit`` calls alone (no file,
no peers): ``--partial-fit-only``.
"""
import argparse
import compileall
import importlib.metadata
import importlib.util
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _synth  # noqa: E402
from bench_eval import to_vw  # noqa: E402
from bench_growth import processor_name  # noqa: E402

# (module, distribution) of each peer; scikit-learn only with --sklearn.
PEERS = {"svmloader": "svmloader", "vowpalwabbit": "vowpalwabbit", "sklearn": "scikit-learn"}

# Times the load call inside the process (imports excluded) and prints it.
_LOAD = """
import sys, time
{imports}
t0 = time.perf_counter()
{call}
print(time.perf_counter() - t0)
"""
# Imports are excluded on both sides: svmloader imports scipy.sparse when it is imported,
# cwkit only on the first call that builds a matrix, so its timing imports it first too.
LOADERS = {
    "cwkit": ("import cwkit, scipy.sparse", "cwkit.load_svmlight(sys.argv[1])"),
    "cwkit n_jobs=1": ("import cwkit, scipy.sparse",
                       "cwkit.load_svmlight(sys.argv[1], n_jobs=1)"),
    "svmloader": ("import svmloader", "svmloader.load_svmfile(sys.argv[1], zero_based=False)"),
    "scikit-learn": ("from sklearn.datasets import load_svmlight_file",
                     "load_svmlight_file(sys.argv[1])"),
}


# Single-row partial_fit calls per second on canonical and unsorted rows (best of rounds).
_PARTIAL_FIT = """
import sys, time
import numpy as np, scipy.sparse as sp
sys.path.insert(0, sys.argv[1])
import _synth, cwkit
n = 3000
X, y = _synth.text_like(n_rows=n, n_features=2**20)
norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
U = sp.csr_matrix(sp.diags(1 / norms) @ X)      # out-of-order indices in every row
rows = {"canonical": [X[i:i + 1] for i in range(n)], "unsorted": [U[i:i + 1] for i in range(n)]}
best = {}
for _ in range(int(sys.argv[2])):
    for algo in ("pa1", "arow"):
        for kind, R in rows.items():
            m = cwkit.make(algo).partial_fit(R[0], y[:1], classes=[-1, 1])
            t0 = time.perf_counter()
            for i in range(1, n):
                m.partial_fit(R[i], y[i:i + 1])
            rate = (n - 1) / (time.perf_counter() - t0)
            best[algo, kind] = max(best.get((algo, kind), 0), rate)
for (algo, kind), rate in best.items():
    print(algo, kind, rate)
"""


def ensure_peer(module):
    """Import check of a peer, installing it with pip when absent; False if unavailable."""
    if importlib.util.find_spec(module):
        return True
    dist = PEERS[module]
    print(f"# {dist} is absent: installing it into {sys.prefix} for this benchmark only "
          f"(not a cwkit dependency): {sys.executable} -m pip install {dist}", flush=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "install", dist],
                          stdout=sys.stderr, stderr=sys.stderr)
    importlib.invalidate_caches()
    if proc.returncode == 0 and importlib.util.find_spec(module):
        return True
    print(f"# {dist} could not be installed (pip exit {proc.returncode}): "
          f"its comparisons are skipped", flush=True)
    return False


def version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def header(path, args):
    cpu = processor_name()
    git = ["git", "-C", str(ROOT)]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    if subprocess.run([*git, "diff", "--quiet", "HEAD", "--", "cwkit"]).returncode:
        commit += " (cwkit/ modified)"
    lines = [
        f"date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"machine: {cpu}, {os.cpu_count()} cores, load average "
        + " ".join(f"{x:.2f}" for x in os.getloadavg()),
        f"python: {platform.python_version()}, numpy {version('numpy')}, "
        f"scipy {version('scipy')}, cwkit commit {commit}",
        f"peers: svmloader {version('svmloader')}, vowpalwabbit {version('vowpalwabbit')}"
        + (f", scikit-learn {version('scikit-learn')}" if args.sklearn else ""),
        f"file: {path} ({path.stat().st_size / 1e6:.1f} MB, {args.rows} rows, "
        f"{args.features} features)",
        f"timing: fresh processes, warm page cache, median of {args.repeat} interleaved rounds",
    ]
    for line in lines:
        print("# " + line, flush=True)


def vw_command(vw_file):
    """The package's ``vw`` program if it ships one, else its Python API run as a program
    (``python -m vowpalwabbit``: a ``Workspace`` reading the file with its own parser)."""
    exe = Path(sys.executable).parent / "vw"
    prefix = [str(exe)] if exe.exists() else [sys.executable, "-m", "vowpalwabbit"]
    return [*prefix, "--loss_function", "hinge", "-b", "21", "--binary", "-d", str(vw_file),
            "--no_stdin"]


def byte_compile():
    """Byte-compile cwkit's modules, as ``pip install`` does for an installed package:
    under ``PYTHONDONTWRITEBYTECODE`` (or a tree never imported with bytecode writing
    on) every timed process would otherwise compile them from source, ~0.1 s of CPU
    that no installed cwkit spends."""
    if not compileall.compile_dir(ROOT / "cwkit", quiet=1):
        raise SystemExit(f"byte-compiling {ROOT / 'cwkit'} failed")
    print(f"# cwkit's modules byte-compiled first (as installed; "
          f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})",
          flush=True)


def warm(*paths):
    """Read the files once so that every timed run finds them in the page cache."""
    for path in paths:
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass


def run(cmd):
    """Wall time and CPU time (user + system, all its threads) of one fresh process; its
    stdout. Exits with its stderr if it fails."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if proc.returncode:
        raise SystemExit(f"failed ({proc.returncode}): {shlex.join(cmd)}\n"
                         f"{proc.stderr[-4000:]}")
    return seconds, cpu, proc.stdout


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=2**20)
    ap.add_argument("--repeat", type=int, default=3, help="rounds; medians are reported")
    ap.add_argument("--work", type=Path,
                    default=Path(tempfile.gettempdir()) / "cwkit-bench-e2e",
                    help="folder of the cached data files (default: %(default)s)")
    ap.add_argument("--no-noise", dest="noise", action="store_false",
                    help="skip the eval with --noise 0.1 (slow: it leaves the batched pass "
                    "at every flipped row)")
    ap.add_argument("--no-sklearn", dest="sklearn", action="store_false",
                    help="skip scikit-learn's load_svmlight_file (slow: about 12x cwkit)")
    ap.add_argument("--eval-only", action="store_true",
                    help="time only the eval's rows: cwkit eval, with --parse-jobs 2 and "
                    "(unless --no-noise) --noise 0.1, and Vowpal Wabbit")
    ap.add_argument("--partial-fit-only", action="store_true",
                    help="time only the single-row partial_fit calls (no file, no peers)")
    args = ap.parse_args(argv)
    if args.partial_fit_only:
        print(f"# machine: {processor_name()}, {os.cpu_count()} cores", flush=True)
        single_rows(run([sys.executable, "-c", _PARTIAL_FIT, str(HERE), str(args.repeat)])[2])
        return

    wanted = ["vowpalwabbit"] if args.eval_only else \
        [m for m in PEERS if m != "sklearn" or args.sklearn]
    have = {m: ensure_peer(m) for m in wanted}
    args.work.mkdir(parents=True, exist_ok=True)
    path = _synth.write(args.work / f"synth-{args.rows}x{args.features}.svm",
                        n_rows=args.rows, n_features=args.features)
    vw_file = None
    if have["vowpalwabbit"]:
        vw_file = to_vw(path, path.with_suffix(".vw"))
        print(f"# VW reads {vw_file}, the same rows in its text format (converted once, "
              f"not timed)", flush=True)
    header(path, args)

    py = sys.executable
    eval_cmd = [py, "-m", "cwkit", "eval", "--algos", "pa,cw,arow", "--quiet", str(path)]
    cmds = {"import cwkit": [py, "-c", "import cwkit"],
            "bare interpreter": [py, "-c", "pass"],
            "import numpy, scipy.sparse": [py, "-c", "import numpy, scipy.sparse"],
            "cwkit eval": eval_cmd,
            "cwkit eval --parse-jobs 2": [*eval_cmd, "--parse-jobs", "2"],
            "cwkit eval --noise 0.1": [*eval_cmd, "--noise", "0.1"]}
    if not args.noise:
        del cmds["cwkit eval --noise 0.1"]
    for name, (imports, call) in LOADERS.items():
        module = {"scikit-learn": "sklearn"}.get(name, None if name.startswith("cwkit") else name)
        if module is None or have.get(module):
            cmds[f"load {name}"] = [py, "-c", _LOAD.format(imports=imports, call=call),
                                    str(path)]
    if vw_file:
        cmds["vw"] = vw_command(vw_file)
    if args.eval_only:
        cmds = {name: cmd for name, cmd in cmds.items()
                if name.startswith("cwkit eval") or name == "vw"}

    byte_compile()
    warm(path, *([vw_file] if vw_file else []))
    wall = {name: [] for name in cmds}
    cpu = {name: [] for name in cmds}
    inside = {name: [] for name in cmds if name.startswith("load ")}
    for _ in range(args.repeat):
        for name, cmd in cmds.items():
            seconds, used, out = run(cmd)
            wall[name].append(seconds)
            cpu[name].append(used)
            if name in inside:
                inside[name].append(float(out.split()[-1]))
    for name, times in wall.items():
        print(f"# {name}: " + " ".join(f"{t:.3f}" for t in times) + " s wall, "
              + " ".join(f"{t:.3f}" for t in cpu[name]) + " s CPU", flush=True)
    out = "" if args.eval_only else run([py, "-c", _PARTIAL_FIT, str(HERE), str(args.repeat)])[2]
    print("# load average at the end: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    wall = {name: statistics.median(v) for name, v in wall.items()}
    cpu = {name: statistics.median(v) for name, v in cpu.items()}
    inside = {name: statistics.median(v) for name, v in inside.items()}

    print("\t".join(["what", "cwkit_s", "peer", "peer_s", "ratio", "target", "met"]))

    def row(what, mine, peer, theirs, target=None):
        ratio = mine / theirs
        met = "-" if target is None else ("yes" if ratio <= target else "no")
        print("\t".join([what, f"{mine:.3f}", peer, f"{theirs:.3f}", f"{ratio:.3f}",
                         "-" if target is None else f"<={target:g}", met]), flush=True)

    load = "load_svmlight whole process"
    for peer in ("svmloader", "scikit-learn") if "load cwkit" in wall else ():
        if f"load {peer}" in wall:
            row(load, wall["load cwkit"], peer, wall[f"load {peer}"])
    for peer, target in (("svmloader", 1 / 8), ("scikit-learn", None)):
        if f"load {peer}" in inside and "load cwkit" in inside:
            row("load_svmlight in process", inside["load cwkit"], peer,
                inside[f"load {peer}"], target)
    if "load cwkit" in wall:
        row("load_svmlight in process", inside["load cwkit"], "cwkit n_jobs=1",
            inside["load cwkit n_jobs=1"])
        row("load_svmlight whole process, CPU s", cpu["load cwkit"], "cwkit n_jobs=1",
            cpu["load cwkit n_jobs=1"])
    if "vw" in wall:
        row("eval pa,cw,arow whole process", wall["cwkit eval"], "vowpalwabbit hinge -b 21",
            wall["vw"], 0.5)
        row("eval pa,cw,arow whole process, CPU s", cpu["cwkit eval"],
            "vowpalwabbit hinge -b 21", cpu["vw"])
    if args.noise:
        row("eval pa,cw,arow --noise 0.1", wall["cwkit eval --noise 0.1"],
            "cwkit eval clean", wall["cwkit eval"], 1.2)
    row("eval pa,cw,arow whole process", wall["cwkit eval"], "cwkit eval --parse-jobs 2",
        wall["cwkit eval --parse-jobs 2"])
    if "import cwkit" in wall:
        row("import cwkit", wall["import cwkit"], "python -c pass", wall["bare interpreter"])
        row("import cwkit", wall["import cwkit"], "import numpy, scipy.sparse",
            wall["import numpy, scipy.sparse"])
    single_rows(out, header=False)


def single_rows(out, header=True):
    """The rows of the single-row partial_fit calls from `out` (the output of
    ``_PARTIAL_FIT``), after the load average and the table's header when `header`."""
    if header:
        print("# load average at the end: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
        print("\t".join(["what", "cwkit_s", "peer", "peer_s", "ratio", "target", "met"]))
    for line in out.splitlines():
        algo, kind, rate = line.split()
        met = "yes" if float(rate) >= 50_000 else "no"
        print("\t".join([f"partial_fit 1 row {algo} {kind} (calls/s)", f"{float(rate):.0f}",
                         "-", "-", "-", ">=50000", met]), flush=True)


if __name__ == "__main__":
    main()
