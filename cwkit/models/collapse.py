"""Variance collapse of the diagonal Gaussian-weight rules.

Confidence-weighted updates shrink the variances geometrically on
contradictory labels ([ECCW08] eq. 15; fastest for diagonal CW-Stdev at high
eta): a variance reaches 0 in floating point, and a weight whose variance is 0
is never updated again (its step alpha y sigma_i x_i is 0), silently.  The
compiled diagonal passes of the rules whose variances can reach 0 (CW-Var and
CW-Stdev, [ECCW08]; AROW with the subtractive "direct" update; not AROW's inverse
update 1/sigma_i += x_i^2 / r, which cannot with finite features) note the first
row whose update takes a variance from at least :data:`THRESHOLD` to below it
(``PassResult.collapsed``; the variances of these rules never grow, so that is
where one newly collapses), and the estimators warn with it.
"""
import numpy as np

#: A variance below the smallest normal double has lost its relative precision
#: and the next few multiplicative shrinks make it exactly 0; from there its
#: weight can no longer move.  Larger variances, however small, still learn:
#: the CW step alpha grows as 1 / (x^T Sigma x) when the variances shrink.
#: (The compiled passes compare with C's DBL_MIN, the same number.)
THRESHOLD = np.finfo(np.float64).tiny


class VarianceCollapseWarning(UserWarning):
    """A weight's variance collapsed to (about) 0: that weight stops learning for good."""


def warning_text(owner, name, row):
    return (f"{owner} ({name}): row {row} of X: the variance of a weight fell below "
            f"{THRESHOLD:.3g}; a weight whose variance reaches 0 is never updated again "
            "(confidence-weighted updates shrink the variances geometrically on "
            "contradictory labels, [ECCW08] eq. 15). Use a smaller eta, AROW, or scale the "
            "features")
