"""Explicit feature maps approximating a kernel, to feed any linear (primal) rule.

For data too large for any budget of support vectors: random Fourier features
([RR07]) for the RBF kernel and the Nyström method ([WS01]) for any kernel of
``cwkit.kernels``.  Both map rows (dense or CSR) to dense rows of
``n_components`` features whose inner products approximate the kernel, so that
``cwkit.make("pa1").fit(rff.fit_transform(X), y)`` is an approximate kernel PA-I
at the cost of a linear one (memory and time per prediction O(n_components d)).
"""
import numpy as np
from ._lazy import issparse

from . import _params
from .models.kernel import kernel_from_dots


def _sqnorms(X):
    return (np.asarray(X.multiply(X).sum(axis=1)).ravel() if issparse(X)
            else np.einsum("ij,ij->i", X, X))


def _rows(X):
    return X.tocsr().astype(np.float64) if issparse(X) else np.asarray(X, dtype=np.float64)


class RandomFourierFeatures:
    """Random Fourier features of the RBF kernel exp(-gamma ||a - b||^2) ([RR07]).

    Parameters
    ----------
    gamma : float > 0, default=1.0
    n_components : int >= 1, default=100
    random_state : int, numpy.random.Generator or None

    Notes
    -----
    z(x) = sqrt(2 / D) cos(W^T x + b), W_ij ~ N(0, 2 gamma), b_j ~ U[0, 2 pi]: by
    Bochner's theorem E[z(a).z(b)] = k(a, b), with an error O(1 / sqrt(D)) ([RR07]
    Claim 1).  ``fit`` needs only the number of features.
    """

    def __init__(self, gamma=1.0, n_components=100, random_state=None):
        self.gamma = gamma
        self.n_components = n_components
        self.random_state = random_state

    def fit(self, X, y=None):
        _params.validate("RandomFourierFeatures", {"gamma": _params.POSITIVE,
                                                   "n_components": _params.Int(1)},
                         {"gamma": self.gamma, "n_components": self.n_components})
        rng = np.random.default_rng(self.random_state)
        d = X.shape[1]
        self.W_ = rng.normal(scale=np.sqrt(2.0 * self.gamma), size=(d, self.n_components))
        self.b_ = rng.uniform(0.0, 2.0 * np.pi, size=self.n_components)
        return self

    def transform(self, X):
        X = _rows(X)
        return np.sqrt(2.0 / self.n_components) * np.cos(np.asarray(X @ self.W_) + self.b_)

    def fit_transform(self, X, y=None):
        return self.fit(X).transform(X)


class Nystroem:
    """Nyström features of a kernel of ``cwkit.kernels`` ([WS01]).

    Parameters
    ----------
    kernel : {"rbf", "poly", "linear"}, default="rbf"
    gamma, degree, coef0
        As in the kernel estimators (gamma None: 1 / n_features).
    n_components : int >= 1, default=100
        Landmarks: that many rows of the data ``fit`` sees, drawn without replacement.
    random_state : int, numpy.random.Generator or None

    Notes
    -----
    With landmarks L and K_LL = U S U^T: z(x) = k(x, L) U S^-1/2 U^T (eigenvalues
    below 1e-12 of the largest dropped), so z(a).z(b) = k(a, L) K_LL^+ k(L, b),
    exact when a or b is a landmark and, with every row a landmark, K itself.
    """

    def __init__(self, kernel="rbf", gamma=None, degree=3, coef0=0.0, n_components=100,
                 random_state=None):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.n_components = n_components
        self.random_state = random_state

    def _k(self, X, L, sl):
        return kernel_from_dots(np.asarray(X @ L.T.toarray() if issparse(L) else X @ L.T),
                                _sqnorms(X)[:, None], sl[None, :], self.kernel, self.gamma_,
                                self.degree, self.coef0)

    def fit(self, X, y=None):
        _params.validate("Nystroem", {"kernel": _params.Choice("rbf", "poly", "linear"),
                                      "n_components": _params.Int(1)},
                         {"kernel": self.kernel, "n_components": self.n_components})
        X = _rows(X)
        rng = np.random.default_rng(self.random_state)
        m = min(self.n_components, X.shape[0])
        self.gamma_ = 1.0 / X.shape[1] if self.gamma is None else float(self.gamma)
        self.landmarks_ = X[np.sort(rng.choice(X.shape[0], m, replace=False))]
        self.landmark_sqnorms_ = _sqnorms(self.landmarks_)
        S, U = np.linalg.eigh(self._k(self.landmarks_, self.landmarks_,
                                      self.landmark_sqnorms_))
        keep = S > 1e-12 * max(S.max(), 0.0)
        self.normalization_ = (U[:, keep] / np.sqrt(S[keep])) @ U[:, keep].T
        return self

    def transform(self, X):
        return self._k(_rows(X), self.landmarks_, self.landmark_sqnorms_) @ self.normalization_

    def fit_transform(self, X, y=None):
        return self.fit(X).transform(X)
