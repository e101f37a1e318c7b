"""The binary update rules as estimator families, with the papers' hyper-parameters.

Each family maps its parameters to a rule of the compiled core
(``cwkit._core.Rule``) and the shape of its model's state (``cwkit.models``).
The update formulas are in each class's Notes, with their sources
(docs/references.md).
"""
import numpy as np

from . import _core, _params
from ._lazy import special
from .base import (AUTO_ROWS, GaussianMixin, OnlineClassifier, Registration, VarianceMixin,
                   dense_rows, serialised)
from .features import Vocabulary
from .models.scoring import row_scores


class Perceptron(OnlineClassifier):
    """Perceptron [Ros58] and the averaged perceptron [FS99].

    Parameters
    ----------
    average : bool or "auto", default=False
        Report (and predict with) the mean of the weights after rounds 1..T, T
        every row seen so far (every pass of ``fit``, every ``partial_fit``
        row); online mistakes are those of the plain w.  Every estimator takes
        it (docs/algorithms.md, "Averaging").  The other linear rules default to
        "auto": averaged for every rule but AROW, AROW-H and NHERD, whose shrinking
        covariance already damps the last iterate (docs/choosing.md, "Averaged or
        last iterate"); the Perceptron's default stays the plain rule, since the
        name "perceptron" means it and "avg-perceptron" fixes ``average=True``
        ("auto" given here averages).
    fit_intercept : bool, default=True
        Learn an intercept as an augmented constant feature of value b
        (``intercept_scaling``); ``intercept_`` is b times its weight.
    intercept_scaling : "auto" or float > 0, default="auto"
        The value b of the constant feature.  The intercept moves b^2 times as far
        as the weight of a unit feature in an update, and every rule's norms and
        inner products include b.  "auto": 1 if the first rows are dense; if they are
        sparse (:func:`cwkit.base.auto_intercept_scaling`), 0.1 for the PA family,
        mini-batch PA and the second-order rules (as scikit-learn's SGD damps the
        intercept's updates on sparse input by 0.01 = 0.1^2) and 1 for the
        Perceptron, AdaGrad and L1-PA (measured in docs/choosing.md).  Settled at the
        first ``fit`` / ``partial_fit`` and kept as ``intercept_scaling_``.
    n_passes : int, default=1
        Passes over the data made by ``fit``.
    shuffle : bool, default=False
        Shuffle the rows before each pass of ``fit`` (``partial_fit`` never does).
        By default ``fit`` keeps the given order, so two ``fit`` calls on the same
        data give identical models (and one pass equals ``partial_fit``).
    random_state : int >= 0, numpy.random.Generator or None, default=None
        Seed of the shuffling (used only with ``shuffle=True``).  ``shuffle=True``
        with ``random_state=None`` draws a new order on every ``fit``: not
        reproducible; give a seed, e.g. ``shuffle=True, random_state=0``.
    multiclass : {"top1", "topk", "ovr"}, default="top1"
        Reduction used when there are more than two classes (``cwkit.models``):
        the binary rule on f(x, y) - f(x, c) against the closest competitor c
        (1-of-k feature function, one weight block per class), the k-best
        update (PA family, mini-batch PA and AROW only), or one-vs-rest (K binary
        problems).
        Predictions are the argmax of the class scores, ties to the first of
        ``classes_``.
    k : int >= 1, default=1
        Competitors per update for ``multiclass="topk"``; k >= K - 1 means all
        constraints.
    class_weight : None, "balanced" or dict, default=None
        An importance weight per class, multiplying ``sample_weight`` (a row of
        weight s learns as docs/algorithms.md, "Importance weights", defines it
        for each rule).  A dict maps labels to weights >= 0 (1 for a label it
        omits); "balanced" gives class c the weight n / (K n_c), n_c its rows
        among the n rows seen: those of ``fit``, or of every ``partial_fit`` call
        so far including the current one (its counts, ``class_counts_``, are
        kept with the model).

    Notes
    -----
    If y w.x <= 0: w <- w + y x ([Ros58]; [AROW13] Sect. 1).  The average ([FS99])
    is w_bar_T = (1/T) sum_{t=1..T} w_t, w_t the weights after round t, kept in
    O(nnz) per update by the lazy sum sum_t w_t = (T + 1) w_T - sum_t t Delta_t
    (Delta_t = w_t - w_{t-1}); with ``average=True`` every rule reports its own
    mean this way (for the rules that shrink w = s v, [LMC09], the sum is kept on
    v with the sum of the scales; see ``cwkit/_binary.pxi``, ``first_order_pass``).

    Multi-class ([CS03]; [AROW13] Sect. 3.3): on an argmax mistake y_hat != y (ties to the
    first class), W <- W + f(x, y) - f(x, y_hat); one-vs-rest runs K binary
    perceptrons.  Every binary rule's top-1 form is its step on
    Delta = f(x, y) - f(x, c) with label +1, c the closest competitor, so
    m = w_y.x - w_c.x and ||Delta||^2 = 2 ||x||^2 (the intercept included).

    Examples
    --------
    >>> import numpy as np, cwkit
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.2], [0.1, 1.0]])
    >>> clf = cwkit.Perceptron().fit(X, [1, -1, 1, -1])
    >>> clf.predict(X).tolist()
    [1, -1, 1, -1]
    """

    _constraints = {}
    _sparse_intercept_scaling = 1.0      # 0.1 was worse with label noise (docs/choosing.md)
    _names = {
        "perceptron": Registration({"average": False}, "Perceptron [Ros58]"),
        "avg-perceptron": Registration({"average": True}, "averaged Perceptron [FS99]"),
    }

    def __init__(self, average=False, *, fit_intercept=True,
                 intercept_scaling="auto", n_passes=1, shuffle=False, random_state=None,
                 multiclass="top1", k=1, class_weight=None):
        self.average = average
        self.class_weight = class_weight
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.n_passes = n_passes
        self.shuffle = shuffle
        self.random_state = random_state
        self.multiclass = multiclass
        self.k = k

    def _rule(self):
        """The compiled rule of these parameters (also the kernel form's)."""
        return _core.Rule.AVG_PERCEPTRON if self._averaging() else _core.Rule.PERCEPTRON

    def _model_options(self):
        return {"shape": "first_order", "rule": self._rule()}


class PassiveAggressive(OnlineClassifier):
    """Passive-Aggressive classifiers: PA, PA-I, PA-II [PA06] and PA-LS ([GPA13]).

    Parameters
    ----------
    variant : {"pa", "pa1", "pa2", "pa-ls"}, default="pa1"
    C : float > 0, default=1.0
        Aggressiveness (PA-I, PA-II, PA-LS).
    slack : {"per-constraint", "shared"}, default="per-constraint"
        Squared slacks of PA-II and PA-LS with ``multiclass="topk"``: one per
        constraint (dual Q = G + I/(2C)) or one shared by all constraints
        (Q = G + 11^T/(2C), the squared multi-class hinge).  "shared" is valid
        for variant="pa2" and "pa-ls" only; with one constraint (top1, two
        classes) both are the same rule.
    fit_intercept, intercept_scaling, n_passes, shuffle, random_state, multiclass, k,
    average, class_weight
        As in :class:`Perceptron`; ``multiclass="topk"`` is available for every
        variant.

    Notes
    -----
    With loss l = max(0, 1 - y w.x) and n = ||x||^2 (the intercept feature
    included): PA tau = l / n; PA-I tau = min(C, l / n); PA-II
    tau = l / (n + 1/(2C)) ([PA06] Fig. 1; [AROW09]); w <- w + tau y x.  With an
    intercept these are [GPA13]'s PA with bias, eqs. (3)-(6), denominators 1 + ||x||^2.
    PA-LS ([GPA13] eqs. 7-9) applies tau = (1 - y w.x) / (n + 1/(2C)) on every
    round (tau may be negative).  A zero row makes no update.

    Multi-class top-k (k-best MIRA, [CS03], [PA06] Sect. 7): with Delta_j = f(x, y) -
    f(x, c_j) for the k highest-scoring competitors c_j and l_j = 1 - w.Delta_j,
    maximise l^T a - a^T Q a / 2 with Q = G (PA, a >= 0), G with 0 <= a <= C
    (PA-I, one slack per constraint), G + I/(2C) or G + 11^T/(2C) (PA-II,
    ``slack``), G_jl = Delta_j.Delta_l, a >= 0; then w <- w + sum_j a_j Delta_j.
    PA-LS top-k (equality constraints W.Delta_j = 1 - xi, the top-k analogue of
    [GPA13] eqs. 7-9, updating on every round): a = (G + I/(2C))^+ l (or with
    11^T/(2C)), a unbounded; it is mini-batch PA-LS with groups of one row
    (:class:`cwkit.MiniBatchPA`, [GPA13] eq. 19), and k = 1 is PA-LS top1.
    """

    _constraints = {"variant": _params.Choice("pa", "pa1", "pa2", "pa-ls"),
                    "C": _params.POSITIVE, "slack": _params.Choice("per-constraint", "shared")}
    _names = {
        "pa": Registration({"variant": "pa"}, "Passive-Aggressive, hard margin [PA06]"),
        "pa1": Registration({"variant": "pa1"}, "PA-I, hinge slack [PA06]; [GPA13] with bias",
                            ("C",)),
        "pa2": Registration({"variant": "pa2"},
                            "PA-II, squared slack [PA06]; [GPA13] with bias", ("C", "slack")),
        "pa-ls": Registration({"variant": "pa-ls"},
                              "PA least squares, updates every round ([GPA13] eqs 7-9)",
                              ("C", "slack")),
    }
    _rules = {"pa": _core.Rule.PA, "pa1": _core.Rule.PA1, "pa2": _core.Rule.PA2,
              "pa-ls": _core.Rule.PA_LS}

    def __init__(self, variant="pa1", C=1.0, slack="per-constraint", *, fit_intercept=True,
                 intercept_scaling="auto", n_passes=1, shuffle=False, random_state=None,
                 multiclass="top1", k=1, average="auto", class_weight=None):
        self.variant = variant
        self.C = C
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

    def _rule(self):
        """The compiled rule of these parameters (also the kernel form's)."""
        return PassiveAggressive._rules[self.variant]

    def _model_options(self):
        return {"shape": "first_order", "rule": self._rule(), "C": float(self.C),
                "slack": self.slack}

    def _poor_score(self):
        # PA-LS regresses onto every label (tau may be negative), so one pass over
        # scikit-learn's toy blobs ends near 0.8 accuracy, below its 0.83 bar.
        return self.variant == "pa-ls"


class RegularizedPA(OnlineClassifier):
    """The regularized PA family of [LMC09].

    Parameters
    ----------
    variant : {"reg", "l2", "soft"}, default="reg"
        Objective-regularized (Lemma 3.1), L2-norm-constrained (Lemma 3.2) or
        soft-margin objective-regularized (Lemma 5.1).
    alpha : float > 0, default=0.001
        Regularization of "reg" and "soft".
    beta : float > 0, default=100.0
        Norm bound of "l2": ||w|| <= beta; needs beta^2 ||x||^2 > 1 on every update.
    C : float > 0, default=1.0
        Slack penalty of "soft".
    prune_sigma : float >= 0, default=0.0
        Prediction with small weights removed ([LMC09] Sect. 3.4): sort |w_i|
        ascending and zero the longest prefix whose cumulative sum is < prune_sigma
        (features only, not the intercept).  Online updates use the full w.
    prune_mode : {"squared", "absolute"}, default="squared"
        Sum w_i^2 (Sect. 3.4, Thms 3.3-3.4) or |w_i| (Sect. 4.3).
    fit_intercept, intercept_scaling, n_passes, shuffle, random_state, multiclass, k,
    average, class_weight
        As in :class:`Perceptron`.

    Notes
    -----
    Updates when l = max(0, 1 - y w.x) > 0, with n = ||x||^2:
    reg: tau = (l + alpha) / n, w <- (w + tau y x) / (1 + alpha);
    l2: Z = max(1, sqrt((||w||^2 n - (w.x)^2) / (beta^2 n - 1))),
    tau = (l + Z - 1) / n, w <- (w + tau y x) / Z;
    soft: tau = (1 - y w.x + alpha) / (n + (1 + alpha)/(2C)), w <- (w + tau y x)/(1 + alpha).
    The shrinking is O(1): w is stored as s * v and only s is divided.
    """

    _constraints = {"variant": _params.Choice("reg", "l2", "soft"), "alpha": _params.POSITIVE,
                    "beta": _params.POSITIVE, "C": _params.POSITIVE,
                    "prune_sigma": _params.NONNEGATIVE,
                    "prune_mode": _params.Choice("squared", "absolute")}
    _names = {
        "reg-pa": Registration({"variant": "reg"}, "objective-regularized PA ([LMC09] Lemma 3.1)",
                               ("alpha", "prune_sigma", "prune_mode")),
        "l2-pa": Registration({"variant": "l2"}, "L2-norm-constrained PA ([LMC09] Lemma 3.2)",
                              ("beta", "prune_sigma", "prune_mode")),
        "soft-reg-pa": Registration({"variant": "soft"},
                                    "soft-margin objective-regularized PA ([LMC09] Lemma 5.1)",
                                    ("C", "alpha", "prune_sigma", "prune_mode")),
    }
    _rules = {"reg": _core.Rule.REG_PA, "l2": _core.Rule.L2_PA, "soft": _core.Rule.SOFT_REG_PA}

    def __init__(self, variant="reg", alpha=0.001, beta=100.0, C=1.0, prune_sigma=0.0,
                 prune_mode="squared", *, fit_intercept=True,
                 intercept_scaling="auto", n_passes=1, shuffle=False, random_state=None,
                 multiclass="top1", k=1, average="auto", class_weight=None):
        self.variant = variant
        self.alpha = alpha
        self.beta = beta
        self.C = C
        self.prune_sigma = prune_sigma
        self.prune_mode = prune_mode
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.n_passes = n_passes
        self.shuffle = shuffle
        self.random_state = random_state
        self.multiclass = multiclass
        self.k = k
        self.average = average
        self.class_weight = class_weight

    def _rule(self):
        """The compiled rule of these parameters (also the kernel form's)."""
        return RegularizedPA._rules[self.variant]

    def _model_options(self):
        return {"shape": "first_order", "rule": self._rule(),
                "alpha": float(self.alpha), "beta": float(self.beta), "C": float(self.C)}

    @serialised
    def decision_function(self, X):
        rows = self._rows(X)
        W = np.atleast_2d(self._model.weights()).copy()
        if self.prune_sigma > 0:
            d = self.n_features_in_
            for w in W:
                w[:d] = prune_weights(w[:d], self.prune_sigma, self.prune_mode)
        scores = np.column_stack([row_scores(rows, w, self._bias)[0] for w in W])
        return scores.ravel() if len(W) == 1 else scores


def prune_weights(w, sigma, mode="squared"):
    """Zero the smallest weights whose cumulative (squared or absolute) sum is < sigma.

    [LMC09] Sect. 3.4: sort |w_i| ascending (stable) and remove the longest prefix
    whose cumulative sum of w_i^2 (mode "squared") or |w_i| ("absolute") stays
    below sigma.
    """
    a = np.abs(w)
    order = np.argsort(a, kind="stable")
    c = np.cumsum(a[order] ** 2 if mode == "squared" else a[order])
    n_drop = int(np.searchsorted(c, sigma, side="left"))
    out = w.copy()
    out[order[:n_drop]] = 0.0
    return out


#: The model shape of each ``covariance`` of the Gaussian-weight rules.
_COVARIANCE_SHAPES = {"diag": "diagonal", "full": "full"}

#: ``covariance="auto"`` keeps a full matrix when the cost of a full update,
#: n^2 with n = D (binary), K D^2 for one-vs-rest, (K D)^2 for top-1 / top-k
#: (D = features + 1, K classes), is at most AUTO_FULL_DIM^2, and the rows are dense
#: (:func:`cwkit.base.dense_rows`).
AUTO_FULL_DIM = 256


def auto_covariance(rows, n_classes, multiclass):
    """What ``covariance="auto"`` chooses for the first rows `rows`: "full" or "diag".

    Full when the model is narrow (its per-row update cost, see
    ``AUTO_FULL_DIM``, within AUTO_FULL_DIM^2) and the data dense (at least
    ``cwkit.base.AUTO_DENSITY`` of the first ``AUTO_ROWS`` rows' entries nonzero);
    diagonal otherwise.  The measurements behind both thresholds are in docs/choosing.md.
    """
    D = rows.n_features + 1
    if n_classes == 2:
        cost = D * D
    elif multiclass == "ovr":
        cost = n_classes * D * D
    else:
        cost = (n_classes * D) ** 2
    if cost > AUTO_FULL_DIM ** 2 or not dense_rows(rows):
        return "diag"
    return "full"


#: AROW's ``r="auto"`` on sparse rows, in units of the first rows' mean squared norm.
SPARSE_R = 0.1


def auto_r(rows):
    """What AROW's ``r="auto"`` chooses for the first rows `rows`: 1 on dense rows
    (:func:`cwkit.base.dense_rows`), on sparse ones ``SPARSE_R`` times the mean squared
    norm of the first ``AUTO_ROWS`` rows (``SPARSE_R`` when they are all zero).  The
    measurements behind it are in docs/choosing.md."""
    if dense_rows(rows):
        return 1.0
    norm2 = rows.mean_squared_norm(AUTO_ROWS)
    return SPARSE_R * norm2 if norm2 > 0 else SPARSE_R


class CovarianceChoice:
    """The ``covariance`` parameter of the second-order rules, "auto" settled at the
    first fit (``covariance_type_``)."""

    _fitted = {"covariance_type_": ("{'diag', 'full'}", "The shape of the covariance: "
                                    "``covariance``, or what ``\"auto\"`` chose on the "
                                    "first rows.")}


    def _choose(self, rows, n_classes):
        super()._choose(rows, n_classes)
        if self.covariance != "auto":
            self.covariance_type_ = self.covariance
        elif isinstance(self.__dict__.get("feature_map_"), Vocabulary):
            # a vocabulary's width grows with every new name: no bound a full matrix keeps
            self.covariance_type_ = "diag"
        else:
            self.covariance_type_ = auto_covariance(rows, n_classes, self.multiclass)

    def _choices(self):
        return {**super()._choices(), "covariance_type_": self.covariance_type_}

    def _resolve(self, params):
        super()._resolve(params)
        if hasattr(self, "covariance_type_"):
            params["covariance"] = self.covariance_type_

    def _restore_choices(self, saved):
        super()._restore_choices(saved)
        # a file written before "auto" existed records no choice: its covariance is it
        value = saved.get("covariance_type_", self.covariance)
        if value not in _COVARIANCE_SHAPES:
            raise ValueError(f"covariance_type_ must be 'diag' or 'full', got {value!r:.40}")
        self.covariance_type_ = value


#: Phi^-1(eta) of the default etas, as scipy.special.ndtri gives them (the same
#: doubles), so that a default CW model does not import scipy.special (about 0.1 s of
#: CPU, and a BLAS thread that spins as long again while the first chunk is learnt).
_PHI_OF_DEFAULT = {0.9: 1.2815515655446004, 0.7: 0.5244005127080407,
                   0.85: 1.0364333894937898}


def _phi(eta):
    """phi = Phi^-1(eta), the standard normal quantile ([CW08])."""
    phi = _PHI_OF_DEFAULT.get(eta)
    return float(special.ndtri(eta)) if phi is None else phi


class ConfidenceWeighted(CovarianceChoice, GaussianMixin, OnlineClassifier):
    """Confidence-Weighted learning: CW-Var [CW08] and CW-Stdev ([ECCW08]).

    Parameters
    ----------
    variant : {"var", "stdev"}, default="var"
    eta : float in (0.5, 1) or None, default=None
        Confidence; phi = Phi^-1(eta) > 0.  None means 0.9 for CW-Var and 0.7 for
        CW-Stdev: the diagonal CW-Stdev update ([ECCW08] eq. 15 with u from eq. 12)
        shrinks the variances of features seen on every round geometrically for
        eta >= 0.8 on dense low-dimensional data, down to 0, after which those
        weights stop learning.
    a : float > 0, default=1.0
        Initial variance: Sigma_1 = a I.
    covariance : {"auto", "diag", "full"}, default="auto"
        Diagonal (Sigma^-1 updates projected on the diagonal) or full matrix
        (dense, low-dimensional data; at most ``cwkit.models.binary.MAX_FULL_DIM`` - 1
        features).  "auto" chooses at the first ``fit`` / ``partial_fit``: full when the
        model is narrow and the first rows dense (:func:`auto_covariance`), else
        diagonal (always for named features in a growing vocabulary,
        ``use_features("vocabulary")``); the choice is the fitted attribute
        ``covariance_type_``.
    fit_intercept, intercept_scaling, n_passes, shuffle, random_state, multiclass, k,
    average, class_weight
        As in :class:`Perceptron`.

    Notes
    -----
    m = y mu.x, v = x^T Sigma x.  CW-Var ([CW08] Alg. 1; [AROW09]):
    alpha = max(0, (-(1+2 phi m) + sqrt((1+2 phi m)^2 - 8 phi (m - phi v))) / (4 phi v)),
    mu <- mu + alpha y Sigma x, Sigma^-1 <- Sigma^-1 + 2 alpha phi x x^T (diag: x^2).
    CW-Stdev ([ECCW08] Fig. 1, eqs. 10-15, 22): psi = 1 + phi^2/2, xi = 1 + phi^2,
    alpha = max(0, (-m psi + sqrt(m^2 phi^4/4 + v phi^2 xi)) / (v xi)),
    sqrt(u) = (-alpha v phi + sqrt(alpha^2 v^2 phi^2 + 4v)) / 2,
    full: Sigma <- Sigma - beta Sigma x x^T Sigma with beta = alpha phi / (sqrt(u) + v alpha phi);
    diag: Sigma^-1 <- Sigma^-1 + alpha phi u^-1/2 diag(x^2).  Both roots are
    evaluated in rationalised forms free of cancellation.

    Multi-class top-1 ([AROW13] Sect. 5.4, "a single constraint"): the binary step on
    Delta = f(x, y) - f(x, c) with label +1, m = mu_y.x - mu_c.x and
    v = x^T Sigma_yy x + x^T Sigma_cc x (diagonal; full: Delta^T Sigma Delta over the
    stacked blocks); the covariance update acts on blocks y and c.
    """

    _constraints = {"variant": _params.Choice("var", "stdev"),
                    "eta": _params.Optional(_params.Real(0.5, 1.0, open_lo=True, open_hi=True),
                                            "0.9 for cw, 0.7 for cw-stdev"),
                    "a": _params.POSITIVE, "covariance": _params.Choice("auto", "diag", "full")}
    _names = {
        "cw": Registration({"variant": "var"}, "Confidence-Weighted, variance form CW-Var [CW08]",
                           ("eta", "a", "covariance")),
        "cw-stdev": Registration({"variant": "stdev"},
                                 "Confidence-Weighted, exact convex stdev form ([ECCW08] Fig. 1)",
                                 ("eta", "a", "covariance")),
    }
    #: eta when None: CW-Var and CW-Stdev (see ``eta``).
    _default_eta = {"var": 0.9, "stdev": 0.7}

    def __init__(self, variant="var", eta=None, a=1.0, covariance="auto", *,
                 fit_intercept=True,
                 intercept_scaling="auto", n_passes=1, shuffle=False, random_state=None,
                 multiclass="top1", k=1, average="auto", class_weight=None):
        self.variant = variant
        self.eta = eta
        self.a = a
        self.covariance = covariance
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.n_passes = n_passes
        self.shuffle = shuffle
        self.random_state = random_state
        self.multiclass = multiclass
        self.k = k
        self.average = average
        self.class_weight = class_weight

    def _eta(self):
        """``eta``, None resolved to the variant's default."""
        return self.eta if self.eta is not None else self._default_eta[self.variant]

    def _resolve(self, params):
        super()._resolve(params)
        params["eta"] = self._eta()

    def _rule(self):
        """The compiled rule of these parameters (also the kernel form's)."""
        return _core.Rule.CW_VAR if self.variant == "var" else _core.Rule.CW_STDEV

    def _model_options(self):
        eta = self._eta()
        return {"shape": _COVARIANCE_SHAPES[self.covariance_type_], "rule": self._rule(),
                "phi": _phi(eta), "a": float(self.a)}


class AROW(CovarianceChoice, GaussianMixin, OnlineClassifier):
    """Adaptive Regularization of Weight vectors ([AROW13]), squared hinge or hinge.

    Parameters
    ----------
    r : float > 0 or "auto", default="auto"
        Regularization; lambda_1 = lambda_2 = 1/(2r).  "auto" chooses at the first
        ``fit`` / ``partial_fit`` (``r_``): 1 on dense rows, and on sparse rows
        (``intercept_scaling="auto"``'s test) ``SPARSE_R`` = 0.1 times the mean
        squared norm of the first rows, so that r keeps its ratio to the step's
        ``x^T Sigma x = a ||x||^2`` at the start whatever the rows' scale: 0.1 on
        L2-normalised text (docs/choosing.md).  ``r=1.0`` is the former default.
    a : float > 0, default=1.0
        Initial variance: Sigma_1 = a I.
    loss : {"squared_hinge", "hinge"}, default="squared_hinge"
        AROW ([AROW13] Fig. 1) or AROW-H ([AROW13] Sect. 3.2).
    covariance : {"auto", "diag", "full"}, default="auto"
        As in :class:`ConfidenceWeighted`.
    diag_update : {"inverse", "direct"}, default="inverse"
        Diagonal projection of the update of Sigma^-1 (eq. 14, the projection of
        [CW08]) or of Sigma itself (eq. 15).
    sigma_update : {"auto", "delta", "sum"}, default="auto"
        Multi-class (``multiclass="top1"`` or ``"topk"``): the direction of the
        covariance update, Delta = f(x, y) - f(x, c) of the closest competitor
        ([AROW13] Fig. 3, eq. 56) or f = sum_y f(x, y), x~ tiled over all blocks
        ([AROW13] Fig. 2, eqs. 29-30).  "auto" is "delta" for top1 and "sum" for topk.
        Not used by ``multiclass="ovr"`` or with two classes (the update is with x).
    fit_intercept, intercept_scaling, n_passes, shuffle, random_state, multiclass, k,
    average, class_weight
        As in :class:`Perceptron`, but ``average="auto"`` (the default) keeps the last
        iterate: averaging made AROW and AROW-H worse on the binary sets measured
        (docs/choosing.md); ``intercept_scaling="auto"`` is 1 on sparse rows too (the
        intercept's variance shrinks as it is used, as every feature's does; 0.1 lost
        on the TREC spam stream, docs/choosing.md); ``multiclass="topk"`` is available
        for the squared hinge.

    Notes
    -----
    If l = max(0, 1 - y mu.x) > 0 ([AROW13] Sect. 3, Fig. 1; [AROW09]): beta = 1/(v + r),
    alpha = l beta (squared hinge, eq. 16) or alpha = min(1/(2r), l / v) (hinge,
    eq. 23); mu <- mu + alpha y Sigma x (eq. 12); Sigma <- Sigma - beta Sigma x x^T Sigma
    (eq. 15), i.e. Sigma^-1 <- Sigma^-1 + x x^T / r (eq. 14).  Diagonal:
    1/sigma_i += x_i^2 / r, or sigma_i -= beta sigma_i^2 x_i^2 with "direct".

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp, cwkit
    >>> X = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.2], [0.1, 1.0]]))
    >>> clf = cwkit.AROW(r=0.1).fit(X, ["spam", "ham", "spam", "ham"])
    >>> clf.predict(X).tolist()
    ['spam', 'ham', 'spam', 'ham']
    >>> clf.covariance_type_      # covariance="auto": two dense features, a full matrix
    'full'
    >>> clf.predict_proba(X).shape, bool(np.all(np.diag(clf.covariance_) < 1.0))
    ((4, 2), True)

    Multi-class top-k ([AROW13] Fig. 2, eqs. 25-30): with Delta_j = f(x, y) - f(x, c_j)
    for the k highest-scoring competitors and l_j = 1 - mu.Delta_j, if max_j l_j > 0
    maximise l^T a - a^T Q a / 2 over a >= 0 with Q = G + r 11^T,
    G_jl = Delta_j^T Sigma Delta_l (eq. 27, one squared slack); mu <- mu +
    Sigma sum_j a_j Delta_j, then Sigma <- Sigma - Sigma g g^T Sigma / (r + g^T Sigma g)
    with g = f or Delta_1 (``sigma_update``; diagonal: 1/sigma_i += g_i^2 / r).
    """

    _average_auto = False   # averaging made both worse (docs/choosing.md)
    _sparse_intercept_scaling = 1.0      # 0.1 lost on TREC spam (docs/choosing.md)
    _fitted = {"r_": ("float", "The regularization used: ``r``, or what ``\"auto\"`` "
                      "chose on the first rows.")}
    _constraints = {"r": _params.Optional(_params.POSITIVE, "1 on dense rows, 0.1 times "
                                          "the mean squared norm of the first rows on "
                                          "sparse ones", special="auto"),
                    "a": _params.POSITIVE,
                    "loss": _params.Choice("squared_hinge", "hinge"),
                    "covariance": _params.Choice("auto", "diag", "full"),
                    "diag_update": _params.Choice("inverse", "direct"),
                    "sigma_update": _params.Choice("auto", "delta", "sum")}
    _names = {
        "arow": Registration({"loss": "squared_hinge"}, "AROW, squared hinge ([AROW13] Fig. 1)",
                             ("r", "a", "covariance", "diag_update", "sigma_update")),
        "arow-h": Registration({"loss": "hinge"}, "AROW with the hinge loss ([AROW13] Sect. 3.2)",
                               ("r", "a", "covariance", "diag_update", "sigma_update")),
    }

    def __init__(self, r="auto", a=1.0, loss="squared_hinge", covariance="auto",
                 diag_update="inverse", sigma_update="auto", *, fit_intercept=True,
                 intercept_scaling="auto", n_passes=1, shuffle=False, random_state=None,
                 multiclass="top1", k=1, average="auto", class_weight=None):
        self.r = r
        self.a = a
        self.loss = loss
        self.covariance = covariance
        self.diag_update = diag_update
        self.sigma_update = sigma_update
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.n_passes = n_passes
        self.shuffle = shuffle
        self.random_state = random_state
        self.multiclass = multiclass
        self.k = k
        self.average = average
        self.class_weight = class_weight

    def _resolve(self, params):
        super()._resolve(params)
        if self.sigma_update == "auto" and self.multiclass != "ovr":
            params["sigma_update"] = "delta" if self.multiclass == "top1" else "sum"
        if hasattr(self, "r_"):
            params["r"] = self.r_

    def _choose(self, rows, n_classes):
        super()._choose(rows, n_classes)
        self.r_ = auto_r(rows) if self.r == "auto" else float(self.r)

    def _choices(self):
        return {**super()._choices(), "r_": self.r_}

    def _restore_choices(self, saved):
        super()._restore_choices(saved)
        # a file written before "auto" existed records no choice: its r is it
        value = saved.get("r_", self.r)
        if not _params.POSITIVE.check(value):
            raise ValueError(f"r_ must be a positive number, got {value!r:.40}")
        self.r_ = float(value)

    def _rule(self):
        """The compiled rule of these parameters (also the kernel form's)."""
        return _core.Rule.AROW if self.loss == "squared_hinge" else _core.Rule.AROW_H

    def _model_options(self):
        return {"shape": _COVARIANCE_SHAPES[self.covariance_type_], "rule": self._rule(),
                "r": self.r_, "a": float(self.a), "direct": self.diag_update == "direct",
                "sigma_update": self.sigma_update}


class SecondOrderPerceptron(CovarianceChoice, VarianceMixin, OnlineClassifier):
    """The second-order perceptron [SOP05], full or diagonal.

    Parameters
    ----------
    a : float > 0, default=1.0
        A_0 = a I.
    covariance : {"auto", "diag", "full"}, default="auto"
        As in :class:`ConfidenceWeighted`.
    fit_intercept, intercept_scaling, n_passes, shuffle, random_state, multiclass, k,
    average, class_weight
        As in :class:`Perceptron`.

    Notes
    -----
    [SOP05] Fig. 3.1 ([AROW09]): A = a I + sum_{mistakes} x x^T, v = sum_{mistakes} y x;
    predict with w_t = (A + x_t x_t^T)^-1 v; on a mistake v += y x, A += x x^T.
    ``coef_`` is A^-1 v and ``covariance_`` (full) is A^-1.  Diagonal (dropping
    cross-feature terms): w_t = v / (A + x_t^2), A += x^2, and
    ``coef_var_`` reports 1/A.  Test-time scores use the same per-point rule.

    Multi-class top-1 (the Delta-form of [SOP05], our choice): class scores are the
    binary test rule on each block, s_c = f_c^T (A + f_c f_c^T)^-1 v with
    f_c = f(x, c); with c the closest competitor and Delta = f(x, y) - f(x, c),
    update when Delta^T (A + Delta Delta^T)^-1 v <= 0 (diagonal: s_y - s_c <= 0, the
    diagonal splitting over the two blocks; full: mu.Delta <= 0), then v += Delta,
    A += Delta Delta^T (diagonal: A_y += x^2, A_c += x^2).
    """

    _constraints = {"a": _params.POSITIVE, "covariance": _params.Choice("auto", "diag", "full")}
    _names = {"sop": Registration({}, "second-order Perceptron [SOP05]", ("a", "covariance"))}

    def __init__(self, a=1.0, covariance="auto", *, fit_intercept=True,
                 intercept_scaling="auto", n_passes=1, shuffle=False, random_state=None,
                 multiclass="top1", k=1, average="auto", class_weight=None):
        self.a = a
        self.covariance = covariance
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
        shape = "sop_diagonal" if self.covariance_type_ == "diag" else "full"
        return {"shape": shape, "rule": _core.Rule.SOP, "a": float(self.a)}


class AdaGrad(OnlineClassifier):
    """Diagonal AdaGrad in regularized-dual-averaging form with L1, hinge loss.

    [DHS11], the baseline of [AROW13] Sect. 5.4.

    Parameters
    ----------
    eta : float > 0, default=1.0
        Step size.
    lam : float >= 0, default=0.0
        L1 regularization.
    delta : float > 0, default=1e-8
        Added to sqrt(G) in the proximal term.
    fit_intercept, intercept_scaling, n_passes, shuffle, random_state, multiclass, k,
    average, class_weight
        As in :class:`Perceptron`.

    Notes
    -----
    Subgradient g_t = -y x when y w.x < 1, else 0; u = sum_s g_s, G = sum_s g_s^2;
    w_{t+1,i} = -sign(u_i) eta t / (delta + sqrt(G_i)) max(0, |u_i|/t - lam)
    ([DHS11]), computed on demand so a round costs O(nnz).

    Multi-class top-1 (our choice): the multi-class hinge max(0, 1 - W.Delta) with
    Delta = f(x, y) - f(x, c) against the closest competitor c has the subgradient
    -Delta, so when w_y.x - w_c.x < 1: u_y -= x, u_c += x, G_y += x^2, G_c += x^2.
    """

    _constraints = {"eta": _params.POSITIVE, "lam": _params.NONNEGATIVE,
                    "delta": _params.POSITIVE}
    _sparse_intercept_scaling = 1.0      # 0.1 was worse with label noise (docs/choosing.md)
    _names = {"adagrad": Registration(
        {}, "diagonal AdaGrad-RDA with L1, hinge loss ([DHS11]; [AROW13] Sect. 5.4)",
        ("eta", "lam", "delta"))}

    def __init__(self, eta=1.0, lam=0.0, delta=1e-8, *, fit_intercept=True,
                 intercept_scaling="auto", n_passes=1, shuffle=False, random_state=None,
                 multiclass="top1", k=1, average="auto", class_weight=None):
        self.eta = eta
        self.lam = lam
        self.delta = delta
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
        return {"shape": "adagrad", "rule": _core.Rule.ADAGRAD, "eta": float(self.eta),
                "lam": float(self.lam), "delta": float(self.delta)}
