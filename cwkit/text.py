"""The text treatment of rows: sublinear term frequency, then unit length.

Raw text counts make the step of every rule depend on a message's length: a review
ten times longer has a squared norm a hundred times larger.  :func:`text_rows` maps
each value ``v`` to ``sign(v) log(1 + |v|)`` (sublinear term frequency, [MRS08]
Sect. 6.4.1) and divides each row by its L2 norm (cosine normalisation, [MRS08]
Sect. 6.3.1); an all-zero row stays zero.  Binary token presence becomes
``log 2`` per token before the division, so rows of presences keep their shape
(each of ``n`` tokens weighs ``1/sqrt(n)``).  The command line applies it to
Vowpal Wabbit text by default (``--rows text``; ``--rows raw`` keeps the values
read), where it made AROW at its defaults beat Vowpal Wabbit's defaults on every
text set measured (docs/choosing.md).
"""
import numpy as np

from ._lazy import sparse as sp

__all__ = ["ROW_TREATMENTS", "text_rows", "treat_rows"]

#: The row treatments of the command line's ``--rows``.
ROW_TREATMENTS = ("raw", "text")


def text_rows(X):
    """Rows of counts as sublinear term frequencies of unit L2 norm.

    Parameters
    ----------
    X : scipy.sparse matrix or array-like of shape (n_samples, n_features)

    Returns
    -------
    scipy.sparse.csr_matrix (sparse input) or numpy.ndarray of float64
        A new matrix: ``sign(v) log(1 + |v|)`` for every value ``v``, each row then
        divided by its L2 norm (an all-zero row stays zero).

    Notes
    -----
    Sublinear term frequency ``1 + log tf`` is [MRS08] Sect. 6.4.1, here
    ``log(1 + tf)``, which keeps 0 at 0 (a sparse row stays sparse) and is odd in the
    value; the division by the Euclidean length is the cosine normalisation of
    [MRS08] Sect. 6.3.1.

    Examples
    --------
    >>> import numpy as np, cwkit
    >>> np.round(cwkit.text_rows(np.array([[3.0, 0.0, 3.0], [0.0, 0.0, 0.0]])), 4)
    array([[0.7071, 0.    , 0.7071],
           [0.    , 0.    , 0.    ]])
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        values = X.data
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    else:
        X = np.array(X, dtype=np.float64, copy=True, ndmin=2)
        values = X.reshape(-1)
        rows = np.repeat(np.arange(X.shape[0]), X.shape[1])
    np.copysign(np.log1p(np.abs(values)), values, out=values)
    norm = np.sqrt(np.bincount(rows, weights=values * values, minlength=X.shape[0]))
    norm[norm == 0] = 1.0
    values /= norm[rows]
    return X


def treat_rows(X, treatment):
    """`X` under the row treatment `treatment` (one of ``ROW_TREATMENTS``)."""
    return text_rows(X) if treatment == "text" else X
