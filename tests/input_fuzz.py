"""Random estimator inputs: each either works or raises a clear ValueError.

Used by ``tests/test_robust_inputs.py`` (a small campaign, in a child process)
and, at a larger size, by ``python tests/fuzz_inputs.py`` (not collected by
pytest).  The inputs: random CSR structure (valid, or with indices / indptr
out of bounds, or rows edited behind scipy's cached canonical flag), index
and value dtypes, every sparse format, non-canonical
rows, NaN / inf, empty rows and columns, huge and tiny values, labels of the
wrong length, a second call with another number of features, and threads
sharing one estimator.
"""
import threading
import warnings

import numpy as np
import scipy.sparse as sp

import cwkit

NAMES = [entry["name"] for entry in cwkit.algorithms()]
_VALUES = [1.0, -2.5, 1e300, -1e300, 1e-300, 5e-324, 0.0, np.nan, np.inf, -np.inf, 1e154]


def random_values(rng, n):
    v = rng.normal(size=n) * 10.0 ** rng.integers(-3, 4)
    if rng.random() < 0.3:
        where = rng.integers(0, max(n, 1), rng.integers(1, 3))
        if n:
            v[where] = rng.choice(_VALUES, len(where))
    return v


def random_csr(rng, n, d):
    """A well-formed CSR matrix of shape (n, d), rows possibly non-canonical."""
    counts = rng.binomial(d, rng.random(), n) if d else np.zeros(n, dtype=int)
    indptr = np.r_[0, np.cumsum(counts)]
    indices = np.concatenate([np.sort(rng.choice(d, c, replace=False)) if rng.random() < 0.8
                              else rng.integers(0, d, c) for c in counts] or [[]]).astype(int)
    return sp.csr_matrix((random_values(rng, len(indices)), indices, indptr), shape=(n, d))


def damage(rng, X):
    """Edit the index arrays of X in place, as scipy lets one do without checking."""
    if X.format == "coo":
        arrays = [a for a in X.coords if len(a)]
        if arrays and rng.random() < 0.5:
            a = arrays[rng.integers(0, len(arrays))]
            a[rng.integers(0, len(a))] = rng.choice([-1, 10**6])
        return X
    if X.format not in ("csr", "csc", "bsr"):
        return X
    if X.format == "csr" and X.has_canonical_format and rng.random() < 0.3:
        # duplicates and descents behind the flag scipy has cached as True
        for i in range(X.shape[0]):
            a, b = X.indptr[i], X.indptr[i + 1]
            if b - a >= 2:
                X.indices[a:b] = rng.choice(X.indices[a:b], b - a)
        return X
    indices, indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)
    which = rng.random()
    if which < 0.4 and len(indices):
        bound = X.shape[1] if X.format == "csr" else X.shape[0]
        indices[rng.integers(0, len(indices))] = rng.choice([-1, bound, 2**31, 2**40, -2**40])
    elif which < 0.7 and len(indptr) > 1:
        indptr[rng.integers(0, len(indptr))] += int(rng.integers(-3, 4))
    else:
        indptr = indptr[:-1] if rng.random() < 0.5 else np.r_[indptr, indptr[-1]]
    # the casts wrap values beyond the dtype, as a careless cast would
    indices = indices.astype(rng.choice([np.int32, np.int64, np.uint32]))
    indptr = indptr.astype(rng.choice([np.int32, np.int64]))
    X.indices, X.indptr = indices, indptr
    return X


def random_input(rng, d):
    n = int(rng.integers(0, 12))
    if rng.random() < 0.1:
        d = int(rng.integers(0, 9))
    X = random_csr(rng, n, d)
    if rng.random() < 0.3:
        X.data = X.data.astype(rng.choice([np.float32, np.int64, np.bool_]))
    kind = rng.random()
    if kind < 0.2:
        return X.toarray()
    if kind < 0.4:
        X = X.asformat(rng.choice(["csc", "coo", "lil", "dok", "bsr", "dia"]))
    return damage(rng, X) if rng.random() < 0.15 else X


def random_labels(rng, n, K):
    y = rng.integers(0, K, max(n, 0))
    if rng.random() < 0.05:
        y = y[:-1]
    if rng.random() < 0.2:
        y = np.array(["a", "b", "c"])[y % 3]
    return y


def _estimator(rng):
    name = str(rng.choice(NAMES))
    strategy = str(rng.choice(["top1", "topk", "ovr"]))
    return name, {"multiclass": strategy, "k": 2, "shuffle": True, "random_state": 0}


def clear(exc):
    """Whether `exc` is an accepted error: a ValueError of one clear line."""
    text = str(exc)
    return isinstance(exc, ValueError) and text and "\n" not in text and "Traceback" not in text


def try_call(failures, what, f, *args):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return f(*args)
    except Exception as exc:   # noqa: BLE001 - what the fuzz looks for
        if not clear(exc):
            failures.append(f"{what}: {type(exc).__name__}: {exc}")
    return None


def one_case(rng, failures):
    name, params = _estimator(rng)
    d = int(rng.integers(1, 30))
    K = int(rng.integers(2, 4))
    try:
        est = cwkit.make(name, **params)
    except ValueError:
        return
    X = random_input(rng, d)
    y = random_labels(rng, X.shape[0], K)
    what = f"{name} {params} X {type(X).__name__} {X.shape}"
    call = str(rng.choice(["fit", "partial_fit"]))
    if call == "fit":
        fitted = try_call(failures, f"{what} fit", est.fit, X, y)
    else:
        fitted = try_call(failures, f"{what} partial_fit", est.partial_fit, X, y,
                          np.unique(y) if len(y) else None)
    if fitted is None:
        return
    for _ in range(3):
        X2 = random_input(rng, X.shape[1])
        y2 = random_labels(rng, X2.shape[0], K) if rng.random() < 0.5 else y[:X2.shape[0]]
        for method in ("partial_fit", "decision_function", "predict", "predict_proba"):
            f = getattr(est, method, None)
            if f is None:
                continue
            args = (X2, y2) if method == "partial_fit" else (X2,)
            try_call(failures, f"{what} then {method} X2 {type(X2).__name__} {X2.shape}", f,
                     *args)


def threads_case(rng, failures):
    """Threads calling partial_fit and predict with random inputs on one estimator."""
    name, params = _estimator(rng)
    d = int(rng.integers(1, 30))
    try:
        est = cwkit.make(name, **params).fit(np.eye(d + 1)[:, :d] + 0.5, np.arange(d + 1) % 2)
    except ValueError:
        return
    inputs = [(random_input(rng, d), None) for _ in range(8)]
    inputs = [(X, random_labels(rng, X.shape[0], 2)) for X, _ in inputs]

    def work(k):
        for X, y in inputs[k::2]:
            try_call(failures, f"{name} thread partial_fit", est.partial_fit, X, y)
            try_call(failures, f"{name} thread predict", est.predict, X)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    state = est._model.state
    if not all(np.isfinite(a).all() for a in state.values()):
        failures.append(f"{name} {params}: non-finite state after threads")


def fuzz(n_cases, seed=0):
    """{"cases": n, "failures": [...]} of `n_cases` random cases (one in ten with threads)."""
    rng = np.random.default_rng(seed)
    failures = []
    for i in range(n_cases):
        (threads_case if i % 10 == 9 else one_case)(rng, failures)
    return {"cases": n_cases, "failures": failures}
