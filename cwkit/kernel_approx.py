"""Explicit feature maps approximating a kernel, to feed any linear (primal) rule.

For data too large for any budget of support vectors: random Fourier features
([RR07]) for the RBF kernel and the Nyström method ([WS01]) for any kernel of
``cwkit.kernels``.  Both map rows (dense or CSR) to dense rows of
``n_components`` features whose inner products approximate the kernel, so that
``cwkit.make("pa1").fit(rff.fit_transform(X), y)`` is an approximate kernel PA-I
at the cost of a linear one (memory and time per prediction O(n_components d)).
"""
import inspect

import numpy as np
from ._lazy import issparse

from . import _params
from ._rowdata import as_rows
from .models.interface import ModelError
from .kernels import scale_gamma
from .models.kernel import kernel_from_dots
from .models.size import check_size

#: The seeds of the feature maps drawn by ``fit``: integers in [0, SEEDS).
SEEDS = 2 ** 62


def _sqnorms(X):
    return (np.asarray(X.multiply(X).sum(axis=1)).ravel() if issparse(X)
            else np.einsum("ij,ij->i", X, X))


def _rows(X):
    return X.tocsr().astype(np.float64) if issparse(X) else np.asarray(X, dtype=np.float64)


class RandomFourierFeatures:
    """Random Fourier features of the RBF kernel exp(-gamma ||a - b||^2) ([RR07]).

    Parameters
    ----------
    gamma : float > 0, default=1.0
    n_components : int >= 1, default=100
    random_state : int, numpy.random.Generator or None

    Notes
    -----
    z(x) = sqrt(2 / D) cos(W^T x + b), W_ij ~ N(0, 2 gamma), b_j ~ U[0, 2 pi]: by
    Bochner's theorem E[z(a).z(b)] = k(a, b), with an error O(1 / sqrt(D)) ([RR07]
    Claim 1).  ``fit`` needs only the number of features.
    """

    def __init__(self, gamma=1.0, n_components=100, random_state=None):
        self.gamma = gamma
        self.n_components = n_components
        self.random_state = random_state

    def fit(self, X, y=None):
        _params.validate("RandomFourierFeatures", {"gamma": _params.POSITIVE,
                                                   "n_components": _params.Int(1)},
                         {"gamma": self.gamma, "n_components": self.n_components})
        rng = np.random.default_rng(self.random_state)
        d = X.shape[1]
        self.W_ = rng.normal(scale=np.sqrt(2.0 * self.gamma), size=(d, self.n_components))
        self.b_ = rng.uniform(0.0, 2.0 * np.pi, size=self.n_components)
        return self

    def transform(self, X):
        X = _rows(X)
        return np.sqrt(2.0 / self.n_components) * np.cos(np.asarray(X @ self.W_) + self.b_)

    def fit_transform(self, X, y=None):
        return self.fit(X).transform(X)


class Nystroem:
    """Nyström features of a kernel of ``cwkit.kernels`` ([WS01]).

    Parameters
    ----------
    kernel : {"rbf", "poly", "linear"}, default="rbf"
    gamma, degree, coef0
        As in the kernel estimators, but gamma None is 1 / n_features here, as in
        scikit-learn's ``Nystroem`` (``kernel_approx="nystroem"`` of a rule chooses "scale").
    n_components : int >= 1, default=100
        Landmarks: that many rows of the data ``fit`` sees, drawn without replacement.
    random_state : int, numpy.random.Generator or None

    Notes
    -----
    With landmarks L and K_LL = U S U^T: z(x) = k(x, L) U S^-1/2 U^T (eigenvalues
    below 1e-12 of the largest dropped), so z(a).z(b) = k(a, L) K_LL^+ k(L, b),
    exact when a or b is a landmark and, with every row a landmark, K itself.
    """

    def __init__(self, kernel="rbf", gamma=None, degree=3, coef0=0.0, n_components=100,
                 random_state=None):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.n_components = n_components
        self.random_state = random_state

    def _k(self, X, L, sl):
        return kernel_from_dots(np.asarray(X @ L.T.toarray() if issparse(L) else X @ L.T),
                                _sqnorms(X)[:, None], sl[None, :], self.kernel, self.gamma_,
                                self.degree, self.coef0)

    def fit(self, X, y=None):
        _params.validate("Nystroem", {"kernel": _params.Choice("rbf", "poly", "linear"),
                                      "n_components": _params.Int(1)},
                         {"kernel": self.kernel, "n_components": self.n_components})
        X = _rows(X)
        rng = np.random.default_rng(self.random_state)
        m = min(self.n_components, X.shape[0])
        self.gamma_ = 1.0 / X.shape[1] if self.gamma is None else float(self.gamma)
        self.landmarks_ = X[np.sort(rng.choice(X.shape[0], m, replace=False))]
        self.landmark_sqnorms_ = _sqnorms(self.landmarks_)
        S, U = np.linalg.eigh(self._k(self.landmarks_, self.landmarks_,
                                      self.landmark_sqnorms_))
        keep = S > 1e-12 * max(S.max(), 0.0)
        self.normalization_ = (U[:, keep] / np.sqrt(S[keep])) @ U[:, keep].T
        return self

    def transform(self, X):
        return self._k(_rows(X), self.landmarks_, self.landmark_sqnorms_) @ self.normalization_

    def fit_transform(self, X, y=None):
        return self.fit(X).transform(X)


#: The parameters ``cwkit.make(name, kernel_approx=...)`` adds to a linear rule's.
APPROX_PARAMS = {"kernel_approx": "rff", "gamma": None, "n_components": 100}

# (the random features' frequencies have the scale sqrt(2 gamma), finite up to here)
_GAMMA_MAX = np.finfo(float).max / 2
_GAMMA = _params.Real(0.0, _GAMMA_MAX, open_lo=True)

_APPROX_CONSTRAINTS = {
    "kernel_approx": _params.Choice("rff", "nystroem"),
    "gamma": _params.Optional(_GAMMA, "1 / (n_features X.var())"),
    "n_components": _params.Int(1),
}


class ApproxFeatures:
    """A linear rule learning from approximate RBF-kernel features of the rows.

    ``cwkit.make(name, kernel_approx="rff" | "nystroem", gamma=..., n_components=...)``
    for any linear rule: every row (fit, partial_fit, decision_function, predict,
    predict_proba) is mapped by :class:`RandomFourierFeatures` ([RR07]) or
    :class:`Nystroem` (RBF kernel, [WS01]) before the rule sees it, so the rule's
    weights live in the ``n_components``-dimensional feature space (``coef_`` has
    ``n_components`` columns; ``n_features_in_`` is the raw width).

    Parameters (added to the rule's)
    --------------------------------
    kernel_approx : {"rff", "nystroem"}
    gamma : float > 0 or None, default=None
        The RBF width, k(a, b) = exp(-gamma ||a - b||^2).  None: scikit-learn's
        ``"scale"``, 1 / (n_features X.var()) over the rows of the first ``fit`` /
        ``partial_fit`` (every entry's variance), as the exact kernel forms choose it;
        kept as ``gamma_``.
    n_components : int >= 1, default=100
        Random features, or Nyström landmarks (at most the rows of the first call).

    Notes
    -----
    The map is drawn once, from the rows of ``fit`` (or of the first ``partial_fit``)
    and a seed from ``random_state``: the width, the seed, the raw width and, for
    Nyström, the landmark rows are the fitted attributes ``gamma_``, ``approx_seed_``,
    ``approx_n_features_`` and ``landmarks_``, kept by :func:`cwkit.save` in the model
    file's metadata (the random features are redrawn from the seed on loading; no
    pickle).  Cost per row
    O(n_components nnz) for the map plus the linear rule's O(n_components).
    """

    _fitted = {
        "n_features_in_": ("int", "The raw width, fixed by the first call (the map knows "
                           "no other features: wider rows are refused by ``partial_fit`` "
                           "and cut off when scored; narrower ones are padded with zeros)."),
        "coef_": ("ndarray of shape (1, n_components) or (n_classes, n_components)",
                  "The weights of the mapped features."),
        "gamma_": ("float", "The RBF width the map is drawn for: ``gamma``, or what None "
                   "chose from the first call's rows (a model file written before "
                   "``gamma_`` was kept: 1 / n_features, None's value then)."),
        "approx_seed_": ("int", "The seed the random features are drawn from."),
        "approx_n_features_": ("int", "The raw width the map was drawn for."),
        "landmarks_": ("list of lists", "The Nystroem landmark rows (empty for random "
                       "Fourier features)."),
    }


    _sparse_intercept_scaling = 1.0     # the mapped rows are dense
    _model_reads_the_rows = False       # the map reads them first

    def _validate_params(self):
        _params.validate(type(self).__name__, _APPROX_CONSTRAINTS,
                         {k: getattr(self, k) for k in APPROX_PARAMS})
        super()._validate_params()

    def _resolve(self, params):
        super()._resolve(params)
        if hasattr(self, "gamma_"):
            params["gamma"] = self.gamma_

    def _build_map(self):
        d, gamma = self.approx_n_features_, self.gamma_
        if self.kernel_approx == "rff":
            fmap = RandomFourierFeatures(gamma, self.n_components, self.approx_seed_)
            return fmap.fit(np.zeros((0, d)))
        fmap = Nystroem("rbf", gamma, n_components=len(self.landmarks_))
        return fmap.fit(np.asarray(self.landmarks_, dtype=np.float64).reshape(-1, d))

    def _choose(self, rows, n_classes):
        super()._choose(rows, n_classes)
        # (None: "scale", at most the bound of gamma, so that sqrt(2 gamma) stays finite)
        self.gamma_ = (min(scale_gamma(rows.X), _GAMMA_MAX) if self.gamma is None
                       else float(self.gamma))
        self.approx_seed_ = int(np.random.default_rng(self.random_state).integers(SEEDS))
        self.approx_n_features_ = int(rows.n_features)
        self.landmarks_ = []
        if self.kernel_approx == "nystroem":
            X = _rows(rows.X)
            rng = np.random.default_rng(self.approx_seed_)
            m = min(self.n_components, X.shape[0])
            pick = np.sort(rng.choice(X.shape[0], m, replace=False))
            L = X[pick]
            bad = ~np.isfinite(_sqnorms(L))
            if bad.any():    # every row's features would be NaN: name this one
                raise self._not_finite(int(pick[np.argmax(bad)]),
                                       "squared norm, drawn as a Nystroem landmark, is")
            self.landmarks_ = (L.toarray() if issparse(L) else L).tolist()

    def _choices(self):
        return {**super()._choices(), "gamma_": self.gamma_, "approx_seed_": self.approx_seed_,
                "approx_n_features_": self.approx_n_features_, "landmarks_": self.landmarks_}

    def _restore_choices(self, saved):
        """The choices of a model file, checked; the map is drawn by `_reset`, once its
        size is known to fit in memory."""
        super()._restore_choices(saved)
        seed, d = saved.get("approx_seed_"), saved.get("approx_n_features_")
        landmarks = saved.get("landmarks_", [])
        if not (_params.Int(0, SEEDS - 1).check(seed) and _params.Int(1).check(d)
                and isinstance(landmarks, list)):
            raise ValueError(f"the feature map's seed (an integer in [0, {SEEDS - 1}]) and "
                             "width (an integer >= 1) are missing or out of range")
        if self.kernel_approx == "nystroem" and not (
                landmarks and len(landmarks) <= self.n_components
                and all(isinstance(r, list) and len(r) == d
                        and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                and np.isfinite(v) for v in r) for r in landmarks)):
            raise ValueError("the Nystroem landmarks must be 1 to n_components="
                             f"{self.n_components} lists of {d} finite numbers")
        if self.kernel_approx == "rff" and landmarks:
            raise ValueError("random Fourier features have no landmarks")
        # a file written before gamma_ was kept: its gamma, or None's 1 / n_features then
        gamma = saved.get("gamma_", 1.0 / d if self.gamma is None else self.gamma)
        if not _GAMMA.check(gamma):
            raise ValueError(f"gamma_ must be a number in (0, {_GAMMA_MAX:g}], got "
                             f"{gamma!r:.40}")
        self.approx_seed_, self.approx_n_features_, self.landmarks_ = seed, d, landmarks
        self.gamma_ = float(gamma)
        self.__dict__.pop("_feature_map", None)     # drawn again for these choices

    def _reset(self, classes, n_features):
        """Draw the feature map (checking that it and the model fit in memory first),
        then allocate the model."""
        if self.approx_n_features_ != n_features:
            raise ValueError(f"the feature map's width approx_n_features_="
                             f"{self.approx_n_features_} is not n_features_in_={n_features}")
        d, m = n_features, self._n_mapped()
        size = (d + 1) * m if self.kernel_approx == "rff" else m * d + 3 * m * m
        check_size(self._spec(len(classes), n_features), size,
                   f"a smaller n_components than {m} (the feature map holds {size} values)")
        self._feature_map = self._build_map()
        super()._reset(classes, n_features)

    def _widen(self, n_features):
        """Refuse rows wider than the map was drawn for (its random features, or its
        landmarks, know no other features); narrower rows are padded with zeros."""
        if n_features > self.n_features_in_:
            raise ValueError(
                f"X has {n_features} features, but the {self.kernel_approx} feature map of "
                f"{type(self).__name__} was drawn for {self.n_features_in_}: a kernel_approx "
                "model's width is fixed by its first call (give it the final width then, "
                "e.g. with n_features= of cwkit.iter_svmlight)")

    def _n_mapped(self):
        return self.n_components if self.kernel_approx == "rff" else len(self.landmarks_)

    def _spec(self, n_classes, n_features):
        return super()._spec(n_classes, self._n_mapped())

    def _dims(self):
        """The width of the weights (coef_, coef_var_, ...): the mapped features'."""
        self._check_fitted()
        return self._n_mapped()

    def _mapped(self, rows):
        fmap = self.__dict__.get("_feature_map")
        if fmap is None:        # choices restored by cwkit.distributed.fit, map not drawn
            fmap = self._feature_map = self._build_map()
        with np.errstate(over="ignore", invalid="ignore"):    # reported below
            Z = fmap.transform(rows.X)
        bad = ~np.isfinite(Z).all(axis=1)
        if bad.any():
            kind = "Nystroem" if self.kernel_approx == "nystroem" else "random Fourier"
            raise self._not_finite(int(np.argmax(bad)), f"{kind} features are")
        return as_rows(Z)

    def _not_finite(self, row, what):
        """The error for row `row` of a call, whose `what` ("... is") overflowed."""
        reason = (f"this example's {what} not finite (feature values too large for float64 "
                  "arithmetic); scale the features")
        return ModelError(f"{self._name()}: row {row}: {reason}", row=row, reason=reason)

    def _run(self, rows, codes, order, clean=None, weights=None):
        return super()._run(self._mapped(rows), codes, order, clean, weights)

    def _one_row(self, X, y):
        """None: a single row takes partial_fit's general path, whose `_run` maps it (the
        linear rules' single-row path hands the raw row to the model)."""
        return None

    def _one_named(self, x, y, fmap):
        """None, as `_one_row`: ``learn_one`` takes the general path."""
        return None

    def _rows(self, X):
        return self._mapped(super()._rows(X))


def approx_form(cls):
    """`cls` (a linear rule) learning from approximate kernel features (a subclass
    with the parameters of :class:`ApproxFeatures` added, keyword-only), made once."""
    made = globals().get(cls.__name__ + "Approx")
    if made is not None and cls in made.__bases__:
        return made
    sig = inspect.signature(cls.__init__)
    extra = [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=v)
             for k, v in APPROX_PARAMS.items()]

    def __init__(self, **params):
        for k, v in APPROX_PARAMS.items():
            setattr(self, k, params.pop(k, v))
        cls.__init__(self, **params)

    __init__.__signature__ = sig.replace(parameters=list(sig.parameters.values()) + extra)
    name = cls.__name__ + "Approx"
    form = type(name, (ApproxFeatures, cls),
                {"__init__": __init__, "__module__": __name__, "__qualname__": name,
                 "__doc__": f"{cls.__name__} on approximate kernel features (see "
                 ":class:`cwkit.kernel_approx.ApproxFeatures`)."})
    # a module attribute, so that pickle (joblib, Dask) finds the class by its name
    globals()[name] = form
    return form


def __getattr__(name):
    """A registered rule's form on approximate kernel features by its name
    (``AROWApprox``), made on first use: unpickling one (joblib, Dask's workers) in a
    process that has not yet made it finds its class so."""
    if name.endswith("Approx"):
        from . import gaussian, l1pa, linear, minibatch

        for module in (linear, gaussian, minibatch, l1pa):
            cls = vars(module).get(name[:-len("Approx")])
            if isinstance(cls, type) and vars(cls).get("_names"):
                return approx_form(cls)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
