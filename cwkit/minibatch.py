"""Mini-batch Passive-Aggressive, BPA-I, BPA-II and BPA-LS (S002 Sect. 3.2).

`bpa_step` is the reference form of one update (numpy, scipy's pinvh);
`MiniBatchPA` runs the compiled driver `cwkit._core.bpa_pass`, which solves
the same duals with the nogil Hildreth routine of `_qp.pxi`.
"""
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from . import _core
from . import _params as P
from ._engines import Engine, ModelError
from ._rowdata import as_rows
from ._ovr import make_model
from .multiclass import mc_row_scores
from .base import OnlineClassifier
from .qp import hildreth

__all__ = ["BPA_VARIANTS", "MiniBatchPA", "bpa_rho", "bpa_step", "bpa_tau"]

BPA_VARIANTS = ("bpa1", "bpa2", "bpa-ls")
_RHO = {"half": 0.5, "inverse": 1.0}


def bpa_rho(C, rho="half"):
    """Ridge ρ of BPA-II / BPA-LS: ``1/(2C)`` (``"half"``) or ``1/C`` (``"inverse"``)."""
    if not (np.isfinite(C) and C > 0):
        raise ValueError(f"C must be a finite number > 0, got {C!r}")
    if rho not in _RHO:
        raise ValueError(f"rho must be 'half' (1/(2C)) or 'inverse' (1/C), got {rho!r}")
    return _RHO[rho] / C


def bpa_tau(A, ell, *, variant, C, rho="half"):
    """Step sizes τ of one mini-batch PA update from its dual data.

    Parameters
    ----------
    A : ndarray of shape (B, B)
        ``A_jk = y_j y_k (x_j·x_k + 1)`` (``+ 1`` only with an intercept).
    ell : ndarray of shape (B,)
        ``ℓ̄_k = 1 − y_k f_k`` with the pre-update scores (not clipped at 0).
    variant : {"bpa1", "bpa2", "bpa-ls"}
    C : float
        Aggressiveness, ``C > 0``.
    rho : {"half", "inverse"}, default "half"
        Ridge of BPA-II / BPA-LS, see :func:`bpa_step`.

    Returns
    -------
    tau : ndarray of shape (B,)
        ``tau_k = 0`` where ``A_kk = 0`` (an example that cannot move the model).
    """
    if variant not in BPA_VARIANTS:
        raise ValueError(f"variant must be one of {BPA_VARIANTS}, got {variant!r}")
    r = bpa_rho(C, rho)
    tau = np.zeros(len(ell))
    # A_kk = 0 means a zero row of A (A is PSD): the example cannot move the
    # model, and tau_k = 0 as in PA's convention for x = 0.
    keep = np.flatnonzero(np.diag(A) > 0)
    A, ell = A[np.ix_(keep, keep)], ell[keep]
    if variant == "bpa-ls":
        from scipy.linalg import pinvh   # here, not at import: scipy.linalg is slow to load
        tau[keep] = pinvh(A + r * np.eye(len(keep))) @ ell
    elif (ell > 0).any():  # otherwise tau = 0 meets the KKT conditions (A 0 - ell >= 0)
        if variant == "bpa1":
            res = hildreth(A, ell, 0.0, C)
        else:
            res = hildreth(A + r * np.eye(len(keep)), ell, 0.0, np.inf)
        if not res.converged:
            raise RuntimeError(f"{variant}: Hildreth's method did not converge "
                               f"(KKT residual {res.kkt:.3g} after {res.n_iter} sweeps)")
        tau[keep] = res.a
    return tau


def bpa_step(X, y, w, intercept=0.0, *, variant="bpa1", C=1.0, rho="half"):
    """One mini-batch Passive-Aggressive update on a group of B examples.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (B, d)
        The group's examples.
    y : array_like of shape (B,)
        Labels in {-1, +1}.
    w : ndarray of shape (d,)
        Weights before the update (not modified).
    intercept : float or None, default 0.0
        Intercept before the update (score ``w·x + intercept``); ``None`` means
        no intercept (the ``+ 1`` in ``A`` and the intercept update are dropped).
    variant : {"bpa1", "bpa2", "bpa-ls"}, default "bpa1"
        BPA-I (hinge slacks), BPA-II (squared slacks) or BPA-LS (equality
        constraints with squared slacks).
    C : float, default 1.0
        Aggressiveness, ``0 < C < inf``.
    rho : {"half", "inverse"}, default "half"
        Ridge of BPA-II / BPA-LS: ``1/(2C)`` (primal penalty ``C Σ ξ_k²``) or
        ``1/C`` as printed in S002 eqs. (17), (19) (penalty ``(C/2) Σ ξ_k²``).

    Returns
    -------
    w : ndarray of shape (d,)
        Updated weights.
    intercept : float or None
        Updated intercept (``None`` if given ``None``).
    tau : ndarray of shape (B,)
        Step sizes; when ``A`` is singular they are one optimal choice, the
        updated ``(w, intercept)`` is unique.

    Notes
    -----
    S002 Sect. 3.2, eqs. (10)–(19); FORMULAS.md §1 "BPA".  With scores
    ``f_k = w·x_k + c`` (cwkit's intercept ``c`` is the augmented constant
    feature +1, i.e. ``c = −b`` of S002), ``ℓ̄_k = 1 − y_k f_k`` and
    ``A_jk = y_j y_k (x_j·x_k + 1)`` (16), the update (12)–(13) is

    .. math:: w \\leftarrow w + \\sum_k \\tau_k y_k x_k, \\qquad
              c \\leftarrow c + \\sum_k \\tau_k y_k

    with τ the solution of

    * BPA-I (14)–(15): ``max −½τᵀAτ + τᵀℓ̄`` s.t. ``0 ≤ τ_k ≤ C``, the dual of
      ``min ½‖w−w_t‖² + ½(c−c_t)² + C Σ ξ_k`` s.t. ``y_k f_k ≥ 1 − ξ_k, ξ_k ≥ 0``;
    * BPA-II (17)–(18): ``max −½τᵀ(A + ρI)τ + τᵀℓ̄`` s.t. ``τ_k ≥ 0``;
    * BPA-LS (19): ``τ = (A + ρI)⁺ ℓ̄`` (Moore–Penrose pseudo-inverse).

    BPA-I and BPA-II are solved exactly by :func:`cwkit.qp.hildreth`. The
    default ``ρ = 1/(2C)`` is what the squared-slack primal gives and makes
    ``B = 1`` coincide with PA-II (6) and PA-LS (9); S002 prints ``1/C``.

    Examples
    --------
    >>> import numpy as np
    >>> from cwkit.minibatch import bpa_step
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> w, c, tau = bpa_step(X, [1, -1], np.zeros(2), None, variant="bpa1", C=0.5)
    >>> w.tolist(), c, tau.tolist()
    ([0.5, -0.5], None, [0.5, 0.5])
    >>> w, c, tau = bpa_step(X, [1, -1], np.zeros(2), 0.0, variant="bpa-ls", C=1.0)
    >>> w.round(12).tolist(), abs(round(c, 12)), tau.round(12).tolist()
    ([0.666666666667, -0.666666666667], 0.0, [0.666666666667, 0.666666666667])
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
    else:
        X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (B, d), got {X.ndim} dimension(s)")
    w = np.asarray(w, dtype=np.float64)
    if w.shape != (X.shape[1],):
        raise ValueError(f"w must have shape ({X.shape[1]},) to match X, got {w.shape}")
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (X.shape[0],) or not np.isin(y, (-1.0, 1.0)).all():
        raise ValueError(f"y must hold {X.shape[0]} labels in {{-1, +1}}")
    K = X @ X.T
    K = K.toarray() if sp.issparse(K) else np.asarray(K)
    f = X @ w
    if intercept is not None:
        K = K + 1.0
        f = f + float(intercept)
    A = np.outer(y, y) * K
    tau = bpa_tau(A, 1.0 - y * f, variant=variant, C=C, rho=rho)
    ty = tau * y
    w_new = w + X.T @ ty
    if intercept is not None:
        intercept = float(intercept + ty.sum())
    return w_new, intercept, tau


_NO_SCORES = np.empty(0)


class _BPAEngine(Engine):
    """State of mini-batch PA: the model and the rows carried to the next call.

    ``w0`` is the model after the last joint update; ``w`` (reported) is ``w0``
    updated provisionally with the pending rows of an incomplete group (block
    mode; equal to ``w0`` in sliding mode).  ``pend``/``pend_y`` hold the rows
    carried over (block: the incomplete group; sliding: the last B - 1 rows),
    ``aux[0]`` their number.
    """

    def initial_state(self, D):
        B = self.hyper["B"]
        return {"w": np.zeros(D), "w0": np.zeros(D), "pend": np.zeros((B, D - 1)),
                "pend_y": np.zeros(B), "aux": np.zeros(1)}

    def _pass(self, rows, y, order, n_seen, bias, w, flush, scores_out=_NO_SCORES):
        h = self.hyper
        return _core.bpa_pass(*rows.args, y, order, n_seen, bias, w, h["variant"],
                              h["sliding"], h["B"], h["C"], h["rho"], flush, scores_out)

    def run(self, rows, y, order, bias, scores_out=None):
        """One pass; `scores_out` (optional, length len(order)) gets the prediction scores."""
        st = self.state
        n_pend = int(st["aux"][0])
        if n_pend:  # the stream goes on: prepend the rows carried over
            X = sp.vstack([sp.csr_matrix(st["pend"][:n_pend]), sp.csr_matrix(rows.X)],
                          format="csr")
            rows = as_rows(X)
            y = np.concatenate([st["pend_y"][:n_pend], y])
            order = np.concatenate([np.arange(n_pend), np.asarray(order) + n_pend])
        rounds, mistakes, updates, loss_sum, status, pos, n_left = self._pass(
            rows, y, order, n_pend, bias, st["w0"], False,
            _NO_SCORES if scores_out is None else scores_out)
        tail = order[len(order) - n_left:]
        if not status:
            Xt = rows.X[tail]
            st["pend"][:n_left] = Xt.toarray() if sp.issparse(Xt) else Xt
            st["pend_y"][:n_left] = y[tail]
            st["aux"][0] = n_left
            st["w"][:] = st["w0"]
            if n_left and not self.hyper["sliding"]:
                # the incomplete group, applied provisionally as the stream's last group
                status, pos = self._pass(as_rows(st["pend"][:n_left]), st["pend_y"][:n_left],
                                         np.arange(n_left), n_left, bias, st["w"], True)[4:6]
                pos = tail[pos] if status else pos
        pos = max(int(pos) - n_pend, 0)  # a row of this call
        if status == _core.Status.QP_NOT_CONVERGED:
            raise ModelError(
                f"{self.hyper['name']}: row {pos}: the dual of the group ending at this row "
                "was not solved to its KKT tolerance: it is numerically singular, the ridge "
                f"rho = {self.hyper['rho']:.3g} being below the rounding level of the "
                "products x_j.x_k; scale the features (or use a smaller C)")
        return rounds, mistakes, updates, loss_sum, status, pos

    def weights(self):
        return self.state["w"]


class MulticlassBPA(_BPAEngine):
    """Multi-class mini-batch PA on the 1-of-k feature map, `kk` competitors per row.

    The state of :class:`_BPAEngine` with (D, K) weights (class c's block is
    column c, the intercept the last row), run by ``cwkit._core.mc_bpa_pass``;
    ``pend_y`` holds the class codes of the rows carried over.  The interface
    of a multi-class model (``cwkit.multiclass``): ``weights`` is (K, D) and
    ``scores`` (n, K).
    """

    def __init__(self, hyper, n_classes, n_features, kk, shared):
        self.K = n_classes
        self.kk = kk
        self.shared = shared
        super().__init__(None, hyper, n_features)

    def initial_state(self, D):
        B, K = self.hyper["B"], self.K
        return {"w": np.zeros((D, K)), "w0": np.zeros((D, K)), "pend": np.zeros((B, D - 1)),
                "pend_y": np.zeros(B), "aux": np.zeros(1)}

    def _pass(self, rows, y, order, n_seen, bias, w, flush, scores_out=_NO_SCORES):
        # the class scores of a row are not reported: mistakes are counted in the driver
        h = self.hyper
        return _core.mc_bpa_pass(*rows.args, np.ascontiguousarray(y, dtype=np.intp),
                                 np.ascontiguousarray(order, dtype=np.intp), n_seen, bias, w,
                                 h["variant"], h["sliding"], h["B"], self.kk, h["C"], h["rho"],
                                 self.shared, flush)

    def weights(self):
        return self.state["w"].T

    def scores(self, rows, bias):
        return mc_row_scores(rows, self.state["w"], bias)[0]


def multiclass_bpa(name, variant, C, rho, batch_size, sliding, n_classes, n_features, kk,
                   shared):
    """The :class:`MulticlassBPA` model of a rule (``variant`` one of BPA_VARIANTS)."""
    hyper = {"variant": BPA_VARIANTS.index(variant), "C": float(C), "rho": bpa_rho(C, rho),
             "B": int(batch_size), "sliding": sliding, "name": name}
    return MulticlassBPA(hyper, n_classes, n_features, kk, shared)


class MiniBatchPA(OnlineClassifier):
    r"""Mini-batch Passive-Aggressive: BPA-I, BPA-II, BPA-LS (S002 Sect. 3.2).

    Parameters
    ----------
    variant : {"bpa1", "bpa2", "bpa-ls"}, default="bpa1"
        Hinge slacks (box-constrained dual), squared slacks (nonnegative dual
        with ridge ρ), or equality constraints with squared slacks (closed form).
    C : float, 0 < C < inf, default=1.0
        Aggressiveness.
    batch_size : int >= 1, default=4
        Group size B (S002 finds B = 4 to 8 best).
    rho : {"half", "inverse"}, default="half"
        Ridge of BPA-II / BPA-LS: ``1/(2C)`` (the squared-slack primal; B = 1
        gives PA-II / PA-LS) or ``1/C`` as printed in S002 eqs. (17), (19).
    window : {"block", "sliding"}, default="block"
        "block": consecutive disjoint groups of B rows; every row of a group is
        predicted with the model from before the group, then one joint update.
        "sliding": predict row t, then update with the rows t-B+1..t.
    slack : {"per-constraint", "shared"}, default="per-constraint"
        Squared slacks of BPA-II / BPA-LS with more than two classes
        (``multiclass="top1"`` / ``"topk"``): one per constraint (ridge ρI) or
        one per row, shared by that row's constraints (the squared multi-class
        hinge).  "shared" is refused for "bpa1"; with one constraint per row
        (top-1, two classes) both are the same rule.
    fit_intercept, n_passes, shuffle, random_state
        As in :class:`cwkit.Perceptron`.
    multiclass : {"top1", "topk", "ovr"}, default="top1"
        More than two classes: the 1-of-k feature map with the closest
        competitor of every row ("top1") or the ``k`` highest-scoring ones
        ("topk", k-best MIRA), one joint update per group; or one-vs-rest
        ("ovr"), K independent binary models, each row predicted by the argmax
        of the K pre-update scores.
    k : int >= 1, default=1
        Competitors per row for ``multiclass="topk"``; ``k >= K - 1`` means all.

    Notes
    -----
    With ``f_k = w·x_k``, ``ℓ̄_k = 1 − y_k f_k`` and ``A_jk = y_j y_k x_j·x_k``
    (the intercept being an augmented feature of value 1, S002's ``x·x + 1``,
    eq. 16), the update is ``w ← w + Σ_k τ_k y_k x_k`` (12)–(13) with τ the
    solution of BPA-I (14)–(15) ``max −½τᵀAτ + τᵀℓ̄, 0 ≤ τ ≤ C``, BPA-II
    (17)–(18) ``max −½τᵀ(A + ρI)τ + τᵀℓ̄, τ ≥ 0`` or BPA-LS (19)
    ``τ = (A + ρI)⁻¹ℓ̄``, see :func:`bpa_step` and FORMULAS.md §1.  The duals are
    solved exactly by Hildreth's method with an active-set polish
    (:func:`cwkit.qp.hildreth`); rows with ``x = 0`` and no intercept get
    ``τ_k = 0``.  BPA-LS updates on every group, BPA-I/II only when some
    ``ℓ̄_k > 0``.

    The stream is the concatenation of all rows given to ``partial_fit`` (and
    of ``fit``'s passes): groups span calls, so ``partial_fit`` in pieces
    equals one pass.  Between calls, the rows of an incomplete group are kept
    (memory ``batch_size × n_features`` doubles) and the reported model
    includes them as a provisional shorter last group; when the group is
    completed, its one joint update from the pre-group model replaces the
    provisional one.  ``mistakes_`` counts every row predicted with the model
    from before its group's update; ``n_updates_`` counts joint updates that
    changed the model (provisional ones excluded).

    Multi-class top-1 / top-k (FORMULAS.md Sect. 4 applied to the groups of
    Sect. 1; competitors as in S000 eqs. 31-32 and Sect. 3.3, the group dual
    of S002 eqs. 10-19): at the group's update, every row ``i`` gets its ``k``
    competitors ``c_ij`` (labels ≠ ``y_i`` by decreasing current score, ties to
    the smaller label; ``k = 1`` for top-1) and constraints ``W·Δ_ij ≥ 1 − ξ``
    with ``Δ_ij = f(x_i, y_i) − f(x_i, c_ij)`` (1-of-k map ``f(x, y) = e_y ⊗ x``),
    losses ``ℓ_ij = 1 − W·Δ_ij`` and Gram matrix

    .. math:: G_{ij,i'j'} = \Delta_{ij}\cdot\Delta_{i'j'} = x_i\cdot x_{i'}\,
              ([y_i = y_{i'}] - [y_i = c_{i'j'}] - [c_{ij} = y_{i'}]
              + [c_{ij} = c_{i'j'}]).

    τ solves BPA-I ``max ℓᵀτ − ½τᵀGτ, 0 ≤ τ ≤ C`` (one hinge slack per
    constraint), BPA-II the same with ``Q = G + ρI``, ``τ ≥ 0`` (one squared
    slack per constraint; ``slack="shared"``: ``Q = G + ρE``, ``E`` = 1 on the
    block of each row's own constraints, one squared slack per row) or BPA-LS
    ``τ = Q⁺ℓ`` (equality constraints ``W·Δ_ij = 1 − ξ``); then
    ``W ← W + Σ τ_ij Δ_ij``.  ``B = 1`` gives PA-I / PA-II top-k (k-best MIRA)
    and PA-LS top-k, and ``k = 1`` their top-1 reductions.  Progressive mistakes
    are argmax errors (ties to the first class) of the model each row was
    predicted with.

    Examples
    --------
    >>> import numpy as np, cwkit
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.2], [0.1, 1.0]])
    >>> clf = cwkit.make("bpa1", batch_size=2, shuffle=False).fit(X, [1, -1, 1, -1])
    >>> clf.predict(X).tolist()
    [1, -1, 1, -1]
    >>> X3 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]] * 3)
    >>> clf = cwkit.make("bpa2", batch_size=3, multiclass="topk", k=2, shuffle=False)
    >>> clf.fit(X3, ["a", "b", "c"] * 3).predict(X3[:3]).tolist()
    ['a', 'b', 'c']
    """

    _constraints: ClassVar[dict] = {
        "variant": P.Choice(*BPA_VARIANTS),
        "C": P.Real(0.0, np.inf, open_lo=True, open_hi=True),
        "batch_size": P.Int(1), "rho": P.Choice("half", "inverse"),
        "window": P.Choice("block", "sliding"),
        "slack": P.Choice("per-constraint", "shared")}

    def __init__(self, variant="bpa1", C=1.0, batch_size=4, rho="half", window="block",
                 slack="per-constraint", *, fit_intercept=True, n_passes=1, shuffle=True,
                 random_state=None, multiclass="top1", k=1):
        self.variant = variant
        self.C = C
        self.batch_size = batch_size
        self.rho = rho
        self.window = window
        self.slack = slack
        self.fit_intercept = fit_intercept
        self.n_passes = n_passes
        self.shuffle = shuffle
        self.random_state = random_state
        self.multiclass = multiclass
        self.k = k

    def _engine(self):
        hyper = {"variant": BPA_VARIANTS.index(self.variant), "C": float(self.C),
                 "rho": bpa_rho(self.C, self.rho), "B": int(self.batch_size),
                 "sliding": self.window == "sliding", "name": self._name()}
        return _BPAEngine, None, hyper

    def _validate_params(self):
        super()._validate_params()
        if self.slack == "shared" and self.variant == "bpa1":
            raise ValueError(f"{type(self).__name__}: slack='shared' is a squared-slack "
                             "structure (BPA-II, BPA-LS); use variant='bpa2' or 'bpa-ls', or "
                             "slack='per-constraint'")

    def _make_model(self, n_classes, n_features):
        engine, _, hyper = self._engine()
        if n_classes == 2 or self.multiclass == "ovr":
            return make_model(engine, hyper, n_classes, n_features)
        kk = 1 if self.multiclass == "top1" else min(int(self.k), n_classes - 1)
        return multiclass_bpa(self._name(), self.variant, self.C, self.rho, self.batch_size,
                              self.window == "sliding", n_classes, n_features, kk,
                              self.slack == "shared")

    def _poor_score(self):
        # BPA-LS imposes margin exactly 1 on every row of each group (tau may be
        # negative): its last iterate is as noisy as PA-LS's, more so for B > 1.
        return self.variant == "bpa-ls"
