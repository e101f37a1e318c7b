"""Data for experiments: the papers' synthetic tasks, label noise, binary tasks, shipped data.

* :func:`make_crammer` -- the rotated-Gaussian task of [AROW13] Sect. 5.2 and [ECCW08] Sect. 5;
* :func:`make_twonorm` -- Breiman's twonorm ([GPA13], data set 7);
* :func:`make_drift` -- the four-phase non-stationary stream of [LMC09] Sect. 4.1;
* :func:`flip_labels` -- label noise that is a pure function of (seed, row index), so a
  streamed file gets the same noisy labels whatever its chunking and on every pass;
* :func:`noisy_targets` -- Gaussian noise on regression targets, the same way;
* :func:`binary_tasks` / :func:`task_rows` -- all-pairs and one-vs-all binary tasks
  built from multi-class labels ([AROW13] Sect. 5.3, the 45 MNIST pairs);
* :func:`load_breast_cancer` -- the small real data set shipped inside the package.
"""
from itertools import combinations
from pathlib import Path

import numpy as np

from ._lazy import sparse as sp
from .svmlight import load_svmlight

__all__ = [
    "SHIPPED_DESCRIPTION",
    "SHIPPED_FILE",
    "SHIPPED_N_FEATURES",
    "binary_tasks",
    "flip_labels",
    "load_breast_cancer",
    "make_crammer",
    "make_drift",
    "make_twonorm",
    "noisy_targets",
    "row_uniform",
    "shipped_data_path",
    "task_rows",
]

SHIPPED_FILE = "breast-cancer_scale.svm"
SHIPPED_N_FEATURES = 9
"""Number of features of the shipped data set (the nine cytological attributes)."""
SHIPPED_DESCRIPTION = (
    "UCI Breast Cancer Wisconsin (Original), 683 examples, 9 features scaled to [-1, 1] "
    "(LIBSVM's breast-cancer_scale; labels -1 benign, +1 malignant), shipped with cwkit"
)

# The phase schedule of [LMC09] Sect. 4.1 (Fig. 2): for each phase, the probability of
# each class (P1, P2, N1, N2) at the start and at the end of the phase; linear in between.
DRIFT_CLASSES = ("P1", "P2", "N1", "N2")
_DRIFT_PHASES = (
    ((0.7, 0.0, 0.3, 0.0), (0.5, 0.0, 0.5, 0.0)),
    ((0.5, 0.0, 0.5, 0.0), (0.3, 0.2, 0.5, 0.0)),
    ((0.0, 0.5, 0.2, 0.3), (0.0, 0.5, 0.0, 0.5)),
    ((0.0, 0.5, 0.0, 0.5), (0.0, 0.3, 0.0, 0.7)),
)


def _check_int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _check_positive(name, value):
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return value


def make_crammer(n_samples=1000, *, n_features=20, s_long=10.0, s_short=1.0,
                 noise_variance=2.0, random_state=None):
    """The rotated-Gaussian synthetic task of [AROW13] and [ECCW08].

    Parameters
    ----------
    n_samples : int
        Number of examples ([ECCW08]: 1,000; [AROW13]: 5,000 training, 10,000 test).
    n_features : int, default 20
        Dimension; coordinates beyond the first two are noise.
    s_long, s_short : float, default (10, 1)
        Standard deviations along the long axis ``e_L`` and the short axis ``e_S``.
    noise_variance : float, default 2
        Variance of each noise coordinate (``N(0, 2)`` with 2 the variance).
    random_state : int, numpy.random.Generator or None

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), values in {-1, +1}

    Notes
    -----
    [ECCW08] Sect. 5, [AROW13] Sect. 5.2: coordinates 1-2 are ``z_L e_L + z_S e_S`` with
    ``e_L = (1, 1)/sqrt 2``, ``e_S = (-1, 1)/sqrt 2``, ``z_L ~ N(0, s_L^2)``,
    ``z_S ~ N(0, s_S^2)``; the label is ``sign(z_S)`` (the separator is parallel to the long
    axis, so the set is linearly separable); the other coordinates are
    ``N(0, noise_variance)``. The papers do not state the axis scales; (10, 1)
    reproduces [ECCW08]'s headline numbers best. ``z_S = 0`` (probability 0) is labelled +1.

    Examples
    --------
    >>> X, y = make_crammer(5, random_state=0)
    >>> X.shape, sorted(set(y.tolist())) <= [-1, 1]
    ((5, 20), True)
    """
    n_samples = _check_int("n_samples", n_samples, 1)
    n_features = _check_int("n_features", n_features, 2)
    s_long = _check_positive("s_long", s_long)
    s_short = _check_positive("s_short", s_short)
    noise_variance = _check_positive("noise_variance", noise_variance)
    rng = np.random.default_rng(random_state)
    z_long = rng.normal(0.0, s_long, n_samples)
    z_short = rng.normal(0.0, s_short, n_samples)
    X = np.empty((n_samples, n_features))
    r = np.sqrt(0.5)
    X[:, 0] = r * (z_long - z_short)
    X[:, 1] = r * (z_long + z_short)
    X[:, 2:] = rng.normal(0.0, np.sqrt(noise_variance), (n_samples, n_features - 2))
    y = np.where(z_short >= 0, 1, -1)
    return X, y


def make_twonorm(n_samples=7400, *, n_features=20, random_state=None):
    """Breiman's twonorm: two Gaussians ``N(+-a 1, I)`` with ``a = 2/sqrt(20)``.

    Parameters
    ----------
    n_samples : int, default 7400 (the size of the data set in [GPA13] Table 1)
    n_features : int, default 20
    random_state : int, numpy.random.Generator or None

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), values in {-1, +1}, equiprobable

    Notes
    -----
    L. Breiman, *Bias, variance and arcing classifiers*, TR 460, Berkeley 1996: class +1
    is ``N(a 1, I)``, class -1 is ``N(-a 1, I)``, ``a = 2/sqrt(20)``.
    The Bayes error is ``Phi(-a sqrt(d)) = Phi(-2) = 2.3%`` for d = 20.
    """
    n_samples = _check_int("n_samples", n_samples, 1)
    n_features = _check_int("n_features", n_features, 1)
    rng = np.random.default_rng(random_state)
    y = np.where(rng.random(n_samples) < 0.5, 1, -1)
    a = 2.0 / np.sqrt(20.0)
    X = rng.normal(0.0, 1.0, (n_samples, n_features)) + a * y[:, None]
    return X, y


def drift_probabilities(n_per_phase):
    """Class probabilities (P1, P2, N1, N2) of every example of the [LMC09] stream.

    Returns an array of shape ``(4 * n_per_phase, 4)``: within each phase the
    probabilities move linearly from the phase's start to its end values, evaluated at
    the middle of each example's slot, ``(j + 1/2) / n_per_phase``.
    """
    n_per_phase = _check_int("n_per_phase", n_per_phase, 1)
    frac = (np.arange(n_per_phase) + 0.5) / n_per_phase
    blocks = []
    for start, end in _DRIFT_PHASES:
        start, end = np.asarray(start), np.asarray(end)
        blocks.append(start + frac[:, None] * (end - start))
    return np.vstack(blocks)


def make_drift(n_per_phase=800, *, n_features=1000, topic_size=20, p_topic=0.3,
               p_background=0.01, random_state=None, return_classes=False):
    """The four-phase non-stationary stream of [LMC09] with sparse 0/1 features.

    Parameters
    ----------
    n_per_phase : int, default 800
        Examples per phase ([LMC09]: 800 for the text sets, 500 for USPS).
    n_features : int, default 1000
        Vocabulary size; must be at least ``3 * topic_size``.
    topic_size : int, default 20 (even)
        Number of indicator words of each class.
    p_topic, p_background : float
        Probability that a word of the example's class topic, resp. any other word, is on.
    random_state : int, numpy.random.Generator or None
    return_classes : bool, default False
        Also return the class of each example as an index into ``("P1", "P2", "N1", "N2")``.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (4 * n_per_phase, n_features), values 0/1
    y : ndarray, +1 for P1 and P2, -1 for N1 and N2
    classes : ndarray of int (only with ``return_classes``)

    Notes
    -----
    The class schedule is [LMC09] Sect. 4.1 (Fig. 2): phase 1, P(P1) 0.7 -> 0.5 and
    P(N1) 0.3 -> 0.5; phase 2, P1 0.5 -> 0.3, P2 0 -> 0.2, N1 0.5; phase 3, P2 0.5,
    N1 0.2 -> 0, N2 0.3 -> 0.5; phase 4, P2 0.5 -> 0.3, N2 0.5 -> 0.7; the classes are
    drawn independently per example (:func:`drift_probabilities`). Phase 3 starts with a
    discontinuous shift: P1 disappears and N2 appears.

    The paper draws documents of four newsgroups; cwkit generates them. Each class has a
    topic of ``topic_size`` indicator words, built from halves ``A1 A2 B1 B2 C D``:
    P1 = A1 A2, N1 = B1 B2, P2 = B1 C, N2 = A1 D. The shared halves make words change
    meaning at the phase-3 shift, as the word *iLearn* does in the paper's Sect. 1: B1
    indicated N1 (negative) and now indicates P2 (positive); A1 indicated P1 and now
    indicates N2. Word ``i`` of the example's topic is on with probability ``p_topic``,
    every other word with probability ``p_background``. This is cwkit's construction;
    the paper does not publish its documents.
    """
    n_per_phase = _check_int("n_per_phase", n_per_phase, 1)
    topic_size = _check_int("topic_size", topic_size, 2)
    if topic_size % 2:
        raise ValueError(f"topic_size must be even, got {topic_size}")
    n_features = _check_int("n_features", n_features, 3 * topic_size)
    for name, p in (("p_topic", p_topic), ("p_background", p_background)):
        if not 0.0 <= float(p) <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {p!r}")
    rng = np.random.default_rng(random_state)
    half = topic_size // 2
    a1, a2, b1, b2, c, d = (np.arange(k * half, (k + 1) * half) for k in range(6))
    topics = [np.r_[a1, a2], np.r_[b1, c], np.r_[b1, b2], np.r_[a1, d]]  # P1 P2 N1 N2
    probs = drift_probabilities(n_per_phase)
    n = probs.shape[0]
    cls = (rng.random(n)[:, None] > np.cumsum(probs, axis=1)).sum(axis=1)
    cls = np.minimum(cls, 3)  # guards the rounding of cumsum's last entry below 1
    on = np.empty((n, n_features))
    on.fill(float(p_background))
    for k, topic in enumerate(topics):
        on[np.ix_(cls == k, topic)] = float(p_topic)
    X = sp.csr_matrix((rng.random((n, n_features)) < on).astype(np.float64))
    y = np.where(cls <= 1, 1, -1)
    if return_classes:
        return X, y, cls
    return X, y


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x):
    """Steele, Lea, Flood's SplitMix64 finalizer on a uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def row_uniform(seed, index, stream=0):
    """Uniform numbers in [0, 1) that depend only on ``(seed, stream, index)``.

    Used wherever a random decision is attached to an example of a stream (label noise,
    cross-validation folds): the decision for row ``i`` is the same whatever the chunk
    sizes and on every pass, without storing anything per row.

    Notes
    -----
    ``u = splitmix64(splitmix64(splitmix64(seed) + stream) + index) >> 11`` scaled by
    ``2^-53`` (SplitMix64: Steele, Lea, Flood, OOPSLA 2014).
    """
    index = np.asarray(index, dtype=np.int64).astype(np.uint64)
    with np.errstate(over="ignore"):
        key = _splitmix64(_splitmix64(np.uint64(int(seed) % 2**64)) + np.uint64(stream))
        bits = _splitmix64(index + key) >> np.uint64(11)
    return bits.astype(np.float64) * 2.0**-53


def flip_labels(y, rate, *, classes=None, seed=0, index=None):
    """Inject label noise: each label is replaced with probability ``rate``.

    Parameters
    ----------
    y : array-like of shape (n,)
        Clean labels.
    rate : float in [0, 1]
    classes : array-like, optional
        The label set (default: the distinct values of ``y``). With two classes a noisy
        label is the other class; with more, another class uniformly at random.
    seed : int
    index : array-like of int, optional
        Row numbers of ``y`` in its stream (default ``0..n-1``); the noise of a row depends
        only on ``(seed, index)``.

    Returns
    -------
    y_noisy : ndarray
    flipped : ndarray of bool

    Notes
    -----
    [AROW13] Sect. 5.3: "randomly and independently flipping each binary label with a
    fixed probability"; multi-class (Sect. 5.4): "randomly select another label to replace
    the correct label".
    """
    y = np.asarray(y)
    rate = float(rate)
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"noise rate must be in [0, 1], got {rate!r}")
    classes = np.unique(y) if classes is None else np.asarray(classes)
    pos = np.searchsorted(classes, y)
    inside = pos < classes.size
    if not inside.all() or np.any(classes[pos[inside]] != y[inside]):
        raise ValueError("flip_labels: y has labels that are not in classes")
    index = np.arange(y.size) if index is None else np.asarray(index)
    flipped = row_uniform(seed, index, stream=1) < rate
    if classes.size < 2:
        flipped[:] = False
        return y.copy(), flipped
    # another class, uniformly: shift the class position by 1..K-1 (mod K)
    shift = 1 + np.floor(row_uniform(seed, index, stream=2) * (classes.size - 1)).astype(np.intp)
    y_noisy = y.copy()
    y_noisy[flipped] = classes[(pos[flipped] + shift[flipped]) % classes.size]
    return y_noisy, flipped


#: The row_uniform streams of the Gaussian target noise (1, 2: label noise; 3, 4: the
#: evaluation's folds and tuning run).
_TARGET_NOISE_STREAMS = (5, 6)


def noisy_targets(y, sd, *, seed=0, index=None):
    """Regression targets with Gaussian noise of standard deviation ``sd`` added.

    Parameters
    ----------
    y : array-like of shape (n,)
        Clean targets.
    sd : float
        The standard deviation of the noise, finite and >= 0 (0: ``y`` unchanged).
    seed : int
    index : array-like of int, optional
        Row numbers of ``y`` in its stream (default ``0..n-1``); the noise of a row depends
        only on ``(seed, index)``, so a streamed file gets the same noisy targets whatever
        its chunking and on every pass.

    Returns
    -------
    ndarray of float64

    Notes
    -----
    The noise of row ``i`` is ``sd * sqrt(-2 ln(1 - u)) cos(2 pi v)`` with ``u`` and ``v``
    the :func:`row_uniform` draws of row ``i`` on streams 5 and 6: the Box-Muller
    transform of two independent uniforms is a standard normal (G. E. P. Box and M. E.
    Muller, *A note on the generation of random normal deviates*, Ann. Math. Statist. 29,
    1958); ``1 - u`` lies in (0, 1], so the logarithm is finite.
    """
    y = np.asarray(y, dtype=np.float64)
    sd = float(sd)
    if not 0.0 <= sd < np.inf:
        raise ValueError(f"noise standard deviation must be a finite number >= 0, got {sd!r}")
    if sd == 0.0:
        return y.copy()
    index = np.arange(y.size) if index is None else np.asarray(index)
    u, v = (row_uniform(seed, index, stream=s) for s in _TARGET_NOISE_STREAMS)
    return y + sd * np.sqrt(-2.0 * np.log1p(-u)) * np.cos(2.0 * np.pi * v)


def binary_tasks(classes, mode):
    """The binary tasks of a label set: a list of ``(name, positive, negative)``.

    ``mode="all-pairs"`` gives one task per pair ``a < b`` (positive ``a``, negative
    ``b``; other rows dropped), K(K-1)/2 tasks; ``mode="one-vs-all"`` gives one task per
    class (positive the class, negative all others), K tasks. [AROW13] Sect. 5.3 builds the
    45 MNIST pairs and 10 one-vs-all tasks this way.
    """
    classes = [c for c in np.unique(np.asarray(classes)).tolist()]
    if len(classes) < 2:
        raise ValueError(f"binary tasks need at least two classes, got {classes}")
    if mode == "all-pairs":
        return [(f"{_fmt(a)}-vs-{_fmt(b)}", (a,), (b,)) for a, b in combinations(classes, 2)]
    if mode == "one-vs-all":
        return [(f"{_fmt(a)}-vs-all", (a,), tuple(c for c in classes if c != a))
                for a in classes]
    raise ValueError(f"mode must be 'all-pairs' or 'one-vs-all', got {mode!r}")


def task_rows(y, positive, negative):
    """Rows of a binary task and their labels: ``(mask, y_binary)`` with ``y_binary`` in +-1."""
    y = np.asarray(y)
    pos = np.isin(y, positive)
    mask = pos | np.isin(y, negative)
    return mask, np.where(pos[mask], 1, -1)


def _fmt(label):
    """A label as text: integral floats without the '.0'."""
    if isinstance(label, float) and label.is_integer():
        return str(int(label))
    return str(label)


def shipped_data_path():
    """Path of the data file shipped inside the package (see ``SHIPPED_DESCRIPTION``)."""
    return Path(__file__).resolve().parent / "data" / SHIPPED_FILE


def load_breast_cancer():
    """The shipped data set as ``(X, y)``: CSR of shape (683, ``SHIPPED_N_FEATURES``),
    labels in {-1, +1}.

    W. H. Wolberg and O. L. Mangasarian, *Multisurface method of pattern separation for
    medical diagnosis applied to breast cytology*, PNAS 87, 1990; UCI Machine Learning
    Repository (CC BY 4.0), in the scaled form distributed with LIBSVM's data sets.
    """
    return load_svmlight(shipped_data_path(), n_features=SHIPPED_N_FEATURES, zero_based=False)
