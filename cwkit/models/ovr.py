"""One-vs-rest over K independent binary models.

``multiclass="ovr"`` of mini-batch PA and L1-PA, the rules without a compiled
one-vs-rest driver.  Class c's model learns ``y = +1`` for class c and ``-1``
otherwise.  The K problems do not interact, so running them one after the other
over a pass is the same as interleaving them; each model reports the score it
predicted every row with (the rows' ``counting`` scores), and the progressive
multi-class prediction of a row is the argmax of its K pre-update scores (ties
to the smallest class, as ``numpy.argmax``).  The options of ``run_with`` (the
rows' ``counting``) apply to these multi-class rounds, not to the K binary passes.
"""
import numpy as np

from .. import _core
from .interface import NO_ROW, Model, PassResult
from .scoring import mc_row_scores


class OneVsRest(Model):
    """K binary models of class `binary`, each built from `spec`."""

    def __init__(self, spec, binary):
        self.K = spec.n_classes
        self.models = [binary(spec) for _ in range(spec.n_classes)]
        # one flat dict of the models' own arrays (updated in place), for save / load
        self.state = {f"{c}/{key}": arr for c, model in enumerate(self.models)
                      for key, arr in model.state.items()}

    def run(self, rows, codes, order, bias):
        order = np.asarray(order)
        clean, out = rows.view.clean, rows.view.scores
        S = np.empty((self.K, len(order)))
        updates, loss_sum = 0, 0.0
        for c, model in enumerate(self.models):
            target = np.where(codes == c, 1.0, -1.0)
            # the binary passes count against their own y, their scores into S[c]
            result = model.run(rows.counting(None, S[c]), target, order, bias)
            updates += result.updates
            loss_sum += result.loss_sum
            if result.status != _core.Status.OK:
                return PassResult(result.rounds, 0, updates, loss_sum, result.status,
                                  result.pos)
        truth = codes[order] if clean is None else clean[order]
        mistakes = int(np.count_nonzero(np.argmax(S, axis=0) != truth))
        if out is not None:
            out[:] = S.T
        return PassResult(len(order), mistakes, updates, loss_sum, _core.Status.OK, NO_ROW)

    def weights(self):
        return np.stack([model.weights() for model in self.models])

    def last_weights(self):
        return np.stack([model.last_weights() for model in self.models])

    def scores(self, rows, bias):
        return mc_row_scores(rows, self.weights().T, bias)[0]

    def last_scores(self, rows, bias):
        return mc_row_scores(rows, self.last_weights().T, bias)[0]

    def invariants(self):
        for c, model in enumerate(self.models):
            for what, holds in model.invariants():
                yield f"class {c}: {what}", holds

    def status_detail(self, status):
        # the K models share one spec, so they explain a status alike
        return self.models[0].status_detail(status)
