"""Independent, plain-numpy reference implementations of cwkit's update rules.

Written straight from the papers (docs/references.md), one example at a time, with dense explicit
vectors and matrices and no cleverness; it never imports cwkit. The compiled kernels and the
estimators are tested against these functions, and the functions themselves are tested against
generic convex solvers in ``test_reference.py``.

Conventions and the choices made here where the papers are silent
------------------------------------------------------------------
* Intercept: an augmented constant feature with value 1, appended last (``x~ = [x, 1]``); it takes
  part in every norm ``n = ||x~||^2``, quadratic form ``v = x~' Sigma x~`` and margin. Without
  intercept the state simply has length d.
* Round: score with the pre-update state, mistake iff ``y * score <= 0``, then update.
* Update conditions (which rounds change the state):
  - perceptron, avg-perceptron, sop: iff ``y * score <= 0`` (sop: with its own score, see below);
  - pa, pa1, pa2, reg-pa, l2-pa, soft-reg-pa, arow, arow-h: iff ``l = max(0, 1 - m) > 0`` and,
    for the first-order ones, ``n = ||x~||^2 > 0``. A row with ``n == 0`` (only possible without
    intercept) makes no update at all -- not even the shrinkage of reg-pa / soft-reg-pa, and l2-pa
    does not raise for it;
  - pa-ls: every round with ``n > 0`` (tau may be negative);
  - cw, cw-stdev: iff ``v > 0`` and ``alpha > 0`` (``alpha = max(0, ...)`` as printed);
  - adagrad: iff ``y w.x < 1`` (subgradient nonzero), but t counts every round.
* arow-h with ``v == 0``: ``alpha = 1/(2r)`` (``min(1/(2r), l/0) = 1/(2r)``); the mean does not
  move.
* l2-pa: the radicand ``||w||^2 n - (w.x)^2`` is clamped at 0 (it is >= 0 by Cauchy-Schwarz but can
  round to a tiny negative); ``ValueError`` if an update is needed and ``beta^2 n <= 1``.
* Diagonal "inverse" updates ``Sigma^{-1} += c diag(x^2)`` are evaluated as
  ``s_i <- s_i / (1 + c s_i x_i^2)`` (no reciprocal of a tiny s_i; s_i = 0 stays 0).
* CW-Var: ``disc = (1 - 2 phi m)^2 + 8 phi^2 v`` (the nonnegative form); root
  rationalised for ``q = 1 + 2 phi m > 0``. CW-Stdev: rationalised alpha for ``m > 0`` and
  ``sqrt(u) = 2v / (alpha v phi + sqrt(alpha^2 v^2 phi^2 + 4v))`` always. Both require
  ``0.5 < eta < 1`` (phi > 0).
* SOP (full): keeps ``A`` (starts at ``a I``) and ``v``; the reported ``coef`` is ``A^{-1} v``
  and ``covariance`` is ``A^{-1}``. SOP (diag): ``A`` is a vector, ``coef = v / A``,
  ``coef_var = 1 / A`` (and ``intercept_var`` likewise, ``1/a`` without intercept). The score
  of an example (training and test) is ``x~' (A + x~ x~')^{-1} v``; see :func:`binary_scores`.
* AdaGrad ([DHS11]): keeps ``u``, ``G`` and the round counter ``t``; ``coef`` is
  ``w_{t+1}`` computed on demand; ``w_1 = 0``. The intercept coordinate is treated like every other
  coordinate (same step size and the same L1 threshold lambda).
* avg-perceptron: ``coef``/``intercept`` are the average of the post-update vectors of rounds
  1..t ([FS99]); mistakes are those of the non-averaged w.
* Variance keys when there is no intercept: ``intercept_var`` is the initial variance (``a``;
  ``1/a`` for diag SOP).

Multi-class ([CS03]; [AROW13] Sect. 3.3): weights are one stacked vector of length ``K*D``
(class-major blocks ``[weights, intercept]``), ``f(x, y) = e_y (x) x~``. Choices:

* top1: ``Delta = f(x, y) - f(x, c)`` with c the highest-scoring label != y (ties -> smaller label),
  then the binary step on ``(Delta, +1)``. Perceptron / avg-perceptron instead update iff the argmax
  prediction ``yhat != y``, with ``Delta = f(x, y) - f(x, yhat)`` (the same c unless scores tie).
  SOP: class scores are ``f_y' (A + f_y f_y')^{-1} v`` and the update is the binary SOP step on
  ``(Delta, +1)`` (its own test ``Delta' (A + Delta Delta')^{-1} v <= 0``). AROW top1 updates Sigma
  with Delta by default (``sigma_update="delta"``), ``"sum"`` uses ``f = sum_y f(x, y)``
  (mean step unchanged: the binary step on Delta with the pre-update Sigma). With
  ``diag_update="direct"`` a direction g updates ``s_i -= s_i^2 g_i^2 / (r + g' Sigma g)``.
* topk (pa, pa1, pa2, arow): the top-k competitors (k capped at K-1); dual QP solved to machine
  precision by bounded-variable least squares (``scipy.optimize.lsq_linear(method="bvls")``, an
  exact active-set method) on the Cholesky factor of Q. pa1's box [0, C] exists only with
  per-constraint slacks: ``slack="shared"`` is accepted for pa2 only. AROW topk: Sigma update with
  ``f`` (``sigma_update="sum"``, default) or with ``Delta_1`` (the closest competitor, "delta");
  updates only when ``max_j l_j > 0``. PA topk with every ``l_j <= 0``: no update (a = 0 anyway).
* ovr: K binary problems (label +1 for class k), all K scored before any update; mistake = argmax of
  the K scores != y. Full covariance is reported as the block-diagonal (K*D, K*D) matrix.
* Mistake: argmax of the class scores (ties -> smallest label) != y.

Numerical notes for the kernels: exact score ties (e.g. SOP one-vs-rest classes with mirrored
histories) can be ordered differently by mathematically equal formulas, so compare mistakes
only where the top two scores differ by more than rounding; the full-covariance Woodbury update
``Sigma - beta Sigma x x' Sigma`` can round a variance to 0 in extreme regimes (CW-Stdev with
``alpha v phi >> sqrt(v)``), the diagonal inverse form cannot.

Public functions: :func:`binary_run`, :func:`binary_scores`, :func:`binary_step` (one update of a
``(w, Sigma)`` rule), :func:`multiclass_run`, :func:`multiclass_scores`, :func:`topk_step`,
:func:`solve_dual`; lower level: :func:`init_state`, :func:`step`, :func:`score`,
:func:`public_state`.
"""
import numpy as np
from scipy.linalg import block_diag, pinvh
from scipy.optimize import lsq_linear
from scipy.special import ndtri

FIRST_ORDER = ("perceptron", "avg-perceptron", "pa", "pa1", "pa2", "pa-ls",
               "reg-pa", "l2-pa", "soft-reg-pa")
#: The rules whose state is a Gaussian N(w, sigma) over weights.
GAUSSIAN = ("cw", "cw-stdev", "arow", "arow-h", "scw1", "scw2", "nherd")
SECOND_ORDER = GAUSSIAN[:4] + ("sop",) + GAUSSIAN[4:]
RULES = FIRST_ORDER + SECOND_ORDER + ("adagrad",)

_REQUIRED = {
    "perceptron": (), "avg-perceptron": (), "pa": (), "pa1": ("C",), "pa2": ("C",),
    "pa-ls": ("C",), "reg-pa": ("alpha",), "l2-pa": ("beta",), "soft-reg-pa": ("C", "alpha"),
    "cw": ("eta",), "cw-stdev": ("eta",), "arow": ("r",), "arow-h": ("r",), "sop": (),
    "adagrad": ("eta", "lam", "delta"), "scw1": ("C", "eta"), "scw2": ("C", "eta"),
    "nherd": ("C",),
}
_OPTIONAL = {"cw": {"a": 1.0}, "cw-stdev": {"a": 1.0}, "arow": {"a": 1.0, "diag_update": "inverse"},
             "arow-h": {"a": 1.0, "diag_update": "inverse"}, "sop": {"a": 1.0},
             "scw1": {"a": 1.0}, "scw2": {"a": 1.0},
             "nherd": {"a": 1.0, "diag_update": "inverse"}}
#: the diagonal forms of each rule with ``diag_update``
_DIAG_UPDATES = {"arow": ("inverse", "direct"), "arow-h": ("inverse", "direct"),
                 "nherd": ("inverse", "direct", "exact")}


def _params(rule, params):
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; expected one of {RULES}")
    p = dict(_OPTIONAL.get(rule, {}))
    allowed = set(_REQUIRED[rule]) | set(p)
    extra = set(params) - allowed
    if extra:
        raise TypeError(f"rule {rule!r} got unexpected parameters {sorted(extra)}")
    missing = [k for k in _REQUIRED[rule] if k not in params]
    if missing:
        raise TypeError(f"rule {rule!r} needs parameters {missing}")
    p.update(params)
    if rule in ("cw", "cw-stdev", "scw1", "scw2"):
        if not 0.5 < p["eta"] < 1.0:
            raise ValueError(f"eta must be in (0.5, 1), got {p['eta']}")
        p["phi"] = float(ndtri(p["eta"]))  # Phi^{-1}(eta)
    if p.get("diag_update", "inverse") not in _DIAG_UPDATES.get(rule, ("inverse",)):
        raise ValueError(f"diag_update of {rule} must be one of {_DIAG_UPDATES.get(rule)}, "
                         f"got {p['diag_update']!r}")
    return p


def _check_cov(rule, covariance):
    if covariance not in ("diag", "full"):
        raise ValueError(f"covariance must be 'diag' or 'full', got {covariance!r}")
    if covariance == "full" and rule not in SECOND_ORDER:
        raise ValueError(f"covariance='full' applies to {SECOND_ORDER}, not {rule!r}")


def _augment(X, fit_intercept):
    X = np.asarray(X, dtype=np.float64)
    if fit_intercept:
        return np.hstack([X, np.ones((X.shape[0], 1))])
    return X.copy()


# --------------------------------------------------------------------------- internal state
def init_state(rule, D, *, covariance="diag", **params):
    """Initial internal state of ``rule`` on augmented vectors of length ``D``."""
    _check_cov(rule, covariance)
    p = _params(rule, params)
    st = {"w": np.zeros(D)}
    if rule in GAUSSIAN:
        st["sigma"] = p["a"] * (np.eye(D) if covariance == "full" else np.ones(D))
    elif rule == "sop":
        st["A"] = p["a"] * (np.eye(D) if covariance == "full" else np.ones(D))
        st["v"] = np.zeros(D)
    elif rule == "adagrad":
        st["u"] = np.zeros(D)
        st["G"] = np.zeros(D)
        st["t"] = 0
    elif rule == "avg-perceptron":
        st["wsum"] = np.zeros(D)
        st["t"] = 0
    return st


def _adagrad_w(st, p):
    """w_{t+1} from (u, G, t), [DHS11]; w = 0 before the first round."""
    t = st["t"]
    if t == 0:
        return np.zeros_like(st["u"])
    u, G = st["u"], st["G"]
    w = np.zeros_like(u)
    for i in range(u.size):
        if G[i] > 0:
            shrunk = max(0.0, abs(u[i]) / t - p["lam"])
            w[i] = -np.sign(u[i]) * p["eta"] * t / (p["delta"] + np.sqrt(G[i])) * shrunk
    return w


def _sop_score(st, x, covariance):
    """x' (A + x x')^{-1} v (diag: sum_i x_i v_i / (A_i + x_i^2))."""
    A, v = st["A"], st["v"]
    if covariance == "full":
        return float(x @ np.linalg.solve(A + np.outer(x, x), v))
    return float(np.sum(x * v / (A + x * x)))


def score(rule, st, x, *, covariance="diag", **params):
    """Pre-update score of the augmented example ``x`` under internal state ``st``."""
    p = _params(rule, params)
    if rule == "sop":
        return _sop_score(st, x, covariance)
    if rule == "adagrad":
        return float(_adagrad_w(st, p) @ x)
    return float(st["w"] @ x)


def _sigma_x(sigma, x):
    return sigma @ x if sigma.ndim == 2 else sigma * x


def _shrink_full(sigma, sx, c):
    """Sigma - c (Sigma x)(Sigma x)'."""
    return sigma - c * np.outer(sx, sx)


def _inv_diag_update(sigma, c, x):
    """Sigma^{-1} += c diag(x^2), as s / (1 + c s x^2)."""
    return sigma / (1.0 + c * sigma * x * x)


def _cw_var_alpha(m, v, phi):
    q = 1.0 + 2.0 * phi * m
    disc = (1.0 - 2.0 * phi * m) ** 2 + 8.0 * phi * phi * v
    if q > 0:
        root = 2.0 * (phi * v - m) / (v * (q + np.sqrt(disc)))
    else:
        root = (-q + np.sqrt(disc)) / (4.0 * phi * v)
    return max(0.0, root)


def _cw_stdev_alpha(m, v, phi):
    psi = 1.0 + phi * phi / 2.0
    xi = 1.0 + phi * phi
    D = m * m * phi ** 4 / 4.0 + v * phi * phi * xi
    if m > 0:
        root = (v * phi * phi - m * m) / (v * (m * psi + np.sqrt(D)))
    else:
        root = (-m * psi + np.sqrt(D)) / (v * xi)
    return max(0.0, root)


def _cw_stdev_sqrt_u(alpha, v, phi):
    return 2.0 * v / (alpha * v * phi + np.sqrt(alpha ** 2 * v ** 2 * phi ** 2 + 4.0 * v))


def step(rule, st, x, y, *, covariance="diag", weight=1.0, **params):
    """One update of internal state ``st`` (a new dict is returned) on augmented ``x``, label y.

    ``weight``: the importance weight s of the example (docs/algorithms.md, "Importance
    weights"): the loss term of the rule's objective scaled by s (pa1: C -> s C; pa2, pa-ls,
    soft-reg-pa: 1/(2C) -> 1/(2 s C); arow, arow-h: 1/(2r) -> s/(2r), i.e. r -> r/s; adagrad:
    the loss s l, its subgradient -s y x); the perceptron: tau -> s tau; sop: the mistake adds
    s y x and s x x'; the hard constraints: the fraction f = min(s, 1) of the update (pa:
    tau -> f tau; reg-pa, l2-pa: tau -> f tau and the shrink Z -> 1 + f (Z - 1); cw, cw-stdev:
    alpha -> f alpha in both the mean and the covariance step). A weight 0 changes nothing but
    the round counters.

    Returns ``(new_state, updated)``.
    """
    p = _params(rule, params)
    s = float(weight)
    f = min(s, 1.0)
    st = {k: (val.copy() if isinstance(val, np.ndarray) else val) for k, val in st.items()}
    w = st["w"]
    n = float(x @ x)
    updated = False
    if rule in ("perceptron", "avg-perceptron"):
        if y * (w @ x) <= 0 and s > 0:
            st["w"] = w + s * y * x
            updated = True
        if rule == "avg-perceptron":
            st["t"] += 1
            st["wsum"] = st["wsum"] + st["w"]
        return st, updated
    if rule in ("pa", "pa1", "pa2", "pa-ls", "reg-pa", "l2-pa", "soft-reg-pa"):
        m = y * float(w @ x)
        loss = max(0.0, 1.0 - m)
        if n == 0.0 or (rule != "pa-ls" and loss <= 0.0) or s == 0.0:
            return st, False
        if rule == "pa":
            st["w"] = w + f * loss / n * y * x
        elif rule == "pa1":
            st["w"] = w + min(s * p["C"], loss / n) * y * x
        elif rule == "pa2":
            st["w"] = w + loss / (n + 1.0 / (2.0 * s * p["C"])) * y * x
        elif rule == "pa-ls":
            st["w"] = w + (1.0 - m) / (n + 1.0 / (2.0 * s * p["C"])) * y * x
        elif rule == "reg-pa":
            tau = f * (loss + p["alpha"]) / n
            st["w"] = (w + tau * y * x) / (1.0 + f * p["alpha"])
        elif rule == "l2-pa":
            beta = p["beta"]
            if beta * beta * n <= 1.0:
                raise ValueError(f"l2-pa infeasible: beta^2 ||x||^2 = {beta * beta * n} <= 1")
            rad = max(0.0, (float(w @ w) * n - float(w @ x) ** 2) / (beta * beta * n - 1.0))
            Z = max(1.0, np.sqrt(rad))
            tau = f * (loss + Z - 1.0) / n
            st["w"] = (w + tau * y * x) / (1.0 + f * (Z - 1.0))
        else:  # soft-reg-pa, Z_t = y x
            alpha, C = p["alpha"], p["C"]
            tau = (1.0 - m + alpha) / (n + (1.0 + alpha) / (2.0 * s * C))
            st["w"] = (w + tau * y * x) / (1.0 + alpha)
        return st, True
    if rule == "adagrad":
        wt = _adagrad_w(st, p)
        st["t"] += 1
        if y * float(wt @ x) < 1.0 and s > 0:
            g = -s * y * x
            st["u"] = st["u"] + g
            st["G"] = st["G"] + g * g
            updated = True
        return st, updated
    if rule == "sop":
        if y * _sop_score(st, x, covariance) <= 0 and s > 0:
            st["v"] = st["v"] + s * y * x
            st["A"] = st["A"] + s * (np.outer(x, x) if covariance == "full" else x * x)
            updated = True
        return st, updated
    # cw, cw-stdev, arow, arow-h, scw1, scw2, nherd
    sigma = st["sigma"]
    sx = _sigma_x(sigma, x)
    m = y * float(w @ x)
    v = float(x @ sx)
    full = covariance == "full"
    if rule in ("scw1", "scw2", "nherd"):
        return _soft_step(rule, st, x, y, sx, m, v, full, s * p["C"], p)
    if rule in ("cw", "cw-stdev"):
        phi = p["phi"]
        if v <= 0.0:
            return st, False
        if rule == "cw":
            alpha = f * _cw_var_alpha(m, v, phi)
            if alpha <= 0.0:
                return st, False
            st["w"] = w + alpha * y * sx
            if full:
                st["sigma"] = _shrink_full(sigma, sx, 2 * alpha * phi / (1 + 2 * alpha * phi * v))
            else:
                st["sigma"] = _inv_diag_update(sigma, 2.0 * alpha * phi, x)
        else:
            alpha = f * _cw_stdev_alpha(m, v, phi)
            if alpha <= 0.0:
                return st, False
            sqrt_u = _cw_stdev_sqrt_u(alpha, v, phi)
            st["w"] = w + alpha * y * sx
            if full:
                beta = alpha * phi / (sqrt_u + v * alpha * phi)
                st["sigma"] = _shrink_full(sigma, sx, beta)
            else:
                st["sigma"] = _inv_diag_update(sigma, alpha * phi / sqrt_u, x)
        return st, True
    # arow, arow-h: the loss terms 1/(2r) of the objective scaled by s
    loss = max(0.0, 1.0 - m)
    if loss <= 0.0 or s == 0.0:
        return st, False
    r = p["r"] / s
    beta = 1.0 / (v + r)
    if rule == "arow":
        alpha = loss * beta
    else:
        alpha = 1.0 / (2.0 * r) if v == 0.0 else min(1.0 / (2.0 * r), loss / v)
    st["w"] = w + alpha * y * sx
    if full:
        st["sigma"] = _shrink_full(sigma, sx, beta)
    elif p["diag_update"] == "inverse":
        st["sigma"] = _inv_diag_update(sigma, 1.0 / r, x)
    else:
        st["sigma"] = sigma - beta * sigma * sigma * x * x
    return st, True


def scw_alpha(rule, m, v, phi, C):
    """alpha of SCW-I ([SCW12] Prop. 1: CW-Stdev's root, :func:`_cw_stdev_alpha`, clipped
    at C) or SCW-II (Prop. 2: n = v + 1/(2C), gamma = phi sqrt(phi^2 m^2 v^2 + 4 n v (n +
    v phi^2)), alpha = max(0, (-(2 m n + phi^2 m v) + gamma) / (2 (n^2 + n v phi^2))));
    for m > 0 SCW-II's root rationalised: 2 (phi^2 v - m^2) / (gamma + m (2 n + phi^2 v))
    (the same number, free of cancellation; ``test_reference.py`` checks both forms)."""
    if rule == "scw1":
        return min(C, _cw_stdev_alpha(m, v, phi))
    n = v + 1.0 / (2.0 * C)
    gamma = phi * np.sqrt(phi * phi * m * m * v * v + 4.0 * n * v * (n + v * phi * phi))
    if m > 0:
        root = 2.0 * (phi * phi * v - m * m) / (gamma + m * (2.0 * n + phi * phi * v))
    else:
        root = (-(2.0 * m * n + phi * phi * m * v) + gamma) / (2.0 * (n * n + n * v * phi * phi))
    return max(0.0, root)


def _soft_step(rule, st, x, y, sx, m, v, full, C, p):
    """One SCW-I / SCW-II ([SCW12] Alg. 1) or NHERD ([NHERD10], full update) update, C the
    importance-weighted s C; see :func:`step`."""
    w, sigma = st["w"], st["sigma"]
    if C == 0.0 or v <= 0.0:
        return st, False
    if rule == "nherd":
        loss = max(0.0, 1.0 - m)
        if loss <= 0.0:
            return st, False
        st["w"] = w + loss / (v + 1.0 / C) * y * sx
        beta = (C * C * v + 2.0 * C) / (1.0 + C * v) ** 2
        if full:
            st["sigma"] = _shrink_full(sigma, sx, beta)
        elif p["diag_update"] == "inverse":                      # "project": Sigma^-1's diagonal
            st["sigma"] = _inv_diag_update(sigma, 2.0 * C + C * C * v, x)
        elif p["diag_update"] == "direct":                       # "drop": Sigma's diagonal
            st["sigma"] = sigma - beta * sigma * sigma * x * x
        else:                       # "exact": the herding map A restricted to diagonals
            st["sigma"] = sigma / (1.0 + C * x * x * sigma) ** 2
        return st, True
    phi = p["phi"]
    if phi * np.sqrt(v) - m <= 0.0:                              # no loss: passive
        return st, False
    alpha = scw_alpha(rule, m, v, phi, C)
    if alpha <= 0.0:
        return st, False
    sqrt_u = _cw_stdev_sqrt_u(alpha, v, phi)     # u = (-alpha v phi + sqrt(...))^2 / 4
    st["w"] = w + alpha * y * sx
    if full:
        st["sigma"] = _shrink_full(sigma, sx, alpha * phi / (sqrt_u + v * alpha * phi))
    else:
        st["sigma"] = _inv_diag_update(sigma, alpha * phi / sqrt_u, x)
    return st, True


def binary_step(rule, w, x, y, *, sigma=None, covariance="diag", **params):
    """One update of a rule whose state is ``(w, Sigma)``, on already-augmented ``x``.

    For first-order rules ``sigma`` is ignored and returned as ``None``. Returns
    ``(w_new, sigma_new)``. Not for avg-perceptron, sop, adagrad (extra state; use :func:`step`).
    """
    if rule in ("avg-perceptron", "sop", "adagrad"):
        raise ValueError(f"binary_step does not handle {rule!r}; use step()")
    st = {"w": np.asarray(w, dtype=np.float64)}
    if rule in GAUSSIAN:
        st["sigma"] = np.asarray(sigma, dtype=np.float64)
    new, _ = step(rule, st, np.asarray(x, dtype=np.float64), y, covariance=covariance, **params)
    return new["w"], new.get("sigma")


# --------------------------------------------------------------------------- public views
def _split(vec, fit_intercept):
    if fit_intercept:
        return vec[..., :-1].copy(), vec[..., -1].copy()
    return vec.copy(), None


def _public_vectors(rule, st, covariance, p):
    """(w, Sigma-or-None, initial variance) of the public view of an internal state."""
    if rule == "avg-perceptron":
        w = st["wsum"] / st["t"] if st["t"] > 0 else st["w"]
    elif rule == "adagrad":
        w = _adagrad_w(st, p)
    elif rule == "sop":
        w = np.linalg.solve(st["A"], st["v"]) if covariance == "full" else st["v"] / st["A"]
    else:
        w = st["w"]
    if rule == "sop":
        sig = np.linalg.inv(st["A"]) if covariance == "full" else 1.0 / st["A"]
        return w.copy(), sig, 1.0 / p["a"]
    if rule in SECOND_ORDER:
        return w.copy(), st["sigma"].copy(), p["a"]
    return w.copy(), None, None


def public_state(rule, st, *, fit_intercept=True, covariance="diag", **params):
    """Public view (``coef``, ``intercept``, ``coef_var``, ``intercept_var``, ``covariance``)."""
    w, sig, init_var = _public_vectors(rule, st, covariance, _params(rule, params))
    coef, b = _split(w, fit_intercept)
    out = {"coef": coef, "intercept": float(b) if fit_intercept else 0.0}
    if sig is not None:
        if covariance == "full":
            out["covariance"] = sig
        else:
            cv, bv = _split(sig, fit_intercept)
            out["coef_var"] = cv
            out["intercept_var"] = float(bv) if fit_intercept else init_var
    return out


def binary_run(rule, X, y, *, fit_intercept=True, covariance="diag", weights=None, **params):
    """Online pass over the rows of ``X`` in order; one ``(mistake, state)`` per round.

    Parameters
    ----------
    rule : str
        One of :data:`RULES`.
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,), values in {-1, +1}
    fit_intercept : bool
        Append the constant feature 1 (last).
    covariance : {"diag", "full"}
        For the second-order rules.
    weights : ndarray of shape (n,), optional
        The importance weight of each row (see :func:`step`); None: 1.
    **params
        The rule's hyper-parameters (see ``_REQUIRED`` / ``_OPTIONAL``).

    Returns
    -------
    list of (bool, dict)
        ``mistake`` (``y * score <= 0`` with the pre-update state) and the public state after
        the round's update.
    """
    _check_cov(rule, covariance)
    Xa = _augment(X, fit_intercept)
    y = np.asarray(y)
    if not np.all(np.isin(y, (-1, 1))):
        raise ValueError("y must be in {-1, +1}")
    st = init_state(rule, Xa.shape[1], covariance=covariance, **params)
    weights = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64)
    out = []
    for x, yt, s in zip(Xa, y, weights):
        yt = float(yt)
        mistake = yt * score(rule, st, x, covariance=covariance, **params) <= 0
        st, _ = step(rule, st, x, yt, covariance=covariance, weight=s, **params)
        out.append((bool(mistake), public_state(rule, st, fit_intercept=fit_intercept,
                                                covariance=covariance, **params)))
    return out


def binary_scores(rule, state, X, *, fit_intercept=True, covariance="diag"):
    """Test-time scores of public ``state`` on the rows of ``X``.

    ``coef . x + intercept`` for every rule but SOP, whose score includes the test point
    ([SOP05] Fig. 3.1): ``x~' (A + x~ x~')^{-1} v``. With ``coef = A^{-1} v`` and
    ``P = A^{-1}`` this is ``x~' coef / (1 + x~' P x~)`` (Sherman-Morrison) for full A, and
    ``sum_i x~_i coef_i / (1 + P_ii x~_i^2)`` for diagonal A (``v_i = coef_i / P_ii``).
    """
    Xa = _augment(X, fit_intercept)
    w = np.append(state["coef"], state["intercept"]) if fit_intercept else state["coef"]
    if rule != "sop":
        return Xa @ w
    if covariance == "full":
        P = state["covariance"]
        return np.array([x @ w / (1.0 + x @ P @ x) for x in Xa])
    P = np.append(state["coef_var"], state["intercept_var"]) if fit_intercept else state["coef_var"]
    return np.array([np.sum(x * w / (1.0 + P * x * x)) for x in Xa])


# --------------------------------------------------------------------------- multi-class
def feature(xa, label, K):
    """1-of-k feature map ``f(x, y) = e_y (x) x~`` ([AROW13] Sect. 5.4)."""
    D = xa.size
    f = np.zeros(K * D)
    f[label * D:(label + 1) * D] = xa
    return f


def competitors(scores, label):
    """Labels != ``label`` by decreasing score, ties -> smaller label (the conventions above)."""
    others = [c for c in range(len(scores)) if c != label]
    return sorted(others, key=lambda c: (-scores[c], c))


def solve_dual(Q, ell, upper=np.inf):
    """argmax ``ell'a - a'Q a / 2`` over ``0 <= a <= upper`` (Q positive definite).

    Written as the bounded least-squares problem ``min ||L'a - L^{-1} ell||^2 / 2`` with
    ``Q = L L'`` and solved by BVLS, an exact active-set method (``scipy.optimize.lsq_linear``).
    """
    L = np.linalg.cholesky(Q)
    rhs = np.linalg.solve(L, ell)
    res = lsq_linear(L.T, rhs, bounds=(np.zeros(ell.size), np.full(ell.size, upper)),
                     method="bvls", tol=1e-15)
    return res.x


def _class_scores(rule, st, xa, K, covariance, p):
    if rule == "sop":
        return np.array([_sop_score(st, feature(xa, c, K), covariance) for c in range(K)])
    w = _adagrad_w(st, p) if rule == "adagrad" else st["w"]
    return w.reshape(K, -1) @ xa


def _arow_sigma_update(st, g, r, covariance, diag_update):
    """AROW Sigma update with direction g: Sigma -= Sigma g g' Sigma / (r + g' Sigma g)."""
    sigma = st["sigma"]
    sg = _sigma_x(sigma, g)
    beta = 1.0 / (r + float(g @ sg))
    if covariance == "full":
        st["sigma"] = _shrink_full(sigma, sg, beta)
    elif diag_update == "inverse":
        st["sigma"] = _inv_diag_update(sigma, 1.0 / r, g)
    else:
        st["sigma"] = sigma - beta * sigma * sigma * g * g


def _mc_top1(rule, st, xa, label, K, covariance, sigma_update, p, params, weight=1.0):
    s = _class_scores(rule, st, xa, K, covariance, p)
    yhat = int(np.argmax(s))
    if rule in ("perceptron", "avg-perceptron"):
        st = {k: (val.copy() if isinstance(val, np.ndarray) else val) for k, val in st.items()}
        if yhat != label and weight > 0:
            st["w"] = st["w"] + weight * (feature(xa, label, K) - feature(xa, yhat, K))
        if rule == "avg-perceptron":
            st["t"] += 1
            st["wsum"] = st["wsum"] + st["w"]
        return yhat, st
    c = competitors(s, label)[0]
    delta = feature(xa, label, K) - feature(xa, c, K)
    if rule in ("arow", "arow-h") and sigma_update == "sum":
        # mean step of the binary rule on (Delta, +1), Sigma updated with f = sum_y f(x, y)
        new, updated = step(rule, st, delta, 1.0, covariance=covariance, weight=weight, **params)
        if updated:
            new["sigma"] = st["sigma"].copy()
            _arow_sigma_update(new, np.tile(xa, K), p["r"] / weight, covariance,
                               p["diag_update"])
        return yhat, new
    new, _ = step(rule, st, delta, 1.0, covariance=covariance, weight=weight, **params)
    return yhat, new


def _mc_topk(rule, st, xa, label, K, k, covariance, sigma_update, slack, p, weight=1.0):
    """The top-k update; with an importance weight s: AROW's r -> r/s, PA-I's box
    [0, s C], PA-II's ridge 1/(2 s C), PA's multipliers min(s, 1) a (see :func:`step`)."""
    s = _class_scores(rule, st, xa, K, covariance, p)
    yhat = int(np.argmax(s))
    comp = competitors(s, label)[:k]
    deltas = np.array([feature(xa, label, K) - feature(xa, c, K) for c in comp])
    w = st["w"]
    ell = 1.0 - deltas @ w
    if ell.max() <= 0.0 or not np.any(xa) or weight == 0.0:
        return yhat, st
    st = {key: val.copy() for key, val in st.items()}
    ones = np.ones((len(comp), len(comp)))
    if rule == "arow":
        r = p["r"] / weight
        S = st["sigma"]
        SD = deltas @ S if covariance == "full" else deltas * S  # rows: (Sigma Delta_j)'
        a = solve_dual(SD @ deltas.T + r * ones, ell)
        st["w"] = w + a @ SD
        g = np.tile(xa, K) if sigma_update == "sum" else deltas[0]
        _arow_sigma_update(st, g, r, covariance, p["diag_update"])
        return yhat, st
    G = deltas @ deltas.T
    if rule == "pa":
        a = min(weight, 1.0) * solve_dual(G, ell)
    elif rule == "pa1":
        a = solve_dual(G, ell, upper=weight * p["C"])
    elif slack == "shared":
        a = solve_dual(G + ones / (2.0 * weight * p["C"]), ell)
    else:
        a = solve_dual(G + np.eye(len(comp)) / (2.0 * weight * p["C"]), ell)
    st["w"] = w + a @ deltas
    return yhat, st


def _stack_ovr(rule, states, covariance):
    """Concatenate K binary internal states into one class-major internal state."""
    st = {}
    for key in states[0]:
        vals = [s[key] for s in states]
        if key == "t":
            st[key] = vals[0]
        elif covariance == "full" and key in ("sigma", "A"):
            st[key] = block_diag(*vals)
        else:
            st[key] = np.concatenate(vals)
    return st


def public_multiclass_state(rule, st, K, *, fit_intercept=True, covariance="diag", **params):
    """Public multi-class view: coef (K, d), intercept (K,), coef_var / intercept_var (K, ...)
    or covariance (K*D, K*D)."""
    w, sig, init_var = _public_vectors(rule, st, covariance, _params(rule, params))
    coef, b = _split(w.reshape(K, -1), fit_intercept)
    out = {"coef": coef, "intercept": b if fit_intercept else np.zeros(K)}
    if sig is not None:
        if covariance == "full":
            out["covariance"] = sig
        else:
            cv, bv = _split(sig.reshape(K, -1), fit_intercept)
            out["coef_var"] = cv
            out["intercept_var"] = bv if fit_intercept else np.full(K, init_var)
    return out


def multiclass_run(rule, X, y, n_classes, *, strategy="top1", k=1, fit_intercept=True,
                   covariance="diag", sigma_update=None, slack="per-constraint", weights=None,
                   **params):
    """Online multi-class pass ([CS03]; [AROW13] Sect. 3.3); one ``(mistake, state)`` per round.

    Parameters
    ----------
    rule : str
        Any binary rule for ``strategy="top1"`` and ``"ovr"``; pa, pa1, pa2, arow for ``"topk"``.
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,), labels in 0..n_classes-1
    n_classes : int
    strategy : {"top1", "topk", "ovr"}
    k : int
        Number of competitors for ``"topk"`` (capped at ``n_classes - 1``).
    sigma_update : {None, "delta", "sum"}
        AROW's Sigma direction; None means "delta" for top1 and "sum" for topk.
    slack : {"per-constraint", "shared"}
        PA-II top-k squared-slack structure.
    weights : ndarray of shape (n,), optional
        The importance weight of each row (see :func:`step`, :func:`_mc_topk`); None: 1.

    Returns
    -------
    list of (bool, dict)
        Mistake (argmax of the pre-update class scores != y, ties -> smallest label) and
        :func:`public_multiclass_state` after the update.
    """
    _check_cov(rule, covariance)
    p = _params(rule, params)
    K = int(n_classes)
    if strategy not in ("top1", "topk", "ovr"):
        raise ValueError(f"strategy must be 'top1', 'topk' or 'ovr', got {strategy!r}")
    if strategy == "topk" and rule not in ("pa", "pa1", "pa2", "arow"):
        raise ValueError(f"strategy 'topk' is defined for pa, pa1, pa2, arow, not {rule!r}")
    if slack not in ("per-constraint", "shared") or (slack == "shared" and rule != "pa2"):
        raise ValueError(f"slack={slack!r} is not available for rule {rule!r}")
    if rule in ("arow", "arow-h"):
        if sigma_update is None:
            sigma_update = "sum" if strategy == "topk" else "delta"
        if sigma_update not in ("delta", "sum"):
            raise ValueError(f"sigma_update must be 'delta' or 'sum', got {sigma_update!r}")
    elif sigma_update is not None:
        raise ValueError(f"sigma_update applies to arow/arow-h only, not {rule!r}")
    Xa = _augment(X, fit_intercept)
    y = np.asarray(y)
    if not np.all((y >= 0) & (y < K)):
        raise ValueError(f"labels must be in 0..{K - 1}")
    D = Xa.shape[1]
    kw = dict(fit_intercept=fit_intercept, covariance=covariance, **params)
    weights = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64)
    out = []
    if strategy == "ovr":
        states = [init_state(rule, D, covariance=covariance, **params) for _ in range(K)]
        for x, label, wt in zip(Xa, y, weights):
            s = [score(rule, st, x, covariance=covariance, **params) for st in states]
            mistake = int(np.argmax(s)) != label
            states = [step(rule, st, x, 1.0 if c == label else -1.0, covariance=covariance,
                           weight=wt, **params)[0] for c, st in enumerate(states)]
            out.append((mistake, public_multiclass_state(rule, _stack_ovr(rule, states,
                                                                          covariance), K, **kw)))
        return out
    st = init_state(rule, K * D, covariance=covariance, **params)
    for x, label, wt in zip(Xa, y, weights):
        if strategy == "top1":
            yhat, st = _mc_top1(rule, st, x, int(label), K, covariance, sigma_update, p, params,
                                wt)
        else:
            yhat, st = _mc_topk(rule, st, x, int(label), K, min(k, K - 1), covariance,
                                sigma_update, slack, p, wt)
        out.append((yhat != label, public_multiclass_state(rule, st, K, **kw)))
    return out


def multiclass_scores(rule, state, X, *, fit_intercept=True, covariance="diag"):
    """Test-time class scores (n, K) of a public multi-class state (any strategy).

    Every rule but SOP: ``X~ W'``. SOP: per class the binary SOP test rule on that class's block,
    ``f_y' (A + f_y f_y')^{-1} v`` (block-diagonal A for ovr gives the same formula).
    """
    K, d = state["coef"].shape
    if rule != "sop":
        Xa = _augment(X, fit_intercept)
        W = np.hstack([state["coef"], state["intercept"][:, None]]) if fit_intercept \
            else state["coef"]
        return Xa @ W.T
    D = d + 1 if fit_intercept else d
    cols = []
    for c in range(K):
        sub = {"coef": state["coef"][c], "intercept": state["intercept"][c]}
        if covariance == "full":
            sub["covariance"] = state["covariance"][c * D:(c + 1) * D, c * D:(c + 1) * D]
        else:
            sub["coef_var"] = state["coef_var"][c]
            sub["intercept_var"] = state["intercept_var"][c]
        cols.append(binary_scores("sop", sub, X, fit_intercept=fit_intercept,
                                  covariance=covariance))
    return np.column_stack(cols)


def topk_step(rule, w, xa, label, K, k, *, sigma=None, covariance="diag", sigma_update="sum",
              slack="per-constraint", **params):
    """One top-k update (pa, pa1, pa2, arow) of the stacked ``w`` (length K*D) on augmented
    ``xa``; returns ``(w_new, sigma_new)`` (sigma ``None`` for PA)."""
    p = _params(rule, params)
    st = {"w": np.asarray(w, dtype=np.float64)}
    if rule == "arow":
        st["sigma"] = np.asarray(sigma, dtype=np.float64)
    _, new = _mc_topk(rule, st, np.asarray(xa, dtype=np.float64), int(label), int(K), int(k),
                      covariance, sigma_update, slack, p)
    return new["w"], new.get("sigma")


# --------------------------------------------------------------------------- multi-class BPA
# Multi-class mini-batch PA ([GPA13] Sect. 3.2 on the groups, [CS03] for the 1-of-k constraints).
# Choices: competitors of each row from the scores at the group's update (ties -> smaller label);
# constraints of a row with x~ = 0 are dropped (tau = 0); BPA-I/II update only when some kept
# l_ij > 0, BPA-LS on every group; rho = 1/(2C) ("half") or 1/C ("inverse"); "shared" slack:
# one squared slack per row for all of its constraints.  The duals of BPA-I/II are solved by
# `solve_dual` (BVLS on the Cholesky factor: Q must be positive definite, i.e. the kept
# constraints linearly independent -- at most D rows per group with distinct rows), BPA-LS by the
# pseudo-inverse.
def mc_bpa_ambiguous(W, xa, order, cut, K):
    """True if labels order[cut - 1] and order[cut] (by decreasing score on ``xa``) have scores
    within 1e-9 while their blocks are not both zero on the support of ``xa``: a choice between
    them is decided by rounding (blocks of tied competitors get equal steps in exact arithmetic).
    """
    if cut >= len(order):
        return False
    Wk = W.reshape(K, -1)
    a, b = order[cut - 1], order[cut]
    sa, sb = Wk[a] @ xa, Wk[b] @ xa
    on = xa != 0
    return bool(abs(sa - sb) <= 1e-9 * max(1.0, abs(sa)) and (Wk[a][on].any() or Wk[b][on].any()))


def mc_bpa_step(W, Xa, labels, K, k, *, variant, C, rho="half", slack="per-constraint",
                weights=None):
    """One group update of the stacked ``W`` (length K*D) on augmented rows ``Xa`` (B, D).

    Returns ``(W_new, deltas, tau, ambiguous)``: the constraint vectors Delta_ij (rows), the step
    sizes, and whether a competitor choice was decided by rounding (:func:`mc_bpa_ambiguous`).
    ``weights``: the rows' importance weights s (None: 1), row i's loss terms multiplied by s_i: its
    box ``s_i C``, its ridge ``r / s_i``, and no step where ``s_i = 0``.
    """
    sw = np.ones(len(labels)) if weights is None else np.asarray(weights, dtype=np.float64)
    W = np.asarray(W, dtype=np.float64)
    r = (0.5 if rho == "half" else 1.0) / C
    deltas, ell, owner = [], [], []
    ambiguous = False
    for i, (xa, label) in enumerate(zip(Xa, labels)):
        s = W.reshape(K, -1) @ xa
        ambiguous |= mc_bpa_ambiguous(W, xa, competitors(s, int(label)), min(k, K - 1), K)
        for c in competitors(s, int(label))[:min(k, K - 1)]:
            deltas.append(feature(xa, int(label), K) - feature(xa, c, K))
            ell.append(1.0 - deltas[-1] @ W)
            owner.append(i)
    deltas, ell, owner = np.array(deltas), np.array(ell), np.array(owner)
    tau = np.zeros(len(ell))
    keep = np.flatnonzero((np.einsum("ij,ij->i", deltas, deltas) > 0) & (sw[owner] > 0))
    D_, l_, o_ = deltas[keep], ell[keep], owner[keep]
    G = D_ @ D_.T
    rs = r / sw[o_]
    ridge = ((o_[:, None] == o_[None, :]) * rs[:, None] if slack == "shared"
             else np.diag(rs))
    if variant == "bpa-ls":
        tau[keep] = pinvh(G + ridge) @ l_
    elif len(keep) and l_.max() > 0:
        tau[keep] = (solve_dual(G, l_, C * sw[o_]) if variant == "bpa1"
                     else solve_dual(G + ridge, l_))
    return W + tau @ deltas, deltas, tau, ambiguous


def mc_bpa_run(X, y, K, *, variant="bpa1", C=1.0, B=4, k=1, window="block", fit_intercept=True,
               rho="half", slack="per-constraint", weights=None):
    """Online multi-class mini-batch PA; per row ``(mistake, W, scores, ambiguous)``.

    Block: rows of a group are predicted with the model from before the group; the reported
    ``W`` (stacked, length K*D) after a row includes the incomplete group as a provisional last
    group.  Sliding: predict row t, then update with rows t-B+1..t.  ``scores`` are the class
    scores the row was predicted with; mistake = argmax (ties -> smallest label) != y.
    ``ambiguous``: the prediction or a competitor choice of this round's update (the
    provisional one included) was decided by rounding (:func:`mc_bpa_ambiguous`).
    ``weights``: the rows' importance weights (None: 1), see :func:`mc_bpa_step`.
    """
    Xa = _augment(X, fit_intercept)
    y = np.asarray(y)
    wt = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64)
    W = np.zeros(K * Xa.shape[1])
    kw = dict(variant=variant, C=C, rho=rho, slack=slack)
    out, group = [], []
    for t in range(len(y)):
        s = W.reshape(K, -1) @ Xa[t]
        mistake = int(np.argmax(s)) != y[t]
        ambiguous = mc_bpa_ambiguous(W, Xa[t], sorted(range(K), key=lambda c: (-s[c], c)), 1, K)
        if window == "sliding":
            lo = max(0, t - B + 1)
            W, _, _, amb = mc_bpa_step(W, Xa[lo:t + 1], y[lo:t + 1], K, k,
                                       weights=wt[lo:t + 1],
                                       **kw)
            out.append((mistake, W, s, ambiguous or amb))
            continue
        group.append(t)
        Wg, _, _, amb = mc_bpa_step(W, Xa[group], y[group], K, k, weights=wt[group], **kw)
        if len(group) == B:
            W, group = Wg, []
        out.append((mistake, Wg, s, ambiguous or amb))
    return out


# --------------------------------------------------------------------------- l1-pa multi-class
# L1-norm-constrained PA ([LMC09] eq. 3.9) and its multi-class top-1 reduction ([PA06] Sect. 7).
# The projection is solved by plain bisection on the dual variable lambda (not cwkit's
# safeguarded Newton): w(tau, lam) = S_lam(v + tau z); tau(lam) is the exact root of the
# piecewise-linear margin (interpolated between its breakpoints); g(lam) = ||w||_1 - beta is
# continuous and nonincreasing, bisected until the bracket is two adjacent doubles.

def _soft(u, lam):
    return np.sign(u) * np.maximum(np.abs(u) - lam, 0.0)


def _l1_tau(v, z, lam):
    """Smallest tau >= 0 with z . S_lam(v + tau z) >= 1."""
    def margin(t):
        return z @ _soft(v + t * z, lam)

    if margin(0.0) >= 1.0:
        return 0.0
    on = z != 0
    bp = np.concatenate([(lam - v[on]) / z[on], (-lam - v[on]) / z[on]])
    grid = np.concatenate([[0.0], np.unique(bp[bp > 0.0])])
    grid = np.append(grid, grid[-1] + 1.0)  # the last piece extends to infinity
    m = np.array([margin(t) for t in grid])
    j = int(np.argmax(m >= 1.0)) if (m >= 1.0).any() else len(grid) - 1
    if m[j] < 1.0:  # beyond the last breakpoint: the margin is linear with this slope
        return grid[j - 1] + (1.0 - m[j - 1]) / (m[j] - m[j - 1])
    return grid[j - 1] + (1.0 - m[j - 1]) * (grid[j] - grid[j - 1]) / (m[j] - m[j - 1])


def l1_projection(v, z, beta):
    """``argmin 1/2 ||w - v||^2`` s.t. ``z . w >= 1``, ``||w||_1 <= beta``; returns (w, tau, lam).

    Requires ``beta ||z||_inf > 1`` (ValueError otherwise).
    """
    v, z = np.asarray(v, dtype=np.float64), np.asarray(z, dtype=np.float64)
    if beta * np.abs(z).max(initial=0.0) <= 1.0:
        raise ValueError("infeasible: beta ||z||_inf <= 1")

    def g(lam):
        tau = _l1_tau(v, z, lam)
        return np.abs(_soft(v + tau * z, lam)).sum() - beta, tau

    g0, tau = g(0.0)
    if g0 <= 0.0:
        return v + tau * z, tau, 0.0
    lo, hi = 0.0, 1.0
    while g(hi)[0] > 0.0:
        lo, hi = hi, 2.0 * hi
    for _ in range(3000):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if g(mid)[0] > 0.0:
            lo = mid
        else:
            hi = mid
    tau = g(hi)[1]
    return _soft(v + tau * z, hi), tau, hi


def _slsqp_l1(v, Z, beta):
    """SLSQP on the smooth reformulation w = p - q, p, q >= 0 (accurate to ~1e-8)."""
    from scipy.optimize import minimize   # kept inside this block of the file
    d = len(v)

    def fun(pq):
        r = pq[:d] - pq[d:] - v
        return 0.5 * r @ r, np.concatenate([r, -r])

    cons = [{"type": "ineq", "fun": (lambda pq, z=z: z @ (pq[:d] - pq[d:]) - 1.0),
             "jac": (lambda pq, z=z: np.concatenate([z, -z]))} for z in Z]
    cons.append({"type": "ineq", "fun": lambda pq: beta - pq.sum(),
                 "jac": lambda pq: -np.ones(2 * d)})
    x0 = np.concatenate([np.maximum(v, 0), np.maximum(-v, 0)])
    out = minimize(fun, x0, jac=True, method="SLSQP", constraints=cons,
                   bounds=[(0, None)] * (2 * d), options={"ftol": 1e-15, "maxiter": 3000})
    return out.x[:d] - out.x[d:]


def l1_projection_multi(v, Z, beta, tol=1e-12):
    """``argmin 1/2 ||w - v||^2`` s.t. ``Z w >= 1`` (every row), ``||w||_1 <= beta``.

    A generic solver (SLSQP) identifies the active set -- support and signs of w,
    active margins, whether the ball binds -- and the KKT system on that set,
    ``w_N = v_N + Z_JN' a - lam sign(w_N)``, ``Z_JN w_N = 1``, ``sign(w_N)' w_N = beta``,
    is solved exactly (least squares on the multipliers).  The result is verified
    (multipliers >= 0, |v_i + (Z'a)_i| <= lam off the support, signs, feasibility, to
    ``tol`` relative); AssertionError when the verification fails.  Returns w.
    """
    v, Z = np.asarray(v, dtype=np.float64), np.atleast_2d(np.asarray(Z, dtype=np.float64))
    scale = 1.0 + np.abs(v).max() + beta
    w0 = _slsqp_l1(v, Z, beta)
    N = np.abs(w0) > 1e-6 * scale
    sg = np.sign(w0[N])
    J = np.flatnonzero(Z @ w0 <= 1.0 + 1e-6 * scale)
    ball = np.abs(w0).sum() >= beta - 1e-6 * scale
    ZN = Z[np.ix_(J, N)]
    # unknowns (a_J, lam): w_N = v_N + ZN' a - lam sg
    cols = [ZN.T] + ([-sg[:, None]] if ball else [])
    B = np.hstack(cols) if cols else np.zeros((N.sum(), 0))
    rows = [ZN] + ([sg[None, :]] if ball else [])
    R = np.vstack(rows)
    rhs = np.concatenate([np.ones(len(J)) - ZN @ v[N]] + ([[beta - sg @ v[N]]] if ball else []))
    mult = np.linalg.lstsq(R @ B, rhs, rcond=None)[0] if len(rhs) else np.zeros(0)
    a, lam = mult[:len(J)], (mult[-1] if ball else 0.0)
    w = np.zeros_like(v)
    w[N] = v[N] + B @ mult
    u = v + Z[J].T @ a
    t = tol * scale
    assert np.all(a >= -t) and lam >= -t, "negative multiplier"
    assert np.all(np.sign(w[N]) == sg), "sign pattern changed"
    assert np.all(np.abs(u[~N]) <= lam + t), "stationarity off the support"
    assert np.all(Z @ w >= 1.0 - t) and np.abs(w).sum() <= beta + t, "infeasible"
    return w


def _round_sig(v, digits):
    """``v`` rounded to ``digits`` significant digits, relative to ``max(1, max|v|)``."""
    scale = max(1.0, float(np.abs(v).max(initial=0.0)))
    return np.round(v / scale, digits) * scale


def l1pa_topk_run(X, y, n_classes, beta, k, *, fit_intercept=True):
    """Online multi-class top-k L1-PA; one ``(mistake, W (K, D), scores)`` per round.

    The k highest-scoring competitors (ties -> smaller label; k capped at K - 1) give
    the constraints ``w . (f(x, y) - f(x, c_j)) >= 1``; an update (by
    :func:`l1_projection_multi`) when the closest competitor's loss is > 0 and
    ``x~ != 0``.  ``scores`` are the pre-update class scores.
    """
    Xa = _augment(X, fit_intercept)
    K, D = int(n_classes), Xa.shape[1]
    w = np.zeros(K * D)
    out = []
    for x, label in zip(Xa, np.asarray(y)):
        s = w.reshape(K, D) @ x
        # Classes whose blocks are equal in exact arithmetic (e.g. the competitors of the
        # first update, moved by equal multipliers) keep equal scores in the kernel, whose
        # per-competitor roots are bit-identical for identical blocks, but not here (the
        # generic solver's multipliers differ in the last bits): scores equal to 12
        # significant digits are ties, broken to the smaller label (the conventions above), for the
        # competitors and for the prediction.
        comp = competitors(_round_sig(s, 12), label)[:min(k, K - 1)]
        if 1.0 - (s[label] - s[comp[0]]) > 0.0 and np.any(x):
            Z = np.array([feature(x, label, K) - feature(x, c, K) for c in comp])
            w = l1_projection_multi(w, Z, beta)
        out.append((int(np.argmax(_round_sig(s, 12))) != label, w.reshape(K, D).copy(), s))
    return out


def l1pa_top1_run(X, y, n_classes, beta, *, fit_intercept=True, weights=None):
    """Online multi-class top-1 L1-PA; one ``(mistake, W (K, D), lam)`` per round.

    Round: class scores ``W x~``; mistake iff argmax (ties -> smallest label) != y; c = closest
    competitor (ties -> smaller label); if ``1 - (s_y - s_c) > 0`` and ``x~ != 0``, the stacked
    ``w`` (class-major, length K D) becomes ``l1_projection(w, f(x, y) - f(x, c), beta)``
    (``lam`` is 0 for rounds without an update).  ``weights``: importance weights s, the
    update then moves ``w`` the fraction ``min(s, 1)`` of the way (docs/algorithms.md).
    """
    Xa = _augment(X, fit_intercept)
    K, D = int(n_classes), Xa.shape[1]
    w = np.zeros(K * D)
    weights = np.ones(len(Xa)) if weights is None else np.asarray(weights, dtype=np.float64)
    out = []
    for x, label, wt in zip(Xa, np.asarray(y), weights):
        s = w.reshape(K, D) @ x
        c = competitors(s, label)[0]
        lam = 0.0
        if 1.0 - (s[label] - s[c]) > 0.0 and np.any(x) and wt > 0:
            w_new, _, lam = l1_projection(w, feature(x, label, K) - feature(x, c, K), beta)
            w = w + min(wt, 1.0) * (w_new - w)
        out.append((int(np.argmax(s)) != label, w.reshape(K, D).copy(), lam))
    return out
