"""Streaming input in Vowpal Wabbit's text format.

The compiled tokenizer (``cwkit._core._vw_parse``) turns blocks of complete lines
into CSR rows, labels, importance weights and tags without the GIL; the opening,
decompression and cutting of the stream into blocks are those of
:mod:`cwkit.svmlight`.  Format accepted (one example per line)::

    [label [importance [initial]]] ['tag]|namespace[:value] name[:value] name ... |ns ...

The words before the first ``|`` are the label (a number: a simple label), the
importance weight (a number >= 0, default 1) and Vowpal Wabbit's initial
prediction (read, unused); the last of them is the tag when it starts with
``'`` or touches the ``|``.  Each ``|`` opens a namespace: a name written right
after the bar, whose optional value scales its features, or the default
namespace (a space after the bar).  A feature is ``name`` (value 1) or
``name:value``; ``:value`` is an unnamed feature.  Numbers are decimal (no hex,
nan or inf).  Tokens are separated by spaces or tabs; blank lines are skipped;
gzip, bzip2 and xz input is decompressed (magic bytes or suffix).

Columns: Vowpal Wabbit's own.  A feature's column is the low ``hash_bits`` bits
of its name's hash (:func:`cwkit.features.name_hash`: a name of digits only is
its decimal value, any other MurmurHash3_x86_32 of its bytes) seeded with its
namespace's hash (the hash of the namespace's whole name, seed 0; 0 for the
default namespace), and an unnamed feature's column is the namespace's hash plus
its rank among the namespace's unnamed features.  These are the feature indices
Vowpal Wabbit computes (``vw -b hash_bits``; tested against its Python
package), so a name outside any namespace gets the column a dict row gives it
(:class:`cwkit.features.FeatureHasher`).  Vowpal Wabbit's constant feature is
not added: cwkit's estimators have their own intercept.  Features of value 0
are dropped (as Vowpal Wabbit does) and a column a line has twice holds the sum,
so the rows are canonical CSR.

Not read (an error naming the line): cost-sensitive, contextual-bandit and other
labels with ``:``, more than three words before the tag, a namespace without
features, values that are not finite numbers.
"""
from collections import namedtuple

import numpy as np

from ._lazy import sparse as sp
from . import _core
from .features import DEFAULT_HASH_BITS
from .svmlight import (_CHUNK, SvmlightError, _blocks, _empty, _grown, _prefetched,
                       _show, _shrunk, _Source, _StreamError)

__all__ = ["VWError", "VWInfo", "iter_vw", "load_vw", "scan_vw"]

_V = _core.VWStatus
_AHEAD = 4
_SUFFIXES = (".vw", ".vw.gz", ".vw.bz2", ".vw.xz")
_EXPECTED = {
    _V.VW_BAD_LABEL: "invalid label {tok}: expected a finite decimal number such as 1, -1 "
                     "or 2.5",
    _V.VW_COST_LABEL: "label {tok} has a ':' (a cost-sensitive or contextual-bandit label): "
                      "expected a simple label, a number such as 1 or -1",
    _V.VW_LABEL_WORDS: "too many words before the first '|' ({tok}): expected "
                       "[label [importance [initial]]] ['tag]",
    _V.VW_BAD_WEIGHT: "invalid importance weight {tok}: expected a finite number >= 0",
    _V.VW_NO_LABEL: "the line has no label: expected a number before the first '|' "
                    "(unlabelled rows are read with require_label=False)",
    _V.VW_EMPTY_NAMESPACE: "namespace {tok} has no features: expected |namespace "
                           "name[:value] ...",
    _V.VW_BAD_VALUE: "invalid feature {tok}: expected name or name:value with a finite "
                     "decimal value (no nan or inf)",
    _V.VW_BAD_NS_VALUE: "invalid namespace {tok}: expected |name or |name:value with a "
                        "finite decimal value",
    _V.VW_NON_TEXT: "control byte in {tok}: Vowpal Wabbit text has none (binary data or "
                    "an unrecognised compression?)",
    _V.VW_BAD_INITIAL: "invalid initial prediction {tok}: expected a finite decimal number",
    _V.VW_OVERFLOW: "the line's feature values overflow a double (a value times its "
                    "namespace's value, or the sum of the features sharing a column)",
}


class VWError(SvmlightError):
    """A malformed Vowpal Wabbit input, located by file and line (``path``, ``line``,
    ``token``): a :class:`cwkit.SvmlightError`, so that code catching the reader's
    errors catches both formats."""


VWInfo = namedtuple("VWInfo", "n_samples n_features nnz classes")
VWInfo.__doc__ = """Summary of a Vowpal Wabbit file from :func:`scan_vw`: ``n_samples``,
``n_features`` (``2**hash_bits``), ``nnz`` and ``classes`` (sorted distinct labels,
float64)."""


def is_vw_path(path):
    """Whether a file name says Vowpal Wabbit text: ``.vw``, optionally compressed
    (``.vw.gz``, ``.vw.bz2``, ``.vw.xz``)."""
    return str(path).lower().endswith(_SUFFIXES)


class _Out:
    """Growable output arrays of the tokenizer: CSR rows, labels, weights, tags."""

    def __init__(self, rows, nnz):
        self.data = _empty(nnz, np.float64)
        self.indices = _empty(nnz, np.int32)
        self.indptr = np.zeros(rows + 1, np.int64)
        self.labels = _empty(rows, np.float64)
        self.weights = _empty(rows, np.float64)
        self.tag_pos = _empty(2 * rows, np.int64)
        self.tags = []
        self.n_rows = self.nnz = 0

    def grow(self, rows, nnz, max_rows=None):
        if self.nnz + nnz > len(self.data):
            n = max(2 * len(self.data), self.nnz + nnz)
            self.data = _grown(self.data, self.nnz, n)
            self.indices = _grown(self.indices, self.nnz, n)
        if self.n_rows + rows > len(self.labels):
            n = max(2 * len(self.labels), self.n_rows + rows)
            n = n if max_rows is None else min(n, max_rows)
            self.indptr = _grown(self.indptr, self.n_rows + 1, n + 1)
            self.labels = _grown(self.labels, self.n_rows, n)
            self.weights = _grown(self.weights, self.n_rows, n)
            self.tag_pos = _grown(self.tag_pos, 2 * self.n_rows, 2 * n)

    def trim(self):
        self.data = _shrunk(self.data, self.nnz)
        self.indices = _shrunk(self.indices, self.nnz)
        self.indptr = _shrunk(self.indptr, self.n_rows + 1)
        self.labels = _shrunk(self.labels, self.n_rows)
        self.weights = _shrunk(self.weights, self.n_rows)

    def matrix(self, hash_bits, dtype):
        data = self.data if dtype == np.float64 else self.data.astype(dtype)
        return sp.csr_matrix((data, self.indices, self.indptr),
                             shape=(self.n_rows, 1 << hash_bits), copy=False)


class _Parser:
    """Feeds blocks to the tokenizer, counting lines; statuses become :class:`VWError`."""

    def __init__(self, name, hash_bits, require_label, tags):
        self.name = name
        self.bits = hash_bits
        self.require_label = require_label
        self.tags = tags
        self.line = 0

    def error(self, status, line, token):
        message = _EXPECTED[status].format(tok=_show(token))
        return VWError(self.name, line, token.decode("latin-1"), message)

    def parse(self, buf, end, out, pos=0, row_limit=None):
        """Parse ``buf[pos:end]`` into ``out``; returns where parsing stopped: ``end``,
        or with ``row_limit`` the start of the first row beyond ``row_limit`` rows."""
        while True:
            first = out.n_rows
            status, out.n_rows, out.nnz, err = _core._vw_parse(
                buf, pos, end, self.bits, self.require_label, out.data, out.indices,
                out.indptr, out.labels, out.weights, out.tag_pos, out.n_rows, out.nnz)
            lines, tok_start, tok_end, resume = err
            if self.tags:
                for a, b in out.tag_pos[2 * first:2 * out.n_rows].reshape(-1, 2).tolist():
                    out.tags.append(bytes(buf[a:b]).decode("utf-8", "replace")
                                    if a >= 0 else None)
            self.line += lines
            if status == _V.VW_OK:
                return end
            pos = resume
            if status != _V.VW_CAPACITY:
                raise self.error(status, self.line + 1, bytes(buf[tok_start:tok_end]))
            if row_limit is not None and out.n_rows >= row_limit:
                return pos
            stop = buf.find(b"\n", pos)
            out.grow(1, (stop - pos) // 2 + 1, max_rows=row_limit)


def _check_args(hash_bits, batch_size=1, chunk_size=_CHUNK, dtype=np.float64):
    if isinstance(hash_bits, bool) or not isinstance(hash_bits, (int, np.integer)) \
            or not 1 <= hash_bits <= 31:
        raise ValueError(f"hash_bits must be an int in [1, 31], not {hash_bits!r}")
    for name, value in (("batch_size", batch_size), ("chunk_size", chunk_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive int, not {value!r}")
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"dtype must be a floating-point type, not {dtype}")
    return int(hash_bits), dtype


def _batches(f, batch_size, hash_bits, require_label, tags, chunk_size):
    """Parse straight into batches of ``batch_size`` rows (``_Out``, trimmed)."""
    source = _Source(f)
    parser = _Parser(source.name, hash_bits, require_label, tags)
    out = _Out(min(batch_size, 1 << 14), 16 * min(batch_size, 1 << 14))
    blocks = _blocks(source.stream, chunk_size)
    try:
        for buf, end in blocks:
            pos = 0
            while pos < end:
                pos = parser.parse(buf, end, out, pos, row_limit=batch_size)
                if out.n_rows == batch_size:
                    nnz_guess = out.nnz + out.nnz // 8 + 64
                    out.trim()
                    yield out
                    out = _Out(min(batch_size, 1 << 14), nnz_guess)
        if out.n_rows:
            out.trim()
            yield out
    except _StreamError as exc:
        raise VWError(parser.name, parser.line + 1, "", str(exc)) from exc.__cause__
    finally:
        blocks.close()
        source.close()


def _result(out, hash_bits, dtype, tags):
    X = out.matrix(hash_bits, dtype)
    return (X, out.labels, out.weights, out.tags) if tags else (X, out.labels, out.weights)


def load_vw(f, hash_bits=DEFAULT_HASH_BITS, dtype=np.float64, require_label=True,
            tags=False, chunk_size=_CHUNK):
    r"""Read a whole Vowpal Wabbit text file (see the module's docstring).

    Parameters
    ----------
    f : str, path-like or binary file object
        The input; ``"-"`` reads standard input.  gzip, bzip2 and xz streams are
        decompressed.
    hash_bits : int in [1, 31], default=18
        The rows are ``2**hash_bits`` wide (Vowpal Wabbit's ``-b``).
    dtype : floating dtype
        dtype of ``X.data`` (values are parsed in double precision).
    require_label : bool
        A line without a label is an error (True) or gets the label NaN.
    tags : bool
        Also return each row's tag (a str, None without one).
    chunk_size : int
        Bytes read at a time: it changes speed, never the result.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, 2**hash_bits)
        Canonical CSR.
    y : ndarray of float64
    sample_weight : ndarray of float64
        The importance weights (1 where a line gives none).
    tags : list of str or None
        Only with ``tags=True``.

    Raises
    ------
    VWError
        For a malformed line, with the file, the 1-based line and the token.

    Examples
    --------
    >>> import io
    >>> X, y, w = load_vw(io.BytesIO(b"1 2.0 'first| a b:0.5\n-1 |x 7\n"), hash_bits=4)
    >>> X.indices.tolist(), X.data.tolist(), y.tolist(), w.tolist()
    ([2, 3, 2], [1.0, 0.5, 1.0], [1.0, -1.0], [2.0, 1.0])
    >>> load_vw(io.BytesIO(b"1 |a x\n1:0.5 2:1 |a x\n"))
    Traceback (most recent call last):
    ...
    cwkit.vw.VWError: <file>, line 2: label '1:0.5' has a ':' (a cost-sensitive ...
    """
    hash_bits, dtype = _check_args(hash_bits, chunk_size=chunk_size, dtype=dtype)
    out = None
    for batch in _batches(f, 1 << 62, hash_bits, require_label, tags, chunk_size):
        out = batch
    if out is None:
        out = _Out(0, 0)
    return _result(out, hash_bits, dtype, tags)


def iter_vw(f, batch_size=4096, hash_bits=DEFAULT_HASH_BITS, dtype=np.float64,
            require_label=True, tags=False, prefetch=True, chunk_size=_CHUNK):
    """Read a Vowpal Wabbit text file in batches of rows, in bounded memory.

    Parameters
    ----------
    f, hash_bits, dtype, require_label, tags, chunk_size
        As in :func:`load_vw`.
    batch_size : int
        Rows per batch (the last may be smaller).
    prefetch : bool
        Read, decompress and parse the next batches in a background thread (the
        GIL is released while parsing), at most four ahead.

    Yields
    ------
    X, y, sample_weight (and tags)
        As :func:`load_vw` returns them, for each batch; every X is
        ``2**hash_bits`` wide.

    Raises
    ------
    VWError
        When a bad line is reached (the batches before it have been yielded).

    Examples
    --------
    >>> import io
    >>> text = b"1 | a\\n-1 0.5 | b\\n1 | c\\n"
    >>> [(X.shape, w.tolist()) for X, y, w in iter_vw(io.BytesIO(text), batch_size=2)]
    [((2, 262144), [1.0, 0.5]), ((1, 262144), [1.0])]
    """
    hash_bits, dtype = _check_args(hash_bits, batch_size, chunk_size, dtype)
    batches = _batches(f, batch_size, hash_bits, require_label, tags, chunk_size)
    if prefetch:
        batches = _prefetched(batches, _AHEAD)
    return (_result(out, hash_bits, dtype, tags) for out in batches)


def scan_vw(f, hash_bits=DEFAULT_HASH_BITS, require_label=True, chunk_size=_CHUNK,
            labels=True):
    """One pass over a file for its size and label set (every line checked).

    ``labels=False``: the label set is not collected (``classes`` is empty), so that
    memory stays bounded whatever the number of distinct labels (regression targets).

    Returns
    -------
    VWInfo
        ``(n_samples, n_features, nnz, classes)``.
    """
    hash_bits, _ = _check_args(hash_bits, chunk_size=chunk_size)
    n_rows = nnz = 0
    classes = set()
    for out in _batches(f, 8192, hash_bits, require_label, False, chunk_size):
        n_rows += out.n_rows
        nnz += out.nnz
        if labels:
            classes.update(np.unique(out.labels).tolist())
    return VWInfo(n_rows, 1 << hash_bits, nnz, np.unique(np.array(sorted(classes), float)))
