"""cwkit: online learning of linear classifiers and regressors.

Perceptron and Passive-Aggressive families, Confidence-Weighted learning
(CW-Var, CW-Stdev), AROW, soft confidence-weighted learning (SCW-I, SCW-II),
normal herding (NHERD), the second-order Perceptron, the regularized PA
family [LMC09], mini-batch PA, multi-class reductions and
streaming svmlight/libsvm input, with one compiled Cython core.
"""
from . import _interrupt  # noqa: F401  (first: holds Ctrl-C while the command line starts)
from . import _collector  # noqa: F401  (no cyclic collection while the command line starts)
from . import _blas  # noqa: F401  (before numpy: the command line's BLAS threads poll briefly)
from . import _malloc  # noqa: F401  (the command line's freed batches stay for the next ones)
from ._version import __version__  # noqa: F401  (cwkit.__version__)

try:
    from . import _core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only on an unbuilt tree
    import os as _os

    raise ImportError(
        f"cwkit's compiled extension cwkit._core is not built in "
        f"{_os.path.dirname(__file__)} ({exc}). From the project root, `pip install -e .` "
        "builds it in place (about a minute) so that this folder imports; a copy installed "
        "with `pip install .` is only imported from outside the source tree."
    ) from exc

#: where each public name lives: imported at its first use, so that the command line,
#: which needs only some of the modules, does not import the others as it starts
_PUBLIC = {
    ".svmlight": ("SvmlightError", "SvmlightInfo", "SvmlightWarning", "dump_svmlight",
                  "iter_svmlight", "load_svmlight", "scan_svmlight"),
    ".vw": ("VWError", "iter_vw", "load_vw", "scan_vw"),
    ".features": ("FeatureHasher", "Vocabulary"),
    ".text": ("text_rows",),
    ".base": ("NotFittedError",),
    ".models.interface": ("ModelError",),
    ".models.collapse": ("VarianceCollapseWarning",),
    ".models.size": ("ModelSizeError",),
    ".l1pa": ("L1ConstrainedPA",),
    ".linear": ("AROW", "AdaGrad", "ConfidenceWeighted", "PassiveAggressive", "Perceptron",
                "RegularizedPA", "SecondOrderPerceptron"),
    ".minibatch": ("MiniBatchPA",),
    ".gaussian": ("NormalHerd", "SoftConfidenceWeighted"),
    ".regression": ("AROWRegressor", "PARegressor", "make_regressor", "regressors"),
    ".persist": ("ModelFileError", "describe", "load", "save"),
    ".registry": ("algorithms", "make"),
}
_WHERE = {name: module for module, names in _PUBLIC.items() for name in names}

#: the public modules, reached as ``cwkit.NAME`` after ``import cwkit`` alone (as is any
#: other module of the package), imported on first use (``cwkit.distributed.fit`` imports
#: Dask only when called)
_SUBMODULES = ("datasets", "distributed", "evaluate", "kernel_approx", "kernels", "report",
               "sources")


def __getattr__(name):
    import importlib

    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name], __name__), name)
        globals()[name] = value     # later reads find it directly
        return value
    if not name.startswith("__"):
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_WHERE, *_SUBMODULES})


__all__ = [
    "AROW", "AdaGrad", "ConfidenceWeighted", "L1ConstrainedPA", "MiniBatchPA",
    "NormalHerd", "PassiveAggressive", "Perceptron", "RegularizedPA", "SecondOrderPerceptron",
    "SoftConfidenceWeighted", "NotFittedError", "ModelError",
    "ModelFileError", "ModelSizeError", "VarianceCollapseWarning", "algorithms", "make",
    "save", "load", "describe", "AROWRegressor", "PARegressor", "make_regressor", "regressors",
    "SvmlightError", "SvmlightInfo", "SvmlightWarning", "dump_svmlight", "iter_svmlight",
    "load_svmlight", "scan_svmlight", "VWError", "iter_vw", "load_vw", "scan_vw",
    "FeatureHasher", "Vocabulary", "text_rows",
]
