"""Sources: the rows of an evaluation task, streamed as chunks in their stored order.

A source has ``name``, ``classes``, ``n_features``, ``batch_size``, ``n_examples`` (``None``
until known), :meth:`count` (the number of rows, reading the data if need be),
:meth:`chunks`, which yields ``(X, y, index)`` with ``index`` each row's position in the
task, :meth:`origin` (the data and row that a position is, to report a failure) and
``parsed`` (whether the rows of its chunks are valid as the svmlight parser checked them).
:mod:`cwkit.evaluate` reads a source once per pass; nothing here learns.
:func:`synthetic` builds the papers' synthetic tasks as fresh sources per trial;
:func:`rows_for_model` reads a file's rows for a fitted model (``cwkit predict``).
"""
import numpy as np

from ._lazy import issparse
from ._lazy import sparse as sp
from . import datasets
from .svmlight import (SvmlightError, default_jobs, iter_parsed_arrays, iter_svmlight,
                       scan_svmlight)
from .text import treat_rows
from .vw import DEFAULT_HASH_BITS, iter_vw, scan_vw

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_SHUFFLE_WINDOW",
    "SYNTHETIC",
    "TASKS",
    "ArraySource",
    "FilteredSource",
    "SvmlightSource",
    "VWSource",
    "rows_for_model",
    "synthetic",
]

DEFAULT_BATCH_SIZE = 4096
"""Rows per chunk unless told otherwise (:func:`cwkit.iter_svmlight`'s default too)."""

DEFAULT_SHUFFLE_WINDOW = 65536
"""Rows shuffled together when shuffling a stream (a full shuffle of smaller data)."""

TASKS = ("classification", "regression")
"""The learning tasks of :func:`cwkit.evaluate.evaluate` and :func:`cwkit.evaluate.train`."""

SYNTHETIC = ("crammer", "twonorm", "drift")
"""The synthetic tasks of :func:`synthetic`."""

CRAMMER_TRAIN_SIZE = 1000
"""Training rows of ``crammer`` by default: [ECCW08] Sect. 5."""

TWONORM_TRAIN_SIZE = 5550
"""Training rows of ``twonorm`` by default: the 75% training part of [GPA13]'s 7,400."""


class ArraySource:
    """A task held in memory: ``X`` (ndarray or CSR) and labels ``y``."""

    def __init__(self, X, y, name, *, batch_size=DEFAULT_BATCH_SIZE):
        self.X = sp.csr_matrix(X) if issparse(X) else np.asarray(X, dtype=np.float64)
        self.y = np.asarray(y)
        if self.X.shape[0] != self.y.shape[0]:
            raise ValueError(f"{name}: X has {self.X.shape[0]} rows but y has {self.y.size}")
        self.name = name
        self.batch_size = int(batch_size)
        self.n_examples = self.y.size
        self.n_features = self.X.shape[1]
        self.classes = np.unique(self.y)
        self.parsed = False

    def count(self):
        """Number of rows of the task."""
        return self.n_examples

    def origin(self, index):
        """``(name, row)``: the data and 0-based row that task position ``index`` is."""
        return self.name, int(index)

    def chunks(self):
        """Chunks ``(X, y, index)`` of ``batch_size`` rows."""
        for start in range(0, self.n_examples, self.batch_size):
            stop = min(start + self.batch_size, self.n_examples)
            yield self.X[start:stop], self.y[start:stop], np.arange(start, stop)


class SvmlightSource:
    """A task streamed from an svmlight/libsvm file, never loaded whole.

    :meth:`scan` reads the file once (bounded memory) to learn what a stream cannot know
    in advance and every model needs from its first round: the label set, the number of
    features and whether indices are zero-based (and the number of rows). It reads only
    each row's label and first and last index (:func:`cwkit.scan_svmlight` with
    ``check=False``): every pass parses every row and raises at the first bad line, and
    :meth:`verify` checks the whole file when an error must be reported before learning.
    When all three are given, the scan is skipped and the rows are counted on the first
    pass.
    ``hash_bits`` folds the columns into ``2**hash_bits`` (:func:`cwkit.load_svmlight`),
    which is then the number of features; ``n_jobs`` is the number of parsing threads
    (:func:`cwkit.load_svmlight`), ``parse_threads`` that number once the default is
    resolved; ``scan_jobs`` that of :meth:`scan` and :meth:`verify` (default
    ``n_jobs``), which read the file before any pass, while nothing else runs.
    ``rows``: the treatment of the chunks' rows, ``"raw"`` (as read) or ``"text"``
    (:func:`cwkit.text_rows`). ``parsed``: the chunks' rows are valid as the
    parser checked them
    (:func:`cwkit._rowdata.parsed_rows`), except with ``hash_bits``, whose sums of folded
    values may overflow. ``labels=False``: the labels are real-valued targets, whose set
    the scan does not collect (``classes`` is then empty): memory stays bounded.
    """

    array_chunks = True     # chunks(arrays=True)

    def __init__(self, path, *, name=None, batch_size=DEFAULT_BATCH_SIZE, n_features=None,
                 zero_based="auto", classes=None, hash_bits=None, n_jobs=None, rows="raw",
                 labels=True, scan_jobs=None):
        self.path = path
        self.labels = labels
        self.rows = rows
        self.n_jobs = n_jobs
        self.scan_jobs = n_jobs if scan_jobs is None else scan_jobs
        self.parse_threads = default_jobs() if n_jobs is None else int(n_jobs)
        self.name = str(path) if name is None else name
        self.batch_size = int(batch_size)
        self.hash_bits = hash_bits
        self.n_features = n_features if hash_bits is None else 1 << hash_bits
        self.zero_based = self.given_zero_based = zero_based
        self.classes = None if classes is None else np.asarray(classes)
        self.n_examples = None
        self.checked = False
        self.parsed = hash_bits is None

    @property
    def needs_scan(self):
        """Whether the label set, the width or the index base is still unknown."""
        return self.n_features is None or self.classes is None or self.zero_based == "auto"

    def scan(self, check=False):
        """Read the file once (:func:`cwkit.scan_svmlight`): rows, width, base, labels;
        with ``check`` every line is parsed and checked (the first bad one raises)."""
        info = scan_svmlight(self.path, zero_based=self.zero_based, hash_bits=self.hash_bits,
                             n_jobs=self.scan_jobs, check=check, labels=self.labels)
        self.checked = self.checked or check or info.nnz is not None
        self.zero_based = bool(info.zero_based)
        self.n_examples = int(info.n_samples)
        if self.n_features is None:
            self.n_features = int(info.n_features)
        if self.classes is None:
            self.classes = np.asarray(info.classes)
        return self

    def verify(self):
        """Parse and check every line unless done (raises :class:`cwkit.SvmlightError`
        at the first bad one): before reporting an error found in the summary, which a
        bad line earlier in the file must precede."""
        if not self.checked:
            scan_svmlight(self.path, zero_based=self.given_zero_based,
                          hash_bits=self.hash_bits, n_jobs=self.scan_jobs)
            self.checked = True

    def count(self):
        """Number of rows of the file (a :meth:`scan` when not yet known)."""
        if self.n_examples is None:
            self.scan()
        return self.n_examples

    def origin(self, index):
        """``(name, row)``: the file and its 0-based row (example, not line) ``index``."""
        return self.name, int(index)

    def chunks(self, arrays=False):
        """Chunks ``(X, y, index)`` as :func:`cwkit.iter_svmlight` reads them; with
        `arrays`, X is :class:`cwkit._rowdata.CSRArrays` where the rows are ``parsed``
        and raw (no scipy.sparse needed), a scipy CSR matrix otherwise."""
        if self.needs_scan:
            self.scan()
        start = 0
        width = self.n_features if self.hash_bits is None else None
        if arrays and self.parsed and self.rows == "raw":
            batches = iter_parsed_arrays(self.path, self.batch_size, width, self.zero_based,
                                         self.n_jobs)
        else:
            sp.preload()    # (imported on a helper thread while the first batches parse)
            batches = iter_svmlight(self.path, batch_size=self.batch_size, n_features=width,
                                    zero_based=self.zero_based, hash_bits=self.hash_bits,
                                    n_jobs=self.n_jobs)
        try:
            for X, y in batches:
                stop = start + X.shape[0]
                yield treat_rows(X, self.rows), np.asarray(y), np.arange(start, stop)
                start = stop
        except SvmlightError:
            # read with the width and base of a summary: the error a full check of the
            # file (with the options given) raises, as if it had been made first
            self.verify()
            raise
        self.n_examples = start


class VWSource(SvmlightSource):
    """A task streamed from a Vowpal Wabbit text file (:mod:`cwkit.vw`), never loaded whole.

    Its rows are ``2**hash_bits`` wide (default 18, Vowpal Wabbit's); :meth:`scan` reads
    the file once, checking every line, for the label set and the number of rows.
    ``rows`` is the treatment of the rows, as :class:`SvmlightSource`'s.
    :meth:`chunks` yields ``(X, y, index)``, and with ``weights=True`` also the rows'
    importance weights. ``parsed`` is False: the rows are checked again by the
    estimators. :meth:`count` and :meth:`origin` are :class:`SvmlightSource`'s, and
    ``labels`` its meaning.
    """

    zero_based = True
    parsed = False
    array_chunks = False
    weighted = True     # its lines carry importance weights (chunks(weights=True))

    def __init__(self, path, *, name=None, batch_size=DEFAULT_BATCH_SIZE, classes=None,
                 hash_bits=None, rows="raw", labels=True):
        self.path = path
        self.labels = labels
        self.rows = rows
        self.name = str(path) if name is None else name
        self.batch_size = int(batch_size)
        self.hash_bits = DEFAULT_HASH_BITS if hash_bits is None else int(hash_bits)
        self.n_features = 1 << self.hash_bits
        self.classes = None if classes is None else np.asarray(classes)
        self.n_examples = None

    @property
    def needs_scan(self):
        """Whether the label set is still unknown."""
        return self.classes is None

    def scan(self, check=True):
        """Read the file once (:func:`cwkit.scan_vw`): rows and labels, every line checked."""
        sp.preload()
        info = scan_vw(self.path, hash_bits=self.hash_bits, labels=self.labels)
        self.n_examples = int(info.n_samples)
        if self.classes is None:
            self.classes = np.asarray(info.classes)
        return self

    def verify(self):
        """Nothing to add: a pass raises at the first bad line, as a scan would."""

    def chunks(self, weights=False):
        """Chunks ``(X, y, index)`` (``(X, y, index, sample_weight)`` with `weights`)."""
        if self.needs_scan:
            self.scan()
        start = 0
        for X, y, w in iter_vw(self.path, batch_size=self.batch_size,
                               hash_bits=self.hash_bits):
            stop = start + X.shape[0]
            index = np.arange(start, stop)
            X = treat_rows(X, self.rows)
            yield (X, y, index, w) if weights else (X, y, index)
            start = stop
        self.n_examples = start


class FilteredSource:
    """A binary task cut out of a multi-class source (all-pairs / one-vs-all).

    Rows whose label is in ``positive`` get +1, in ``negative`` -1, others are dropped;
    ``index`` is the position among the kept rows.
    """

    def __init__(self, base, positive, negative, name):
        self.base = base
        self.positive, self.negative = tuple(positive), tuple(negative)
        self.name = name
        self.classes = np.array([-1, 1])
        self.n_features = base.n_features
        self.batch_size = base.batch_size
        self.n_examples = None
        self.parsed = base.parsed     # (subsets of its rows)
        self.parse_threads = getattr(base, "parse_threads", 0)

    def count(self):
        """Number of rows of the task (one pass over the base when not yet known)."""
        if self.n_examples is None:
            for _ in self.chunks():
                pass
        return self.n_examples

    def origin(self, index):
        """``(name, row)`` of the base data that task row ``index`` comes from (one pass
        over the base, up to that row)."""
        kept = 0
        for _, y, base_index in self.base.chunks():
            mask, _ = datasets.task_rows(y, self.positive, self.negative)
            n = int(np.count_nonzero(mask))
            if kept + n > index:
                return self.base.origin(base_index[mask][index - kept])
            kept += n
        raise IndexError(f"{self.name} has no row {index}")

    @property
    def weighted(self):
        """Whether the base's rows carry importance weights."""
        return getattr(self.base, "weighted", False)

    def chunks(self, weights=False):
        """The base's chunks, restricted to the task's rows and relabelled +-1 (with
        `weights`, the rows' importance weights too)."""
        start = 0
        for chunk in self.base.chunks(weights=True) if weights else self.base.chunks():
            mask, yb = datasets.task_rows(chunk[1], self.positive, self.negative)
            stop = start + yb.size
            if yb.size:
                rows = (chunk[0][mask], yb, np.arange(start, stop))
                yield (*rows, chunk[3][mask]) if weights else rows
            start = stop
        self.n_examples = start


def synthetic(kind, *, seed=0, n_samples=None, test_size=10000, s_long=10.0, s_short=1.0,
              n_per_phase=800, n_features=1000, batch_size=DEFAULT_BATCH_SIZE):
    """A synthetic task as a callable ``trial -> (source, test_source)``.

    Parameters
    ----------
    kind : {"crammer", "twonorm", "drift"}
        :func:`cwkit.datasets.make_crammer`, :func:`~cwkit.datasets.make_twonorm` or
        :func:`~cwkit.datasets.make_drift`.
    seed : int
        Trial ``r`` draws its training rows with ``numpy.random.default_rng([seed, r, 0])``
        and its test rows with ``default_rng([seed, r, 1])``.
    n_samples : int, optional
        Training rows of crammer (default ``CRAMMER_TRAIN_SIZE``) and twonorm (default
        ``TWONORM_TRAIN_SIZE``).
    test_size : int
        Test rows of crammer and twonorm (0: no test set); drift has none.
    s_long, s_short : float
        crammer's axis standard deviations.
    n_per_phase, n_features : int
        drift's rows per phase and vocabulary size.
    batch_size : int

    Returns
    -------
    callable
        ``trial -> (ArraySource, ArraySource or None)``, with attribute ``name``
        (``"synthetic:KIND"``); :func:`cwkit.evaluate.evaluate` accepts it as its source.
    """
    if kind not in SYNTHETIC:
        raise ValueError(f"kind must be one of {SYNTHETIC}, got {kind!r}")
    name = f"synthetic:{kind}"

    def draw(n, rng):
        if kind == "crammer":
            return datasets.make_crammer(n, s_long=s_long, s_short=s_short, random_state=rng)
        return datasets.make_twonorm(n, random_state=rng)

    def make(trial):
        train_rng = np.random.default_rng([seed, trial, 0])
        test_rng = np.random.default_rng([seed, trial, 1])
        test = None
        if kind == "drift":
            X, y = datasets.make_drift(n_per_phase, n_features=n_features,
                                       random_state=train_rng)
        else:
            default = CRAMMER_TRAIN_SIZE if kind == "crammer" else TWONORM_TRAIN_SIZE
            X, y = draw(n_samples or default, train_rng)
            if test_size:
                test = ArraySource(*draw(test_size, test_rng), name + ":test",
                                   batch_size=batch_size)
        return ArraySource(X, y, name, batch_size=batch_size), test

    make.name = name
    return make


def rows_for_model(path, width, *, batch_size=DEFAULT_BATCH_SIZE, zero_based="auto",
                   hash_bits=None, n_jobs=None, labels=False, rows="raw"):
    """The rows of an svmlight file as CSR chunks of exactly ``width`` columns.

    Features beyond ``width`` (never seen by a model of that width, so of weight 0) are
    dropped; a narrower chunk is widened. The labels are returned with ``labels=True``.

    Parameters
    ----------
    path : str or path-like
    width : int
        The model's number of features.
    batch_size : int
    zero_based : bool or "auto"
        Index base; ``"auto"`` scans the file first (zero-based if any index 0 occurs).
    hash_bits : int, optional
        Fold the columns into ``2**hash_bits`` first (as the model's training data was).
    n_jobs : int, optional
        Parsing threads (:func:`cwkit.load_svmlight`).
    labels : bool
        Yield ``(X, y)``, the rows and their labels, instead of ``X``.
    rows : {"raw", "text"}
        The treatment of the rows (:func:`cwkit.text_rows` for "text").

    Yields
    ------
    scipy.sparse.csr_matrix of shape (rows, width), or (it, ndarray) with ``labels``
    """
    if zero_based == "auto":
        sp.preload()    # the chunks are CSR: import scipy.sparse while the file is read
        zero_based = bool(scan_svmlight(path, n_jobs=n_jobs).zero_based)
    for X, y in iter_svmlight(path, batch_size=batch_size, zero_based=zero_based,
                              hash_bits=hash_bits, n_jobs=n_jobs):
        if X.shape[1] > width:
            X = X[:, :width]
        elif X.shape[1] < width:
            X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width))
        X = treat_rows(X, rows)
        yield (X, y) if labels else X
