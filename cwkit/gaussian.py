"""Gaussian-weight rules after AROW: soft confidence-weighted learning and normal herding.

SCW-I and SCW-II ([SCW12]) and NHERD ([NHERD10]) keep, as CW and AROW do, a
Gaussian N(mu, Sigma) over the weights, diagonal or full (``covariance``), and
run in the same compiled drivers (``cwkit/_binary.pxi``, ``so_step``).  The
update formulas are in each class's Notes, with their sources
(docs/references.md).
"""
from . import _core, _params
from .base import GaussianMixin, OnlineClassifier, Registration
from .linear import _COVARIANCE_SHAPES, CovarianceChoice, _phi
from .models.rules import RULE_OF


class SoftConfidenceWeighted(CovarianceChoice, GaussianMixin, OnlineClassifier):
    """Soft Confidence-Weighted learning, SCW-I and SCW-II ([SCW12]).

    Parameters
    ----------
    variant : {"scw1", "scw2"}, default="scw1"
        The loss term C l (SCW-I) or C l^2 (SCW-II) of the objective, l the
        confidence hinge max(0, phi sqrt(x^T Sigma x) - y mu.x).
    C : float > 0, default=1.0
        Aggressiveness: the weight of the loss term against the KL divergence.
    eta : float in (0.5, 1), default=0.85
        Confidence; phi = Phi^-1(eta) > 0.
    a : float > 0, default=1.0
        Initial variance: Sigma_1 = a I.
    covariance : {"auto", "diag", "full"}, default="auto"
        As in :class:`cwkit.ConfidenceWeighted`; the diagonal form projects the
        update of Sigma^-1 on the diagonal, as CW-Stdev's ([ECCW08] eq. 15).
    fit_intercept, intercept_scaling, n_passes, shuffle, random_state, multiclass, k,
    average, class_weight
        As in :class:`cwkit.Perceptron`; ``multiclass`` is "top1" or "ovr".

    Notes
    -----
    m = y mu.x, v = x^T Sigma x, psi = 1 + phi^2/2, zeta = 1 + phi^2.  Each update
    minimises KL(N(mu, Sigma) || N(mu_t, Sigma_t)) + C l (SCW-I) or + C l^2 (SCW-II)
    ([SCW12] Sect. 3); it happens iff l > 0 ([SCW12] Alg. 1), with
    SCW-I ([SCW12] Prop. 1): alpha = min(C, max(0, (-m psi + sqrt(m^2 phi^4/4 +
    v phi^2 zeta)) / (v zeta))), CW-Stdev's alpha clipped at C;
    SCW-II (Prop. 2): n = v + 1/(2C), gamma = phi sqrt(phi^2 m^2 v^2 + 4 n v (n +
    v phi^2)), alpha = max(0, (-(2 m n + phi^2 m v) + gamma) / (2 (n^2 + n v phi^2)));
    then u = (-alpha v phi + sqrt(alpha^2 v^2 phi^2 + 4 v))^2 / 4,
    beta = alpha phi / (sqrt(u) + v alpha phi), mu <- mu + alpha y Sigma x,
    Sigma <- Sigma - beta Sigma x x^T Sigma, i.e. Sigma^-1 += alpha phi / sqrt(u) x x^T
    (diagonal: 1/sigma_i += alpha phi / sqrt(u) x_i^2).  Both roots are evaluated in
    rationalised forms free of cancellation for m > 0.  An importance weight s scales
    the loss term: C becomes s C.  Multi-class top-1: the binary step on
    Delta = f(x, y) - f(x, c), as for CW.
    """

    _constraints = {"variant": _params.Choice("scw1", "scw2"), "C": _params.POSITIVE,
                    "eta": _params.Real(0.5, 1.0, open_lo=True, open_hi=True),
                    "a": _params.POSITIVE, "covariance": _params.Choice("auto", "diag", "full")}
    _names = {
        "scw1": Registration({"variant": "scw1"},
                             "Soft Confidence-Weighted, SCW-I ([SCW12] Prop. 1)",
                             ("C", "eta", "a", "covariance")),
        "scw2": Registration({"variant": "scw2"},
                             "Soft Confidence-Weighted, SCW-II ([SCW12] Prop. 2)",
                             ("C", "eta", "a", "covariance")),
    }

    def __init__(self, variant="scw1", C=1.0, eta=0.85, a=1.0, covariance="auto", *,
                 fit_intercept=True, intercept_scaling="auto", n_passes=1, shuffle=False,
                 random_state=None, multiclass="top1", k=1, average="auto", class_weight=None):
        self.variant = variant
        self.C = C
        self.eta = eta
        self.a = a
        self.covariance = covariance
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.n_passes = n_passes
        self.shuffle = shuffle
        self.random_state = random_state
        self.multiclass = multiclass
        self.k = k
        self.average = average
        self.class_weight = class_weight

    def _model_options(self):
        return {"shape": _COVARIANCE_SHAPES[self.covariance_type_],
                "rule": RULE_OF[self.variant], "phi": _phi(self.eta), "C": float(self.C),
                "a": float(self.a)}


class NormalHerd(CovarianceChoice, GaussianMixin, OnlineClassifier):
    """Normal herding, NHERD ([NHERD10]): a Gaussian over weights herded by the hinge loss.

    Parameters
    ----------
    C : float > 0, default=1.0
        Aggressiveness: the weight of the loss against the velocity constraint.
    a : float > 0, default=1.0
        Initial variance: Sigma_1 = a I.
    covariance : {"auto", "diag", "full"}, default="auto"
        As in :class:`cwkit.ConfidenceWeighted`.
    diag_update : {"inverse", "direct", "exact"}, default="inverse"
        The diagonal form: the full update of Sigma^-1 projected on the diagonal
        ([NHERD10]'s "project"), that of Sigma with its off-diagonal entries
        dropped ("drop"; "inverse" and "direct" as AROW's ``diag_update``), or the
        herding map restricted to diagonal matrices ("exact").
    fit_intercept, intercept_scaling, n_passes, shuffle, random_state, multiclass, k,
    average, class_weight
        As in :class:`cwkit.Perceptron`; ``multiclass`` is "top1" or "ovr"; "auto" (the
        default) keeps the last iterate, as for AROW: averaging made NHERD worse on the
        sets measured (docs/choosing.md).

    Notes
    -----
    If l = max(0, 1 - y mu.x) > 0 ([NHERD10], the full-covariance update), with
    v = x^T Sigma x:
    mu <- mu + l / (v + 1/C) y Sigma x and
    Sigma <- Sigma - (C^2 v + 2C) / (1 + C v)^2 Sigma x x^T Sigma, i.e.
    Sigma^-1 += (2C + C^2 v) x x^T.  Diagonal ([NHERD10]'s approximations): 1/sigma_i +=
    (2C + C^2 v) x_i^2 ("inverse"), sigma_i -= (C^2 v + 2C) / (1 + C v)^2 sigma_i^2
    x_i^2 ("direct") or sigma_i <- sigma_i / (1 + C x_i^2 sigma_i)^2 ("exact").  The
    mean step is AROW's with r = 1/C.  An importance weight s scales the loss term:
    C becomes s C.  Multi-class top-1: the binary step on Delta = f(x, y) - f(x, c),
    as for AROW.
    """

    _average_auto = False   # averaging made it worse, as AROW (docs/choosing.md)
    _constraints = {"C": _params.POSITIVE, "a": _params.POSITIVE,
                    "covariance": _params.Choice("auto", "diag", "full"),
                    "diag_update": _params.Choice("inverse", "direct", "exact")}
    _names = {"nherd": Registration({}, "Normal herding, NHERD ([NHERD10])",
                                    ("C", "a", "covariance", "diag_update"))}

    def __init__(self, C=1.0, a=1.0, covariance="auto", diag_update="inverse", *,
                 fit_intercept=True, intercept_scaling="auto", n_passes=1, shuffle=False,
                 random_state=None, multiclass="top1", k=1, average="auto", class_weight=None):
        self.C = C
        self.a = a
        self.covariance = covariance
        self.diag_update = diag_update
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.n_passes = n_passes
        self.shuffle = shuffle
        self.random_state = random_state
        self.multiclass = multiclass
        self.k = k
        self.average = average
        self.class_weight = class_weight

    def _model_options(self):
        return {"shape": _COVARIANCE_SHAPES[self.covariance_type_], "rule": RULE_OF["nherd"],
                "C": float(self.C), "a": float(self.a),
                "direct": _DIAG_UPDATES[self.diag_update]}


#: NHERD's ``diag_update`` -> the compiled diagonal covariance step.
_DIAG_UPDATES = {"inverse": _core.DiagUpdate.DIAG_INVERSE,
                 "direct": _core.DiagUpdate.DIAG_DIRECT,
                 "exact": _core.DiagUpdate.DIAG_EXACT}
