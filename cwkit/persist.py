"""Model files: a numpy ``.npz`` archive of plain arrays plus JSON metadata.

Loading never executes code: ``numpy.load(..., allow_pickle=False)`` reads only
numeric and string arrays, and the estimator class is looked up by name in
cwkit's own registry of classes, never imported from the file.
"""
import io
import json
import os
import tempfile
import zipfile

import numpy as np

from . import registry

FORMAT = "cwkit-model"
VERSION = 1


class ModelFileError(ValueError):
    """A file that is not a readable cwkit model."""


def _classes():
    return {e.cls.__name__: e.cls for e in registry._REGISTRY.values()}


#: State arrays renamed since version-1 files were first written: name -> former name
#: (the number of pending rows of mini-batch PA was the unnamed ``aux``).
RENAMED_STATE = {"n_pend": "aux"}


def _former_name(key):
    """The name a version-1 file written before the rename gave state array `key`
    (``"n_pend"``, or ``"<class>/n_pend"`` of a one-vs-rest model)."""
    prefix, _, name = key.rpartition("/")
    return prefix + "/" * bool(prefix) + RENAMED_STATE.get(name, name)


def _jsonable(v):
    if isinstance(v, np.generic):
        return v.item()
    return v


def save(model, path):
    """Save a fitted estimator to `path` (written atomically: all or nothing).

    Parameters
    ----------
    model : a fitted cwkit estimator
    path : str or os.PathLike
    """
    model._check_fitted()
    params = model.get_params()
    if isinstance(params.get("random_state"), np.random.Generator):
        params["random_state"] = None
    classes = model.classes_
    meta = {
        "format": FORMAT, "version": VERSION, "class": type(model).__name__,
        "params": {k: _jsonable(v) for k, v in params.items()},
        "n_features_in_": int(model.n_features_in_), "t_": int(model.t_),
        "mistakes_": int(getattr(model, "mistakes_", 0)),
        "n_updates_": int(getattr(model, "n_updates_", 0)),
        "classes_kind": classes.dtype.kind,
    }
    if classes.dtype.kind == "O":
        meta["classes"] = [_jsonable(c) for c in classes]
    arrays = {"state/" + k: np.asarray(v) for k, v in model._model.state.items()}
    if classes.dtype.kind != "O":
        arrays["classes_"] = classes
    buf = io.BytesIO()
    np.savez_compressed(buf, __meta__=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                        **arrays)
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".cwkit-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(buf.getvalue())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load(path):
    """Load an estimator saved by :func:`save`; raises ModelFileError if `path` is not one."""
    path = os.fspath(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            files = {k: z[k] for k in z.files}
    except FileNotFoundError as exc:
        raise ModelFileError(f"{path}: cannot read the model file ({exc.strerror})") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise ModelFileError(f"{path}: not a cwkit model file ({exc})") from None
    try:
        meta = json.loads(files.pop("__meta__").tobytes().decode())
    except (KeyError, ValueError, UnicodeDecodeError):
        raise ModelFileError(f"{path}: not a cwkit model file (no metadata)") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelFileError(f"{path}: not a cwkit model file (format {meta!r:.60})")
    if meta.get("version") != VERSION:
        raise ModelFileError(f"{path}: model format version {meta.get('version')!r} is not "
                             f"supported by this cwkit (version {VERSION})")
    cls = _classes().get(meta.get("class"))
    if cls is None:
        raise ModelFileError(f"{path}: unknown estimator class {meta.get('class')!r}")
    try:
        est = cls(**meta["params"])
        est._validate_params()
        classes = (np.array(meta["classes"], dtype=object) if meta["classes_kind"] == "O"
                   else files.pop("classes_"))
        est._reset(classes, int(meta["n_features_in_"]))
        state = est._model.state
        for key in list(state):
            arr = files.pop("state/" + key, None)
            if arr is None:
                arr = files.pop("state/" + _former_name(key))
            if arr.shape != np.shape(state[key]) or arr.dtype != np.float64:
                raise ModelFileError(f"{path}: state array {key!r} has shape {arr.shape} and "
                                     f"dtype {arr.dtype}, expected {np.shape(state[key])} "
                                     "float64")
            state[key][...] = arr
    except ModelFileError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{path}: damaged cwkit model file ({exc!r})") from None
    est.t_ = int(meta["t_"])
    est.mistakes_ = int(meta["mistakes_"])
    est.n_updates_ = int(meta["n_updates_"])
    return est
