"""Importance weights: ``sample_weight`` and ``class_weight`` checked and combined into
the one weight per row that the compiled drivers read (``RowView.weighted``).

A row of weight s learns as the rule defines it for s (docs/algorithms.md,
"Importance weights"); no weights at all and weights that are all 1 give the
same model, bit for bit.
"""
import numbers

import numpy as np


class ClassWeight:
    """The constraint of ``class_weight``: None, "balanced" or a dict label -> weight."""

    def describe(self):
        return ("None, 'balanced' or a dict mapping labels to finite numbers >= 0")

    def check(self, value):
        if value is None or (isinstance(value, str) and value == "balanced"):
            return True
        return isinstance(value, dict) and all(_weight_ok(v) for v in value.values())


def _weight_ok(v):
    return (isinstance(v, numbers.Real) and not isinstance(v, bool)
            and np.isfinite(float(v)) and float(v) >= 0.0)


def _show(value):
    """A weight as the error names it (a numpy scalar as its Python value)."""
    return f"{value.item() if isinstance(value, np.generic) else value!r:.40}"


def check_sample_weight(sample_weight, n_rows):
    """`sample_weight` as float64 (n_rows,), C-contiguous (a copy: the caller's array may
    change later), or None.

    Raises ValueError naming the first bad row: a weight that is negative, NaN or
    infinite; or for an array of another length or shape, or not numeric.
    """
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight)
    if w.ndim == 0:
        w = np.full(n_rows, w[()])
    if w.ndim != 1:
        raise ValueError(f"sample_weight must be 1-D (one weight per row), got shape {w.shape}")
    if w.shape[0] != n_rows:
        raise ValueError(f"sample_weight has {w.shape[0]} weights for {n_rows} rows")
    if w.dtype.kind not in "biuf":
        row = next((r for r, v in enumerate(w) if w.dtype.kind != "O" or isinstance(v, bool)
                    or not isinstance(v, numbers.Real)), None)
        if row is not None:
            raise ValueError(f"sample_weight[{row}] is {_show(w[row])}: each weight must be a "
                             "finite number >= 0")
    w = np.array(w, dtype=np.float64, order="C")
    bad = ~(np.isfinite(w) & (w >= 0.0))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"sample_weight[{row}] is {_show(w[row])}: each weight must be a "
                         "finite number >= 0")
    return w


def check_class_weight(class_weight, classes):
    """Raise ValueError when the dict `class_weight` names a label outside `classes`."""
    if isinstance(class_weight, dict):
        extra = [k for k in class_weight if not np.isin(np.asarray([k]), classes).all()]
        if extra:
            raise ValueError(f"class_weight names the label {extra[0]!r}, which is not one of "
                             f"the classes {classes.tolist()!r}")


def class_table(class_weight, classes, counts):
    """The weight of each class (float64 (K,)), or None for ``class_weight=None``.

    "balanced": ``n / (K count_c)`` with the class counts `counts` of the rows seen
    (a class not seen yet gets 1); a dict: its weight, 1 for a class it omits.
    """
    if class_weight is None:
        return None
    K = len(classes)
    if isinstance(class_weight, str):
        counts = np.asarray(counts, dtype=np.float64)
        with np.errstate(divide="ignore"):
            table = counts.sum() / (K * counts)
        return np.where(counts > 0, table, 1.0)
    table = np.ones(K)
    for label, weight in class_weight.items():
        table[np.flatnonzero(classes == label)] = float(weight)
    return table


def row_weights(sample_weight, table, codes):
    """The weight of each row: `sample_weight` (checked) times its class's weight in
    `table` (`codes`: class indices); None when neither is given."""
    if table is None:
        return sample_weight
    w = table[np.asarray(codes, dtype=np.intp)]
    return w if sample_weight is None else np.ascontiguousarray(sample_weight * w)
