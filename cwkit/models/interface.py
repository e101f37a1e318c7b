"""What every model is: its spec, its interface, the result of a pass and its errors.

A model owns the state of one classifier, named float64 arrays in ``state``
(saved and loaded as they are), runs one pass of a compiled driver over rows
and reports weights and scores.  All weight vectors have length
D = n_features + 1: the last coordinate is the intercept, whose feature value
is ``bias`` (1, or 0 without an intercept).
"""
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .. import _core

#: `PassResult.pos` of a pass that stopped at no row.
NO_ROW = -1

#: ``feature_layout`` entries: an axis of D entries (the features, the intercept last);
#: the same followed by the round count T; the features alone (no intercept).
ROWS, ROWS_T, FEATURES = ((0, 1, 0),), ((0, 1, 1),), ((1, 1, -1),)

#: Multi-class strategies (the estimators' ``multiclass``) and the two-class case.
BINARY, TOP1, TOPK, OVR = "binary", "top1", "topk", "ovr"

#: The learning tasks (``ModelSpec.task``) and the compiled core's codes of them.
CLASSIFICATION, REGRESSION = "classification", "regression"
TASK_CODES = {CLASSIFICATION: int(_core.Task.CLASSIFICATION),
              REGRESSION: int(_core.Task.REGRESSION)}


@dataclass(frozen=True)
class ModelSpec:
    """Everything a model is built from, explicitly (never read off an estimator).

    Attributes
    ----------
    shape : str
        The shape of the state, a key of the table of ``cwkit.models.factory``:
        "first_order", "diagonal", "full", "sop_diagonal", "adagrad",
        "minibatch" or "l1".
    n_classes, n_features : int
    rule : cwkit._core.Rule or None
        The update rule of the compiled driver (None for mini-batch PA and L1-PA,
        whose drivers have one rule each).
    strategy : {"top1", "topk", "ovr"}
        Reduction used when ``n_classes > 2``.
    k : int
        Competitors per update for ``strategy="topk"`` (capped at K - 1).
    sigma_update : {"auto", "delta", "sum"}
        Direction of the multi-class covariance update (AROW).
    slack : {"per-constraint", "shared"}
        Squared slacks of the multi-class PA-II / PA-LS / BPA-II / BPA-LS duals.
    C, alpha, beta, phi, r, a, direct, eta, lam, delta : float or bool
        Hyper-parameters of the rules (see the estimators); ``direct``: the diagonal
        covariance step, False / True or a ``cwkit._core.DiagUpdate``.
    bpa_variant, rho, batch_size, sliding
        Mini-batch PA: "bpa1", "bpa2" or "bpa-ls", the ridge, the group size B
        and the sliding window.
    kernel, gamma, degree, coef0, budget, budget_policy
        Kernel models (shapes "kernel_first_order", "kernel_second_order"): the
        kernel ("linear", "poly", "rbf") and its parameters, the most support
        vectors kept (0: no budget) and the policy removing one; ``dual_average``:
        a first-order kernel model keeps the average of its dual coefficients.
    average : bool
        Report and score the mean of the weights after every round
        (``cwkit.models.average``).
    task : {"classification", "regression"}
        What the rows' targets are: labels (+-1 or class codes) or real numbers
        (a one-output model of shape "first_order", "diagonal" or "full",
        ``cwkit.regression``).
    epsilon : float
        Regression: the half-width of the epsilon-insensitive loss's tube (the PA
        family).
    name, owner : str
        The registered name and the estimator class, for error messages.
    """

    shape: str
    n_classes: int
    n_features: int
    rule: object = None
    strategy: str = TOP1
    k: int = 1
    sigma_update: str = "auto"
    slack: str = "per-constraint"
    C: float = 1.0
    alpha: float = 0.0
    beta: float = 0.0
    phi: float = 0.0
    r: float = 1.0
    a: float = 1.0
    direct: bool = False
    eta: float = 0.0
    lam: float = 0.0
    delta: float = 0.0
    bpa_variant: str = "bpa1"
    rho: float = 0.0
    batch_size: int = 1
    sliding: bool = False
    kernel: str = "linear"
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 0.0
    budget: int = 0
    budget_policy: str = "oldest"
    dual_average: bool = False
    average: bool = False
    task: str = CLASSIFICATION
    epsilon: float = 0.0
    name: str = ""
    owner: str = ""

    @property
    def kind(self):
        """The case to build: BINARY for two classes or one regression output, else the
        multi-class strategy."""
        return BINARY if self.n_classes == 2 or self.task == REGRESSION else self.strategy

    @property
    def task_code(self):
        """The compiled core's code of ``task`` (``cwkit._core.Task``)."""
        return TASK_CODES[self.task]

    @property
    def kk(self):
        """Competitors per update of a top-k model: k capped at K - 1."""
        return min(int(self.k), self.n_classes - 1)


class PassResult(NamedTuple):
    """What one pass of a model reports."""

    rounds: int          #: rows processed (up to the one that stopped the pass)
    mistakes: int        #: progressive prediction mistakes
    updates: int         #: updates that changed the state
    loss_sum: float      #: sum of the losses before each update
    status: int          #: a ``cwkit._core.Status``
    pos: int             #: the row (of this call) the pass stopped at, or NO_ROW
    #: the first row (of this call) whose update took a variance below the smallest
    #: normal double (diagonal CW-Var, CW-Stdev and direct AROW), or NO_ROW
    collapsed: int = NO_ROW
    scores: object = None  #: the rounds' scores, when asked for (:meth:`Model.run_with`)


class Model(ABC):
    """The interface of every model (binary or multi-class).

    Subclasses set ``state`` (a dict of named float64 arrays, saved as is) in
    ``__init__(spec)`` and define ``run``, ``weights`` and ``scores``; the
    others have defaults.

    * ``run(rows, target, order, bias) -> PassResult``: one pass over
      ``rows`` in ``order``; ``target`` is +-1 (binary) or class codes.  A
      failing row stops the pass with its status and position and leaves the
      state as it was before that row; a model never raises for a row.
      ``run_with`` (defined here) adds the protocol's options: rounds counted
      against clean labels, the rounds' scores.
    * ``weights()``: (D,) binary, (K, D) multi-class, the intercept last.
    * ``scores(rows, bias)``: (n,) binary, (n, K) multi-class.
    * ``last_weights()``, ``last_scores(rows, bias)``: of the last iterate of a
      model that averages (the same model without averaging), else as above.
    * ``variances()``, ``covariance()``: of Gaussian-weight models, else None.
    * ``proba(rows, bias)``: where the weights are Gaussian.
    * ``status_detail(status)``: the model's explanation of a status (or "").
    """

    state = None
    #: The number of classes of a multi-class model (None: binary).
    K = None
    #: Whether ``run`` reads the rows' matrix (``Rows.X``), not only their view.
    reads_matrix = False
    #: Whether ``run`` takes rows its pass checks (``RowView.unchecked``): it stops
    #: with the status ROW_UNCHECKED at the first row that is not valid.
    checks_rows = False

    def __getstate__(self):
        """The model without the buffers with room of ``cwkit.models.growth`` and the
        plan that holds their addresses (a copy's arrays are its own: its next
        widening makes its own buffers)."""
        state = dict(self.__dict__)
        state.pop("_in_room", None)
        state.pop("_rooms", None)
        return state

    @abstractmethod
    def run(self, rows, target, order, bias):
        """One pass over ``rows`` in ``order``: a :class:`PassResult`."""

    def run_with(self, rows, target, order, bias, *, clean=None, scores=False):
        """:meth:`run`, with the options of the online protocol.

        Parameters
        ----------
        rows, target, order, bias
            As for :meth:`run`.
        clean : ndarray, optional
            One label per row of ``rows``, encoded as ``target`` (+-1 binary, class
            codes multi-class): the rounds are counted against it (``mistakes``)
            while ``target`` is learnt, the label-noise protocol of [AROW13]
            Sect. 5.  ``loss_sum`` stays the loss of the label learnt.
        scores : bool
            Return in ``PassResult.scores`` the pre-update score each counted
            round was predicted with, (rounds,) binary or (rounds, K) multi-class
            (row k for ``order[k]``); not asked for, nothing is written.

        Notes
        -----
        The scores are those the driver predicts with, which are the test-time
        scores of the state before the row except for: the averaged Perceptron
        (the online w, not the average); the binary full-covariance SOP (mu.x,
        whose sign is its prediction; ``scores`` divides it by 1 + x^T Sigma x);
        mini-batch PA in blocks (the model before the row's group, not the
        provisional model of an incomplete group); and the first-order rules whose
        w = s v is scaled, s (v.x) rather than (s v).x.  The diagonal SOP gives its
        per-row prediction sum_i vv_i x_i / (A_i + x_i^2) (per block, multi-class).
        A pass that stops at a row (status not OK) reports no scores (None).
        """
        n = len(order)
        out = np.empty(n if self.K is None else (n, self.K)) if scores else None
        view_clean = None if clean is None else np.ascontiguousarray(clean, dtype=np.float64)
        if view_clean is not None or out is not None:
            rows = rows.counting(view_clean, out)
        result = self.run(rows, target, order, bias)
        if out is not None and result.status == _core.Status.OK:
            result = result._replace(scores=out)
        return result

    @abstractmethod
    def weights(self):
        """The weights, intercept last: (D,) binary, (K, D) multi-class."""

    @abstractmethod
    def scores(self, rows, bias):
        """The scores of the rows: (n,) binary, (n, K) multi-class."""

    def last_weights(self):
        """The weights of the last iterate, shaped as :meth:`weights`.

        Contract: for a model that averages (``average=True``, whose :meth:`weights`
        are the mean over the rounds), the weights after its last round, bit for bit
        the :meth:`weights` of the same spec with ``average=False`` after the same
        rows; for any other model, :meth:`weights` itself (this default).  A form
        that averages overrides it and :meth:`last_scores`.
        """
        return self.weights()

    def last_scores(self, rows, bias):
        """The scores of the last iterate, shaped as :meth:`scores`.

        Contract: bit for bit the :meth:`scores` of the same spec with
        ``average=False`` after the same rows (e.g. the per-test-point rule of the
        second-order perceptron, not ``last_weights() . x``); for a model that does
        not average, :meth:`scores` itself (this default).
        """
        return self.scores(rows, bias)

    def named_state(self, state=None):
        """The arrays of `state` (default: this model's ``state``) by the names the
        model file gives them: the state itself, unless the model keeps several of them
        in one array (then views of its parts, which write through)."""
        return self.state if state is None else state

    def from_named(self, named):
        """A state of new arrays holding the arrays `named` (shaped as
        :meth:`named_state`'s)."""
        return {key: np.array(arr) for key, arr in named.items()}

    def feature_layout(self):
        """Where each state array keeps its features: name -> ``((axis, inner, tail),
        ...)``, one triple per feature axis (``cwkit.models.growth.widen`` grows a model
        by it); arrays not named hold nothing per feature."""
        return {}

    def max_features(self):
        """The widest model of this kind (its ``initial_state`` refuses a wider one
        naming the limit), or None: no limit but memory."""
        return None

    def variances(self):
        return None

    def covariance(self):
        return None

    def status_detail(self, status):
        return ""

    def invariants(self):
        """(what must hold, whether it holds) pairs of the state beyond finiteness
        (an iterable, read until the first that does not hold)."""
        return ()

    def state_problem(self):
        """What is wrong with ``state`` (e.g. read from a file), or None.

        Every array must be finite and every pair of :meth:`invariants` hold.
        """
        for key, arr in self.state.items():
            if not np.isfinite(arr).all():
                return f"state array {key!r} holds NaN or inf"
        for what, holds in self.invariants():
            if not holds:
                return what
        return None


def nonnegative(name, values):
    """The invariant "`values` (named `name`) are >= 0", for :meth:`Model.invariants`."""
    return f"{name} must be >= 0", bool((values >= 0).all())


def positive(name, values):
    """The invariant "`values` (named `name`) are > 0", for :meth:`Model.invariants`."""
    return f"{name} must be > 0", bool((values > 0).all())


def counts(name, values, lo, hi):
    """The invariant "`values` are whole numbers in [lo, hi]"."""
    return (f"{name} must be whole numbers in [{lo}, {hi}]",
            bool(((values >= lo) & (values <= hi) & (values == np.round(values))).all()))


class ModelError(ValueError):
    """An online update could not be made (overflow, infeasible constraint).

    Attributes
    ----------
    row : int or None
        The row of the call's X at which the pass stopped.
    reason : str
        What went wrong, without the estimator's name and the row.
    """

    def __init__(self, message, row=None, reason=None):
        super().__init__(message)
        self.row = row
        self.reason = message if reason is None else reason


def raise_status(status, pos, algo, detail=""):
    """Turn a driver status into an exception naming the row (the one error path)."""
    if status == _core.Status.NONFINITE_INPUT:
        reason = detail or ("the score or squared norm of this example is not finite "
                            "(feature values too large for float64 arithmetic); scale the "
                            "features")
    elif status == _core.Status.NONFINITE_STATE:
        reason = ("this update would overflow the model state to inf; the state is left as "
                  "it was before this example. " + (detail or
                  "Scale the features or use stronger regularisation"))
    elif status == _core.Status.INFEASIBLE:
        reason = detail
    elif status == _core.Status.QP_NOT_CONVERGED:
        reason = detail or ("the top-k update's QP (Hildreth) did not converge; the state is "
                            "left as it was before this example. Scale the features or use a "
                            "smaller k")
    else:
        reason = f"driver status {status}"
    raise ModelError(f"{algo}: row {pos}: {reason}", row=int(pos), reason=reason)
