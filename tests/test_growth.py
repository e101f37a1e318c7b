"""A feature space that grows: partial_fit on wider rows, scoring rows of any width.

A model fed chunks of growing width must be, bit for bit, the model fed the whole
matrix (at its final width) in one call: every state array, every reported number.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import cwkit
from cwkit import registry
from cwkit.models import rules

NAMES = [a["name"] for a in cwkit.algorithms()]
#: the names with a diagonal or full covariance
GAUSSIAN = (*rules.names_of(rules.GAUSSIAN_RULES), "sop")
KINDS = {"binary": {}, "top1": {}, "topk": {"multiclass": "topk", "k": 2},
         "ovr": {"multiclass": "ovr"}}
N, D = 64, 9
#: the chunks of the stream; the rows of chunk c use only the first WIDTHS[c] features
CUTS = (0, 9, 20, 21, 40, 64)
WIDTHS = (2, 3, 3, 6, 9)


def _data(binary):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(N, D))
    X[rng.random((N, D)) < 0.4] = 0.0
    for lo, hi, w in zip(CUTS, CUTS[1:], WIDTHS):
        X[lo:hi, w:] = 0.0
    y = np.where(X[:, 0] - X[:, 1] + 0.5 * X[:, 5] > 0, 7, 3)
    if not binary:
        y = np.where(X[:, 2] > 0.5, 5, y)
    return X, y


def _fed(make, X, y, sparse, widths=WIDTHS):
    """The estimator `make()` fed the chunks, each at its own width."""
    est = make()
    for lo, hi, w in zip(CUTS, CUTS[1:], widths):
        part = X[lo:hi, :w]
        est.partial_fit(sp.csr_matrix(part) if sparse else part, y[lo:hi],
                        classes=np.unique(y))
    return est


def _state(est):
    """The model's arrays, with the slots of mini-batch PA's pending rows beyond
    those pending (scratch) left out."""
    st = dict(est._model.state)
    for key in [k for k in st if k.endswith("n_pend")]:
        n = int(st[key][0])
        for name in ("pend", "pend_y"):
            st[key[:-len("n_pend")] + name] = st[key[:-len("n_pend")] + name][:n]
    return st


def assert_same(a, b, X):
    for key in ("t_", "mistakes_", "n_updates_", "n_features_in_"):
        assert getattr(a, key) == getattr(b, key), key
    sa, sb = _state(a), _state(b)
    assert sa.keys() == sb.keys()
    for key in sa:
        assert sa[key].shape == sb[key].shape and np.array_equal(sa[key], sb[key]), key
    for what in ("coef_", "intercept_", "dual_coef_"):
        if hasattr(b, what):     # (a kernel form has no coef_, a linear one no dual_coef_)
            assert np.array_equal(getattr(a, what), getattr(b, what)), what
    for score in ("decision_function", "predict_proba"):
        assert np.array_equal(getattr(a, score)(X), getattr(b, score)(X)), score


def _cases():
    cases = []
    for name in NAMES:
        covs = ("diag", "full") if name in GAUSSIAN else (None,)
        for kind, mc in KINDS.items():
            for cov in covs:
                params = {**mc, **({} if cov is None else {"covariance": cov})}
                try:
                    cwkit.make(name, **params).partial_fit(np.eye(3), [0, 1, 2])
                except ValueError:      # a strategy the rule has no form for
                    continue
                cases.append(pytest.param(name, kind, params,
                                          id=f"{name}-{kind}-{cov or ''}".rstrip("-")))
    return cases


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("average", [False, True], ids=["", "avg"])
@pytest.mark.parametrize("name, kind, params", _cases())
def test_a_stream_of_growing_width_is_the_one_call_model(name, kind, params, average,
                                                         sparse):
    X, y = _data(kind == "binary")
    params = {**params, "average": average or name == "avg-perceptron"}
    whole = cwkit.make(name, **params).partial_fit(sp.csr_matrix(X) if sparse else X, y)
    assert_same(_fed(lambda: cwkit.make(name, **params), X, y, sparse), whole, X)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("kind", ["binary", "top1", "ovr"])
@pytest.mark.parametrize("name", [n for n in NAMES if registry.kernel_params(n)])
def test_kernel_forms_grow_too(name, kind, sparse):
    """The support vectors of a kernel form are sparse: growing only widens the rows it
    accepts (``gamma`` given: its default, 1 / n_features, is settled on the first call)."""
    X, y = _data(kind == "binary")
    make = lambda: cwkit.make(name, kernel="rbf", gamma=0.3, **KINDS[kind])  # noqa: E731
    whole = make().partial_fit(sp.csr_matrix(X) if sparse else X, y)
    assert_same(_fed(make, X, y, sparse), whole, X)


def test_one_row_per_call_each_wider_is_the_one_call_model():
    """The single-row path widens too (one new feature per row, as a vocabulary grows)."""
    X, y = _data(True)
    X = np.tril(X, 1)[:, :D]            # row i uses features 0..i+1
    for name in ("arow", "pa1", "cw"):
        whole = cwkit.make(name, covariance="diag") if name != "pa1" else cwkit.make(name)
        fed = type(whole)(**whole.get_params())
        whole.partial_fit(sp.csr_matrix(X), y)
        for i in range(N):
            fed.partial_fit(sp.csr_matrix(X[i:i + 1, :min(i + 2, D)]), y[i:i + 1],
                            classes=[3, 7])
        assert_same(fed, whole, X)


@pytest.mark.parametrize("name, params, key, n_classes, width", [
    ("cw", {"covariance": "diag"}, "by_feature", 2, 2000),   # (D + 1, 3): u in the rows
    ("adagrad", {"average": True}, "acc", 2, 2000),      # (D, 2): the pairs interleaved
    ("bpa1", {}, "pend", 2, 1000),                        # the features on axis 1
    ("arow", {"covariance": "full"}, "Sigma", 2, 200),   # both axes
    ("arow", {"covariance": "full"}, "mu", 3, 200),      # (K, D)
    ("adagrad", {"average": True}, "acc", 3, 500)])       # (D, 2 K)
def test_growth_is_amortised(name, params, key, n_classes, width):
    """Widening by one feature at a time reallocates an array's buffer only when its
    room runs out (doubling): a logarithmic number of times, for every layout."""
    est = cwkit.make(name, **params).partial_fit(np.ones((n_classes, 1)), range(n_classes))
    buffers = set()
    for d in range(2, width):
        est.partial_fit(sp.csr_matrix(([1.0], [d - 1], [0, 1]), shape=(1, d)),
                        [d % n_classes], classes=range(n_classes))
        buffers.add(id(est._model._rooms[key]))
    assert est.n_features_in_ == width - 1 and len(buffers) <= 12


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_rows_of_another_width_are_scored_as_the_model_knows_them(sparse):
    """Unseen features weigh 0 (cut off), missing ones are zeros (padded): no error."""
    X, y = _data(False)
    for name, params in (("arow", {}), ("cw", {"covariance": "full"}), ("bpa1", {}),
                         ("pa1", {"kernel": "rbf"}), ("sop", {"multiclass": "ovr"})):
        est = cwkit.make(name, **params).fit(X[:, :6], y)
        wide = np.hstack([X, np.full((N, 3), 5.0)])
        narrow = X[:, :4]
        padded = np.hstack([narrow, np.zeros((N, 2))])
        conv = sp.csr_matrix if sparse else np.asarray
        for score in ("decision_function", "predict", "predict_proba", "predict_confidence"):
            if not hasattr(est, score):
                continue
            f = getattr(est, score)
            assert np.array_equal(f(conv(wide)), f(conv(X[:, :6]))), (name, score)
            assert np.array_equal(f(conv(narrow)), f(conv(padded))), (name, score)
        assert est.n_features_in_ == 6


def test_a_rejected_call_does_not_widen():
    X, y = _data(True)
    est = cwkit.make("arow").partial_fit(X[:10, :3], y[:10])
    before = {k: v.copy() for k, v in est._model.state.items()}
    with pytest.raises(ValueError, match="not one of the classes"):
        est.partial_fit(X[10:20], np.full(10, 99))
    assert est.n_features_in_ == 3
    assert all(np.array_equal(before[k], v) for k, v in est._model.state.items())


def test_kernel_approx_keeps_the_width_its_map_was_drawn_for():
    """Its random features know no other features: wider rows are refused, state unchanged;
    narrower rows are padded; scoring cuts wider rows as any model does."""
    X, y = _data(True)
    est = cwkit.make("pa1", kernel_approx="rff", gamma=0.5, n_components=20,
                     random_state=0).partial_fit(X[:20, :5], y[:20])
    coef = est.coef_.copy()
    with pytest.raises(ValueError, match="drawn for 5"):
        est.partial_fit(X[20:30], y[20:30])
    assert est.n_features_in_ == 5 and np.array_equal(est.coef_, coef)
    est.partial_fit(X[20:30, :3], y[20:30])
    assert np.array_equal(est.predict(X), est.predict(X[:, :5]))


def test_iter_svmlight_chunks_of_growing_width(tmp_path):
    """The stream as users have it: batches of a file whose vocabulary grows, given
    to partial_fit as they come, are the model of the whole file."""
    X, y = _data(True)
    path = tmp_path / "grow.svm"
    cwkit.dump_svmlight(sp.csr_matrix(X), y, path)
    est = cwkit.make("arow")
    widths = []
    for Xb, yb in cwkit.iter_svmlight(path, batch_size=7):
        widths.append(Xb.shape[1])
        est.partial_fit(Xb, yb, classes=[3, 7])
    assert len(set(widths)) > 2
    whole = cwkit.make("arow").partial_fit(*cwkit.load_svmlight(path))
    assert_same(est, whole, X)


def test_counters_add_up_over_calls():
    """mistakes_, n_updates_ and t_ are cumulative; last_* are the last call's; fit
    resets them."""
    X, y = _data(False)
    for name in ("pa1", "bpa1", "arow"):
        whole = cwkit.make(name).partial_fit(X, y)
        fed = cwkit.make(name)
        for lo, hi in zip(CUTS, CUTS[1:]):
            fed.partial_fit(X[lo:hi], y[lo:hi], classes=np.unique(y))
        last = cwkit.make(name).partial_fit(X[:CUTS[-2]], y[:CUTS[-2]])
        assert (fed.t_, fed.mistakes_, fed.n_updates_) == (
            whole.t_, whole.mistakes_, whole.n_updates_)
        assert fed.last_mistakes_ == whole.mistakes_ - last.mistakes_
        assert fed.last_n_updates_ == whole.n_updates_ - last.n_updates_
        fed.fit(X[:10], y[:10])
        once = cwkit.make(name).fit(X[:10], y[:10])
        assert (fed.t_, fed.mistakes_, fed.n_updates_, fed.last_mistakes_) == (
            once.t_, once.mistakes_, once.n_updates_, once.last_mistakes_)


def test_a_full_covariance_grows_up_to_its_limit_and_no_further(monkeypatch):
    """Beyond the widest full covariance (here made 63 features), a widening is refused
    as a model built that wide is, even when the buffers would have room; state kept."""
    from cwkit.models import binary
    monkeypatch.setattr(binary, "MAX_FULL_DIM", 64)
    est = cwkit.make("arow", covariance="full").partial_fit(np.ones((2, 40)), [0, 1])
    for d in range(41, 64):
        est.partial_fit(sp.csr_matrix(([1.0], [d - 1], [0, 1]), shape=(1, d)), [d % 2])
    before = {k: v.copy() for k, v in est._model.state.items()}
    with pytest.raises(ValueError, match="supported up to 63 features"):
        est.partial_fit(sp.csr_matrix(([1.0], [63], [0, 1]), shape=(1, 64)), [0])
    assert est.n_features_in_ == 63
    assert all(np.array_equal(before[k], v) for k, v in est._model.state.items())


def test_a_grown_model_pickles_and_copies_and_the_copy_grows_on_its_own():
    """The buffers with room and their plan are not part of a copy: the copy widens
    into buffers of its own, the original is untouched."""
    import copy
    import pickle
    est = cwkit.make("arow", covariance="full").partial_fit(np.ones((2, 3)), [0, 1])
    est.partial_fit(sp.csr_matrix(np.ones((1, 5))), [1])
    coef = est.coef_.copy()
    for other in (pickle.loads(pickle.dumps(est)), copy.deepcopy(est)):
        other.partial_fit(sp.csr_matrix(np.ones((1, 9))), [0])
        ref = cwkit.make("arow", covariance="full").partial_fit(np.ones((2, 3)), [0, 1])
        ref.partial_fit(sp.csr_matrix(np.ones((1, 5))), [1])
        ref.partial_fit(sp.csr_matrix(np.ones((1, 9))), [0])
        assert_same(other, ref, np.ones((3, 9)))
        assert np.array_equal(est.coef_, coef) and est.n_features_in_ == 5
