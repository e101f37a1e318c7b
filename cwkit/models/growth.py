"""A feature space that grows: a model's state widened to more features.

``partial_fit`` on rows wider than any seen before widens the model first: every
new feature starts from the rule's prior, as in a model built at the new width
(weight 0, variance ``a`` — the new block of a full Sigma ``a I``, uncorrelated
with the rest —, AdaGrad's sums 0, averaging sums 0, mini-batch PA's pending rows
0 in the new columns).  A feature no row has touched keeps its prior exactly, so a
model fed narrow rows and widened equals, bit for bit, the model fed the same rows
padded with zeros at the final width.

Each state array's feature axes are described by ``(axis, inner, tail)``
(``Model.feature_layout``): along ``axis`` the array
holds ``blocks`` blocks of D = n_features + 1 entries (the intercept, the
augmented constant feature, last of each block), each entry ``inner`` values wide,
then ``tail`` more values (1: the round count T of a flat lazy sum; -1: a block of
the features alone, without the intercept: mini-batch PA's pending rows).  A
widening keeps every feature's values where they were, moves each intercept and
the tail to their new places and writes the prior into the new features' places.

Growth is amortised: every such array (of one or two axes) is a C-contiguous
prefix of a flat buffer with room for twice its values; a widening moves the
values in place to their new places and writes the prior into the new features',
for all the arrays of a model in one compiled call (``_core.widen_in_room``), and
changes the width of the model's own copy of its spec in place.  A buffer is
replaced by one twice as large only when its room runs out.  An array whose
features lie on its first axis in one block (the weights, a diagonal covariance,
AdaGrad's averaging sums, each feature's pairs side by side) widens in the time of
its new features; one whose features repeat in blocks (the classes of a full
covariance's mean) or lie on a second axis (a full Sigma, mini-batch PA's pending
rows) moves its values, in the time of one pass over them: the cost of one round of
a full-covariance rule.
"""
import numpy as np

from .. import _core
from .size import check_size


def widen(model, n_features):
    """Widen `model` (its ``state``, ``spec`` and ``n_features``) to `n_features`
    features, each new one at its prior (see the module): the model built at that
    width after the same rows, padded with zeros."""
    done = _core.widen_model(model, n_features)  # first: the common case, a row at a time
    if done:
        if done == 2:           # a spec the model shares: replaced
            model.spec = _with_width(model.spec, n_features)
        return
    parts = getattr(model, "models", None)
    if parts is not None:     # one-vs-rest: K binary models
        for part in parts:
            widen(part, n_features)
        # their arrays, replaced as they widened (a kernel form reads them anew)
        model.state.update((f"{c}/{key}", arr) for c, part in enumerate(parts)
                           for key, arr in part.state.items())
        return
    d_old = model.n_features
    spec = _with_width(model.spec, n_features)
    model._limit = model.max_features()     # (widen_model leaves a wider model to us)
    if model._limit is not None and n_features > model._limit:
        type(model)(spec)       # raises, naming the limit
    state = model.state
    layout = {key: _axes(state[key], axes) for key, axes in model.feature_layout().items()
              if np.size(state.get(key, ()))}   # (no lazy sum: no averaging)
    rooms = model.__dict__.setdefault("_rooms", {})
    if "_prior" not in model.__dict__:        # the state of a model of one feature, once
        model._prior = {key: np.ascontiguousarray(arr, dtype=np.float64) for key, arr in
                        type(model)(_with_width(model.spec, 1)).state.items()}
    new_sizes = {key: _size(state[key], axes, d_old, n_features) for key, axes in layout.items()}
    short = [key for key in layout if not (
        state[key].base is rooms.get(key) is not None
        and rooms[key].shape[0] >= new_sizes[key])]
    if short:
        check_size(spec)           # memory is taken: is there enough?
    for key in short:              # a buffer with room: twice the values needed
        arr = state[key]
        buf = np.empty(2 * new_sizes[key])
        buf[:arr.size] = arr.reshape(-1)
        rooms[key] = buf
        state[key] = buf[:arr.size].reshape(arr.shape)
    model._in_room = [_core.room(key, rooms[key], state[key].shape, axes, model._prior[key])
                      for key, axes in layout.items()]
    model.spec = model._own_spec = spec      # a copy: later widenings change it in place
    if _core.widen_model(model, n_features) != 1:
        raise AssertionError("growth: a model's buffers have no room after reallocation")


def narrowed(model, columns):
    """A copy of `model` that holds only the features `columns` (increasing int32),
    in that order, then the intercept; None for a model that cannot be narrowed (one
    of several models, a full covariance, a support set).

    Each weight of such a model, its variance and its averaging sums are functions
    of its own feature's state: the copy scores a row of those features (columns
    0, 1, ... in their order) as the model scores the row, bit for bit, in the time
    of the row's features (``predict_one``: never the whole weight vector).
    """
    layout = model.feature_layout()
    if (not layout or getattr(model, "models", None) is not None
            or any(len(axes) > 1 for axes in layout.values())):
        return None
    d = model.n_features
    keep = np.append(columns, d).astype(np.intp)   # the intercept, last of a block
    state = dict(model.state)
    for key, ((axis, inner, tail),) in layout.items():
        arr = state.get(key)
        if arr is None or arr.size == 0:
            continue
        icpt = 1 if tail >= 0 else 0
        blk = (d + icpt) * inner
        blocks = (arr.shape[axis] - max(tail, 0)) // blk
        kept = keep if icpt else keep[:-1]
        pos = ((np.arange(blocks)[:, None, None] * blk + kept[None, :, None] * inner
                + np.arange(inner)[None, None, :]).reshape(-1))
        if tail > 0:
            pos = np.concatenate([pos, blocks * blk + np.arange(tail)])
        state[key] = np.take(arr, pos, axis=axis)
    out = object.__new__(type(model))
    out.__dict__.update(model.__dict__)
    out.__dict__.pop("_in_room", None)
    out.__dict__.pop("_rooms", None)
    out.state = state
    out.n_features = len(columns)
    out.spec = _with_width(model.spec, len(columns))
    return out


def _axes(arr, axes):
    """The ``widen_in_room`` axes of `arr` from its ``feature_layout`` entry `axes`."""
    out = [(False, 1, 0), (False, 1, 0)]
    if arr.ndim > 2:
        raise ValueError(f"growth: a state array of {arr.ndim} axes")
    for axis, inner, tail in axes:
        out[axis] = (True, inner, tail)
    return tuple(out)


def _size(arr, axes, d_old, d_new):
    """The number of values of `arr` (laid out by `axes`, see ``_axes``) at `d_new`
    features."""
    size = 1
    for n, (feature, inner, tail) in zip(arr.shape if arr.ndim == 2 else (arr.shape[0], 1),
                                         axes):
        if feature:
            icpt = 1 if tail >= 0 else 0
            blocks = (n - max(tail, 0)) // ((d_old + icpt) * inner)
            n = blocks * (d_new + icpt) * inner + max(tail, 0)
        size *= n
    return size


def _with_width(spec, n_features):
    """`spec` with ``n_features`` changed (``dataclasses.replace`` runs ``__init__`` on
    every field: ten times the cost of the widening of a row)."""
    out = object.__new__(type(spec))
    out.__dict__.update(spec.__dict__, n_features=n_features)
    return out
