"""Plain-numpy dual (kernel) references of the rules with a kernel form.

One example at a time, the support set kept as a list of rows and a dense
coefficient array, kernel matrices computed whole by numpy.  Written from the
primal rules of ``reference.py`` with every inner product replaced by
k~(a, b) = k(a, b) + bias^2 (the augmented intercept feature); never imports cwkit.

Budget: after an update that makes the support set exceed ``budget``, one
support vector other than the newest is removed: the oldest ("oldest"), or the
one of the smallest ||coef_j||^2 k~(x_j, x_j), ties to the oldest ("smallest").
"""
import numpy as np

from reference import _cw_stdev_alpha, _cw_stdev_sqrt_u, _cw_var_alpha


def gram(A, B, kernel, gamma=1.0, degree=3, coef0=0.0, bias=1.0):
    """k~(A_i, B_j) for dense rows A, B."""
    A = np.atleast_2d(A)
    B = np.atleast_2d(B)
    dot = A @ B.T
    if kernel == "linear":
        k = dot
    elif kernel == "poly":
        k = (gamma * dot + coef0) ** degree
    else:
        d = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * dot
        k = np.exp(-gamma * np.maximum(d, 0.0))
    return k + bias * bias


def _victim(coef, kdiag, policy):
    if policy == "oldest":
        return 0
    q = (coef[:-1] ** 2).sum(1) * kdiag[:-1]
    # ties (to rounding: numpy's diagonal of an RBF Gram matrix is 1 only to rounding)
    return int(np.flatnonzero(q <= q.min() * (1 + 1e-12))[0])


def first_order_tau(rule, m, n, wn2, wx, p):
    """(tau, Z) of the primal first-order rules ([PA06], [GPA13], [LMC09]); tau 0: none."""
    loss = 1.0 - m
    if n <= 0:
        return 0.0, 1.0
    if rule in ("perceptron", "avg-perceptron"):
        return (1.0 if m <= 0 else 0.0), 1.0
    if rule == "pa-ls":
        return loss / (n + 0.5 / p["C"]), 1.0
    if loss <= 0:
        return 0.0, 1.0
    if rule == "pa":
        return loss / n, 1.0
    if rule == "pa1":
        return min(p["C"], loss / n), 1.0
    if rule == "pa2":
        return loss / (n + 0.5 / p["C"]), 1.0
    if rule == "reg-pa":
        return (loss + p["alpha"]) / n, 1.0 + p["alpha"]
    if rule == "soft-reg-pa":
        return ((loss + p["alpha"]) / (n + (1 + p["alpha"]) / (2 * p["C"])), 1.0 + p["alpha"])
    if rule == "l2-pa":
        b2n = p["beta"] ** 2 * n
        if b2n <= 1:
            raise ValueError("l2-pa infeasible")
        Z = max(1.0, np.sqrt(max(0.0, (wn2 * n - wx * wx) / (b2n - 1))))
        return (loss + Z - 1.0) / n, Z
    raise ValueError(rule)


def first_order_run(rule, X, y, K=2, *, kernel="rbf", kp=None, bias=1.0, budget=None,
                    policy="oldest", **p):
    """Yield (support row ids, dual coefficients (n, 1 or K), mistake) after every round.

    Binary: y in {-1, +1}; multi-class (K > 2) top-1: y class codes.
    """
    kp = kp or {}
    X = np.asarray(X, float)
    width = 1 if K == 2 else K
    ids, coef, u, t = [], np.zeros((0, width)), np.zeros((0, width)), 0
    for i in range(len(X)):
        k = gram(X[ids], X[i], kernel, bias=bias, **kp)[:, 0] if ids else np.zeros(0)
        n1 = gram(X[i], X[i], kernel, bias=bias, **kp)[0, 0]
        sc = coef.T @ k
        Kss = gram(X[ids], X[ids], kernel, bias=bias, **kp) if ids else np.zeros((0, 0))
        wn2 = float(np.trace(coef.T @ Kss @ coef))
        t += 1
        if width == 1:
            m = y[i] * sc[0]
            mistake = m <= 0
            tau, Z = first_order_tau(rule, m, n1, wn2, sc[0], p)
            new = np.array([tau * y[i]])
        else:
            yhat = int(np.argmax(sc))
            mistake = yhat != y[i]
            others = np.where(np.arange(K) == y[i], -np.inf, sc)
            c = yhat if rule in ("perceptron", "avg-perceptron") else int(np.argmax(others))
            m = sc[y[i]] - sc[c]
            if rule in ("perceptron", "avg-perceptron"):
                tau, Z = (1.0 if mistake else 0.0), 1.0
            else:
                tau, Z = first_order_tau(rule, m, 2 * n1, wn2, m, p)
            new = np.zeros(K)
            new[y[i]], new[c] = tau, -tau
        if tau != 0:
            ids.append(i)
            coef = np.vstack([coef, new]) / Z
            u = np.vstack([u, t * new])
            if budget is not None and len(ids) > budget:
                kd = np.diag(gram(X[ids], X[ids], kernel, bias=bias, **kp))
                j = _victim(coef, kd, policy)
                del ids[j]
                coef = np.delete(coef, j, 0)
                u = np.delete(u, j, 0)
        if rule == "avg-perceptron":
            yield list(ids), ((t + 1) * coef - u) / t, mistake
        else:
            yield list(ids), coef.copy(), mistake


def _second_order_step(rule, m, v, a, r, phi):
    """(alpha, beta) of the full-covariance step, 0 for no update."""
    alpha = beta = 0.0
    if rule in ("arow", "arow-h") and 1 - m > 0:
        beta = 1.0 / (v + r)
        alpha = (1 - m) * beta if rule == "arow" else min(0.5 / r, (1 - m) / v)
    elif rule == "cw" and v > 0:
        alpha = max(0.0, _cw_var_alpha(m, v, phi))
        beta = 2 * alpha * phi / (1 + 2 * alpha * phi * v)
    elif rule == "cw-stdev" and v > 0:
        alpha = max(0.0, _cw_stdev_alpha(m, v, phi))
        if alpha > 0:
            beta = alpha * phi / (_cw_stdev_sqrt_u(alpha, v, phi) + v * alpha * phi)
    return alpha, beta


def second_order_top1_run(rule, X, y, K, *, kernel="rbf", kp=None, bias=1.0, a=1.0, r=1.0,
                          eta=0.9):
    """Yield (support row ids, dual coefficients (n, K), mistake) after every round of the
    dual top-1 rule over the stacked blocks: items (x_j, e_j = e_{y_j} - e_{c_j}),
    <Phi_i, Phi_j> = (e_i.e_j) k~(x_i, x_j); Delta = f(x, y) - f(x, c) for the
    highest-scoring c != y."""
    from scipy.special import ndtri
    kp = kp or {}
    X = np.asarray(X, float)
    phi = float(ndtri(eta))
    ids, E, mu, Z = [], np.zeros((0, K)), np.zeros(0), np.zeros((0, 0))
    for i in range(len(X)):
        k = gram(X[ids], X[i], kernel, bias=bias, **kp)[:, 0] if ids else np.zeros(0)
        kxx = gram(X[i], X[i], kernel, bias=bias, **kp)[0, 0]
        sc = (mu[:, None] * E).T @ k
        mistake = int(np.argmax(sc)) != y[i]
        c = int(np.argmax(np.where(np.arange(K) == y[i], -np.inf, sc)))
        d = np.zeros(K)
        d[y[i]], d[c] = 1.0, -1.0
        g = (E @ d) * k
        v = 2 * a * kxx + g @ Z @ g
        alpha, beta = _second_order_step(rule, sc[y[i]] - sc[c], v, a, r, phi)
        if alpha > 0:
            cv = np.append(Z @ g, a)
            mu = np.append(mu, 0.0) + alpha * cv
            Z = np.pad(Z, ((0, 1), (0, 1))) - beta * np.outer(cv, cv)
            E = np.vstack([E, d])
            ids.append(i)
        yield list(ids), mu[:, None] * E, mistake


def second_order_run(rule, X, y, *, kernel="rbf", kp=None, bias=1.0, a=1.0, r=1.0,
                     eta=0.9, budget=None, policy="oldest"):
    """Yield (support row ids, coef (n, 1), Z, mistake) after every round of the dual
    CW-Var / CW-Stdev / AROW / AROW-H: mu = sum coef_j phi(x_j),
    Sigma = a I + Phi^T Z Phi ([AROW13] Sect. 4)."""
    from scipy.special import ndtri
    kp = kp or {}
    X = np.asarray(X, float)
    phi = float(ndtri(eta))
    ids, mu, Z = [], np.zeros(0), np.zeros((0, 0))
    for i in range(len(X)):
        k = gram(X[ids], X[i], kernel, bias=bias, **kp)[:, 0] if ids else np.zeros(0)
        kxx = gram(X[i], X[i], kernel, bias=bias, **kp)[0, 0]
        dot = mu @ k
        v = a * kxx + k @ Z @ k
        m = y[i] * dot
        mistake = m <= 0
        alpha, beta = _second_order_step(rule, m, v, a, r, phi)
        if alpha > 0:
            c = np.append(Z @ k, a)
            mu = np.append(mu, 0.0) + alpha * y[i] * c
            Z = np.pad(Z, ((0, 1), (0, 1))) - beta * np.outer(c, c)
            ids.append(i)
            if budget is not None and len(ids) > budget:
                kd = np.diag(gram(X[ids], X[ids], kernel, bias=bias, **kp))
                j = _victim(mu[:, None], kd, policy)
                del ids[j]
                mu = np.delete(mu, j)
                Z = np.delete(np.delete(Z, j, 0), j, 1)
        yield list(ids), mu[:, None].copy(), Z.copy(), mistake
