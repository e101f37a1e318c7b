"""Plain-numpy dual (kernel) references of the rules with a kernel form.

One example at a time, the support set kept as a list of rows and a dense
coefficient array, kernel matrices computed whole by numpy.  Written from the
primal rules of ``reference.py`` with every inner product replaced by
k~(a, b) = k(a, b) + bias^2 (the augmented intercept feature); never imports cwkit.

Budget: after an update that makes the support set exceed ``budget``, one
support vector other than the newest is removed: the oldest ("oldest"), after the
Forgetron's shrinking (Dekel, Shalev-Shwartz & Singer 2008) for the rules with no
shrinkage of their own; the one of the smallest ||coef_j||^2 k~(x_j, x_j)
("smallest"); or of the smallest max_c |coef_j,c| ("shrink", the regularized PA
rules); ties to the oldest.

Intercept: ``bias=None`` is the kernel forms' default, bias^2 = 0.1 for RBF (a tenth of
its range) and 1 for the other kernels.

Second-order rules (``projected_removal``): the removed item's coefficient is first
projected onto the kept items (the ridge least squares d = (K_kept + lam I)^-1 k_j,
lam = ``PROJECTION_RIDGE``), "smallest" choosing the item of the least
mu_j^2 (k~_jj + lam - k_j^T (K_kept + lam I)^-1 k_j), without the Forgetron's
shrinking; the item then leaves Z by the Schur complement of its diagonal entry
(``schur_remove``), which keeps Sigma = a I + Phi^T Z Phi positive semi-definite.

Averaging: the coefficients after every round summed (a removed vector's sum
removed with it), divided by the rounds.
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


OWN_SHRINK = ("reg-pa", "l2-pa", "soft-reg-pa")


def default_bias(kernel, bias=None):
    """`bias`, or the kernel forms' default when None: sqrt(0.1) for RBF, else 1."""
    if bias is not None:
        return bias
    return np.sqrt(0.1) if kernel == "rbf" else 1.0


def forgetron_phi(W, Kss, Q, M):
    """(phi, Psi) of the Forgetron's shrinking step before the oldest of the weights W
    (n, width; f_c = sum_j W[j, c] k~(x_j, .)) is removed: the largest phi in (0, 1]
    with Psi(sigma phi, phi mu) + Q <= 15 M / 32, Psi(l, m) = l^2 + 2 l - 2 l m,
    sigma = max_c |W[0, c]| the removed weight and sigma mu = W[0] . f(x_0)."""
    sigma = np.abs(W[0]).max()
    smu = W[0] @ (W.T @ Kss[:, 0])
    # Psi(sigma phi, phi mu) = (sigma^2 - 2 sigma mu) phi^2 + 2 sigma phi
    poly = np.array([sigma ** 2 - 2 * smu, 2 * sigma, Q - 15 * M / 32])
    if np.polyval(poly, 1.0) <= 0 or poly[2] >= 0:
        # (Q >= 15 M / 32: no phi > 0 meets the bound, which happens only when one
        # update removes several; the removal is then plain)
        phi = 1.0
    else:
        roots = np.roots(poly) if poly[0] != 0 else np.array([-poly[2] / poly[1]])
        roots = roots[np.isreal(roots)].real
        phi = roots[(roots > 0) & (roots <= 1)].min()
    return phi, np.polyval(poly[:2].tolist() + [0.0], phi)


def _budget_step(X, ids, W, Q, M, policy, forget, kernel, kp, bias):
    """One removal: (the victim's position, the weights W (n, width) after the
    Forgetron's shrink when `forget`, Q)."""
    Kss = gram(X[ids], X[ids], kernel, bias=bias, **kp)
    if forget:
        phi, psi = forgetron_phi(W, Kss, Q, M)
        W = phi * W
        Q += psi
    return _victim(W, np.diag(Kss), policy), W, Q


def _victim(coef, kdiag, policy):
    if policy == "oldest":
        return 0
    if policy == "shrink":
        q = np.abs(coef[:-1]).max(1)
        return int(np.flatnonzero(q == q.min())[0])
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


def first_order_run(rule, X, y, K=2, *, kernel="rbf", kp=None, bias=None, budget=None,
                    policy="oldest", average=False, **p):
    """Yield (support row ids, dual coefficients (n, 1 or K), mistake) after every round.

    Binary: y in {-1, +1}; multi-class (K > 2) top-1: y class codes.
    """
    kp = kp or {}
    bias = default_bias(kernel, bias)
    X = np.asarray(X, float)
    width = 1 if K == 2 else K
    ids, coef, acc, t = [], np.zeros((0, width)), np.zeros((0, width)), 0
    Q = M = 0.0
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
            M += 1
            coef = np.vstack([coef, new]) / Z
            acc = np.vstack([acc, np.zeros(width)])
            if budget is not None and len(ids) > budget:
                j, coef, Q = _budget_step(X, ids, coef, Q, M, policy,
                                          policy == "oldest" and rule not in OWN_SHRINK,
                                          kernel, kp, bias)
                del ids[j]
                coef = np.delete(coef, j, 0)
                acc = np.delete(acc, j, 0)
        acc = acc + coef
        if rule == "avg-perceptron" or average:
            yield list(ids), acc / t, mistake
        else:
            yield list(ids), coef.copy(), mistake


def _second_order_step(rule, m, v, a, r, phi):
    """(alpha, beta) of the full-covariance step, 0 for no update (also when
    v = x^T Sigma x <= 0, which a positive semi-definite Sigma gives only in rounding)."""
    alpha = beta = 0.0
    if v <= 0:
        return alpha, beta
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


PROJECTION_RIDGE = 1e-6


def projected_removal(Kss, mu, policy):
    """(the victim's position, mu with its coefficient projected onto the others and
    removed) for the items' Gram matrix Kss (n, n) and coefficients mu (n,)."""
    n = len(mu)
    ridge = PROJECTION_RIDGE * np.eye(n - 1)

    def projection(j):
        keep = np.arange(n) != j
        return keep, np.linalg.solve(Kss[np.ix_(keep, keep)] + ridge, Kss[keep, j])

    def residual(j):
        keep, d = projection(j)
        return mu[j] ** 2 * (Kss[j, j] + PROJECTION_RIDGE - Kss[keep, j] @ d)

    j = 0
    if policy == "smallest":
        q = np.array([residual(j) for j in range(n - 1)])
        j = int(np.flatnonzero(q <= q.min() * (1 + 1e-9))[0])     # ties to rounding
    keep, d = projection(j)
    return j, mu[keep] + mu[j] * d


def schur_remove(Z, j):
    """Z without support item j: the Schur complement of Z_jj,
    Z_-j,-j - Z_-j,j Z_j,-j / Z_jj (Z is negative semi-definite; Z_jj = 0: its row is 0),
    so that Sigma = a I + Phi^T Z Phi stays positive semi-definite."""
    keep = np.arange(len(Z)) != j
    rest = Z[np.ix_(keep, keep)]
    if Z[j, j] < 0:
        rest = rest - np.outer(Z[keep, j], Z[keep, j]) / Z[j, j]
    return rest


def second_order_top1_run(rule, X, y, K, *, kernel="rbf", kp=None, bias=None, a=1.0, r=1.0,
                          eta=0.9, budget=None, policy="oldest", average=False):
    """Yield (support row ids, dual coefficients (n, K), mistake) after every round of the
    dual top-1 rule over the stacked blocks: items (x_j, e_j = e_{y_j} - e_{c_j}),
    <Phi_i, Phi_j> = (e_i.e_j) k~(x_i, x_j); Delta = f(x, y) - f(x, c) for the
    highest-scoring c != y.  The budget's removal (``projected_removal``) works on the
    items' Gram matrix."""
    from scipy.special import ndtri
    kp = kp or {}
    bias = default_bias(kernel, bias)
    X = np.asarray(X, float)
    phi = float(ndtri(eta))
    ids, E, mu, Z, acc = [], np.zeros((0, K)), np.zeros(0), np.zeros((0, 0)), np.zeros(0)
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
            acc = np.append(acc, 0.0)
            if budget is not None and len(ids) > budget:
                j, mu = projected_removal((E @ E.T) * gram(X[ids], X[ids], kernel, bias=bias,
                                                           **kp), mu, policy)
                del ids[j]
                E, acc = np.delete(E, j, 0), np.delete(acc, j)
                Z = schur_remove(Z, j)
        acc = acc + mu
        yield list(ids), (acc / (i + 1) if average else mu)[:, None] * E, mistake


def second_order_run(rule, X, y, *, kernel="rbf", kp=None, bias=None, a=1.0, r=1.0,
                     eta=0.9, budget=None, policy="oldest", average=False):
    """Yield (support row ids, coef (n, 1), Z, mistake) after every round of the dual
    CW-Var / CW-Stdev / AROW / AROW-H: mu = sum coef_j phi(x_j),
    Sigma = a I + Phi^T Z Phi ([AROW13] Sect. 4); `average`: coef averaged."""
    from scipy.special import ndtri
    kp = kp or {}
    bias = default_bias(kernel, bias)
    X = np.asarray(X, float)
    phi = float(ndtri(eta))
    ids, mu, Z, acc = [], np.zeros(0), np.zeros((0, 0)), np.zeros(0)
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
            acc = np.append(acc, 0.0)
            if budget is not None and len(ids) > budget:
                j, mu = projected_removal(gram(X[ids], X[ids], kernel, bias=bias, **kp),
                                          mu, policy)
                del ids[j]
                acc = np.delete(acc, j)
                Z = schur_remove(Z, j)
        acc = acc + mu
        yield list(ids), (acc / (i + 1) if average else mu)[:, None].copy(), Z.copy(), mistake


def bpa_run(variant, X, y, B, C, kernel, kp, bias=None, budget=None, policy="oldest",
            K=None, s=None, average=False):
    """Kernel mini-batch PA (block groups) in numpy: after every row, the reported
    (support row ids, coef) -- the pending group applied provisionally -- and the
    mistake of the row, predicted with the model from before its group.  The budget
    removes after each group's update until at most `budget` are left.

    Binary (K None, y = +-1): coef (n,), A_jk = y_j y_k k~(x_j, x_k), l_k = 1 - y_k f(x_k)
    ([GPA13] eqs. 14-19).  Top-1 (K classes, y = codes): over the stacked blocks, e_k =
    e_{y_k} - e_{c_k} with c_k the highest-scoring class other than y_k (ties to the
    smaller), A_jk = (e_j.e_k) k~(x_j, x_k), l_k = 1 - (f_{y_k} - f_{c_k})(x_k); coef (n, K)
    with rows tau_k e_k.  `s`: the rows' importance weights (None: 1), each row's loss
    term scaled in its group's dual (`bpa_tau`).

    `average`: (row ids, coef) of the mean over the rounds of each round's model: the
    support set after the round plus, while a group is incomplete, its provisional
    step on the rows so far (the budget not applied to it; without a budget that is
    the reported model).  Every row that had a coefficient keeps its sum: the support
    vectors first, then the rows their group left out (tau = 0; none on a budget,
    where a row leaving the support set or never joining it takes its sum with it),
    then the pending rows of a nonzero sum."""
    from reference_steps import bpa_tau
    bias = default_bias(kernel, bias)
    w = K or 1
    ids, coef, Q, M = [], np.zeros((0, w)), 0.0, 0.0
    acc, pend, ghosts = np.zeros((0, w)), np.zeros((B, w)), []

    def scores(ids, coef, rows):
        """f (len(rows), K or 1) of the support set."""
        if not ids:
            return np.zeros((len(rows), coef.shape[1]))
        return gram(X[rows], X[ids], kernel, bias=bias, **kp) @ coef

    def directions(f, group):
        if K is None:
            return y[group][:, None].astype(float), 1.0 - y[group] * f[:, 0]
        E = np.zeros((len(group), K))
        ell = np.zeros(len(group))
        for r, i in enumerate(group):
            c = int(np.argmax(np.where(np.arange(K) == y[i], -np.inf, f[r])))
            E[r, y[i]], E[r, c] = 1.0, -1.0
            ell[r] = 1.0 - (f[r, y[i]] - f[r, c])
        return E, ell

    def step(ids, coef, group):
        """The group's coefficients tau_k e_k (len(group), w)."""
        E, ell = directions(scores(ids, coef, group), group)
        A = (E @ E.T) * gram(X[group], X[group], kernel, bias=bias, **kp)
        tau = bpa_tau(A, ell, variant=variant, C=C, s=None if s is None else s[group])
        return tau[:, None] * E

    def update(ids, coef, group, Q, M, acc=None):
        G = step(ids, coef, group)
        keep = (G != 0).any(axis=1)
        ids = ids + [g for g, k in zip(group, keep) if k]
        coef = np.vstack([coef, G[keep]])
        if acc is not None:
            acc = np.vstack([acc, pend[:len(group)][keep]])
            if budget is None:
                ghosts.extend((g, pend[r].copy()) for r, g in enumerate(group)
                              if not keep[r] and pend[r].any())
        M += keep.sum()
        while budget is not None and len(ids) > budget:
            j, W, Q = _budget_step(X, ids, coef, Q, M, policy, policy == "oldest",
                                   kernel, kp, bias)
            del ids[j]
            coef = np.delete(W, j, 0)
            if acc is not None:
                acc = np.delete(acc, j, 0)
        return ids, coef, Q, M, acc

    def shown(coef):
        return coef[:, 0].copy() if K is None else coef.copy()

    def averaged(t, group):
        live = [r for r in range(len(group)) if pend[r].any()]
        rows = ids + [g for g, _ in ghosts] + [group[r] for r in live]
        sums = np.vstack([acc] + [v[None] for _, v in ghosts] + [pend[live]])
        return rows, shown(sums / t)

    start = 0
    for i in range(len(X)):
        f = scores(ids, coef, [i])[0]
        mistake = y[i] * f[0] <= 0 if K is None else int(np.argmax(f)) != y[i]
        group = list(range(start, i + 1))
        if len(group) == B:
            ids, coef, Q, M, acc = update(ids, coef, group, Q, M, acc)
            pend[:] = 0.0
            start = i + 1
            acc = acc + coef
            if average:
                yield (*averaged(i + 1, []), mistake)
            else:
                yield list(ids), shown(coef), mistake
        else:
            acc = acc + coef
            pend[:len(group)] += step(ids, coef, group)
            if average:
                yield (*averaged(i + 1, group), mistake)
            else:
                ids_i, coef_i = update(ids, coef, group, Q, M)[:2]
                yield ids_i, shown(coef_i), mistake
