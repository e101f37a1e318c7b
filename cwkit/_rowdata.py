"""Input validation: turn X into the row view the compiled drivers read."""
import sys
import threading
from typing import NamedTuple

import numpy as np

from ._lazy import issparse
from ._lazy import sparse as sp
from . import _core
from ._threads import try_start, usable_cores

_EMPTY_I64 = np.empty(0, dtype=np.int64)
_EMPTY_I32 = np.empty(0, dtype=np.int32)
_ARANGE_CACHE = {}
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_I32 = np.dtype(np.int32)
_PTR = (np.dtype(np.int32), np.dtype(np.int64))   # the indptr types of _core._csr_increasing
# From this many stored values on, a CSR matrix's values are checked for NaN / inf on a
# second core while its indices are checked (two reads of memory at once; a thread
# costs about 0.1 ms, the two reads of 2**20 values about 1.5 ms).
PARALLEL_CHECK_MIN = 1 << 20


class Rows(NamedTuple):
    """A validated batch of rows: CSR arrays, or a dense C-contiguous block.

    `view` (a `cwkit._core.RowView`) is what every driver takes first.  (A named
    tuple: made once per ``partial_fit`` call, where a frozen dataclass costs a
    microsecond.)
    """

    X: object            # the float64 CSR matrix (its rows' unique indices in any order:
    #                      `view` has them sorted) or dense ndarray
    view: _core.RowView
    n_rows: int
    n_features: int

    @property
    def max_nnz(self):
        """The largest number of stored entries of a row (for scratch buffers)."""
        if not self.sparse:
            return self.n_features
        return int(np.diff(self._csr.indptr).max()) if self.n_rows else 0

    @property
    def _csr(self):
        """What holds the CSR arrays (``data``, ``indptr``) of sparse rows."""
        return self.X

    @property
    def sparse(self):
        return issparse(self.X)

    @property
    def unchecked(self):
        """Whether the pass is to check these rows (:func:`unchecked_rows`)."""
        return self.view.is_unchecked

    def counting(self, clean=None, scores=None):
        """These rows with the per-pass options of the drivers' counters
        (``RowView.counting``): rounds counted against ``clean``, scores
        written to ``scores``; none given: the plain rows."""
        return self._replace(view=self.view.counting(clean, scores))

    def weighted(self, weights):
        """These rows learnt with the importance weights `weights` (float64, one per
        row, checked by ``cwkit._weights``; ``RowView.weighted``)."""
        return self._replace(view=self.view.weighted(weights))

    def density(self, n_rows):
        """The fraction of nonzero entries of the first `n_rows` rows, counted in their
        values (so that a dense array and its CSR copy, explicit zeros or not, agree)."""
        m = min(self.n_rows, n_rows)
        X = self._csr if self.sparse else self.X
        if self.sparse:
            nnz = np.count_nonzero(X.data[X.indptr[0]:X.indptr[m]])
        else:
            nnz = np.count_nonzero(X[:m])
        return nnz / max(m * self.n_features, 1)

    def mean_squared_norm(self, n_rows):
        """The mean of the squared L2 norms of the first `n_rows` rows (0 for none)."""
        m = min(self.n_rows, n_rows)
        X = self._csr if self.sparse else self.X
        values = X.data[X.indptr[0]:X.indptr[m]] if self.sparse else np.ravel(X[:m])
        return float(np.dot(values, values)) / max(m, 1)


class CSRArrays(NamedTuple):
    """The arrays of a CSR matrix, without scipy.sparse: what the svmlight parser gives
    an evaluation's learners (:func:`parsed_rows`), which read only the rows' view, so
    that ``cwkit eval`` need not import scipy.sparse (about a quarter of a second of
    CPU).  `indptr` is int64, `indices` int32, `data` float64."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple

    def matrix(self):
        """The scipy CSR matrix of these arrays (not copied)."""
        return sp.csr_matrix((self.data, self.indices, self.indptr), shape=self.shape,
                             copy=False)

    def row_slice(self, start, stop):
        """Rows ``start:stop``: views of the values and indices, indptr from 0."""
        a, b = self.indptr[start], self.indptr[stop]
        return CSRArrays(self.data[a:b], self.indices[a:b],
                         self.indptr[start:stop + 1] - a, (stop - start, self.shape[1]))


class _ArrayRows(Rows):
    """`Rows` of `CSRArrays`: ``X``, the scipy matrix, is made on its first read (a
    kernel form's model or a narrower model's padding reads it; the first-order and
    diagonal passes read only ``view``)."""

    @property
    def X(self):
        matrix = self.__dict__.get("matrix")
        if matrix is None:
            matrix = self.__dict__["matrix"] = self[0].matrix()
        return matrix

    @property
    def sparse(self):
        return True

    @property
    def _csr(self):
        return self[0]


def _dense_idx(d):
    idx = _ARANGE_CACHE.get(d)
    if idx is None:
        idx = _ARANGE_CACHE[d] = np.arange(d, dtype=np.int32)
    return idx


def _finite(values):
    """Whether every entry of the 1-D float64 `values` is finite (compiled, one pass,
    no temporary mask, when they are contiguous)."""
    if values.flags.c_contiguous:
        return _core._all_finite(values)
    return bool(np.isfinite(values).all())


class _FiniteCheck:
    """`_finite(values)`, begun on a helper thread when `values` are many (at least
    PARALLEL_CHECK_MIN, contiguous float64) and a second core is there: the thread
    checks the first HELPER_SHARE of them while the caller checks the indices, then
    `result()` checks the rest and waits for the thread (the two cores then finish
    about together).  The compiled check releases the GIL and only reads the values,
    which the thread keeps alive.  A thread that cannot start, or ends without a
    result, leaves its share to `result()`."""

    HELPER_SHARE = 0.7

    def __init__(self, values):
        self.values = values
        self._split = 0
        self._thread = self._result = None
        if (isinstance(values, np.ndarray) and values.ndim == 1
                and len(values) >= PARALLEL_CHECK_MIN and values.dtype == np.float64
                and values.flags.c_contiguous and usable_cores() > 1):
            split = int(len(values) * self.HELPER_SHARE)
            thread = threading.Thread(target=self._run, args=(split,),
                                      name="cwkit-finite-check")
            if try_start(thread):
                self._split, self._thread = split, thread

    def _run(self, split):
        self._result = _core._all_finite(self.values[:split])

    def result(self):
        rest = _finite(self.values[self._split:])
        if self._thread is None:
            return rest
        self._thread.join()
        head = self._result
        if head is None:                # the thread ended without its answer
            head = _finite(self.values[:self._split])
        return rest and head


def _malformed(name, what):
    return ValueError(f"{name} is a malformed sparse matrix: {what} (scipy does not check "
                      "index arrays set by hand; rebuild it, e.g. with scipy.sparse.csr_matrix"
                      "((data, indices, indptr), shape) and check_format(full_check=True))")


def _check_index(index, bound, name, what):
    """`index` (any integer dtype) lies in [0, bound): one reduction over it."""
    if index.dtype.kind not in "iu":
        raise _malformed(name, f"{what} have dtype {index.dtype}, not an integer type")
    # as unsigned, a negative index is larger than any bound: one max checks both ends
    unsigned = index.view(_UNSIGNED[index.dtype.itemsize])
    if index.size and int(np.maximum.reduce(unsigned)) >= bound:
        bad = index[(index < 0) | (index >= bound)][0]
        raise _malformed(name, f"{what} hold {bad}, outside [0, {bound})")


def _increasing(indices, indptr, n_minor=None):
    """Whether the indices increase strictly within each row (canonical CSR): 0 no,
    1 yes; 2 yes and (given `n_minor`) every index in [0, n_minor), found from the
    rows' ends.

    Computed, not read from scipy's cached ``has_canonical_format``, which
    indices edited in place leave stale: the kernels rely on it.
    """
    if indices.dtype == _I32 and indptr.dtype in _PTR and indices.flags.c_contiguous \
            and indptr.flags.c_contiguous:
        # one pass, no temporaries
        return _core._csr_increasing(indices, indptr, -1 if n_minor is None else n_minor)
    if len(indices) < 2:
        increasing = True
    else:
        descents = indices[1:] <= indices[:-1]
        if len(indptr) > 2:
            # a descent across the boundary of two rows is not one within a row
            starts = indptr[1:-1]
            descents[starts[(starts > 0) & (starts < len(indices))] - 1] = False
        increasing = not np.count_nonzero(descents)   # (faster than .any() on short rows)
    if not increasing:
        return 0
    return 2 if n_minor is not None and _ends_within(indices, indptr, n_minor) else 1


def _sorted(X):
    """``(X, data, indices)`` for the valid float64 CSR matrix X whose rows are not
    canonical: ``data`` and ``indices`` hold each row's entries in increasing index order.

    A single row (``partial_fit`` on one example) whose indices are unique is put in
    order by one numpy sort (a permutation: no value changes, and X itself serves as
    is, no new matrix: a few microseconds where building one costs a hundred); other
    rows are made canonical by scipy's ``sum_duplicates`` on a copy of X, which sums
    repeated indices as it always did (in scipy's order).
    """
    if X.shape[0] == 1:
        order = np.argsort(X.indices)
        ordered = X.indices[order]
        if _increasing(ordered, X.indptr):
            return X, X.data[order], ordered
    X = X.copy()
    # the flags scipy caches may be stale (indices edited in place): reset them
    X.has_sorted_indices = False
    X.has_canonical_format = False
    X.sum_duplicates()
    return X, X.data, X.indices


def _check_compressed(X, name, n_major, n_minor):
    """CSR / CSC / BSR arrays: indptr of n_major + 1 nondecreasing offsets from 0 to
    nnz <= len(indices) = len(data), the first nnz indices in [0, n_minor) (scipy
    allows spare capacity after them).  O(n_major + nnz).

    Returns whether the indices increase strictly within each row (of the
    compressed axis).
    """
    indptr, indices = X.indptr, X.indices
    if indptr.ndim != 1 or indices.ndim != 1 or indptr.dtype.kind not in "iu":
        raise _malformed(name, "indptr and indices must be 1-D integer arrays")
    if len(indptr) != n_major + 1:
        raise _malformed(name, f"indptr has {len(indptr)} entries for {n_major} rows (of "
                               "the compressed axis); it needs one more")
    if len(X.data) != len(indices):
        raise _malformed(name, f"data has {len(X.data)} entries and indices {len(indices)}")
    nnz = int(indptr[-1])
    if indptr[0] != 0 or not 0 <= nnz <= len(indices):
        raise _malformed(name, f"indptr runs from {indptr[0]} to {nnz}, not from 0 to the "
                               f"number of stored entries, at most {len(indices)}")
    if n_major > 1 and np.count_nonzero(indptr[1:] < indptr[:-1]):
        raise _malformed(name, "indptr is not nondecreasing")
    if nnz < len(indices):
        indices = indices[:nnz]
    if indices.dtype.kind not in "iu":
        raise _malformed(name, f"the indices have dtype {indices.dtype}, not an integer type")
    increasing = _increasing(indices, indptr, n_minor)
    # sorted rows are bounded by their ends (in the same pass); else one reduction over all
    if increasing < 2:
        _check_index(indices, n_minor, name, "the indices")
    return increasing > 0


def _ends_within(indices, indptr, n_minor):
    """Whether the first index of every nonempty row is >= 0 and the last < n_minor."""
    if len(indices) == 0:
        return True
    if len(indptr) == 2:
        return bool(0 <= indices[0] and indices[-1] < n_minor)
    stops = indptr[1:]
    stops = stops[stops > indptr[:-1]]              # the nonempty rows
    return bool(indices[stops - 1].max() < n_minor
                and indices[np.concatenate(([0], stops[:-1]))].min() >= 0)


def check_structure(X, name="X"):
    """Raise ValueError when the index arrays of a scipy.sparse X are out of bounds.

    scipy checks them only when asked (``check_format(full_check=True)``), and
    its own conversions, like cwkit's kernels, read them unchecked.  Returns,
    for CSR, whether its rows are canonical (see :func:`_increasing`), else None.
    """
    n, d = X.shape
    if X.format == "csr":
        return _check_compressed(X, name, n, d)
    if X.format == "csc":
        _check_compressed(X, name, d, n)
    elif X.format == "bsr":
        r, c = X.blocksize
        _check_compressed(X, name, n // r, d // c)
    elif X.format == "coo":
        row, col = X.coords
        if len(row) != len(col) or len(col) != len(X.data):
            raise _malformed(name, "row, col and data have different lengths")
        _check_index(row, n, name, "the row indices")
        _check_index(col, d, name, "the column indices")
    return None


_CSR_TYPES = []   # scipy's CSR matrix and array types, once scipy.sparse is imported


def one_csr_row(X, n_features, scores):
    """`Rows` of X when X (a scipy CSR matrix or array, not a subclass) holds one valid
    row of `n_features` float64 values with int32 indices, whose passes write the
    row's score into `scores` (float64 (1,)); else None, and :func:`as_rows` decides.

    ``partial_fit`` on one example: the checks of :func:`as_rows` compiled into one
    pass over the row (``cwkit._core.csr_row``), X never copied.
    """
    if not _CSR_TYPES:
        if "scipy.sparse" not in sys.modules:   # no sparse matrix can exist yet
            return None
        _CSR_TYPES.extend((sp.csr_matrix, sp.csr_array))   # (waits for an import underway)
        _core.csr_types(*_CSR_TYPES)     # (what the compiled partial_fit reads)
    if type(X) not in _CSR_TYPES:
        return None
    view = _core.csr_row(X, n_features, scores)
    return None if view is None else Rows(X, view, 1, n_features)


def unchecked_rows(X):
    """`Rows` of X whose rows the pass checks as it reads them (``RowView.unchecked``:
    values finite, indices strictly increasing in [0, n_features)), or None.

    X must be a scipy CSR matrix or array of float64 values, int32 indices and an
    int32 or int64 indptr, all contiguous, without spare capacity; its shape and
    indptr are checked here (O(rows)).  This spares the walk of :func:`as_rows` over
    every value and index (about a tenth of a first-order pass) when the pass is to
    read them anyway; only a model whose ``checks_rows`` is true may take the rows,
    and the caller undoes the pass when it stops at a row that is not valid, then
    calls :func:`as_rows`, which says what is wrong.
    """
    if not issparse(X) or X.format != "csr" or X.dtype != np.float64 or X.ndim != 2:
        return None
    data, indices, indptr = X.data, X.indices, X.indptr
    n, d = X.shape
    if not (indices.dtype == _I32 and indptr.dtype in _PTR and data.ndim == indices.ndim
            == indptr.ndim == 1 and data.flags.c_contiguous and indices.flags.c_contiguous
            and indptr.flags.c_contiguous and len(indptr) == n + 1
            and len(data) == len(indices) and indptr[0] == 0
            and indptr[-1] == len(indices)):
        return None
    if n > 1 and np.count_nonzero(indptr[1:] < indptr[:-1]):
        return None
    view = _core.RowView(data, indices, indptr.astype(np.int64, copy=False), _EMPTY_I32, d)
    return Rows(X, view.unchecked(), n, d)


def parsed_rows(X):
    """`Rows` of the CSR matrix X (or `CSRArrays`) whose rows the svmlight parser
    checked, as :func:`as_rows` makes them without its checks: float64 values, all
    finite, the indices of each row strictly increasing in [0, X.shape[1]), no spare
    capacity (what ``cwkit.iter_svmlight`` yields without ``hash_bits``, and any row
    subset of it)."""
    n, d = X.shape
    indices = X.indices if X.indices.dtype == _I32 else X.indices.astype(np.int32)
    view = _core.RowView(X.data, indices, X.indptr.astype(np.int64, copy=False), _EMPTY_I32,
                         d)
    return (_ArrayRows if isinstance(X, CSRArrays) else Rows)(X, view, n, d)


def as_rows(X, n_features=None, name="X", owner="the model", first_row=0):
    """Validate X (array-like or scipy.sparse) into `Rows`, never mutating it.

    CSR is used as is when it is already float64 with canonical indices, and rows
    whose unique indices are out of order are sorted into the view (``Rows.X`` is then
    X itself); other sparse formats are converted, float32 is upcast.  Raises ValueError for
    NaN/inf, a wrong number of features, a non-2-D input or sparse index arrays
    out of bounds (:func:`check_structure`).

    X may be `Rows` this function made: rows validated once for several models (the
    learners of ``cwkit.evaluate``, through their ``partial_fit``), only checked
    against ``n_features`` again.  `first_row`: the position of X's row 0 in the
    caller's data (a partition of a Dask array), for the row a NaN error names.
    """
    if isinstance(X, Rows):
        n, d = X.n_rows, X.n_features
    elif issparse(X):
        if X.dtype.kind == "c":
            raise ValueError(f"Complex data not supported: {name} has complex values")
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {X.shape}")
        # the values of a CSR X, checked while its indices are (what counts if they are
        # the very values the view holds: canonical float64 X without spare capacity)
        finite = _FiniteCheck(X.data) if X.format == "csr" else None
        canonical = check_structure(X, name)
        if X.format != "csr":
            X = X.tocsr()
        nnz = X.indptr[-1]
        if nnz < len(X.indices):      # spare capacity after the stored entries
            X = sp.csr_matrix((X.data[:nnz], X.indices[:nnz], X.indptr), shape=X.shape)
        if X.dtype != np.float64:
            X = X.astype(np.float64)
        if canonical is None:
            canonical = _increasing(X.indices, X.indptr)
        data, indices = X.data, X.indices
        if not canonical:
            X, data, indices = _sorted(X)
        n, d = X.shape
        if not (finite.result() if finite is not None and finite.values is X.data
                else _finite(X.data)):
            bad = int(np.searchsorted(X.indptr, np.flatnonzero(~np.isfinite(X.data))[0],
                                      side="right") - 1)
            raise ValueError(f"{name} contains NaN, inf or a value too large for float64 "
                             f"(row {first_row + bad})")
        if indices.dtype != np.int32:
            if d > np.iinfo(np.int32).max:
                raise ValueError(f"{name} has {d} features; at most 2**31 - 1 are supported")
            indices = indices.astype(np.int32)  # in [0, d) (checked): no wrap-around
        indptr = X.indptr.astype(np.int64, copy=False)
        view = _core.RowView(data, indices, indptr, _EMPTY_I32, d)
    else:
        try:
            X = np.asarray(X)
            complex_values = X.dtype.kind == "c"
            if not complex_values:
                X = np.asarray(X, dtype=np.float64, order="C")
        except TypeError as exc:
            raise TypeError(f"{name} must be numeric: {exc}") from None
        except ValueError as exc:
            raise ValueError(f"{name} must be numeric: {exc}") from None
        if complex_values:
            raise ValueError(f"Complex data not supported: {name} has complex values")
        if X.ndim != 2:
            raise ValueError(f"{name} must be a 2-D array (n_samples, n_features), got "
                             f"shape {X.shape}. Reshape your data: X.reshape(1, -1) for a "
                             "single sample, X.reshape(-1, 1) for a single feature")
        n, d = X.shape
        if not _finite(X.reshape(-1)):
            bad = int(np.flatnonzero(~np.isfinite(X).all(axis=1))[0])
            raise ValueError(f"{name} contains NaN, inf or a value too large for float64 "
                             f"(row {first_row + bad})")
        view = _core.RowView(X.reshape(-1), _EMPTY_I32, _EMPTY_I64, _dense_idx(d), d)
    rows = X if isinstance(X, Rows) else Rows(X, view, n, d)
    if n_features is not None and d != n_features:
        raise ValueError(f"{name} has {d} features, but {owner} is expecting "
                         f"{n_features} features as input")
    return rows
