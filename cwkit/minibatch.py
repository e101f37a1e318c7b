"""Mini-batch Passive-Aggressive, BPA-I, BPA-II and BPA-LS ([GPA13] Sect. 3.2).

`MiniBatchPA` runs the compiled driver `cwkit._core.bpa_pass` (multi-class:
`mc_bpa_pass`), which solves each group's dual with the Hildreth routine of
`_qp.pxi` (:func:`cwkit.qp.hildreth`).
"""
from typing import ClassVar

import numpy as np

from . import _params
from .base import OnlineClassifier, Registration
from .models.minibatch import BPA_VARIANTS, bpa_rho

__all__ = ["BPA_VARIANTS", "MiniBatchPA", "bpa_rho"]


class MiniBatchPA(OnlineClassifier):
    r"""Mini-batch Passive-Aggressive: BPA-I, BPA-II, BPA-LS ([GPA13] Sect. 3.2).

    Parameters
    ----------
    variant : {"bpa1", "bpa2", "bpa-ls"}, default="bpa1"
        Hinge slacks (box-constrained dual), squared slacks (nonnegative dual
        with ridge ρ), or equality constraints with squared slacks (closed form).
    C : float, 0 < C < inf, default=1.0
        Aggressiveness.
    batch_size : int >= 1, default=4
        Group size B ([GPA13] finds B = 4 to 8 best).
    rho : {"half", "inverse"}, default="half"
        Ridge of BPA-II / BPA-LS: ``1/(2C)`` (the squared-slack primal; B = 1
        gives PA-II / PA-LS) or ``1/C`` as printed in [GPA13] eqs. (17), (19).
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
    fit_intercept, intercept_scaling, n_passes, shuffle, random_state, average,
    class_weight
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
    (the intercept being an augmented feature of value 1, [GPA13]'s ``x·x + 1``,
    eq. 16), the update is ``w ← w + Σ_k τ_k y_k x_k`` (12)–(13) with τ the
    solution of BPA-I (14)–(15) ``max −½τᵀAτ + τᵀℓ̄, 0 ≤ τ ≤ C``, BPA-II
    (17)–(18) ``max −½τᵀ(A + ρI)τ + τᵀℓ̄, τ ≥ 0`` or BPA-LS (19)
    ``τ = (A + ρI)⁻¹ℓ̄`` ([GPA13] Sect. 3.2).  The duals are
    solved exactly by Hildreth's method with an active-set polish
    (:func:`cwkit.qp.hildreth`); rows with ``x = 0`` and no intercept get
    ``τ_k = 0``.  BPA-LS updates on every group, BPA-I/II only when some
    ``ℓ̄_k > 0``.  An importance weight ``s_k`` (``sample_weight`` times
    ``class_weight``; the kernel forms alike) scales row k's loss terms in
    the group's objective: the box becomes ``0 ≤ τ_k ≤ s_k C`` and the ridge
    ``ρ / s_k``, and ``s_k = 0`` fixes ``τ_k = 0`` (docs/algorithms.md,
    "Importance weights").

    The stream is the concatenation of all rows given to ``partial_fit`` (and
    of ``fit``'s passes): groups span calls, so ``partial_fit`` in pieces
    equals one pass.  Between calls, the rows of an incomplete group are kept
    (memory ``batch_size × n_features`` doubles) and the reported model
    includes them as a provisional shorter last group; when the group is
    completed, its one joint update from the pre-group model replaces the
    provisional one.  ``mistakes_`` counts every row predicted with the model
    from before its group's update; ``n_updates_`` counts joint updates that
    changed the model (provisional ones excluded).

    Multi-class top-1 / top-k (the 1-of-k reduction of [CS03] applied to the
    groups; competitors as in [AROW13] eqs. 31-32 and Sect. 3.3, the group dual
    of [GPA13] eqs. 10-19): at the group's update, every row ``i`` gets its ``k``
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
    >>> clf = cwkit.make("bpa1", batch_size=2).fit(X, [1, -1, 1, -1])
    >>> clf.predict(X).tolist()
    [1, -1, 1, -1]
    >>> X3 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]] * 3)
    >>> clf = cwkit.make("bpa2", batch_size=3, multiclass="topk", k=2)
    >>> clf.fit(X3, ["a", "b", "c"] * 3).predict(X3[:3]).tolist()
    ['a', 'b', 'c']
    """

    _constraints: ClassVar[dict] = {
        "variant": _params.Choice(*BPA_VARIANTS),
        "C": _params.Real(0.0, np.inf, open_lo=True, open_hi=True),
        "batch_size": _params.Int(1), "rho": _params.Choice("half", "inverse"),
        "window": _params.Choice("block", "sliding"),
        "slack": _params.Choice("per-constraint", "shared")}
    _names: ClassVar[dict] = {
        "bpa1": Registration({"variant": "bpa1"},
                             "mini-batch PA-I, box-constrained dual ([GPA13] Sect. 3.2)",
                             ("C", "batch_size", "window")),
        "bpa2": Registration({"variant": "bpa2"}, "mini-batch PA-II, nonnegative dual with "
                             "ridge rho ([GPA13] Sect. 3.2)",
                             ("C", "batch_size", "rho", "window", "slack")),
        "bpa-ls": Registration({"variant": "bpa-ls"},
                               "mini-batch PA least squares, closed form ([GPA13] Sect. 3.2)",
                               ("C", "batch_size", "rho", "window", "slack")),
    }

    def __init__(self, variant="bpa1", C=1.0, batch_size=4, rho="half", window="block",
                 slack="per-constraint", *, fit_intercept=True,
                 intercept_scaling="auto", n_passes=1, shuffle=False, random_state=None,
                 multiclass="top1", k=1, average="auto", class_weight=None):
        self.variant = variant
        self.C = C
        self.batch_size = batch_size
        self.rho = rho
        self.window = window
        self.slack = slack
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.n_passes = n_passes
        self.shuffle = shuffle
        self.random_state = random_state
        self.multiclass = multiclass
        self.k = k
        self.average = average
        self.class_weight = class_weight

    def _model_options(self):
        return {"shape": "minibatch", "bpa_variant": self.variant, "C": float(self.C),
                "rho": bpa_rho(self.C, self.rho), "batch_size": int(self.batch_size),
                "sliding": self.window == "sliding", "slack": self.slack}

    def _validate_params(self):
        super()._validate_params()
        if self.slack == "shared" and self.variant == "bpa1":
            raise ValueError(f"{type(self).__name__}: slack='shared' is a squared-slack "
                             "structure (BPA-II, BPA-LS); use variant='bpa2' or 'bpa-ls', or "
                             "slack='per-constraint'")

    def _poor_score(self):
        # BPA-LS imposes margin exactly 1 on every row of each group (tau may be
        # negative): its last iterate is as noisy as PA-LS's, more so for B > 1.
        return self.variant == "bpa-ls"
