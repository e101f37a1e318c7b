"""Kernel forms of the online rules: estimators over the dual models of
``cwkit.models.kernel``.

``cwkit.make(name, kernel="rbf", gamma=..., budget=...)`` builds these for the
names whose rule has a kernel form; the update formulas are those of the
primal families (``cwkit.linear``) with every inner product replaced by the
kernel.  See docs/algorithms.md, "Kernel forms".
"""
import numpy as np
from ._lazy import issparse, sparse as sp

from . import _params
from .base import GaussianMixin, OnlineClassifier, serialised
from .linear import AROW, ConfidenceWeighted, PassiveAggressive, Perceptron, RegularizedPA, _phi
from .minibatch import MiniBatchPA, bpa_rho

#: The parameters every kernel estimator adds to its rule's.
KERNEL_PARAMS = ("kernel", "gamma", "degree", "coef0", "budget", "budget_policy")

_CONSTRAINTS = {
    "kernel": _params.Choice("rbf", "poly", "linear"),
    "gamma": _params.Optional(_params.POSITIVE, "1 / (n_features X.var())"),
    "degree": _params.Optional(_params.Int(1, _params.INT_MAX), "3 for kernel='poly'"),
    "coef0": _params.Optional(_params.Real(-np.inf, np.inf, open_lo=True, open_hi=True),
                              "0 for kernel='poly'"),
    "budget": _params.Optional(_params.Int(1), "no budget"),
    "budget_policy": _params.Choice("oldest", "smallest", "shrink"),
}

#: The intercept's share of the RBF kernel's range [0, 1]: ``intercept_scaling="auto"``
#: makes bias^2 this (measured in docs/choosing.md, "Kernel forms at their defaults").
BIAS_SHARE = 0.1


def scale_gamma(X):
    """scikit-learn's ``gamma="scale"``: 1 / (n_features X.var()), the variance over
    every entry of X (dense, or CSR with its zeros counted); 1.0 when that is not a
    positive finite number (constant rows)."""
    n, d = X.shape
    # (a row beyond float64 gives no gamma here; the pass names it)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if issparse(X):
            mean = X.sum() / (n * d)
            var = X.multiply(X).sum() / (n * d) - mean * mean
        else:
            var = np.var(X)
        gamma = 1.0 / (d * var) if var > 0 else np.inf
    return float(gamma) if 0.0 < gamma < np.inf else 1.0


def kernel_bias(kernel):
    """What ``intercept_scaling="auto"`` chooses for a kernel form: for RBF, whose
    k(x, x) = 1 bounds its values, bias = sqrt(BIAS_SHARE) (the constant bias^2 a
    tenth of the kernel's range); 1 otherwise (with ``kernel="poly", degree=1,
    gamma=1, coef0=0``, the primal rules' constant feature on dense rows)."""
    return float(np.sqrt(BIAS_SHARE)) if kernel == "rbf" else 1.0


class KernelMixin:
    """Kernel parameters, the dual model's spec and scikit-learn's SVC attributes.

    Parameters (of every kernel estimator)
    --------------------------------------
    kernel : {"rbf", "poly", "linear"}, default="rbf"
        k(a, b) = exp(-gamma ||a - b||^2), (gamma a.b + coef0)^degree or a.b.
    gamma : float > 0 or None, default=None
        None: scikit-learn's ``"scale"``, 1 / (n_features X.var()) over the rows of the
        first ``fit`` / ``partial_fit`` (every entry's variance), kept as ``gamma_``.
    degree : int >= 1 or None, default=None
    coef0 : float or None, default=None
        Of ``kernel="poly"`` only (None: 3 and 0); another kernel refuses them.
    budget : int >= 1 or None, default=None
        Keep at most this many support vectors: after an update that adds the
        budget + 1-st, one is removed by ``budget_policy``.
    average : bool or "auto", default="auto"
        Report and score the average of the dual coefficients over the rounds
        (every rule); see Notes.  "auto": averaged for the PA and
        [LMC09] families, CW and mini-batch PA, the last iterate for AROW (the name
        "perceptron" is the plain rule, "avg-perceptron" its average).
    budget_policy : {"oldest", "smallest", "shrink"}, default="oldest"
        ("shrink" for the [LMC09] rules.)  Never removes the newest; ties go to
        the oldest.

        CW and AROW (and CW-Stdev, AROW-H) project the removed vector's term onto
        the kept ones instead of shrinking: "oldest" removes the oldest,
        "smallest" the one whose projection leaves the least residual
        (docs/algorithms.md, "Budgets").

        * "oldest": the Forgetron [DSS08]: f <- phi_t f, then the oldest support
          vector is removed; phi_t in (0, 1] is the largest with
          Psi(sigma phi_t, phi_t mu) + Q <= (15/32) M, Psi(l, m) = l^2 + 2 l - 2 l m,
          sigma the removed vector's weight, mu its margin sigma^-1 w_r f'(x_r) under
          the updated f', Q the sum of the Psi so far, M the support vectors added
          so far (the mistakes, for the Perceptron).  Cost O(B nnz) per removal (one
          kernel row).  The [LMC09] rules remove the oldest without phi_t: their
          own 1 / Z per update is their shrinking.
        * "smallest": the one whose removal changes f least in the RKHS norm,
          ||coef_j||^2 k~(x_j, x_j); no shrinking.  O(B) per removal.
        * "shrink" ([LMC09] rules only, their default): their own shrinkage as the
          policy: every update divides all weights by Z >= 1, then the support
          vector of the smallest weight max_c |coef_j,c| is removed.  O(B).

    Notes
    -----
    ``set_params`` of a kernel parameter (kernel, gamma, degree, coef0, budget,
    budget_policy) on a fitted model takes effect at the next ``fit``: the support
    set was built with the former value, so until then ``partial_fit``, prediction,
    the fitted attributes and :func:`cwkit.save` raise a ValueError naming it.

    The intercept is the primal models' augmented constant feature:
    k~(a, b) = k(a, b) + bias^2 (bias = ``intercept_scaling_`` with
    ``fit_intercept``, else 0).  ``intercept_scaling="auto"`` puts bias^2 on the
    RBF kernel's scale, a tenth of its range (bias^2 = 0.1; 1 for "poly").  A constant
    1 beside RBF values that are small between distinct
    rows made the score mostly the sum of the coefficients, and the one-pass models
    drift to the majority class (sonar: 24.4% test error against 17.3% without an
    intercept and 16.2% for scikit-learn's SVC; docs/choosing.md, "Kernel forms at
    their defaults", has the measurement), so
    ``decision_function(X) = dual_coef_ @ K(support_vectors_, X) + intercept_``
    with ``intercept_ = bias^2 dual_coef_.sum(axis=1)``, and with ``kernel="poly",
    degree=1, gamma=1, coef0=0`` a kernel rule makes its primal rule's decisions.

    ``average=True``: the dual of the primal average (1/t) sum_tau w_tau is
    (1/t) sum_tau w_j(tau) per support vector, w_j(tau) its weight after round tau,
    summed lazily: the weights only change at an update, which first adds P w_j to
    u_j for the P rounds since the last one (O(n) per update: below the O(n nnz)
    kernel row of the first-order rules' round and the O(n^2) of the CW / AROW
    update, which changes every coefficient, mu += alpha Z k; nothing in a round
    without an update), so the average is (u_j + P w_j) / t, with no cancellation
    however far the [LMC09] rules shrink.  Under a budget, a removed vector's past
    weight leaves the average with it (the averaged model keeps the same at most B
    support vectors; the Forgetron's phi_t shrinks the kept weights from the round
    of the removal on, as it shrinks the model).  CW / AROW score the average with
    the last Sigma, as the primal rules.  Mini-batch PA averages the model each
    round reports, an incomplete group's provisional step included
    (:class:`KernelMiniBatchPA`).
    """

    _fitted = {
        "coef_": None,      # a kernel model has no primal weights
        "support_vectors_": ("scipy.sparse CSR matrix of shape (n_SV, n_features_in_)",
                             "The support vectors (one-vs-rest: every class's, stacked)."),
        "dual_coef_": ("ndarray of shape (1, n_SV) or (n_classes, n_SV)",
                       "The dual coefficients, one row per class's score."),
        "n_support_": ("ndarray of shape (n_classes,)", "The support vectors per class "
                       "(two classes: by the sign of their dual coefficient)."),
        "intercept_": ("ndarray of shape (1,) or (n_classes,)", "bias^2 times the sum of "
                       "each row of ``dual_coef_`` (the augmented constant feature)."),
        "gamma_": ("float", "The kernel's gamma: ``gamma``, or what None chose on the "
                   "first rows (1 / (n_features_in_ X.var()))."),
    }

    #: The primal family whose rule (``_rule``) and parameters the kernel form takes.
    _primal = None

    #: What ``average="auto"`` resolves to (the first-order forms: averaged).
    _average_auto = False

    def _rule(self):
        """The primal family's rule for these parameters (one map, in ``cwkit.linear``)."""
        return self._primal._rule(self)

    def _validate_params(self):
        _params.validate(type(self).__name__, _CONSTRAINTS,
                         {k: getattr(self, k) for k in KERNEL_PARAMS})
        super()._validate_params()
        given = [k for k in ("degree", "coef0") if getattr(self, k) is not None]
        if self.kernel != "poly" and given:
            raise ValueError(f"{type(self).__name__}: {' and '.join(given)} "
                             f"{'is a parameter' if len(given) == 1 else 'are parameters'} of "
                             f"kernel='poly' only; kernel={self.kernel!r} does not use "
                             f"{'it' if len(given) == 1 else 'them'}: leave "
                             f"{'it' if len(given) == 1 else 'them'} None, or give "
                             "kernel='poly'")
        if self.multiclass == "topk":
            raise ValueError(f"{type(self).__name__}: the kernel forms have no "
                             "multiclass='topk'; use 'top1' or 'ovr'")
        if self.budget_policy == "shrink" and not isinstance(self, KernelRegularizedPA):
            raise ValueError(f"{type(self).__name__}: budget_policy='shrink' is the "
                             "regularized PA family's own shrinkage ('reg-pa', 'l2-pa', "
                             "'soft-reg-pa'); this rule has none: use 'oldest' (the "
                             "Forgetron's shrinking) or 'smallest'")

    @classmethod
    def _file_params(cls, params):
        """A model file's parameters as today's: a file written when degree and coef0
        defaulted to 3 and 0 for every kernel records those for "rbf" too."""
        params = super()._file_params(params)
        if params.get("kernel", "rbf") != "poly":
            for key, old in (("degree", 3), ("coef0", 0.0)):
                if params.get(key) == old:
                    params[key] = None
        return params

    def _resolve(self, params):
        super()._resolve(params)
        if self.kernel == "poly":
            params["degree"] = 3 if self.degree is None else self.degree
            params["coef0"] = 0.0 if self.coef0 is None else self.coef0
        if hasattr(self, "gamma_"):
            params["gamma"] = self.gamma_

    def _choose(self, rows, n_classes):
        """gamma from the first rows (None: scikit-learn's "scale") and the intercept's
        bias (``intercept_scaling="auto"``: :func:`kernel_bias`)."""
        super()._choose(rows, n_classes)
        self.gamma_ = scale_gamma(rows.X) if self.gamma is None else float(self.gamma)
        if self.intercept_scaling == "auto":
            self.intercept_scaling_ = kernel_bias(self.kernel)

    def _choices(self):
        return {**super()._choices(), "gamma_": self.gamma_}

    def _restore_choices(self, saved):
        super()._restore_choices(saved)
        # a file written before gamma_ was kept: its gamma, or None's 1 / n_features then
        value = saved.get("gamma_", self.gamma)
        if value is not None and not _params.POSITIVE.check(value):
            raise ValueError(f"gamma_ must be a positive number, got {value!r:.40}")
        self.gamma_ = value

    def _spec(self, n_classes, n_features):
        spec = super()._spec(n_classes, n_features)
        gamma = self.__dict__.get("gamma_")
        return type(spec)(**{**spec.__dict__, "average": False,
                             "dual_average": self._averaging(), "kernel": self.kernel,
                             "gamma": 1.0 / n_features if gamma is None else float(gamma),
                             "degree": int(3 if self.degree is None else self.degree),
                             "coef0": float(0.0 if self.coef0 is None else self.coef0),
                             "budget": int(self.budget or 0),
                             "budget_policy": self.budget_policy})

    def _reset(self, classes, n_features):
        if self.__dict__.get("gamma_", 0.0) is None:     # a file's, from before gamma_
            self.gamma_ = 1.0 / n_features
        super()._reset(classes, n_features)
        self._fitted_kernel = {k: getattr(self, k) for k in KERNEL_PARAMS}

    def _check_fitted(self):
        """Fitted, and with the kernel parameters it was fitted with: ``set_params`` of
        one of them takes effect at the next ``fit``, and until then every other call
        refuses the model rather than use a support set built for other values."""
        super()._check_fitted()
        fitted = self.__dict__.get("_fitted_kernel", {})
        for name, value in fitted.items():
            if getattr(self, name) != value:
                raise ValueError(
                    f"{type(self).__name__}: {name} was set to {getattr(self, name)!r:.40} "
                    f"after the model was fitted with {value!r:.40}; a fitted kernel model "
                    "keeps the kernel and budget its support set was built with: call fit "
                    "to start afresh with the new value, or set it back")

    @serialised
    def partial_fit(self, X, y, classes=None, sample_weight=None, *, y_clean=None):
        if hasattr(self, "classes_"):
            self._check_fitted()
        return super().partial_fit(X, y, classes, sample_weight, y_clean=y_clean)

    partial_fit.__doc__ = OnlineClassifier.partial_fit.__doc__

    def _models(self):
        model = self._model
        return [m.reported(self._bias) for m in getattr(model, "models", [model])]

    @property
    @serialised
    def support_vectors_(self):
        """The support vectors (n_SV, n_features), CSR (one-vs-rest: every class's, stacked)."""
        self._check_fitted()
        blocks = []
        for model in self._models():
            data, idx, indptr, _ = model.support()
            blocks.append(sp.csr_matrix((data.copy(), idx, indptr),
                                        shape=(len(indptr) - 1, self.n_features_in_)))
        return sp.vstack(blocks, format="csr") if len(blocks) > 1 else blocks[0]

    @property
    @serialised
    def dual_coef_(self):
        """(1, n_SV) for two classes, (n_classes, n_SV) otherwise (one row per class's
        score, not scikit-learn's one-vs-one rows)."""
        self._check_fitted()
        models = self._models()
        if len(models) == 1:
            return models[0].dual_coef().T.copy()
        # one-vs-rest: class c's coefficients on its own block of support vectors
        coefs = [m.dual_coef()[:, 0] for m in models]
        out = np.zeros((len(coefs), sum(len(c) for c in coefs)))
        at = 0
        for c, v in enumerate(coefs):
            out[c, at:at + len(v)] = v
            at += len(v)
        return out

    @property
    @serialised
    def n_support_(self):
        """The support vectors per class, an int array of length n_classes, as
        scikit-learn's SVC gives it.  Two classes: those whose dual coefficient
        pushes towards ``classes_[0]`` (negative) and ``classes_[1]`` (positive): for
        the first-order rules, whose coefficient has its example's label's sign,
        the support vectors of each label, as SVC's.  More classes: those class c's
        score uses, the nonzeros of row c of ``dual_coef_`` (one-vs-rest: class c's
        binary model's; top-1: every support vector counts for the two classes of
        its update, y_j and its competitor)."""
        self._check_fitted()
        coef = self.dual_coef_
        if len(self.classes_) == 2:
            return np.array([np.count_nonzero(coef < 0), np.count_nonzero(coef > 0)])
        return np.count_nonzero(coef, axis=1)

    @property
    def coef_(self):
        raise AttributeError("coef_ is only available for the primal (kernel='linear' "
                             "through cwkit.make) rules; a kernel model has "
                             "support_vectors_ and dual_coef_")

    @property
    @serialised
    def intercept_(self):
        """bias^2 times the sum of each row of ``dual_coef_`` (the augmented feature)."""
        return self.dual_coef_.sum(axis=1) * self._bias ** 2


class KernelPerceptron(KernelMixin, OnlineClassifier):
    """The kernel Perceptron [Ros58], averaged kernel Perceptron [FS99] and, with
    ``budget`` and ``budget_policy="oldest"``, the Forgetron [DSS08].

    Parameters
    ----------
    average : bool, default=False
    kernel, gamma, degree, coef0, budget, budget_policy
        See :class:`KernelMixin`.
    fit_intercept, intercept_scaling, n_passes, shuffle, random_state, multiclass, k,
    class_weight
        As in :class:`cwkit.Perceptron`; ``multiclass`` is "top1" or "ovr".

    Notes
    -----
    If y f(x) <= 0, x joins the support set with coefficient y ([FS99]); the
    average is the lazy sum of :class:`KernelMixin` (coef_j (t - t_j + 1) / t
    without a budget, t_j the round x_j joined).
    Top-1: on an argmax mistake yhat, x joins with +1 for y and -1 for yhat.
    """

    _primal = Perceptron
    _constraints = Perceptron._constraints
    _average_auto = True
    _names = Perceptron._names

    def __init__(self, average=False, kernel="rbf", gamma=None, degree=None, coef0=None,
                 budget=None, budget_policy="oldest", *, fit_intercept=True,
                 intercept_scaling="auto", n_passes=1, shuffle=False, random_state=None,
                 multiclass="top1", k=1, class_weight=None):
        self.average = average
        self.class_weight = class_weight
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.budget = budget
        self.budget_policy = budget_policy
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.n_passes = n_passes
        self.shuffle = shuffle
        self.random_state = random_state
        self.multiclass = multiclass
        self.k = k

    def _model_options(self):
        return {"shape": "kernel_first_order", "rule": self._rule()}


class KernelPassiveAggressive(KernelMixin, OnlineClassifier):
    """Kernel PA, PA-I, PA-II [PA06] and PA-LS [GPA13].

    Parameters
    ----------
    variant : {"pa", "pa1", "pa2", "pa-ls"}, default="pa1"
    C : float > 0, default=1.0
    kernel, gamma, degree, coef0, budget, budget_policy
        See :class:`KernelMixin`.
    fit_intercept, intercept_scaling, n_passes, shuffle, random_state, multiclass, k,
    average, class_weight
        As in :class:`cwkit.PassiveAggressive`; ``multiclass`` is "top1" or "ovr".

    Notes
    -----
    The steps of :class:`cwkit.PassiveAggressive` with n = k~(x, x) and
    m = y f(x): x joins the support set with coefficient tau y ([PA06];
    [GPA13] Sect. 3.3: the dual coefficients tau are all a kernel rule needs).
    Top-1: n = 2 k~(x, x), m = f_y(x) - f_c(x), coefficients +tau (class y) and
    -tau (class c).
    """

    _primal = PassiveAggressive
    _constraints = {k: v for k, v in PassiveAggressive._constraints.items() if k != "slack"}
    _average_auto = True
    _names = PassiveAggressive._names

    def __init__(self, variant="pa1", C=1.0, kernel="rbf", gamma=None, degree=None, coef0=None,
                 budget=None, budget_policy="oldest", *, fit_intercept=True,
                 intercept_scaling="auto", n_passes=1, shuffle=False, random_state=None,
                 multiclass="top1", k=1, average="auto", class_weight=None):
        self.variant = variant
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.budget = budget
        self.budget_policy = budget_policy
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
        return {"shape": "kernel_first_order", "rule": self._rule(), "C": float(self.C)}

    def _poor_score(self):
        return self.variant == "pa-ls"


class KernelRegularizedPA(KernelMixin, OnlineClassifier):
    """The regularized PA family of [LMC09] in kernel form.

    Parameters
    ----------
    variant : {"reg", "l2", "soft"}, default="reg"
    alpha, beta, C : float > 0
        As in :class:`cwkit.RegularizedPA`.
    kernel, gamma, degree, coef0, budget, budget_policy
        See :class:`KernelMixin`.
    fit_intercept, intercept_scaling, n_passes, shuffle, random_state, multiclass, k,
    average, class_weight
        As in :class:`cwkit.RegularizedPA`; ``multiclass`` is "top1" or "ovr".

    Notes
    -----
    The steps of :class:`cwkit.RegularizedPA` with n = k~(x, x): every update
    divides all coefficients by Z >= 1 (kept in O(1) as one scale s), so the
    weight of a support vector shrinks geometrically with its age, as the
    Forgetron's shrinking does ([LMC09]; [DSS08]).  That shrinkage is their
    budget policy (``budget_policy="shrink"``, the default): after the update's
    shrink, the support vector of the smallest weight is removed; "oldest" removes
    the oldest with no further shrinking (no Forgetron phi_t).  For "l2",
    ||w||^2 is kept from its change per update (2 tau y f(x) + tau^2 n) and per
    removal (-2 coef_j f(x_j) + coef_j^2 k~(x_j, x_j)).
    """

    _constraints = {k: v for k, v in RegularizedPA._constraints.items()
                    if not k.startswith("prune")}
    _primal = RegularizedPA
    _average_auto = True
    _names = RegularizedPA._names

    def __init__(self, variant="reg", alpha=0.001, beta=100.0, C=1.0, kernel="rbf",
                 gamma=None, degree=None, coef0=None, budget=None, budget_policy="shrink", *,
                 fit_intercept=True, intercept_scaling="auto", n_passes=1, shuffle=False,
                 random_state=None, multiclass="top1", k=1, average="auto", class_weight=None):
        self.variant = variant
        self.alpha = alpha
        self.beta = beta
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.budget = budget
        self.budget_policy = budget_policy
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
        return {"shape": "kernel_first_order", "rule": self._rule(),
                "alpha": float(self.alpha), "beta": float(self.beta), "C": float(self.C)}


class KernelConfidenceWeighted(KernelMixin, GaussianMixin, OnlineClassifier):
    """CW-Var [CW08] and CW-Stdev [ECCW08] in dual form (binary, top-1, one-vs-rest).

    Parameters
    ----------
    variant : {"var", "stdev"}, default="var"
    eta : float in (0.5, 1) or None, default=None
        As in :class:`cwkit.ConfidenceWeighted`.
    a : float > 0, default=1.0
        Sigma_1 = a I (in the feature space of the kernel).
    kernel, gamma, degree, coef0, budget, budget_policy
        See :class:`KernelMixin`.
    fit_intercept, intercept_scaling, n_passes, shuffle, random_state, multiclass, k,
    average, class_weight
        ``multiclass`` is "top1" or "ovr".

    Notes
    -----
    The full-covariance steps of :class:`cwkit.ConfidenceWeighted` in the
    representation mu = sum_j coef_j phi(x_j), Sigma = a I + Phi^T Z Phi (see
    :class:`KernelAROW`, also for ``average=True``).
    """

    _constraints = {k: v for k, v in ConfidenceWeighted._constraints.items()
                    if k != "covariance"}
    _primal = ConfidenceWeighted
    _average_auto = True
    _names = ConfidenceWeighted._names
    _default_eta = ConfidenceWeighted._default_eta
    _eta = ConfidenceWeighted._eta

    def __init__(self, variant="var", eta=None, a=1.0, kernel="rbf", gamma=None, degree=None,
                 coef0=None, budget=None, budget_policy="oldest", *, fit_intercept=True,
                 intercept_scaling="auto", n_passes=1, shuffle=False, random_state=None,
                 multiclass="top1", k=1, average="auto", class_weight=None):
        self.variant = variant
        self.eta = eta
        self.a = a
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.budget = budget
        self.budget_policy = budget_policy
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
        return {"shape": "kernel_second_order", "rule": self._rule(),
                "phi": _phi(self._eta()), "a": float(self.a)}


class KernelAROW(KernelMixin, GaussianMixin, OnlineClassifier):
    """Kernel AROW ([AROW13] Sect. 4), squared hinge or hinge (binary, top-1,
    one-vs-rest).

    Parameters
    ----------
    r : float > 0, default=1.0
    a : float > 0, default=1.0
        Sigma_1 = a I (in the feature space of the kernel).
    loss : {"squared_hinge", "hinge"}, default="squared_hinge"
    kernel, gamma, degree, coef0, budget, budget_policy
        See :class:`KernelMixin`.
    fit_intercept, intercept_scaling, n_passes, shuffle, random_state, multiclass, k,
    average, class_weight
        ``multiclass`` is "top1" or "ovr".

    Notes
    -----
    [AROW13] Sect. 4 (representer theorem): mu_t and Sigma_t are spanned by the
    examples seen, mu = sum_j coef_j phi(x_j) and Sigma = a I + Phi^T Z Phi.
    With k = k~(X_S, x): mu.x = coef^T k, v = x^T Sigma x = a k~(x, x) + k^T Z k
    and Sigma x = Phi'^T c, c = (Z k, a) over the support set and x.  The
    primal step mu += alpha y Sigma x, Sigma -= beta Sigma x x^T Sigma
    ([AROW13] eqs. 12, 15) becomes coef' = (coef + alpha y Z k, alpha y a) and
    Z' = [[Z, 0], [0, 0]] - beta c c^T: O(n^2) per update.  Removing support
    vector j (budget) first projects its term coef_j phi(x_j) onto the kept ones,
    coef_-j += coef_j (K_-j,-j + lam I)^-1 K_-j,j (lam = 1e-6; the Projectron
    [OKC09], budgeted PA with projection [WV10]), from the inverse
    G = (K + lam I)^-1 kept up to date in O(n^2) per update, then replaces Z by
    the Schur complement of Z_jj (Z_-j,-j - Z_-j,j Z_j,-j / Z_jj), which keeps
    Sigma positive semi-definite (docs/algorithms.md, "Budgets").  Top-1 (the
    full-covariance top-1 of :class:`cwkit.AROW` with ``sigma_update="delta"``, over
    the stacked blocks): the support items are (x_j, e_{y_j} - e_{c_j}), with
    <Phi_i, Phi_j> = (e_i.e_j) k~(x_i, x_j); for Delta = f(x, y) - f(x, c),
    g_j = e_j.(e_y - e_c) k~(x_j, x) replaces k, v = 2 a k~(x, x) + g^T Z g and
    m = f_y(x) - f_c(x).  ``average=True`` reports coef_j averaged over the rounds
    (the lazy sums of :class:`KernelMixin`, brought up to date before each update,
    O(n) beside its O(n^2)); top-1 items keep their direction e_j, so the average's
    coefficients are the mean coef_j times e_j.
    """

    _constraints = {k: v for k, v in AROW._constraints.items()
                    if k in ("r", "a", "loss")}
    _primal = AROW
    _names = AROW._names

    def __init__(self, r=1.0, a=1.0, loss="squared_hinge", kernel="rbf", gamma=None,
                 degree=None, coef0=None, budget=None, budget_policy="oldest", *,
                 fit_intercept=True, intercept_scaling="auto", n_passes=1, shuffle=False,
                 random_state=None, multiclass="top1", k=1, average=False, class_weight=None):
        self.r = r
        self.a = a
        self.loss = loss
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.budget = budget
        self.budget_policy = budget_policy
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
        return {"shape": "kernel_second_order", "rule": self._rule(), "r": float(self.r),
                "a": float(self.a)}


class KernelMiniBatchPA(KernelMixin, OnlineClassifier):
    """Mini-batch PA, BPA-I / BPA-II / BPA-LS ([GPA13] Sect. 3.2), in kernel form
    (binary; multi-class top-1 or one-vs-rest).

    Parameters
    ----------
    variant, C, batch_size, rho, window
        As in :class:`cwkit.MiniBatchPA`.
    kernel, gamma, degree, coef0, budget, budget_policy
        See :class:`KernelMixin`; the budget is applied after each joint update.
    fit_intercept, intercept_scaling, n_passes, shuffle, random_state, multiclass, k,
    average, class_weight
        ``multiclass`` is "ovr" (the default) or "top1" for more than two classes.

    Notes
    -----
    The group's dual ([GPA13] eqs. 14-19) only involves the block Gram matrix
    A_jk = y_j y_k k~(x_j, x_k) of its rows and the losses 1 - y_k f(x_k): BPA-I
    max l'tau - tau'A tau / 2, 0 <= tau <= C; BPA-II with A + rho I, tau >= 0;
    BPA-LS tau = (A + rho I)^-1 l (the pseudoinverse of eq. 19, A + rho I being
    positive definite), solved as in the primal form (Hildreth's method with an
    active-set polish); every row with tau_k != 0 joins the support set with
    coefficient tau_k y_k ([GPA13] Sect. 3.3).  Top-1 over the stacked class blocks
    ([CS03]'s constraints as in :class:`cwkit.MiniBatchPA`): with c_k the highest-scoring
    class other than y_k and e_k = e_{y_k} - e_{c_k}, A_jk = (e_j.e_k) k~(x_j, x_k) and
    l_k = 1 - (f_{y_k}(x_k) - f_{c_k}(x_k)); the row joins with coefficients tau_k e_k.
    An importance weight s_k scales row k's loss term, as in :class:`cwkit.MiniBatchPA`:
    the box becomes 0 <= tau_k <= s_k C (BPA-I) and the ridge rho / s_k (BPA-II, BPA-LS);
    s_k = 0 fixes tau_k = 0.
    Groups span calls, and the rows of
    an incomplete group are applied provisionally to the reported model, as in
    :class:`cwkit.MiniBatchPA`.

    ``average=True`` reports the mean over the rounds of the model each round reports,
    as the primal form (with the linear kernel, its average): the support set, and
    while a block window's group is incomplete its provisional step, so the averaged
    model keeps its own support set, the support vectors, the rows a completed group
    left out (tau_k = 0 after a provisional step gave them a coefficient) and the
    pending rows, each with the sum of its coefficients (a support vector's kept
    lazily, u_j += P coef_j when the coefficients change).  On a budget a row the
    budget removes, or its group leaves out, takes its sum with it, as for the other
    kernel rules (the averaged model keeps at most B support vectors and the pending
    rows).
    """

    _primal = MiniBatchPA
    _average_auto = True
    _constraints = {k: v for k, v in MiniBatchPA._constraints.items() if k != "slack"}
    _names = MiniBatchPA._names

    def __init__(self, variant="bpa1", C=1.0, batch_size=4, rho="half", window="block",
                 kernel="rbf", gamma=None, degree=None, coef0=None, budget=None,
                 budget_policy="oldest", *, fit_intercept=True,
                 intercept_scaling="auto", n_passes=1, shuffle=False,
                 random_state=None, multiclass="ovr", k=1, average="auto", class_weight=None):
        self.variant = variant
        self.C = C
        self.batch_size = batch_size
        self.rho = rho
        self.window = window
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.budget = budget
        self.budget_policy = budget_policy
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
        return {"shape": "kernel_minibatch", "bpa_variant": self.variant, "C": float(self.C),
                "rho": bpa_rho(self.C, self.rho), "batch_size": int(self.batch_size),
                "sliding": self.window == "sliding"}


#: primal family -> its kernel form (``cwkit.registry.make`` chooses by ``kernel``).
KERNEL_FORMS = {form._primal: form for form in (
    KernelPerceptron, KernelPassiveAggressive, KernelRegularizedPA, KernelConfidenceWeighted,
    KernelAROW, KernelMiniBatchPA)}
