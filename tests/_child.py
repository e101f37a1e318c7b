"""Run test code in a child Python: a crash (a signal, an abort) fails the test
instead of killing the test run."""
import json
import os
import subprocess
import sys
import textwrap


#: The tests' folder, importable in the child (its helper modules).
TESTS = os.path.dirname(os.path.abspath(__file__))


def run_child(code, timeout=120):
    """Run `code` in a fresh interpreter; return what it printed as JSON on its last line.

    The tests' folder is on the child's ``sys.path``.

    A child killed by a signal, exiting non-zero or printing no result fails
    with the child's stderr in the message.
    """
    code = f"import sys\nsys.path.insert(0, {TESTS!r})\n" + textwrap.dedent(code)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, check=False)
    if proc.returncode != 0:
        how = (f"was killed by signal {-proc.returncode}" if proc.returncode < 0
               else f"exited with status {proc.returncode}")
        raise AssertionError(f"the child process {how}:\n{proc.stderr[-3000:]}")
    lines = proc.stdout.strip().splitlines()
    assert lines, f"the child printed nothing:\n{proc.stderr[-3000:]}"
    return json.loads(lines[-1])
