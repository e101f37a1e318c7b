"""Input validation: turn X into the row view the compiled drivers read."""
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from . import _core

_EMPTY_I64 = np.empty(0, dtype=np.int64)
_EMPTY_I32 = np.empty(0, dtype=np.int32)
_ARANGE_CACHE = {}


@dataclass(frozen=True)
class Rows:
    """A validated batch of rows: CSR arrays, or a dense C-contiguous block.

    `view` (a `cwkit._core.RowView`) is what every driver takes first.
    """

    X: object            # the float64 CSR matrix or dense ndarray, for vectorised scoring
    view: _core.RowView
    n_rows: int
    n_features: int

    @property
    def max_nnz(self):
        """The largest number of stored entries of a row (for scratch buffers)."""
        if not self.sparse:
            return self.n_features
        return int(np.diff(self.X.indptr).max()) if self.n_rows else 0

    @property
    def sparse(self):
        return sp.issparse(self.X)


def _dense_idx(d):
    idx = _ARANGE_CACHE.get(d)
    if idx is None:
        idx = _ARANGE_CACHE[d] = np.arange(d, dtype=np.int32)
    return idx


def as_rows(X, n_features=None, name="X", owner="the model"):
    """Validate X (array-like or scipy.sparse) into `Rows`, never mutating it.

    CSR is used as is when it is already float64 with canonical indices; other
    sparse formats are converted, float32 is upcast.  Raises ValueError for
    NaN/inf, a wrong number of features or a non-2-D input.
    """
    if sp.issparse(X):
        if X.dtype.kind == "c":
            raise ValueError(f"Complex data not supported: {name} has complex values")
        if X.format != "csr":
            X = X.tocsr()
        if X.dtype != np.float64:
            X = X.astype(np.float64)
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {X.shape}")
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        n, d = X.shape
        if not np.isfinite(X.data).all():
            bad = int(np.searchsorted(X.indptr, np.flatnonzero(~np.isfinite(X.data))[0],
                                      side="right") - 1)
            raise ValueError(f"{name} contains NaN, inf or a value too large for float64 "
                             f"(row {bad})")
        indices = X.indices
        if indices.dtype != np.int32:
            if d > np.iinfo(np.int32).max:
                raise ValueError(f"{name} has {d} features; at most 2**31 - 1 are supported")
            indices = indices.astype(np.int32)
        indptr = X.indptr.astype(np.int64, copy=False)
        view = _core.RowView(X.data, indices, indptr, _EMPTY_I32, d)
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
        if not np.isfinite(X).all():
            bad = int(np.flatnonzero(~np.isfinite(X).all(axis=1))[0])
            raise ValueError(f"{name} contains NaN, inf or a value too large for float64 "
                             f"(row {bad})")
        view = _core.RowView(X.reshape(-1), _EMPTY_I32, _EMPTY_I64, _dense_idx(d), d)
    if n_features is not None and d != n_features:
        raise ValueError(f"{name} has {d} features, but {owner} is expecting "
                         f"{n_features} features as input")
    return Rows(X, view, n, d)
