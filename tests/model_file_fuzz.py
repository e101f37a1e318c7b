"""Damaged model files: build them and check that each loads exactly or raises
ModelFileError.

Used by ``tests/test_model_files.py`` (a few hundred files) and, at a larger
size, by ``python tests/fuzz_model_files.py`` (not collected by pytest).
"""
import io
import json
import os
import tempfile
import zipfile

import numpy as np

import cwkit

#: (name, params, labels, rows given to partial_fit after fit): one of each state shape.
ORIGINALS = [
    ("pa1", {}, "int2", 0),
    ("arow", {}, "str3", 0),
    ("cw", {"covariance": "full"}, "float2", 0),
    ("sop", {"covariance": "full", "multiclass": "ovr"}, "int3", 0),
    ("bpa1", {"batch_size": 4}, "int2", 7),
    ("bpa2", {"batch_size": 4, "multiclass": "topk", "k": 2}, "str3", 7),
    ("l1-pa", {"multiclass": "ovr", "beta": 5.0}, "object3", 0),
    ("adagrad", {}, "int3", 0),
    ("avg-perceptron", {"multiclass": "ovr"}, "int3", 0),
]

#: One of each kernel and kernel_approx form: dual first-order (binary with a budget,
#: top-1 averaged, one-vs-rest), dual second-order (binary, top-1), dual mini-batch PA
#: (binary with a budget and rows pending, top-1), random Fourier and Nystroem features.
KERNEL_ORIGINALS = [
    ("pa1", {"kernel": "rbf", "budget": 6}, "int2", 0),
    ("pa", {"kernel": "poly", "degree": 2, "average": True}, "str3", 0),
    ("reg-pa", {"kernel": "rbf", "multiclass": "ovr", "budget": 5}, "int3", 0),
    ("arow", {"kernel": "rbf", "budget": 6}, "float2", 0),
    ("cw", {"kernel": "poly", "degree": 3}, "int3", 0),
    ("bpa1", {"kernel": "rbf", "budget": 6, "batch_size": 3}, "int2", 5),
    ("bpa2", {"kernel": "rbf", "multiclass": "top1", "batch_size": 3}, "str3", 4),
    ("arow", {"kernel_approx": "rff", "n_components": 8}, "int2", 0),
    ("pa1", {"kernel_approx": "nystroem", "n_components": 6}, "object3", 0),
]


def data(labels, n=40, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    kind, k = labels[:-1], int(labels[-1])
    codes = rng.integers(0, k, n)
    codes[:k] = np.arange(k)
    names = ["ant", "bee", "cat"]
    y = {"int": codes * 3 - 2, "float": codes - 1.0, "str": np.array(names)[codes],
         "object": np.array(names, dtype=object)[codes]}[kind]
    return X, y


def original_models(originals=ORIGINALS):
    """The fitted estimators, their file bytes and their data."""
    out = []
    for name, params, labels, extra in originals:
        X, y = data(labels)
        est = cwkit.make(name, shuffle=False, **params).fit(X[:33], y[:33])
        if extra:
            est.partial_fit(X[33:33 + extra], y[33:33 + extra])
        out.append((est, to_bytes(est), X, y))
    return out


def to_bytes(est):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.cwk")
        cwkit.save(est, path)
        with open(path, "rb") as f:
            return f.read()


def archive(arrays, meta):
    buf = io.BytesIO()
    np.savez_compressed(buf, __meta__=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                        **arrays)
    return buf.getvalue()


def unpack(raw):
    with np.load(io.BytesIO(raw), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays.pop("__meta__").tobytes())
    return arrays, meta


_ODD_VALUES = [None, "x", -1, 0, 1.5, [], {}, True, 10**30]


def structured_damage(raw):
    """(label, bytes) of archives edited field by field: metadata, labels, state arrays."""
    arrays, meta = unpack(raw)
    for key in list(meta):
        edited = dict(meta)
        del edited[key]
        yield f"meta without {key}", archive(arrays, edited)
        for value in _ODD_VALUES:
            yield f"meta {key}={value!r}", archive(arrays, {**meta, key: value})
    for key in list(meta["params"]) + ["bogus"]:
        for value in ("bogus", -1, None, 2.0) + _near(meta["params"].get(key)):
            yield (f"param {key}={value!r}",
                   archive(arrays, {**meta, "params": {**meta["params"], key: value}}))
    for key, old in meta.get("choices", {}).items():
        for value in ("bogus", -1, None, [], 2**62, [[0.5]], [[float("nan")] * 5],
                      *_near(old)):
            yield (f"choice {key}={value!r:.40}",
                   archive(arrays, {**meta, "choices": {**meta["choices"], key: value}}))
    if meta.get("choices", {}).get("landmarks_"):
        landmarks = meta["choices"]["landmarks_"]
        for label, value in [("one more", landmarks + landmarks[:1]), ("one less",
                             landmarks[:-1]), ("a wider row", [landmarks[0] + [1.0]]
                             + landmarks[1:]), ("huge", [[1e308] * len(r) for r in landmarks])]:
            yield (f"landmarks_ {label}",
                   archive(arrays, {**meta, "choices": {**meta["choices"], "landmarks_": value}}))
    n = meta["n_features_in_"]
    for value in (n + 1, n - 1, 2**40):
        yield f"n_features_in_={value}", archive(arrays, {**meta, "n_features_in_": value})
        if "approx_n_features_" in meta.get("choices", {}):
            both = {**meta, "n_features_in_": value,
                    "choices": {**meta["choices"], "approx_n_features_": value}}
            yield f"n_features_in_ and approx_n_features_={value}", archive(arrays, both)
    if "classes_" in arrays:
        c = arrays["classes_"]
        for label, value in [("reversed", c[::-1]), ("duplicated", np.r_[c[:1], c[:-1]]),
                             ("2-D", c[None]), ("one", c[:1]),
                             ("float", np.arange(len(c), dtype=float)),
                             ("NaN", np.r_[np.arange(len(c) - 1.0), np.nan])]:
            yield f"classes_ {label}", archive({**arrays, "classes_": value}, meta)
    else:
        c = meta["classes"]
        for label, value in [("reversed", c[::-1]), ("duplicated", c[:1] + c[:-1]),
                             ("nested", [c]), ("one", c[:1]), ("null", c[:-1] + [None])]:
            yield f"classes {label}", archive(arrays, {**meta, "classes": value})
    for key in [k for k in arrays if k.startswith("state/")]:
        a = arrays[key]
        edits = {"without": None, "longer": np.r_[a.ravel(), 0.0],
                 "float32": a.astype(np.float32), "int64": a.astype(np.int64),
                 "big-endian": a.astype(">f8"), "2-D row": a.reshape(1, -1)}
        if a.size:
            for label, value in (("NaN", np.nan), ("inf", np.inf), ("-1", -1.0),
                                 ("huge", 1e300), ("fraction", 0.5)):
                for at in sorted({0, a.size // 2, a.size - 1}):
                    b = a.copy()
                    b.flat[at] = value
                    edits[f"{label} at {at}"] = b
            edits["negated"] = -a
            edits["reversed"] = a[::-1].copy()
            for at in sorted({0, a.size // 2, a.size - 1}):
                for delta in (-1.0, 1.0):
                    b = a.copy()
                    b.flat[at] += delta
                    edits[f"{delta:+g} at {at}"] = b
        for label, value in edits.items():
            edited = {k: v for k, v in arrays.items() if k != key}
            if value is not None:
                edited[key] = value
            yield f"{key} {label}", archive(edited, meta)
    obj = {**arrays, "classes_": np.array([object(), 1], dtype=object)}
    buf = io.BytesIO()
    np.savez(buf, __meta__=np.frombuffer(json.dumps(meta).encode(), np.uint8), **obj)
    yield "object array", buf.getvalue()
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        names = z.namelist()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(names[0], b"\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': "
                   b"False, 'shape': (1000000000000,), }" + b" " * 50 + b"\n")
    yield "header declaring 8 TB", buf.getvalue()


#: Floats at the ends of float64's finite range (the largest, the smallest normal and
#: subnormal): a parameter there must be refused, or give finite weights and scores.
EXTREME_FLOATS = (1e308, np.finfo(float).max, 1e-308, 5e-324)


def _near(value):
    """Edits of a saved number: off by one, halved, doubled, the first integers beyond
    what the compiled core holds (a C int, a Py_ssize_t), and the extreme floats."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return (2**31, 2**63, *EXTREME_FLOATS)
    if isinstance(value, int):
        return (value - 1, value + 1, value // 2, 2 * value, 2**31, 2**63)
    return (value / 2, 2 * value, *EXTREME_FLOATS)


def extreme_damage(raw):
    """(label, bytes) of archives whose float parameters and choices are edited, one at
    a time, to the ends of float64's finite range."""
    arrays, meta = unpack(raw)
    for where in ("params", "choices"):
        for key, old in meta.get(where, {}).items():
            if isinstance(old, float):
                for value in EXTREME_FLOATS:
                    yield (f"{where} {key}={value!r}",
                           archive(arrays, {**meta, where: {**meta[where], key: value}}))


def fuzz_extremes(originals=ORIGINALS):
    """Every extreme float edit of every original: the failures (a list)."""
    failures = []
    with tempfile.TemporaryDirectory() as directory:
        for original, raw, X, y in original_models(originals):
            for label, content in extreme_damage(raw):
                problem = check(content, original, X, y, False, directory)
                if problem is not None:
                    failures.append(f"{type(original).__name__} {label}: {problem}")
    return failures


def byte_damage(raw, rng, n):
    """(label, bytes): `n` truncations and `n` files with 1-4 bytes changed."""
    for _ in range(n):
        cut = int(rng.integers(0, len(raw)))
        yield f"truncated at {cut}", raw[:cut]
    for _ in range(n):
        b = bytearray(raw)
        where = rng.integers(0, len(raw), rng.integers(1, 5))
        for i in where:
            b[i] = (b[i] + int(rng.integers(1, 256))) % 256
        yield f"bytes changed at {sorted(where.tolist())}", bytes(b)


def same_model(a, b):
    if type(a) is not type(b) or a.get_params() != b.get_params():
        return False
    if a.classes_.dtype != b.classes_.dtype or not np.array_equal(a.classes_, b.classes_):
        return False
    if (a.n_features_in_, a.t_, a.mistakes_, a.n_updates_) != (
            b.n_features_in_, b.t_, b.mistakes_, b.n_updates_):
        return False
    sa, sb = a._model.state, b._model.state
    return sa.keys() == sb.keys() and all(np.array_equal(sa[k], sb[k]) for k in sa)


def check(content, original, X, y, exact, directory, refused=None):
    """None when the file at `content` loads to `original` (exactly, or when not
    `exact` to a model that predicts and trains) or raises a one-line
    ModelFileError (then appended to the list `refused`); else what went wrong."""
    path = os.path.join(directory, "damaged.cwk")
    with open(path, "wb") as f:
        f.write(content)
    try:
        est = cwkit.load(path)
    except cwkit.ModelFileError as exc:
        if refused is not None:
            refused.append(exc)
        text = str(exc)
        if "\n" in text or "pickle" in text or text.count(path) != 1:
            return f"unclear message: {text!r}"
        return None
    except Exception as exc:   # noqa: BLE001 - what the fuzz looks for
        return f"{type(exc).__name__}: {exc}"
    if exact:
        return None if same_model(est, original) else "loaded a different model"
    try:
        if not np.isfinite(est.decision_function(X)).all():
            return "loaded a model with non-finite scores"
        est.partial_fit(X, y)
        if not np.isfinite(est.decision_function(X)).all():
            return "a loaded model learnt non-finite scores"
    except ValueError:
        pass           # a ModelError on the next update is a clear error too
    except Exception as exc:   # noqa: BLE001
        return f"loaded model fails: {type(exc).__name__}: {exc}"
    return None


def fuzz(n_random, seed=0, originals=ORIGINALS, every=1):
    """Every damage of every original model (of the field-by-field edits, one in
    `every`, which one chosen by `seed`): {"cases": n, "errors": n, "failures": [...]}."""
    rng = np.random.default_rng(seed)
    failures, cases, errors = [], 0, 0
    with tempfile.TemporaryDirectory() as directory:
        for original, raw, X, y in original_models(originals):
            name = type(original).__name__
            damaged = [(label, content, False) for i, (label, content)
                       in enumerate(structured_damage(raw)) if (i + seed) % every == 0]
            damaged += [(label, content, True)
                        for label, content in byte_damage(raw, rng, n_random)]
            refused = []
            for label, content, exact in damaged:
                cases += 1
                problem = check(content, original, X, y, exact, directory, refused)
                if problem is not None:
                    failures.append(f"{name} {label}: {problem}")
            errors += len(refused)
    return {"cases": cases, "errors": errors, "failures": failures}
