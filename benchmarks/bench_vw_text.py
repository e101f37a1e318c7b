"""Raw text: cwkit's defaults beside Vowpal Wabbit's, on the same files, in one run.

Each binary text set of the data folder (the 20 Newsgroups pairs' train and test
files, Amazon books and DVD, the TREC 2007 spam stream) is written as Vowpal Wabbit
text, each feature's index as its name (``LABEL |f 12:0.5 40:1 ...``), and given to
both learners, one pass in the stored order, progressive error (each row predicted,
then learnt):

* ``vw --binary -b 18 -d FILE`` (Vowpal Wabbit's defaults: squared loss, adaptive,
  normalised, importance-invariant steps), through the ``vowpalwabbit`` package;
* ``cwkit eval --algos pa,cw,arow FILE.vw`` (the defaults: the text treatment of
  rows, ``--rows text``, and each rule's defaults);
* the same data as svmlight, ``cwkit eval --algos pa,cw,arow --hash-bits 18 --rows
  text FILE`` (the same columns up to their order), and with ``--rows raw``.

Prints one row per set: Vowpal Wabbit's error, cwkit's per rule, and whether
cwkit's best default rule is at least as good.  Needs ``pip install vowpalwabbit``
(a peer, never a dependency of cwkit).

    PYTHONPATH=. python benchmarks/bench_vw_text.py --data DIR [--only NAME]
"""
import argparse
import json
import lzma
import os
import subprocess
import sys
import tempfile

from bench_growth import processor_name

SETS = ("20ng-pc-mac.train", "20ng-pc-mac.test", "20ng-elec-med.train",
        "20ng-elec-med.test", "20ng-guns-mideast.train", "20ng-guns-mideast.test",
        "amazon-books.svm", "amazon-dvd.svm", "trec07p-half.svm")
ALGOS = "pa,cw,arow"


def write_vw(src, dst):
    """The svmlight file `src` (xz) as Vowpal Wabbit text: labels +-1, namespace f."""
    with lzma.open(src, "rt") as f, open(dst, "w") as g:
        for line in f:
            label, _, feats = line.strip().partition(" ")
            g.write(("1" if float(label) > 0 else "-1") + " |f " + feats + "\n")


def vw_error(path):
    """Progressive error of ``vw --binary -b 18`` (one pass, Vowpal Wabbit's defaults)."""
    import vowpalwabbit
    ws = vowpalwabbit.Workspace(f"--binary -b 18 -d {path} --quiet")
    ws.run_parser()
    err = ws.get_sum_loss() / ws.get_weighted_examples()
    ws.finish()
    return err


def cwkit_errors(path, *options):
    """Progressive error of each rule of ``cwkit eval --algos pa,cw,arow``."""
    out = subprocess.run([sys.executable, "-m", "cwkit", "eval", "-q", "--format", "json",
                          "--algos", ALGOS, *options, path],
                         check=True, capture_output=True, text=True).stdout
    return {r["algo"]: r["online_error"] for r in json.loads(out)["tasks"][0]["results"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="the data folder (its text/ subfolder)")
    ap.add_argument("--only", help="the sets whose name contains this")
    args = ap.parse_args(argv)
    import vowpalwabbit
    print(f"{processor_name()}; vowpalwabbit {vowpalwabbit.__version__}; progressive "
          "error %, one pass")
    rules = ALGOS.split(",")
    head = ["set", "vw"] + [f"{r}.vw" for r in rules] + ["arow.svm", "arow.raw", "best<=vw"]
    print(" | ".join(head))
    wins = 0
    sets = [s for s in SETS if not args.only or args.only in s]
    with tempfile.TemporaryDirectory() as tmp:
        for name in sets:
            src = os.path.join(args.data, "text", name + ".xz")
            vw = os.path.join(tmp, name + ".vw")
            write_vw(src, vw)
            ref = vw_error(vw)
            ours = cwkit_errors(vw)
            svm = cwkit_errors(src, "--hash-bits", "18", "--rows", "text")
            raw = cwkit_errors(src, "--hash-bits", "18", "--rows", "raw")
            best = min(ours.values())
            wins += best <= ref
            cells = [name, f"{100 * ref:.2f}"] + [f"{100 * ours[r]:.2f}" for r in rules]
            cells += [f"{100 * svm['arow']:.2f}", f"{100 * raw['arow']:.2f}",
                      "yes" if best <= ref else "NO"]
            print(" | ".join(cells), flush=True)
    print(f"cwkit's best default rule at least as good on {wins} of {len(sets)} sets")


if __name__ == "__main__":
    main()
