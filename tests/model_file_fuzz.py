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


def original_models():
    """The fitted estimators, their file bytes and their data."""
    out = []
    for name, params, labels, extra in ORIGINALS:
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
        for value in ("bogus", -1, None, 2.0):
            yield (f"param {key}={value!r}",
                   archive(arrays, {**meta, "params": {**meta["params"], key: value}}))
    n = meta["n_features_in_"]
    for value in (n + 1, n - 1):
        yield f"n_features_in_={value}", archive(arrays, {**meta, "n_features_in_": value})
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
                b = a.copy()
                b.flat[0] = value
                edits[label] = b
            edits["negated"] = -a
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


def check(content, original, X, y, exact, directory):
    """None when the file at `content` loads to `original` (exactly, or when not
    `exact` to a model that predicts and trains) or raises a one-line
    ModelFileError; else what went wrong."""
    path = os.path.join(directory, "damaged.cwk")
    with open(path, "wb") as f:
        f.write(content)
    try:
        est = cwkit.load(path)
    except cwkit.ModelFileError as exc:
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
    except ValueError:
        pass           # a ModelError on the next update is a clear error too
    except Exception as exc:   # noqa: BLE001
        return f"loaded model fails: {type(exc).__name__}: {exc}"
    return None


def fuzz(n_random, seed=0):
    """Every damage of every original model: {"cases": n, "errors": n, "failures": [...]}."""
    rng = np.random.default_rng(seed)
    failures, cases, errors = [], 0, 0
    with tempfile.TemporaryDirectory() as directory:
        for original, raw, X, y in original_models():
            name = type(original).__name__
            damaged = [(label, content, False) for label, content in structured_damage(raw)]
            damaged += [(label, content, True)
                        for label, content in byte_damage(raw, rng, n_random)]
            for label, content, exact in damaged:
                cases += 1
                problem = check(content, original, X, y, exact, directory)
                if problem is not None:
                    failures.append(f"{name} {label}: {problem}")
                try:
                    cwkit.load(os.path.join(directory, "damaged.cwk"))
                except cwkit.ModelFileError:
                    errors += 1
                except Exception:   # noqa: BLE001, S110 - reported by check
                    pass
    return {"cases": cases, "errors": errors, "failures": failures}
