"""One-vs-rest over K independent binary engines (FORMULAS.md Sect. 4, "ovr").

``multiclass="ovr"`` of mini-batch PA and L1-PA, the rules without a compiled
one-vs-rest driver.  Class c's engine learns ``y = +1`` for class c and ``-1``
otherwise.  The K problems do not interact, so running them one after the other
over a pass is the same as interleaving them; each engine reports the score it predicted every row
with, and the progressive multi-class prediction of a row is the argmax of its
K pre-update scores (ties to the smallest class, as ``numpy.argmax``).
"""
import numpy as np

from .multiclass import mc_row_scores


class OneVsRest:
    """K binary engines of one class; the interface of a multi-class model."""

    def __init__(self, engine_cls, hyper, n_classes, n_features):
        self.K = n_classes
        self.engines = [engine_cls(None, hyper, n_features) for _ in range(n_classes)]
        # one flat dict of the engines' own arrays (updated in place), for save / load
        self.state = {f"{c}/{key}": arr for c, e in enumerate(self.engines)
                      for key, arr in e.state.items()}

    def run(self, rows, codes, order, bias):
        order = np.asarray(order)
        S = np.empty((self.K, len(order)))
        updates, loss_sum = 0, 0.0
        for c, engine in enumerate(self.engines):
            target = np.where(codes == c, 1.0, -1.0)
            rounds, _, upd, loss, status, pos = engine.run(rows, target, order, bias, S[c])
            updates += upd
            loss_sum += loss
            if status:
                return rounds, 0, updates, loss_sum, status, pos
        mistakes = int(np.count_nonzero(np.argmax(S, axis=0) != codes[order]))
        return len(order), mistakes, updates, loss_sum, 0, -1

    def weights(self):
        return np.stack([e.weights() for e in self.engines])

    def scores(self, rows, bias):
        return mc_row_scores(rows, self.weights().T, bias)[0]

    def variances(self):
        return None

    def covariance(self):
        return None


def make_model(engine_cls, hyper, n_classes, n_features):
    """The binary engine (two classes), or one-vs-rest over K of them."""
    if n_classes == 2:
        return engine_cls(None, hyper, n_features)
    return OneVsRest(engine_cls, hyper, n_classes, n_features)
