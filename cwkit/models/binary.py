"""Binary models: one per shape of state (first-order, diagonal, full, diagonal SOP, AdaGrad).

Each owns named float64 arrays of length D = n_features + 1 (``state``) and
runs its compiled driver; see :class:`cwkit.models.interface.Model`.
"""
import numpy as np

from .. import _core
from .average import mean_of_rounds, round_count
from .interface import ROWS, ROWS_T, Model, PassResult, counts, nonnegative, positive
from .rules import GAUSSIAN_RULES, SCALED_RULES
from .scoring import row_scores, sign_proba

#: largest dimension D (features + 1) of a full covariance matrix (D*D*8 bytes).
MAX_FULL_DIM = 4096

#: length of the `aux` array of the first-order and AdaGrad state (its named slots).
AUX_SIZE = max(_core.AUX_S, _core.AUX_VN2, _core.AUX_T) + 1


def aux_size(spec):
    """The length of a first-order `aux` row: AUX_SSUM too when averaging a scaled rule."""
    return _core.AUX_SSUM + 1 if spec.average and spec.rule in SCALED_RULES else AUX_SIZE


def averaged_first_order(v, aux, u):
    """The mean of the weights after rounds 1..T of w = s v, from the lazy sum u:
    ((S_T + 1) v - u) / T, S_T the sum of the scales (aux[AUX_SSUM], or T when
    the scale stays 1); the current w when T = 0.  v, u: (D,) or (D, K) with one
    aux row per column or one for all."""
    aux = np.atleast_2d(aux)
    t = aux[:, _core.AUX_T]
    S = aux[:, _core.AUX_SSUM] if aux.shape[1] > _core.AUX_SSUM else t
    w = aux[:, _core.AUX_S] * v
    avg = ((S + 1.0) * v - u) / np.where(t > 0, t, 1.0)
    out = np.where(t > 0, avg, w)
    return out.reshape(np.shape(v))

#: The empty lazy sum: a pass without averaging.
NO_SUM = np.empty(0)

#: The columns of the diagonal model's `mu_sigma` state: mean and variance of a weight.
MU, SIGMA = 0, 1


def collapsed_variance_detail(model, status):
    """The explanation of an overflow of a Gaussian-weight model: collapsed variances."""
    if status != _core.Status.NONFINITE_STATE or model.spec.rule not in GAUSSIAN_RULES:
        return ""
    s = variance_diagonal(model)
    return (f"The smallest variance has collapsed to {np.min(s):.3g}: confidence-weighted "
            "updates on contradictory labels shrink the variances geometrically ([ECCW08] "
            "eq. 15, diagonal CW-Stdev). Use a smaller eta, AROW, or scale the features")


def l2_infeasible_detail(spec, status, delta=False):
    """The explanation of an infeasible L2-constrained update ([LMC09] Lemma 3.2)."""
    if status != _core.Status.INFEASIBLE:
        return ""
    if delta:
        # the top-1 step is on Delta = f(x, y) - f(x, c), ||Delta||^2 = 2 ||x||^2
        return (f"beta^2 ||x||^2 <= 1 for x = Delta = f(x, y) - f(x, c) (beta = "
                f"{spec.beta:g}): the constraint ||W|| <= beta cannot be met with margin 1 "
                "on this example; increase beta above 1/(sqrt(2) ||x||) (||x|| includes "
                "the intercept feature)")
    return (f"beta^2 ||x||^2 <= 1 (beta = {spec.beta:g}): the constraint ||w|| <= beta "
            "cannot be met with margin 1 on this example; increase beta above "
            "1/||x|| (||x|| includes the intercept feature)")


class BinaryModel(Model):
    """A binary model: `state` from ``initial_state(D)``, scores w.x."""

    def __init__(self, spec):
        self.spec = spec
        self.rule = spec.rule
        self.n_features = spec.n_features
        self.state = self.initial_state(spec.n_features + 1)

    def scores(self, rows, bias):
        return row_scores(rows, self.weights(), bias)[0]

    def last_scores(self, rows, bias):
        if self.spec.average:   # a native average: the last iterate is linear
            return row_scores(rows, self.last_weights(), bias)[0]
        return self.scores(rows, bias)

    def proba_args(self, rows, bias):
        """(mu.x, x^T Sigma x) per row, for Gaussian-weight probabilities."""
        return row_scores(rows, self.weights(), bias, self.variances())

    def proba(self, rows, bias):
        """P(sign(w.x) = +1) for w ~ N(mu, Sigma): Phi(mu.x / sqrt(x^T Sigma x))."""
        return sign_proba(*self.proba_args(rows, bias))


class FirstOrder(BinaryModel):
    """w = s * v (scale factor for O(1) shrinking); u for averaging.

    v and u live in one array, ``state["by_feature"]``, (D, 1) or, averaged, (D, 2):
    row p is feature p's v then its entry of the lazy sum, so that an update touches
    one cache line per feature rather than two arrays; :meth:`named_state` gives views
    of its columns by the names the model file keeps: ``v``, ``aux`` and ``u`` (empty
    without averaging)."""

    checks_rows = True

    def feature_layout(self):
        return {"by_feature": ROWS}

    def initial_state(self, D):
        aux = np.zeros(aux_size(self.spec))
        aux[_core.AUX_S] = 1.0
        return {"by_feature": np.zeros((D, 2 if self.spec.average else 1)), "aux": aux}

    def named_state(self, state=None):
        st = self.state if state is None else state
        z = st["by_feature"]
        return {"v": z[:, 0], "aux": st["aux"], "u": z[:, 1] if z.shape[1] > 1 else NO_SUM}

    def from_named(self, named):
        avg = named["u"].size > 0
        z = np.zeros((named["v"].shape[0], 2 if avg else 1))
        z[:, 0] = named["v"]
        if avg:
            z[:, 1] = named["u"]
        return {"by_feature": z, "aux": np.array(named["aux"])}

    def run(self, rows, y, order, bias):
        st, spec = self.state, self.spec
        return PassResult(*_core.first_order_pass(
            rows.view, y, order, bias, st["by_feature"], st["aux"], self.rule, spec.C,
            spec.alpha, spec.beta, spec.task_code, spec.epsilon))

    def weights(self):
        if self.spec.average:
            st = self.named_state()
            return averaged_first_order(st["v"], st["aux"], st["u"])
        return self.last_weights()

    def last_weights(self):
        return self.state["aux"][_core.AUX_S] * self.state["by_feature"][:, 0]

    def status_detail(self, status):
        return l2_infeasible_detail(self.spec, status)

    def invariants(self):
        return first_order_invariants(self.state["aux"])


def first_order_invariants(aux):
    """The scale s > 0 (w = s v), the cached ||v||^2 >= 0 and the round count."""
    aux = np.atleast_2d(aux)
    return (positive("the scale aux[0]", aux[:, _core.AUX_S]),
            nonnegative("the norm aux[1]", aux[:, _core.AUX_VN2]),
            counts("the round count aux[2]", aux[:, _core.AUX_T], 0, np.inf))


def variance_diagonal(model):
    """The variances of the weights: the diagonal state, or the diagonal of Sigma."""
    s = model.variances()
    return model.sigma_diagonal() if s is None else s


def gaussian_invariants(model):
    """The variances of a Gaussian over weights are >= 0 (they may collapse to 0)."""
    return (nonnegative("the variances", variance_diagonal(model)),)


class Diagonal(BinaryModel):
    """mu and sigma = diag(Sigma) (initially a), and with averaging the lazy sum u.

    One array, ``state["by_feature"]``, holds the state: row p is feature p's mean and
    variance, then (averaging) its entry of the lazy sum ``u``, so that what a row's
    update touches lies side by side in memory rather than in two arrays; an averaged
    model has one more row, whose lazy-sum column holds T (its other columns are
    unused, 0).  :meth:`named_state` gives views of its parts by the names the model
    file keeps: ``mu_sigma`` (D, 2) and ``u`` (D + 1,)."""

    checks_rows = True

    def feature_layout(self):
        return {"by_feature": ROWS_T if self.spec.average else ROWS}

    def initial_state(self, D):
        avg = bool(self.spec.average)
        z = np.zeros((D + avg, 2 + avg))
        z[:D, SIGMA] = float(self.spec.a)
        return {"by_feature": z}

    def named_state(self, state=None):
        z = (self.state if state is None else state)["by_feature"]
        avg = bool(self.spec.average)
        out = {"mu_sigma": z[:z.shape[0] - avg, :2]}
        if avg:
            out["u"] = z[:, 2]
        return out

    def from_named(self, named):
        avg = bool(self.spec.average)
        z = np.zeros((named["mu_sigma"].shape[0] + avg, 2 + avg))
        out = self.named_state({"by_feature": z})
        for key, arr in out.items():
            arr[...] = named[key]
        return {"by_feature": z}

    def run(self, rows, y, order, bias):
        spec = self.spec
        return PassResult(*_core.diag_pass(
            rows.view, y, order, bias, self.state["by_feature"], self.rule, spec.phi,
            spec.r, spec.direct, bool(spec.average), spec.C, spec.task_code))

    def weights(self):
        return mean_of_rounds(self.named_state(), self.last_weights())

    def last_weights(self):
        return self.last_iterate(self.named_state())

    @staticmethod
    def last_iterate(state):
        """The last iterate of `state` (a :meth:`named_state`), shaped as its lazy sum
        ``u`` (without T)."""
        return state["mu_sigma"][:, MU]

    def variances(self):
        return self.named_state()["mu_sigma"][:, SIGMA]

    def status_detail(self, status):
        return collapsed_variance_detail(self, status)

    def invariants(self):
        yield from gaussian_invariants(self)
        if self.spec.average:
            yield counts("the round count u[-1]", self.named_state()["u"][-1:], 0, np.inf)


def initial_variance(spec):
    """Sigma_1 = a I, but SOP keeps Sigma = A^-1 with A_0 = a I ([SOP05] Fig. 3.1)."""
    a = float(spec.a)
    return 1.0 / a if spec.rule == _core.Rule.SOP else a


class Full(BinaryModel):
    """mu and a full Sigma (only the lower triangle is kept up to date)."""

    def feature_layout(self):
        return {"mu": ROWS, "Sigma": ((0, 1, 0), (1, 1, 0)), "u": ROWS_T}

    def max_features(self):
        return MAX_FULL_DIM - 1

    def initial_state(self, D):
        if D > MAX_FULL_DIM:
            raise ValueError(
                f"covariance='full' needs a {D} x {D} matrix ({D * D * 8 / 2**20:.0f} MiB); "
                f"it is supported up to {MAX_FULL_DIM - 1} features. Use covariance='diag' "
                "for high-dimensional data")
        st = {"mu": np.zeros(D), "Sigma": np.eye(D) * initial_variance(self.spec)}
        if self.spec.average:   # the lazy sum of the means, then the round count T
            st["u"] = np.zeros(D + 1)
        return st

    def run(self, rows, y, order, bias):
        st, spec = self.state, self.spec
        work = np.empty(2 * len(st["mu"]))
        return PassResult(*_core.full_pass(
            rows.view, y, order, bias, st["mu"], st["Sigma"], work, self.rule, spec.phi, spec.r,
            st.get("u", NO_SUM), spec.C, spec.task_code))

    def weights(self):
        return mean_of_rounds(self.state, self.last_weights())

    def last_weights(self):
        return self.last_iterate(self.state)

    @staticmethod
    def last_iterate(state):
        """The last iterate of `state`, shaped as its lazy sum ``u`` (without T)."""
        return state["mu"]

    def covariance(self):
        return symmetric(self.state["Sigma"])

    def sigma_diagonal(self):
        return np.diagonal(self.state["Sigma"])

    def proba_args(self, rows, bias, mu=None):
        """(mu.x, x^T Sigma x) per row; mu: the (averaged) weights unless given."""
        mu = self.weights() if mu is None else mu
        m = np.empty(rows.n_rows)
        v = np.empty(rows.n_rows)
        _core.full_scores(rows.view, bias, mu, self.state["Sigma"], np.empty(2 * len(mu)),
                          m, v)
        return m, v

    def scores(self, rows, bias):
        if self.spec.average:   # the averaged weights are a linear rule
            return self.proba_args(rows, bias)[0]
        return self.last_scores(rows, bias)

    def last_scores(self, rows, bias):
        m, v = self.proba_args(rows, bias, self.last_weights())
        if self.rule == _core.Rule.SOP:
            # x (A + x x^T)^-1 v = x^T A^-1 v / (1 + x^T A^-1 x)  ([SOP05], Sherman-Morrison)
            return m / (1.0 + v)
        return m

    def status_detail(self, status):
        return collapsed_variance_detail(self, status)

    def invariants(self):
        yield from gaussian_invariants(self)
        yield from round_count(self.state)


def adagrad_invariants(state):
    """The sums of squared subgradients G >= 0 and the round count t, finite and >= 0:
    a whole number after passes, the (weighted) mean of the shards' after mixing
    (``cwkit.models.mixing``), which the RDA weights use with the mean sums."""
    t = state["aux"][_core.AUX_T:_core.AUX_T + 1]
    return (nonnegative("G", state["G"]),
            ("the round count aux[2] must be a finite number >= 0",
             bool(np.isfinite(t).all() and (t >= 0).all())))


def symmetric(L):
    """The symmetric matrix whose lower triangle (C order) is that of L."""
    L = np.tril(L)
    return L + np.tril(L, -1).T


class SOPDiagonal(BinaryModel):
    """Diagonal second-order perceptron: vv = sum y x over mistakes, A = a + sum x^2."""

    def feature_layout(self):
        return {"vv": ROWS, "A": ROWS, "u": ROWS_T}

    def initial_state(self, D):
        st = {"vv": np.zeros(D), "A": np.full(D, float(self.spec.a))}
        if self.spec.average:   # the lazy sum of vv / A, then the round count T
            st["u"] = np.zeros(D + 1)
        return st

    def run(self, rows, y, order, bias):
        st = self.state
        return PassResult(*_core.sop_diag_pass(
            rows.view, y, order, bias, st["vv"], st["A"], st.get("u", NO_SUM)))

    def weights(self):
        return mean_of_rounds(self.state, self.last_weights())

    def last_weights(self):
        return self.last_iterate(self.state)

    @staticmethod
    def last_iterate(state):
        """The last iterate of `state`, shaped as its lazy sum ``u`` (without T)."""
        return state["vv"] / state["A"]

    def variances(self):
        return 1.0 / self.state["A"]

    def invariants(self):
        yield positive("A", self.state["A"])
        if self.spec.average:
            yield counts("the round count u[-1]", self.state["u"][-1:], 0, np.inf)

    def scores(self, rows, bias):
        if self.spec.average:   # the averaged weights are a linear rule
            return super().scores(rows, bias)
        return self.last_scores(rows, bias)

    def last_scores(self, rows, bias):
        # per test point: w = vv / (A + x^2)  ([SOP05] Fig. 3.1, diagonal projection)
        out = np.empty(rows.n_rows)
        _core.sop_diag_scores(rows.view, bias, self.state["vv"], self.state["A"], out)
        return out


def rda_sums(acc):
    """The two parts of AdaGrad-RDA's averaging sums ``acc``, flat, as views: (the sum
    of each weight, the round it reaches).  ``acc`` is (D, 2) binary, (D, 2 K)
    multi-class: the pairs interleaved, in the order of the weights' state."""
    flat = acc.reshape(-1)
    return flat[0::2], flat[1::2]


def rda_reported(spec, state):
    """The weights an AdaGrad-RDA `state` reports, flat: their mean over rounds 1..t
    when averaging (t > 0, from the sums ``acc``), else the last iterate."""
    u, G, t = state["u"].ravel(), state["G"].ravel(), state["aux"][_core.AUX_T]
    w = np.empty(u.size)
    if spec.average and t > 0:
        _core.rda_average(u, G, t, spec.eta, spec.lam, spec.delta, *rda_sums(state["acc"]), w)
    else:
        _core.rda_weights(u, G, t, spec.eta, spec.lam, spec.delta, w)
    return w


class AdaGrad(BinaryModel):
    """Diagonal AdaGrad-RDA with L1 ([DHS11]): u = sum of subgradients, G = sum of squares."""

    def feature_layout(self):
        return {"u": ROWS, "G": ROWS, "acc": ROWS}

    def initial_state(self, D):
        st = {"u": np.zeros(D), "G": np.zeros(D), "aux": np.zeros(AUX_SIZE)}
        if self.spec.average:   # the sum of each weight and the round it reaches
            st["acc"] = np.zeros((D, 2))
        return st

    def run(self, rows, y, order, bias):
        st, spec = self.state, self.spec
        return PassResult(*_core.adagrad_pass(
            rows.view, y, order, bias, st["u"], st["G"], st["aux"], spec.eta, spec.lam,
            spec.delta, NO_SUM if st.get("acc") is None else st["acc"].reshape(-1)))

    def invariants(self):
        return adagrad_invariants(self.state)

    def weights(self):
        return rda_reported(self.spec, self.state)

    def last_weights(self):
        st, spec = self.state, self.spec
        w = np.empty(len(st["u"]))
        _core.rda_weights(st["u"], st["G"], st["aux"][_core.AUX_T], spec.eta, spec.lam,
                          spec.delta, w)
        return w
