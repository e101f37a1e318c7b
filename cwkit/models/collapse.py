"""Variance collapse of the diagonal Gaussian-weight rules, found after a pass.

Confidence-weighted updates shrink the variances geometrically on
contradictory labels ([ECCW08] eq. 15; fastest for diagonal CW-Stdev at high
eta): a variance reaches 0 in floating point, and a weight whose variance is 0
is never updated again (its step alpha y sigma_i x_i is 0), silently.  The
compiled passes do not look for it: :class:`Watch` keeps the state of the
coordinates a pass can touch (O(nnz)), compares their variances after it, and
only when one has newly fallen below :data:`THRESHOLD` replays the pass row by
row on a copy to name the row.
"""
import copy

import numpy as np

from .. import _core
from .average import learner

#: A variance below the smallest normal double has lost its relative precision
#: and the next few multiplicative shrinks make it exactly 0; from there its
#: weight can no longer move.  Larger variances, however small, still learn:
#: the CW step alpha grows as 1 / (x^T Sigma x) when the variances shrink.
THRESHOLD = np.finfo(np.float64).tiny

#: Above D / _DEDUP_RATIO stored entries, a watch lists each touched coordinate once.
_DEDUP_RATIO = 16


class VarianceCollapseWarning(UserWarning):
    """A weight's variance collapsed to (about) 0: that weight stops learning for good."""


def may_collapse(model):
    """Whether `model` is diagonal with a rule whose variances can reach 0 in floating
    point: CW-Var and CW-Stdev ([ECCW08]), and AROW with the subtractive ("direct")
    update.  AROW's inverse update 1/sigma_i += x_i^2 / r cannot reach 0 with finite
    features, so its passes are not watched.  An averaged model is watched through
    the model it averages (``cwkit.models.average.learner``)."""
    model = learner(model)
    if not hasattr(model, "diag_variances"):
        return False
    return model.rule in (_core.Rule.CW_VAR, _core.Rule.CW_STDEV) or model.spec.direct


class Watch:
    """The state of the coordinates a pass over `rows` can touch, before the pass.

    Works for models whose state arrays all have the D coordinates (features,
    then the intercept) as first axis and whose ``diag_variances(state)`` takes
    the variances out of such arrays: the diagonal Gaussian-weight models.
    """

    def __init__(self, model, rows):
        model = learner(model)
        D = model.n_features + 1
        self.rows = rows
        indices = rows.X.indices if rows.sparse else None
        if rows.sparse and len(indices) * _DEDUP_RATIO < D:
            # a few rows (single-row partial_fit): their features and the intercept, O(nnz)
            self.cols = np.empty(len(indices) + 1, dtype=np.intp)
            self.cols[:-1] = indices
            self.cols[-1] = D - 1
        elif rows.sparse:
            # many rows: each touched coordinate once (an O(D) mask is cheaper than
            # copying the state at every one of the nnz entries)
            touched = np.zeros(D, dtype=bool)
            touched[indices] = True
            touched[D - 1] = True
            self.cols = np.flatnonzero(touched)
        else:                    # a dense row touches every coordinate
            self.cols = np.arange(D)
        # (take copies, and is faster than fancy indexing on this per-call path)
        self.before = {key: arr.take(self.cols, axis=0) for key, arr in model.state.items()}

    def collapsed(self, model):
        """Whether a watched variance fell below THRESHOLD during the pass (the
        variances of these rules never grow: most passes end at the first test)."""
        model = learner(model)
        var = model.diag_variances()[self.cols]     # (take would copy a strided view)
        if not np.count_nonzero(var < THRESHOLD):
            return False
        return bool(((var < THRESHOLD) & (model.diag_variances(self.before) >= THRESHOLD)).any())

    def row(self, model, target, order, bias):
        """The first row of `order` after which a variance had newly collapsed."""
        probe = copy.copy(learner(model))
        probe.state = {key: arr.copy() for key, arr in model.state.items()}
        for key, arr in probe.state.items():
            arr[self.cols] = self.before[key]
        var = probe.diag_variances()
        normal = var >= THRESHOLD           # before the pass
        for k in range(len(order)):
            probe.run(self.rows, target, order[k:k + 1], bias)
            touched = self._row_cols(order[k], var.shape[0])
            if ((var[touched] < THRESHOLD) & normal[touched]).any():
                return int(order[k])
        return int(order[-1])

    def _row_cols(self, i, D):
        X = self.rows.X
        if not self.rows.sparse:
            return np.arange(D)
        return np.append(X.indices[X.indptr[i]:X.indptr[i + 1]], D - 1)


def warning_text(owner, name, row):
    return (f"{owner} ({name}): row {row} of X: the variance of a weight fell below "
            f"{THRESHOLD:.3g}; a weight whose variance reaches 0 is never updated again "
            "(confidence-weighted updates shrink the variances geometrically on "
            "contradictory labels, [ECCW08] eq. 15). Use a smaller eta, AROW, or scale the "
            "features")
