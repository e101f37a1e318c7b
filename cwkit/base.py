"""The estimator protocol shared by every cwkit classifier.

scikit-learn conventions without depending on scikit-learn: ``__init__`` only
stores its arguments, ``get_params``/``set_params`` read the signature,
``fit`` resets, ``partial_fit`` makes exactly one pass in the given order.
"""
import copy
import functools
import inspect
import sys
import textwrap
import threading
import warnings
from dataclasses import dataclass, field

import numpy as np

from . import _core, _params
from ._rowdata import Rows, as_rows, one_csr_row, unchecked_rows
from ._weights import ClassWeight, check_class_weight, check_sample_weight, class_table, row_weights
from .models.calibration import Calibration
from .models.collapse import VarianceCollapseWarning, warning_text
from .models.factory import build_model
from .models.growth import narrowed, widen
from .models.interface import NO_ROW, ModelSpec, raise_status
from .named import _SCALAR_LABELS, NamedFeatures

#: Constraints of the parameters every estimator has.
COMMON = {
    "fit_intercept": _params.Bool(),
    "intercept_scaling": _params.Optional(_params.POSITIVE, "1 on dense rows, 0.1 on sparse "
                                          "ones", special="auto"),
    "n_passes": _params.Int(1),
    "shuffle": _params.Bool(),
    "random_state": _params.Seed(),
    "multiclass": _params.Choice("top1", "topk", "ovr"),
    "k": _params.Int(1),
    "average": _params.Optional(_params.Bool(), "averaged for the rules averaging helps: "
                                "every linear rule but AROW, AROW-H and NHERD",
                                special="auto"),
    "class_weight": ClassWeight(),
}


#: The choices the data settle ("auto" parameters) are judged on the first rows:
#: rows are dense when at least AUTO_DENSITY of their entries are nonzero.
AUTO_DENSITY = 0.1
#: The number of first rows of the first fit / partial_fit the density is judged on.
AUTO_ROWS = 1000


def _check_rounds(owner, n_passes, n_rows):
    """ValueError unless `n_passes` passes over `n_rows` rows make at most ``SSIZE_MAX``
    rounds, the largest round number the compiled core holds."""
    if n_passes * n_rows > _params.SSIZE_MAX:
        raise ValueError(f"{owner}: n_passes={n_passes} passes over {n_rows} rows make more "
                         f"rounds than the compiled core counts ({_params.SSIZE_MAX}); at "
                         f"most {_params.SSIZE_MAX // n_rows} passes over {n_rows} rows")


def check_nonempty(rows):
    """ValueError (scikit-learn's words) unless `rows` has at least one row and one
    feature."""
    shape = (rows.n_rows, rows.n_features)
    if rows.n_rows == 0:
        raise ValueError(f"Found array with 0 sample(s) (shape={shape}) while a minimum "
                         "of 1 is required.")
    if rows.n_features == 0:
        raise ValueError(f"Found array with 0 feature(s) (shape={shape}) while a minimum "
                         "of 1 is required.")


def dense_rows(rows):
    """Whether the first ``AUTO_ROWS`` of `rows` have at least ``AUTO_DENSITY`` nonzero
    entries (counted in their values: a dense array and its CSR copy agree)."""
    return rows.density(AUTO_ROWS) >= AUTO_DENSITY


def auto_intercept_scaling(rows, sparse=0.1):
    """What ``intercept_scaling="auto"`` chooses: 1 on dense rows, `sparse` on sparse ones.

    The measurements behind it are in docs/choosing.md.
    """
    return 1.0 if dense_rows(rows) else sparse


@dataclass(frozen=True)
class Registration:
    """How an estimator family offers one algorithm name (see ``cwkit.registry``).

    Attributes
    ----------
    fixed : dict
        The parameters the name fixes (e.g. ``{"variant": "pa1"}``).
    description : str
    params : tuple of str
        The tunable hyper-parameters of this name.
    """

    fixed: dict
    description: str
    params: tuple = field(default=())


#: ``partial_fit`` on one row of a two-class estimator: the row's order, and its
#: target (+-1) and class code by whether its label is ``classes_[1]`` (read-only).
_ORDER_1 = np.zeros(1, dtype=np.intp)
_TARGET_1 = (np.array([-1.0]), np.array([1.0]))
_CODE_1 = (np.zeros(1, dtype=np.intp), np.ones(1, dtype=np.intp))
for _a in (_ORDER_1, *_TARGET_1, *_CODE_1):
    _a.setflags(write=False)
#: The label dtypes compared as scalars on that path (bool, numbers, strings).
_LABEL_KINDS = frozenset("biufUS")
_NO_INDEX = np.empty(0, dtype=np.int32)

#: The fitted attributes of every estimator: name -> its numpydoc entry (type, then
#: what it is), written into the "Attributes" section of each estimator's docstring
#: (``OnlineClassifier.__init_subclass__``); a family or mixin adds its own in ``_fitted``.
FITTED = {
    "classes_": ("ndarray of shape (n_classes,)", "The labels, sorted: those of the "
                 "first call's y, or its ``classes``."),
    "n_features_in_": ("int", "The width of the widest rows learnt so far: ``partial_fit`` "
                       "on wider rows grows the model, each new feature at the rule's "
                       "prior (weight 0, variance ``a``). Rows of any width are scored: "
                       "features beyond it weigh 0, missing ones are zeros."),
    "t_": ("int", "Rounds (rows learnt) since the last ``fit``, over its passes and every "
           "``partial_fit`` call since."),
    "mistakes_": ("int", "Progressive mistakes (each row predicted before it is learnt) "
                  "since the last ``fit``, added up over passes and ``partial_fit`` calls "
                  "as ``t_`` is."),
    "n_updates_": ("int", "Rounds that changed the model since the last ``fit``, added up "
                   "as ``mistakes_``."),
    "last_mistakes_": ("int", "The mistakes of the last call alone (``fit``: of all its "
                       "passes)."),
    "last_n_updates_": ("int", "The updates of the last call alone."),
    "class_counts_": ("ndarray of shape (n_classes,)", "With ``class_weight=\"balanced\"``: "
                      "the rows of each class seen since the last ``fit`` (of every "
                      "``partial_fit`` call so far), which the balanced weights come "
                      "from; absent otherwise."),
    "intercept_scaling_": ("float", "The value of the augmented constant feature: "
                           "``intercept_scaling``, or what ``\"auto\"`` chose on the first "
                           "rows."),
    "coef_": ("ndarray of shape (1, n_features_in_) or (n_classes, n_features_in_)",
              "The weights (their mean over the rounds with ``average=True``)."),
    "intercept_": ("ndarray of shape (1,) or (n_classes,)", "The intercepts: the weight "
                   "of the constant feature times ``intercept_scaling_``."),
}


def attributes_section(entries):
    """The numpydoc "Attributes" section of `entries` (name -> (type, text))."""
    lines = ["Attributes", "----------"]
    for name, (kind, text) in entries.items():
        lines.append(f"{name} : {kind}")
        lines.extend("    " + line for line in textwrap.wrap(text, 80))
    return "\n".join("    " + line if line else "" for line in lines) + "\n\n"


def _with_attributes(doc, entries):
    """`doc` with its "Attributes" section, before its Notes (or Examples, or at its end)."""
    doc = doc or ""
    for section in ("    Notes\n    -----", "    Examples\n    --------"):
        at = doc.find(section)
        if at >= 0:
            return doc[:at] + attributes_section(entries) + doc[at:]
    return doc.rstrip() + "\n\n" + attributes_section(entries) + "    "


#: Guards the lazy creation of the estimators' locks.
_LOCK_CREATION = threading.Lock()


def serialised(method):
    """Run `method` holding the estimator's lock (see :class:`OnlineClassifier`)."""
    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with self.__dict__.get("_lock") or self._state_lock():
            return method(self, *args, **kwargs)
    return locked


def _labels_1d(y, n_rows):
    if y is None:
        raise ValueError("this classifier requires y to be passed, but the target y is None")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected; "
                      "it is raveled to shape (n_samples,)",
                      _sklearn_class("DataConversionWarning", UserWarning), stacklevel=4)
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (one label per row), got shape {y.shape}")
    if y.shape[0] != n_rows:
        raise ValueError(f"X has {n_rows} rows but y has {y.shape[0]} labels")
    return y


def check_labels(y, n_rows):
    """Labels as a 1-D array; rejects continuous targets and length mismatches."""
    y = _labels_1d(y, n_rows)
    if y.dtype.kind == "f":
        if not np.isfinite(y).all():
            raise ValueError("y contains NaN or inf")
        if (y != np.round(y)).any():
            raise ValueError("Unknown label type: continuous values in y; a classifier "
                             "needs discrete class labels (for real-valued targets, use a "
                             "regressor: cwkit.make_regressor(name), name one of pa, pa1, "
                             "pa2, arow)")
    if y.dtype.kind == "c":
        raise ValueError("Unknown label type: complex values in y")
    return y


class OnlineClassifier(NamedFeatures):
    """Base class: labels, passes, counters and the model.

    Subclasses set ``_constraints`` (their own parameters) and ``_names`` (the
    algorithm names they register: name -> :class:`Registration`), and
    implement ``_model_options()``, the fields of their
    :class:`~cwkit.models.interface.ModelSpec` (shape, rule, hyper-parameters).

    Notes
    -----
    Thread safety: an estimator may be shared by threads.  ``fit``,
    ``partial_fit``, ``decision_function``, ``predict``, ``predict_proba``,
    ``predict_confidence``, ``score``, the fitted attributes (``coef_``, ``intercept_``, ...),
    pickling and :func:`cwkit.save` hold the estimator's lock (one per estimator, created on
    first use, neither a parameter nor pickled), so calls from several threads
    run one after the other, each as it would alone: the state is that of
    the same calls made serially in the order they took the lock.  Different
    estimators never wait for each other, and the compiled passes release
    the GIL, so threads training different estimators run in parallel.  An
    array returned by a fitted attribute may be a view of the state that a
    later update changes: copy it to keep it.
    """

    _constraints = {}
    _names = {}
    _estimator_type = "classifier"
    #: Fitted attributes of a family or mixin beyond ``FITTED`` (same form; None: one
    #: it does not have).
    _fitted = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        entries = dict(FITTED)
        for klass in reversed(cls.__mro__):
            entries.update(vars(klass).get("_fitted", {}))
        entries = {k: v for k, v in entries.items() if v is not None}   # None: not here
        if "Attributes\n    ------" not in (cls.__doc__ or ""):
            cls.__doc__ = _with_attributes(cls.__doc__, entries)
    #: What ``intercept_scaling="auto"`` chooses on sparse rows.
    _sparse_intercept_scaling = 0.1

    # -- parameters ---------------------------------------------------------
    @classmethod
    def _param_names(cls):
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def _state_lock(self):
        """The lock serialising this estimator's updates and reads (created on first use)."""
        lock = self.__dict__.get("_lock")
        if lock is None:
            with _LOCK_CREATION:
                lock = self.__dict__.setdefault("_lock", _core.StateLock())
        return lock

    def __getstate__(self):
        with self._state_lock():
            state = dict(self.__dict__)
            if "_model" in state:   # a snapshot: no thread updates it while it is pickled
                state["_model"] = copy.deepcopy(state["_model"])
        state.pop("_lock", None)   # a lock is not pickled: the copy makes its own
        state.pop("_one", None)    # (the one-row path of named rows: pointers into the state)
        return state

    def get_params(self, deep=True):
        return {name: getattr(self, name) for name in self._param_names()}

    def resolved_params(self):
        """``get_params()`` with the values the estimator settles itself: ``average``
        as True or False (never "auto") and, once fitted, what the first rows chose
        (``intercept_scaling``, ``covariance``) and the defaults a None stands for
        (``eta`` of CW, ``gamma`` of a kernel).

        Examples
        --------
        >>> import cwkit
        >>> cw, arow = cwkit.make("cw"), cwkit.make("arow")
        >>> cw.resolved_params()["eta"], arow.resolved_params()["average"]
        (0.9, False)
        """
        params = self.get_params()
        params["average"] = self._averaging()
        if hasattr(self, "intercept_scaling_"):
            params["intercept_scaling"] = self.intercept_scaling_
        self._resolve(params)
        return params

    def _resolve(self, params):
        """Put into `params` (of :meth:`resolved_params`) the values this family settles."""

    @classmethod
    def _file_params(cls, params):
        """A model file's recorded parameters (a dict) as this release takes them."""
        return params

    def set_params(self, **params):
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"{type(self).__name__}: unknown parameter {name!r}; "
                                 f"valid parameters are {', '.join(valid)}")
            setattr(self, name, value)
        return self

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def __sklearn_tags__(self):
        """scikit-learn's estimator tags (only called where scikit-learn is installed)."""
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags
        return Tags(estimator_type="classifier", target_tags=TargetTags(required=True),
                    classifier_tags=ClassifierTags(poor_score=self._poor_score()),
                    input_tags=InputTags(sparse=True))

    def _poor_score(self):
        """True for rules whose last iterate is noisy by design (scikit-learn's tag)."""
        return False

    def _validate_params(self):
        _params.validate(type(self).__name__, {**COMMON, **self._constraints}, self.get_params())

    # -- fitting ------------------------------------------------------------
    @serialised
    def fit(self, X, y, sample_weight=None):
        """Reset, then make ``n_passes`` passes (in the given order unless ``shuffle=True``).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Any two (or more, see ``multiclass``) distinct labels.
        sample_weight : array-like of shape (n_samples,), optional
            The importance weight of each row, finite and >= 0 (multiplied by
            ``class_weight``'s); what a weight means for each rule is defined in
            docs/algorithms.md, "Importance weights".  Weights of 1 give the model
            of no weights, bit for bit; a row of weight 0 is predicted (and
            counted) but not learnt.

        Returns
        -------
        self
        """
        self._validate_params()
        rows = as_rows(X)
        y = check_labels(y, rows.n_rows)
        sample_weight = check_sample_weight(sample_weight, rows.n_rows)
        check_nonempty(rows)
        _check_rounds(type(self).__name__, self.n_passes, rows.n_rows)
        classes, codes = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least 2 classes; "
                             f"y holds only one class ({classes[0].item()!r})")
        check_class_weight(self.class_weight, classes)
        weights, counts = self._row_weights(sample_weight, codes, classes)
        if weights is not None and not weights.any():
            raise ValueError("every sample weight is zero (sample_weight times class_weight): "
                             "fit would learn nothing")
        self._choose(rows, len(classes))
        self._reset(classes, rows.n_features)
        codes = self._encode(y)
        self.__dict__.pop("class_counts_", None)
        if counts is not None:
            self.class_counts_ = counts
        rng = np.random.default_rng(self.random_state)
        collapsed = None
        for _ in range(self.n_passes):
            order = rng.permutation(rows.n_rows) if self.shuffle else np.arange(rows.n_rows)
            _, mistakes, updates, row = self._run(rows, codes, order, weights=weights)
            collapsed = row if collapsed is None else collapsed
            self._count(mistakes, updates)
        self.last_mistakes_, self.last_n_updates_ = self.mistakes_, self.n_updates_
        self._warn_collapse(collapsed)
        return self

    #: One online pass over the rows in the given order (one row, one round): one
    #: compiled call for a single CSR row (``cwkit._core.partial_fit``), else
    #: `_partial_fit`.
    partial_fit = _core.partial_fit

    @serialised
    def _partial_fit(self, X, y, classes=None, sample_weight=None, *, y_clean=None):
        """``partial_fit`` where its compiled round did not take the call: a single row
        of a fitted two-class estimator (`_one_row`), the first call on a CSR matrix
        the pass checks, or any other input."""
        weighted = sample_weight is not None or self.class_weight is not None
        done = self._one_row(X, y) if y_clean is None and not weighted else None
        if done is None and not weighted and not hasattr(self, "classes_"):
            done = self._first_rows_checked_by_the_pass(X, y, classes, y_clean)
        if done is None:     # any other input
            done = self._partial_fit_rows(X, y, classes, sample_weight, y_clean)
        rounds, mistakes, updates, collapsed = done
        if rounds == 1 and self._model_reads_the_rows:   # the compiled path of the next
            self._one_path(self.__dict__.get("feature_map_"))   # rows (_core.partial_fit)
        self._count(mistakes, updates, last=True)
        self._warn_collapse(collapsed)
        return self

    #: Whether the rows of partial_fit go to the model as they are (not through a map
    #: that reads them first), so that the model's pass may check them.
    _model_reads_the_rows = True

    def _first_rows_checked_by_the_pass(self, X, y, classes, y_clean):
        """The first ``partial_fit`` call on a CSR matrix whose rows the pass checks as
        it reads them (:func:`cwkit._rowdata.unchecked_rows`): ``_partial_fit_rows``'s
        result, or None, the estimator as it was before the call, for another X, or
        when the pass stopped at a row that is not valid or anything else failed (the
        general path then checks the input in its order and says what is wrong).

        The model and all it holds are made by this call: the estimator as it was is
        its attributes before the call, which undo the call at no cost.
        """
        rows = unchecked_rows(X) if self._model_reads_the_rows else None
        if rows is None:
            return None
        saved = dict(self.__dict__)
        try:
            return self._partial_fit_rows(X, y, classes, None, y_clean, rows)
        except Exception:    # (raised again by the general path, in its order)
            self.__dict__.clear()
            self.__dict__.update(saved)
            return None

    def _partial_fit_rows(self, X, y, classes, sample_weight, y_clean, rows=None):
        """``partial_fit``'s pass over the rows of X (any input); returns ``_run``'s
        result.  `rows`: X's rows checked by the pass (``RowView.unchecked``), for a
        first call; checked here unless the model checks them."""
        first = not hasattr(self, "classes_")
        if first:
            self._validate_params()
        if rows is None:
            rows = as_rows(X, owner=type(self).__name__)
        if not first and rows.n_features < self.n_features_in_:
            rows = _padded(rows, self.n_features_in_)
        # later calls only need the shape: _encode rejects labels outside classes_
        y = check_labels(y, rows.n_rows) if first else _labels_1d(y, rows.n_rows)
        sample_weight = check_sample_weight(sample_weight, rows.n_rows)
        if first:
            labels = _distinct(y if classes is None else np.asarray(classes))
            if classes is not None and not np.isin(y, labels).all():
                raise ValueError("y holds labels that are not in `classes`: "
                                 f"{np.setdiff1d(y, labels)[:5].tolist()!r}")
            if len(labels) < 2:
                raise ValueError(f"{type(self).__name__}.partial_fit: the first call saw "
                                 f"only the labels {labels.tolist()!r}; pass classes=[...] "
                                 "with every label the stream may hold (at least 2)")
            check_class_weight(self.class_weight, labels)
            self._choose(rows, len(labels))
            self._reset(labels, rows.n_features)
        else:
            check_class_weight(self.class_weight, self.classes_)
        codes = self._encode(y)
        clean = None if y_clean is None else self._encode(_labels_1d(y_clean, rows.n_rows))
        weights, counts = self._row_weights(sample_weight, codes, self.classes_,
                                            self.__dict__.get("class_counts_"))
        self._widen(rows.n_features)      # every check passed: the state may change
        if counts is not None:
            self.class_counts_ = counts
        if rows.unchecked and not self._model.checks_rows:
            rows = as_rows(X, owner=type(self).__name__)
        return self._run(rows, codes, np.arange(rows.n_rows), clean=clean, weights=weights)

    def _count(self, mistakes, updates, last=False):
        """Add a pass's counts to the counters (``last``: they are also the call's)."""
        self.mistakes_ += mistakes
        self.n_updates_ += updates
        if last:
            self.last_mistakes_, self.last_n_updates_ = mistakes, updates

    def _widen(self, n_features):
        """Grow the model to `n_features` features when wider than any seen, each new
        feature at the rule's prior (``cwkit.models.growth``)."""
        if n_features > self.n_features_in_:
            widen(self._model, n_features)
            self.n_features_in_ = n_features

    def _pass(self, rows, y, order):
        """One pass over validated `rows` in `order` (`y`: every row's label, each one of
        ``classes_``), counted as ``partial_fit`` counts its pass: a worker's round in
        :func:`cwkit.distributed.fit`, over rows it validated once, shuffled without
        copying them."""
        _, mistakes, updates, collapsed = self._run(rows, self._encode(y), order)
        self._count(mistakes, updates, last=True)
        self._warn_collapse(collapsed)

    def _one_row(self, X, y):
        """partial_fit's pass over one CSR row of a fitted two-class estimator (the
        single-example stream), or None, having done nothing, for other input.

        The checks are those of the general path, made on the row in one compiled
        pass (:func:`cwkit._rowdata.one_csr_row`) and on the label as a scalar; what
        they do not accept (anything invalid included) goes the general path, which
        reports it.  The pass and its bookkeeping are those of ``_run``.
        """
        if type(y) is not np.ndarray:
            y = np.asarray(y)
        if y.shape != (1,) or y.dtype.kind not in _LABEL_KINDS:
            return None
        positive = self._one_label(y[0])
        if positive is None:
            return None
        scores = np.empty(1)
        # a row wider than any seen widens the model once it has passed the checks
        width = max(self.n_features_in_, getattr(X, "shape", (0, 0))[-1])
        rows = one_csr_row(X, width, scores)
        if rows is None:
            return None
        self._widen(width)
        return self._one_pass(rows, scores, positive)

    def _one_label(self, label):
        """Whether the scalar `label` is the positive class of a fitted two-class
        estimator whose model takes single rows; None: not such a label or estimator."""
        classes = self.__dict__.get("classes_")
        if classes is None or len(classes) != 2 or self._model.K is not None:
            return None
        positive = bool(label == classes[1])
        if not (positive or label == classes[0]):
            return None
        return positive

    def _one_pass(self, rows, scores, positive):
        """The pass of `_one_row` over its validated `rows`, whose score goes to
        `scores`, of the class `positive`."""
        result = self._model.run(rows, _TARGET_1[positive], _ORDER_1, self._bias)
        return self._account(result, scores, _CODE_1[positive])

    def _one_named(self, x, y, fmap):
        """``learn_one``'s round on the named row `x` of label `y`, hashed by `fmap`
        (a :class:`cwkit.features.FeatureHasher`) in one compiled call
        (``cwkit._core.named_one``), as ``partial_fit`` learns the row's CSR matrix;
        None, having done nothing, for anything else (which ``learn_one``'s general
        path takes, reporting what is wrong)."""
        if (type(y) not in _SCALAR_LABELS or self.class_weight is not None
                or "classes_" not in self.__dict__ or self._model.reads_matrix
                or self.n_features_in_ != fmap.n_features):
            return None
        # the classes by label (Python's == and hash, as numpy's ==), and the score's slot
        classes, codes, scores = self.__dict__.get("_one_named_cache", (None, None, None))
        if classes is not self.classes_:
            positive = self._one_label(y)     # (a two-class model that takes single rows)
            if positive is None:
                return None
            classes, scores = self.classes_, np.empty(1)
            codes = {classes[0].item(): False, classes[1].item(): True}
            self._one_named_cache = classes, codes, scores
        positive = codes.get(y)
        if positive is None:
            return None
        view = _core.named_one(x, fmap.hash_bits, fmap.signed, scores)
        if view is None:
            return None
        done = self._one_pass(Rows(None, view, 1, self.n_features_in_), scores, positive)
        _, mistakes, updates, collapsed = done
        self._count(mistakes, updates, last=True)
        self._warn_collapse(collapsed)
        return self

    def _named_scores(self, x, fmap):
        """``decision_function`` of the named row `x` (hashed or in the vocabulary
        `fmap`) from a copy of the model narrowed to the row's features
        (``cwkit.models.growth.narrowed``): the same scores, bit for bit, without the
        whole weight vector; None, having done nothing, where the model cannot be
        narrowed or the row is not valid (``predict_one``'s general path takes it)."""
        try:
            data, indices, _ = fmap._arrays([x], False, "x")
        except (TypeError, ValueError):
            return None
        keep = indices < self.n_features_in_     # (a vocabulary grown since: unseen)
        data, indices = data[keep], indices[keep]
        sub = narrowed(self._model, indices)
        if sub is None:
            return None
        nnz = len(indices)
        view = _core.RowView(data, np.arange(nnz, dtype=np.int32),
                             np.array([0, nnz], dtype=np.int64), _NO_INDEX, nnz)
        return self._finite(sub.scores(Rows(None, view, 1, nnz), self._bias))

    def _choose(self, rows, n_classes):
        """Settle, from the first rows of a ``fit`` or of the first ``partial_fit``, the
        choices a parameter leaves to the data (``covariance="auto"``); stored as fitted
        attributes, kept by :func:`cwkit.save`: here ``intercept_scaling_``."""
        self.intercept_scaling_ = (auto_intercept_scaling(rows, self._sparse_intercept_scaling)
                                   if self.intercept_scaling == "auto"
                                   else float(self.intercept_scaling))

    def _choices(self):
        """The choices `_choose` made, by attribute name (what :func:`cwkit.save` records)."""
        counts = self.__dict__.get("class_counts_")
        return {"intercept_scaling_": self.intercept_scaling_,
                **({} if counts is None else {"class_counts_": counts.tolist()})}

    def _restore_choices(self, saved):
        """Set the choices of a loaded model from `saved` (its :meth:`_choices`)."""
        value = saved.get("intercept_scaling_", self.intercept_scaling)
        if not _params.POSITIVE.check(value):
            raise ValueError(f"intercept_scaling_ must be a positive number, got {value!r:.40}")
        self.intercept_scaling_ = float(value)
        counts = saved.get("class_counts_")
        if counts is not None:
            if not (isinstance(counts, list) and all(
                    isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts)):
                raise ValueError(f"class_counts_ must be a list of counts, got {counts!r:.40}")
            self.class_counts_ = np.array(counts, dtype=np.int64)

    def _reset(self, classes, n_features):
        self.__dict__.pop("_one", None)      # (the one-row path of the model replaced)
        self.classes_ = classes
        self.n_features_in_ = n_features
        self.t_ = self.mistakes_ = self.n_updates_ = 0
        self.last_mistakes_ = self.last_n_updates_ = 0
        self._model = build_model(self._spec(len(classes), n_features))
        self._calibration = Calibration(len(classes))

    def _spec(self, n_classes, n_features):
        """The spec of this estimator's model, from its own parameters."""
        return ModelSpec(n_classes=n_classes, n_features=n_features, strategy=self.multiclass,
                         k=self.k, average=self._averaging(), name=self._name(),
                         owner=type(self).__name__, **self._model_options())

    #: What ``average="auto"`` resolves to for this family (docs/choosing.md, "Averaged
    #: or last iterate"): the mean of the weights is the better model for every rule
    #: measured but AROW, AROW-H and NHERD.
    _average_auto = True

    def _averaging(self):
        """Whether the model averages its weights: ``average`` resolved ("auto": the
        family's ``_average_auto``)."""
        if isinstance(self.average, str):
            return self._average_auto
        return bool(self.average)

    def _model_options(self):
        """The fields of the model's spec that the family sets (shape, rule, ...)."""
        raise NotImplementedError

    def _encode(self, y):
        """Class indices of y (a boolean "is classes_[1]" array for two classes)."""
        c = self.classes_
        if len(c) == 2:
            pos = y == c[1]
            bad = ~(pos | (y == c[0]))
            if bad.any():
                raise ValueError(f"label {y[np.flatnonzero(bad)[0]].item()!r} is not one of "
                                 f"the classes seen on the first call, {c.tolist()!r}")
            return pos
        codes = np.searchsorted(self.classes_, y)
        bad = (codes >= len(self.classes_)) | (self.classes_[np.minimum(
            codes, len(self.classes_) - 1)] != y)
        if bad.any():
            raise ValueError(f"label {y[np.flatnonzero(bad)[0]].item()!r} is not one of the "
                             f"classes seen on the first call, {self.classes_.tolist()!r}")
        return codes

    @property
    def _bias(self):
        return self.intercept_scaling_ if self.fit_intercept else 0.0

    def _row_weights(self, sample_weight, codes, classes, counts=None):
        """The importance weight of each row (``cwkit._weights``; None without any) of
        the classes `codes` (indices into `classes`), and the class counts: with
        ``class_weight="balanced"`` those of the rows seen before, `counts` (None:
        none), and these rows' (what ``class_counts_`` keeps), else `counts`."""
        if self.class_weight is None:
            return sample_weight, counts
        if isinstance(self.class_weight, str):
            seen = np.bincount(np.asarray(codes, dtype=np.intp), minlength=len(classes))
            counts = seen if counts is None else counts + seen
        return row_weights(sample_weight, class_table(self.class_weight, classes, counts),
                           codes), counts

    def _run(self, rows, codes, order, clean=None, weights=None):
        """One pass; returns (rounds, mistakes, updates, collapsed) and advances ``t_``.

        `collapsed` is the row after which a variance of a diagonal
        Gaussian-weight model newly collapsed, as the compiled pass noted it
        (``cwkit.models.collapse``), else None.  `clean`: codes of the labels the
        rounds are counted against (``Model.run_with``); `weights`: the rows'
        importance weights (None: 1).  The rounds' pre-update scores go to the
        calibration window of ``predict_proba``.
        """
        if weights is not None:
            rows = rows.weighted(weights)
        result = self._model.run_with(rows, self._target(codes), order, self._bias,
                                      scores=True,
                                      clean=None if clean is None else self._target(clean))
        return self._account(result, result.scores, np.asarray(codes, dtype=np.intp)[order])

    def _account(self, result, scores, codes):
        """The bookkeeping of a pass: ``t_``, its failure raised, the `scores` of its
        rounds (`codes`: their classes, in order) to the calibration window; ``_run``'s
        result."""
        self.t_ += result.rounds
        if result.status != _core.Status.OK:
            raise_status(result.status, result.pos, self._name(),
                         self._model.status_detail(result.status))
        self._calibration.add(scores, codes)
        collapsed = None if result.collapsed == NO_ROW else int(result.collapsed)
        return result.rounds, result.mistakes, result.updates, collapsed

    def _target(self, codes):
        """The labels the model learns: +-1 for two classes, else the class codes."""
        return np.where(codes, 1.0, -1.0) if len(self.classes_) == 2 else codes

    def _warn_collapse(self, row):
        if row is not None:
            warnings.warn(warning_text(type(self).__name__, self._name(), row),
                          VarianceCollapseWarning, stacklevel=3)

    def _name(self):
        """The registered name of this estimator (its class name if none matches)."""
        params = self.get_params()
        # the names a class declares itself: a subclass registers none of its parent's
        for name, registration in vars(type(self)).get("_names", {}).items():
            if all(params.get(k) == v for k, v in registration.fixed.items()):
                return name
        return type(self).__name__

    # -- prediction ---------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "classes_"):
            raise _not_fitted_error()(f"this {type(self).__name__} instance is not fitted "
                                      "yet; call fit or partial_fit first")

    def _rows(self, X):
        """The rows of X at the model's width: the features it has not seen are cut off
        (their weight is 0), those missing are zeros."""
        self._check_fitted()
        rows = as_rows(X, owner=type(self).__name__)
        d = self.n_features_in_
        if rows.n_features < d:
            return self._pad(rows, d)
        if rows.n_features > d:
            return as_rows(rows.X[:, :d])
        return rows

    def _pad(self, rows, d):
        """Rows narrower than the model's `d` features, padded with zero features."""
        return _padded(rows, d)

    @serialised
    def decision_function(self, X):
        """Scores: (n_samples,) for two classes (> 0 means ``classes_[1]``),
        (n_samples, n_classes) otherwise.

        Rows of any width: features beyond ``n_features_in_`` have not been seen and
        weigh 0; missing features are zeros (as for :meth:`predict`,
        :meth:`predict_proba` and ``predict_confidence``).
        """
        rows = self._rows(X)
        return self._finite(self._model.scores(rows, self._bias))

    @serialised
    def predict(self, X):
        """The class of each row (rows of any width, as :meth:`decision_function`)."""
        return self._labels(self.decision_function(X))

    def _labels(self, scores):
        """The classes of scores: ``classes_[1]`` where > 0 (two classes), else the argmax."""
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[np.argmax(scores, axis=1)]

    @serialised
    def _predict_last(self, X):
        """The labels the last iterate predicts: with ``average=True``, those the same
        estimator with ``average=False`` gives after the same rows (no second pass;
        ``Model.last_scores``); otherwise :meth:`predict`."""
        return self._labels(self._finite(self._model.last_scores(self._rows(X), self._bias)))

    def _finite(self, scores):
        """`scores`, or a ValueError naming the first row whose score is not finite (its
        features times the weights overflow float64): never a silent inf or NaN, which
        would predict one class whatever the row."""
        bad = ~np.isfinite(scores)
        if bad.ndim == 2:
            bad = bad.any(axis=1)
        if bad.any():
            raise ValueError(f"{self._name()}: row {int(np.argmax(bad))}: the score is not "
                             "finite in float64 (the feature values times the model's "
                             "weights overflow); scale the features")
        return scores

    def _weights_problem(self):
        """Why the weights this model scores with are not finite, or None.

        A state read from a file is finite (``Model.state_problem``), but the weights
        are computed from it with the parameters and choices: one edited to an extreme
        finite value (AdaGrad's ``eta``, the intercept's feature value ``b``) overflows
        them, and every score would be inf or NaN.  Checked: the reported weights, the
        last iterate's, and the intercept weight times ``b``.  A kernel model has no
        primal weights: its scores are checked row by row.
        """
        for what, weights in (("weights", self._model.weights),
                              ("last iterate's weights", self._model.last_weights)):
            try:
                w = np.atleast_2d(weights())
            except AttributeError:
                return None
            with np.errstate(over="ignore", invalid="ignore"):
                intercept = w[..., -1] * self._bias
            if not (np.isfinite(w).all() and np.isfinite(intercept).all()):
                return (f"the {what} that its state gives with its parameters "
                        f"({self._param_text()}) are not finite in float64")
        return None

    def _param_text(self):
        """The float parameters and the intercept's ``b``, as ``name=value`` text."""
        floats = {k: v for k, v in self.get_params().items()
                  if isinstance(v, float) and not isinstance(v, bool)}
        floats["intercept_scaling_"] = self._bias
        return ", ".join(f"{k}={v:.6g}" for k, v in floats.items())

    @serialised
    def predict_proba(self, X):
        """Class probabilities, calibrated on the progressive scores of training.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``; rows sum to 1.

        Notes
        -----
        ``softmax(a s)`` of the scores s of :meth:`decision_function` (two classes:
        ``[1 - p, p]`` with ``p = 1 / (1 + exp(-a s))``, Platt's sigmoid [Pla99]
        without intercept), ``a >= 0`` fitted by maximum likelihood, with Platt's
        smoothed targets, on the last rounds of training: each row's score before
        the model learnt it, an honest held-out score [CCG04]
        (``cwkit.models.calibration``).  Probabilities rank rows and classes as
        ``decision_function`` does, and the largest is the class ``predict`` gives.
        ``fit`` starts a new window, ``partial_fit`` adds to it, and model files keep it.
        """
        scores = self.decision_function(X)
        return self._calibration.proba(scores)

    @serialised
    def score(self, X, y):
        """Mean accuracy on (X, y)."""
        return float(np.mean(self.predict(X) == np.asarray(y)))

    # -- fitted attributes --------------------------------------------------
    def _dims(self):
        self._check_fitted()
        return self.n_features_in_

    @property
    @serialised
    def coef_(self):
        d = self._dims()
        return np.atleast_2d(self._model.weights())[..., :d].reshape(-1, d)

    @property
    @serialised
    def intercept_(self):
        d = self._dims()
        w = np.atleast_2d(self._model.weights())[..., d].ravel()
        return w * self._bias


def _distinct(values):
    """``np.unique(values)``, the same sorted distinct values (the first of equal ones),
    by the sort np.unique makes when asked for indices: its other path tests for a
    masked array, which imports numpy.ma (about 0.1 s of a command's CPU)."""
    return np.unique(values, return_index=True)[0]


def _padded(rows, d):
    """`rows` (validated, narrower than `d` features) with zero features up to `d`:
    a CSR matrix is only given the wider shape, a dense one copied."""
    X = rows.X
    if rows.sparse:
        wide = type(X)((X.data, X.indices, X.indptr), shape=(rows.n_rows, d))
    else:
        wide = np.zeros((rows.n_rows, d))
        wide[:, :rows.n_features] = X
    return as_rows(wide)


class NotFittedError(ValueError, AttributeError):
    """Raised when a model is used before fit or partial_fit (as scikit-learn does).

    Where scikit-learn has been imported, the exception raised is also an instance
    of ``sklearn.exceptions.NotFittedError``, without cwkit importing scikit-learn.
    """


_SKLEARN_CLASSES = {}


def _sklearn_class(name, base):
    """`base`, also an instance of ``sklearn.exceptions.<name>`` once scikit-learn has been
    imported (by the user), so that its tools recognise cwkit's errors and warnings
    without cwkit importing scikit-learn."""
    sk = sys.modules.get("sklearn.exceptions")
    if sk is None:
        return base
    if name not in _SKLEARN_CLASSES:
        theirs = getattr(sk, name)
        _SKLEARN_CLASSES[name] = (theirs if issubclass(theirs, base) else
                                  type(name, (base, theirs), {"__module__": __name__}))
    return _SKLEARN_CLASSES[name]


def _not_fitted_error():
    return _sklearn_class("NotFittedError", NotFittedError)


class VarianceMixin:
    """Fitted variances (diagonal) or covariance (full) of second-order rules."""

    _fitted = {
        "coef_var_": ("ndarray, shaped as coef_", "The variances of the weights (a "
                      "diagonal covariance, ``covariance_type_ 'diag'``)."),
        "intercept_var_": ("ndarray, shaped as intercept_", "The variances of the "
                           "intercepts (diagonal covariance)."),
        "covariance_": ("ndarray of shape (n, n)", "The covariance of the weights and "
                        "intercepts, in the order of (coef_, intercept_) per class (a full "
                        "covariance, ``covariance_type_ 'full'``)."),
    }

    @property
    @serialised
    def coef_var_(self):
        d = self._dims()
        s = self._model.variances()
        if s is None:
            raise AttributeError("coef_var_ exists for a diagonal covariance "
                                 "(covariance_type_ 'diag'); see covariance_ for the full "
                                 "matrix")
        return np.atleast_2d(s)[..., :d].reshape(-1, d)

    @property
    @serialised
    def intercept_var_(self):
        d = self._dims()
        s = self._model.variances()
        if s is None:
            raise AttributeError("intercept_var_ exists for a diagonal covariance "
                                 "(covariance_type_ 'diag')")
        # without an intercept this is the untouched initial variance
        b = self._bias if self.fit_intercept else 1.0
        return np.atleast_2d(s)[..., d].ravel() * (b * b)

    @property
    @serialised
    def covariance_(self):
        d = self._dims()
        S = self._model.covariance()
        if S is None:
            raise AttributeError("covariance_ exists for a full covariance (covariance_type_ "
                                 "'full'); see coef_var_")
        if not self.fit_intercept:
            return _drop_intercept(S, d)
        scale = np.ones(S.shape[0])
        scale[d::d + 1] = self._bias        # of (coef_, intercept_): b times the weight
        return S * np.outer(scale, scale)


class GaussianMixin(VarianceMixin):
    """The confidence of rules whose state is a Gaussian over weights (CW, AROW)."""

    @serialised
    def predict_confidence(self, X):
        """The probability of each class under the Gaussian over weights.

        Not a calibrated probability (see :meth:`predict_proba` for one): it is the
        model's own belief, which grows to 0 or 1 as the variances shrink, and it
        ranks rows by the variance-normalised margin mu.x / sqrt(x^T Sigma x), not
        by the margin mu.x of ``decision_function``.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)

        Notes
        -----
        Binary: P(sign(w.x) = +1) for w ~ N(mu, Sigma) is Phi(mu.x / sqrt(x^T Sigma x))
        ([ECCW08] Sect. 2, [AROW13] Sect. 3); columns are [P(classes_[0]), P(classes_[1])].

        Multi-class: the probability that class c has the largest score under the
        Gaussian over weights, P(argmax_k w_k.x = c), the generalisation of the binary
        P(sign(w.x) = +1) to the prediction rule argmax_k w_k.x ([AROW13] eq. 24).  The
        class scores s_k = w_k.x are Gaussian with means mu_k.x and variances
        x^T Sigma_kk x; they are independent for diagonal Sigma (the blocks share no
        coordinate) and for one-vs-rest, and for a full Sigma over the stacked blocks
        the cross-class covariances are left out (an approximation).  Then
        P_c = E_z[prod_{k != c} Phi((mu_c.x + sqrt(v_c) z - mu_k.x) / sqrt(v_k))],
        z ~ N(0, 1), computed by Gauss-Hermite quadrature (``cwkit.models.scoring.argmax_proba``);
        rows sum to 1.
        """
        rows = self._rows(X)
        p = self._model.proba(rows, self._bias)
        if p.ndim == 1:
            return np.column_stack([1.0 - p, p])
        return p


def _drop_intercept(S, d):
    """Remove the intercept rows/columns (every (d+1)-th) from a covariance."""
    keep = np.flatnonzero((np.arange(S.shape[0]) % (d + 1)) != d)
    return S[np.ix_(keep, keep)]
