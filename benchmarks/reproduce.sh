#!/usr/bin/env bash
# Rerun the experiments of docs/reproductions.md; outputs go to $OUT (default ./repro).
# Usage: bash benchmarks/reproduce.sh [r1 r2 r3 r4 r5 r6 r7]   (default: all)
# The real-data runs (r3's second half, r5, r6) read ../shared/data (DATA=... to override).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="${OUT:-repro}"
DATA="${DATA:-$HERE/../../shared/data}"
CWKIT="${CWKIT:-python -m cwkit}"
mkdir -p "$OUT"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(r1 r2 r3 r4 r5 r6 r7)

for step in "${steps[@]}"; do
  case "$step" in
  r1)  # [ECCW08] Sect. 5: 1,000 examples, cumulative mistakes, 7 algorithms
    $CWKIT eval -q --synthetic crammer --n-samples 1000 --test-size 10000 --repeats 100 \
      --algos perceptron,pa,sop:covariance=full,cw:covariance=diag,cw:covariance=full,cw-stdev:covariance=diag,cw-stdev:covariance=full \
      --grid cw.eta=0.55,0.6,0.7,0.8,0.9,0.95 --grid cw.a=0.1,1,10 \
      --grid cw-stdev.eta=0.55,0.6,0.7,0.8,0.9,0.95 --grid cw-stdev.a=0.1,1,10 \
      --grid sop.a=0.1,1,10 | tee "$OUT/r1.txt" ;;
  r2)  # [AROW13] Sect. 5.2: 5,000 examples, 10% label noise, 10,000 clean test examples
    $CWKIT eval -q --synthetic crammer --n-samples 5000 --test-size 10000 --noise 0.1 \
      --repeats 100 \
      --algos perceptron,pa,sop:covariance=diag,sop:covariance=full,cw:covariance=diag,cw:covariance=full,arow:covariance=diag,arow:covariance=full \
      --grid arow.r=0.01,0.1,1,10,100 --grid cw.eta=0.55,0.6,0.7,0.8,0.9,0.95 \
      --grid sop.a=0.1,1,10 | tee "$OUT/r2.txt" ;;
  r3)  # [GPA13] Table 2, row 7 (twonorm): 25 trials of 5,550 training / 1,850 test
    G=1e-5,1e-4,1e-3,1e-2,1e-1,1,10
    $CWKIT eval -q --synthetic twonorm --n-samples 5550 --test-size 1850 --repeats 25 \
      --algos pa1,bpa1:batch_size=4,bpa1:batch_size=8,pa2,bpa2:batch_size=4,bpa2:batch_size=8,pa-ls,bpa-ls:batch_size=4,bpa-ls:batch_size=8 \
      --grid pa1.C=$G --grid pa2.C=$G --grid pa-ls.C=$G \
      --grid bpa1.C=$G --grid bpa2.C=$G --grid bpa-ls.C=$G | tee "$OUT/r3.txt"
    # the same on the twonorm file of ../shared/data, 4 folds = 75% / 25% splits
    $CWKIT eval -q --cv 4 --shuffle \
      --algos pa1,bpa1:batch_size=4,bpa1:batch_size=8,pa2,bpa2:batch_size=4,bpa2:batch_size=8,pa-ls,bpa-ls:batch_size=4,bpa-ls:batch_size=8 \
      --grid pa1.C=$G --grid pa2.C=$G --grid pa-ls.C=$G \
      --grid bpa1.C=$G --grid bpa2.C=$G --grid bpa-ls.C=$G "$DATA/uci/twonorm" | tee "$OUT/r3-file.txt" ;;
  r4)  # [LMC09] Sect. 4.1: four phases of 800, mistakes after the phase-3 shift
    $CWKIT eval -q --synthetic drift --n-per-phase 800 --repeats 40 --algos pa,reg-pa,l2-pa \
      --grid reg-pa.alpha=0.001,0.003,0.01,0.03,0.1 --grid l2-pa.beta=1.5,2,3,5,10,30 \
      --tune-on first-half --curve "$OUT/r4-curve.csv" --curve-every 100 | tee "$OUT/r4.txt"
    python - "$OUT/r4-curve.csv" <<'EOF' | tee -a "$OUT/r4.txt"
import collections, csv, sys
at = collections.defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1])):
    at[(r["algo"], r["trial"])][int(r["examples"])] = int(r["mistakes"])
print("mean mistakes in examples 1601-1700 / 1601-2400 / 1601-3200 (phase 3 starts at 1601)")
for algo in ("pa", "reg-pa", "l2-pa"):
    runs = [d for (a, _), d in at.items() if a == algo]
    means = [sum(d[hi] - d[1600] for d in runs) / len(runs) for hi in (1700, 2400, 3200)]
    print(f"{algo:8s}" + "".join(f"{m:9.2f}" for m in means))
EOF
    ;;
  r5)  # [AROW13] Table 1: mean rank of pa, cw, arow on 20 Newsgroups pairs and Amazon
    T="$(cd "$DATA/text" && pwd)"
    for noise in 0 0.1 0.3; do
      $CWKIT eval -q --algos pa,cw,arow --cv 10 --noise "$noise" \
        --grid arow.r=0.1,1,10,100 --grid cw.eta=0.6,0.7,0.8,0.9,0.95 \
        "$T/20ng-pc-mac.train.xz" "$T/20ng-elec-med.train.xz" "$T/20ng-guns-mideast.train.xz" \
        "$T/amazon-books.svm.xz" "$T/amazon-dvd.svm.xz" | tee "$OUT/r5-noise-$noise.txt"
    done ;;
  r6)  # [SCW12]: cw, arow, scw1, scw2 (full) on Adult (a9a), 10 reshuffles, clean and 10% noise
    for noise in 0 0.1; do
      $CWKIT eval -q --algos cw:covariance=full,arow:covariance=full,scw1:covariance=full,scw2:covariance=full \
        --repeats 10 --shuffle --noise "$noise" --n-features 123 \
        --grid cw.eta=0.7,0.9 --grid arow.r=0.1,1,10 \
        --grid scw1.C=0.1,1 --grid scw1.eta=0.75,0.9 --grid scw2.C=0.1,1 --grid scw2.eta=0.75,0.9 \
        --test "$DATA/adult/a9a.t.gz" "$DATA/adult/a9a.gz" | tee "$OUT/r6-noise-$noise.txt"
    done ;;
  r7)  # [NHERD10]: NHERD (full and its three diagonal forms) on r2's task
    $CWKIT eval -q --synthetic crammer --n-samples 5000 --test-size 10000 --noise 0.1 \
      --repeats 100 \
      --algos perceptron,pa,cw:covariance=diag,cw:covariance=full,arow:covariance=diag,arow:covariance=full,nherd:covariance=diag,nherd:covariance=diag:diag_update=direct,nherd:covariance=diag:diag_update=exact,nherd:covariance=full \
      --grid arow.r=0.01,0.1,1,10,100 --grid cw.eta=0.55,0.6,0.7,0.8,0.9,0.95 \
      --grid nherd.C=0.0001,0.001,0.01,0.1,1,10,100,1000 | tee "$OUT/r7.txt" ;;
  *) echo "unknown step $step" >&2; exit 2 ;;
  esac
done
