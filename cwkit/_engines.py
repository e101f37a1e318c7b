"""Binary engines: the state of one linear model and the calls into `_core`.

One engine per shape of state (first-order, diagonal, full, diagonal SOP,
AdaGrad).  An engine owns named float64 arrays (`state`, saved and loaded as
they are), runs a pass of its driver, and exposes weights and scores.  All
state has length D = n_features + 1: the last coordinate is the intercept,
whose feature value is `bias` (1, or 0 without an intercept).
"""
import numpy as np
from scipy.special import ndtr

from . import _core

#: largest dimension D (features + 1) of a full covariance matrix (D*D*8 bytes).
MAX_FULL_DIM = 4096


class ModelError(ValueError):
    """An online update could not be made (overflow, infeasible constraint)."""


def raise_status(status, pos, algo, detail=""):
    """Turn a driver status into an exception naming the row."""
    if status == _core.Status.NONFINITE_INPUT:
        raise ModelError(
            f"{algo}: row {pos}: the score or squared norm of this example is not finite "
            "(feature values too large for float64 arithmetic); scale the features")
    if status == _core.Status.NONFINITE_STATE:
        raise ModelError(
            f"{algo}: row {pos}: this update would overflow the model state to inf; the "
            "state is left as it was before this example. " + (detail or
            "Scale the features or use stronger regularisation"))
    if status == _core.Status.INFEASIBLE:
        raise ModelError(f"{algo}: row {pos}: {detail}")
    if status == _core.Status.QP_NOT_CONVERGED:
        raise ModelError(
            f"{algo}: row {pos}: the top-k update's QP (Hildreth) did not converge; the state "
            "is left as it was before this example. Scale the features or use a smaller k")
    raise ModelError(f"{algo}: row {pos}: driver status {status}")


def row_scores(rows, w, bias, s2=None):
    """(w.x, x^T diag(s2) x) per row through the compiled row walk (dense == CSR)."""
    m = np.empty(rows.n_rows)
    v = np.empty(rows.n_rows if s2 is not None else 0)
    _core.row_scores(*rows.args, bias, np.ascontiguousarray(w),
                     np.empty(0) if s2 is None else np.ascontiguousarray(s2), m, v)
    return m, v


class Engine:
    """Base: `state` is a dict of arrays; subclasses define the driver call."""

    arrays = ()

    def __init__(self, rule, hyper, n_features, state=None):
        self.rule = rule
        self.hyper = hyper
        self.n_features = n_features
        self.state = state if state is not None else self.initial_state(n_features + 1)

    # Subclasses define initial_state(D), run(rows, y, order, bias) and
    # weights() -> (D,) with the intercept last.

    def variances(self):
        return None

    def covariance(self):
        return None

    def scores(self, rows, bias):
        return row_scores(rows, self.weights(), bias)[0]

    def proba_args(self, rows, bias):
        """(mu.x, x^T Sigma x) per row, for Gaussian-weight probabilities."""
        return row_scores(rows, self.weights(), bias, self.variances())

    def proba(self, rows, bias):
        """P(sign(w.x) = +1) for w ~ N(mu, Sigma): Phi(mu.x / sqrt(x^T Sigma x))."""
        m, v = self.proba_args(rows, bias)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(v > 0, m / np.sqrt(np.where(v > 0, v, 1.0)), np.sign(m) * np.inf)
        return np.where(m == 0, 0.5, ndtr(z))


class FirstOrder(Engine):
    """w = s * v (scale factor for O(1) shrinking); u for averaging."""

    def initial_state(self, D):
        aux = np.zeros(3)
        aux[_core.AUX_S] = 1.0
        return {"v": np.zeros(D), "aux": aux,
                "u": np.zeros(D if self.rule == _core.Rule.AVG_PERCEPTRON else 0)}

    def run(self, rows, y, order, bias):
        st = self.state
        return _core.first_order_pass(*rows.args, y, order, bias, st["v"], st["aux"],
                                      st["u"], self.rule, self.hyper["C"],
                                      self.hyper["alpha"], self.hyper["beta"])

    def weights(self):
        st = self.state
        w = st["aux"][_core.AUX_S] * st["v"]
        if self.rule == _core.Rule.AVG_PERCEPTRON:
            t = st["aux"][_core.AUX_T]
            if t > 0:
                w = ((t + 1.0) * w - st["u"]) / t
        return w


class Diagonal(Engine):
    """mu and sigma = diag(Sigma) (initially a), interleaved as rows of `mu_sigma`."""

    def initial_state(self, D):
        # (mu_i, sigma_i) interleaved: one cache line per feature in the kernel
        ms = np.empty((D, 2))
        ms[:, 0] = 0.0
        ms[:, 1] = float(self.hyper["a"])
        return {"mu_sigma": ms}

    def run(self, rows, y, order, bias):
        h = self.hyper
        return _core.diag_pass(*rows.args, y, order, bias, self.state["mu_sigma"],
                               self.rule, h["phi"], h["r"], h["direct"])

    def weights(self):
        return self.state["mu_sigma"][:, 0]

    def variances(self):
        return self.state["mu_sigma"][:, 1]


class Full(Engine):
    """mu and a full Sigma (only the lower triangle is kept up to date)."""

    def initial_state(self, D):
        if D > MAX_FULL_DIM:
            raise ValueError(
                f"covariance='full' needs a {D} x {D} matrix ({D * D * 8 / 2**20:.0f} MiB); "
                f"it is supported up to {MAX_FULL_DIM - 1} features. Use covariance='diag' "
                "for high-dimensional data")
        a = float(self.hyper["a"])
        # SOP keeps Sigma = A^-1 with A = a I; the others start at Sigma = a I.
        return {"mu": np.zeros(D), "Sigma": np.eye(D) * (1.0 / a if self.rule == _core.Rule.SOP
                                                         else a)}

    def run(self, rows, y, order, bias):
        st = self.state
        work = np.empty(2 * len(st["mu"]))
        h = self.hyper
        return _core.full_pass(*rows.args, y, order, bias, st["mu"], st["Sigma"], work,
                               self.rule, h["phi"], h["r"])

    def weights(self):
        return self.state["mu"]

    def covariance(self):
        L = np.tril(self.state["Sigma"])
        return L + np.tril(L, -1).T

    def proba_args(self, rows, bias):
        mu = self.state["mu"]
        m = np.empty(rows.n_rows)
        v = np.empty(rows.n_rows)
        _core.full_scores(*rows.args, bias, mu, self.state["Sigma"], np.empty(2 * len(mu)),
                          m, v)
        return m, v

    def scores(self, rows, bias):
        m, v = self.proba_args(rows, bias)
        if self.rule == _core.Rule.SOP:
            # x (A + x x^T)^-1 v = x^T A^-1 v / (1 + x^T A^-1 x)  ([SOP05], Sherman-Morrison)
            return m / (1.0 + v)
        return m


class SOPDiagonal(Engine):
    """Diagonal second-order perceptron: vv = sum y x over mistakes, A = a + sum x^2."""

    def initial_state(self, D):
        return {"vv": np.zeros(D), "A": np.full(D, float(self.hyper["a"]))}

    def run(self, rows, y, order, bias):
        st = self.state
        return _core.sop_diag_pass(*rows.args, y, order, bias, st["vv"], st["A"])

    def weights(self):
        return self.state["vv"] / self.state["A"]

    def variances(self):
        return 1.0 / self.state["A"]

    def scores(self, rows, bias):
        # per test point: w = vv / (A + x^2)  ([SOP05] Fig. 3.1, diagonal projection)
        out = np.empty(rows.n_rows)
        _core.sop_diag_scores(*rows.args, bias, self.state["vv"], self.state["A"], out)
        return out


class AdaGrad(Engine):
    """Diagonal AdaGrad-RDA with L1: u = sum of subgradients, G = sum of squares."""

    def initial_state(self, D):
        return {"u": np.zeros(D), "G": np.zeros(D), "aux": np.zeros(3)}

    def run(self, rows, y, order, bias):
        st = self.state
        h = self.hyper
        return _core.adagrad_pass(*rows.args, y, order, bias, st["u"], st["G"], st["aux"],
                                  h["eta"], h["lam"], h["delta"])

    def weights(self):
        st = self.state
        h = self.hyper
        w = np.empty(len(st["u"]))
        _core.rda_weights(st["u"], st["G"], st["aux"][_core.AUX_T], h["eta"], h["lam"],
                          h["delta"], w)
        return w
