"""Named features: rows given as dicts of feature name -> value, as model columns.

A row is a dict of name -> value, or a list, tuple, set or frozenset of names
that each have the value 1 (a dict value ``True`` is 1 too: bools are numbers).
A name is a str, or an int taken as its decimal text (``{3: 1.0}`` and
``{"3": 1.0}`` are the same feature).  A value is a real number (int, float,
bool, numpy scalar), finite; text is never parsed as a number.  Two ways give a
name its column:

- :class:`FeatureHasher` (the estimators' default, ``hash_bits=18``): the low
  ``hash_bits`` bits of the name's 32-bit hash, Vowpal Wabbit's hash of a name
  outside any namespace (:func:`name_hash`): a name of digits only is its
  decimal value, any other name MurmurHash3_x86_32 of its UTF-8 bytes
  (:func:`murmurhash3_32`).  The same on every platform and Python version, and
  the same column Vowpal Wabbit gives the feature ``| name`` with ``-b
  hash_bits``.  With ``signed=True`` a feature's value is negated when bit 31 of
  MurmurHash3_x86_32 of its name is set, so that features sharing a column
  cancel out in expectation rather than add up [WDL09].
- :class:`Vocabulary`: an exact, growing map, every new name of a learning call
  getting the next column; names it has never seen are dropped when predicting
  (their weight is 0: the model knows nothing of them).

Names a row has twice (as a column, after hashing) are summed, so the rows are
canonical CSR.  Everything per feature runs in the compiled core
(``cwkit._core._named_rows``: the row's dict walked in C, names hashed from
their UTF-8 bytes, entries sorted and summed in C).
"""
import numpy as np

from ._lazy import sparse as sp
from . import _core
from ._rowdata import Rows

__all__ = ["FeatureHasher", "Vocabulary", "murmurhash3_32", "name_hash"]

_N = _core.NamedStatus
DEFAULT_HASH_BITS = 18


def _utf8(data):
    if isinstance(data, str):
        return data.encode("utf-8", "surrogatepass")
    return bytes(data)


def murmurhash3_32(data, seed=0):
    """MurmurHash3_x86_32 of `data` (bytes, or a str as its UTF-8 bytes), an int in
    [0, 2**32).

    Examples
    --------
    >>> murmurhash3_32(b""), murmurhash3_32(b"", seed=1), murmurhash3_32("hello")
    (0, 1364076727, 613153351)
    """
    return _core.murmurhash3_32(_utf8(data), int(seed) & 0xFFFFFFFF)


def name_hash(name, seed=0):
    """Vowpal Wabbit's hash of a feature name with `seed` (the hash of its namespace,
    0 outside any): the decimal value of a name of digits only plus the seed, modulo
    2**64; else :func:`murmurhash3_32` of its UTF-8 bytes with the seed's low 32 bits.

    Examples
    --------
    >>> name_hash("hello"), name_hash("42"), name_hash("42", seed=1000)
    (613153351, 42, 1042)
    """
    if isinstance(name, int) and not isinstance(name, bool):
        name = str(name)
    return _core.name_hash(_utf8(name), int(seed) % 2**64)


def _describe(status, where, key, value, row):
    """The error of a failed ``_named_rows`` call, naming the row and the feature."""
    if status == _N.NAMED_BAD_ROW:
        return TypeError(f"{where} is of type {type(row).__name__}: expected a dict of feature "
                         "name -> value, or a list, tuple or set of names (each of value 1)")
    if status == _N.NAMED_BAD_NAME:
        return TypeError(f"{where}: feature name {key!r:.60} is a {type(key).__name__}: "
                         "expected a str (or an int, taken as its decimal text)")
    if status == _N.NAMED_BAD_VALUE:
        return ValueError(f"{where}: feature {key!r:.60} has the value {value!r:.60}: "
                          "expected a real number (int, float or bool)")
    if status == _N.NAMED_NONFINITE:
        return ValueError(f"{where}: feature {key!r:.60} has the value {value!r:.60}: "
                          "expected a finite number")
    if status == _N.NAMED_OVERFLOW:
        return ValueError(f"{where}: the values of features sharing a column sum beyond "
                          "the range of a double")
    return ValueError(f"{where}: feature {key!r:.60} would be the vocabulary's "
                      "2**31-th name: use a FeatureHasher")


class _NamedMap:
    """What :class:`FeatureHasher` and :class:`Vocabulary` share: rows to CSR."""

    _table = _one = None
    _bits = 31
    signed = False

    def truncate(self, n):
        """Forget the names of columns ``n`` on (those of a rejected call)."""
        if self._table is not None:
            self._table.truncate(n)

    def _arrays(self, rows, grow, where):
        """``(data, indices, indptr)`` of `rows` (a list); raises naming the row."""
        before = None if self._table is None else len(self._table)
        status, nnz, r, key, value, data, indices, indptr = _core._named_rows(
            rows, self._bits, self.signed, self._table, grow)
        if status != _N.NAMED_OK:
            if before is not None:          # nothing learnt from a rejected call
                self.truncate(before)
            raise _describe(status, where if len(rows) == 1 and where == "x"
                            else f"{where} {r}", key, value, rows[r] if r < len(rows) else None)
        return data[:nnz], indices[:nnz], indptr

    def rows(self, rows, grow=False, where="row"):
        """The validated `Rows` of `rows` (a list of named rows) for an estimator;
        `where` names a row in errors (``"x"`` for a single row, else ``"row i"``)."""
        data, indices, indptr = self._arrays(rows, grow, where)
        d = self.n_features
        X = self._one
        if len(rows) == 1 and X is not None and X.shape[1] == d:
            # one row (learn_one, predict_one): the arrays of a 1-row matrix made once
            # are replaced, as building a matrix costs more than the rest of the call
            X.data, X.indices, X.indptr = data, indices, indptr
        else:
            X = sp.csr_matrix((data, indices, indptr), shape=(len(rows), d), copy=False)
            X.has_canonical_format = True
            if len(rows) == 1:
                self._one = X
        view = _core.RowView(data, indices, indptr, np.empty(0, np.int32), d)
        return Rows(X, view, len(rows), d)

    def transform(self, rows):
        """The CSR matrix of `rows` (an iterable of named rows), ``n_features`` wide.

        Raises
        ------
        TypeError, ValueError
            Naming the row and the feature at fault (``row i``, 0-based).
        """
        return self.rows(list(rows)).X.copy()


class FeatureHasher(_NamedMap):
    """Columns from the hash of a feature's name (see the module's docstring).

    Parameters
    ----------
    hash_bits : int in [1, 31], default=18
        The columns are ``2**hash_bits`` (Vowpal Wabbit's ``-b``, whose default
        is 18 too).
    signed : bool, default=False
        Negate a feature's value when bit 31 of MurmurHash3_x86_32 of its name
        is set ([WDL09]'s hash of signs): colliding features then cancel in
        expectation.

    Examples
    --------
    >>> h = FeatureHasher(hash_bits=4)
    >>> X = h.transform([{"hello": 2.0, "3": 1.5}, ["hello", 20]])
    >>> X.indices.tolist(), X.data.tolist()
    ([3, 7, 4, 7], [1.5, 2.0, 1.0, 1.0])
    """

    def __init__(self, hash_bits=DEFAULT_HASH_BITS, signed=False):
        if isinstance(hash_bits, bool) or not isinstance(hash_bits, (int, np.integer)) \
                or not 1 <= hash_bits <= 31:
            raise ValueError(f"hash_bits must be an int in [1, 31], not {hash_bits!r}")
        if not isinstance(signed, (bool, np.bool_)):
            raise ValueError(f"signed must be True or False, not {signed!r}")
        self.hash_bits = int(hash_bits)
        self._bits = self.hash_bits
        self.signed = bool(signed)

    @property
    def n_features(self):
        """The number of columns, ``2**hash_bits``."""
        return 1 << self.hash_bits

    def __eq__(self, other):
        return (type(other) is FeatureHasher and other.hash_bits == self.hash_bits
                and other.signed == self.signed)

    def __repr__(self):
        return f"FeatureHasher(hash_bits={self.hash_bits}, signed={self.signed})"


class Vocabulary(_NamedMap):
    """An exact map of feature names to columns, grown by learning calls.

    Parameters
    ----------
    names : iterable of str, optional
        The names of the first columns, in order (distinct).

    Attributes
    ----------
    names_ : list of str
        The name of every column, in column order.

    Examples
    --------
    >>> v = Vocabulary()
    >>> v.rows([{"b": 1.0, "a": 2.0}], grow=True).X.toarray()
    array([[1., 2.]])
    >>> v.names_, v.transform([{"a": 1, "z": 5}]).toarray()
    (['b', 'a'], array([[0., 1.]]))
    """

    def __init__(self, names=()):
        # (the names and their columns: a table of the compiled core's, which the
        # compiled one-row path reads and grows)
        self._table = _core.NameTable(names)

    @property
    def names_(self):
        return self._table.names()

    @property
    def n_features(self):
        """The number of columns: the names seen so far."""
        return len(self._table)

    def __repr__(self):
        return f"Vocabulary(<{len(self._table)} names>)"
