"""Throughput and memory of svmlight readers.

Readers: ``cwkit.load_svmlight``, ``cwkit.iter_svmlight`` (default batch
size, prefetch on), scikit-learn's ``load_svmlight_file`` and
``svmloader.load_svmfile`` (``pip install svmloader``; reported as missing
when it is not installed).  Then reading and learning together, as the CLI
does: one PA-I pass (``partial_fit``) over the loaded matrix, and over the
batches of ``iter_svmlight`` without and with the background prefetch
(the file's width from ``scan_svmlight``, not timed; their memory column
includes the model's state, and the loaded matrix is part of the baseline).
Last, ``dump_svmlight`` writing the loaded file back (to /dev/null; MB/s
of the input file's size, which the output matches to within the labels'
spelling).
Files: the synthetic text-like file of ``_synth.py`` (200,000 rows, 2**20
features, ~20M nonzeros, ~335 MB) and ``../shared/data/text/trec07p-half.svm.xz``
decompressed, both cached in ``bench_data/``.  Every measurement runs in a
fresh subprocess, after the file has been read once so that it is in the
page cache; times exclude interpreter start-up and imports.

Output: a ``# machine:`` line (the processor's model name, cores, load average),
then one tab-separated row per (file, reader) with wall and CPU seconds
(all threads), MB/s and rows/s (wall), the peak resident memory above the
interpreter's baseline (resident size after imports; Linux's peak counter
is reset to it through /proc/self/clear_refs, getrusage elsewhere), the
file size, and rows, nonzeros and a checksum of the result so that readers
can be seen to agree.

Usage: ``python benchmarks/bench_svmlight.py [--rows N] [--repeat K]`` (with
``--repeat`` the fastest of K fresh processes is reported: shared machines
are noisy).
"""
import argparse
import lzma
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import _synth  # noqa: E402
from bench_growth import processor_name  # noqa: E402

TREC = ROOT.parent / "shared" / "data" / "text" / "trec07p-half.svm.xz"

CHILD = r"""
import resource, sys, time
import numpy as np
reader, path = sys.argv[1], sys.argv[2]
def status(key):                      # MiB, from /proc/self/status (Linux)
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(key)) / 1024
def baseline():
    # The interpreter's resident size after imports; then reset the peak
    # ("high-water mark") to it, so that import-time transients do not count.
    try:
        base = status("VmRSS:")
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return base
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
def peak():
    try:
        return status("VmHWM:")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
if reader == "cwkit.load_svmlight":
    import cwkit
    def run():
        X, y = cwkit.load_svmlight(path)
        return X.shape[0], X.nnz, float(X.data.sum()) + float(y.sum())
elif reader == "cwkit.iter_svmlight":
    import cwkit
    def run():
        rows = nnz = 0
        total = 0.0
        for X, y in cwkit.iter_svmlight(path):
            rows += X.shape[0]
            nnz += X.nnz
            total += float(X.data.sum()) + float(y.sum())
        return rows, nnz, total
elif reader.startswith("PA-I"):
    import cwkit
    info = cwkit.scan_svmlight(path)          # the CLI's pre-scan, not timed
    classes = info.classes
    if reader == "PA-I pass over the loaded matrix":
        X, y = cwkit.load_svmlight(path, n_features=info.n_features)
    def run():
        model = cwkit.PassiveAggressive("pa1")
        if reader == "PA-I pass over the loaded matrix":
            model.partial_fit(X, y, classes=classes)
            return X.shape[0], X.nnz, float(model.coef_.sum())
        rows = nnz = 0
        for Xb, yb in cwkit.iter_svmlight(path, n_features=info.n_features,
                                          zero_based=info.zero_based,
                                          prefetch=reader.endswith("prefetch")):
            model.partial_fit(Xb, yb, classes=classes)
            rows += Xb.shape[0]
            nnz += Xb.nnz
        return rows, nnz, float(model.coef_.sum())
elif reader == "cwkit.dump_svmlight (writing)":
    import os
    import cwkit
    X, y = cwkit.load_svmlight(path)
    def run():
        with open(os.devnull, "wb") as sink:
            cwkit.dump_svmlight(X, y, sink)
        return X.shape[0], X.nnz, float(X.data.sum()) + float(y.sum())
elif reader == "sklearn.load_svmlight_file":
    from sklearn.datasets import load_svmlight_file
    def run():
        X, y = load_svmlight_file(path)
        return X.shape[0], X.nnz, float(X.data.sum()) + float(y.sum())
elif reader == "svmloader.load_svmfile":
    try:
        import svmloader
    except ImportError:
        print("missing")
        sys.exit(0)
    def run():
        X, y = svmloader.load_svmfile(path)
        return X.shape[0], X.nnz, float(X.data.sum()) + float(y.sum())
base = baseline()
t, c = time.perf_counter(), time.process_time()
rows, nnz, check = run()
dt, cpu = time.perf_counter() - t, time.process_time() - c
print(dt, cpu, rows, nnz, repr(check), peak() - base)
"""

READERS = ["cwkit.load_svmlight", "cwkit.iter_svmlight", "svmloader.load_svmfile",
           "sklearn.load_svmlight_file", "PA-I pass over the loaded matrix",
           "PA-I over iter_svmlight batches", "PA-I over iter_svmlight batches, prefetch",
           "cwkit.dump_svmlight (writing)"]


def files(n_rows):
    out = [("synthetic", _synth.write(n_rows=n_rows))]
    if TREC.exists():
        plain = _synth.DATA / "trec07p-half.svm"
        if not plain.exists():
            with lzma.open(TREC, "rb") as src, open(plain, "wb") as dst:
                while chunk := src.read(1 << 22):
                    dst.write(chunk)
        out.append(("trec07p-half", plain))
    else:
        print(f"# {TREC} is absent: only the synthetic file is measured", file=sys.stderr)
    return out


def measure(reader, path):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", CHILD, reader, str(path)], env=env,
                         capture_output=True, text=True, check=True, cwd="/")
    return res.stdout.split()


def main(argv=None):
    ap = argparse.ArgumentParser(description="svmlight reader throughput and memory")
    ap.add_argument("--rows", type=int, default=200_000, help="rows of the synthetic file")
    ap.add_argument("--repeat", type=int, default=1,
                    help="fresh processes per measurement; the fastest is reported")
    args = ap.parse_args(argv)
    print(f"# machine: {processor_name()}, {os.cpu_count()} cores, load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print("file\treader\tseconds\tcpu_seconds\tMB_per_s\trows_per_s"
          "\tpeak_MiB_above_baseline\tfile_MB\trows\tnnz\tchecksum")
    for name, path in files(args.rows):
        size = os.path.getsize(path) / 1e6
        with open(path, "rb") as fh:                      # warm the page cache
            while fh.read(1 << 24):
                pass
        for reader in READERS:
            runs = [measure(reader, path) for _ in range(args.repeat)]
            if runs[0] == ["missing"]:
                print(f"{name}\t{reader}\tnot installed")
                continue
            out = min(runs, key=lambda r: float(r[0]))
            dt, cpu, rows, nnz, check, peak = (float(out[0]), float(out[1]), int(out[2]),
                                               int(out[3]), out[4], float(out[5]))
            print(f"{name}\t{reader}\t{dt:.3f}\t{cpu:.3f}\t{size / dt:.1f}\t{rows / dt:.0f}"
                  f"\t{peak:.1f}\t{size:.1f}\t{rows}\t{nnz}\t{check}", flush=True)


if __name__ == "__main__":
    main()
