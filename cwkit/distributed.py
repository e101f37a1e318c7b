"""Training any cwkit estimator over data partitions on a Dask cluster.

Iterative parameter mixing ([IPM10] Fig. 3): every round, each partition
("shard") makes one online pass over its rows starting from the mixed model,
and the driver mixes the shards' models into the next one
(:func:`cwkit.models.mixing.mix`: the average, weighted uniformly or by each
shard's number of updates; for first-order models the average of each weight's
changes over the shards that changed it; for Gaussian-weight models the
KL-minimising combination of [MDCW10]).  The shards are read (or taken from a Dask array)
by the workers and stay in their memory across rounds: only models travel,
one down and one up per shard and round.

Needs the optional ``dask`` and ``distributed`` packages
(``pip install dask distributed``).
"""
import copy
import io
import os
from concurrent.futures import CancelledError
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from ._lazy import issparse, sparse as sp

from ._rowdata import as_rows
from .kernels import KernelMixin
from .models import mixing
from .models.mixing import kernel_refused
from .models.interface import ModelError
from .svmlight import SvmlightError, load_svmlight

__all__ = ["MIXING", "WorkerLost", "cut", "fit", "resolved_mixing"]

#: The values of ``mixing``.
MIXING = ("auto", "average", "updates", "confidence", "touched")

_COMPRESSED = ((b"\x1f\x8b", ".gz"), (b"BZh", ".bz2"), (b"\xfd7zXZ\x00", ".xz"))


def _require_dask():
    try:
        import dask.array  # noqa: F401
        import distributed
    except ImportError:
        raise ImportError("cwkit.distributed needs Dask: pip install dask distributed (or, "
                          'in a clone of cwkit, pip install -e ".[dask]")') from None
    return distributed


# ---------------------------------------------------------------------------- partitions

def cut(path, n):
    """Byte ranges ``(start, stop)`` cutting the file at `path` into at most `n` parts at
    line boundaries (each part starts at the beginning of a line; empty parts dropped)."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        head = f.read(6)
        if any(head.startswith(magic) for magic, _ in _COMPRESSED) or any(
                path.lower().endswith(suffix) for _, suffix in _COMPRESSED):
            raise ValueError(f"{path}: a compressed file cannot be cut into byte ranges; "
                             "give a list of files (one per partition) or decompress it")
        size = f.seek(0, os.SEEK_END)
        bounds = [0]
        for i in range(1, n):
            pos = max(size * i // n, bounds[-1])
            if pos > 0:
                f.seek(pos - 1)
                f.readline()      # to the start of the line after byte pos - 1
                pos = f.tell()
            bounds.append(min(pos, size))
    bounds.append(size)
    return [(a, b) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


class _Range(io.RawIOBase):
    """Bytes [start, stop) of a file, named as the file (for the reader's messages)."""

    def __init__(self, path, start, stop):
        self.name = path
        self._f = open(path, "rb")   # noqa: SIM115 - closed by close()
        self._f.seek(start)
        self._left = stop - start

    def readable(self):
        return True

    def fileno(self):
        """The file's descriptor: the reader sizes its arrays from the file's size (an
        upper bound of the range's; pages it never writes are never resident)."""
        return self._f.fileno()

    def readinto(self, b):
        n = min(len(b), self._left)
        if n <= 0:
            return 0
        got = self._f.readinto(memoryview(b)[:n])
        self._left -= got
        return got

    def close(self):
        self._f.close()
        super().close()


def _lines_before(path, start):
    """The number of lines before byte `start` of the file."""
    count = 0
    with open(path, "rb") as f:
        while start > 0:
            block = f.read(min(start, 1 << 20))
            if not block:
                break
            count += block.count(b"\n")
            start -= len(block)
    return count


@dataclass
class _Shard:
    """The rows of one partition, held by a worker across rounds."""

    X: object
    y: np.ndarray
    name: str
    first_row: int = 0        # the position of row 0 in `name` (set once all are known)
    stats: dict = field(default_factory=dict)
    est: object = None        # the estimator training on it, kept across rounds (_train)
    rows: object = None       # X validated, once (`validated`)

    def __getstate__(self):   # a shard sent to another worker: validated again there
        return {**self.__dict__, "rows": None}

    def validated(self):
        """The rows validated (`as_rows`), in the first task that needs them, and kept
        for every later one; a float64 copy made for the view replaces the input."""
        if self.rows is None:
            self.rows = as_rows(self.X, first_row=self.first_row)
            self.X = self.rows.X
        return self.rows

    def __sizeof__(self):
        """Bytes of the rows, labels and model state held (what Dask's memory accounting
        reads, through ``sys.getsizeof``: spilling and moving shards go by it)."""
        X = self.X
        arrays = [X.data, X.indices, X.indptr] if issparse(X) else [np.asarray(X)]
        arrays += [np.asarray(self.y)]
        if self.est is not None:
            arrays += list(self.est._model.state.values())
        return object.__sizeof__(self) + sum(a.nbytes for a in arrays)


def _threads():
    """The threads of the Dask worker running the task (1 outside one): its share of the
    machine's cores, which the reader's parsing threads keep to (with the default, as
    many threads as cores, two workers on two cores would run four)."""
    try:
        from distributed import get_worker
        worker = get_worker()
    except (ImportError, ValueError):
        return 1
    return max(1, int(getattr(worker, "nthreads", 1) or 1))


def _parse(path, start, stop, zero_based, n_features):
    """Read one partition: a whole file (`start` None) or a byte range of it. With
    ``zero_based="auto"`` the raw indices are kept (the base is decided over every
    shard, :func:`_finish`)."""
    src = path if start is None else io.BufferedReader(_Range(path, start, stop), 1 << 20)
    raw = zero_based == "auto"
    try:
        X, y = load_svmlight(src, zero_based=True if raw else zero_based,
                             n_features=None if raw else n_features, n_jobs=_threads())
    except SvmlightError as exc:
        if not start:
            raise
        line = exc.line + _lines_before(path, start)
        raise SvmlightError(exc.path, line, exc.token, exc.message) from None
    finally:
        if start is not None:
            src.close()
    stats = {"rows": X.shape[0], "width": X.shape[1], "classes": np.unique(y),
             "zero": bool(X.nnz and X.indices.min() == 0)}
    return _Shard(X, np.asarray(y), path, stats=stats)


def _finish(shard, shift, width, first_row):
    """The shard with its columns in the decided base (`shift`: raw indices of a one-based
    file, shifted down by one here, in place: no second copy of the indices) and width."""
    X = shard.X
    if shift and not shard.stats.get("shifted"):
        np.subtract(X.indices, 1, out=X.indices)
        shard.stats["shifted"] = True      # (a task run again must not shift twice)
    X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width))
    return _Shard(X, shard.y, shard.name, first_row)


def _stack(blocks):
    """One partition of a Dask array: its row blocks ``(X_j, y_j)`` stacked."""
    xs = [b.tocsr() if hasattr(b, "tocsr") and not isinstance(b, np.ndarray) else b
          for b, _ in blocks]
    ys = [np.asarray(y).ravel() for _, y in blocks]
    if len(xs) == 1:
        X = xs[0]
    elif any(issparse(x) for x in xs):
        X = sp.vstack([sp.csr_matrix(x) for x in xs], format="csr")
    else:
        X = np.concatenate(xs)
    y = np.concatenate(ys) if len(ys) > 1 else ys[0]
    stats = {"rows": X.shape[0], "width": X.shape[1], "classes": np.unique(y)}
    return _Shard(X, y, "dask array", stats=stats)


def _stats(shard):
    return shard.stats


def _choices(est, shard, n_classes):
    """What `est` settles from the first rows of its data (``covariance="auto"``,
    ``intercept_scaling="auto"``), as ``fit`` does: from the first shard's rows."""
    est = copy.deepcopy(est)
    est._choose(shard.validated(), n_classes)
    return est._choices()


def _with_first_row(shard, first_row):
    return _Shard(shard.X, shard.y, shard.name, first_row)


# ---------------------------------------------------------------------------- one round

class _RoundLost(Exception):
    """A round's task, or the model copy it needed, went with a worker that died: the
    round is sent again (`ROUND_TRIES`)."""


#: How many times a round is sent before its lost tasks are reported (`WorkerLost`).
ROUND_TRIES = 3


class WorkerLost(RuntimeError):
    """A shard could not be trained: its worker kept dying (more often than Dask's
    ``distributed.scheduler.allowed-failures``), or every copy of what it needed was lost."""


class _ShardFailure(Exception):
    """A model error in a shard, with the row of the partition's data."""

    def __init__(self, name, row, reason):
        super().__init__(name, row, reason)
        self.name, self.row, self.reason = name, row, reason


def _train(shell, state, shard, seed):
    """One pass over the shard (shuffled with `seed` if given) of the shard's estimator,
    a copy of `shell` made in the first round and kept on the worker with the shard
    (no copy per round), whose model state is set to `state` (``{"state": arrays,
    "t": rounds so far}``). The pass is the one ``partial_fit`` makes of a batch,
    counted as it counts it (``_pass``), over the shard's rows, validated once
    (`_Shard.validated`: a tenth to a fifth of a first-order pass over them), by the
    choices made from the first shard or by its first round; shuffled, it takes them in
    the seed's permutation without copying them.

    Returns a dict of plain arrays and numbers (which Dask sends without pickling):
    the model's ``state`` (the estimator's own arrays, read by the driver before the
    next round sets them), the pass's ``rounds``, ``mistakes`` and ``updates``, the
    ``window`` of progressive scores that calibrates ``predict_proba`` (this pass's
    last rounds), and the ``warnings`` it emitted as (category, text) pairs.
    """
    if shard.est is None:
        shard.est = copy.deepcopy(shell)   # tasks on one worker share the objects they receive
    est = shard.est
    for key, arr in state["state"].items():
        est._model.state[key][...] = arr
    est.t_ = state["t"]
    est._calibration = copy.deepcopy(shell._calibration)    # (empty)
    rows, y = shard.validated(), shard.y
    order = (np.arange(y.size) if seed is None
             else np.random.default_rng(seed).permutation(y.size))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            est._pass(rows, y, order)
        except ModelError as exc:      # (exc.row: the row of X, wherever in the order)
            raise _ShardFailure(shard.name, shard.first_row + exc.row, exc.reason) from None
    return {"state": est._model.state, "rounds": est.t_ - state["t"],
            "mistakes": int(est.last_mistakes_), "updates": int(est.last_n_updates_),
            "window": est._calibration.rounds(),
            "warnings": [(w.category, str(w.message)) for w in caught]}


# ---------------------------------------------------------------------------- the driver

def _client(distributed, client):
    """The client to use, and a function closing what was made here."""
    if client is None:
        cluster = distributed.LocalCluster(processes=True, threads_per_worker=1,
                                           dashboard_address=":0")
        made = distributed.Client(cluster)
        return made, lambda: (made.close(), cluster.close())
    if isinstance(client, (str, os.PathLike)):      # a scheduler's address
        made = distributed.Client(os.fspath(client))
        return made, made.close
    if not isinstance(client, distributed.Client):
        raise TypeError("client must be a distributed.Client or the address of a "
                        f"scheduler (tcp://host:8786), not {type(client).__name__}")
    return client, lambda: None


#: Threads seen on each cluster (by its scheduler's id) when a fit started.
_SEEN = {}

#: Seconds a fit waits for the workers of an earlier fit to be back (a worker that dies
#: is replaced by its nanny, in a few seconds) before it counts fewer threads.
REPLACE_WAIT = 60.0


def _cluster_threads(client):
    """The cluster's threads (the default number of partitions of one file), once as
    many as at the start of an earlier fit on it are back, or `REPLACE_WAIT` seconds
    have passed (then fewer, with a warning): so that the partitions do not depend on
    which workers an earlier fit left running."""
    key = client.scheduler_info()["id"]
    expected = _SEEN.get(key, 0)
    deadline = time.monotonic() + REPLACE_WAIT
    threads = sum(client.nthreads().values())
    while threads < expected and time.monotonic() < deadline:
        time.sleep(0.1)
        threads = sum(client.nthreads().values())
    if threads < expected:
        warnings.warn(f"the Dask cluster has {threads} worker threads, {expected} when an "
                      f"earlier fit started (its workers were not back within "
                      f"{REPLACE_WAIT:g} s): the file is cut into {threads} partitions, "
                      "which train another model (partitions= fixes their number)",
                      RuntimeWarning, stacklevel=4)
    _SEEN[key] = threads
    return threads


def _file_shards(client, data, partitions, zero_based, n_features):
    """Futures of the shards of svmlight files: one per file, or ranges of one file."""
    if isinstance(data, (str, os.PathLike)):
        path = os.fspath(data)
        n = partitions or _cluster_threads(client)
        parts = [(path, a, b) for a, b in cut(path, n)] or [(path, None, None)]
    else:
        if partitions is not None and partitions != len(data):
            raise ValueError("partitions: a list of files is one partition per file")
        parts = [(os.fspath(p), None, None) for p in data]
    for path, *_ in parts:
        if not os.path.exists(path):
            raise FileNotFoundError(2, "No such file or directory", path)
    shards = [client.submit(_parse, *part, zero_based, n_features, pure=False)
              for part in parts]
    stats = client.gather([client.submit(_stats, s, pure=False) for s in shards])
    one_based = zero_based is False or (zero_based == "auto"
                                        and not any(s["zero"] for s in stats))
    shift = zero_based == "auto" and one_based
    width = max(max(s["width"] - shift, 0) for s in stats)
    if n_features is not None:
        if width > n_features:
            raise ValueError(f"{parts[0][0]}: a feature index is beyond "
                             f"n_features={n_features}")
        width = n_features
    firsts = _first_rows([p[0] for p in parts], [s["rows"] for s in stats])
    shards = [client.submit(_finish, s, shift, width, first, pure=False)
              for s, first in zip(shards, firsts)]
    return shards, stats, width


def _first_rows(names, rows):
    """The position of each shard's first row in its file (ranges of a file follow on)."""
    out, seen = [], {}
    for name, n in zip(names, rows):
        out.append(seen.get(name, 0))
        seen[name] = seen.get(name, 0) + n
    return out


def _array_shards(client, X, y, partitions):
    """Futures of the shards of Dask arrays (X, y): one per row block, or `partitions`
    runs of consecutive blocks."""
    import dask
    import dask.array as da
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D Dask array, got {X.ndim} dimensions")
    if X.numblocks[1] > 1:
        X = X.rechunk({1: -1})
    y = da.asarray(y)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} labels")
    y = y.rechunk((X.chunks[0],))
    blocks = list(zip(X.to_delayed()[:, 0].tolist(), y.to_delayed().tolist()))
    n = len(blocks) if partitions is None else min(partitions, len(blocks))
    groups = [g.tolist() for g in np.array_split(np.arange(len(blocks)), n) if g.size]
    shards = client.compute([dask.delayed(_stack)([blocks[j] for j in g]) for g in groups])
    stats = client.gather([client.submit(_stats, s, pure=False) for s in shards])
    firsts = np.concatenate([[0], np.cumsum([s["rows"] for s in stats])[:-1]])
    shards = [client.submit(_with_first_row, s, int(f), pure=False)
              for s, f in zip(shards, firsts)]
    return shards, stats, X.shape[1]


def _is_arrays(data):
    return (isinstance(data, tuple) and len(data) == 2
            and all(hasattr(a, "to_delayed") or hasattr(a, "shape") for a in data)
            and hasattr(data[0], "to_delayed"))


def resolved_mixing(estimator, mixing_="auto"):
    """The mixing rule :func:`fit` applies to the fitted `estimator` for the option
    `mixing_`: ``"auto"`` resolved (``"confidence"`` for a Gaussian-weight model, else
    ``"average"``), any other as it is."""
    return _rule(estimator._model, mixing_)[0] if mixing_ == "auto" else mixing_


def _rule(model, mixing_):
    """(mixing rule, weigh by updates) of the option ``mixing``."""
    if mixing_ == "auto":
        return ("confidence" if mixing.is_gaussian(model) else "average"), False
    if mixing_ == "updates":
        return "average", True
    return mixing_, False


def _gather_round(distributed, futures):
    """The shards' results, or the first failure as the error a local run gives."""
    try:
        distributed.wait(futures)
        for i, f in enumerate(futures):
            if f.status == "error":
                exc = f.exception()
                if isinstance(exc, _ShardFailure):
                    raise ModelError(f"{exc.name}, row {exc.row + 1}: {exc.reason}",
                                     row=exc.row, reason=exc.reason) from None
                f.result()    # raises it (a data error, or a worker that kept dying)
            elif f.status != "finished":
                raise _RoundLost(f"shard {i + 1}: its task was lost ({f.status})")
        return futures[0].client.gather(futures)     # one request for all
    except distributed.KilledWorker as exc:
        n = exc.allowed_failures + 1
        raise WorkerLost(f"a worker died each time it ran a shard's pass, on {n} "
                         f"worker{'s' * (n > 1)} (Dask's distributed.scheduler."
                         f"allowed-failures is {n - 1}); no model") from None
    except CancelledError as exc:   # the scheduler forgot a task whose inputs died
        futures[0].client.cancel(futures)
        raise _RoundLost(str(exc).splitlines()[0]) from None
    except BaseException:
        futures[0].client.cancel(futures)    # no shard goes on once the round has failed
        raise


def _send_round(client, distributed, est, shell, shards, seeds):
    """One round: every shard's pass from the mixed model, sent again (with a new copy
    of the estimator `shell`) when a worker that died took a task or the model copies
    with it.  Returns (the shards' results, the shell in use)."""
    for attempt in range(ROUND_TRIES):
        try:
            if attempt:
                shell = client.scatter(est, broadcast=True, hash=False)
            # the state goes straight to every worker (a copy each, so that the task of
            # a worker that dies can re-run on another; in the task graph it would pass
            # the scheduler), as a dict of arrays, which Dask sends without pickling (in
            # a list: a dict given to scatter would name the data by its keys)
            [sent] = client.scatter([{"state": est._model.state, "t": est.t_}],
                                    broadcast=True, hash=False)
            futures = [client.submit(_train, shell, sent, s,
                                     None if seed is None else int(seed), pure=False)
                       for s, seed in zip(shards, seeds)]
            return _gather_round(distributed, futures), shell
        except (_RoundLost, distributed.comm.CommClosedError) as exc:  # (a worker died
            lost = exc                                                  # mid-scatter)
    raise WorkerLost(f"{_first_line(lost)}: the workers holding the model it needed "
                     f"died, {ROUND_TRIES} times; no model")


def fit(estimator, data, *, client=None, rounds=1, mixing="auto", shuffle=False,
        partitions=None, zero_based="auto", n_features=None, callback=None):
    """Fit a cwkit estimator over data partitions on Dask by iterative parameter mixing.

    Parameters
    ----------
    estimator : cwkit estimator
        Any estimator (``cwkit.make(name, ...)``); its parameters are used, its
        ``n_passes`` and ``shuffle`` are not (``rounds`` and ``shuffle`` here are).
        Kernel models (``kernel=...``) are refused before any work: a support set is
        one shard's rows, and no average of support sets is a model; their
        approximations on explicit features (``kernel_approx=...``) are linear
        models and train over partitions.
    data : list of paths, one path, or a pair of Dask arrays ``(X, y)``
        svmlight/libsvm files, one partition per file (compressed ones too); one
        uncompressed file, cut into ``partitions`` byte ranges at line boundaries,
        each read by the worker that trains on it (with as many parsing threads as the
        worker has, Dask's ``nthreads``); or Dask arrays whose row blocks
        (dense or scipy.sparse) are the partitions.
    client : distributed.Client or str, optional
        The cluster to use, or its scheduler's address (``"tcp://host:8786"``: a client
        made and closed here); default a ``LocalCluster`` of worker processes (one per
        core), closed afterwards.
    rounds : int
        Mixing rounds: one pass of every shard per round.
    mixing : {"auto", "average", "updates", "confidence", "touched"}
        ``"average"``: uniform mean of the models; ``"updates"``: weighted by each
        shard's number of updates in the round ([IPM10]; uniform if none updated);
        ``"confidence"``: the KL-minimising combination of Gaussians ([MDCW10]; CW,
        AROW, SOP only); ``"touched"``: each weight moves by the mean of the changes
        of the shards that changed it in the round, so that a change made by one shard
        only is kept whole (first-order rules: perceptron, avg-perceptron, pa, pa1, pa2,
        pa-ls, reg-pa, l2-pa, soft-reg-pa; it helps the PA rules on sparse data whose
        shards see different features, docs/scaling.md);
        ``"auto"``: ``"confidence"`` for Gaussian-weight rules, else ``"average"``.
        See :mod:`cwkit.models.mixing` for what each means per kind of state, and for
        averaged models (``average=True``).
    shuffle : bool
        Shuffle each shard's rows every round (seeds drawn from the estimator's
        ``random_state``); else their stored order.
    partitions : int, optional
        For one path: the number of byte ranges (default: the cluster's threads, once
        as many are back as when an earlier fit on it started: `_cluster_threads`); for
        Dask arrays: runs of consecutive row blocks (default: one per block).
    zero_based : bool or "auto"
        Index base of the files (``"auto"``: zero-based if any index 0 occurs in any).
    n_features : int, optional
        Number of features of the files (default: the largest index found).
    callback : callable, optional
        Called after each round with a dict: ``round``, ``examples``, ``mistakes``
        (progressive, each shard's on its own rows), ``updates``, ``shards``,
        ``bytes`` (the state arrays sent down and back up), ``seconds``, and
        ``estimator``: the model mixed so far, a working copy (to score, not to keep:
        the next round updates it).

    Returns
    -------
    estimator
        The same estimator, fitted (``t_``, ``mistakes_``, ``n_updates_`` summed over
        shards and rounds); it is left as it was when anything fails.

    Raises
    ------
    ImportError
        If Dask is not installed.
    ValueError
        Before any work: a kernel model, a bad ``rounds`` or ``mixing``.
    TypeError
        Before any work: a ``client`` that is neither a client nor an address.
    cwkit.SvmlightError
        A malformed row, named by ``FILE:LINE`` as in a local read.
    cwkit.ModelError
        An update that fails, naming the file (or ``dask array``) and its row.
    WorkerLost
        A shard whose worker died more often than Dask's ``allowed-failures`` (a
        worker that dies is otherwise replaced and its tasks re-run elsewhere), a
        round lost `ROUND_TRIES` times, or a connection to the cluster that closed.

    Notes
    -----
    One shard and ``rounds=R`` without shuffling make R passes in the stored order
    (mixing one model is the identity): the model equals ``fit`` with
    ``n_passes=R``, bit for bit.

    ``"touched"`` mixes the round's start ``w_0`` and the shards' models ``w_i`` as
    ``w_j = w_0j + sum_i (w_ij - w_0j) / n_j``, ``n_j`` the number of shards with
    ``w_ij != w_0j`` (``w_j = w_0j`` where ``n_j = 0``): the uniform mean of [IPM10]
    taken, weight by weight, over the shards that moved it.  Averaged models
    (``average=True``, avg-perceptron) report the mean of the iterates of every round
    of every shard, each counted once, under every rule, however unequal the shards,
    as a sequential run's average counts each row's; their round count is every row
    learnt (AdaGrad's stays the shards' mean, which its RDA weights use, and its
    averaged weights the (weighted) mean of the shards').
    """
    distributed = _require_dask()
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1:
        raise ValueError(f"rounds must be a positive int, got {rounds!r}")
    if mixing not in MIXING:
        raise ValueError(f"mixing must be one of {MIXING}, got {mixing!r}")
    if isinstance(estimator, KernelMixin):
        raise kernel_refused(estimator._name())
    client, close = _client(distributed, client)
    try:
        return _fit(distributed, client, estimator, data, rounds, mixing, shuffle,
                    partitions, zero_based, n_features, callback)
    except distributed.comm.CommClosedError as exc:
        raise WorkerLost(f"a connection to the Dask cluster closed during the fit "
                         f"({_first_line(exc)}); no model") from None
    finally:
        close()


def _first_line(exc):
    """The first line of `exc`'s text, or its type's name when it has none."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _fit(distributed, client, estimator, data, rounds, mixing_, shuffle, partitions,
         zero_based, n_features, callback):
    if _is_arrays(data):
        shards, stats, width = _array_shards(client, *data, partitions)
    else:
        shards, stats, width = _file_shards(client, data, partitions, zero_based, n_features)
    keep = [i for i, s in enumerate(stats) if s["rows"] > 0]
    shards = [shards[i] for i in keep]
    if not shards:
        raise ValueError("no rows to train on (empty data)")
    classes = np.unique(np.concatenate([stats[i]["classes"] for i in keep]))
    if len(classes) < 2:
        raise ValueError(f"{type(estimator).__name__} needs samples of at least 2 classes; "
                         f"the data hold only one class ({classes[0].item()!r})")
    if width < 1:
        raise ValueError("Found data with 0 feature(s) while a minimum of 1 is required.")
    est = type(estimator)(**estimator.get_params())
    est._validate_params()
    est._restore_choices(client.submit(_choices, est, shards[0], len(classes),
                                       pure=False).result())
    est._reset(classes, width)
    est.mistakes_ = est.n_updates_ = 0
    model = est._model
    rule, by_updates = _rule(model, mixing_)
    mixing.check(model, rule)    # before any work
    rng = np.random.default_rng(est.random_state)
    nbytes = sum(a.nbytes for a in model.state.values())
    notes = {}
    # the estimator with its spec, once (again only when a worker took it with it);
    # each round then sends only the state arrays
    shell = client.scatter(est, broadcast=True, hash=False)
    for r in range(rounds):
        t_start = time.perf_counter()
        seeds = rng.integers(2**63, size=len(shards)) if shuffle else [None] * len(shards)
        results, shell = _send_round(client, distributed, est, shell, shards, seeds)
        c = np.array([res["updates"] for res in results], dtype=np.float64)
        c = c if by_updates and c.sum() > 0 else None
        mixed = mixing.mix(model, [res["state"] for res in results], c, rule,
                           start=model.state)
        for key, arr in mixed.items():
            model.state[key][...] = arr
        examples = sum(res["rounds"] for res in results)
        mistakes = sum(res["mistakes"] for res in results)
        updates = sum(res["updates"] for res in results)
        est.t_ += examples
        est.mistakes_ += mistakes
        est.n_updates_ += updates
        for res in results:
            for category, text in res["warnings"]:
                notes.setdefault(text, category)
        if callback is not None:
            callback({"round": r + 1, "examples": examples, "mistakes": mistakes,
                      "updates": updates, "shards": len(shards),
                      "bytes": 2 * nbytes * len(shards),
                      "seconds": time.perf_counter() - t_start, "estimator": est})
    for text, category in notes.items():
        warnings.warn(text, category, stacklevel=3)
    # predict_proba's calibration: the progressive scores of the last round's passes
    # (each shard's last rounds, in shard order, the window keeping the most recent)
    for res in results:
        est._calibration.add(*res["window"])
    with estimator._state_lock():
        estimator._restore_choices(est._choices())
        for key in ("classes_", "n_features_in_", "t_", "mistakes_", "n_updates_", "_model",
                    "_calibration"):
            setattr(estimator, key, getattr(est, key))
    return estimator
