"""Mixing the states of models of one spec trained on different data: one state out.

Parameter mixing ([IPM10]: every shard trains from the same model, then the
driver combines the results) needs, for every shape of state, what "the mean
of K models" is.  :func:`mix` is that one accessor; it takes the states as
``Model.state`` dicts and returns a new dict of the same arrays.  Mixing a
single state returns copies of its arrays unchanged (the identity, bit for
bit).  ``c`` are the mixing weights (``c_i >= 0``, summing to 1): uniform, or
proportional to each shard's number of updates ([IPM10] Sect. 3).

Two rules:

``"average"``
    The weights w (what the model predicts with) are averaged,
    ``w = sum_i c_i w_i``, and every other statistic arithmetically:

    * first-order (``v``, ``aux``, ``u``): ``w_i = s_i v_i`` (the scaled
      vector); the mixed state has ``v = w``, ``s = 1`` and ``||v||^2``
      recomputed.  The round count ``t`` becomes the rounds of all shards,
      ``t_0 + sum_i (t_i - t_0)`` for shards started from a state with
      ``t_0``.  With averaging (the averaged perceptron, ``average=True``)
      the lazy sum ``u`` is set so that the mixed model's averaged vector is
      the mean of the iterates of all those rounds, each counted once
      (:func:`mean_of_iterates`: the start's and every shard's own, as a
      sequential pass counts each row's), whatever rule mixed the current
      vector ``w``;
    * diagonal and full Gaussians (CW, AROW, and SOP as the Gaussian with
      mean ``w`` and covariance ``A^-1``): the means and the covariances;
      for diagonal SOP ``A = sum_i c_i A_i`` and ``vv = A w``;
    * AdaGrad (``u``, ``G``, ``aux``): the sums of subgradients, their squares
      and the round count are averaged, so the RDA weights use the shards'
      mean subgradient; with averaging, the sums of the weights ``acc`` are set
      so that the averaged weights are ``sum_i c_i`` of the shards' (the round
      count stays the mean, which the RDA weights need, so it does not count
      every iterate as the others' does, and may be fractional: a valid state);
    * mini-batch PA: ``w`` (each shard's reported model, its incomplete last
      group applied provisionally as at the end of a stream) is averaged into
      ``w0 = w``; no row is carried over (``n_pend = 0``);
    * L1-PA: ``w`` (the mean stays in the L1 ball, which is convex);
    * one-vs-rest: each class's binary model by its own rule;
    * any other array (a statistic added later): ``sum_i c_i a_i``.

    Every rule then sets the flat lazy sum ``u`` of the other averaged models
    (CW, AROW, SOP, mini-batch PA, L1-PA; the sum shaped as the weights, then
    the round count T) as the first-order rules set theirs: T is the rounds of
    all shards, ``t_0 + sum_i (T_i - t_0)``, and ``u = (T + 1) w - T A`` with
    ``w`` the mixed last iterate (whatever the rule made of it) and ``A`` the
    mean of the iterates of those T rounds (:func:`mean_of_iterates`, from
    each shard's averaged weights over its own rounds and the start's), so
    that the mixed averaged weights ``((T + 1) w - u) / T`` are ``A`` exactly,
    whatever the shards' sizes.  Later rounds then add to the mean as to one
    over T rounds.

``"touched"``
    First-order models only: each weight moves from the start ``w_0`` by the
    weighted mean of the changes of the shards that changed it,
    ``w_j = w_0j + sum_i c_i (w_ij - w_0j) / sum_{i: w_ij != w_0j} c_i``
    (``w_j = w_0j`` where none did).  Averaging divides a change that one
    shard made (a feature only its rows hold) by the number of shards; this
    keeps it whole, as the precision-weighted mean of ``"confidence"`` keeps
    a weight that only one shard is sure of.  Rules whose updates rescale
    every weight (the regularised PA family) change every coordinate: there
    it is the average.  Every other array is mixed as by ``"average"``.

``"confidence"``
    For Gaussian-weight models (CW, AROW, SOP), the Gaussian minimising
    ``sum_i c_i KL(N(mu, Sigma) || N(mu_i, Sigma_i))`` ([MDCW10] Sect. 4):
    setting the gradients in ``mu`` and ``Sigma`` to zero gives the mean
    precision and the precision-weighted mean,
    ``Sigma^-1 = sum_i c_i Sigma_i^-1``,
    ``mu = Sigma sum_i c_i Sigma_i^-1 mu_i``.  Diagonal models apply it
    coordinate by coordinate; a zero variance (a collapsed, certain weight)
    takes the mean of the shards certain about it.  Full covariances are
    symmetrised from their kept lower triangle and inverted (a singular one
    is an error); one-vs-rest full models combine each class's block, top-1
    the covariance over the stacked blocks.  For SOP, whose precision is
    ``A``, this is ``A = sum_i c_i A_i`` and ``vv = sum_i c_i vv_i``.
    Averaged models report the mean of every round's iterate (above).
"""
import numpy as np

from .. import _core
from . import binary, kernel, l1, minibatch, multiclass
from .average import mean_of_rounds, rounds
from .interface import Model
from .binary import averaged_first_order, rda_reported, rda_sums
from .ovr import OneVsRest

#: The mixing rules of :func:`mix`.
RULES = ("average", "confidence", "touched")


def is_gaussian(model):
    """Whether `model`'s state is a Gaussian over weights (``"confidence"`` applies)."""
    return isinstance(model, (binary.Diagonal, binary.Full, binary.SOPDiagonal,
                              multiclass.Diagonal, multiclass.Full, multiclass.SOPDiagonal))


def is_first_order(model):
    """Whether `model` keeps first-order weights ``w = s v`` (``"touched"`` applies)."""
    if isinstance(model, OneVsRest):
        return all(is_first_order(m) for m in model.models)
    return isinstance(model, (binary.FirstOrder, multiclass.FirstOrder))


def mix(model, states, c=None, rule="average", start=None):
    """The state mixing ``states`` (dicts like ``model.state``) with weights ``c``.

    Parameters
    ----------
    model : cwkit.models.interface.Model
        A model of the spec the states belong to (its own state is not read).
    states : list of dict
        The states to mix (at least one).
    c : array-like, optional
        Mixing weights, >= 0 with a positive sum (normalised here); default uniform.
    rule : {"average", "confidence", "touched"}
    start : dict, optional
        The state every shard started from (its round count ``t_0``, and for
        ``"touched"`` the weights ``w_0`` the changes are taken from); default: none
        (``t_0 = 0``, ``w_0 = 0``).

    Returns
    -------
    dict
        New arrays, shaped as ``model.state``'s.
    """
    if not states:
        raise ValueError("mix needs at least one state")
    check(model, rule)
    if len(states) == 1:
        return {k: np.array(v, copy=True) for k, v in states[0].items()}
    c = _weights(c, len(states))
    return _mix(model, states, c, rule, start)


def check(model, rule):
    """Raise ValueError unless `rule` is one of :data:`RULES` and can mix `model`'s
    states (what :func:`mix` checks first, for a caller to check before any work)."""
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    if isinstance(model, (kernel.DualModel, kernel.KernelOneVsRest)):
        raise kernel_refused(_name(model))
    if rule == "confidence" and not is_gaussian(model):
        raise ValueError(f"{_name(model)}: confidence mixing "
                         "combines Gaussians over weights (cw, arow, sop); use 'average' "
                         "or 'updates'")
    if rule == "touched" and not is_first_order(model):
        raise ValueError(f"{_name(model)}: touched mixing combines the weight changes of "
                         "first-order rules (perceptron, PA, ...); use 'average', 'updates' "
                         "or 'confidence'")


def kernel_refused(name):
    """The error for kernel model `name` given to be mixed."""
    return ValueError(f"{name}: kernel models cannot be mixed (each shard's support set "
                      "is its own rows, and no average of them is a model of the same "
                      "budget); train the linear form over partitions, or its "
                      "approximation on explicit features, cwkit.make(name, "
                      "kernel_approx='rff' or 'nystroem', ...)")


def _name(model):
    spec = getattr(model, "spec", None)
    return getattr(spec, "name", None) or type(model).__name__


def _weights(c, n):
    c = np.full(n, 1.0 / n) if c is None else np.asarray(c, dtype=np.float64)
    if c.shape != (n,) or not np.isfinite(c).all() or (c < 0).any() or c.sum() <= 0:
        raise ValueError(f"mixing weights must be {n} finite numbers >= 0 with a positive "
                         f"sum, got {c!r}")
    return c / c.sum()


def mean(arrays, c):
    """``sum_i c_i a_i`` over arrays of one shape."""
    out = np.zeros(np.shape(arrays[0]))
    for ci, a in zip(c, arrays):
        out += ci * a
    return out


def _mix(model, states, c, rule, start):
    if isinstance(model, OneVsRest):
        out = {}
        for k, sub in enumerate(model.models):
            part = [{key: s[f"{k}/{key}"] for key in sub.state} for s in states]
            p0 = None if start is None else {key: start[f"{k}/{key}"] for key in sub.state}
            out.update({f"{k}/{key}": a for key, a in _mix(sub, part, c, rule, p0).items()})
        return out
    if type(model).named_state is not Model.named_state:     # mixed by their parts
        named = _mix_named(model, [model.named_state(s) for s in states], c, rule,
                           None if start is None else model.named_state(start))
        return model.from_named(named)
    return _mix_named(model, states, c, rule, start)


def _mix_named(model, states, c, rule, start):
    out = {key: mean([s[key] for s in states], c) for key in states[0]}
    for kinds, combine in _RULES:
        if isinstance(model, kinds):
            combine(model, states, c, rule, start, out)
            break
    # the flat lazy sum u of an averaged model (first-order models set theirs above,
    # AdaGrad's u is its sum of subgradients: neither has a `last_iterate`)
    if "u" in out and hasattr(model, "last_iterate"):
        _lazy_sum(model.last_iterate, states, c, start, out)
    return out


def _lazy_sum(last_iterate, states, c, start, out):
    """The flat lazy sum ``u`` (the sum shaped as the weights, then T) of the mixed state
    ``out``, whose last iterate ``w = last_iterate(out)`` its rule has mixed: T is the
    rounds of all shards, ``t_0 + sum_i (T_i - t_0)``, and ``u`` such that the averaged
    weights ``((T + 1) w - u) / T`` are the mean of every round's iterate
    (:func:`mean_of_iterates`)."""
    t0 = 0.0 if start is None else rounds(start["u"])
    T = [rounds(s["u"]) for s in states]
    t = t0 + sum(Ti - t0 for Ti in T)
    A0 = 0.0 if start is None else mean_of_rounds(start, last_iterate(start))
    avg = mean_of_iterates([mean_of_rounds(s, last_iterate(s)) for s in states], T, t0, A0)
    w = last_iterate(out)
    u = out["u"]
    u[:-1] = ((t + 1.0) * w - t * avg).reshape(u[:-1].shape)
    u[-1] = t


def _first_order(model, states, c, rule, start, out):
    """w = s v per aux row (one row: binary and top-1; K rows: one-vs-rest)."""
    S, T, VN2 = _core.AUX_S, _core.AUX_T, _core.AUX_VN2
    aux = [np.atleast_2d(s["aux"]) for s in states]
    W = [_scaled(s) for s in states]
    if rule == "touched":
        w0 = np.zeros_like(W[0]) if start is None else _scaled(start)
        w = w0 + touched([wi - w0 for wi in W], c)
    else:
        w = mean(W, c)
    t0 = 0.0 if start is None else np.atleast_2d(start["aux"])[:, T]
    t = t0 + sum(a[:, T] - t0 for a in aux)
    mixed_aux = np.atleast_2d(out["aux"])
    if states[0]["u"].size:    # averaging: the mean of every round's iterate
        avg = [averaged_first_order(s["v"], a, s["u"]) for s, a in zip(states, aux)]
        A0 = 0.0 if start is None else averaged_first_order(
            start["v"], np.atleast_2d(start["aux"]), start["u"])
        S_T = mixed_aux[:, _core.AUX_SSUM] if mixed_aux.shape[1] > _core.AUX_SSUM else t
        out["u"] = (S_T + 1.0) * w - t * mean_of_iterates(avg, [a[:, T] for a in aux], t0,
                                                           A0)
    out["v"] = w
    mixed_aux[:, S] = 1.0
    mixed_aux[:, T] = t
    if w.ndim == 1 or mixed_aux.shape[0] == 1:
        mixed_aux[:, VN2] = np.dot(w.ravel(), w.ravel())
    else:
        mixed_aux[:, VN2] = np.einsum("dk,dk->k", w, w)
    out["aux"] = mixed_aux.reshape(np.shape(states[0]["aux"]))


def mean_of_iterates(averages, T, t0, A0):
    """The mean of the iterates of every round of every shard, each counted once: the
    start's ``t0`` rounds (averaged vector ``A0``) and the ``T_i - t0`` rounds of shard
    i, whose averaged vector ``A_i`` is over its ``T_i`` rounds, so that the sum of its
    own iterates is ``T_i A_i - t0 A0``::

        (t0 A0 + sum_i (T_i A_i - t0 A0)) / (t0 + sum_i (T_i - t0))

    (0 where no round was made).  ``T_i`` and ``t0`` are per column (one-vs-rest) or
    scalars."""
    t = t0 + sum(Ti - t0 for Ti in T)
    total = t0 * A0 + sum(Ti * Ai - t0 * A0 for Ti, Ai in zip(T, averages))
    return total / np.where(t > 0, t, 1.0)


def _scaled(state):
    """w = s v of a first-order state."""
    a = np.atleast_2d(state["aux"])
    return (a[0, _core.AUX_S] if state["v"].ndim == 1 else a[:, _core.AUX_S]) * state["v"]


def touched(changes, c):
    """The changes ``d_i`` of the shards mixed coordinate by coordinate over the shards
    that changed it: ``sum_i c_i d_ij / sum_{i: d_ij != 0} c_i`` (0 where none did), so
    that a change made by one shard only is kept whole, not divided by the shards."""
    num = mean(changes, c)
    den = mean([d != 0 for d in changes], c)
    return num / np.where(den > 0, den, 1.0)


def combine_diagonal(mu, sigma, c):
    """The KL-minimising diagonal Gaussian ([MDCW10]): mean precision, precision-weighted
    mean; where a shard's variance is 0, the mean of those shards, variance 0."""
    mu, sigma = np.asarray(mu), np.asarray(sigma)
    c = np.asarray(c).reshape((-1,) + (1,) * (mu.ndim - 1))
    certain = sigma == 0
    if not certain.any():     # the usual case, the same operations without the masks
        prec = 1.0 / sigma
        P = (c * prec).sum(axis=0)
        return (c * prec * mu).sum(axis=0) / P, 1.0 / P
    with np.errstate(divide="ignore", invalid="ignore"):
        prec = np.where(certain, 0.0, 1.0 / np.where(certain, 1.0, sigma))
        P = (c * prec).sum(axis=0)
        m = (c * prec * mu).sum(axis=0) / P
        cz = (c * certain).sum(axis=0)
        m0 = (c * certain * mu).sum(axis=0) / np.where(cz > 0, cz, 1.0)
    hit = cz > 0
    return np.where(hit, m0, m), np.where(hit, 0.0, 1.0 / np.where(hit, 1.0, P))


def combine_full(mu, Sigma, c):
    """The KL-minimising Gaussian ([MDCW10]): ``Sigma = (sum c_i Sigma_i^-1)^-1``,
    ``mu = Sigma sum c_i Sigma_i^-1 mu_i`` (covariances given symmetric)."""
    P = np.zeros_like(Sigma[0])
    h = np.zeros_like(mu[0])
    for ci, m, S in zip(c, mu, Sigma):
        try:
            Pi = np.linalg.inv(S)
        except np.linalg.LinAlgError:
            raise ValueError("confidence mixing needs positive definite covariances; one "
                             "shard's is singular (a collapsed variance): use mixing="
                             "'average'") from None
        P += ci * Pi
        h += ci * (Pi @ m)
    Sigma_out = np.linalg.inv(P)
    Sigma_out = 0.5 * (Sigma_out + Sigma_out.T)
    return Sigma_out @ h, Sigma_out


def _diag_gaussian(model, states, c, rule, start, out):
    if rule != "confidence":
        return
    if isinstance(model, binary.Diagonal):
        ms = np.stack([s["mu_sigma"] for s in states])
        mu, sigma = combine_diagonal(ms[..., binary.MU], ms[..., binary.SIGMA], c)
        out["mu_sigma"][:, binary.MU] = mu
        out["mu_sigma"][:, binary.SIGMA] = sigma
    else:
        out["mu"], out["sigma"] = combine_diagonal(
            np.stack([s["mu"] for s in states]), np.stack([s["sigma"] for s in states]), c)


def _full_gaussian(model, states, c, rule, start, out):
    if rule != "confidence":
        return
    shape = states[0]["mu"].shape
    ovr = getattr(model, "ovr", False)
    if not ovr:
        mu, Sigma = combine_full([s["mu"].ravel() for s in states],
                                 [binary.symmetric(s["Sigma"]) for s in states], c)
        out["mu"], out["Sigma"] = mu.reshape(shape), Sigma
        return
    D = shape[1]
    for k in range(shape[0]):
        blk = slice(k * D, (k + 1) * D)
        out["mu"][k], out["Sigma"][blk] = combine_full(
            [s["mu"][k] for s in states], [binary.symmetric(s["Sigma"][blk]) for s in states],
            c)


def _sop_diagonal(model, states, c, rule, start, out):
    """A is the precision: confidence is the plain mean of (vv, A); average the weights."""
    if rule == "average":
        out["vv"] = out["A"] * mean([s["vv"] / s["A"] for s in states], c)


def _minibatch(model, states, c, rule, start, out):
    out["w0"] = out["w"].copy()
    for key in ("pend", "pend_y", "n_pend"):
        out[key] = np.zeros_like(out[key])


def _keep_mean(model, states, c, rule, start, out):
    """L1-PA: the weighted mean of every array (already in ``out``)."""


def _adagrad(model, states, c, rule, start, out):
    """The sums u, G and the round count t are the weighted means (in ``out``); when
    averaging, ``acc`` holds the mixed averaged weights as the sum of t rounds, every
    coordinate dated t, so that they are ``sum_i c_i`` of the shards' averaged weights."""
    if "acc" in out:
        t = out["aux"][_core.AUX_T]
        sums, rounds = rda_sums(out["acc"])
        sums[...] = t * mean([rda_reported(model.spec, s) for s in states], c)
        rounds[...] = t


#: (model classes, how their state mixes beyond the weighted mean), most specific first.
_RULES = (
    ((minibatch.BinaryBPA,), _minibatch),
    ((binary.FirstOrder, multiclass.FirstOrder), _first_order),
    ((binary.Diagonal, multiclass.Diagonal), _diag_gaussian),
    ((binary.Full, multiclass.Full), _full_gaussian),
    ((binary.SOPDiagonal, multiclass.SOPDiagonal), _sop_diagonal),
    ((l1.BinaryL1PA, l1.MulticlassL1PA), _keep_mean),
    ((binary.AdaGrad, multiclass.AdaGrad), _adagrad),
)
