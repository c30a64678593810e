"""Pitman's model: Hoshino (2001), as ARX's ``ModelPitman``.

The class partition follows the Pitman sampling formula with parameters ``theta > -alpha``,
``0 < alpha < 1``, fitted by maximum likelihood on the frequencies of frequencies; ``U =
Gamma(theta + 1) / Gamma(theta + alpha) * N ** alpha``. Its interval is the 95 % Wald interval
from the observed Fisher information of the likelihood at the estimate, by the delta method
(clipped to ``[0, 1]``). When every class of the sample has size 1 the model is not identifiable.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import optimize, special, stats

from .common import _count_of_size

_Z95 = float(stats.norm.ppf(0.975))


def _pitman_loglik_parts(theta: float, alpha: float, sizes, counts, n: float, u: float):
    """Digamma/trigamma pieces shared by the Pitman likelihood, gradient and Hessian."""
    r = theta / alpha
    d_u = special.digamma(r + u) - special.digamma(r + 1.0)
    t_u = special.polygamma(1, r + u) - special.polygamma(1, r + 1.0)
    return r, d_u, t_u


def pitman_log_likelihood(theta: float, alpha: float, sizes: np.ndarray, counts: np.ndarray) -> float:
    """Log-likelihood of the Pitman sampling formula, up to a constant.

    ``L = sum_{i=1}^{u-1} log(theta + i alpha) - sum_{i=1}^{n-1} log(theta + i)
    + sum_j sum_{l=1}^{n_j - 1} log(l - alpha)``, in closed form with log-gamma functions.
    """
    gl = special.gammaln
    u = float(counts.sum())
    n = float((sizes * counts).sum())
    r = theta / alpha
    return float(
        (u - 1.0) * math.log(alpha) + gl(r + u) - gl(r + 1.0)
        - (gl(theta + n) - gl(theta + 1.0))
        + (counts * (gl(sizes - alpha) - gl(1.0 - alpha))).sum()
    )


def pitman_gradient(theta: float, alpha: float, sizes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Gradient ``(dL/dtheta, dL/dalpha)`` of :func:`pitman_log_likelihood`."""
    u = float(counts.sum())
    n = float((sizes * counts).sum())
    r, d_u, _ = _pitman_loglik_parts(theta, alpha, sizes, counts, n, u)
    dg = special.digamma
    g_theta = d_u / alpha - (dg(theta + n) - dg(theta + 1.0))
    g_alpha = (u - 1.0) / alpha - theta / alpha**2 * d_u - (
        counts * (dg(sizes - alpha) - dg(1.0 - alpha))
    ).sum()
    return np.array([g_theta, g_alpha])


def pitman_hessian(theta: float, alpha: float, sizes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Hessian of :func:`pitman_log_likelihood` in ``(theta, alpha)``."""
    u = float(counts.sum())
    n = float((sizes * counts).sum())
    r, d_u, t_u = _pitman_loglik_parts(theta, alpha, sizes, counts, n, u)
    tg = lambda x: special.polygamma(1, x)  # noqa: E731
    h_tt = t_u / alpha**2 - (tg(theta + n) - tg(theta + 1.0))
    h_ta = -d_u / alpha**2 - theta / alpha**3 * t_u
    h_aa = (
        -(u - 1.0) / alpha**2
        + 2.0 * theta / alpha**3 * d_u
        + theta**2 / alpha**4 * t_u
        + (counts * (tg(sizes - alpha) - tg(1.0 - alpha))).sum()
    )
    return np.array([[h_tt, h_ta], [h_ta, h_aa]])


def _pitman_fit(sizes: np.ndarray, counts: np.ndarray) -> tuple[float, float] | None:
    """Maximum-likelihood ``(theta, alpha)`` of the Pitman model, or ``None``."""
    u = float(counts.sum())
    n = float((sizes * counts).sum())
    c1 = float(_count_of_size(sizes, counts, 1))
    c2 = float(_count_of_size(sizes, counts, 2))
    if c1 == 0 or c1 == u or u < 2:
        return None

    # Unconstrained coordinates: theta = exp(x0) - alpha (so theta > -alpha), alpha = expit(x1).
    def unpack(x):
        alpha = float(special.expit(x[1]))
        return math.exp(x[0]) - alpha, alpha

    def objective(x):
        theta, alpha = unpack(x)
        if not 0.0 < alpha < 1.0:
            return np.inf, np.zeros(2)
        value = -pitman_log_likelihood(theta, alpha, sizes, counts)
        g_theta, g_alpha = pitman_gradient(theta, alpha, sizes, counts)
        phi = theta + alpha
        # Chain rule: dtheta/dx0 = phi; dalpha/dx1 = a(1-a), dtheta/dx1 = -a(1-a).
        da = alpha * (1.0 - alpha)
        grad = np.array([-g_theta * phi, -(g_alpha - g_theta) * da])
        return value, grad

    # ARX's moment-style starting point (Hoshino 2001), when it lies in the parameter space.
    c2s = c2 if c2 != 0 else 1.0
    c = c1 * (c1 - 1.0) / c2s
    denom = (2.0 * c1 * u + c1 * c) - n * c
    starts = []
    if denom != 0:
        t0 = (n * u * c - c1 * (n - 1.0) * (2.0 * u + c)) / denom
        a0 = (t0 * (c1 - n) + (n - 1.0) * c1) / (n * u)
        if 0.0 < a0 < 1.0 and t0 + a0 > 0:
            starts.append((t0, a0))
    starts.append((u / 2.0, 0.5))
    best = None
    for t0, a0 in starts:
        x0 = np.array([math.log(t0 + a0), math.log(a0 / (1.0 - a0))])
        # Newton's method on the exact Hessian converges in a few steps; BFGS (dozens of
        # likelihood evaluations) is only the fall-back when Newton does not converge.
        res = _pitman_newton(x0, sizes, counts)
        if res is None:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                res = optimize.minimize(objective, x0, jac=True, method="BFGS",
                                        options={"gtol": 1e-9, "maxiter": 500})
        if np.all(np.isfinite(res.x)) and np.isfinite(res.fun):
            if best is None or res.fun < best.fun:
                best = res
    if best is None:
        return None
    theta, alpha = unpack(best.x)
    # A maximum on the boundary (alpha -> 0 or 1) is no interior estimate.
    if not (1e-8 < alpha < 1.0 - 1e-8) or not math.isfinite(theta):
        return None
    grad = pitman_gradient(theta, alpha, sizes, counts)
    scale = 1.0 + abs(pitman_log_likelihood(theta, alpha, sizes, counts))
    if not np.all(np.abs(grad) * np.array([abs(theta) + 1.0, alpha]) < 1e-4 * scale):
        return None
    return theta, alpha


def _pitman_newton(x0: np.ndarray, sizes: np.ndarray, counts: np.ndarray,
                   max_iter: int = 100) -> optimize.OptimizeResult | None:
    """Maximize the Pitman likelihood by damped Newton steps from ``x0``; ``None`` if it fails.

    Works in the unconstrained coordinates of :func:`_pitman_fit` (``theta = exp(x0) - alpha``,
    ``alpha = expit(x1)``), with the exact gradient and Hessian carried over by the chain rule.
    A step that does not increase the likelihood is halved; where the Hessian is not negative
    definite the step is a gradient step. Returns a result with ``x`` and ``fun`` (minus the
    log-likelihood) once the gradient vanishes to rounding at a clearly interior point
    (``1e-6 < alpha < 1 - 1e-6``, negative definite Hessian); near the boundary, where the
    likelihood is flat and any stopping point is arbitrary, it returns ``None`` so that the
    caller's BFGS decides as it always has.
    """
    def parts(x):
        alpha = float(special.expit(x[1]))
        phi = math.exp(x[0])
        theta = phi - alpha
        if not (0.0 < alpha < 1.0 and theta > -alpha and math.isfinite(theta)):
            return None
        try:
            value = pitman_log_likelihood(theta, alpha, sizes, counts)
            g_t, g_a = pitman_gradient(theta, alpha, sizes, counts)
            h = pitman_hessian(theta, alpha, sizes, counts)
        except (ZeroDivisionError, OverflowError, ValueError):
            return None
        da = alpha * (1.0 - alpha)
        # d(theta, alpha)/d(x0, x1): theta = phi - alpha, alpha = expit(x1)
        jac = np.array([[phi, -da], [0.0, da]])
        grad = jac.T @ np.array([g_t, g_a])
        hess = jac.T @ h @ jac + np.diag([g_t * phi, (g_a - g_t) * da * (1.0 - 2.0 * alpha)])
        return value, grad, hess

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        x = np.asarray(x0, dtype=float)
        current = parts(x)
        if current is None or not math.isfinite(current[0]):
            return None
        for _ in range(max_iter):
            value, grad, hess = current
            if not np.all(np.isfinite(grad)) or not np.all(np.isfinite(hess)):
                return None
            if np.max(np.abs(grad)) <= 1e-9 * (1.0 + abs(value)):
                return _interior(x, value, hess)
            try:
                newton = np.linalg.solve(hess, -grad)
                ascent = float(grad @ newton) > 0 and np.all(np.linalg.eigvalsh(hess) < 0)
            except np.linalg.LinAlgError:
                ascent = False
            step = newton if ascent else grad / max(1.0, float(np.max(np.abs(grad))))
            for _ in range(60):
                trial = parts(x + step)
                if trial is not None and math.isfinite(trial[0]) and trial[0] >= value:
                    break
                step = step / 2.0
            else:
                return None
            if np.max(np.abs(step)) < 1e-14:
                # no further progress possible at this precision
                x, current = x + step, trial
                break
            x, current = x + step, trial
        value, grad, hess = current
        if np.max(np.abs(grad)) <= 1e-7 * (1.0 + abs(value)):
            return _interior(x, value, hess)
    return None


def _interior(x: np.ndarray, value: float, hess: np.ndarray) -> optimize.OptimizeResult | None:
    """The Newton result at ``x``, or ``None`` unless it is a clear interior maximum."""
    alpha = float(special.expit(x[1]))
    if not 1e-6 < alpha < 1.0 - 1e-6 or not np.all(np.linalg.eigvalsh(hess) < 0):
        return None
    return optimize.OptimizeResult(x=x, fun=-value, success=True)


def _pitman_uniques(theta: float, alpha: float, pop: float) -> float:
    """``U = Gamma(theta + 1) / Gamma(theta + alpha) * N ** alpha`` (NaN outside [0, N])."""
    value = math.exp(special.gammaln(theta + 1.0) - special.gammaln(theta + alpha)
                     + alpha * math.log(pop))
    return value if 0.0 <= value <= pop else math.nan


def _pitman_estimate(sizes, counts, f, n) -> tuple[float, tuple[float, float] | None, str]:
    """Pitman's ``U`` with a delta-method interval on the fraction ``U / N``."""
    fit = _pitman_fit(sizes, counts)
    if fit is None:
        if _count_of_size(sizes, counts, 1) == counts.sum():
            return math.nan, None, "not identifiable: every class of the sample has size 1"
        return math.nan, None, "maximum-likelihood fit has no interior solution"
    theta, alpha = fit
    pop = n / f
    uniques = _pitman_uniques(theta, alpha, pop)
    if not math.isfinite(uniques):
        return math.nan, None, "estimate outside [0, N]"
    interval = None
    hess = pitman_hessian(theta, alpha, sizes, counts)
    try:
        cov = np.linalg.inv(-hess)
    except np.linalg.LinAlgError:
        cov = None
    if cov is not None and np.all(np.isfinite(cov)) and cov[0, 0] > 0 and cov[1, 1] > 0:
        # d log U / d theta and d log U / d alpha.
        grad_log = np.array([
            special.digamma(theta + 1.0) - special.digamma(theta + alpha),
            -special.digamma(theta + alpha) + math.log(pop),
        ])
        var_log = float(grad_log @ cov @ grad_log)
        if var_log >= 0 and math.isfinite(var_log):
            sd = math.sqrt(var_log) * uniques / pop
            frac = uniques / pop
            interval = (max(0.0, frac - _Z95 * sd), min(1.0, frac + _Z95 * sd))
    return uniques, interval, f"theta={theta:.4g}, alpha={alpha:.4g}"
