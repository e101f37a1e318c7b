"""The large campaign of damaged model files (not collected by pytest).

    python tests/fuzz_model_files.py [N_RANDOM] [SEED]

N_RANDOM (default 500) truncations and as many files with changed bytes per
original model (every linear, kernel and kernel_approx form of
``model_file_fuzz``), plus every field-by-field edit; prints the failures (a file
that loads to a different model or raises anything but a one-line
ModelFileError) and exits 1 if there is any.
"""
import sys

from model_file_fuzz import KERNEL_ORIGINALS, ORIGINALS, fuzz

if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    result = fuzz(n, seed, ORIGINALS + KERNEL_ORIGINALS)
    print("\n".join(result["failures"]))
    print(f"{result['cases']} damaged files, {result['errors']} ModelFileError, "
          f"{len(result['failures'])} failures")
    sys.exit(1 if result["failures"] else 0)
