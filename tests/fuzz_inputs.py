"""The large campaign of random estimator inputs (not collected by pytest).

    python tests/fuzz_inputs.py [N_CASES] [SEED]

Runs N_CASES (default 20000) random cases of ``input_fuzz``; prints the
failures (an exception that is not a one-line ValueError) and exits 1 if
there is any.  A crash kills this process: run it under ``catchsegv`` or look
at the exit status.
"""
import sys

from input_fuzz import fuzz

if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    result = fuzz(n, seed)
    print("\n".join(result["failures"]))
    print(f"{result['cases']} cases, {len(result['failures'])} failures")
    sys.exit(1 if result["failures"] else 0)
