"""Multi-class models on the 1-of-k feature function: top-1 and one-vs-rest.

A model holds one weight block per class, D = n_features + 1 weights each (the
intercept last), and the calls into the multi-class drivers of ``cwkit._core``.
The state arrays are (D, K): the K class weights of a feature are adjacent, so
scoring a sparse row reads nnz + 1 short contiguous runs instead of K (nnz + 1)
scattered values; the first-order rules keep a feature's K entries of V and of the
averaging sum U, the diagonal rules its means, variances and averaging sums, side by
side in one row of one array (:class:`FirstOrder`, :class:`Diagonal`).  Full
covariance keeps mu (K, D) and Sigma over the class-major stacked blocks.
``weights`` is (K, D), ``scores`` and ``proba`` (n, K).

Strategies (the estimators' ``multiclass`` parameter):

* ``"top1"``: the binary rule applied to Delta = f(x, y) - f(x, c) against the
  closest competitor c ([AROW13] Sect. 3.3, eqs. 31-32; [PA06] Sect. 7).
* ``"topk"``: the k highest-scoring competitors (``cwkit.models.topk``,
  ``cwkit.models.minibatch``, ``cwkit.models.l1``).
* ``"ovr"``: K binary problems, every class scored before any is updated.
"""
import numpy as np

from .. import _core
from .binary import (
    AUX_SIZE,
    MAX_FULL_DIM,
    NO_SUM,
    adagrad_invariants,
    aux_size,
    averaged_first_order,
    collapsed_variance_detail,
    first_order_invariants,
    gaussian_invariants,
    initial_variance,
    l2_infeasible_detail,
    rda_reported,
    symmetric,
)
from .average import mean_of_rounds, round_count
from .interface import OVR, ROWS, ROWS_T, TOP1, Model, PassResult, counts, positive
from .scoring import argmax_proba, mc_row_scores


class MulticlassModel(Model):
    """Base: K weight blocks; strategy "ovr" selects one-vs-rest, otherwise top-1."""

    def __init__(self, spec):
        self.spec = spec
        self.rule = spec.rule
        self.K = spec.n_classes
        self.n_features = spec.n_features
        self.ovr = spec.strategy == OVR
        self.sum_update = self.sigma_sum(spec)
        self.state = self.initial_state(spec.n_classes, spec.n_features + 1)

    @staticmethod
    def sigma_sum(spec):
        """Whether Sigma is updated with f = sum_y f(x, y) rather than Delta."""
        return spec.strategy == TOP1 and spec.sigma_update == "sum"

    def _args(self, rows, codes, order):
        return (rows.view, np.ascontiguousarray(codes, dtype=np.intp),
                np.ascontiguousarray(order, dtype=np.intp))

    def weights(self):
        """(K, D) weights, the intercept last."""
        return self.weights_dk().T

    def variances(self):
        """(K, D) variances of the weights (diagonal rules), else None."""
        s2 = self.variances_dk()
        return None if s2 is None else s2.T

    def variances_dk(self):
        return None

    def scores(self, rows, bias):
        return mc_row_scores(rows, self.weights_dk(), bias)[0]

    def last_weights(self):
        return self.last_weights_dk().T

    def last_weights_dk(self):
        """(D, K) weights of the last iterate (:meth:`Model.last_weights`)."""
        return self.weights_dk()

    def last_scores(self, rows, bias):
        if self.spec.average:   # a native average: the last iterate is linear
            return mc_row_scores(rows, self.last_weights_dk(), bias)[0]
        return self.scores(rows, bias)

    def score_moments(self, rows, bias):
        """Mean and variance (n, K) of every class score w_c.x~ under the Gaussian
        over weights, cross-class covariances left out."""
        return mc_row_scores(rows, self.weights_dk(), bias, self.variances_dk())

    def proba(self, rows, bias):
        M, V = self.score_moments(rows, bias)
        return argmax_proba(M, V)


class FirstOrder(MulticlassModel):
    """W = s V: one scale s for the whole W (top1) or one per class (ovr).

    V and the lazy sum U of averaging live in one array, ``state["by_feature"]``,
    (D, K) or, averaged, (D, 2 K): row p is feature p's K entries of V, then its K
    entries of U, so that an update or a score touches one run of memory per feature
    rather than two arrays; :meth:`named_state` gives views of its parts by the names
    the model file keeps: ``v``, ``aux`` and ``u`` ((0, K) without averaging)."""

    def feature_layout(self):
        return {"by_feature": ROWS}

    def initial_state(self, K, D):
        n_aux = K if self.ovr else 1
        aux = np.zeros((n_aux, aux_size(self.spec)))
        aux[:, _core.AUX_S] = 1.0
        return {"by_feature": np.zeros((D, (2 if self.spec.average else 1) * K)), "aux": aux}

    def named_state(self, state=None):
        st = self.state if state is None else state
        z, K = st["by_feature"], self.K
        return {"v": z[:, :K], "aux": st["aux"],
                "u": z[:, K:] if z.shape[1] > K else np.zeros((0, K))}

    def from_named(self, named):
        v, u = named["v"], named["u"]
        K = v.shape[1]
        z = np.zeros((v.shape[0], (2 if u.size else 1) * K))
        z[:, :K] = v
        if u.size:
            z[:, K:] = u
        return {"by_feature": z, "aux": np.array(named["aux"])}

    def run(self, rows, codes, order, bias):
        st, spec = self.named_state(), self.spec
        return PassResult(*_core.mc_first_order_pass(
            *self._args(rows, codes, order), bias, self.ovr, st["v"], st["aux"], st["u"],
            self.rule, spec.C, spec.alpha, spec.beta))

    def weights_dk(self):
        st = self.named_state()
        if self.spec.average:
            return averaged_first_order(st["v"], st["aux"], st["u"])
        return self.last_weights_dk()

    def last_weights_dk(self):
        st = self.named_state()
        return st["aux"][:, _core.AUX_S] * st["v"]

    def status_detail(self, status):
        return l2_infeasible_detail(self.spec, status, delta=not self.ovr)

    def invariants(self):
        return first_order_invariants(self.state["aux"])


class Diagonal(MulticlassModel):
    """mu, sigma = diag(Sigma) per block; initial sigma = a.

    One array, ``state["by_feature"]``, holds the state: row p is feature p's K means,
    then its K variances, then (averaging) its K entries of the lazy sum ``u``, so
    that what a row's update touches (the means of every class, the variances and
    sums of two) lies side by side in memory rather than in two or three arrays; an
    averaged model has one more row, whose lazy-sum columns hold T (its other
    columns are unused, 0).  :meth:`named_state` gives views of its parts by the
    names the model file keeps: ``mu``, ``sigma`` (D, K) and ``u`` (D + 1, K)."""

    def feature_layout(self):
        return {"by_feature": ROWS_T if self.spec.average else ROWS}

    def initial_state(self, K, D):
        avg = bool(self.spec.average)
        z = np.zeros((D + avg, (2 + avg) * K))
        z[:D, K:2 * K] = float(self.spec.a)
        return {"by_feature": z}

    def named_state(self, state=None):
        z = (self.state if state is None else state)["by_feature"]
        K, avg = self.K, bool(self.spec.average)
        out = {"mu": z[:z.shape[0] - avg, :K], "sigma": z[:z.shape[0] - avg, K:2 * K]}
        if avg:
            out["u"] = z[:, 2 * K:]
        return out

    def from_named(self, named):
        K, avg = self.K, bool(self.spec.average)
        mu = named["mu"]
        z = np.zeros((mu.shape[0] + avg, (2 + avg) * K))
        out = self.named_state({"by_feature": z})
        for key, arr in out.items():
            arr[...] = named[key]
        return {"by_feature": z}

    def run(self, rows, codes, order, bias):
        st, spec = self.named_state(), self.spec
        return PassResult(*_core.mc_diag_pass(
            *self._args(rows, codes, order), bias, self.ovr, st["mu"], st["sigma"], self.rule,
            spec.phi, spec.r, spec.direct, self.sum_update,
            st.get("u", np.empty((0, self.K))), spec.C))

    def weights_dk(self):
        return mean_of_rounds(self.named_state(), self.last_weights_dk())

    def last_weights_dk(self):
        return self.last_iterate(self.named_state())

    @staticmethod
    def last_iterate(state):
        """The last iterate of `state` (a :meth:`named_state`), shaped as its lazy sum
        ``u`` (without T)."""
        return state["mu"]

    def variances_dk(self):
        return self.named_state()["sigma"]

    def status_detail(self, status):
        return collapsed_variance_detail(self, status)

    def invariants(self):
        yield from gaussian_invariants(self)
        if self.spec.average:
            yield counts("the round counts u[-1]", self.named_state()["u"][-1], 0, np.inf)


class Full(MulticlassModel):
    """mu (K, D) and Sigma over the stacked blocks (top1: (K D, K D)) or one
    D x D block per class (ovr: stored as (K D, D)); one triangle is kept."""

    def feature_layout(self):
        return {"mu": ((1, 1, 0),), "Sigma": ((0, 1, 0), (1, 1, 0)),
                "u": ROWS_T}   # u: the K blocks of mu, then T

    def max_features(self):
        if self.ovr:        # K D^2 <= MAX_FULL_DIM^2
            return int(np.sqrt(MAX_FULL_DIM ** 2 // self.K)) - 1
        return MAX_FULL_DIM // self.K - 1

    def initial_state(self, K, D):
        n = K * D
        if self.ovr and K * D * D > MAX_FULL_DIM ** 2:
            raise ValueError(
                f"covariance='full' with multiclass='ovr' needs {K} matrices of {D} x {D} "
                f"({K * D * D * 8 / 2**20:.0f} MiB); it is supported up to "
                f"{MAX_FULL_DIM ** 2 * 8 / 2**20:.0f} MiB. Use covariance='diag'")
        if not self.ovr and n > MAX_FULL_DIM:
            raise ValueError(
                f"covariance='full' with {K} classes needs a covariance over the stacked class "
                f"blocks, {K} x {D} = {n} rows ({n * n * 8 / 2**20:.0f} MiB); it is supported "
                f"up to classes x (features + 1) = {MAX_FULL_DIM}. Use covariance='diag' "
                "or multiclass='ovr'")
        s0 = initial_variance(self.spec)
        Sigma = np.tile(np.eye(D) * s0, (K, 1)) if self.ovr else np.eye(n) * s0
        st = {"mu": np.zeros((K, D)), "Sigma": Sigma}
        if self.spec.average:   # the lazy sum of the means (K D), then the round count T
            st["u"] = np.zeros(n + 1)
        return st

    def run(self, rows, codes, order, bias):
        st, spec = self.state, self.spec
        return PassResult(*_core.mc_full_pass(
            *self._args(rows, codes, order), bias, self.ovr, st["mu"], st["Sigma"], self.rule,
            spec.phi, spec.r, self.sum_update, st.get("u", NO_SUM), spec.C))

    def weights_dk(self):
        return mean_of_rounds(self.state, self.last_iterate(self.state)).T

    def last_weights_dk(self):
        return self.last_iterate(self.state).T

    @staticmethod
    def last_iterate(state):
        """The last iterate of `state`, shaped as its lazy sum ``u`` (without T): (K, D)."""
        return state["mu"]

    def _block(self, c):
        D = self.n_features + 1
        S = self.state["Sigma"]
        return S[c * D:(c + 1) * D, :] if self.ovr else S[c * D:(c + 1) * D, c * D:(c + 1) * D]

    def covariance(self):
        if self.ovr:
            from scipy.linalg import block_diag   # scipy.linalg is slow to import
            return block_diag(*[symmetric(self._block(c)) for c in range(self.K)])
        return symmetric(self.state["Sigma"])

    def sigma_diagonal(self):
        """(K D,) variances of the stacked blocks."""
        if self.ovr:
            return np.concatenate([np.diagonal(self._block(c)) for c in range(self.K)])
        return np.diagonal(self.state["Sigma"])

    def score_moments(self, rows, bias, mu=None):
        """As the base's, mu (K, D): the (averaged) weights unless given."""
        mu = np.ascontiguousarray(self.weights() if mu is None else mu)
        D = mu.shape[1]
        M = np.empty((self.K, rows.n_rows))
        V = np.empty((self.K, rows.n_rows))
        for c in range(self.K):
            _core.full_scores(rows.view, bias, mu[c], np.ascontiguousarray(self._block(c)),
                              np.empty(2 * D), M[c], V[c])
        return M.T, V.T

    def scores(self, rows, bias):
        if self.rule != _core.Rule.SOP or self.spec.average:
            return super().scores(rows, bias)
        return self.last_scores(rows, bias)

    def last_scores(self, rows, bias):
        if self.rule != _core.Rule.SOP:
            return super().last_scores(rows, bias)
        M, V = self.score_moments(rows, bias, self.last_weights())
        return M / (1.0 + V)           # [SOP05] test rule per class block

    def status_detail(self, status):
        return collapsed_variance_detail(self, status)

    def invariants(self):
        yield from gaussian_invariants(self)
        yield from round_count(self.state)


class SOPDiagonal(MulticlassModel):
    """Diagonal SOP per block: vv = sum of Delta over mistakes, A = a + sum Delta^2."""

    def feature_layout(self):
        return {"vv": ROWS, "A": ROWS, "u": ((0, self.K, 1),)}

    def initial_state(self, K, D):
        st = {"vv": np.zeros((D, K)), "A": np.full((D, K), float(self.spec.a))}
        if self.spec.average:   # the lazy sum of vv / A (D K), then the round count T
            st["u"] = np.zeros(D * K + 1)
        return st

    def run(self, rows, codes, order, bias):
        st = self.state
        return PassResult(*_core.mc_sop_diag_pass(
            *self._args(rows, codes, order), bias, self.ovr, st["vv"], st["A"],
            st.get("u", NO_SUM)))

    def weights_dk(self):
        return mean_of_rounds(self.state, self.last_weights_dk())

    def last_weights_dk(self):
        return self.last_iterate(self.state)

    @staticmethod
    def last_iterate(state):
        """The last iterate of `state`, shaped as its lazy sum ``u`` (without T)."""
        return state["vv"] / state["A"]

    def variances_dk(self):
        return 1.0 / self.state["A"]

    def invariants(self):
        yield positive("A", self.state["A"])
        yield from round_count(self.state)

    def scores(self, rows, bias):
        if self.spec.average:   # the averaged weights are a linear rule
            return super().scores(rows, bias)
        return self.last_scores(rows, bias)

    def last_scores(self, rows, bias):
        out = np.empty((rows.n_rows, self.K))
        _core.mc_sop_scores(rows.view, bias, self.state["vv"], self.state["A"], out)
        return out


class AdaGrad(MulticlassModel):
    """AdaGrad-RDA per block: u = sum of subgradients, G = sum of their squares."""

    def feature_layout(self):
        return {"u": ROWS, "G": ROWS, "acc": ROWS}

    def initial_state(self, K, D):
        st = {"u": np.zeros((D, K)), "G": np.zeros((D, K)), "aux": np.zeros(AUX_SIZE)}
        if self.spec.average:   # the sum of each weight and the round it reaches
            st["acc"] = np.zeros((D, 2 * K))
        return st

    def run(self, rows, codes, order, bias):
        st, spec = self.state, self.spec
        return PassResult(*_core.mc_adagrad_pass(
            *self._args(rows, codes, order), bias, self.ovr, st["u"], st["G"], st["aux"],
            spec.eta, spec.lam, spec.delta,
            NO_SUM if st.get("acc") is None else st["acc"].reshape(-1)))

    def invariants(self):
        return adagrad_invariants(self.state)

    def weights_dk(self):
        return rda_reported(self.spec, self.state).reshape(self.state["u"].shape)

    def last_weights_dk(self):
        st, spec = self.state, self.spec
        w = np.empty(st["u"].size)
        _core.rda_weights(st["u"].ravel(), st["G"].ravel(), st["aux"][_core.AUX_T], spec.eta,
                          spec.lam, spec.delta, w)
        return w.reshape(st["u"].shape)
