"""Averaging: the mean of the weights after rounds 1..T, kept by every driver.

With ``average=True`` an estimator reports (and predicts with) the mean of its
weights after rounds 1..T, T every row seen so far ([FS99]).  Every compiled
driver keeps that mean itself, in the cost of its updates: beside the weights w
it keeps the lazy sum u = sum_t t (w_t - w_{t-1}) over the coordinates an update
changes, so that

    w_1 + ... + w_T = (T + 1) w_T - u_T,

where w_t is what the model reports after round t (mu of the Gaussian rules,
vv / A of the diagonal SOP, the weights of mini-batch PA with the rows of an
incomplete group applied provisionally).  A first-order rule adds t tau y x: O(nnz)
per update (with w = s v, the sum of the scales, [FS99]); the diagonal rules and
top-k updates add it over the blocks they move; the full-covariance rules over the
dense O(D) change of mu; L1-PA over the support its update shrinks; mini-batch PA
over the coordinates of the group's rows (in block mode the incomplete group is
re-applied provisionally after every row, so that every row's reported model
counts); AdaGrad-RDA, whose weights move every round while lambda > 0, sums each
coordinate in closed form between two updates.  The weights w_T themselves (the
last iterate) stay in the state as without averaging.
"""
import numpy as np

from .interface import counts


def lazy_mean(w, u, T):
    """((T + 1) w - u) / T, the mean of the weights after rounds 1..T (w when T = 0)."""
    return w if T == 0 else ((T + 1.0) * w - u) / T


def mean_of_rounds(state, w):
    """The weights a model reports from its last iterate `w`: their mean over the
    rounds when `state` holds the flat lazy sum ``u`` (the sum shaped as w, then T),
    else w itself."""
    u = state.get("u")
    return w if u is None else lazy_mean(w, u[:-1].reshape(w.shape), rounds(u))


def rounds(u):
    """T of the flat lazy sum `u`: its last entry (in the (D + 1, K) form of the
    multi-class diagonal rules, a row of K equal counts: the first)."""
    return u[-1] if u.ndim == 1 else u[-1, 0]


def round_count(state):
    """The invariants of the flat lazy sum ``u`` of `mean_of_rounds`, when kept: T."""
    if "u" in state:
        yield counts("the round count u[-1]", state["u"][-1:], 0, np.inf)
