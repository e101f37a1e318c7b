"""Calibrated probabilities: a scaled softmax of the scores, fitted online.

Every estimator's ``predict_proba`` is ``softmax(a_c s)`` of its class scores s,
c = argmax s the predicted class (ties to the first).  Two classes: s = (0, w.x),
so P(classes_[1]) = 1 / (1 + exp(-a w.x)) with a = a_1 where w.x > 0 and a_0
elsewhere: Platt's sigmoid [Pla99] held at 1/2 on the decision boundary, with a
slope for each side where Platt has an intercept.  More classes: one slope a for
all, a temperature 1/a of the softmax.  The slopes (>= 0) are fitted by maximum
likelihood on the progressive scores of the training rows: the score each row was
predicted with before the model learnt it, an honest held-out score [CCG04].
Platt's smoothed targets keep them finite: a row of class y counts (N_y + 1) /
(N_y + 2) for y and the rest spread over the other classes, N_y the rows of class y
in the window (for two classes exactly Platt's t+ = (N+ + 1) / (N+ + 2),
t- = 1 / (N- + 2)).

Only the last :data:`WINDOW` rounds are kept (a ring buffer: bounded memory, O(1)
per row): early scores come from a model that is still poor, and a Perceptron's or a
PA's scores grow as its weights do, so the recent rounds describe the current model
best (``benchmarks/bench_calibration.py``).  The slopes are fitted when
probabilities are asked for after the window changed.

The probabilities keep the prediction: with one slope per row they order a row's
classes as its scores do, the largest is the predicted class, and for two classes
P(classes_[1]) increases with w.x (both sides meet at 1/2 at w.x = 0).
"""
import numpy as np
from .._lazy import special

#: Rounds kept for the fit of the slope (the most recent ones).
WINDOW = 2048

#: The slope without calibration rounds (a model file of cwkit <= 0.x, a model
#: built by partial_fit with no row yet): p = sigmoid(w.x), the logistic link of
#: the margin, whose hinge point w.x = 1 gets p = 0.73.
DEFAULT_SLOPE = 1.0

#: The smallest slope, relative to the largest |score| of the window: scores that do
#: not help give p within 1e-9 of uniform, still ordered as the scores (a = 0 would
#: tie every class, and the largest probability would no longer be the prediction).
MIN_SLOPE = 1e-9

#: Rows a predicted class needs in the window for a slope of its own.
MIN_ROWS = 50


def _as_classes(s):
    """Class scores (n, K): binary (n,) scores become (0, s)."""
    s = np.asarray(s, dtype=float)
    return np.column_stack([np.zeros_like(s), s]) if s.ndim == 1 else s


def smoothed_targets(codes, K):
    """Platt's targets generalised to K classes: (n, K) rows summing to 1."""
    n_y = np.bincount(codes, minlength=K).astype(float)
    hit = (n_y[codes] + 1.0) / (n_y[codes] + 2.0)
    T = np.repeat(((1.0 - hit) / (K - 1))[:, None], K, axis=1)
    T[np.arange(len(codes)), codes] = hit
    return T


def fit_slope(S, T):
    """The slope a >= 0 that maximises the likelihood of targets T (n, K) under
    softmax(a S), S (n, K) class scores.

    The negative log-likelihood L(a) is convex (L'' = sum of the variances of the
    scores under softmax(a s_i)); its minimiser on [0, inf) is found by Newton's
    method safeguarded by bisection on a bracket of L', never below :data:`MIN_SLOPE`
    over the largest |score|.  With no row, or only zero scores, :data:`DEFAULT_SLOPE`.
    """
    if len(S) == 0:
        return DEFAULT_SLOPE
    S = S - S.max(axis=1, keepdims=True)          # shift-invariant: softmax of a S
    ts = (T * S).sum()

    def derivs(a):
        P = np.exp(special.log_softmax(a * S, axis=1))
        m = (P * S).sum(axis=1)
        return (m.sum() - ts, ((P * S * S).sum(axis=1) - m * m).sum())

    top = np.abs(S).max()
    if not top > 0.0:                              # every score 0: any slope fits
        return DEFAULT_SLOPE
    scale = 1.0 / top
    floor = MIN_SLOPE * scale
    if derivs(floor)[0] >= 0.0:                    # the scores do not help
        return floor
    lo, hi = floor, scale
    while derivs(hi)[0] < 0.0:
        lo, hi = hi, 2.0 * hi
        if hi > 1e300:
            return lo
    a = 0.5 * (lo + hi)
    for _ in range(100):
        g, h = derivs(a)
        if g < 0.0:
            lo = a
        else:
            hi = a
        step = a - g / h if h > 0.0 else np.nan
        a = step if lo < step < hi else 0.5 * (lo + hi)
        if hi - lo <= 1e-12 * hi:
            break
    return a


def fit_slopes(S, codes):
    """The slope of each predicted class (K,).  Two classes: a side's slope is
    fitted on the window's rows predicted on that side, or, with fewer than
    :data:`MIN_ROWS` of them, on every row.  More classes: one slope fitted on every
    row (per-class slopes, fitted on a K-th of the window each, lost held-out log loss
    in ``benchmarks/bench_calibration.py``).  Rows whose scores are not finite are
    left out."""
    S = np.asarray(S, dtype=float)
    ok = np.isfinite(S).all(axis=1)
    S, codes = S[ok], np.asarray(codes)[ok]
    K = S.shape[1]
    T = smoothed_targets(codes, K)
    shared = fit_slope(S, T)
    if K > 2:
        return np.full(K, shared)
    pred = S.argmax(axis=1)
    return np.array([fit_slope(S[pred == c], T[pred == c])
                     if (pred == c).sum() >= MIN_ROWS else shared for c in range(K)])


class Calibration:
    """The window of progressive (score, label) rounds and the slope fitted on it.

    Attributes
    ----------
    scores : ndarray (window,) or (window, K)
        The last rounds' scores, a ring buffer: round t at ``t % window``.
    labels : ndarray (window,)
        Their class indices.
    seen : int
        Rounds recorded (since ``fit``, or in the window a model file kept).
    """

    def __init__(self, n_classes, window=None):
        window = WINDOW if window is None else window
        self.scores = np.zeros((window,) if n_classes == 2 else (window, n_classes))
        self.labels = np.zeros(window, dtype=np.intp)
        self.seen = 0
        self._slopes = None

    @property
    def window(self):
        return len(self.labels)

    def add(self, scores, codes):
        """Record rounds: their scores in processing order and class indices."""
        n = len(codes)
        if n == 0:
            return
        if n == 1:     # (partial_fit on one row: no index arrays)
            pos = self.seen % self.window
            self.scores[pos] = scores[0]
            self.labels[pos] = codes[0]
        else:
            keep = min(n, self.window)
            pos = (self.seen + n - keep + np.arange(keep)) % self.window
            self.scores[pos] = scores[n - keep:]
            self.labels[pos] = codes[n - keep:]
        self.seen += n
        self._slopes = None

    def rounds(self):
        """The kept rounds, oldest first: (scores, labels)."""
        if self.seen <= self.window:
            return self.scores[:self.seen], self.labels[:self.seen]
        first = self.seen % self.window
        return (np.roll(self.scores, -first, axis=0), np.roll(self.labels, -first))

    def slopes(self):
        """a per predicted class, fitted on the window when it changed (all
        DEFAULT_SLOPE when it is empty)."""
        if self._slopes is None:
            S, codes = self.rounds()
            K = 2 if self.scores.ndim == 1 else self.scores.shape[1]
            self._slopes = (np.full(K, DEFAULT_SLOPE) if len(codes) == 0 else
                            fit_slopes(_as_classes(S), codes))
        return self._slopes

    def proba(self, scores):
        """softmax(a_c s) per row, c the row's predicted class: (n, K), binary (n, 2)."""
        S = _as_classes(scores)
        a = self.slopes()[S.argmax(axis=1)]
        return np.exp(special.log_softmax(a[:, None] * S, axis=1))
