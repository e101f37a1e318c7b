"""The river protocol on every estimator: rows of named features, one at a time or many.

``learn_one(x, y)``, ``predict_one(x)``, ``predict_proba_one(x)`` take one row, a dict
of feature name -> value (or a list, tuple or set of names, each of value 1);
``learn_many``, ``predict_many`` and ``predict_proba_many`` a list of them.  Learning
is ``partial_fit`` on the rows' columns (:mod:`cwkit.features`): hashed into
``2**hash_bits`` columns by default, or an exact vocabulary
(:meth:`NamedFeatures.use_features`), kept by :func:`cwkit.save`.  A model fed dicts is,
bit for bit, the model ``partial_fit`` gives on the same rows as CSR.
"""
import numpy as np

from . import _core
from .features import DEFAULT_HASH_BITS, FeatureHasher, Vocabulary
from .models import binary, multiclass
from .models.interface import CLASSIFICATION, raise_status

#: The models the compiled one-row path takes, by type: its shape of state.
_ONE_SHAPES = {binary.FirstOrder: _core.ONE_FIRST_ORDER, binary.Diagonal: _core.ONE_DIAGONAL,
               multiclass.FirstOrder: _core.ONE_MC_FIRST_ORDER,
               multiclass.Diagonal: _core.ONE_MC_DIAGONAL}
#: The feature maps the compiled one-row path reads (by type).
_ONE_MAPS = (FeatureHasher, Vocabulary)
#: The labels ``learn_one`` takes without an array (numpy's scalars of those kinds too).
_SCALAR_LABELS = frozenset({bool, int, float, str, np.bool_, np.int64, np.int32, np.float64,
                            np.str_})


class NamedFeatures:
    """The named-feature methods of :class:`cwkit.base.OnlineClassifier`."""

    def use_features(self, features="hash", *, hash_bits=DEFAULT_HASH_BITS, signed=False):
        """Choose how feature names become columns; returns self.

        Parameters
        ----------
        features : {"hash", "vocabulary"}, default="hash"
            ``"hash"``: the low `hash_bits` bits of the name's hash
            (:class:`cwkit.features.FeatureHasher`, Vowpal Wabbit's columns);
            ``"vocabulary"``: an exact, growing vocabulary
            (:class:`cwkit.features.Vocabulary`), every new name of a learning
            call the next column (the model grows with it).
        hash_bits : int in [1, 31], default=18
        signed : bool, default=False
            With ``"hash"``: negate a feature's value by a second bit of its
            hash, so that colliding features cancel in expectation.

        Raises
        ------
        ValueError
            Once the model has learnt, for another mapping than the one it learnt
            with (the columns would mean other features).
        """
        if features == "hash":
            fmap = FeatureHasher(hash_bits, signed)
        elif features == "vocabulary":
            fmap = Vocabulary()
        else:
            raise ValueError(f"features must be 'hash' or 'vocabulary', not {features!r}")
        with self._state_lock():
            old = self.__dict__.get("feature_map_")
            fitted = "n_features_in_" in self.__dict__
            if fitted and not (old == fmap if isinstance(fmap, FeatureHasher)
                               else isinstance(old, Vocabulary)):
                raise ValueError(f"this {type(self).__name__} has learnt with "
                                 f"{old if old is not None else 'numbered columns'}; its "
                                 f"columns cannot be re-read as {fmap!r} (fit it anew, or "
                                 "use a new estimator)")
            if not (fitted and isinstance(old, Vocabulary)):
                self.feature_map_ = fmap
        return self

    def _named(self, rows, learn, where):
        """The validated rows of the named rows `rows` (a list) for this estimator."""
        fmap = self.__dict__.get("feature_map_")
        if fmap is None:
            if "n_features_in_" in self.__dict__:
                raise ValueError(f"this {type(self).__name__} has learnt from numbered "
                                 "columns (fit / partial_fit on a matrix): named rows have "
                                 "no columns in it")
            fmap = self.feature_map_ = FeatureHasher()
        return fmap.rows(rows, grow=learn, where=where)

    #: ``learn_one(x, y, classes=None)``, ``predict_one(x)``, ``predict_proba_one(x)``:
    #: one compiled call each where the estimator has a compiled one-row path
    #: (``_one``, `_one_path`), else `_learn_one`, `_predict_one`, `_predict_proba_one`.
    learn_one = _core.learn_one
    predict_one = _core.predict_one
    predict_proba_one = _core.predict_proba_one

    def _learn_one(self, x, y, classes):
        """``learn_one`` where its compiled round did not take the row: the path
        (re)built, the row hashed in one compiled call, or the general path."""
        fmap = self.__dict__.get("feature_map_")
        if type(fmap) in _ONE_MAPS:     # the row read in one compiled call, no matrix
            with self._state_lock():
                fast = self._one_path(fmap)
                done = fast.learn(self, x, y) if fast is not None else 0
                if done:
                    return self._one_done(done)
                if type(fmap) is FeatureHasher and self._one_named(x, y, fmap) is not None:
                    return self
        return self._learn_named([x], [y], classes, "x")

    def _one_path(self, fmap):
        """The compiled one-row path of this estimator (``cwkit._core.NamedOne``, kept
        as ``_one`` until the model, its classes or its feature map change), or None
        for a model it does not take (not a two-class, multi-class (top-1 or
        one-vs-rest) or regression first-order or diagonal model of the feature map's
        columns: hashed, or an exact vocabulary, which it grows).  `fmap`: the
        estimator's ``feature_map_`` (None: numbered columns, whose single CSR rows of a
        two-class model the path takes, ``cwkit._core.partial_fit``)."""
        fast = self.__dict__.pop("_one", None)
        if fast is not None and fast.is_current(self):
            self._one = fast
            return fast
        model = self.__dict__.get("_model")
        shape = _ONE_SHAPES.get(type(model))
        classes = self.__dict__.get("classes_")
        if (shape is None or not self._model_reads_the_rows     # (a kernel_approx map)
                or (fmap is not None and self.n_features_in_ != fmap.n_features)
                or (model.spec.task == CLASSIFICATION) != (classes is not None)
                or (classes is not None and len(classes) != (model.K or 2))):
            return None
        fast = self._one = _core.NamedOne(shape, model, fmap, classes,
                                          self.__dict__.get("_calibration"), _SCALAR_LABELS)
        return fast

    def _one_done(self, done):
        """What follows a round of the compiled one-row path (`NamedOne.learn`'s
        `done`): its collapse warning, or its failure raised, as ``partial_fit``'s."""
        if done == 2:
            self._warn_collapse(0)
        elif done < 0:
            raise_status(-done, 0, self._name(), self._model.status_detail(-done))
        return self

    def learn_many(self, X, y, classes=None):
        """Learn from a list of named rows, in order (one ``partial_fit`` pass).

        Parameters
        ----------
        X : list of dicts (or lists of names)
        y : array-like of labels, one per row
        classes : array-like, optional
            As in :meth:`learn_one`.

        Returns
        -------
        self
        """
        return self._learn_named(list(X), y, classes, "row")

    def _learn_named(self, rows, y, classes, where):
        """``partial_fit`` on named `rows`; a rejected call leaves the vocabulary as it
        was (nothing learnt from it)."""
        with self._state_lock():
            fmap = self.__dict__.get("feature_map_")
            size = fmap.n_features if isinstance(fmap, Vocabulary) else None
            try:
                X = self._named(rows, True, where)
                # one row: its CSR matrix, which partial_fit's single-example path takes
                return self._partial_fit_named(X.X if X.n_rows == 1 else X, np.asarray(y),
                                               classes)
            except BaseException:
                if size is not None:
                    fmap.truncate(size)
                raise

    def _partial_fit_named(self, X, y, classes):
        """``partial_fit`` on the named rows' matrix `X` of labels `y` (an array)."""
        if classes is None and not hasattr(self, "classes_") and y.dtype == bool:
            classes = [False, True]
        return self.partial_fit(X, y, classes=classes)

    def _predict_rows(self, X, where):
        with self._state_lock():
            self._check_fitted()
            return self._named(X, False, where)

    def _one_scores(self, x):
        """The scores of one named row, ``decision_function``'s (an array), computed
        over the row's own features; None where that path is not taken."""
        fmap = self.__dict__.get("feature_map_")
        if fmap is None or not hasattr(self, "classes_") or not self._model_reads_the_rows:
            return None
        with self._state_lock():
            fast = self._one_path(fmap) if type(fmap) in _ONE_MAPS else None
            score = fast.score(self, x) if fast is not None else None
            if score is not None:
                return np.array([score])
            return self._named_scores(x, fmap)

    def _predict_one(self, x):
        """``predict_one`` where its compiled call did not take the row."""
        scores = self._one_scores(x)
        if scores is not None:
            return self._labels(scores)[0]
        return self.predict(self._predict_rows([x], "x"))[0]

    def _predict_proba_one(self, x):
        """``predict_proba_one`` where its compiled call did not take the row."""
        with self._state_lock():     # (the calibration window as the score's model)
            fmap = self.__dict__.get("feature_map_")
            fast = self._one_path(fmap) if type(fmap) in _ONE_MAPS else None
            proba = fast.proba(self, x) if fast is not None else None
            if proba is not None:
                return proba
            scores = self._one_scores(x)
            if scores is not None:
                proba = self._calibration.proba(scores)[0]
            else:
                proba = self.predict_proba(self._predict_rows([x], "x"))[0]
        return {c: float(p) for c, p in zip(self.classes_.tolist(), proba)}

    def _many_scores(self, rows):
        """``decision_function``'s scores of the named `rows` (a list) in one compiled
        call (``NamedOne.scores``); None where that path is not taken."""
        fmap = self.__dict__.get("feature_map_")
        if type(fmap) not in _ONE_MAPS or not rows:
            return None
        with self._state_lock():
            fast = self._one_path(fmap)
            return fast.scores(self, rows) if fast is not None else None

    def predict_many(self, X):
        """The labels predicted for a list of named rows (an array)."""
        rows = list(X)
        scores = self._many_scores(rows)
        if scores is not None:
            return self._labels(scores)
        return self.predict(self._predict_rows(rows, "row"))

    def predict_proba_many(self, X):
        """The calibrated probabilities of a list of named rows, ``(n_rows,
        n_classes)``, columns in the order of ``classes_``."""
        rows = list(X)
        with self._state_lock():     # (the calibration window as the scores' model)
            scores = self._many_scores(rows)
            if scores is not None:
                return self._calibration.proba(scores)
            return self.predict_proba(self._predict_rows(rows, "row"))
