"""The papers' evaluation protocol over streamed data, usable from Python and the CLI.

A *source* (:mod:`cwkit.sources`) yields the rows of a task as chunks ``(X, y, index)``
in their stored order, ``index`` being each row's position in the task. :func:`evaluate`
reads a source once per pass and feeds every chunk, validated once, to every algorithm
(the algorithms of a chunk at once, on as many threads as the cores the source's
parsing threads leave; their results are those of one after another): each row is
predicted with the state before its round, then learnt (progressive validation;
[AROW13] Sect. 2, [LMC09] Sect. 2). Label noise,
cross-validation folds and held-out tuning runs are functions of ``(seed, index)``, so
nothing per row is stored and memory stays bounded by the chunk size (and the shuffle
window when shuffling). :func:`train` fits one
learner on a source the same way, for ``cwkit train``.
"""
import contextlib
import functools
import itertools
import re
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass, field

import numpy as np

from ._lazy import issparse
from ._rowdata import CSRArrays, as_rows, parsed_rows
from ._threads import signals_blocked, usable_cores
from ._lazy import sparse as sp
from . import datasets
from ._version import __version__
from .models.interface import ModelError
from .registry import algorithms, kernel_params, make
from .regression import make_regressor, regressors
from .sources import DEFAULT_SHUFFLE_WINDOW, TASKS

__all__ = [
    "DEFAULT_SHUFFLE_WINDOW",
    "TASKS",
    "AlgoSpec",
    "Interrupted",
    "Learner",
    "average_ranks",
    "evaluate",
    "evaluate_tasks",
    "fitted_task",
    "make_tested",
    "mean_ranks",
    "task_ranks",
    "train",
]

_MODEL_FAILURES = (ValueError, MemoryError)  # what stops one learner, not the run
_FOLD_STREAM = 3  # the row_uniform stream of the cross-validation folds (1, 2: label noise)
_TUNE_SEED_OFFSET = 7919  # the shuffled tuning run's seed is the trial's seed plus this
_TUNE_STREAM = 4  # the row_uniform stream of the shuffled tuning run's held-out rows
TUNE_HOLDOUT = 0.3
"""The fraction of the training rows the shuffled tuning run holds out to score on."""
_UNTESTED = (None, None, None)  # (test error, last iterate's, average's) of an untested learner
_caught = threading.local()  # .notes: the warnings of the learner this thread runs


@dataclass
class AlgoSpec:
    """One algorithm of a comparison.

    ``label`` names it in the output, ``name`` is its registry name, ``params`` are fixed
    hyper-parameters, ``grid`` maps hyper-parameters to the values to tune over.
    """

    name: str
    params: dict = field(default_factory=dict)
    grid: dict = field(default_factory=dict)
    label: str = ""

    def __post_init__(self):
        if not self.label:
            self.label = self.name

    def combinations(self):
        """Every assignment of the grid, in the order given (first = preferred on ties)."""
        keys = list(self.grid)
        for values in itertools.product(*(self.grid[k] for k in keys)):
            yield dict(zip(keys, values))


@dataclass
class _StreamConfig:
    """How a run reads its source: noise, row filter, shuffling; ``regression``: the
    noise is Gaussian noise of standard deviation ``noise`` on the targets, else the
    probability of replacing a label."""

    noise: float = 0.0
    seed: int = 0
    shuffle: bool = False
    shuffle_window: int = DEFAULT_SHUFFLE_WINDOW
    keep: object = None  # callable index -> bool mask, or None
    regression: bool = False


def _weighted_chunks(source, arrays=False):
    """``(X, y, index, sample_weight)`` of `source`: the importance weights its rows
    carry (a Vowpal Wabbit file's), None where it has none or a chunk's are all 1
    (weights of 1 learn as no weights, bit for bit, on the faster path). `arrays`: X
    may be :class:`cwkit._rowdata.CSRArrays` (``chunks(arrays=True)`` of a source
    whose ``array_chunks`` is true)."""
    if not getattr(source, "weighted", False):
        chunks = (source.chunks(arrays=True) if arrays and getattr(source, "array_chunks",
                                                                    False)
                  else source.chunks())
        for X, y, index in chunks:
            yield X, y, index, None
        return
    for X, y, index, w in source.chunks(weights=True):
        yield X, y, index, (None if (w == 1.0).all() else w)


def _stream(source, cfg, pass_no):
    """Chunks ``(X, y_clean, y_train, flipped, index, sample_weight)`` of one pass
    (``sample_weight`` None: every row of weight 1)."""
    classes = source.classes

    def prepared():
        # (rows cut out or shuffled: scipy matrices; else the parser's arrays may do)
        arrays = cfg.keep is None and not cfg.shuffle
        for X, y, index, w in _weighted_chunks(source, arrays):
            if cfg.keep is not None:
                mask = cfg.keep(index)
                if not mask.all():
                    X, y, index = X[mask], y[mask], index[mask]
                    w = None if w is None else w[mask]
            if y.size == 0:
                continue
            if cfg.noise > 0 and cfg.regression:
                y_train = datasets.noisy_targets(y, cfg.noise, seed=cfg.seed, index=index)
                flipped = np.ones(y.size, dtype=bool)
            elif cfg.noise > 0:
                y_train, flipped = datasets.flip_labels(y, cfg.noise, classes=classes,
                                                        seed=cfg.seed, index=index)
            else:
                y_train, flipped = y, np.zeros(y.size, dtype=bool)
            yield X, y, y_train, flipped, index, w

    if not cfg.shuffle:
        yield from prepared()
        return
    rng = np.random.default_rng([cfg.seed, pass_no])
    buffer, n = [], 0
    for chunk in prepared():
        buffer.append(chunk)
        n += chunk[1].size
        if n >= cfg.shuffle_window:
            yield from _emit_shuffled(buffer, rng, source.batch_size)
            buffer, n = [], 0
    if buffer:
        yield from _emit_shuffled(buffer, rng, source.batch_size)


def _emit_shuffled(buffer, rng, batch_size):
    X = sp.vstack([b[0] for b in buffer], format="csr") if issparse(buffer[0][0]) \
        else np.vstack([b[0] for b in buffer])
    cols = [np.concatenate([b[k] for b in buffer]) for k in (1, 2, 3, 4)]
    weighted = any(b[5] is not None for b in buffer)
    if weighted:
        cols.append(np.concatenate([np.ones(b[1].size) if b[5] is None else b[5]
                                    for b in buffer]))
    perm = rng.permutation(cols[0].size)
    X = X[perm]
    cols = [c[perm] for c in cols]
    for start in range(0, perm.size, batch_size):
        s = slice(start, start + batch_size)
        yield (X[s], *(c[s] for c in cols), *(() if weighted else (None,)))


class Learner:
    """One model in a run and its counters, mistakes counted against the clean labels.

    Parameters
    ----------
    spec : AlgoSpec
        The algorithm (its ``grid`` is not used here).
    params : dict
        Hyper-parameters of the model (``cwkit.make(spec.name, **params)``).
    classes : ndarray
        Every label of the stream, given to the model's first ``partial_fit``.
    multiclass_params : dict
        ``multiclass`` / ``k`` for the model; ``params`` take precedence.
    tested : bool
        The model will be tested: where its form has an average, it is trained with
        ``average=True`` and both the average and the last iterate (the model
        ``average=False`` gives, bit for bit, from the same state) are scored
        (:meth:`test_errors`); the test error reported is that of the model
        ``cwkit.make(spec.name, **params)`` gives, the one ``cwkit train`` saves. The
        online mistakes, counted before each update, are the same either way.
    start : OnlineClassifier, optional
        A fitted estimator to go on training (``cwkit train -i``), instead of a new one.
    seed : int, optional
        The model's ``random_state`` unless ``params`` set it: what it draws (the
        feature map of ``kernel_approx``) is then a function of the run's seed.

    Attributes
    ----------
    model : OnlineClassifier
        The estimator, fitted once the first chunk is learnt (``fitted``).
    averaged : bool
        Whether the model of ``params`` averages (``average`` resolved): which of the
        two test errors is its own.
    both : bool
        Whether the trained model averages and so gives both test errors.
    examples, mistakes, updates : int
        Rounds, online mistakes against the clean labels, rounds that changed the model.
    seconds : float
        Time spent learning (wall time; the learners of a chunk learn at once where they
        have several threads, and their times then overlap).
    curve : list of (int, int)
        ``(examples, mistakes)`` points when a run records a curve.
    failed : ValueError, MemoryError or None
        The error of the model (e.g. a :class:`cwkit.ModelError`) that stopped the learner;
        it then learns no more and its counters stop at the last piece it completed.
    failed_at : int or None
        The position in the task (0-based ``index``) of the row that failed.
    notes : dict
        Warning text -> number of times the model emitted it during the learner's rounds
        (captured, not printed).
    """

    task = "classification"
    #: what :meth:`test_errors` gives of a learner not tested: (the model's, the last
    #: iterate's, the average's) error
    untested = _UNTESTED

    def __init__(self, spec, params, classes, multiclass_params, tested=False, start=None,
                 seed=None):
        self.spec = spec
        self.shown = spec.label     # its name in the progress lines
        self.params = dict(params)
        if start is None:
            seeded = {} if seed is None else {"random_state": seed}
            self.model, self.averaged, self.both = make_tested(
                spec.name, {**multiclass_params, **seeded, **self.params}, tested, self.task)
        else:
            self.model, self.averaged, self.both = start, start._averaging(), False
        self.classes = classes
        self.binary = classes is None or classes.size == 2
        self.fitted = start is not None
        self.examples = self.mistakes = self.updates = 0
        self.seconds = 0.0
        self.curve = []
        self.failed = None
        self.failed_at = None
        self.failed_offset = None  # the failed row's position in the piece being learnt
        self.notes = {}

    def note_lines(self):
        """The ``notes`` as text, ``(N times)`` after those repeated."""
        return _note_lines(self.notes)

    def hyper_parameters(self):
        """The algorithm's own hyper-parameters as the model resolved them (``covariance``
        the shape chosen, ``eta`` its value, not "auto" or None), with ``average`` (that
        of the model reported) and, with more than two classes, ``multiclass`` and ``k``."""
        names = next(e["params"] for e in self._entries() if e["name"] == self.spec.name)
        values = (self.model.resolved_params() if self.fitted
                  else self.model.get_params())
        # a kernel form has no primal-only parameter (covariance) and adds the kernel's
        out = {k: values[k] for k in (*names, *kernel_params(self.spec.name)) if k in values}
        if not self.binary:
            out.update(multiclass=values["multiclass"], k=values["k"])
        out.update(average=self.averaged, fit_intercept=values["fit_intercept"],
                   intercept_scaling=values["intercept_scaling"])
        return out

    @staticmethod
    def _entries():
        """The registry of the task's estimators (:func:`cwkit.algorithms`)."""
        return algorithms()

    def _partial_fit(self, X, y, y_clean, weights=None):
        """Learn the rows of the current piece (of importance weights ``weights``, None:
        1), their rounds counted against ``y_clean`` (None: ``y``); returns what
        :meth:`_counted` gives of the call.  On a model error, ``failed_offset`` is the
        row of the piece that failed."""
        weighted = {} if weights is None else {"sample_weight": weights}
        try:
            # (the first call of a classifier names every class)
            first = {} if self.fitted or self.classes is None else {"classes": self.classes}
            self.model.partial_fit(X, y, y_clean=y_clean, **first, **weighted)
            self.fitted = True
        except _MODEL_FAILURES as exc:
            row = getattr(exc, "row", None) or 0    # ModelError: the row of this call
            self.failed_offset = min(row, max(y.size - 1, 0))
            raise
        self.updates += int(self.model.last_n_updates_)
        return self._counted()

    def _counted(self):
        """The mistakes of the model's last call."""
        return int(self.model.last_mistakes_)

    def learn(self, X, y_clean, y_train, flipped, weights=None, at=None):
        """One online round per row: ``y_train`` is learnt, ``y_clean`` scores mistakes,
        ``weights`` are the rows' importance weights (None: 1).

        Each round is counted as the model predicts it (the compiled pass scores a row
        before its update, against its clean label when it was flipped; see
        ``OnlineClassifier.partial_fit``'s ``y_clean``), so a noisy run costs what a clean
        one does. Warnings of the model are kept in ``notes``, a row of ``X`` they name
        (``row 5 of X``) as ``at(5)`` names it (the data's row; None: as it is). A model
        error propagates with the counters as they were before this call and
        ``failed_offset`` the row that failed.
        """
        self._add(self._noted(at, self._partial_fit, X, y_train,
                              y_clean if flipped.any() else None, weights))
        self.examples += y_clean.size

    def _add(self, counted):
        """Add a piece's :meth:`_counted` to the counters."""
        self.mistakes += counted

    def _noted(self, at, learn, *args):
        """``learn(*args)``, timed, the model's warnings kept in ``notes`` (a row of the
        piece they name as ``at`` names it) and ``updates`` as it was if it fails."""
        t0 = time.perf_counter()
        updates = self.updates
        _caught.notes = caught = []
        try:
            with _capturing() if _capturing.depth == 0 else contextlib.nullcontext():
                return learn(*args)
        except _MODEL_FAILURES:
            self.updates = updates
            raise
        finally:
            _caught.notes = None
            self.seconds += time.perf_counter() - t0
            for text in caught:
                if at is not None:
                    text = _ROW_OF_X.sub(lambda m: at(int(m.group(1))), text)
                self.notes[text] = self.notes.get(text, 0) + 1

    def online_error(self):
        """The progressive error so far: the fraction of rounds mistaken."""
        return self.mistakes / max(self.examples, 1)

    def online_text(self):
        """The progressive error so far as the progress lines show it."""
        return f"{100.0 * self.online_error():.2f}%"

    def test_errors(self, X, y):
        """Rows of ``X`` mislabelled by the model of ``params``, by its last iterate and
        by its average: ``(model's, last iterate's, average's)``, the last two None where
        the trained model does not give them (``both``); every row before any round."""
        if not self.fitted:
            return (y.size,) * 3
        if not self.both:
            errors = int(np.count_nonzero(self.model.predict(X) != y))
            return errors, *((None, errors) if self.averaged else (errors, None))
        average = int(np.count_nonzero(self.model.predict(X) != y))
        last = int(np.count_nonzero(self.model._predict_last(X) != y))
        return (average if self.averaged else last), last, average


class RegressionLearner(Learner):
    """One regressor in a run and its counters, errors measured against the clean targets.

    As :class:`Learner` (``classes`` and ``multiclass_params`` unused), the model made by
    ``cwkit.make_regressor``; ``mistakes`` is None, and ``squared`` and ``absolute`` are
    the sums of the squared and absolute errors of the rounds' predictions, each made
    with the state before its round, against the clean targets (those before
    ``--noise``).
    """

    task = "regression"
    untested = _UNTESTED + (None,)

    def __init__(self, spec, params, classes=None, multiclass_params=None, tested=False,
                 start=None, seed=None):
        super().__init__(spec, params, None, {}, tested, start, seed)
        self.mistakes = None
        self.squared = self.absolute = 0.0

    @staticmethod
    def _entries():
        """The registry of the regressors (``cwkit.regressors``)."""
        return regressors()

    def _counted(self):
        """The sums of the squared and absolute errors of the model's last call."""
        return self.model.last_squared_error_, self.model.last_absolute_error_

    def _add(self, counted):
        self.squared += counted[0]
        self.absolute += counted[1]

    def online_error(self):
        """The progressive mean squared error so far."""
        return self.squared / max(self.examples, 1)

    def online_text(self):
        return f"mse {self.online_error():.4g}"

    def test_errors(self, X, y):
        """Sums over the rows of ``X`` of the squared errors of the model of ``params``,
        of its last iterate and of its average (None where the trained model does not
        give them: ``both``), and of the absolute errors of the model of ``params``;
        predictions of 0 before any round."""
        def sums(predicted):
            residual = y - predicted
            return float(residual @ residual), float(np.abs(residual).sum())

        zero = np.zeros(y.size)
        model_sq, model_abs = sums(self.model.predict(X) if self.fitted else zero)
        if not self.both:
            return model_sq, *((None, model_sq) if self.averaged else (model_sq, None)), \
                model_abs
        last_sq, last_abs = sums(self.model._predict_last(X) if self.fitted else zero)
        if self.averaged:
            return model_sq, last_sq, model_sq, model_abs
        return last_sq, last_sq, model_sq, last_abs


#: the learner of each task
_LEARNERS = {"classification": Learner, "regression": RegressionLearner}


def _check_task(task):
    if task not in _LEARNERS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}, got {task!r}")
    return _LEARNERS[task]


def _make(task):
    """The estimator factory of `task`: :func:`cwkit.make`, or ``cwkit.make_regressor``."""
    return make_regressor if task == "regression" else make


def make_tested(name, params, tested=True, task="classification"):
    """``(estimator, averaged, both)``: ``averaged``, whether ``cwkit.make(name,
    **params)`` (``cwkit.make_regressor`` for ``task="regression"``) averages
    (``average`` resolved); the estimator is that model, or, when
    ``tested``, the same with ``average=True`` (every form has an average), whose last
    iterate (``_predict_last``, ``Model.last_scores``) is the model ``average=False``
    gives, bit for bit, so that one run scores both (``both``)."""
    build = _make(task)
    est = build(name, **params)
    averaged = est._averaging()
    if not tested:
        return est, averaged, False
    if not averaged:
        est = build(name, **{**params, "average": True})
    return est, averaged, True


@contextlib.contextmanager
def _capturing():
    """Every warning shown (filter "always") while learners learn goes to the notes of
    the learner of the thread that emits it (``_caught.notes``); others are shown as
    before. ``warnings.catch_warnings`` swaps process-wide state, so the learners of a
    threaded run share one capture, entered by the thread that runs them."""
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        shown = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            notes = getattr(_caught, "notes", None)
            if notes is None:
                shown(message, category, filename, lineno, file, line)
            else:
                notes.append(f"{category.__name__}: {message}")

        warnings.showwarning = show
        _capturing.depth += 1
        try:
            yield
        finally:
            _capturing.depth -= 1


_capturing.depth = 0  # captures entered (a learner in a threaded run enters none)


#: a row of the ``X`` given to ``partial_fit``, as the models' warnings name it (0-based)
_ROW_OF_X = re.compile(r"\brow (\d+) of X\b")


def _note_lines(notes):
    return [text + (f" ({count} times)" if count > 1 else "") for text, count in notes.items()]


def _run(source, cfg, learners, passes, *, curve_every=0, progress=None, label=""):
    """Progressive run of ``learners`` over ``passes`` passes of ``source``.

    A learner whose model raises ValueError (a :class:`cwkit.ModelError`: an update that
    overflows, a hyper-parameter value that does not suit the data) or MemoryError stops
    there and keeps the error in ``failed`` and the row in ``failed_at``; the others go
    on. Its curve ends at its last point before the failure.
    """
    seen = 0
    if progress is not None:
        progress.start_run(label)
        # the percentage, where the rows of a pass are known: all of the source's
        n = getattr(source, "n_examples", None) if cfg.keep is None else None
        total = n * passes if isinstance(n, int) else None
    parsed = getattr(source, "parsed", False)   # (a source of another kind may lack it)
    # learner threads: one per core, at most one per learner. The parser, up to four
    # pieces ahead, idles while the learners are the slower side (pa,cw,arow on 2 cores:
    # their passes take longer than the parse, so one thread for the three left a core
    # idle); otherwise a learner's thread takes turns with it. Several learners learn on
    # a pool even when it is one thread, so that Ctrl-C, which reaches only the main
    # thread, finds every learner between two pieces
    workers = min(len(learners), usable_cores())
    pool = (ThreadPoolExecutor(workers) if len(learners) > 1
            else contextlib.nullcontext())
    with pool as pool:
        for pass_no in range(passes):
            for X, y_clean, y_train, flipped, index, w in _stream(source, cfg, pass_no):
                for piece in _pieces(y_clean.size, seen, curve_every):
                    # (a whole chunk as is: slicing a CSR matrix copies it)
                    Xp = X if piece.stop - piece.start == y_clean.size else (
                        X.row_slice(piece.start, piece.stop) if isinstance(X, CSRArrays)
                        else X[piece])
                    _learn_piece(pool, learners, Xp, y_clean[piece], y_train[piece],
                                 flipped[piece], index[piece], parsed,
                                 None if w is None else w[piece], source.origin)
                    seen += piece.stop - piece.start
                    if curve_every and seen % curve_every == 0:
                        for lr in learners:
                            if lr.failed is None:
                                lr.curve.append((seen, lr.mistakes))
                if progress is not None:
                    progress.update(seen, learners, pass_no, passes, total)
    if curve_every:
        for lr in learners:
            if lr.failed is None and (not lr.curve or lr.curve[-1][0] != seen):
                lr.curve.append((seen, lr.mistakes))
    if progress is not None:
        progress.end_run()


def _learn_piece(pool, learners, X, y_clean, y_train, flipped, index, parsed=False,
                 weights=None, origin=None):
    """Every learner not failed learns the piece: at once on the threads of ``pool`` (the
    compiled passes release the GIL; each learner has its own state and counters, so the
    results are those of one after another), or one after another without a pool.
    ``parsed``: the rows are valid as the svmlight parser checked them (the source's
    ``parsed``), so they are not checked again, as the rows of ``CSRArrays`` (the
    parser's arrays, never a scipy matrix unless a model reads one); ``weights``: the
    rows' importance weights (None: 1). ``origin``: the source's, to name the data's row
    in place of a row of the piece in the models' warnings."""
    at = None if origin is None else functools.partial(_data_row, origin, index)

    active = [lr for lr in learners if lr.failed is None]
    if isinstance(X, CSRArrays):    # (the parser's rows: a one-row piece as a matrix)
        X = parsed_rows(X) if y_clean.size > 1 else X.matrix()
    elif len(active) > 1 and y_clean.size > 1:   # (one row: a model's own one-row path)
        try:    # once for all: each model's partial_fit takes the validated rows
            X = parsed_rows(X) if parsed else as_rows(X)
        except _MODEL_FAILURES:
            pass    # each learner fails as it would on its own, with its own message
    if pool is None or len(active) < 2:
        outcomes = [_outcome(lr, X, y_clean, y_train, flipped, weights, at)
                    for lr in active]
    else:
        with _capturing():
            futures = []
            try:
                with signals_blocked():     # (the pool's threads start with the mask)
                    for lr in active:       # (each future kept as soon as it exists)
                        futures.append(pool.submit(_outcome, lr, X, y_clean, y_train,
                                                   flipped, weights, at))
                outcomes = [f.result() for f in futures]
            finally:    # (Ctrl-C: every learner's counters settled, its warnings caught)
                futures_wait(futures)
    for lr, exc in zip(active, outcomes):
        if exc is not None:
            lr.failed = exc
            lr.failed_at = int(index[lr.failed_offset])


def _data_row(origin, index, row):
    """``row N of FILE``: the data's row (1-based) that row ``row`` of a piece is."""
    name, data_row = origin(int(index[row]))
    return f"row {data_row + 1} of {name}"


def _outcome(learner, X, y_clean, y_train, flipped, weights=None, at=None):
    """``learner.learn`` of a piece; the model error that stopped it, or None."""
    try:
        learner.learn(X, y_clean, y_train, flipped, weights, at)
    except _MODEL_FAILURES as exc:
        return exc
    return None


def train(source, spec, *, passes=1, shuffle=False, seed=0,
          shuffle_window=DEFAULT_SHUFFLE_WINDOW, multiclass_params=None, progress=None,
          label=None, start=None, task="classification"):
    """Fit one learner on a source, online, as :func:`evaluate` trains (``cwkit train``).

    Parameters
    ----------
    source : ArraySource, SvmlightSource or FilteredSource
        An :class:`~cwkit.sources.SvmlightSource` without a given label set is scanned
        first: every model needs the label set from its first round.
    spec : AlgoSpec
        The algorithm and its hyper-parameters (``spec.params``; ``grid`` is ignored).
    passes : int
        Passes over the rows.
    shuffle : bool
        Shuffle each pass within windows of ``shuffle_window`` rows; pass ``p`` uses
        ``numpy.random.default_rng([seed, p])``. Else the stored order.
    seed : int
    shuffle_window : int
    multiclass_params : dict, optional
        ``multiclass`` / ``k`` for the estimator.
    progress : cwkit.report.Progress, optional
    label : str, optional
        The run's name in the progress lines (default: the source's name).
    start : OnlineClassifier, optional
        A fitted estimator to go on training (``spec`` then only names it): the model is
        the one a single run over its earlier rows and these gives, bit for bit, where
        the passes and the shuffling agree (the choices the first rows settle, such as
        ``covariance="auto"``, stay those of its first data).
    task : {"classification", "regression"}
        ``"regression"``: ``spec`` names a regressor (``cwkit.make_regressor``), learnt
        on the real-valued labels of the rows.

    Returns
    -------
    Learner
        ``model`` is the fitted estimator; ``examples``, ``mistakes`` (online) and
        ``updates`` count every pass.

    Raises
    ------
    ValueError
        When the model fails (a :class:`cwkit.ModelError`), naming the row of the data.
    Interrupted
        On KeyboardInterrupt; its ``result`` is the learner as far as it got.

    Notes
    -----
    Chunk after chunk, the model's ``partial_fit`` sees the rows in the order of the pass
    (the first call with ``classes=source.classes``), so the model equals the one a
    sequence of ``partial_fit`` calls on those rows gives, bit for bit.

    Examples
    --------
    >>> from cwkit import datasets
    >>> from cwkit.sources import ArraySource
    >>> X, y = datasets.load_breast_cancer()
    >>> learner = train(ArraySource(X, y, "breast-cancer"), AlgoSpec("arow"))
    >>> learner.examples, learner.model.classes_.tolist()
    (683, [-1.0, 1.0])
    """
    kind = _check_task(task)
    _learn_classes(source)
    learner = kind(spec, spec.params, source.classes, dict(multiclass_params or {}),
                   start=start, seed=seed)
    stream = _StreamConfig(seed=seed, shuffle=shuffle, shuffle_window=shuffle_window)
    try:
        _run(source, stream, [learner], passes, progress=progress,
             label=source.name if label is None else label)
    except KeyboardInterrupt as exc:
        raise Interrupted(learner) from exc
    if learner.failed is not None:  # a model that stopped half-way is no result
        failure = _failure(source, learner, 0)
        raise ValueError(f"{failure['file']}, row {failure['row']}: {failure['error']}") \
            from learner.failed
    return learner


def _learn_classes(source):
    """Scan a file source whose label set was not given: models need it from round one."""
    if source.classes is None:
        source.scan()


def _pieces(n, seen, every):
    """Slices of a chunk of ``n`` rows that end on multiples of ``every`` examples."""
    if not every:
        return [slice(0, n)]
    cuts = list(range(every - seen % every, n, every)) + [n]
    out, start = [], 0
    for cut in cuts:
        if cut > start:
            out.append(slice(start, cut))
            start = cut
    return out


def _test(learners, test_source, keep=None):
    """(test error, last iterate's, average's) of each learner (:meth:`Learner.test_errors`,
    divided by the rows; a regressor's also its mean absolute error; its ``untested`` when
    it failed or there is no test row)."""
    errors = [[0] * len(lr.untested) for lr in learners]
    n = 0
    for X, y, index in test_source.chunks():
        if keep is not None:
            mask = keep(index)
            X, y = X[mask], y[mask]
        if y.size == 0:
            continue
        n += y.size
        for e, lr in zip(errors, learners):
            if lr.failed is not None:
                continue
            for i, c in enumerate(lr.test_errors(X, y)):
                e[i] += c or 0
    out = []
    for e, lr in zip(errors, learners):
        if not n or lr.failed is not None:
            out.append(lr.untested)
            continue
        last = e[1] / n if lr.both or not lr.averaged else None
        average = e[2] / n if lr.both or lr.averaged else None
        out.append((e[0] / n, last, average, *(v / n for v in e[3:])))
    return out


def _tune(source, cfg, specs, passes, multiclass_params, tune_on, progress, kind=Learner):
    """Choose each spec's grid values by the held-out error of the model reported.

    Each value trains the model the table reports (:class:`Learner` with ``tested``:
    the average where it is the model of its parameters, else the last iterate) on part
    of the training rows and is scored on the others: ``tune_on="shuffled"``, a shuffled
    run ([AROW13] Sect. 5.3: "optimized using a single randomized run", seed ``seed +
    7919``) of the rows whose :func:`datasets.row_uniform` draw is at least
    ``TUNE_HOLDOUT``, scored on the rest; ``"first-half"``, the first half of the rows in
    stored order ([LMC09] Sect. 4.2), scored on the second half. Ties go to the earlier
    grid value; a value whose model fails (ValueError) is not chosen. Returns the chosen
    values by label, and by label the failed learner of each spec whose every value
    failed.
    """
    chosen, failed = {}, {}
    todo = [s for s in specs if s.grid]
    if not todo:
        return chosen, failed
    tseed = cfg.seed + _TUNE_SEED_OFFSET
    if tune_on == "shuffled":
        def held_out(index):
            return datasets.row_uniform(tseed, index, stream=_TUNE_STREAM) < TUNE_HOLDOUT
        shuffle = True
    elif tune_on == "first-half":
        half = source.count() // 2

        def held_out(index):
            return index >= half
        shuffle, tseed = False, cfg.seed
    else:
        raise ValueError(f"tune_on must be 'shuffled' or 'first-half', got {tune_on!r}")
    outer = cfg.keep

    def keep_train(index):
        mask = ~held_out(index)
        return mask if outer is None else mask & outer(index)

    def keep_test(index):
        mask = held_out(index)
        return mask if outer is None else mask & outer(index)

    tcfg = _StreamConfig(cfg.noise, tseed, shuffle, cfg.shuffle_window, keep_train,
                         cfg.regression)
    learners = []
    for spec in todo:
        for combo in spec.combinations():
            learners.append(kind(spec, {**spec.params, **combo}, source.classes,
                                 multiclass_params, tested=True, seed=cfg.seed))
            learners[-1].combo = combo
            learners[-1].shown = _combo_text(learners[-1])
    _run(source, tcfg, learners, passes, progress=progress, label=f"{source.name} (tuning)")
    errors = _test(learners, source, keep_test)
    for spec in todo:
        mine = [(e[0], i) for i, (lr, e) in enumerate(zip(learners, errors))
                if lr.spec is spec and lr.failed is None]
        if not mine:
            failed[spec.label] = next(lr for lr in learners if lr.spec is spec)
            continue
        # no held-out row (a tiny task): the online error decides
        best = min(mine, key=lambda m: (learners[m[1]].online_error() if m[0] is None
                                        else m[0], m[1]))
        chosen[spec.label] = learners[best[1]].combo
    return chosen, failed


def _combo_text(learner):
    """``label k=v,...``: a tuning learner in the progress line."""
    return f"{learner.spec.label} " + ",".join(f"{k}={v}" for k, v in learner.combo.items())


def evaluate(source, specs, *, test=None, passes=1, shuffle=False, seed=0, noise=0.0,
             cv=0, repeats=1, tune_on="shuffled", multiclass_params=None, curve_every=0,
             shuffle_window=DEFAULT_SHUFFLE_WINDOW, progress=None, task="classification"):
    """Compare online learners on one task, the papers' way.

    Parameters
    ----------
    source : ArraySource, SvmlightSource or FilteredSource, or a callable
        ``trial -> (source, test_source)`` that generates fresh data for each repeat
        (the synthetic tasks).
    specs : list of AlgoSpec
    test : source, optional
        Test rows, evaluated (against their stored labels) after training. With test
        rows (``test``, a generated test set, ``cv`` folds) every learner averages its
        weights unless its ``params`` set ``average``: ``test_error`` is the
        averaged model's and ``last_test_error`` its last iterate's, both from the
        same run (the last iterate is the model ``average=False`` gives); with
        ``average`` set, ``test_error`` is that model's and ``last_test_error`` None.
        Without test rows nothing is averaged (the online error is the same).
    passes : int
        Passes over the training rows; with ``shuffle`` each pass is shuffled within a
        window of ``shuffle_window`` rows (a full shuffle when the data fit in the window).
    seed : int
        Seeds shuffling, label noise, folds and the tuning run.
    noise : float
        Training labels are replaced with probability ``noise`` (another class);
        mistakes and test error are counted against the clean labels ([AROW13] Sect. 5).
        For regression, the standard deviation of Gaussian noise added to the training
        targets (:func:`datasets.noisy_targets`); the errors are measured against the
        clean targets.
    cv : int
        If >= 2, K-fold cross-validation: row ``i`` is in fold ``floor(K u_i)`` with
        ``u_i`` = :func:`datasets.row_uniform` ``(seed, i)``; each fold is the test set of
        a model trained on the others. Results are means and standard deviations.
    repeats : int
        Independent trials (fresh synthetic data, or reshuffles with ``seed + r``).
    tune_on : {"shuffled", "first-half"}
        Held-out run for the specs' grids: a separate shuffled run of the training rows
        (seed ``seed + 7919``), or the first half of the rows in stored order; ties go to
        the earlier grid value. The choice is by online mistakes, which averaging does
        not change: the tuning runs do not average, and one choice serves both test
        errors.
    multiclass_params : dict, optional
        ``multiclass`` / ``k`` passed to every estimator.
    curve_every : int
        Record cumulative mistakes every this many examples (0: no curve).
    shuffle_window : int
    progress : cwkit.report.Progress, optional
        Told of every run (tuning runs included) and of each chunk learnt.
    task : {"classification", "regression"}
        ``"regression"``: ``specs`` name regressors (``cwkit.make_regressor``), learnt on
        the sources' real-valued labels; the online error is the progressive mean
        squared error (``online_absolute_error`` the mean absolute error), the test
        errors are mean squared errors (``test_absolute_error``: the model's mean
        absolute error), ``mistakes`` and ``n_classes`` are None and ``task`` is
        ``"regression"``. ``curve_every`` is not for regression.

    Returns
    -------
    dict
        The task object of the JSON schema in ``docs/cli.md``, plus ``curves`` when asked
        for: per trial, a list of ``(algo, examples, cumulative mistakes)`` rows. A
        learner whose model fails (a :class:`cwkit.ModelError`, or MemoryError) stops
        there and the others go on: its result's ``failed`` gives the data, the 1-based
        row of the data (whatever the chunks, shuffling, folds or binary task) and the
        error; warnings its model emits become its ``notes``.

    Raises
    ------
    Interrupted
        On KeyboardInterrupt once a run has started; its ``result`` is the task object of
        what was done (``"interrupted": True``). Before that, KeyboardInterrupt itself.
    """
    if cv and cv < 2:
        raise ValueError(f"cv must be >= 2, got {cv}")
    kind = _check_task(task)
    if kind is RegressionLearner and curve_every:
        raise ValueError("curve_every is for classification: a curve counts mistakes")
    multiclass_params = dict(multiclass_params or {})
    run = {"cwkit": __version__, "seed": seed, "noise": noise, "passes": passes,
           "shuffle": shuffle, "test": (None if cv else test.name if test is not None
                                        else "generated" if callable(source) else None),
           "cv": cv, "repeats": repeats, "tune_on": tune_on,
           "tuned": any(s.grid for s in specs)}
    trials, running = [], []
    n_trials = cv if cv else repeats
    first = None
    t_start = time.perf_counter()
    try:
        for trial in range(n_trials):
            first = _trial(source, test, specs, trial, trials, running, first, passes=passes,
                           shuffle=shuffle, seed=seed, noise=noise, cv=cv, tune_on=tune_on,
                           multiclass_params=multiclass_params, curve_every=curve_every,
                           shuffle_window=shuffle_window, progress=progress, kind=kind)
    except KeyboardInterrupt as exc:
        if running:  # the trial under way, with its counters so far
            learners, src, trial = running
            _locate_failures(learners, src, trial)
            trials.append((learners, [lr.untested for lr in learners], {}))
            first = first or src
        if not trials:
            raise
        result = _result(first, specs, trials, passes, t_start, curve_every)
        result["interrupted"] = True
        result["run"] = run
        raise Interrupted(result) from exc
    result = _result(first, specs, trials, passes, t_start, curve_every)
    result["run"] = run
    return result


def fitted_task(name, specs, fits, *, test=None, passes=1, run=None, seconds=0.0):
    """The task object of :func:`evaluate` for models fitted elsewhere (``cwkit eval
    --dask``: over data partitions), scored and summarised as :func:`evaluate` does.

    Parameters
    ----------
    name : str
        The training data's name.
    specs : list of AlgoSpec
    fits : list of tuple
        Per spec, ``(estimator, averaged, both, counters)``: the fitted estimator and
        ``averaged`` / ``both`` as :func:`make_tested` gave them, and ``counters`` its
        ``(rows of the data, examples, mistakes, updates, seconds)`` over every pass.
    test : source, optional
        Test rows: the test errors of the model of the parameters, its last iterate and
        its average, as :func:`evaluate` gives them.
    passes : int
        Passes over the data (the mixing rounds).
    run : dict, optional
        The task's ``run`` object.
    seconds : float
        Wall time of the whole task.

    Returns
    -------
    dict
        The task object of :func:`evaluate` (one trial).
    """
    learners = []
    for spec, (est, averaged, both, (_, examples, mistakes, updates, secs)) in zip(specs, fits):
        lr = Learner(spec, spec.params, est.classes_, {}, start=est)
        lr.averaged, lr.both = averaged, both
        lr.examples, lr.mistakes, lr.updates, lr.seconds = examples, mistakes, updates, secs
        learners.append(lr)
    errors = _test(learners, test) if test is not None else [_UNTESTED] * len(learners)
    first = _Fitted(name, max(f[3][0] for f in fits), max(f[0].n_features_in_ for f in fits),
                    np.unique(np.concatenate([f[0].classes_ for f in fits])))
    result = _summarize(first, specs, [(learners, errors, {})], passes)
    result.update(seconds=seconds, interrupted=False, run=run)
    return result


@dataclass
class _Fitted:
    """What :func:`_summarize` reads of the data of :func:`fitted_task`."""
    name: str
    n_examples: int
    n_features: int
    classes: np.ndarray


class Interrupted(KeyboardInterrupt):
    """:func:`evaluate` or :func:`train` was interrupted (Ctrl-C). ``result`` is what was
    done: for :func:`evaluate` the task object of the trials finished and the one under
    way, with its counters so far, and ``"interrupted": True``; for :func:`train` the
    :class:`Learner` as far as it got."""

    def __init__(self, result):
        super().__init__("interrupted")
        self.result = result


def _result(first, specs, trials, passes, t_start, curve_every):
    """The task object of :func:`evaluate` from its trials."""
    result = _summarize(first, specs, trials, passes)
    result["seconds"] = time.perf_counter() - t_start
    result["interrupted"] = False
    if curve_every:
        result["curves"] = [[(lr.spec.label, e, m) for lr in t[0] for e, m in lr.curve]
                            for t in trials]
    return result


def _trial(source, test, specs, trial, trials, running, first, *, passes, shuffle, seed,
           noise, cv, tune_on, multiclass_params, curve_every, shuffle_window, progress,
           kind=Learner):
    """Trial ``trial`` of :func:`evaluate`, appended to ``trials``; ``running`` holds
    ``[learners, source, trial]`` while its learners run. Returns the first source."""
    if callable(source):
        src, tst = source(trial)
    else:
        src, tst = source, test
    first = first or src
    _learn_classes(src)
    tseed = seed + (0 if cv else trial)
    keep_train = keep_test = None
    if cv:
        def keep_train(index, k=trial):
            return _fold(seed, index, cv) != k

        def keep_test(index, k=trial):
            return _fold(seed, index, cv) == k
    cfg = _StreamConfig(noise, tseed, shuffle, shuffle_window, keep_train,
                        kind is RegressionLearner)
    chosen, tune_failed = _tune(src, cfg, specs, passes, multiclass_params, tune_on,
                                progress, kind)
    tested = bool(cv) or tst is not None
    learners = [kind(s, {**s.params, **chosen.get(s.label, {})}, src.classes,
                     multiclass_params, tested, seed=tseed) for s in specs]
    for lr in learners:
        if lr.spec.label in tune_failed:  # not run: no value of its grid could learn
            tried = tune_failed[lr.spec.label]
            lr.failed = ValueError(f"every value of --grid failed on the tuning run; "
                                   f"the first ({tried.combo}): "
                                   + _describe(tried.failed))
            lr.failed_at = tried.failed_at
    running[:] = [learners, src, trial]
    _run(src, cfg, learners, passes, curve_every=curve_every, progress=progress,
         label=src.name)
    _locate_failures(learners, src, trial)
    if cv:
        test_errors = _test(learners, src, keep_test)
    elif tst is not None:
        test_errors = _test(learners, tst)
    else:
        test_errors = [lr.untested for lr in learners]
    running.clear()
    trials.append((learners, test_errors, chosen))
    return first


def _locate_failures(learners, source, trial):
    """Give each failed learner its ``failure`` (:func:`_failure`)."""
    for lr in learners:
        if lr.failed is not None:
            lr.failure = _failure(source, lr, trial)


def _failure(source, learner, trial):
    """The ``failed`` object of a result: where in which file the learner failed, and why."""
    name, row = source.origin(learner.failed_at)
    error = _describe(learner.failed)
    return {"trial": trial, "file": name, "row": row + 1, "error": error}


def _describe(exc):
    """The message of a model's error without the row of its call (a chunk's row, not the
    file's); other errors (MemoryError) also by their type."""
    if isinstance(exc, ModelError):
        return exc.reason
    if isinstance(exc, ValueError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _fold(seed, index, k):
    return np.floor(datasets.row_uniform(seed, index, stream=_FOLD_STREAM) * k).astype(np.intp)


def _mean_sd(values):
    if any(v is None for v in values):
        return None, None
    a = np.asarray(values, dtype=np.float64)
    return float(a.mean()), (float(a.std(ddof=1)) if a.size > 1 else None)


def _summarize(source, specs, trials, passes):
    results = []
    n_trials = len(trials)
    for j, spec in enumerate(specs):
        lrs = [t[0][j] for t in trials]
        online, online_sd = _mean_sd([lr.online_error() for lr in lrs])
        test, test_sd = _mean_sd([t[1][j][0] for t in trials])
        last, last_sd = _mean_sd([t[1][j][1] for t in trials])
        average, average_sd = _mean_sd([t[1][j][2] for t in trials])
        params = lrs[0].hyper_parameters()
        chosen = [t[2].get(spec.label) for t in trials]

        def avg(values):
            m = float(np.mean(values))
            return int(m) if n_trials == 1 else m

        failures = [lr.failure for lr in lrs if lr.failed is not None]
        notes = {}  # of every trial
        for lr in lrs:
            for text, count in lr.notes.items():
                notes[text] = notes.get(text, 0) + count
        result = {
            "algo": spec.label,
            "params": params,
            "examples": avg([lr.examples for lr in lrs]),
            "mistakes": None if lrs[0].mistakes is None else avg([lr.mistakes for lr in lrs]),
            "online_error": online,
            "updates": avg([lr.updates for lr in lrs]),
            "test_error": test,
            "last_test_error": last,
            "avg_test_error": average,
            "passes": passes,
            "seconds": float(sum(lr.seconds for lr in lrs)),
            "online_error_sd": online_sd,
            "test_error_sd": test_sd,
            "last_test_error_sd": last_sd,
            "avg_test_error_sd": average_sd,
            "trials": n_trials,
            "tuned": chosen if spec.grid and n_trials > 1 else (chosen[0] if spec.grid else None),
            "failed": failures[0] if failures else None,
            "notes": _note_lines(notes),
        }
        if lrs[0].task == "regression":
            result = _with_absolute_errors(result, lrs, [t[1][j] for t in trials])
        results.append(result)
    regression = any(t[0] and t[0][0].task == "regression" for t in trials)
    return {
        "data": source.name,
        **({"task": "regression"} if regression else {}),
        "n_examples": int(source.n_examples if source.n_examples is not None  # interrupted
                          else max(lr.examples // passes for t in trials for lr in t[0])),
        "n_features": int(source.n_features),
        "n_classes": None if regression else int(source.classes.size),
        "results": results,
    }


def _with_absolute_errors(result, learners, tested):
    """A regressor's result with its mean absolute errors (progressive, and of the model
    of its parameters on the test rows) and their standard deviations over the trials,
    each after the squared error it goes with."""
    online, online_sd = _mean_sd([lr.absolute / max(lr.examples, 1) for lr in learners])
    test, test_sd = _mean_sd([t[3] for t in tested])
    added = {"online_error": ("online_absolute_error", online),
             "test_error": ("test_absolute_error", test),
             "online_error_sd": ("online_absolute_error_sd", online_sd),
             "test_error_sd": ("test_absolute_error_sd", test_sd)}
    out = {}
    for key, value in result.items():
        out[key] = value
        if key in added:
            out[added[key][0]] = added[key][1]
    return out


def mean_ranks(tasks):
    """Mean rank of each algorithm across tasks ([AROW13] Table 1).

    On each task algorithms are ranked by test error when every one has a test error,
    else by online error; rank 1 is best and ties share the mean of their ranks
    (:func:`average_ranks`). Returns ``None`` for fewer than two tasks.
    """
    if len(tasks) < 2:
        return None
    totals = {}
    for task in tasks:
        ranks = task_ranks(task)
        for r, res in zip(ranks, task["results"]):
            totals.setdefault(res["algo"], []).append(float(r))
    return {algo: float(np.mean(v)) for algo, v in totals.items()}


def task_ranks(task):
    """Ranks of a task's results (1 = best), by test error if all have one, else online;
    learners that failed come last (sharing the last ranks)."""
    res = task["results"]
    ok = [r for r in res if not r.get("failed")]
    key = "test_error" if ok and all(r["test_error"] is not None for r in ok) \
        else "online_error"
    return average_ranks([np.inf if r.get("failed") else r[key] for r in res])


def average_ranks(values):
    """Ranks 1..n of ``values`` (smallest first); tied values share their mean rank."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(values.size)
    start = 0
    while start < values.size:
        stop = start + 1
        while stop < values.size and values[order[stop]] == values[order[start]]:
            stop += 1
        ranks[order[start:stop]] = (start + stop + 1) / 2  # mean of start+1 .. stop
        start = stop
    return ranks


def evaluate_tasks(sources, specs, *, tests=None, **options):
    """:func:`evaluate` on each task; returns ``{"tasks": [...], "mean_rank": ...}``."""
    tests = tests or [None] * len(sources)
    tasks = [evaluate(s, specs, test=t, **options) for s, t in zip(sources, tests)]
    return {"tasks": tasks, "mean_rank": mean_ranks(tasks)}
