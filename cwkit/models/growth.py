"""A feature space that grows: a model's state widened to more features.

``partial_fit`` on rows wider than any seen before widens the model first: every
new feature starts from the rule's prior, as in a model built at the new width
(weight 0, variance ``a`` — the new block of a full Sigma ``a I``, uncorrelated
with the rest —, AdaGrad's sums 0, averaging sums 0, mini-batch PA's pending rows
0 in the new columns).  A feature no row has touched keeps its prior exactly, so a
model fed narrow rows and widened equals, bit for bit, the model fed the same rows
padded with zeros at the final width.

Each state array's feature axes are described by ``(axis, inner, tail)``
(:meth:`cwkit.models.interface.Model.feature_layout`): along ``axis`` the array
holds ``blocks`` blocks of D = n_features + 1 entries (the intercept, the
augmented constant feature, last of each block), each entry ``inner`` values wide,
then ``tail`` more values (1: the round count T of a flat lazy sum; -1: a block of
the features alone, without the intercept: mini-batch PA's pending rows).  A
widening keeps every feature's values where they were, moves each intercept and
the tail to their new places and writes the prior into the new features' places.

Growth is amortised: an array whose one feature axis is its first, in one block,
is a prefix view of a buffer twice as long as needed; widening it writes only the
new features, the intercept and the tail.  The other arrays (a full Sigma, the
averaging sums of AdaGrad, mini-batch PA's pending rows, the mean of a
multi-class full covariance) are reallocated, in the time of one update of a full
covariance, or O(D) values.
"""
from dataclasses import replace

import numpy as np

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
    features, each new one at its prior (see the module)."""
    d_old = model.n_features
    spec = replace(model.spec, n_features=n_features)
    check_size(spec)
    layout = {key: axes for key, axes in model.feature_layout().items()
              if np.size(model.state.get(key, ()))}   # (no lazy sum: no averaging)
    prefix = {key for key, ((axis, inner, tail), *more) in layout.items()
              if not more and axis == 0
              and model.state[key].shape[0] - tail == (d_old + 1) * inner}
    # built before any array changes: a width the shape does not support raises here
    fresh = type(model)(spec).state if set(layout) - prefix else None
    prior = type(model)(replace(model.spec, n_features=1)).state if prefix else None
    for key, axes in layout.items():
        arr = model.state[key]
        if key in prefix:
            axis, inner, tail = axes[0]
            model.state[key] = _widen_prefix(model, key, arr, prior[key][:inner],
                                             d_old, n_features, inner, tail)
            continue
        out = fresh[key]
        index = [np.arange(n) for n in arr.shape]
        for axis, inner, tail in axes:
            index[axis] = feature_map(arr.shape[axis], d_old, n_features, inner, tail)
        out[np.ix_(*index)] = arr
        model.state[key] = out
    model.spec = spec
    model.n_features = n_features


def _widen_prefix(model, key, arr, prior, d_old, d_new, inner, tail):
    """`arr` widened as a prefix view of a buffer with room (`prior`: the values of
    one new feature along the first axis)."""
    rooms = model.__dict__.setdefault("_rooms", {})
    n_old = arr.shape[0]
    n_new = (d_new + 1) * inner + tail
    buf = rooms.get(key)
    if buf is None or arr.base is not buf or buf.shape[0] < n_new:
        buf = np.empty((max(n_new, 2 * n_old),) + arr.shape[1:])
        buf[:n_old] = arr
        rooms[key] = buf
    first = d_old * inner        # the intercept's first entry, then the tail
    buf[d_new * inner:n_new] = buf[first:n_old].copy()
    buf[first:d_new * inner] = np.tile(prior, (d_new - d_old,) + (1,) * (arr.ndim - 1))
    return buf[:n_new]
