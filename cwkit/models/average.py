"""Averaging of a model whose compiled driver keeps no lazy sum of its own.

With ``average=True`` an estimator reports (and predicts with) the mean of its
weights after rounds 1..T, T every row seen so far ([FS99]).  Some drivers keep
that mean themselves in O(nnz) per update (``NATIVE_AVERAGE``: the first-order
rules and the diagonal CW / AROW, binary, top-1 and one-vs-rest; the binary
diagonal SOP and AdaGrad); :class:`Averaged` gives it to every other model: it runs the
model's pass one row at a time and keeps the lazy sum
u = sum_t t (w_t - w_{t-1}), so that

    w_1 + ... + w_T = (T + 1) w_T - u_T,

where w_t is what the model reports after round t (``weights()``: mu of the
Gaussian rules, the weights of mini-batch PA with the rows of an incomplete
group applied provisionally).  A round costs one driver call and O(K D).
"""
import numpy as np

from .. import _core
from .interface import BINARY, NO_ROW, OVR, TOP1, Model, PassResult, counts
from .scoring import argmax_proba, mc_row_scores, row_scores, sign_proba


#: The (shape of state, case) whose drivers keep the lazy sum of averaging themselves,
#: O(nnz) per update; every other model is averaged by :class:`Averaged`.
NATIVE_AVERAGE = frozenset({("first_order", BINARY), ("first_order", TOP1),
                            ("first_order", OVR), ("diagonal", BINARY),
                            ("diagonal", TOP1), ("diagonal", OVR), ("sop_diagonal", BINARY),
                            ("adagrad", BINARY)})


def averages_natively(spec):
    """Whether the driver of `spec`'s model keeps the averaging sum itself."""
    return (spec.shape, spec.kind) in NATIVE_AVERAGE


def lazy_mean(w, u, T):
    """((T + 1) w - u) / T, the mean of the weights after rounds 1..T (w when T = 0)."""
    return w if T == 0 else ((T + 1.0) * w - u) / T


class Averaged(Model):
    """`model` reported and scored with the mean of its weights over the rounds.

    The last iterate (:meth:`last_weights`, :meth:`last_scores`) is `model`'s own.
    State: the model's arrays, ``avg_u`` (the lazy sum: (D,) binary, (D, K)
    multi-class, the model's weights transposed) and ``avg_t`` (T).  Scores are
    the averaged weights times x; probabilities of Gaussian-weight models use
    the averaged means with the model's current variances.
    """

    def __init__(self, model):
        self.model = model
        self.K = model.K                 # the scores' width (None: binary)
        self.state = dict(model.state)
        self.state["avg_u"] = np.zeros(np.shape(model.weights().T))
        self.state["avg_t"] = np.zeros(1)

    def run(self, rows, target, order, bias):
        u, t = self.state["avg_u"].T, self.state["avg_t"]
        w = np.array(self.model.weights())
        clean, scores = rows.view.clean, rows.view.scores
        mistakes = updates = 0
        loss_sum = 0.0
        collapsed = NO_ROW
        for k in range(len(order)):
            # one row per pass; the counting options' scores go to that row's place
            row = rows if scores is None else rows.counting(clean, scores[k:k + 1])
            r = self.model.run(row, target, order[k:k + 1], bias)
            mistakes += r.mistakes
            updates += r.updates
            loss_sum += r.loss_sum
            if collapsed == NO_ROW:
                collapsed = r.collapsed
            if r.status != _core.Status.OK:
                return PassResult(k + r.rounds, mistakes, updates, loss_sum, r.status, r.pos,
                                  collapsed)
            t[0] += 1.0
            new = self.model.weights()
            u += t[0] * (new - w)
            w[...] = new
        return PassResult(len(order), mistakes, updates, loss_sum, _core.Status.OK, NO_ROW,
                          collapsed)

    def weights(self):
        return lazy_mean(self.model.weights(), self.state["avg_u"].T, self.state["avg_t"][0])

    def last_weights(self):
        return self.model.weights()

    def last_scores(self, rows, bias):
        return self.model.scores(rows, bias)

    def scores(self, rows, bias):
        w = self.weights()
        if w.ndim == 1:
            return row_scores(rows, w, bias)[0]
        return mc_row_scores(rows, w.T, bias)[0]

    def proba(self, rows, bias):
        """The model's probabilities with the averaged means (Gaussian-weight models)."""
        w = self.weights()
        if w.ndim == 1:
            return sign_proba(row_scores(rows, w, bias)[0], self.model.proba_args(rows, bias)[1])
        return argmax_proba(mc_row_scores(rows, w.T, bias)[0],
                            self.model.score_moments(rows, bias)[1])

    def variances(self):
        return self.model.variances()

    def covariance(self):
        return self.model.covariance()

    def status_detail(self, status):
        return self.model.status_detail(status)

    def invariants(self):
        yield from self.model.invariants()
        yield counts("the round count avg_t", self.state["avg_t"], 0, np.inf)
