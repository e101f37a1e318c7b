"""Plain-numpy references of the regression rules, one example at a time.

Written from the papers (docs/references.md) with dense vectors and matrices; it never
imports cwkit.  Conventions as in ``reference.py``: the intercept is an augmented
constant feature of value ``b`` appended last, a round predicts with the state before
its update.

* PA, PA-I, PA-II ([PA06] Sect. 4): loss ``l = max(0, |y - w.x| - eps)``,
  ``n = ||x||^2``; if ``l > 0`` and ``n > 0``: ``tau = l / n`` (PA, times ``min(s, 1)``
  for importance weight s), ``min(s C, l / n)`` (PA-I), ``l / (n + 1 / (2 s C))``
  (PA-II); ``w <- w + sign(y - w.x) tau x``.
* AROW regression, recursive least squares ([AROW13] Sect. 3, [VC11]): on every round
  with weight s > 0, ``r_s = r / s``, ``v = x' Sigma x``:
  ``mu <- mu + (y - mu.x) Sigma x / (v + r_s)``; full ``Sigma <- Sigma - Sigma x x'
  Sigma / (v + r_s)``; diagonal "inverse" ``1/sigma_i += x_i^2 / r_s`` (evaluated as
  ``sigma_i / (1 + sigma_i x_i^2 / r_s)``), "direct" ``sigma_i -= sigma_i^2 x_i^2 /
  (v + r_s)``.

Public: :func:`regression_run` (the public state after every round),
:func:`pa_step`, :func:`arow_step`.
"""
import numpy as np


def pa_step(w, x, y, variant, C, eps, s=1.0):
    """One PA regression update of ``w`` on augmented ``x``, target ``y``."""
    res = y - float(w @ x)
    loss = max(0.0, abs(res) - eps)
    n = float(x @ x)
    if loss == 0.0 or n == 0.0 or s == 0.0:
        return w.copy()
    if variant == "pa":
        tau = min(s, 1.0) * loss / n
    elif variant == "pa1":
        tau = min(s * C, loss / n)
    else:
        tau = loss / (n + 1.0 / (2.0 * s * C))
    return w + np.sign(res) * tau * x


def arow_step(mu, sigma, x, y, r, covariance="full", diag_update="inverse", s=1.0):
    """One AROW regression (RLS) update of ``(mu, sigma)``; sigma (D, D) or (D,)."""
    if s == 0.0:
        return mu.copy(), sigma.copy()
    rs = r / s
    sx = sigma @ x if covariance == "full" else sigma * x
    v = float(x @ sx)
    res = y - float(mu @ x)
    mu = mu + res / (v + rs) * sx
    if covariance == "full":
        sigma = sigma - np.outer(sx, sx) / (v + rs)
    elif diag_update == "inverse":
        sigma = sigma / (1.0 + sigma * x * x / rs)
    else:
        sigma = sigma - sigma * sigma * x * x / (v + rs)
    return mu, sigma


def regression_run(rule, X, y, *, b=1.0, weights=None, C=1.0, epsilon=0.1, r=1.0, a=1.0,
                   covariance="full", diag_update="inverse"):
    """An online pass over ``X`` (n, d) in order: per round, ``(prediction, coef,
    intercept, sigma)`` after its update (sigma None for PA; the augmented
    covariance or variances for AROW).  ``b``: the constant feature's value (0: no
    intercept)."""
    X = np.asarray(X, dtype=np.float64)
    Xa = np.hstack([X, np.full((len(X), 1), float(b))])
    D = Xa.shape[1]
    w = np.zeros(D)
    sigma = a * (np.eye(D) if covariance == "full" else np.ones(D))
    weights = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64)
    out = []
    for x, yt, s in zip(Xa, np.asarray(y, dtype=np.float64), weights):
        pred = float(w @ x)
        if rule == "arow":
            w, sigma = arow_step(w, sigma, x, yt, r, covariance, diag_update, s)
        else:
            w = pa_step(w, x, yt, rule, C, epsilon, s)
        out.append((pred, w[:-1].copy(), w[-1] * b, None if rule != "arow" else sigma.copy()))
    return out
