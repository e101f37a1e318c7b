"""Multi-class models: the 1-of-k feature function and its reductions (FORMULAS.md Sect. 4).

A model holds one weight block per class, D = n_features + 1 weights each (the
intercept last), and the calls into the multi-class drivers of ``cwkit._core``.
The state arrays are (D, K): the K class weights of a feature are adjacent, so
scoring a sparse row reads nnz + 1 short contiguous runs instead of K (nnz + 1)
scattered values (3-4x faster than (K, D) on 20 Newsgroups, K = 20).  Full
covariance keeps mu (K, D) and Sigma over the class-major stacked blocks.  A
model has the interface of a binary engine (``cwkit._engines``): ``state``,
``run``, ``weights`` (K, D), ``variances``, ``covariance``, ``scores`` (n, K)
and ``proba`` (n, K).

Strategies (the estimators' ``multiclass`` parameter):

* ``"top1"``: the binary rule applied to Delta = f(x, y) - f(x, c) against the
  closest competitor c (S000 Sect. 3.3, eqs. 31-32; [PA06] Sect. 7).
* ``"topk"``: PA / PA-I / PA-II (k-best MIRA) and AROW (S000 eqs. 25-30) with
  the k highest-scoring competitors, one small QP per example (Hildreth);
  PA-LS and mini-batch PA (``cwkit.minibatch``) and the L1-constrained PA
  (``cwkit.l1pa``) have their own top-1 / top-k drivers.
* ``"ovr"``: K binary problems, every class scored before any is updated.
"""
import numpy as np
from scipy.special import ndtr

from . import _core
from . import _engines as E

R = _core.Rule

#: Gauss-Hermite order of the class probabilities of Gaussian-weight models.
PROBA_NODES = 96


def _sym(L):
    """The symmetric matrix whose lower triangle (C order) is that of L."""
    L = np.tril(L)
    return L + np.tril(L, -1).T


class Multiclass:
    """Base: K weight blocks; `ovr` selects one-vs-rest, otherwise top-1."""

    def __init__(self, rule, hyper, n_classes, n_features, ovr, sum_update):
        self.rule = rule
        self.hyper = hyper
        self.K = n_classes
        self.n_features = n_features
        self.ovr = ovr
        self.sum_update = sum_update
        self.state = self.initial_state(n_classes, n_features + 1)

    def _args(self, rows, codes, order):
        return (*rows.args, np.ascontiguousarray(codes, dtype=np.intp),
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

    def covariance(self):
        return None

    def scores(self, rows, bias):
        return mc_row_scores(rows, self.weights_dk(), bias)[0]

    def score_moments(self, rows, bias):
        """Mean and variance (n, K) of every class score w_c.x~ under the Gaussian
        over weights, cross-class covariances left out."""
        return mc_row_scores(rows, self.weights_dk(), bias, self.variances_dk())

    def proba(self, rows, bias):
        M, V = self.score_moments(rows, bias)
        return argmax_proba(M, V)


def mc_row_scores(rows, W, bias, S2=None):
    """(w_c.x~, x~^T diag(s2_c) x~) per row and class, (n, K) each, for (D, K)
    weights W and variances S2, through the compiled row walk (dense == CSR)."""
    W = np.ascontiguousarray(W)
    m = np.empty((rows.n_rows, W.shape[1]))
    v = np.empty(m.shape if S2 is not None else (0, W.shape[1]))
    _core.mc_row_scores(*rows.args, bias, W, np.empty((0, W.shape[1])) if S2 is None
                        else np.ascontiguousarray(S2), m, v)
    return m, v


def argmax_proba(M, V):
    """P(class c has the largest score) for independent scores s_c ~ N(M_c, V_c).

    P_c = E_z[prod_{c' != c} Phi((M_c + sqrt(V_c) z - M_c') / sqrt(V_c'))], z ~ N(0, 1),
    by Gauss-Hermite quadrature of order PROBA_NODES; rows are normalised to
    sum to 1 (this removes the quadrature error of the total).  A zero variance
    is a point mass: Phi of +-inf, and 1/2 on an exact tie.
    """
    z, wq = np.polynomial.hermite_e.hermegauss(PROBA_NODES)
    wq = wq / np.sqrt(2.0 * np.pi)
    sd = np.sqrt(np.maximum(V, 0.0))
    n, K = M.shape
    P = np.empty((n, K))
    for c in range(K):
        s = M[:, c, None] + sd[:, c, None] * z                     # (n, Q) samples of s_c
        logp = np.zeros_like(s)
        for o in range(K):
            if o == c:
                continue
            diff = s - M[:, o, None]
            so = sd[:, o, None]
            with np.errstate(divide="ignore", invalid="ignore"):
                arg = np.where(so > 0, diff / np.where(so > 0, so, 1.0), np.sign(diff) * np.inf)
            p = np.where(np.isnan(arg) | ((so == 0) & (diff == 0)), 0.5, ndtr(arg))
            with np.errstate(divide="ignore"):
                logp += np.log(p)
        P[:, c] = np.exp(logp) @ wq
    tot = P.sum(axis=1, keepdims=True)
    return np.where(tot > 0, P / np.where(tot > 0, tot, 1.0), 1.0 / K)


class FirstOrder(Multiclass):
    """W = s V: one scale s for the whole W (top1) or one per class (ovr)."""

    def initial_state(self, K, D):
        n_aux = K if self.ovr else 1
        aux = np.zeros((n_aux, 3))
        aux[:, _core.AUX_S] = 1.0
        return {"v": np.zeros((D, K)), "aux": aux,
                "u": np.zeros((D, K) if self.rule == R.AVG_PERCEPTRON else (0, K))}

    def run(self, rows, codes, order, bias):
        st, h = self.state, self.hyper
        return _core.mc_first_order_pass(*self._args(rows, codes, order), bias, self.ovr,
                                         st["v"], st["aux"], st["u"], self.rule, h["C"],
                                         h["alpha"], h["beta"])

    def weights_dk(self):
        st = self.state
        W = st["aux"][:, 0] * st["v"]
        if self.rule == R.AVG_PERCEPTRON:
            t = st["aux"][:, 2]
            W = np.where(t > 0, ((t + 1.0) * W - st["u"]) / np.where(t > 0, t, 1.0), W)
        return W


class Diagonal(Multiclass):
    """mu, sigma = diag(Sigma) per block; initial sigma = a."""

    def initial_state(self, K, D):
        return {"mu": np.zeros((D, K)), "sigma": np.full((D, K), float(self.hyper["a"]))}

    def run(self, rows, codes, order, bias):
        st, h = self.state, self.hyper
        return _core.mc_diag_pass(*self._args(rows, codes, order), bias, self.ovr,
                                  st["mu"], st["sigma"], self.rule, h["phi"], h["r"],
                                  h["direct"], self.sum_update)

    def weights_dk(self):
        return self.state["mu"]

    def variances_dk(self):
        return self.state["sigma"]


class Full(Multiclass):
    """mu (K, D) and Sigma over the stacked blocks (top1: (K D, K D)) or one
    D x D block per class (ovr: stored as (K D, D)); one triangle is kept."""

    def initial_state(self, K, D):
        n = K * D
        if self.ovr and K * D * D > E.MAX_FULL_DIM ** 2:
            raise ValueError(
                f"covariance='full' with multiclass='ovr' needs {K} matrices of {D} x {D} "
                f"({K * D * D * 8 / 2**20:.0f} MiB); it is supported up to "
                f"{E.MAX_FULL_DIM ** 2 * 8 / 2**20:.0f} MiB. Use covariance='diag'")
        if not self.ovr and n > E.MAX_FULL_DIM:
            raise ValueError(
                f"covariance='full' with {K} classes needs a covariance over the stacked class "
                f"blocks, {K} x {D} = {n} rows ({n * n * 8 / 2**20:.0f} MiB); it is supported "
                f"up to classes x (features + 1) = {E.MAX_FULL_DIM}. Use covariance='diag' "
                "or multiclass='ovr'")
        a = float(self.hyper["a"])
        s0 = 1.0 / a if self.rule == R.SOP else a
        Sigma = np.tile(np.eye(D) * s0, (K, 1)) if self.ovr else np.eye(n) * s0
        return {"mu": np.zeros((K, D)), "Sigma": Sigma}

    def run(self, rows, codes, order, bias):
        st, h = self.state, self.hyper
        return _core.mc_full_pass(*self._args(rows, codes, order), bias, self.ovr, st["mu"],
                                  st["Sigma"], self.rule, h["phi"], h["r"], self.sum_update)

    def weights_dk(self):
        return self.state["mu"].T

    def _block(self, c):
        D = self.n_features + 1
        S = self.state["Sigma"]
        return S[c * D:(c + 1) * D, :] if self.ovr else S[c * D:(c + 1) * D, c * D:(c + 1) * D]

    def covariance(self):
        if self.ovr:
            from scipy.linalg import block_diag   # scipy.linalg is slow to import
            return block_diag(*[_sym(self._block(c)) for c in range(self.K)])
        return _sym(self.state["Sigma"])

    def score_moments(self, rows, bias):
        mu = self.state["mu"]
        D = mu.shape[1]
        M = np.empty((self.K, rows.n_rows))
        V = np.empty((self.K, rows.n_rows))
        for c in range(self.K):
            _core.full_scores(*rows.args, bias, mu[c], np.ascontiguousarray(self._block(c)),
                              np.empty(2 * D), M[c], V[c])
        return M.T, V.T

    def scores(self, rows, bias):
        if self.rule != R.SOP:
            return super().scores(rows, bias)
        M, V = self.score_moments(rows, bias)
        return M / (1.0 + V)           # [SOP05] test rule per class block


class SOPDiagonal(Multiclass):
    """Diagonal SOP per block: vv = sum of Delta over mistakes, A = a + sum Delta^2."""

    def initial_state(self, K, D):
        return {"vv": np.zeros((D, K)), "A": np.full((D, K), float(self.hyper["a"]))}

    def run(self, rows, codes, order, bias):
        st = self.state
        return _core.mc_sop_diag_pass(*self._args(rows, codes, order), bias, self.ovr,
                                      st["vv"], st["A"])

    def weights_dk(self):
        return self.state["vv"] / self.state["A"]

    def variances_dk(self):
        return 1.0 / self.state["A"]

    def scores(self, rows, bias):
        out = np.empty((rows.n_rows, self.K))
        _core.mc_sop_scores(*rows.args, bias, self.state["vv"], self.state["A"], out)
        return out


class AdaGrad(Multiclass):
    """AdaGrad-RDA per block: u = sum of subgradients, G = sum of their squares."""

    def initial_state(self, K, D):
        return {"u": np.zeros((D, K)), "G": np.zeros((D, K)), "aux": np.zeros(3)}

    def run(self, rows, codes, order, bias):
        st, h = self.state, self.hyper
        return _core.mc_adagrad_pass(*self._args(rows, codes, order), bias, self.ovr,
                                     st["u"], st["G"], st["aux"], h["eta"], h["lam"],
                                     h["delta"])

    def weights_dk(self):
        st, h = self.state, self.hyper
        w = np.empty(st["u"].size)
        _core.rda_weights(st["u"].ravel(), st["G"].ravel(), st["aux"][2], h["eta"], h["lam"],
                          h["delta"], w)
        return w.reshape(st["u"].shape)


_MODELS = {E.FirstOrder: FirstOrder, E.Diagonal: Diagonal, E.Full: Full,
           E.SOPDiagonal: SOPDiagonal, E.AdaGrad: AdaGrad}


def make_multiclass_model(est, engine_cls, rule, hyper, n_classes, n_features):
    """The multi-class model of estimator `est` for K = n_classes > 2 classes.

    Parameters
    ----------
    est : OnlineClassifier
        Supplies ``multiclass`` ("top1", "topk", "ovr"), ``k`` and, where the
        family has them, ``sigma_update`` and ``slack``.
    engine_cls : type
        The binary engine of the rule (selects the shape of the state).
    rule : cwkit._core.Rule
    hyper : dict
        The rule's hyper-parameters, as for the binary engine.
    n_classes, n_features : int

    Returns
    -------
    Multiclass
    """
    strategy = est.multiclass
    sigma_update = getattr(est, "sigma_update", "auto")
    if strategy == "topk":
        from .topk import make_topk_model
        return make_topk_model(est, engine_cls, rule, hyper, n_classes, n_features)
    sum_update = strategy == "top1" and sigma_update == "sum"
    return _MODELS[engine_cls](rule, hyper, n_classes, n_features, strategy == "ovr",
                               sum_update)
