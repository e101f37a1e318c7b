"""The regression task: the PA family and AROW learning real-valued targets.

A task, not a copy of the classifiers: a regressor's model is the binary model
of its rule (``cwkit.models``: the same state, growth and model files) built from a
spec whose ``task`` is "regression", and its pass is the same compiled driver and
the same step as the classifier's, with the residual y - w.x in place of the label
(``cwkit/_driver.pxi``, ``regression_round``).  What this module adds is the
estimator protocol of a regressor: real targets, ``predict`` the score itself,
``score`` the coefficient of determination R^2, and the progressive errors.

:func:`cwkit.make_regressor` builds one by the classifiers' names ("pa", "pa1",
"pa2", "arow"); the rule table (``cwkit.models.rules``) says which rules have a
regression form.
"""
import inspect

import numpy as np

from . import _core, _params
from ._rowdata import as_rows
from ._weights import check_sample_weight
from .base import (COMMON, OnlineClassifier, Registration, VarianceMixin, _check_rounds,
                   _labels_1d, _not_fitted_error, _padded, check_nonempty, serialised)
from .linear import AROW, CovarianceChoice, PassiveAggressive, _COVARIANCE_SHAPES
from .models.factory import build_model
from .models.interface import REGRESSION, ModelSpec, raise_status
from .models.rules import RULE_OF


def check_targets(y, n_rows, what="y"):
    """Regression targets as float64 (n_rows,), C-contiguous: real numbers, finite.

    Raises ValueError for a target that is NaN or infinite (naming its row), for
    targets that are not numbers, and for a shape that does not fit the rows.
    """
    y = _labels_1d(y, n_rows)
    if y.dtype.kind not in "biuf":
        raise ValueError(f"Unknown label type: {what} must hold real numbers (a regressor's "
                         f"targets), got "
                         f"values of dtype {y.dtype}")
    y = np.ascontiguousarray(y, dtype=np.float64)
    bad = ~np.isfinite(y)
    if bad.any():
        row = int(np.argmax(bad))
        raise ValueError(f"{what}: row {row}: the target is {float(y[row])!r}; a regression "
                         "target must be a finite number (Input y contains NaN or "
                         "infinity)")
    return y


class _Absent:
    """A classifier's method that a regressor does not have: reading it raises
    AttributeError (so that ``hasattr`` is False, as scikit-learn's tools expect)."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        raise AttributeError(f"a regressor has no {self.name!r}: it predicts a number "
                             "(predict), not classes")


#: The protocol of a regressor's fitted attributes beyond the classifiers' (None: one
#: it does not have).
_REGRESSOR_FITTED = {
    "classes_": None, "class_counts_": None,
    "mistakes_": ("int", "Progressive rounds outside the tube: each row predicted "
                  "before it is learnt, with |y - prediction| > ``epsilon`` (0 for AROW), "
                  "added up since the last ``fit`` as ``t_`` is."),
    "last_mistakes_": ("int", "The rounds outside the tube of the last call alone."),
    "squared_error_": ("float", "The sum of the progressive squared errors "
                       "(y - prediction)^2 since the last ``fit`` (against ``y_clean`` "
                       "where ``partial_fit`` was given it)."),
    "absolute_error_": ("float", "The sum of the progressive absolute errors "
                        "|y - prediction|, as ``squared_error_``."),
    "last_squared_error_": ("float", "The progressive squared errors of the last call "
                            "alone."),
    "last_absolute_error_": ("float", "The progressive absolute errors of the last call "
                             "alone."),
    "coef_": ("ndarray of shape (n_features_in_,)", "The weights (their mean over the "
              "rounds with ``average=True``)."),
    "intercept_": ("ndarray of shape (1,)", "The intercept: the weight of the constant "
                   "feature times ``intercept_scaling_``."),
}


class OnlineRegressor(OnlineClassifier):
    """Base class of the regressors: real targets, ``predict`` the score, ``score`` R^2.

    The parameters, the locking, the intercept, growth and the model are those of
    :class:`cwkit.base.OnlineClassifier`; labels, classes, class weights,
    probabilities and multi-class strategies are not (a regressor has one
    output).  ``fit`` resets and makes ``n_passes`` passes; ``partial_fit`` makes
    one pass in the given order, growing the model on wider rows.
    """

    _estimator_type = "regressor"
    _fitted = _REGRESSOR_FITTED
    #: One output: the binary drivers (``covariance="auto"`` judges the width so).
    multiclass = "top1"
    class_weight = None

    decision_function = predict_proba = _Absent()
    predict_proba_one = predict_proba_many = _Absent()

    def __sklearn_tags__(self):
        """scikit-learn's estimator tags (only called where scikit-learn is installed)."""
        from sklearn.utils import InputTags, RegressorTags, Tags, TargetTags
        return Tags(estimator_type="regressor", target_tags=TargetTags(required=True),
                    regressor_tags=RegressorTags(), input_tags=InputTags(sparse=True))

    def _common(self, fit_intercept, intercept_scaling, n_passes, shuffle, random_state,
                average):
        """Store the parameters every regressor has (``__init__``)."""
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.n_passes = n_passes
        self.shuffle = shuffle
        self.random_state = random_state
        self.average = average

    def _validate_params(self):
        constraints = {**COMMON, "average": _params.Bool(), **self._constraints}
        _params.validate(type(self).__name__, constraints, self.get_params())

    @serialised
    def fit(self, X, y, sample_weight=None):
        """Reset, then make ``n_passes`` passes (in the given order unless ``shuffle=True``).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Real targets, finite.
        sample_weight : array-like of shape (n_samples,), optional
            The importance weight of each row, finite and >= 0: it scales the
            loss term of the rule's update (docs/algorithms.md, "Importance
            weights"); weights of 1 give the model of no weights, bit for bit, and
            a row of weight 0 is predicted (and counted) but not learnt.

        Returns
        -------
        self
        """
        self._validate_params()
        rows = as_rows(X)
        y = check_targets(y, rows.n_rows)
        sample_weight = check_sample_weight(sample_weight, rows.n_rows)
        check_nonempty(rows)
        _check_rounds(type(self).__name__, self.n_passes, rows.n_rows)
        if sample_weight is not None and not sample_weight.any():
            raise ValueError("every sample weight is zero: fit would learn nothing")
        self._choose(rows, 2)
        self._reset(None, rows.n_features)
        rng = np.random.default_rng(self.random_state)
        for _ in range(self.n_passes):
            order = rng.permutation(rows.n_rows) if self.shuffle else np.arange(rows.n_rows)
            self._learn(rows, y, order, y, sample_weight)
        self._count_last(self.mistakes_, self.n_updates_, self.squared_error_,
                         self.absolute_error_)
        return self

    @serialised
    def partial_fit(self, X, y, sample_weight=None, *, y_clean=None):
        """One online pass over the rows in the given order (one row, one round).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            Rows of any width: wider than any seen, the model grows first, each new
            feature at the rule's prior (weight 0, variance ``a``); narrower rows are
            padded with zeros.
        y : array-like of shape (n_samples,)
            Real targets, finite.
        sample_weight : array-like of shape (n_samples,), optional
            As for :meth:`fit`.
        y_clean : array-like of shape (n_samples,), optional
            The targets each round's error is counted against (``mistakes_``,
            ``squared_error_``, ``absolute_error_``) while ``y`` is learnt: ``y``
            noisy targets, ``y_clean`` the true ones.  Learning does not depend on it.

        Returns
        -------
        self
        """
        first = not hasattr(self, "n_features_in_")
        if first:
            self._validate_params()
        rows = as_rows(X, owner=type(self).__name__)
        if not first and rows.n_features < self.n_features_in_:
            rows = self._pad(rows, self.n_features_in_)
        y = check_targets(y, rows.n_rows)
        clean = y if y_clean is None else check_targets(y_clean, rows.n_rows, "y_clean")
        sample_weight = check_sample_weight(sample_weight, rows.n_rows)
        if first:
            check_nonempty(rows)
            self._choose(rows, 2)
            self._reset(None, rows.n_features)
        self._widen(rows.n_features)      # every check passed: the state may change
        mistakes, updates, sq, ab = self._learn(rows, y, np.arange(rows.n_rows), clean,
                                                sample_weight)
        self._count_last(mistakes, updates, sq, ab)
        return self

    def _learn(self, rows, y, order, clean, weights):
        """One pass over `rows` in `order` learning the targets `y`, its rounds counted
        against `clean`: adds to the counters and returns this pass's (mistakes,
        updates, squared error, absolute error)."""
        if weights is not None:
            rows = rows.weighted(weights)
        counted = None if clean is y else clean
        result = self._model.run_with(rows, y, order, self._bias, clean=counted, scores=True)
        self._account(result, None, None)
        err = (clean[order] - result.scores)
        sq, ab = float(err @ err), float(np.abs(err).sum())
        self.mistakes_ += result.mistakes
        self.n_updates_ += result.updates
        self.squared_error_ += sq
        self.absolute_error_ += ab
        return result.mistakes, result.updates, sq, ab

    def learn_many(self, X, y):
        """Learn from a list of named rows, in order (one ``partial_fit`` pass), `y`
        their real targets; returns self."""
        return self._learn_named(list(X), y, None, "row")

    def _partial_fit_named(self, X, y, classes):
        return self.partial_fit(X, y)

    def _predict_one(self, x):
        """``predict_one`` (the prediction for one named row, a float) where its compiled
        call did not take the row."""
        scores = self._many_scores([x])
        if scores is not None:
            return float(scores[0])
        return float(self.predict(self._predict_rows([x], "x"))[0])

    def _account(self, result, scores, codes):
        """``t_`` advanced and the pass's failure raised (no calibration window)."""
        self.t_ += result.rounds
        if result.status != _core.Status.OK:
            raise_status(result.status, result.pos, self._name(),
                         self._model.status_detail(result.status))

    def _count_last(self, mistakes, updates, sq, ab):
        self.last_mistakes_, self.last_n_updates_ = mistakes, updates
        self.last_squared_error_, self.last_absolute_error_ = sq, ab

    def _pass(self, rows, y, order):
        self._count_last(*self._learn(rows, check_targets(y, rows.n_rows), order, None, None))

    def _pad(self, rows, d):
        """Sparse rows narrower than the model's `d` features padded with zeros (a sparse
        matrix's width is only its largest column, as a chunk of an svmlight file's);
        dense rows narrower than the model are an error (a column is missing)."""
        if not rows.sparse:
            raise ValueError(f"X has {rows.n_features} features, but {type(self).__name__} "
                             f"is expecting {d} features as input (dense rows narrower than "
                             "the rows learnt; wider ones grow the model in partial_fit)")
        return _padded(rows, d)

    def _check_fitted(self):
        if not hasattr(self, "n_features_in_"):
            raise _not_fitted_error()(f"this {type(self).__name__} instance is not fitted yet; "
                                "call fit or partial_fit first")

    def _reset(self, classes, n_features):
        self.n_features_in_ = n_features
        self.t_ = self.mistakes_ = self.n_updates_ = 0
        self.last_mistakes_ = self.last_n_updates_ = 0
        self.squared_error_ = self.absolute_error_ = 0.0
        self.last_squared_error_ = self.last_absolute_error_ = 0.0
        self._model = build_model(self._spec(2, n_features))

    def _spec(self, n_classes, n_features):
        return ModelSpec(n_classes=2, n_features=n_features, task=REGRESSION,
                         average=self._averaging(), name=self._name(),
                         owner=type(self).__name__, **self._model_options())

    def _averaging(self):
        return bool(self.average)

    @serialised
    def predict(self, X):
        """The prediction w.x + b of each row (rows of any width: features beyond
        ``n_features_in_`` weigh 0, missing ones are zeros)."""
        rows = self._rows(X)
        return self._finite(self._model.scores(rows, self._bias))

    def _labels(self, scores):
        """A regressor's prediction is its score."""
        return scores

    @serialised
    def score(self, X, y, sample_weight=None):
        """The coefficient of determination R^2 of ``predict(X)`` on `y`.

        1 - sum_i s_i (y_i - p_i)^2 / sum_i s_i (y_i - y_bar)^2, with y_bar the
        (weighted) mean of y and s the sample weights (1 without); as scikit-learn's
        ``r2_score``, 1.0 for constant y predicted exactly and 0.0 for constant y
        predicted otherwise.
        """
        p = self.predict(X)
        y = check_targets(y, len(p))
        s = np.ones(len(y)) if sample_weight is None else check_sample_weight(
            sample_weight, len(y))
        res = float(s @ (y - p) ** 2)
        tot = float(s @ (y - np.average(y, weights=s)) ** 2)
        if tot == 0.0:
            return 1.0 if res == 0.0 else 0.0
        return 1.0 - res / tot

    @property
    @serialised
    def coef_(self):
        return self._model.weights()[:self._dims()].copy()

    @property
    @serialised
    def intercept_(self):
        return self._model.weights()[self._dims():] * self._bias

    def _choices(self):
        return {"intercept_scaling_": self.intercept_scaling_}

    def _row_weights(self, sample_weight, codes, classes, counts=None):
        return sample_weight, None


class PARegressor(OnlineRegressor):
    """Passive-Aggressive regression: PA, PA-I, PA-II with the epsilon-insensitive loss
    ([PA06] Sect. 4).

    Parameters
    ----------
    variant : {"pa", "pa1", "pa2"}, default="pa1"
    C : float > 0, default=1.0
        Aggressiveness (PA-I, PA-II).
    epsilon : float >= 0, default=0.1
        Half-width of the insensitive tube: a prediction within epsilon of the
        target is not updated on (scikit-learn's and river's default).
    fit_intercept, intercept_scaling, n_passes, shuffle, random_state
        As in :class:`cwkit.Perceptron`.
    average : bool, default=False
        Predict with the mean of the weights after rounds 1..T (the classifiers'
        averaging, docs/algorithms.md); the last iterate by default.

    Notes
    -----
    With the loss l = max(0, |y - w.x| - epsilon) and n = ||x||^2 (the intercept
    feature included): PA tau = l / n; PA-I tau = min(C, l / n); PA-II
    tau = l / (n + 1/(2C)); w <- w + sign(y - w.x) tau x ([PA06] Sect. 4, Fig. 1).
    Each is the classifier's step of :class:`cwkit.PassiveAggressive` on that loss,
    computed by the same compiled step.  PA-I's update is the minimiser of
    1/2 ||w - w_t||^2 + C xi subject to |w.x - y| <= epsilon + xi, xi >= 0; PA-II's
    with C xi^2; PA's with xi = 0.  A zero row makes no update.

    Examples
    --------
    >>> import numpy as np, cwkit
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 1.0]])
    >>> reg = cwkit.make_regressor("pa1", C=1.0, epsilon=0.0).fit(X, [1.0, -1.0, 0.0, 1.0])
    >>> reg.predict(X).round(3).tolist()
    [0.75, -0.556, 0.222, 1.0]
    """

    _constraints = {"variant": _params.Choice("pa", "pa1", "pa2"), "C": _params.POSITIVE,
                    "epsilon": _params.NONNEGATIVE}
    _sparse_intercept_scaling = PassiveAggressive._sparse_intercept_scaling
    _names = {
        "pa": Registration({"variant": "pa"}, "PA regression, epsilon-insensitive, "
                           "hard [PA06]", ("epsilon",)),
        "pa1": Registration({"variant": "pa1"}, "PA-I regression, epsilon-insensitive "
                            "[PA06]", ("C", "epsilon")),
        "pa2": Registration({"variant": "pa2"}, "PA-II regression, epsilon-insensitive "
                            "[PA06]", ("C", "epsilon")),
    }

    def __init__(self, variant="pa1", C=1.0, epsilon=0.1, *, fit_intercept=True,
                 intercept_scaling="auto", n_passes=1, shuffle=False, random_state=None,
                 average=False):
        self.variant = variant
        self.C = C
        self.epsilon = epsilon
        self._common(fit_intercept, intercept_scaling, n_passes, shuffle, random_state, average)

    def _model_options(self):
        return {"shape": "first_order", "rule": PassiveAggressive._rules[self.variant],
                "C": float(self.C), "epsilon": float(self.epsilon)}


class AROWRegressor(CovarianceChoice, VarianceMixin, OnlineRegressor):
    """AROW regression: AROW with the squared loss, which is recursive least squares
    ([AROW13] Sect. 3; [VC11]).

    Parameters
    ----------
    r : float > 0, default=1.0
        Regularization: the squared loss and the variance term weigh 1/(2r); in
        recursive least squares, the noise variance of the targets.
    a : float > 0, default=1.0
        Initial variance: Sigma_1 = a I (the prior of ridge regression with
        penalty r/a, see Notes).
    covariance : {"auto", "diag", "full"}, default="auto"
        As in :class:`cwkit.AROW`: a full matrix for narrow dense rows, the
        diagonal otherwise (sparse or wide data).
    diag_update : {"inverse", "direct"}, default="inverse"
        As in :class:`cwkit.AROW`: the diagonal projection of the update of
        Sigma^-1 or of Sigma.
    fit_intercept, intercept_scaling, n_passes, shuffle, random_state
        As in :class:`cwkit.Perceptron`; ``intercept_scaling="auto"`` is 1 on sparse
        rows too, as for :class:`cwkit.AROW`.
    average : bool, default=False
        As in :class:`PARegressor`.

    Notes
    -----
    On every round, with v = x^T Sigma x: mu <- mu + (y - mu.x) Sigma x / (v + r) and
    Sigma^-1 <- Sigma^-1 + x x^T / r, i.e. Sigma <- Sigma - Sigma x x^T Sigma / (v + r)
    ([AROW13] eqs. 12, 14-16 with the squared loss (y - mu.x)^2 in place of the
    squared hinge; [VC11]).  After rows x_1..x_T (full covariance), mu is the
    ridge regression solution (X^T X / r + I / a)^-1 X^T y / r, the posterior mean
    of Bayesian linear regression with prior N(0, a I) and noise variance r
    (docs/algorithms.md, "Regression").  Diagonal: 1/sigma_i += x_i^2 / r, or
    sigma_i -= sigma_i^2 x_i^2 / (v + r) with "direct".

    Examples
    --------
    >>> import numpy as np, cwkit
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 1.0]])
    >>> reg = cwkit.make_regressor("arow", r=0.01, fit_intercept=False)
    >>> reg.fit(X, [1.0, -1.0, 0.0, 1.0]).coef_.round(2).tolist()
    [0.99, -0.99]
    """

    _sparse_intercept_scaling = AROW._sparse_intercept_scaling
    _constraints = {"r": _params.POSITIVE, "a": _params.POSITIVE,
                    "covariance": _params.Choice("auto", "diag", "full"),
                    "diag_update": _params.Choice("inverse", "direct")}
    _names = {"arow": Registration({}, "AROW regression: recursive least squares "
                                   "([AROW13] Sect. 3; [VC11])",
                                   ("r", "a", "covariance", "diag_update"))}

    def __init__(self, r=1.0, a=1.0, covariance="auto", diag_update="inverse", *,
                 fit_intercept=True, intercept_scaling="auto", n_passes=1, shuffle=False,
                 random_state=None, average=False):
        self.r = r
        self.a = a
        self.covariance = covariance
        self.diag_update = diag_update
        self._common(fit_intercept, intercept_scaling, n_passes, shuffle, random_state, average)

    def _model_options(self):
        return {"shape": _COVARIANCE_SHAPES[self.covariance_type_], "rule": _core.Rule.AROW,
                "r": float(self.r), "a": float(self.a),
                "direct": self.diag_update == "direct"}

    @property
    @serialised
    def coef_var_(self):
        """The variances of the weights (a diagonal covariance)."""
        return VarianceMixin.coef_var_.fget(self).ravel()


#: The regressor families, in the order of `regressors`.
FAMILIES = (PARegressor, AROWRegressor)

_REGISTRY = {name: (cls, reg) for cls in FAMILIES for name, reg in cls._names.items()}


def make_regressor(name, **params):
    """Build the regressor registered under `name`.

    Parameters
    ----------
    name : str
        "pa", "pa1", "pa2" (:class:`PARegressor`) or "arow" (:class:`AROWRegressor`):
        the classifiers' names of the rules with a regression form.
    **params
        Its hyper-parameters (``C``, ``epsilon``; ``r``, ``a``, ``covariance``,
        ``diag_update``) and the common ones (fit_intercept, intercept_scaling,
        n_passes, shuffle, random_state, average).

    Raises
    ------
    ValueError
        For a name without a regression form (a classifier's name says so: the
        confidence-weighted rules, for one, have no published regression form), a
        parameter the name does not take (``multiclass``: a regressor has one
        output) or an invalid value.

    Examples
    --------
    >>> import cwkit
    >>> cwkit.make_regressor("pa1", C=0.5, epsilon=0.01)
    PARegressor(variant='pa1', C=0.5, epsilon=0.01, fit_intercept=True, \
intercept_scaling='auto', n_passes=1, shuffle=False, random_state=None, average=False)
    """
    entry = _REGISTRY.get(name)
    if entry is None:
        known = ", ".join(_REGISTRY)
        if name in RULE_OF:
            raise ValueError(f"{name} has no regression form (the rules with one: {known}); "
                             f"{_why_not(name)}")
        raise ValueError(f"unknown regressor {name!r}; known: {known}")
    cls, reg = entry
    common = ("fit_intercept", "intercept_scaling", "n_passes", "shuffle", "random_state",
              "average")
    for key in params:
        if key in ("multiclass", "k", "class_weight"):
            raise ValueError(f"{name}: a regressor has one real-valued output: it takes no "
                             f"{key!r} (a parameter of the classifiers)")
        if key not in reg.params and key not in common:
            raise ValueError(f"{name}: unknown parameter {key!r}; the regressor {name} takes "
                             f"{', '.join(reg.params) or 'no hyper-parameters'} (and "
                             f"{', '.join(common)})")
    est = cls(**{**reg.fixed, **params})
    est._validate_params()
    return est


def _why_not(name):
    """Why the classifier `name` has no regressor."""
    if name.startswith("cw") or name.startswith("scw"):
        return ("no source defines confidence-weighted regression (a probabilistic "
                "constraint on the sign of w.x has no counterpart for a real target); "
                "AROW regression ('arow') is the second-order rule for regression")
    return "it is a classification rule"


def regressors():
    """The regressors' registry: one dict per name, as :func:`cwkit.algorithms` gives
    the classifiers'."""
    out = []
    for name, (cls, reg) in _REGISTRY.items():
        defaults = {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items()}
        out.append({"name": name, "description": reg.description, "class": cls.__name__,
                    "params": {p: {"default": defaults[p],
                                   "valid": cls._constraints[p].describe()}
                               for p in reg.params}})
    return out

