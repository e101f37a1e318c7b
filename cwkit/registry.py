"""One registry: user-facing algorithm names (CLI and API) -> estimator and fixed parameters.

Each estimator family declares its own names (its ``_names``, name ->
:class:`cwkit.base.Registration`); this module collects them, in the order of
``FAMILIES``.
"""
import functools
import inspect
from dataclasses import dataclass, field

from . import gaussian, kernel_approx, kernels, l1pa, linear, minibatch
from .base import COMMON

#: The estimator families whose names are registered, in the order of `algorithms`.
FAMILIES = (linear.Perceptron, linear.PassiveAggressive, linear.ConfidenceWeighted, linear.AROW,
            linear.SecondOrderPerceptron, linear.RegularizedPA, linear.AdaGrad,
            minibatch.MiniBatchPA, l1pa.L1ConstrainedPA, gaussian.SoftConfidenceWeighted,
            gaussian.NormalHerd)


@dataclass(frozen=True)
class Entry:
    name: str
    cls: type
    fixed: dict
    description: str
    params: tuple = field(default=())      # the tunable hyper-parameters of this name


#: primal family -> its kernel form, for the names whose rule has one.
KERNEL_FAMILIES = kernels.KERNEL_FORMS

_REGISTRY = {name: Entry(name, cls, dict(reg.fixed), reg.description, tuple(reg.params))
             for cls in FAMILIES for name, reg in cls._names.items()}


@functools.cache     # (a signature costs ~0.5 ms; eval reads the registry once per learner)
def _defaults(cls):
    sig = inspect.signature(cls.__init__)
    return {k: p.default for k, p in sig.parameters.items() if k != "self"}


def make(name, **params):
    """Build the estimator registered under `name`.

    Parameters
    ----------
    name : str
        A name from :func:`algorithms`, e.g. ``"pa1"``, ``"cw"``, ``"arow"``.
    **params
        Its hyper-parameters (see :func:`algorithms`) and the common ones
        (fit_intercept, intercept_scaling, n_passes, shuffle, random_state, multiclass, k,
        average).

    Notes
    -----
    ``average="auto"``, the default of every name but ``perceptron`` (the plain rule)
    and the kernel forms, reports the mean of the weights for every rule but AROW,
    AROW-H and NHERD (measured in docs/choosing.md); ``average=False`` gives the last iterate,
    every name's model before "auto", bit for bit.

    Examples
    --------
    >>> import cwkit
    >>> cwkit.make("arow", r=0.1)
    AROW(r=0.1, a=1.0, loss='squared_hinge', covariance='auto', diag_update='inverse', \
sigma_update='auto', fit_intercept=True, intercept_scaling='auto', n_passes=1, shuffle=False, \
random_state=None, multiclass='top1', k=1, average='auto', class_weight=None)

    """
    entry = _REGISTRY.get(name)
    if entry is None:
        raise ValueError(f"unknown algorithm {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    if "kernel_approx" in params:
        return _make_approx(entry, params)
    if set(params) & set(kernels.KERNEL_PARAMS):
        return _make_kernel(entry, params)
    allowed = set(entry.params) | set(COMMON)
    for key in params:
        if key not in allowed:
            raise ValueError(f"{name}: unknown parameter {key!r}; {name} takes "
                             f"{', '.join(entry.params) or 'no hyper-parameters'} "
                             f"(and {', '.join(COMMON)})")
    # a common parameter given explicitly overrides the name's (avg-perceptron's average)
    est = entry.cls(**{**entry.fixed, **params})
    est._validate_params()
    return est


def kernel_params(name):
    """The kernel parameters `name` takes (none when its rule has no kernel form)."""
    entry = _REGISTRY.get(name)
    return kernels.KERNEL_PARAMS if entry and entry.cls in KERNEL_FAMILIES else ()


def _make_kernel(entry, params):
    """`entry`'s kernel form (kernel "rbf" or "poly"), or its primal form for
    kernel="linear" given alone."""
    name, kernel = entry.name, params.get("kernel")
    others = sorted(set(params) & set(kernels.KERNEL_PARAMS) - {"kernel"})
    if kernel == "linear" and not others:
        return make(name, **{k: v for k, v in params.items() if k != "kernel"})
    if kernel is None or kernel == "linear":
        raise ValueError(f"{name}: {', '.join(others)} "
                         f"{'is a parameter' if len(others) == 1 else 'are parameters'} of "
                         "the kernel forms; give kernel='rbf' or kernel='poly' (kernel="
                         "'linear' is the primal rule, which takes none of them)")
    kcls = KERNEL_FAMILIES.get(entry.cls)
    if kcls is None:
        forms = sorted(n for n, e in _REGISTRY.items() if e.cls in KERNEL_FAMILIES)
        raise ValueError(f"{name} has no kernel form; the rules with one are "
                         f"{', '.join(forms)}")
    # a common parameter given explicitly overrides the name's (perceptron's average)
    allowed = (set(kcls._param_names()) - (set(entry.fixed) - set(COMMON))) & (
        set(entry.params) | set(COMMON) | set(kernels.KERNEL_PARAMS))
    for key in params:
        if key not in allowed:
            raise ValueError(f"{name}: parameter {key!r} is not one of its kernel form's: "
                             f"{', '.join(sorted(allowed))}")
    est = kcls(**{**entry.fixed, **params})
    est._validate_params()
    return est


def _make_approx(entry, params):
    """`entry`'s linear rule on approximate kernel features (``kernel_approx``)."""
    name = entry.name
    allowed = set(entry.params) | set(COMMON) | set(kernel_approx.APPROX_PARAMS)
    for key in params:
        if key not in allowed:
            raise ValueError(f"{name}: parameter {key!r} does not go with kernel_approx "
                             f"(the linear rule's own, the common ones and "
                             f"{', '.join(kernel_approx.APPROX_PARAMS)})")
    est = kernel_approx.approx_form(entry.cls)(**{**entry.fixed, **params})
    est._validate_params()
    return est


def algorithms():
    """The registry: one dict per name with its description and hyper-parameters.

    Each entry is ``{"name", "description", "class", "params": {p: {"default",
    "valid"}}}``; ``params`` lists the algorithm's own hyper-parameters (the
    common ones are in ``cwkit.base.COMMON``).
    """
    out = []
    for e in _REGISTRY.values():
        defaults = _defaults(e.cls)
        cons = e.cls._constraints
        out.append({"name": e.name, "description": e.description, "class": e.cls.__name__,
                    "params": {p: {"default": defaults[p], "valid": cons[p].describe()}
                               for p in e.params}})
    return out


def name_of(est):
    """The registered name of an estimator: that of its rule for a ``kernel_approx`` form
    (its class name if none matches)."""
    params = est.get_params()
    for cls in type(est).__mro__:
        for name, reg in vars(cls).get("_names", {}).items():
            if all(params.get(k) == v for k, v in reg.fixed.items()):
                return name
    return type(est).__name__


def approx_families():
    """Linear family -> its form on approximate kernel features (``kernel_approx=``),
    each made on first use (a class each: the command line's start makes none)."""
    return {cls: kernel_approx.approx_form(cls)
            for cls in dict.fromkeys(e.cls for e in _REGISTRY.values())}
