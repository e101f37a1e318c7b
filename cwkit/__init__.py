"""cwkit: online learning of linear classifiers and regressors.

Perceptron and Passive-Aggressive families, Confidence-Weighted learning
(CW-Var, CW-Stdev), AROW, soft confidence-weighted learning (SCW-I, SCW-II),
normal herding (NHERD), the second-order Perceptron, the regularized PA
family [LMC09], mini-batch PA, multi-class reductions and
streaming svmlight/libsvm input, with one compiled Cython core.
"""
from . import _interrupt  # noqa: F401  (first: holds Ctrl-C while the command line starts)
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

from .svmlight import (
    SvmlightError,
    SvmlightInfo,
    SvmlightWarning,
    dump_svmlight,
    iter_svmlight,
    load_svmlight,
    scan_svmlight,
)
from .vw import VWError, iter_vw, load_vw, scan_vw  # noqa: E402
from .features import FeatureHasher, Vocabulary  # noqa: E402
from .text import text_rows  # noqa: E402
from .base import NotFittedError  # noqa: E402
from .models.interface import ModelError  # noqa: E402
from .models.collapse import VarianceCollapseWarning  # noqa: E402
from .models.size import ModelSizeError  # noqa: E402
from .l1pa import L1ConstrainedPA  # noqa: E402
from .linear import (  # noqa: E402
    AROW,
    AdaGrad,
    ConfidenceWeighted,
    PassiveAggressive,
    Perceptron,
    RegularizedPA,
    SecondOrderPerceptron,
)
from .minibatch import MiniBatchPA  # noqa: E402
from .gaussian import NormalHerd, SoftConfidenceWeighted  # noqa: E402
from .regression import AROWRegressor, PARegressor, make_regressor, regressors  # noqa: E402
from .persist import ModelFileError, describe, load, save  # noqa: E402
from .registry import algorithms, make  # noqa: E402
from . import distributed  # noqa: E402,F401  (cwkit.distributed.fit; imports Dask only when used)

#: the modules ``cwkit.NAME`` reaches after ``import cwkit`` alone, imported on first use
_SUBMODULES = ("datasets", "evaluate", "kernel_approx", "kernels", "report", "sources")


def __getattr__(name):
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
