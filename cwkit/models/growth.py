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

Growth is amortised: an array whose one feature axis is its first, in one block,
is a prefix view of a buffer twice as long as needed; widening it writes only the
new features, the intercept and the tail, for all the arrays of a model in one
compiled call (``_core.widen_in_room``), and changes the width of the model's own
copy of its spec in place: a stream that grows by a feature per row costs about 2
microseconds more per row than one of fixed width (benchmarks/README.md).  The
other arrays (a full Sigma, the averaging sums of AdaGrad, mini-batch PA's pending
rows, the mean of a multi-class full covariance) are reallocated, in the time of
one update of a full covariance, or O(D) values.
"""
import numpy as np

from .. import _core
from .size import check_size


def feature_map(n, d_old, d_new, inner, tail):
    """The new positions of the `n` entries of an axis laid out for ``d_old``
    features, for ``d_new`` features."""
    D_old, D_new = d_old + 1, d_new + 1
    blocks = (n - tail) // (D_old * inner)
    pos = np.arange(n)
    body = blocks * D_old * inner
    block, within = np.divmod(pos[:body], D_old * inner)
    feature, j = np.divmod(within, inner)
    feature = np.where(feature == d_old, d_new, feature)   # the intercept goes last
    new = np.empty(n, dtype=np.intp)
    new[:body] = block * D_new * inner + feature * inner + j
    new[body:] = pos[body:] + blocks * (D_new - D_old) * inner
    return new


def widen(model, n_features):
    """Widen `model` (its ``state``, ``spec`` and ``n_features``) to `n_features`
    features, each new one at its prior (see the module): the model built at that
    width after the same rows, padded with zeros."""
    if _widen_in_room(model, n_features):     # first: the common case, one row at a time
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
    state = model.state
    layout = {key: axes for key, axes in model.feature_layout().items()
              if np.size(state.get(key, ()))}   # (no lazy sum: no averaging)
    rooms = model.__dict__.setdefault("_rooms", {})
    prefix, roomy = set(), True
    for key, ((axis, inner, tail), *more) in layout.items():
        arr = state[key]
        if not more and axis == 0 and arr.shape[0] - tail == (d_old + 1) * inner:
            prefix.add(key)
            buf = rooms.get(key)
            roomy = roomy and (buf is not None and arr.base is buf
                               and buf.shape[0] >= (n_features + 1) * inner + tail)
    if not (roomy and prefix == set(layout)):     # memory is taken: is there enough?
        check_size(spec)
    # built before any array changes: a width the shape does not support raises here
    fresh = type(model)(spec).state if set(layout) - prefix else None
    if prefix and "_prior" not in model.__dict__:   # the state of one feature, once
        model._prior = type(model)(_with_width(model.spec, 1)).state
    for key, axes in layout.items():
        arr = state[key]
        if key in prefix:
            axis, inner, tail = axes[0]
            state[key] = _widen_prefix(rooms, key, arr, model._prior[key][:inner],
                                       d_old, n_features, inner, tail)
            continue
        out = fresh[key]
        index = [np.arange(n) for n in arr.shape]
        for axis, inner, tail in axes:
            index[axis] = feature_map(arr.shape[axis], d_old, n_features, inner, tail)
        out[np.ix_(*index)] = arr
        state[key] = out
    model.spec = model._own_spec = spec      # a copy: later widenings change it in place
    model.n_features = n_features
    # the widening of a model whose arrays are all prefix views: what it needs, once
    model._in_room = [_room_plan(key, rooms[key], axes[0][1], axes[0][2], model._prior[key])
                      for key, axes in layout.items()] if prefix == set(layout) else None


def _room_plan(key, buf, inner, tail, prior):
    """The entry of `key` in the plan of ``_core.widen_in_room`` (see there): `prior`,
    the state of one feature, gives a new feature's values."""
    width = int(np.prod(buf.shape[1:], dtype=np.intp))
    values = np.ascontiguousarray(prior[:inner], dtype=np.float64).reshape(-1)
    return (key, buf, buf.ctypes.data, buf.shape[0], inner, tail, width, values.ctypes.data,
            values)


def _widen_in_room(model, n_features):
    """Widen a model whose arrays are all prefix views of buffers with room for
    `n_features` (the common case, in O(new features + tail), one compiled call:
    ``_core.widen_in_room``); False, having done nothing, otherwise."""
    plan = model.__dict__.get("_in_room")
    if plan is None or not _core.widen_in_room(model.state, plan, model.n_features,
                                               n_features):
        return False
    spec = model.spec
    if spec is model.__dict__.get("_own_spec"):      # made by `widen`: no one else holds it
        object.__setattr__(spec, "n_features", n_features)
    else:
        model.spec = _with_width(spec, n_features)
    model.n_features = n_features
    return True


def _with_width(spec, n_features):
    """`spec` with ``n_features`` changed (``dataclasses.replace`` runs ``__init__`` on
    every field: ten times the cost of the widening of a row)."""
    out = object.__new__(type(spec))
    out.__dict__.update(spec.__dict__, n_features=n_features)
    return out


def _widen_prefix(rooms, key, arr, prior, d_old, d_new, inner, tail):
    """`arr` widened as a prefix view of the buffer ``rooms[key]``, made twice as long
    as needed when it has no room (`prior`: one new feature's values on axis 0)."""
    n_old = arr.shape[0]
    n_new = (d_new + 1) * inner + tail
    buf = rooms.get(key)
    if buf is None or arr.base is not buf or buf.shape[0] < n_new:
        buf = np.empty((max(n_new, 2 * n_old),) + arr.shape[1:])
        buf[:n_old] = arr
        rooms[key] = buf
    first = d_old * inner        # the intercept's first entry, then the tail
    buf[d_new * inner:n_new] = buf[first:n_old]    # (numpy copies overlapping ranges)
    if inner == 1:
        buf[first:d_new] = prior
    else:
        buf[first:d_new * inner].reshape((d_new - d_old,) + prior.shape)[...] = prior
    return buf[:n_new]
