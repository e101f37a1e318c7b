"""One registry: user-facing algorithm names (CLI and API) -> estimator and fixed parameters."""
import inspect
from dataclasses import dataclass, field

from . import l1pa as L1
from . import linear as L
from . import minibatch as MB
from .base import COMMON


@dataclass(frozen=True)
class Entry:
    name: str
    cls: type
    fixed: dict
    description: str
    params: tuple = field(default=())      # the tunable hyper-parameters of this name


_REGISTRY = {}


def register(name, cls, fixed, description, params=()):
    """Add an algorithm under `name` (used by cwkit's own modules)."""
    _REGISTRY[name] = Entry(name, cls, dict(fixed), description, tuple(params))


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
        (fit_intercept, n_passes, shuffle, random_state, multiclass, k).

    Examples
    --------
    >>> import cwkit
    >>> cwkit.make("arow", r=0.1)
    AROW(r=0.1, a=1.0, loss='squared_hinge', covariance='diag', diag_update='inverse', \
sigma_update='auto', fit_intercept=True, n_passes=1, shuffle=True, random_state=None, \
multiclass='top1', k=1)
    """
    entry = _REGISTRY.get(name)
    if entry is None:
        raise ValueError(f"unknown algorithm {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    allowed = set(entry.params) | set(COMMON)
    for key in params:
        if key not in allowed:
            raise ValueError(f"{name}: unknown parameter {key!r}; {name} takes "
                             f"{', '.join(entry.params) or 'no hyper-parameters'} "
                             f"(and {', '.join(COMMON)})")
    est = entry.cls(**entry.fixed, **params)
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
    """The registered name of an estimator (its class name if none matches)."""
    params = est.get_params()
    for e in _REGISTRY.values():
        if type(est) is e.cls and all(params.get(k) == v for k, v in e.fixed.items()):
            return e.name
    return type(est).__name__


register("perceptron", L.Perceptron, {"average": False}, "Perceptron (Rosenblatt)")
register("avg-perceptron", L.Perceptron, {"average": True},
         "averaged Perceptron (Freund & Schapire 1999)")
register("pa", L.PassiveAggressive, {"variant": "pa"}, "Passive-Aggressive, hard margin [PA06]")
register("pa1", L.PassiveAggressive, {"variant": "pa1"}, "PA-I, hinge slack [PA06]; S002 with bias",
         ["C"])
register("pa2", L.PassiveAggressive, {"variant": "pa2"},
         "PA-II, squared slack [PA06]; S002 with bias", ["C", "slack"])
register("pa-ls", L.PassiveAggressive, {"variant": "pa-ls"},
         "PA least squares, updates every round (S002 eqs 7-9)", ["C", "slack"])
register("cw", L.ConfidenceWeighted, {"variant": "var"},
         "Confidence-Weighted, variance form CW-Var [CW08]", ["eta", "a", "covariance"])
register("cw-stdev", L.ConfidenceWeighted, {"variant": "stdev"},
         "Confidence-Weighted, exact convex stdev form (S001 Fig. 1)", ["eta", "a", "covariance"])
register("arow", L.AROW, {"loss": "squared_hinge"},
         "AROW, squared hinge (S000 Fig. 1)",
         ["r", "a", "covariance", "diag_update", "sigma_update"])
register("arow-h", L.AROW, {"loss": "hinge"}, "AROW with the hinge loss (S000 Sect. 3.2)",
         ["r", "a", "covariance", "diag_update", "sigma_update"])
register("sop", L.SecondOrderPerceptron, {}, "second-order Perceptron [SOP05]",
         ["a", "covariance"])
register("reg-pa", L.RegularizedPA, {"variant": "reg"},
         "objective-regularized PA (S004 Lemma 3.1)", ["alpha", "prune_sigma", "prune_mode"])
register("l2-pa", L.RegularizedPA, {"variant": "l2"},
         "L2-norm-constrained PA (S004 Lemma 3.2)", ["beta", "prune_sigma", "prune_mode"])
register("soft-reg-pa", L.RegularizedPA, {"variant": "soft"},
         "soft-margin objective-regularized PA (S004 Lemma 5.1)",
         ["C", "alpha", "prune_sigma", "prune_mode"])
register("adagrad", L.AdaGrad, {}, "diagonal AdaGrad-RDA with L1, hinge loss (S000 Sect. 5.4)",
         ["eta", "lam", "delta"])
register("bpa1", MB.MiniBatchPA, {"variant": "bpa1"},
         "mini-batch PA-I, box-constrained dual (S002 Sect. 3.2)",
         ["C", "batch_size", "window"])
register("bpa2", MB.MiniBatchPA, {"variant": "bpa2"},
         "mini-batch PA-II, nonnegative dual with ridge rho (S002 Sect. 3.2)",
         ["C", "batch_size", "rho", "window", "slack"])
register("bpa-ls", MB.MiniBatchPA, {"variant": "bpa-ls"},
         "mini-batch PA least squares, closed form (S002 Sect. 3.2)",
         ["C", "batch_size", "rho", "window", "slack"])
register("l1-pa", L1.L1ConstrainedPA, {}, "L1-norm-constrained PA, exact update (S004 eq. 3.9)",
         ["beta"])
