"""Mixing model states (cwkit.models.mixing): the identity, the average, the KL combination."""
import copy

import numpy as np
import pytest
from conftest import last_iterate, BINARY_CASES, OTHER_CASES, case_id, saved_loaded_and_learning_on
from scipy.optimize import minimize

from cwkit.models import mixing, rules

CASES = BINARY_CASES + OTHER_CASES
GAUSSIAN = {*rules.names_of(rules.GAUSSIAN_RULES), "sop"}


def _models(name, params, strategy, n_models=3, seed=0):
    """`n_models` estimators of one spec, each fitted on its own rows."""
    rng = np.random.default_rng(seed)
    k = 2 if strategy == "binary" else 3
    extra = {} if strategy == "binary" else {"multiclass": strategy, "k": 2}
    out = []
    for _ in range(n_models):
        X = rng.normal(size=(30, 4))
        y = np.arange(30) % k
        out.append(last_iterate(name, **params, **extra).partial_fit(X, y, classes=np.arange(k)))
    return out


def _has_topk(name, params):
    try:
        last_iterate(name, **params, multiclass="topk").partial_fit(np.eye(3), np.arange(3))
    except ValueError:
        return False
    return True


STRATEGIES = ("binary", "top1", "ovr", "topk")
PARAMS = [(c, s) for c in CASES for s in STRATEGIES if s != "topk" or _has_topk(*c)]
IDS = [f"{case_id(c)}-{s}" for c, s in PARAMS]


@pytest.mark.parametrize(("case", "strategy"), PARAMS, ids=IDS)
def test_mixing_one_state_is_the_identity(case, strategy):
    (est,) = _models(*case, strategy, n_models=1)
    state = est._model.state
    rules = ("average",) + (("confidence",) if case[0] in GAUSSIAN else ()) + (
        ("touched",) if mixing.is_first_order(est._model) else ())
    for rule in rules:
        mixed = mixing.mix(est._model, [state], rule=rule)
        assert mixed.keys() == state.keys()
        for key in state:
            assert mixed[key] is not state[key]
            assert np.array_equal(mixed[key], state[key])


def _load(est, state):
    for key, arr in state.items():
        est._model.state[key][...] = arr
    return est


@pytest.mark.parametrize(("case", "strategy"), PARAMS, ids=IDS)
def test_average_is_the_weighted_mean_of_the_weights(case, strategy):
    ests = _models(*case, strategy)
    c = np.array([0.2, 0.5, 0.3])
    mixed = mixing.mix(ests[0]._model, [e._model.state for e in ests], c * 7.0)
    target = _models(*case, strategy, n_models=1, seed=99)[0]
    _load(target, mixed)
    assert target._model.state_problem() is None
    if case[0] == "adagrad":   # the RDA weights are not linear in (u, G): the sums are
        for key in ("u", "G"):
            assert np.allclose(mixed[key], sum(ci * e._model.state[key]
                                               for ci, e in zip(c, ests)), rtol=1e-12)
        return
    # (averaged first-order models: the last iterate is the mean, the averaged vector
    # the mean of every iterate, test_averaged_first_order_mixes_to_the_mean_of_every_iterate)
    weights = "last_weights" if case[0] == "avg-perceptron" else "weights"
    expect = sum(ci * np.asarray(getattr(e._model, weights)()) for ci, e in zip(c, ests))
    np.testing.assert_allclose(getattr(target._model, weights)(), expect, rtol=1e-12,
                               atol=1e-14)


def test_first_order_round_count_and_averaged_vector():
    ests = _models("avg-perceptron", {}, "binary")
    model = ests[0]._model
    start = model.state
    states = [e._model.state for e in ests]
    t = [s["aux"][2] for s in states]
    mixed = mixing.mix(model, states, start=start)
    named = model.named_state(mixed)
    assert mixed["aux"][2] == t[0] + (t[1] - t[0]) + (t[2] - t[0])
    assert mixed["aux"][0] == 1.0
    assert mixed["aux"][1] == pytest.approx(float(named["v"] @ named["v"]), rel=1e-12)
    target = _load(_models("avg-perceptron", {}, "binary", n_models=1, seed=5)[0], mixed)
    current = np.mean([s["aux"][0] * s["v"] for s in map(model.named_state, states)], axis=0)
    np.testing.assert_allclose(target._model.named_state()["v"], current, rtol=1e-12)
    A0, A1, A2 = (e._model.weights() for e in ests)     # t = 30 rounds each, the start's too
    np.testing.assert_allclose(target._model.weights(),
                               (30 * A0 + (30 * A1 - 30 * A0) + (30 * A2 - 30 * A0)) / 30,
                               rtol=1e-12, atol=1e-14)


def _first_order_state(w, s=1.0, t=0.0):
    return {"v": np.asarray(w, float) / s, "aux": np.array([s, 0.0, t]), "u": np.empty(0)}


def _mix_first_order(model, states, start=None, **options):
    """``mixing.mix`` of binary first-order states given, and returned, by the names of
    their arrays (``Model.named_state``)."""
    mixed = mixing.mix(model, [model.from_named(s) for s in states],
                       start=None if start is None else model.from_named(start), **options)
    return model.named_state(mixed)


def test_touched_closed_form():
    """A coordinate changed by some shards moves by the weighted mean of their changes
    over those shards only; one no shard changed stays (w = s v; scales differ)."""
    (est,) = _models("pa", {}, "binary", n_models=1)
    w0 = np.array([1.0, -2.0, 0.5, 3.0, 0.25])
    start = _first_order_state(w0, t=10.0)
    d1 = np.array([1.0, 0.0, 2.0, 0.0, -1.0])
    d2 = np.array([3.0, 4.0, 0.0, 0.0, 1.0])
    states = [_first_order_state(w0 + d1, s=0.5, t=14.0), _first_order_state(w0 + d2, t=17.0)]
    mixed = _mix_first_order(est._model, states, c=[1.0, 3.0], rule="touched", start=start)
    w = w0 + np.array([0.25 * 1.0 + 0.75 * 3.0, 4.0, 2.0, 0.0, 0.25 * -1.0 + 0.75 * 1.0])
    np.testing.assert_allclose(mixed["v"], w, rtol=1e-15)
    assert mixed["v"][3] == w0[3]
    np.testing.assert_array_equal(mixed["aux"], [1.0, w @ w, 10.0 + 4.0 + 7.0])
    even = _mix_first_order(est._model, states, rule="touched", start=start)
    np.testing.assert_allclose(even["v"], w0 + [2.0, 4.0, 2.0, 0.0, 0.0], rtol=1e-15)


def test_touched_keeps_a_change_made_by_one_shard_whole():
    """Shards changing disjoint coordinates: "touched" adds their changes (a sparse
    feature one shard saw keeps that shard's weight), "average" divides each by 3."""
    (est,) = _models("pa1", {"C": 0.3}, "binary", n_models=1)
    rng = np.random.default_rng(3)
    w0 = rng.normal(size=7)
    ds = [np.where(np.arange(7) % 3 == i, rng.normal(size=7), 0.0) for i in range(3)]
    states = [_first_order_state(w0 + d) for d in ds]
    start = _first_order_state(w0)
    touched = _mix_first_order(est._model, states, rule="touched", start=start)
    np.testing.assert_allclose(touched["v"], w0 + sum(ds), rtol=1e-15)
    averaged = _mix_first_order(est._model, states, rule="average", start=start)
    np.testing.assert_allclose(averaged["v"], w0 + sum(ds) / 3, rtol=1e-14)


def test_touched_identities():
    """No shard changed anything: the start, bit for bit; equal shards: their model."""
    ests = _models("perceptron", {}, "top1")
    model = ests[0]._model
    start = model.state
    mixed = model.named_state(mixing.mix(model, [start, start, start], rule="touched",
                                         start=start))
    np.testing.assert_array_equal(mixed["v"], model.named_state()["v"])
    one = ests[1]._model.state
    mixed = model.named_state(mixing.mix(model, [one, one], rule="touched", start=start))
    named = ests[1]._model.named_state()
    np.testing.assert_allclose(mixed["v"], np.atleast_2d(named["aux"])[:, 0] * named["v"],
                               rtol=1e-12, atol=1e-15)


FIRST_ORDER = [(c, s) for c, s in PARAMS
               if mixing.is_first_order(_models(*c, s, n_models=1)[0]._model)]


@pytest.mark.parametrize(("case", "strategy"), FIRST_ORDER,
                         ids=[f"{case_id(c)}-{s}" for c, s in FIRST_ORDER])
def test_touched_against_a_per_coordinate_loop(case, strategy):
    ests = _models(*case, strategy, seed=4)
    start = _models(*case, strategy, n_models=1, seed=8)[0]._model.state
    c = np.array([0.5, 0.2, 0.3])
    mixed = mixing.mix(ests[0]._model, [e._model.state for e in ests], c * 2.0,
                       rule="touched", start=start)
    target = _load(_models(*case, strategy, n_models=1, seed=99)[0], mixed)
    assert target._model.state_problem() is None
    W = [np.asarray(e._model.last_weights(), float) for e in ests]
    w0 = np.asarray(_load(_models(*case, strategy, n_models=1, seed=8)[0],
                          start)._model.last_weights(), float)
    expect = np.empty_like(w0)
    for j in np.ndindex(w0.shape):
        moved = [i for i in range(3) if W[i][j] != w0[j]]
        expect[j] = w0[j] + (sum(c[i] * (W[i][j] - w0[j]) for i in moved)
                             / sum(c[i] for i in moved) if moved else 0.0)
    np.testing.assert_allclose(target._model.last_weights(), expect, rtol=1e-12, atol=1e-14)


def _iterates(est, X, y, classes):
    """Learn the rows one by one; the last iterate after each (the per-round reference)."""
    out = []
    for i in range(len(X)):
        est.partial_fit(X[i:i + 1], y[i:i + 1], classes=classes)
        out.append(np.asarray(est._model.last_weights(), float).copy())
    return out


@pytest.mark.parametrize("rule", ["average", "updates", "touched"])
@pytest.mark.parametrize("name", ["avg-perceptron", "pa1", "reg-pa"])
@pytest.mark.parametrize("strategy", ["binary", "top1", "ovr"])
def test_averaged_first_order_mixes_to_the_mean_of_every_iterate(rule, name, strategy):
    """average=True: the mixed model reports the mean of the iterates of every round,
    the start's and each shard's own, each counted once (shards of unequal sizes, from a
    start that has rounds of its own), whatever the rule does to the last iterate; and
    the rounds after the mix go on averaging over all of them."""
    import copy
    params = {} if name == "avg-perceptron" else {"average": True}
    extra = {} if strategy == "binary" else {"multiclass": strategy}
    k = 2 if strategy == "binary" else 3
    classes = np.arange(k)
    rng = np.random.default_rng(3)

    def rows(n):
        return rng.normal(size=(n, 4)), rng.integers(0, k, n)

    start = last_iterate(name, **params, **extra)
    iterates = _iterates(start, *rows(11), classes)
    shards = [copy.deepcopy(start) for _ in range(3)]
    for est, n in zip(shards, (5, 17, 9)):         # unequal shards
        iterates += _iterates(est, *rows(n), classes)
    c = {"average": None, "updates": np.array([0.2, 0.5, 0.3])}.get(rule)
    mixed = mixing.mix(start._model, [e._model.state for e in shards], c,
                       rule="average" if rule == "updates" else rule,
                       start=start._model.state)
    target = _load(copy.deepcopy(start), mixed)
    assert target._model.state_problem() is None
    np.testing.assert_allclose(target._model.weights(), np.mean(iterates, axis=0),
                               rtol=1e-12, atol=1e-14)
    # rounds learnt after the mix: their iterates join the mean
    iterates += _iterates(target, *rows(6), classes)
    np.testing.assert_allclose(target._model.weights(), np.mean(iterates, axis=0),
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("multiclass", [None, "top1", "ovr"])
@pytest.mark.parametrize("average", [False, True])
def test_mixed_adagrad_with_a_fractional_round_count_saves_and_loads(tmp_path, multiclass,
                                                                     average):
    """AdaGrad's mixed round count is the shards' mean (13 and 20 rows: 16.5), which its
    RDA weights use: the mixed model is a valid state that saves, loads and learns on."""
    import copy
    rng = np.random.default_rng(4)
    k = 2 if multiclass is None else 3
    extra = {} if multiclass is None else {"multiclass": multiclass}
    X, y = rng.normal(size=(40, 4)), rng.integers(0, k, 40)
    shards = [last_iterate("adagrad", average=average, **extra).partial_fit(
        X[a:b], y[a:b], classes=np.arange(k)) for a, b in ((0, 13), (13, 33))]
    est = copy.deepcopy(shards[0])
    _load(est, mixing.mix(est._model, [s._model.state for s in shards]))
    aux = [v for key, v in est._model.state.items() if key.endswith("aux")]
    assert all(a[2] == 16.5 for a in aux)
    assert est._model.state_problem() is None
    loaded = saved_loaded_and_learning_on(est, tmp_path / "m.cwk", X, X[33:], y[33:])
    assert all(a[2] == 16.5 + 7 for a in
               (v for key, v in loaded._model.state.items() if key.endswith("aux")))


def test_minibatch_mix_carries_no_rows():
    ests = _models("bpa1", {"C": 0.3, "batch_size": 4}, "binary")
    assert any(e._model.state["n_pend"][0] for e in ests)
    mixed = mixing.mix(ests[0]._model, [e._model.state for e in ests])
    assert mixed["n_pend"][0] == 0
    np.testing.assert_array_equal(mixed["w0"], mixed["w"])


def test_an_added_state_array_is_mixed_as_a_mean():
    """A statistic a model gains later (say an averaged vector) is just another array."""
    ests = _models("adagrad", {}, "top1")   # (a state mixed as it is: not by its parts' names)
    states = [dict(e._model.state, extra=np.full(3, float(i))) for i, e in enumerate(ests)]
    mixed = mixing.mix(ests[0]._model, states)
    np.testing.assert_allclose(mixed["extra"], np.full(3, 1.0))


def test_confidence_is_refused_for_first_order_models():
    ests = _models("pa", {}, "binary", n_models=1)
    with pytest.raises(ValueError, match="confidence mixing combines Gaussians"):
        mixing.mix(ests[0]._model, [ests[0]._model.state], rule="confidence")


def test_touched_is_refused_for_other_models():
    for name in ("arow", "adagrad", "bpa1", "l1-pa"):
        ests = _models(name, {}, "binary", n_models=1)
        with pytest.raises(ValueError, match="touched mixing combines the weight changes"):
            mixing.mix(ests[0]._model, [ests[0]._model.state], rule="touched")


@pytest.mark.parametrize("name", ["pa1", "arow", "bpa1"])
@pytest.mark.parametrize("strategy", ["binary", "top1", "ovr"])
def test_kernel_models_are_refused(name, strategy):
    """A support set is a shard's own rows: no average of them is a model (a clear error,
    not a shape error from the arrays)."""
    extra = {} if strategy == "binary" else {"multiclass": strategy}
    k = 2 if strategy == "binary" else 3
    est = last_iterate(name, kernel="rbf", **extra).partial_fit(
        np.random.default_rng(0).normal(size=(12, 3)), np.arange(12) % k)
    for states in ([est._model.state], [est._model.state] * 2):
        with pytest.raises(ValueError, match="kernel models cannot be mixed"):
            mixing.mix(est._model, states)


def test_bad_weights_and_rule():
    (est,) = _models("pa", {}, "binary", n_models=1)
    with pytest.raises(ValueError, match="mixing weights"):
        mixing.mix(est._model, [est._model.state] * 2, c=[1.0, -1.0])
    with pytest.raises(ValueError, match="rule must be"):
        mixing.mix(est._model, [est._model.state], rule="median")


# ---------------------------------------------------------------- the KL combination

def _kl(mu, S, mu_i, S_i):
    """KL(N(mu, S) || N(mu_i, S_i))."""
    P_i = np.linalg.inv(S_i)
    d = mu_i - mu
    return 0.5 * (np.trace(P_i @ S) + d @ P_i @ d - len(mu)
                  + np.linalg.slogdet(S_i)[1] - np.linalg.slogdet(S)[1])


def _gaussians(rng, K, D):
    mus = rng.normal(size=(K, D))
    Sigmas = []
    for _ in range(K):
        A = rng.normal(size=(D, D))
        Sigmas.append(A @ A.T + 0.3 * np.eye(D))
    return mus, np.array(Sigmas)


def test_full_combination_is_the_closed_form_and_minimises_the_summed_kl():
    rng = np.random.default_rng(3)
    mus, Sigmas = _gaussians(rng, 3, 2)
    c = np.array([0.5, 0.3, 0.2])
    mu, S = mixing.combine_full(mus, Sigmas, c)
    P = sum(ci * np.linalg.inv(Si) for ci, Si in zip(c, Sigmas))
    np.testing.assert_allclose(S, np.linalg.inv(P), rtol=1e-12)
    np.testing.assert_allclose(mu, np.linalg.solve(
        P, sum(ci * np.linalg.solve(Si, mi) for ci, mi, Si in zip(c, mus, Sigmas))),
        rtol=1e-12)

    def objective(theta):       # mu (2) and a Cholesky factor L (3) of Sigma = L L^T
        L = np.array([[np.exp(theta[2]), 0.0], [theta[3], np.exp(theta[4])]])
        return sum(ci * _kl(theta[:2], L @ L.T, mi, Si) for ci, mi, Si in zip(c, mus, Sigmas))

    best = minimize(objective, np.zeros(5), method="BFGS", options={"gtol": 1e-10})
    L = np.array([[np.exp(best.x[2]), 0.0], [best.x[3], np.exp(best.x[4])]])
    np.testing.assert_allclose(best.x[:2], mu, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(L @ L.T, S, rtol=1e-5, atol=1e-7)
    assert objective(best.x) >= sum(ci * _kl(mu, S, mi, Si)
                                    for ci, mi, Si in zip(c, mus, Sigmas)) - 1e-12


def test_diagonal_combination_is_the_full_one_on_diagonal_gaussians():
    rng = np.random.default_rng(4)
    mus = rng.normal(size=(3, 5))
    sig = rng.uniform(0.1, 2.0, size=(3, 5))
    c = np.array([0.2, 0.2, 0.6])
    mu, s = mixing.combine_diagonal(mus, sig, c)
    mu_f, S_f = mixing.combine_full(mus, np.array([np.diag(v) for v in sig]), c)
    np.testing.assert_allclose(mu, mu_f, rtol=1e-12)
    np.testing.assert_allclose(s, np.diag(S_f), rtol=1e-12)
    np.testing.assert_allclose(1.0 / s, (c[:, None] / sig).sum(0), rtol=1e-12)


def test_diagonal_combination_of_a_collapsed_variance():
    mu, s = mixing.combine_diagonal(np.array([[1.0, 1.0], [3.0, 2.0]]),
                                    np.array([[0.0, 1.0], [1.0, 1.0]]), np.array([0.5, 0.5]))
    np.testing.assert_array_equal(mu, [1.0, 1.5])
    np.testing.assert_array_equal(s, [0.0, 1.0])


@pytest.mark.parametrize("strategy", ["binary", "top1", "ovr"])
@pytest.mark.parametrize("covariance", ["diag", "full"])
@pytest.mark.parametrize("name", ["arow", "sop"])
def test_confidence_mixing_of_models_is_the_combination_of_their_gaussians(
        name, covariance, strategy):
    ests = _models(name, {"covariance": covariance}, strategy)
    model = ests[0]._model
    mixed = mixing.mix(model, [e._model.state for e in ests], rule="confidence")
    target = _load(_models(name, {"covariance": covariance}, strategy, n_models=1,
                           seed=7)[0], mixed)
    c = np.full(3, 1.0 / 3)
    if covariance == "full":
        # one Gaussian over the stacked class blocks (top-1) or one per block
        blocks = 1 if strategy in ("binary", "top1") else 3
        covs = [e._model.covariance() for e in ests]
        mus = [np.ravel(e._model.weights()) for e in ests]
        n = covs[0].shape[0] // blocks
        for b in range(blocks):
            sl = slice(b * n, (b + 1) * n)
            mu, S = mixing.combine_full([m[sl] for m in mus], [C[sl, sl] for C in covs], c)
            np.testing.assert_allclose(np.ravel(target._model.weights())[sl], mu, rtol=1e-10)
            np.testing.assert_allclose(target._model.covariance()[sl, sl], S, rtol=1e-10,
                                       atol=1e-13)
    else:
        w = [np.asarray(e._model.weights()) for e in ests]
        v = [np.asarray(e._model.variances()) for e in ests]
        mu, s = mixing.combine_diagonal(np.array(w), np.array(v), c)
        np.testing.assert_allclose(target._model.weights(), mu, rtol=1e-12)
        np.testing.assert_allclose(target._model.variances(), s, rtol=1e-12)
    assert target._model.state_problem() is None


# ---------------------------------------------------------------- averaged models

def _averaged(case):
    """The case with ``average=True``."""
    return case[0], {**case[1], "average": True}


def _shards(case, strategy, sizes=(4, 11, 23), seed=0):
    """A start fitted on 9 rows and shards of unequal sizes fitted on from it: the
    start, the shards, and the same with ``average=False`` (same rows)."""
    rng = np.random.default_rng(seed)
    k = 2 if strategy == "binary" else 3
    extra = {} if strategy == "binary" else {"multiclass": strategy, "k": 2}
    data = [(rng.normal(size=(n, 4)), rng.integers(0, k, size=n)) for n in (9, *sizes)]
    out = []
    for average in (True, False):
        name, params = case
        start = last_iterate(name, **{**params, "average": average}, **extra)
        start.partial_fit(*data[0], classes=np.arange(k))
        shards = [copy.deepcopy(start).partial_fit(X, y) for X, y in data[1:]]
        out.append((start, shards))
    return out


def _rules(model):
    return ("average",) + (("confidence",) if mixing.is_gaussian(model) else ()) + (
        ("touched",) if mixing.is_first_order(model) else ())


AVERAGED = [(c, s) for c, s in PARAMS if c[0] != "avg-perceptron"]


@pytest.mark.parametrize(("case", "strategy"), AVERAGED,
                         ids=[f"{case_id(c)}-{s}" for c, s in AVERAGED])
def test_averaged_models_mix_to_the_mean_of_every_iterate(case, strategy):
    """Unequal shards from a common start, every rule: the mixed model reports the mean
    of the iterates of every round, each counted once, (t_0 A_0 + sum_i (T_i A_i - t_0
    A_0)) / (t_0 + sum_i (T_i - t_0)) from the start's and the shards' averaged weights
    (AdaGrad, whose round count is the shards' mean: sum_i c_i A_i); its last iterate is
    what the rule makes of the shards' last iterates (the model average=False mixes); T
    counts every round."""
    (start, shards), (start0, shards0) = _shards(_averaged(case), strategy)
    model = start._model
    c = np.array([0.2, 0.5, 0.3])
    for rule in _rules(model):
        mixed = mixing.mix(model, [e._model.state for e in shards], c * 3.0, rule,
                           start=start._model.state)
        target = _load(copy.deepcopy(start), mixed)
        # (AdaGrad's t, the weighted mean of the shards' 13, 20, 32 rounds, is not whole:
        # a valid state, test_mixed_adagrad_with_a_fractional_round_count_saves_and_loads)
        assert target._model.state_problem() is None
        A = [np.asarray(e._model.weights()) for e in shards]
        if case[0] == "adagrad":
            expect = sum(ci * Ai for ci, Ai in zip(c, A))
        else:       # the start's 9 rounds, then the shards' 4, 11 and 23 rows
            A0 = np.asarray(start._model.weights())
            expect = (9 * A0 + sum(Ti * Ai - 9 * A0 for Ti, Ai in zip((13, 20, 32), A))) / 47
        np.testing.assert_allclose(target._model.weights(), expect, rtol=1e-12, atol=1e-14)
        plain = mixing.mix(start0._model, [e._model.state for e in shards0], c, rule,
                           start=start0._model.state)
        ref = _load(copy.deepcopy(start0), plain)
        np.testing.assert_allclose(target._model.last_weights(), ref._model.weights(),
                                   rtol=1e-12, atol=1e-14)
        _check_round_count(model, model.named_state(mixed),
                           [e._model.named_state() for e in shards], c,
                           start._model.named_state())
        one = mixing.mix(model, [shards[1]._model.state], rule=rule, start=start._model.state)
        for key, arr in shards[1]._model.state.items():     # one state: the identity
            assert np.array_equal(one[key], arr)


def _check_round_count(model, mixed, states, c, start):
    """Flat lazy sums: T = t_0 + sum_i (T_i - t_0); AdaGrad: its t, the weighted mean
    (its RDA weights use the mean sums of subgradients)."""
    if "0/u" in mixed:          # one-vs-rest of binary models: each class's sum
        for k in range(model.K):
            _check_round_count(None, {"u": mixed[f"{k}/u"]}, [{"u": s[f"{k}/u"]}
                               for s in states], c, {"u": start[f"{k}/u"]})
        return
    if "acc" in mixed:
        assert mixed["aux"][2] == pytest.approx(sum(ci * s["aux"][2]
                                                    for ci, s in zip(c, states)), rel=1e-15)
    elif "aux" not in mixed:
        t0 = np.ravel(start["u"][-1])[0]
        t = [np.ravel(s["u"][-1])[0] for s in states]
        assert t0 == 9 and t == [13, 20, 32]
        np.testing.assert_array_equal(mixed["u"][-1], t0 + sum(ti - t0 for ti in t))


@pytest.mark.parametrize(("case", "strategy"), AVERAGED,
                         ids=[f"{case_id(c)}-{s}" for c, s in AVERAGED])
def test_averaged_mixed_models_go_on_averaging_every_round(case, strategy):
    """partial_fit after mixing: the averaged weights stay the mean over every round
    counted, (T A + w_{T+1} + ... + w_{T+n}) / (T + n), A the mixed averaged weights and
    w_t the last iterate after each new row (a per-round reference)."""
    (start, shards), _ = _shards(_averaged(case), strategy)
    model = start._model
    for rule in _rules(model):
        mixed = mixing.mix(model, [e._model.state for e in shards], [0.6, 0.3, 0.1], rule,
                           start=start._model.state)
        est = _load(copy.deepcopy(start), mixed)
        T = _rounds_of(est._model)
        total = T * np.asarray(est._model.weights())
        rng = np.random.default_rng(11)
        n = 15
        for _ in range(n):
            est.partial_fit(rng.normal(size=(1, 4)), rng.integers(0, len(est.classes_), 1))
            total = total + np.asarray(est._model.last_weights())
        np.testing.assert_allclose(est._model.weights(), total / (T + n), rtol=1e-11,
                                   atol=1e-13)


def _rounds_of(model):
    """The round count the averaged weights are a mean over."""
    state = model.models[0].state if hasattr(model, "models") else model.named_state()
    if "acc" in state or "v" in state:
        return np.atleast_2d(state["aux"])[0, 2]
    return np.ravel(state["u"][-1])[0]

