"""An estimator whose worker process dies in its pass (for the Dask tests: the worker
imports this module, the tests' folder being on its path)."""
import os

from cwkit.linear import PassiveAggressive


class DiesInPass(PassiveAggressive):
    """PA whose pass in a worker (``_pass``) ends its process while the file
    ``CWKIT_DIE_MARKER`` names holds a positive count, which it decrements first (so a
    re-run succeeds once the count is spent); the count -1 means: always die."""

    def _pass(self, rows, y, order):
        marker = os.environ.get("CWKIT_DIE_MARKER")
        if marker and os.path.exists(marker):
            with open(marker) as f:
                left = int(f.read())
            if left != 0:   # replaced whole: another worker never reads a half-written file
                tmp = f"{marker}.{os.getpid()}"
                with open(tmp, "w") as f:
                    f.write(str(max(left - 1, -1) if left > 0 else -1))
                os.replace(tmp, marker)
                os._exit(1)
        return super()._pass(rows, y, order)
