"""``partial_fit`` on one CSR row of a fitted two-class estimator (the single-example
stream) takes a compiled path (``cwkit.base.OnlineClassifier._one_row``,
``cwkit._core.csr_row``); it must do exactly what the general path does: the same
state, counters and calibration window after every call, and for input it does not
accept, the general path's result or error.

The general path is the same call with ``y_clean=y`` (the rounds counted against
the labels learnt: the same counts), which the single-row path does not take.
"""
import copy

import numpy as np
import pytest
import scipy.sparse as sp
from _child import run_child

import cwkit
import cwkit.base
from cwkit import _core

#: Binary rules of every state shape and driver (first-order, averaged, diagonal,
#: full, SOP, AdaGrad, mini-batch with rows carried over, L1-PA, a kernel).
NAMES = [("perceptron", {}), ("avg-perceptron", {}), ("pa1", {}), ("reg-pa", {}),
         ("pa1", {"average": True}), ("cw", {}), ("cw-stdev", {}), ("arow", {}),
         ("arow", {"average": True}), ("arow", {"covariance": "full"}), ("sop", {}),
         ("adagrad", {}), ("bpa1", {"batch_size": 3}), ("l1-pa", {}),
         ("pa1", {"kernel": "rbf"})]


def _stream(n=40, d=30, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.25, format="csr", random_state=seed)
    X.data = rng.normal(size=X.nnz)
    y = np.where(rng.random(n) < 0.5, "no", "yes")
    return X, y


def _variants(X, seed=1):
    """One CSR row per call in several valid encodings: canonical, reversed, shuffled,
    int64 indptr, a csr_array."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(X.shape[0]):
        r = X[i]
        kind = i % 5
        if kind == 1:
            r = sp.csr_matrix((r.data[::-1].copy(), r.indices[::-1].copy(), r.indptr),
                              shape=r.shape)
        elif kind == 2:
            p = rng.permutation(r.nnz)
            r = sp.csr_matrix((r.data[p], r.indices[p], r.indptr), shape=r.shape)
        elif kind == 3:
            r = r.copy()
            r.indptr = r.indptr.astype(np.int64)
        elif kind == 4:
            r = sp.csr_array(r)
        rows.append(r)
    return rows


def _state(est, X):
    """What a call changes: the model (its scores on X), counters, calibration window."""
    cal = est._calibration
    return (est.decision_function(X), est.t_, est.mistakes_, est.n_updates_,
            cal.scores.copy(), cal.labels.copy(), cal.seen)


def _same(a, b):
    return all(np.array_equal(u, v) for u, v in zip(a, b))


@pytest.mark.parametrize("name,params", NAMES, ids=[f"{n}{p}" for n, p in NAMES])
def test_single_row_calls_equal_the_general_path(name, params, monkeypatch):
    X, y = _stream()
    rows = _variants(X)
    fast = cwkit.make(name, **params).partial_fit(X[:2], y[:2], classes=["no", "yes"])
    slow = copy.deepcopy(fast)
    for i, r in enumerate(rows):
        with monkeypatch.context() as m:    # the single-row path must not need as_rows
            m.setattr(cwkit.base, "as_rows", None)
            fast.partial_fit(r, y[i:i + 1])
        slow.partial_fit(r, y[i:i + 1], y_clean=y[i:i + 1])
        assert _same(_state(fast, X), _state(slow, X)), (name, i)
    assert np.array_equal(fast.predict_proba(X), slow.predict_proba(X))


def test_labels_as_lists_and_other_dtypes_take_the_single_row_path(monkeypatch):
    X, _ = _stream()
    fast = cwkit.make("arow").partial_fit(X[:2], [0, 1])
    slow = copy.deepcopy(fast)
    for i, label in enumerate([[1], (0,), np.array([1.0]), np.array([True]),
                               np.array([0], dtype=np.uint8)]):
        with monkeypatch.context() as m:
            m.setattr(cwkit.base, "as_rows", None)
            fast.partial_fit(X[i], label)
        slow.partial_fit(X[i], label, y_clean=label)
        assert _same(_state(fast, X), _state(slow, X)), label


#: Single rows (1 x 4; the estimator has 4 features, classes 0 and 1) that the
#: single-row path hands to the general one, valid or not: name -> code making `X`.
ROWS = {
    "nan": "X = sp.csr_matrix((np.array([1.0, np.nan]), [0, 2], [0, 2]), shape=(1, 4))",
    "inf": "X = sp.csr_matrix((np.array([np.inf]), [1], [0, 1]), shape=(1, 4))",
    "index beyond n_features": "X = sp.csr_matrix((np.ones(2), [0, 1], [0, 2]), "
                               "shape=(1, 4)); X.indices[1] = 4",
    "huge index": "X = sp.csr_matrix((np.ones(2), [0, 1], [0, 2]), shape=(1, 4)); "
                  "X.indices[0] = 2**31 - 1",
    "negative index": "X = sp.csr_matrix((np.ones(2), [0, 1], [0, 2]), shape=(1, 4)); "
                      "X.indices[1] = -1",
    "unsorted, index beyond": "X = sp.csr_matrix((np.ones(3), [3, 0, 1], [0, 3]), "
                              "shape=(1, 4)); X.indices[2] = 7",
    "indptr not from 0": "X = sp.csr_matrix((np.ones(2), [0, 1], [0, 2]), shape=(1, 4)); "
                         "X.indptr[0] = 1",
    "indptr beyond nnz": "X = sp.csr_matrix((np.ones(2), [0, 1], [0, 2]), shape=(1, 4)); "
                         "X.indptr[1] = 3",
    "data shorter than indices": "X = sp.csr_matrix((np.ones(2), [0, 1], [0, 2]), "
                                 "shape=(1, 4)); X.data = X.data[:1]",
    "two rows": "X = sp.csr_matrix(np.ones((2, 4)))",
    "label not a class": "X = sp.csr_matrix(np.ones((1, 4))); y = [2]",
    "two labels": "X = sp.csr_matrix(np.ones((1, 4))); y = [0, 1]",
    "nan label": "X = sp.csr_matrix(np.ones((1, 4))); y = [np.nan]",
    "dense inf": "X = np.array([[0, 1.5, -np.inf, 2.0]])",
    # valid, but not the single-row path's encoding:
    "column label": "X = sp.csr_matrix(np.ones((1, 4))); y = [[1]]",
    "repeated index": "X = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), [2, 0, 2], [0, 3]), "
                      "shape=(1, 4))",
    "spare capacity": "X = sp.csr_matrix((np.array([1.0, 2.0, np.nan]), [0, 3, 9], [0, 2]), "
                      "shape=(1, 4))",
    "float32": "X = sp.csr_matrix(np.array([[0, 1.5, 0, 2]], dtype=np.float32))",
    "int64 indices": "X = sp.csr_matrix(np.array([[0, 1.5, 0, 2]])); "
                     "X.indices = X.indices.astype(np.int64)",
    "empty row": "X = sp.csr_matrix((1, 4))",
    "csc": "X = sp.csc_matrix(np.array([[0, 1.5, 0, 2]]))",
    "dense": "X = np.array([[0, 1.5, 0, 2]])",
    "dense float64": "X = np.array([[0, 1.5, 0, 2.0]])",
    "dense, every other value": "X = np.array([[0, 1.5, 1.0, 0, 0, 0, 2.0, 0]])[:, ::2]",
    "dense narrower": "X = np.array([[0, 1.5, 2.0]])",
    "dense wider": "X = np.array([[0, 1.5, 0, 2.0, 3.0]])",
    "wider row": "X = sp.csr_matrix((np.ones(2), [0, 4], [0, 2]), shape=(1, 5))",
    "narrower row": "X = sp.csr_matrix((np.ones(2), [0, 2], [0, 2]), shape=(1, 3))",
}


def test_single_rows_the_path_refuses_give_the_general_paths_result_or_error():
    """Run in a child: an unchecked index would crash the process, not fail a test.
    Each label given as a list (``_one_row``) and as an array (the compiled call of an
    estimator whose one-row path is built: after a single row), state after an error
    as before the call."""
    result = run_child(f"""
        import copy, json
        import numpy as np, scipy.sparse as sp, cwkit
        out = {{}}
        warm = sp.csr_matrix(np.eye(4)[2:3])
        for name in ("pa1", "arow", "l1-pa"):
            fitted = cwkit.make(name).partial_fit(np.eye(4)[:2] + 0.1, [0, 1])
            for case, code in {ROWS!r}.items():
                outcome = []
                for clean, array in ((False, False), (False, True), (True, False)):
                    ns = {{"np": np, "sp": sp, "y": [1]}}
                    exec(code, ns)
                    y = np.array(ns["y"]) if array else ns["y"]
                    est = copy.deepcopy(fitted).partial_fit(warm, [0])
                    error = ""
                    try:
                        if clean:    # the general path
                            est.partial_fit(ns["X"], y, y_clean=y)
                        else:
                            est.partial_fit(ns["X"], y)
                    except ValueError as exc:
                        error = "ValueError: " + str(exc)
                    outcome.append(error + repr((est.coef_.tolist(), est.intercept_.tolist(),
                                                 est.t_, est.mistakes_, est._calibration.seen)))
                out[name + " " + case] = outcome
        print(json.dumps(out))
    """)
    assert len(result) == 3 * len(ROWS)
    for key, (fast, array, general) in result.items():
        assert fast == array == general, key
    errors = {case for case in ROWS if result["pa1 " + case][0].startswith("ValueError")}
    assert errors == set(list(ROWS)[:14])


@pytest.mark.parametrize("nnz", [0, 1, 2, 3, 17, 300, 2000])
def test_compiled_row_view_sorts_like_the_general_path(nnz):
    """``_core.csr_row`` puts any order of unique indices in increasing order (reversed
    rows by reversing, others by a radix sort) and views canonical rows as they are;
    the scores of the view equal those of ``as_rows``'s."""
    rng = np.random.default_rng(nnz)
    d = 5000
    idx = rng.choice(d, nnz, replace=False).astype(np.int32)
    vals = rng.normal(size=nnz)
    w = rng.normal(size=d + 1)
    for order in (np.argsort(idx), np.argsort(idx)[::-1], rng.permutation(nnz)):
        X = sp.csr_matrix((vals[order], idx[order], np.array([0, nnz], dtype=np.int32)),
                          shape=(1, d))
        saved = X.indices.copy()
        scores = np.empty(1)
        view = _core.csr_row(X, d, scores)
        assert view is not None and view.n_rows == 1 and view.scores is scores
        expected = cwkit._rowdata.as_rows(X).view
        got, want = np.empty(1), np.empty(1)
        _core.row_scores(view, 0.5, w, np.empty(0), got, np.empty(0))
        _core.row_scores(expected, 0.5, w, np.empty(0), want, np.empty(0))
        assert np.array_equal(got, want)
        assert np.array_equal(X.indices, saved)


def test_compiled_row_view_refuses_what_it_does_not_check():
    ok = sp.csr_matrix(np.array([[0, 1.5, 0, 2]]))
    assert _core.csr_row(ok, 4, np.empty(1)) is not None
    assert _core.csr_row(ok, 5, np.empty(1)) is None
    assert _core.csr_row(sp.csr_matrix(np.ones((2, 4))), 4, np.empty(1)) is None
    for edit in (lambda X: setattr(X, "data", X.data.astype(np.float32)),
                 lambda X: setattr(X, "indices", X.indices.astype(np.int64)),
                 lambda X: X.data.__setitem__(0, np.nan),
                 lambda X: X.indices.__setitem__(1, 4),
                 lambda X: X.indices.__setitem__(1, -3),
                 lambda X: X.indices.__setitem__(1, 1),      # repeated
                 lambda X: X.indptr.__setitem__(0, 1)):
        X = ok.copy()
        edit(X)
        assert _core.csr_row(X, 4, np.empty(1)) is None


#: The labels of the compiled call, as arrays of one label of several dtypes (classes
#: 0 and 1, int64): the same dtype, float64 (numpy compares its value with the classes
#: cast), and others, which take ``_partial_fit``.
LABELS = [np.array([1]), np.array([0.0]), np.array([1.0]), np.array([1], dtype=np.int8),
          np.array([True]), np.array([0], dtype=np.uint16), np.array([1]).astype(">i8")]
COMPILED = [True, True, True, False, False, False, False]


#: The rules of the compiled call (first-order and diagonal), and a full covariance.
ONE_NAMES = [(n, p) for n, p in NAMES[:9] if n not in ("cw", "cw-stdev", "arow")] + [
    (n, {**p, "covariance": "diag"}) for n, p in NAMES[5:9]] + [NAMES[9]]


@pytest.mark.parametrize("name,params", ONE_NAMES, ids=[f"{n}{p}" for n, p in ONE_NAMES])
def test_compiled_round_equals_the_general_path(name, params, monkeypatch):
    """``partial_fit`` on one CSR row (every third row dense) of a two-class
    first-order or diagonal model whose label is an array of the classes' dtype (or
    float64) is one compiled call (``cwkit._core.partial_fit``), which never calls
    ``_partial_fit``; its state after every call is the general path's."""
    X, y = _stream(seed=2)
    y = (y == "yes").astype(np.int64)
    rows = _variants(X)
    fast = cwkit.make(name, **params).partial_fit(X[:2], y[:2], classes=[0, 1])
    slow = copy.deepcopy(fast)
    fast.partial_fit(rows[0], y[:1])      # (the one-row path built)
    slow.partial_fit(rows[0], y[:1], y_clean=y[:1])
    taken = params.get("covariance") != "full"
    general, calls = type(fast)._partial_fit, []
    monkeypatch.setattr(type(fast), "_partial_fit",
                        lambda *a, **k: calls.append(1) or general(*a, **k))
    for i, r in enumerate(rows[1:], 1):
        label = LABELS[i % len(LABELS)].copy()
        label[...] = y[i]
        r = r.toarray() if i % 3 == 0 else r
        calls.clear()
        fast.partial_fit(r, label)
        assert (not calls) == (taken and COMPILED[i % len(LABELS)]), (name, i, label)
        slow.partial_fit(r, y[i:i + 1], y_clean=y[i:i + 1])
        assert _same(_state(fast, X), _state(slow, X)), (name, i)
    assert np.array_equal(fast.predict_proba(X), slow.predict_proba(X))


def test_compiled_round_follows_what_changes_the_estimator():
    """The compiled call's path (``_one``) is the estimator's current model, classes,
    calibration and parameters: after set_params, a wider row, fit, a deep copy
    (through __getstate__, as pickling), class weights or a new first call, each call
    equals the general path's."""
    X, y = _stream(seed=3)
    y = np.where(y == "yes", 1, -1)
    W = sp.hstack([X, X]).tocsr()
    changes = [lambda e: e.set_params(fit_intercept=False),
               lambda e: e.set_params(fit_intercept=True),
               lambda e: setattr(e, "intercept_scaling_", 2.0),
               lambda e: e.partial_fit(W[5], y[5:6]),              # wider: the model grows
               lambda e: e.set_params(class_weight={-1: 2.0}),
               lambda e: e.set_params(class_weight=None),
               lambda e: e.partial_fit(X[:3], y[:3], classes=[-1, 1, 7]),
               lambda e: e.fit(X[:4] * 2, [-1, 1, 1, -1]),
               lambda e: e.fit(X[:4], np.array([0, 1, 1, 0]))]
    for name in ("pa1", "arow"):
        fast = cwkit.make(name, average=True).partial_fit(X[:2], y[:2], classes=[-1, 1])
        slow = copy.deepcopy(fast)
        for k, change in enumerate(changes):
            for e in (fast, slow):
                change(e)
            fast = copy.deepcopy(fast) if k == 3 else fast     # (__getstate__ as pickle's)
            for i in range(6, 12):
                label = y[i:i + 1] if len(fast.classes_) == 2 and fast.classes_[0] == -1 \
                    else (y[i:i + 1] > 0).astype(np.int64)
                fast.partial_fit(X[i], label)
                slow.partial_fit(X[i], label, y_clean=label)
                assert _same(_state(fast, W), _state(slow, W)), (name, k, i)
