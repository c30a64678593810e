"""The slide negative binomial model (SNB): Chen and Keller-McNulty (1998), as ARX's ``ModelSNB``.

The ``K`` non-empty population classes have sizes ``1 + NB(alpha, beta)``; ``K`` is estimated
with Haas and Stokes' Shlosser-type estimator, ``alpha`` and ``beta`` solve ``E[c_1] = c_1`` and
``E[c_2] = c_2`` under binomial thinning; ``U = K beta ** alpha``. Without a class of size 2
the model is not identifiable.

Two places where the ARX source (``ModelSNB.java``) and the published formulas differ, and
this module follows the formulas: the second moment equation divides by ``(1 - d) ** (alpha +
2)`` (ARX's objective multiplies, while its Jacobian divides), and the second denominator of
the Shlosser-type estimator of ``K`` is ``sum_s (1-f)**s ((1+f)**s - 1) c_s`` (ARX subtracts 1
once per distinct size instead of inside the sum).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import optimize, special

from .common import _count_of_size


def shlosser_classes(sizes: np.ndarray, counts: np.ndarray, f: float) -> float:
    """Estimated number ``K`` of non-empty population classes (Haas and Stokes' Shlosser form).

    ``K = u + c_1 * [sum_s s f^2 (1-f^2)^(s-1) c_s / sum_s (1-f)^s ((1+f)^s - 1) c_s]
    * [sum_s (1-f)^s c_s / sum_s s f (1-f)^(s-1) c_s]^2``.
    """
    s = sizes.astype(float)
    c = counts.astype(float)
    u = c.sum()
    c1 = float(_count_of_size(sizes, counts, 1))
    if f >= 1.0:
        return u
    log1mf = math.log1p(-f)
    log1mf2 = math.log1p(-f * f)
    num1 = (s * f * f * np.exp((s - 1.0) * log1mf2) * c).sum()
    den1 = ((np.exp(s * log1mf2) - np.exp(s * log1mf)) * c).sum()
    num2 = (np.exp(s * log1mf) * c).sum()
    den2 = (s * f * np.exp((s - 1.0) * log1mf) * c).sum()
    if den1 <= 0 or den2 <= 0:
        return u
    return float(u + c1 * (num1 / den1) * (num2 / den2) ** 2)


def snb_log_expected_c1_c2(a: float, b: float, f: float, k: float) -> tuple[float, float]:
    """Logarithms of :func:`snb_expected_c1_c2` (stable where the powers under- or overflow)."""
    d = (1.0 - f) * (1.0 - b)
    log_1md = math.log1p(-d)
    log_e1 = (math.log(k) + math.log(f) + a * (math.log(b) - log_1md)
              + math.log1p(a * d / (1.0 - d)))
    log_e2 = (math.log(k) + math.log(a) + a * math.log(b) + 2.0 * math.log(f)
              + math.log1p(-b) + math.log(2.0 - (1.0 - a) * d) - math.log(2.0)
              - (a + 2.0) * log_1md)
    return log_e1, log_e2


def snb_expected_c1_c2(a: float, b: float, f: float, k: float) -> tuple[float, float]:
    """Expected numbers of sample classes of size 1 and 2 under the SNB model.

    Population class sizes ``F = 1 + G``, ``G ~ NB(a, b)`` (``P[G=g] = C(g+a-1, g) b^a
    (1-b)^g``), each record sampled with probability ``f``. With ``d = (1-f)(1-b)``:
    ``E[c_1] = K f (b/(1-d))^a (1 + a d/(1-d))`` and
    ``E[c_2] = K a b^a f^2 (1-b) (2 - (1-a) d) / (2 (1-d)^(a+2))``.
    """
    log_e1, log_e2 = snb_log_expected_c1_c2(a, b, f, k)
    return math.exp(log_e1), math.exp(log_e2)


def _snb_fit(c1: float, c2: float, k: float, f: float) -> tuple[float, float] | None:
    """Solve the SNB moment equations for ``(a, b)``; ``None`` when there is no solution."""
    if c1 <= 0 or c2 <= 0 or k <= 0:
        return None

    log_c1, log_c2 = math.log(c1), math.log(c2)

    def equations(x):
        try:
            a = math.exp(x[0])
            b = float(special.expit(x[1]))
            log_e1, log_e2 = snb_log_expected_c1_c2(a, b, f, k)
        except (ValueError, OverflowError, ZeroDivisionError):
            return np.array([1e6, 1e6])
        if not (math.isfinite(log_e1) and math.isfinite(log_e2)):
            return np.array([1e6, 1e6])
        return np.array([log_e1 - log_c1, log_e2 - log_c2])

    for a0, b0 in ((1.0, 0.5), (0.1, 0.9), (5.0, 0.1), (0.01, 0.99)):
        x0 = np.array([math.log(a0), math.log(b0 / (1.0 - b0))])
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            sol = optimize.root(equations, x0, method="hybr")
        if sol.success and np.all(np.abs(equations(sol.x)) < 1e-7):
            a = math.exp(sol.x[0])
            b = float(special.expit(sol.x[1]))
            if 0.0 < b < 1.0 and a > 0 and math.isfinite(a):
                return a, b
    return None


def _snb_uniques(sizes: np.ndarray, counts: np.ndarray, f: float) -> tuple[float, str]:
    uniques, note, _ = _snb_estimate(sizes, counts, f)
    return uniques, note


def _snb_estimate(sizes: np.ndarray, counts: np.ndarray, f: float
                  ) -> tuple[float, str, tuple[float, float] | None]:
    """SNB's ``U`` (NaN without an estimate), a note, and the fitted ``(a, b)`` if any."""
    c1 = float(_count_of_size(sizes, counts, 1))
    c2 = float(_count_of_size(sizes, counts, 2))
    k = shlosser_classes(sizes, counts, f)
    fit = _snb_fit(c1, c2, k, f)
    if fit is None:
        if c2 == 0:
            return math.nan, "not identifiable: no class of size 2 in the sample", None
        return math.nan, "moment equations have no solution", None
    a, b = fit
    uniques = k * b**a
    n = float((sizes * counts).sum())
    if not 0.0 <= uniques <= n / f:
        return math.nan, "estimate outside [0, N]", fit
    return uniques, f"K={k:.6g}, alpha={a:.4g}, beta={b:.4g}", fit


def _shlosser_classes_batch(sizes: np.ndarray, counts: np.ndarray, f: float) -> np.ndarray:
    """:func:`shlosser_classes` for each row of ``counts`` (bootstrap replicates)."""
    counts = np.atleast_2d(counts).astype(float)
    s = sizes.astype(float)
    u = counts.sum(axis=1)
    if f >= 1.0:
        return u
    c1 = counts[:, 0] if sizes[0] == 1 else np.zeros(len(counts))
    log1mf = math.log1p(-f)
    log1mf2 = math.log1p(-f * f)
    # the four sums are dot products of the replicates with per-size weights
    w = np.stack([
        s * f * f * np.exp((s - 1.0) * log1mf2),
        np.exp(s * log1mf2) - np.exp(s * log1mf),
        np.exp(s * log1mf),
        s * f * np.exp((s - 1.0) * log1mf),
    ], axis=1)
    num1, den1, num2, den2 = (counts @ w).T
    with np.errstate(invalid="ignore", divide="ignore"):
        k = u + c1 * (num1 / den1) * (num2 / den2) ** 2
    return np.where((den1 > 0) & (den2 > 0), k, u)


def _snb_residuals(x: np.ndarray, log_c: np.ndarray, log_k: np.ndarray, f: float):
    """Residuals ``log E[c_i] - log c_i`` of the SNB moment equations and their Jacobian.

    ``x`` has one row per replicate, the unconstrained ``(log a, logit b)`` of
    :func:`_snb_fit`; ``log_c`` the logs of the observed ``(c_1, c_2)``. Vectorized form of
    :func:`snb_log_expected_c1_c2` with its exact derivatives (chain rule through ``a = exp
    x0`` and ``b = expit x1``). Returns ``(residuals, jacobian)`` of shapes (r, 2), (r, 2, 2).
    """
    a = np.exp(x[:, 0])
    b = special.expit(x[:, 1])
    g = 1.0 - f
    d = g * (1.0 - b)
    one_md = 1.0 - d
    log_1md = np.log1p(-d)
    q = d / one_md
    log_b = np.log(b)
    two = 2.0 - (1.0 - a) * d
    log_e1 = log_k + math.log(f) + a * (log_b - log_1md) + np.log1p(a * q)
    log_e2 = (log_k + np.log(a) + a * log_b + 2.0 * math.log(f) + np.log1p(-b)
              + np.log(two) - math.log(2.0) - (a + 2.0) * log_1md)
    residuals = np.stack([log_e1 - log_c[:, 0], log_e2 - log_c[:, 1]], axis=1)
    # derivatives in (a, b); dd/db = -g
    e1_a = log_b - log_1md + q / (1.0 + a * q)
    e1_b = a / b - a * g / one_md - a * g / ((1.0 + a * q) * one_md**2)
    e2_a = 1.0 / a + log_b + d / two - log_1md
    e2_b = a / b - 1.0 / (1.0 - b) + (1.0 - a) * g / two - (a + 2.0) * g / one_md
    da, db = a, b * (1.0 - b)
    jac = np.empty((len(x), 2, 2))
    jac[:, 0, 0], jac[:, 0, 1] = e1_a * da, e1_b * db
    jac[:, 1, 0], jac[:, 1, 1] = e2_a * da, e2_b * db
    return residuals, jac


def _snb_uniques_batch(sizes: np.ndarray, counts: np.ndarray, f: float,
                       start: tuple[float, float] | None = None) -> np.ndarray:
    """SNB's ``U`` for each row of ``counts`` (NaN where the model has no estimate).

    All replicates are solved at once by damped Newton steps on :func:`_snb_residuals`,
    started from ``start`` (the sample's own ``(a, b)``, near which the replicates' solutions
    lie). A replicate is accepted on the criterion of :func:`_snb_fit` (every residual below
    1e-7); the few that Newton does not settle are solved one by one by :func:`_snb_uniques`,
    so each value is what the single-sample estimator gives. A replicate without a class of
    size 1 has no sample uniques, hence 0.
    """
    counts = np.atleast_2d(counts)
    r = len(counts)
    out = np.full(r, np.nan)
    c1 = (counts[:, 0] if sizes[0] == 1 else np.zeros(r)).astype(float)
    at2 = np.searchsorted(sizes, 2)
    c2 = (counts[:, at2] if at2 < len(sizes) and sizes[at2] == 2 else np.zeros(r)).astype(float)
    k = _shlosser_classes_batch(sizes, counts, f)
    n = counts @ sizes
    zero = c1 == 0
    out[zero] = 0.0 if sizes[0] == 1 else np.nan
    todo = np.flatnonzero(~zero & (c2 > 0) & (k > 0))
    if len(todo) == 0:
        return out
    a0, b0 = start if start is not None else (1.0, 0.5)
    x = np.tile([math.log(a0), math.log(b0 / (1.0 - b0))], (len(todo), 1))
    log_c = np.log(np.stack([c1[todo], c2[todo]], axis=1))
    log_k = np.log(k[todo])
    with np.errstate(all="ignore"):
        res, jac = _snb_residuals(x, log_c, log_k, f)
        frozen = np.zeros(len(todo), dtype=bool)  # no step improves it: left as it is
        for _ in range(50):
            norm = np.abs(res).max(axis=1)
            active = np.isfinite(norm) & (norm > 1e-12) & ~frozen
            if not active.any():
                break
            det = jac[:, 0, 0] * jac[:, 1, 1] - jac[:, 0, 1] * jac[:, 1, 0]
            step = np.stack([
                -(jac[:, 1, 1] * res[:, 0] - jac[:, 0, 1] * res[:, 1]) / det,
                -(-jac[:, 1, 0] * res[:, 0] + jac[:, 0, 0] * res[:, 1]) / det,
            ], axis=1)
            step[~active | ~np.all(np.isfinite(step), axis=1)] = 0.0
            # halve the step of a replicate whose residual would grow (at most 30 times)
            for _ in range(30):
                trial = x + step
                t_res, t_jac = _snb_residuals(trial, log_c, log_k, f)
                t_norm = np.abs(t_res).max(axis=1)
                worse = active & ~(t_norm < norm)
                if not worse.any():
                    break
                step[worse] /= 2.0
            frozen |= worse
            x = np.where(worse[:, None], x, trial)
            res = np.where(worse[:, None], res, t_res)
            jac = np.where(worse[:, None, None], jac, t_jac)
        a = np.exp(x[:, 0])
        b = special.expit(x[:, 1])
        uniques = k[todo] * b**a
    ok = (np.all(np.abs(res) < 1e-7, axis=1) & np.isfinite(a) & (a > 0) & (b > 0) & (b < 1))
    inside = (uniques >= 0) & (uniques <= n[todo] / f)
    out[todo[ok]] = np.where(inside[ok], uniques[ok], np.nan)
    for i in todo[~ok]:  # the rare replicate Newton did not settle: the single-sample solver
        out[i] = _snb_uniques(sizes, counts[i], f)[0]
    return out
