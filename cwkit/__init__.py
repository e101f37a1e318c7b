"""cwkit: online learning of linear classifiers.

Perceptron and Passive-Aggressive families, Confidence-Weighted learning
(CW-Var, CW-Stdev), AROW, the second-order Perceptron, the regularized PA
family of Shen & Dietterich, mini-batch PA, multi-class reductions and
streaming svmlight/libsvm input, with one compiled Cython core.
"""
try:
    from . import _core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only on an unbuilt tree
    raise ImportError(
        "cwkit's compiled extension cwkit._core is not built (" + str(exc) + "). "
        "Install the package with `pip install .` from the project root (or build in "
        "place with `python setup.py build_ext --inplace`), and import cwkit from "
        "outside the source tree."
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

__version__ = "0.1.0"

from .base import NotFittedError  # noqa: E402
from ._engines import ModelError  # noqa: E402
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
from .persist import ModelFileError, load, save  # noqa: E402
from .registry import algorithms, make  # noqa: E402

__all__ = [
    "AROW", "AdaGrad", "ConfidenceWeighted", "L1ConstrainedPA", "MiniBatchPA",
    "PassiveAggressive", "Perceptron",
    "RegularizedPA", "SecondOrderPerceptron", "NotFittedError", "ModelError",
    "ModelFileError", "algorithms", "make", "save", "load",
    "SvmlightError", "SvmlightInfo", "SvmlightWarning", "dump_svmlight", "iter_svmlight",
    "load_svmlight", "scan_svmlight",
]
