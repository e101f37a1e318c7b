"""The memory of a model, known from its spec before anything is allocated.

:func:`state_size` counts the float64 values of the state that
:func:`cwkit.models.factory.build_model` would allocate (the arrays of
``Model.named_state``, as a model file holds them: an averaged diagonal model
allocates 2 K values more, 2 with two classes, the unused columns of its round-count
row);
:func:`check_size` refuses a model larger than the memory
that is available, with a :class:`ModelSizeError` saying what to do.

The limit is the environment variable ``CWKIT_MAX_MODEL_BYTES`` (a number of
bytes; ``inf`` disables the check) when it is set, else the memory the
system reports available (``MemAvailable`` of ``/proc/meminfo``, or the
physical memory from ``os.sysconf``), lowered to what the address-space limit
of the process (``ulimit -v``) leaves free.
"""
import os

from .. import _core
from .interface import BINARY, OVR, TOPK
from .rules import SCALED_RULES

#: The environment variable overriding the memory limit of a model (bytes).
LIMIT_VARIABLE = "CWKIT_MAX_MODEL_BYTES"

#: Models below this size are built without reading the system's memory (bytes).
SMALL = 64 * 2**20

#: Length of the `aux` array of the first-order and AdaGrad states (see binary.AUX_SIZE).
_AUX = max(_core.AUX_S, _core.AUX_VN2, _core.AUX_T) + 1


class ModelSizeError(ValueError, MemoryError):
    """A model that would not fit in the memory available (raised before allocating)."""


def _minibatch(D, K, B, average):
    """w and w0 (D, K), the B pending rows (B, D - 1), their labels, weights and count;
    averaging: the lazy sum of w and T."""
    return 2 * D * K + B * (D - 1) + 2 * B + 1 + (D * K + 1 if average else 0)


def state_size(spec):
    """The number of float64 values of the state of the model of `spec` (None for a
    kernel model, whose state grows with its support set)."""
    D, kind, shape = spec.n_features + 1, spec.kind, spec.shape
    K = 1 if kind == BINARY else spec.n_classes
    blocks = D * K
    if shape == "first_order":
        if kind == TOPK and spec.rule == _core.Rule.PA_LS:
            return _minibatch(D, K, 1, spec.average)       # top-k PA-LS is mini-batch PA-LS (B = 1)
        # averaging: the lazy sum, and the sum of the scales of a rule that shrinks w
        averaged = blocks if spec.average else 0
        aux = _AUX + (spec.average and spec.rule in SCALED_RULES)
        return blocks + averaged + aux * (K if kind == OVR else 1)
    if shape == "diagonal":
        return 2 * blocks + ((D + 1) * K if spec.average else 0)     # lazy sum, T per block
    if shape == "sop_diagonal":
        return 2 * blocks + (blocks + 1 if spec.average else 0)      # lazy sum, T
    if shape == "adagrad":
        return 2 * blocks + _AUX + (2 * blocks if spec.average else 0)   # sums, rounds
    if shape == "full":
        return (blocks + (K * D * D if kind in (BINARY, OVR) else blocks * blocks)
                + (blocks + 1 if spec.average else 0))               # lazy sum, T
    if shape == "minibatch":
        if kind == OVR:
            return K * _minibatch(D, 1, spec.batch_size, spec.average)
        return _minibatch(D, K, spec.batch_size, spec.average)
    if shape == "l1":
        if kind == OVR:
            return K * (D + (D + 1 if spec.average else 0))
        return blocks + (blocks + 1 if spec.average else 0)       # lazy sum, T
    if shape.startswith("kernel_"):
        return None
    raise ValueError(f"unknown shape of state {shape!r}")


def _meminfo_available():
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _address_space_left():
    """What ``ulimit -v`` leaves to this process, or None without such a limit."""
    try:
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/statm", "rb") as f:
            used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        return max(soft - used, 0)
    except (ImportError, OSError, ValueError, IndexError):
        return None


def memory_limit():
    """The largest model (bytes) that may be built, or None when it is unknown."""
    value = os.environ.get(LIMIT_VARIABLE)
    if value:
        try:
            limit = float(value)
        except ValueError:
            limit = -1.0
        if not limit >= 0:
            raise ValueError(f"{LIMIT_VARIABLE} must be a number of bytes (or inf), got "
                             f"{value!r}")
        return limit
    limits = [v for v in (_meminfo_available(), _address_space_left()) if v is not None]
    return min(limits) if limits else None


def _human(n):
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024


def kernel_fixed_size(spec):
    """The float64 values of a kernel model of `spec` before its support set grows: the
    rows of an incomplete group that mini-batch PA carries ((B, D) per binary model),
    and ``aux`` (:class:`cwkit.models.kernel.DualModel`)."""
    models = spec.n_classes if spec.kind == OVR else 1
    pending = spec.batch_size * (spec.n_features + 1) + 1 if spec.shape == "kernel_minibatch" else 0
    return models * (pending + _core.KAUX_SIZE)


def check_size(spec, extra=0, hint=None):
    """Raise ModelSizeError if the state of `spec`'s model (a kernel model: its part
    before the support set grows), plus `extra` float64 values (a feature map, a model
    file's support set), exceeds :func:`memory_limit`; `hint`: advice about them."""
    size = state_size(spec)
    need = 8 * ((kernel_fixed_size(spec) if size is None else size) + extra)
    if need < SMALL and not os.environ.get(LIMIT_VARIABLE):
        return
    limit = memory_limit()
    if limit is None or need <= limit:
        return
    advice = "use fewer features (e.g. fold them with `cwkit train --hash-bits`)"
    if spec.shape == "full":
        advice += ", covariance='diag' instead of 'full'"
    if spec.shape.endswith("minibatch"):
        advice += f", a smaller batch_size than {spec.batch_size}"
    if hint:
        advice += f", {hint}"
    raise ModelSizeError(
        f"{spec.owner}: a model of {spec.n_features} features and {spec.n_classes} classes "
        f"needs {_human(need)} of memory and {_human(limit)} is available; {advice}, or "
        f"set {LIMIT_VARIABLE} (bytes) to change the limit")
