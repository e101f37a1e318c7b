"""Model files: a numpy ``.npz`` archive of plain arrays plus JSON metadata.

Loading never executes code: ``numpy.load(..., allow_pickle=False)`` reads only
numeric and string arrays, and the estimator class is looked up by name in
cwkit's own registry of classes, never imported from the file.
"""
import io
import json
import os
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from .text import ROW_TREATMENTS
from . import _core, registry, regression
from ._atomic import atomic_write
from ._params import INT_MAX, MAX_HASH_BITS
from ._version import __version__
from .features import FeatureHasher, Vocabulary
from .models.size import ModelSizeError, state_size

FORMAT = "cwkit-model"
VERSION = 1

class ModelFileError(ValueError):
    """A file that is not a readable cwkit model."""


def _classes():
    return {**{e.cls.__name__: e.cls for e in registry._REGISTRY.values()},
            **{cls.__name__: cls for cls in regression.FAMILIES},
            **{cls.__name__: cls for cls in registry.KERNEL_FAMILIES.values()},
            **{cls.__name__: cls for cls in registry.approx_families().values()}}


#: State arrays renamed since version-1 files were first written: name -> former name
#: (the number of pending rows of mini-batch PA was the unnamed ``aux``).
RENAMED_STATE = {"n_pend": "aux"}


def _former_name(key):
    """The name a version-1 file written before the rename gave state array `key`
    (``"n_pend"``, or ``"<class>/n_pend"`` of a one-vs-rest model)."""
    prefix, _, name = key.rpartition("/")
    return prefix + "/" * bool(prefix) + RENAMED_STATE.get(name, name)


#: The state array that the lazy sum ``u`` of averaging is shaped as (the first of
#: these a model has), and whether the previous release's ``avg_u`` is its transpose.
SUMMED = {"mu": True, "vv": False, "W": False, "w": False, "v": False, "G": False}


def _upgrade_averaged(files, path, params):
    """An averaged model of the previous release whose driver kept no lazy sum
    (full covariance, multi-class SOP and AdaGrad, top-k, mini-batch PA, L1-PA).

    It held ``avg_u``, the lazy sum u = sum_t t (w_t - w_{t-1}) of the weights it
    reports, transposed ((D,) or (D, K)), and ``avg_t``, T.  Today the driver keeps
    the same sum as ``u``: flat, shaped as the weights' array of its state, then T
    (:func:`cwkit.models.average.mean_of_rounds`); top-k first-order rules keep it
    shaped as v, T being the round count of ``aux`` (w = v: their scale stays 1);
    AdaGrad keeps sums of its weights instead (:func:`_adagrad_sums`).  One-vs-rest
    models keep one per class: column c of ``avg_u``.  `params`: the estimator's.
    """
    u, T = files.pop("state/avg_u"), files.pop("state/avg_t", None)
    names = {k[len("state/"):] for k in files if k.startswith("state/")}
    prefixes = sorted({n.rpartition("/")[0] for n in names})
    if T is None or T.shape != (1,) or u.ndim != 2 and prefixes != [""]:
        raise ModelFileError(f"{path}: damaged cwkit model file (avg_u and avg_t, the lazy "
                             "sum of averaging, do not fit together)")
    sums = {"": u} if prefixes == [""] else {f"{c}/": u[:, c] for c in range(u.shape[1])}
    for prefix, s in sums.items():
        base = next((b for b in SUMMED if prefix + b in names), None)
        if base == "G":
            files[f"state/{prefix}acc"] = _adagrad_sums(files, prefix, s, T[0], params)
        elif base == "v":
            files[f"state/{prefix}u"] = s
        elif base is not None:
            files[f"state/{prefix}u"] = np.append((s.T if SUMMED[base] else s).ravel(), T)


def _adagrad_sums(files, prefix, u, T, params):
    """AdaGrad-RDA's ``acc`` from the former lazy sum `u` after T rounds: the sums
    of the weights over the rounds 1..r_i, then the r_i (``adagrad_pass``); here
    every r_i = T and the sums are sum_t w_t = (T + 1) w_T - u, w_T the weights
    in closed form from its sums of subgradients (``rda_weights``), interleaved."""
    g, G = files[f"state/{prefix}u"], files[f"state/{prefix}G"]
    w = np.empty(g.size)
    _core.rda_weights(g.ravel(), G.ravel(), files[f"state/{prefix}aux"][_core.AUX_T],
                      params["eta"], params["lam"], params["delta"], w)
    return _interleaved(np.concatenate([(T + 1.0) * w - u.ravel(), np.full(g.size, T)]), g)


def _interleaved(acc, u):
    """AdaGrad-RDA's averaging sums from two flat blocks (the sums, then the rounds
    they reach) to today's layout: the pairs interleaved in the order of the state
    `u`, (D, 2) binary, (D, 2 K) multi-class."""
    return np.ascontiguousarray(acc.reshape(2, -1).T).reshape(len(u), -1)


def _interleaved_adagrad_sums(files):
    """An AdaGrad-RDA model written while its averaging sums ``acc`` were two flat
    blocks (``_interleaved``)."""
    for key in [k for k in files if k.endswith("acc")]:
        acc, u = files[key], files.get(key[:-len("acc")] + "u")
        if acc.ndim == 1 and u is not None and acc.size == 2 * u.size:
            files[key] = _interleaved(acc, u)


def _upgrade_kernel(files, prefix):
    """A kernel model of the previous release: its ``aux`` (s, ||V||^2, t, n, pool
    entries used) gets the Forgetron's Q and M and the averaging counter P
    (``KAUX_*`` of ``_kernel.pxi``).  Q = 0 and M = n, the support vectors held:
    what a model that never shrank has (the previous release's "oldest" budget
    removed without shrinking; the upgraded model shrinks from now on).  P counts
    the rounds of a first-order rule (one with the array ``u``) since its sums
    were last brought up to date: t without averaging.  The averaged perceptron's
    u was sum_j t_j c_j (its average ((t + 1) c - u) / t); today's is the sum of
    the weights c over the rounds up to P ago (average (u + P c) / t): with P = 0,
    (t + 1) c - u, the same average to the bit.
    """
    aux = files[f"state/{prefix}aux"]
    new = np.zeros(_core.KAUX_SIZE)
    new[:len(aux)] = aux
    new[_core.KAUX_M] = aux[_core.KAUX_N]
    u, coef = files.get(f"state/{prefix}u"), files.get(f"state/{prefix}coef")
    if u is not None and not len(u):
        new[_core.KAUX_P] = aux[_core.AUX_T]
    elif u is not None and coef is not None and coef.shape == u.shape:
        files[f"state/{prefix}u"] = (aux[_core.AUX_T] + 1.0) * (aux[_core.AUX_S] * coef) - u
    files[f"state/{prefix}aux"] = new


#: The length of a kernel model's ``aux`` in files of the previous release.
OLD_KAUX_SIZE = 5


def _upgrade_pending_weights(files):
    """A mini-batch PA model (top-k PA-LS is one) written before it took importance
    weights: the rows it carries over (``pend_y``, one-vs-rest ``<class>/pend_y``) were
    of weight 1."""
    for key in [k for k in files if k.endswith("pend_y")]:
        files.setdefault(key[:-len("pend_y")] + "pend_w", np.ones(files[key].shape))


def _upgrade(meta, files, path):
    """Bring the state arrays of a file written by the previous release (the same
    format version) to today's layout, in place."""
    try:
        if "state/avg_u" in files:
            _upgrade_averaged(files, path, meta["params"])
        _interleaved_adagrad_sums(files)
        if not any(k.endswith("sv_indptr") for k in files):    # (not a kernel model)
            _upgrade_pending_weights(files)
        for key in [k for k in files if k.endswith("sv_indptr")]:
            prefix = key[len("state/"):-len("sv_indptr")]
            aux = files.get(f"state/{prefix}aux")
            if aux is not None and aux.shape == (OLD_KAUX_SIZE,):
                _upgrade_kernel(files, prefix)
    except (ValueError, TypeError, IndexError, KeyError) as exc:   # arrays that do not fit
        if isinstance(exc, ModelFileError):
            raise
        raise ModelFileError(f"{path}: damaged cwkit model file ({exc})") from None


def _jsonable(v):
    if isinstance(v, np.generic):
        return v.item()
    return v


def save(model, path, provenance=None):
    """Save a fitted estimator to `path` (written atomically: all or nothing).

    Parameters
    ----------
    model : a fitted cwkit estimator
    path : str or os.PathLike
    provenance : dict, optional
        How the model was made, recorded in the file (what :func:`describe` shows):
        ``data``, the files it learnt from (added to those of a loaded model's, whose
        training goes on), and any other JSON values (``hash_bits``, ``zero_based``,
        ``passes``, ...). The cwkit version and the dates are added: ``created`` (kept
        from a loaded model) and ``saved``. The model's ``provenance_`` becomes it.

    Notes
    -----
    A model trained on columns folded into ``2**B`` (``cwkit train --hash-bits B``)
    carries ``hash_bits_ = B``; the file keeps it, and ``cwkit predict`` refuses data
    folded otherwise.  Files without it (written before it was kept, or by models
    fitted from Python) load as before.  Likewise ``rows_``, the treatment of the rows
    ``cwkit train --rows`` applied ("raw" or "text", :func:`cwkit.text_rows`), which
    ``cwkit predict`` applies.
    """
    prov = _provenance(model, provenance or {})
    with model._state_lock():      # no thread updates the model while it is read
        model._check_fitted()
        meta, arrays = _contents(model)
        meta["provenance"] = prov
    buf = io.BytesIO()
    np.savez_compressed(buf, __meta__=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                        **arrays)
    content = buf.getvalue()
    atomic_write(path, lambda tmp: Path(tmp).write_bytes(content))
    model.provenance_ = prov


def _provenance(model, given):
    """The provenance recorded by :func:`save`: the model's own (of its file) with
    `given` added, its ``data`` appended."""
    prov = dict(getattr(model, "provenance_", None) or {})
    data = list(prov.get("data", [])) + [str(d) for d in given.get("data", [])]
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    prov.update({k: v for k, v in given.items() if k != "data"})
    prov.update(cwkit=__version__, data=data, saved=now)
    prov.setdefault("created", now)
    return json.loads(json.dumps(prov, default=str))   # plain JSON values only


def _contents(model):
    """The metadata and the arrays (copies) of a fitted estimator."""
    params = model.get_params()
    if isinstance(params.get("random_state"), np.random.Generator):
        params["random_state"] = None
    if isinstance(params.get("class_weight"), dict):   # (JSON keys are strings only)
        params["class_weight"] = [[_jsonable(k), _jsonable(v)]
                                  for k, v in params["class_weight"].items()]
    if _regressor(model):
        meta, arrays = _common_contents(model, params)
        meta.update(task=REGRESSION,
                    errors={k: float(getattr(model, k)) for k in ERRORS})
        return meta, arrays
    meta, arrays = _common_contents(model, params)
    classes = model.classes_
    meta["classes_kind"] = classes.dtype.kind
    if classes.dtype.kind == "O":
        meta["classes"] = [_jsonable(c) for c in classes]
    scores, labels = model._calibration.rounds()
    arrays["calibration/scores"] = np.array(scores)
    arrays["calibration/labels"] = np.array(labels, dtype=np.int64)
    if classes.dtype.kind != "O":
        arrays["classes_"] = classes
    return meta, arrays


#: The ``task`` a regressor's file records (a classifier's records none).
REGRESSION = "regression"
#: The progressive errors a regressor's file keeps (``meta["errors"]``).
ERRORS = ("squared_error_", "absolute_error_")


def _regressor(model_or_class):
    return getattr(model_or_class, "_estimator_type", None) == "regressor"


def _common_contents(model, params):
    """The metadata and arrays of every estimator: its class, parameters, counters,
    choices, state and named-feature map."""
    meta = {
        "format": FORMAT, "version": VERSION, "class": type(model).__name__,
        "params": {k: _jsonable(v) for k, v in params.items()},
        "n_features_in_": int(model.n_features_in_), "t_": int(model.t_),
        "mistakes_": int(getattr(model, "mistakes_", 0)),
        "n_updates_": int(getattr(model, "n_updates_", 0)),
        "choices": model._choices(),
    }
    arrays = {"state/" + k: np.array(v) for k, v in model._model.named_state().items()}
    fmap = model.__dict__.get("feature_map_")
    if fmap is not None:
        meta["features"], names = feature_map_record(fmap)
        arrays.update(names)
    if model.__dict__.get("hash_bits_") is not None:
        meta["hash_bits"] = int(model.hash_bits_)
    if model.__dict__.get("rows_") is not None:
        meta["rows"] = model.rows_
    return meta, arrays


#: The integer counters of the metadata (the estimator's attributes of the same name).
COUNTERS = ("t_", "mistakes_", "n_updates_")


def _is_count(value, lo=0):
    return isinstance(value, int) and not isinstance(value, bool) and value >= lo


def _read_archive(path):
    """The arrays of the archive at `path`, by name (never unpickling anything)."""
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except FileNotFoundError as exc:
        raise ModelFileError(f"{path}: cannot read the model file ({exc.strerror})") from None
    except OSError as exc:
        raise ModelFileError(f"{path}: cannot read the model file "
                             f"({exc.strerror or exc})") from None
    if magic != b"PK\x03\x04":
        raise ModelFileError(f"{path}: not a cwkit model file (not a .npz archive)")
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except ValueError as exc:
        # numpy's own text suggests allow_pickle=True, which a model file never needs
        reason = ("it holds an object array" if "pickle" in str(exc)
                  else "an array is damaged")
        raise ModelFileError(f"{path}: not a cwkit model file, or a damaged one "
                             f"({reason})") from None
    except MemoryError:
        raise ModelFileError(f"{path}: not a cwkit model file, or a damaged one (an array "
                             "header declares more data than fits in memory)") from None
    except Exception as exc:   # zipfile, zlib, EOF, OSError: the archive itself is damaged
        raise ModelFileError(f"{path}: not a cwkit model file, or a damaged one (the "
                             f"archive cannot be read: {type(exc).__name__})") from None


def _read_meta(files, path):
    """The metadata of the archive, checked field by field."""
    raw = files.pop("__meta__", None)
    try:
        meta = json.loads(raw.tobytes().decode())
    except (AttributeError, ValueError, UnicodeDecodeError):
        raise ModelFileError(f"{path}: not a cwkit model file (no metadata)") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelFileError(f"{path}: not a cwkit model file (format {meta!r:.60})")
    if not _is_count(meta.get("version")) or meta["version"] != VERSION:
        raise ModelFileError(f"{path}: model format version {meta.get('version')!r:.40} is "
                             f"not supported by this cwkit (version {VERSION})")
    if not isinstance(meta.get("class"), str) or meta["class"] not in _classes():
        raise ModelFileError(f"{path}: unknown estimator class {meta.get('class')!r:.60}")
    problems = [f"{k} is not an integer >= 0" for k in COUNTERS
                if not _is_count(meta.get(k))]
    if not _is_count(meta.get("n_features_in_"), 1):
        problems.append("n_features_in_ is not an integer >= 1")
    if not isinstance(meta.get("params"), dict):
        problems.append("params is not a mapping")
    if not isinstance(meta.get("choices", {}), dict):
        problems.append("choices is not a mapping")
    if not isinstance(meta.get("provenance", {}), dict):
        problems.append("provenance is not a mapping")
    if _regressor(_classes()[meta["class"]]) != (meta.get("task") == REGRESSION):
        problems.append(f"task {meta.get('task', 'classification')!r:.40} is not that of "
                        f"{meta['class']}")
    elif meta.get("task") == REGRESSION:
        if not (isinstance(meta.get("errors"), dict) and all(
                type(meta["errors"].get(k)) in (int, float) and meta["errors"][k] >= 0
                for k in ERRORS)):
            problems.append(f"errors does not hold {' and '.join(ERRORS)}, numbers >= 0")
    elif meta.get("classes_kind") not in ("b", "i", "u", "f", "U", "S", "O"):
        problems.append("classes_kind is not a numpy dtype kind of labels")
    elif meta["classes_kind"] == "O" and not isinstance(meta.get("classes"), list):
        problems.append("classes is not a list")
    if "hash_bits" in meta and not (_is_count(meta["hash_bits"], 1)
                                    and meta["hash_bits"] <= MAX_HASH_BITS):
        problems.append(f"hash_bits is not an integer from 1 to {MAX_HASH_BITS}")
    if "rows" in meta and meta["rows"] not in ROW_TREATMENTS:
        problems.append(f"rows is not one of {', '.join(ROW_TREATMENTS)}")
    if problems:
        raise ModelFileError(f"{path}: damaged cwkit model file (metadata: "
                             f"{'; '.join(problems)})")
    return meta


def _read_classes(meta, files, path):
    """The labels: a 1-D array of at least 2 distinct labels, sorted (as ``np.unique``)."""
    if meta["classes_kind"] == "O":
        classes = np.array(meta["classes"] + [None], dtype=object)[:-1]
    else:
        classes = files.pop("classes_", None)
        if classes is None:
            raise ModelFileError(f"{path}: damaged cwkit model file (no array classes_)")
    if classes.dtype.kind != meta["classes_kind"] or classes.ndim != 1 or len(classes) < 2:
        raise ModelFileError(f"{path}: damaged cwkit model file (classes_ must be a 1-D "
                             f"array of at least 2 labels of kind {meta['classes_kind']!r}, "
                             f"got shape {classes.shape} of kind {classes.dtype.kind!r})")
    try:
        unique = np.unique(classes)
    except TypeError:
        unique = None       # labels that do not compare with each other
    if (unique is None or len(unique) != len(classes) or not (unique == classes).all()
            or (classes.dtype.kind == "O"
                and not all(isinstance(c, (str, int, float)) for c in classes))):
        raise ModelFileError(f"{path}: damaged cwkit model file (classes_ must be distinct "
                             "labels in increasing order, as fit finds them)")
    return classes


def _build(meta, classes, files, path):
    """The estimator of the metadata, its model allocated and not yet filled.

    The model is allocated only once the file is known to hold its state (as
    many values as the metadata's shape needs): a damaged ``n_features_in_``
    never makes it allocate more than the file holds.
    """
    cls = _classes()[meta["class"]]
    unknown = sorted(set(meta["params"]) - set(cls._param_names()))
    if unknown:
        raise ModelFileError(f"{path}: damaged cwkit model file ({cls.__name__} has no "
                             f"parameter {unknown[0]!r:.40})")
    params = cls._file_params(dict(meta["params"]))
    if isinstance(params.get("class_weight"), list):   # the pairs `_contents` wrote
        if not all(isinstance(p, list) and len(p) == 2 for p in params["class_weight"]):
            raise ModelFileError(f"{path}: damaged cwkit model file (class_weight is not a "
                                 "list of (label, weight) pairs)")
        params["class_weight"] = {k: v for k, v in params["class_weight"]}
    if "intercept_scaling" in cls._param_names():
        # a file written before intercept_scaling existed: its constant feature was 1
        params.setdefault("intercept_scaling", 1.0)
    est = cls(**params)
    n_features = meta["n_features_in_"]
    n_classes = 2 if classes is None else len(classes)
    try:
        est._validate_params()
        est._restore_choices(meta.get("choices", {}))
        need = state_size(est._spec(n_classes, n_features))
        held = sum(a.size for key, a in files.items() if key.startswith("state/"))
        if need is not None and need != held:
            raise ModelFileError(
                f"{path}: damaged cwkit model file (its state arrays hold {held} values, "
                f"where {cls.__name__} with {n_features} features and {n_classes} "
                f"classes has {need})")
        est._reset(classes, n_features)
        counts = est.__dict__.get("class_counts_")
        if counts is not None and len(counts) != n_classes:
            raise ModelFileError(f"{path}: damaged cwkit model file ({len(counts)} class "
                                 f"counts for {len(classes)} classes)")
        if need is None:      # a kernel model: the file's support set gives the shapes
            if n_features > INT_MAX:     # its rows' indices are CSR's int32
                raise ModelFileError(f"{path}: damaged cwkit model file (n_features_in_ "
                                     f"{n_features} is above {INT_MAX}, the widest rows "
                                     "cwkit reads)")
            est._model.adopt_shapes({key[len("state/"):]: a.shape for key, a in files.items()
                                     if key.startswith("state/")})
    except ModelSizeError as exc:
        raise ModelFileError(f"{path}: cannot load this model: {exc}") from None
    except ModelFileError:
        raise
    except (ValueError, TypeError, KeyError, OverflowError) as exc:
        raise ModelFileError(f"{path}: damaged cwkit model file ({exc})") from None
    return est


def _fill_state(est, files, path):
    """Copy the state arrays of the file into the model; they must match it exactly."""
    state = est._model.named_state()
    for key in list(state):
        arr = files.pop("state/" + key, None)
        if arr is None:
            arr = files.pop("state/" + _former_name(key), None)
        if arr is None:
            raise ModelFileError(f"{path}: damaged cwkit model file (no state array {key!r})")
        if arr.shape != np.shape(state[key]) or arr.dtype != np.float64:
            raise ModelFileError(f"{path}: state array {key!r} has shape {arr.shape} and "
                                 f"dtype {arr.dtype}, expected {np.shape(state[key])} "
                                 "float64")
        state[key][...] = arr
    problem = est._model.state_problem()
    if problem is not None:
        raise ModelFileError(f"{path}: damaged cwkit model file (inconsistent state: "
                             f"{problem})")


def _fill_calibration(est, files, path):
    """The calibration rounds of the file (its last rounds, oldest first); a file
    written before they were saved has none: the default slope until new rounds."""
    scores = files.pop("calibration/scores", None)
    labels = files.pop("calibration/labels", None)
    if scores is None and labels is None:
        return
    cal = est._calibration
    K = len(est.classes_)
    if (scores is None or labels is None or scores.dtype != np.float64
            or labels.dtype.kind not in "iu" or labels.ndim != 1
            or scores.shape != (len(labels),) + cal.scores.shape[1:]
            or not np.isfinite(scores).all() or ((labels < 0) | (labels >= K)).any()):
        raise ModelFileError(f"{path}: damaged cwkit model file (calibration rounds: "
                             f"scores of shape (n,{'' if K == 2 else f' {K}'}) float64 "
                             f"and n labels in [0, {K}) expected)")
    cal.add(scores, labels.astype(np.intp))


def feature_map_record(fmap):
    """The metadata and arrays of a named-feature map (``feature_map_``): the hasher's
    ``hash_bits`` and ``signed``, or the vocabulary's names as their UTF-8 bytes
    back to back (``features/names``, uint8) and the end of each (``features/ends``,
    int64): plain arrays, no pickle."""
    if isinstance(fmap, FeatureHasher):
        return {"kind": "hash", "hash_bits": fmap.hash_bits, "signed": fmap.signed}, {}
    encoded = [name.encode("utf-8", "surrogatepass") for name in fmap.names_]
    return {"kind": "vocabulary"}, {
        "features/names": np.frombuffer(b"".join(encoded), np.uint8).copy(),
        "features/ends": np.cumsum([len(b) for b in encoded], dtype=np.int64)}


def _read_feature_map(meta, files, path, n_features):
    """The named-feature map of a file (None for a model of numbered columns; files
    written before named features had none)."""
    record = meta.get("features")
    names, ends = files.pop("features/names", None), files.pop("features/ends", None)
    if record is None:
        return None
    try:
        if record.get("kind") == "hash":
            fmap = FeatureHasher(record["hash_bits"], record["signed"])
        elif record.get("kind") == "vocabulary":
            if (names is None or ends is None or names.dtype != np.uint8 or names.ndim != 1
                    or ends.dtype != np.int64 or ends.ndim != 1
                    or (len(ends) and (ends[-1] != len(names) or (np.diff(ends) < 0).any()
                                       or ends[0] < 0))):
                raise ValueError("the vocabulary arrays features/names and features/ends "
                                 "do not fit together")
            raw = names.tobytes()
            starts = [0, *ends[:-1].tolist()]
            fmap = Vocabulary(raw[a:b].decode("utf-8", "surrogatepass")
                              for a, b in zip(starts, ends.tolist()))
        else:
            raise ValueError(f"unknown feature map {record.get('kind')!r:.40}")
        if fmap.n_features != n_features:
            raise ValueError(f"its feature map has {fmap.n_features} columns, the model "
                             f"{n_features}")
    except (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"{path}: damaged cwkit model file ({exc})") from None
    return fmap


def load(path):
    """Load an estimator saved by :func:`save`.

    A file of the previous release's state layouts (the former averaging
    wrapper's ``avg_u``/``avg_t``, kernel models' 5-value ``aux``) is upgraded to
    today's exactly: same decisions, and the same continued learning where the
    rule is unchanged (a kernel model with an "oldest" budget now shrinks first,
    the Forgetron [DSS08], from the support set it holds).

    Raises
    ------
    ModelFileError
        If `path` cannot be read or is not a cwkit model file, or a damaged or
        inconsistent one: unreadable archive, missing or ill-typed metadata,
        parameters that fail validation, labels that are not distinct and
        sorted, state arrays of the wrong shape or dtype, NaN or inf, negative
        variances or other broken invariants of the model's state
        (:meth:`cwkit.models.interface.Model.state_problem`), weights that the
        state gives with the file's parameters and are not finite.  Never another
        exception for the file's content.
    """
    path = os.fspath(path)
    files = _read_archive(path)
    meta = _read_meta(files, path)
    regressor = meta.get("task") == REGRESSION
    classes = None if regressor else _read_classes(meta, files, path)
    _upgrade(meta, files, path)
    est = _build(meta, classes, files, path)
    _fill_state(est, files, path)
    if regressor:
        for key in ERRORS:
            setattr(est, key, float(meta["errors"][key]))
    else:
        _fill_calibration(est, files, path)
    problem = est._weights_problem()
    if problem is not None:
        raise ModelFileError(f"{path}: cannot load this model: {problem}")
    fmap = _read_feature_map(meta, files, path, meta["n_features_in_"])
    if fmap is not None:
        est.feature_map_ = fmap
    for key in COUNTERS:
        setattr(est, key, meta[key])
    if "hash_bits" in meta:
        est.hash_bits_ = meta["hash_bits"]
    est.provenance_ = meta.get("provenance", {})   # (a file of an earlier release: none)
    if "rows" in meta:
        est.rows_ = meta["rows"]
    return est


def describe(model, top=10):
    """What a fitted model is, as ``cwkit show`` prints it.

    Parameters
    ----------
    model : a fitted cwkit estimator (e.g. from :func:`load`)
    top : int
        How many weights to list, the largest in magnitude first.

    Returns
    -------
    dict
        ``rule`` (the registry name), ``class``, ``params`` (as resolved:
        :meth:`~cwkit.base.OnlineClassifier.resolved_params`), ``classes`` (None for a
        regressor),
        ``n_features``, ``hash_bits`` (None: none recorded), ``counters`` (``t_``, the
        rounds learnt; ``mistakes_`` and ``n_updates_``, of its last training run),
        ``provenance`` (the cwkit version, the data files, the dates, as :func:`save`
        recorded them; empty for a model never saved or a file of an earlier release),
        ``intercept`` (one per weight vector) and ``top_weights``: the `top` weights of
        largest magnitude, each ``{"class", "column", "index", "weight", "variance"}``
        (``class`` None for a binary model, ``column`` the 0-based column, ``index`` the
        feature's index in the training file where its base is recorded, ``variance``
        its variance for the Gaussian-weight rules, else None); None for a kernel model,
        which has no primal weights.

    Examples
    --------
    >>> import numpy as np, cwkit
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.2], [0.1, 1.0]])
    >>> d = cwkit.describe(cwkit.make("arow").fit(X, [1, -1, 1, -1]), top=1)
    >>> d["rule"], d["params"]["covariance"], d["top_weights"][0]["column"]
    ('arow', 'full', 0)
    """
    model._check_fitted()
    prov = dict(getattr(model, "provenance_", None) or {})
    params = model.resolved_params()
    if isinstance(params.get("random_state"), np.random.Generator):
        params["random_state"] = None
    classes = model.classes_.tolist() if hasattr(model, "classes_") else None
    out = {"rule": registry.name_of(model), "class": type(model).__name__,
           "params": {k: _jsonable(v) for k, v in params.items()}, "classes": classes,
           "n_features": int(model.n_features_in_),
           "hash_bits": getattr(model, "hash_bits_", None) or prov.get("hash_bits"),
           "counters": {k: int(getattr(model, k, 0)) for k in COUNTERS},
           "provenance": prov, "intercept": None, "top_weights": None}
    try:
        W = np.atleast_2d(model.coef_)
    except AttributeError:      # a kernel model: its weights are dual
        return out
    out["intercept"] = np.ravel(model.intercept_).tolist()
    V = _variances(model, W.shape)
    order = np.argsort(-np.abs(W), axis=None, kind="stable")[:max(int(top), 0)]
    base = prov.get("zero_based")
    for flat in order:
        c, j = np.unravel_index(flat, W.shape)
        out["top_weights"] = (out["top_weights"] or []) + [{
            "class": None if classes is None or len(classes) == 2 and W.shape[0] == 1
            else classes[c],
            "column": int(j), "index": None if base is None else int(j) + (not base),
            "weight": float(W[c, j]), "variance": None if V is None else float(V[c, j])}]
    out["top_weights"] = out["top_weights"] or []
    return out


def _variances(model, shape):
    """The variance of each weight of a Gaussian-weight model, shaped as ``coef_``, or
    None (a rule without, or a full covariance whose blocks are not one per row)."""
    try:
        V = np.atleast_2d(model.coef_var_)
    except AttributeError:
        try:
            S = model.covariance_
        except AttributeError:
            return None
        S = np.asarray(S)     # (its intercept's row and column last, if any)
        if S.shape[-1] not in (shape[1], shape[1] + 1) or S.shape[-2] != S.shape[-1]:
            return None       # (top-1: one matrix over the stacked class blocks)
        diagonal = np.diagonal(S, axis1=-2, axis2=-1)[..., :shape[1]]
        return np.atleast_2d(diagonal) if np.atleast_2d(diagonal).shape == shape else None
    return V if V.shape == shape else None
