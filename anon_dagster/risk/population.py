"""Population uniqueness estimated from a sample's equivalence-class sizes.

A record of a sample is *population-unique* when no other person in the population shares its
quasi-identifier values. A journalist who links the published sample to a register of the whole
population singles out exactly these records. Only the sample is published, so the share has to
be estimated from the sample's class sizes and the sampling fraction ``f`` (sample size divided
by population size, population size ``N = n / f``).

Every estimator here works on the *frequencies of frequencies* of the sample: ``c_s``, the
number of equivalence classes of size ``s`` (``np.bincount`` of the class sizes), so the cost
is linear in the number of classes and the result does not depend on the order of the classes.

Reported quantity. For each model, ``fraction`` is the estimated share of the sample's records
that are unique in the population. Under Bernoulli sampling, each of the ``U`` population
uniques is in the sample with probability ``f``, so the expected number of population-unique
sample records is ``f U`` and their share is ``f U / n = U / N``: the same number as the share
of the *population* that is unique, which is what ARX reports. ``sample_count`` is ``f U`` and
``population_count`` is ``U``.

Models (``model`` names in the result):

- ``naive``: every sample unique is taken as population-unique: ``c_1 / n``. A population
  unique that was sampled is always a sample unique, so this is an upper bound; it overstates
  strongly at small ``f``.
- ``poisson``: a class of the population has size ``F_j ~ Poisson(lambda_j)``, sampled
  records ``n_j ~ Poisson(f lambda_j)`` and unsampled ones ``F_j - n_j ~ Poisson((1-f)
  lambda_j)``, independently. With the plug-in ``lambda_j = n_j / f``, a sample unique is
  population-unique with probability ``exp(-(1 - f) / f)``.
- ``poisson_gamma``: the same with ``lambda_j ~ Gamma(alpha, scale beta)`` (so ``n_j`` is
  negative binomial). Given ``n_j``, ``lambda_j ~ Gamma(alpha + n_j, rate 1/beta + f)`` and
  ``P[no one else in the population] = ((1/beta + f) / (1/beta + 1)) ** (alpha + n_j)``.
  ``alpha`` and ``beta`` are fitted by moments on the observed class sizes (mean ``m``,
  variance ``v``): ``f beta = v/m - 1``, ``alpha = m**2 / (v - m)`` (Bethlehem, Keller and
  Pannekoek 1990; Skinner and Holmes 1998). It understates at small ``f`` on heavy-tailed
  populations.
- ``zayatz``: Zayatz (1991), as ARX's ``ModelZayatz`` computes it: the sample's class-size
  distribution stands in for the population's and ``P[population unique | sample unique] =
  (c_1/u) H(1; N, 1, n) / sum_s (c_s/u) H(1; N, s, n)`` with ``H(1; N, s, n)`` the
  hypergeometric probability of drawing exactly one member of a class of size ``s`` in ``n``
  draws from ``N``; ``U = c_1 P / f``.
- ``pitman``: Hoshino (2001), as ARX's ``ModelPitman``: the class partition follows the
  Pitman sampling formula with parameters ``theta > -alpha``, ``0 < alpha < 1``, fitted by
  maximum likelihood on the frequencies of frequencies; ``U = Gamma(theta + 1) /
  Gamma(theta + alpha) * N ** alpha``.
- ``snb``: slide negative binomial, Chen and Keller-McNulty (1998), as ARX's ``ModelSNB``:
  the ``K`` non-empty population classes have sizes ``1 + NB(alpha, beta)``; ``K`` is
  estimated with Haas and Stokes' Shlosser-type estimator, ``alpha`` and ``beta`` solve
  ``E[c_1] = c_1`` and ``E[c_2] = c_2`` under binomial thinning; ``U = K beta ** alpha``.
- ``dankar``: the decision rule of Dankar, El Emam, Neisa and Roffey (2012) as ARX's
  ``RiskModelPopulationUniqueness`` applies it: ``f <= 0.1``: Pitman (Zayatz when Pitman has
  no valid estimate); otherwise the smaller of Zayatz and SNB (Zayatz when SNB has none).

Two places where the ARX source (``ModelSNB.java``) and the published formulas differ, and
this module follows the formulas: the second moment equation of SNB divides by
``(1 - d) ** (alpha + 2)`` (ARX's objective multiplies, while its Jacobian divides), and the
second denominator of the Shlosser-type estimator of ``K`` is ``sum_s (1-f)**s ((1+f)**s -
1) c_s`` (ARX subtracts 1 once per distinct size instead of inside the sum).

Intervals (``interval`` is on ``fraction``; ``interval_method`` says how it was obtained):

- ``poisson``: exact (Garwood) 95 % interval for the Poisson mean given one sampled record,
  carried through ``exp(-(1 - f) lambda)``.
- ``pitman``: 95 % Wald interval from the observed Fisher information of the likelihood at
  the estimate, by the delta method (clipped to ``[0, 1]``).
- ``poisson_gamma``, ``zayatz``, ``snb``: 2.5 and 97.5 percentiles of the estimate over a
  class bootstrap: the sample's equivalence classes are drawn with replacement (a multinomial
  draw of the frequencies of frequencies; seeded, so the figures are reproducible). It reflects
  the sampling variability of the class-size distribution, not model misspecification, and may
  exclude the point estimate when the estimator is biased.
- ``naive``: none (it is an observed figure and an upper bound).
- ``dankar``: the interval of the model it chose.

Degenerate inputs, with the documented results:

- ``f = 1``: the sample is the population; every model returns the exact value ``c_1 / n``
  with the interval ``(c_1/n, c_1/n)``.
- no class of size 1: nobody in the sample is population-unique; every model returns 0 (as
  ARX does).
- every class of size 1 (``c_1 = u``): the sample carries no information on how often values
  repeat; Pitman and SNB are not identifiable (``fraction`` is ``None``), Poisson-Gamma has no
  overdispersion and falls back to Poisson, Zayatz gives 1, so Dankar's rule gives Zayatz's 1.
- ``f`` outside ``(0, 1]``, or class sizes that are negative or not integers: ``DataError``.
- an empty sample: ``DataError`` (the share is undefined).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from anon_dagster.errors import DataError
from anon_dagster.risk.reidentification import check_sampling_fraction

MODELS: tuple[str, ...] = ("naive", "poisson", "poisson_gamma", "zayatz", "pitman", "snb")
"""The estimators, in the order they are reported (``dankar`` is reported apart)."""

DANKAR_THRESHOLD = 0.1
"""Sampling fraction at or below which Dankar's rule uses Pitman's model."""

_Z95 = float(stats.norm.ppf(0.975))
# Exact (Garwood) 95 % bounds for a Poisson mean when one event was observed.
_GARWOOD_LOW_1 = float(stats.chi2.ppf(0.025, 2) / 2.0)
_GARWOOD_HIGH_1 = float(stats.chi2.ppf(0.975, 4) / 2.0)


@dataclass(frozen=True)
class UniquenessEstimate:
    """One model's estimate of population uniqueness.

    ``fraction`` is the estimated share of the sample's records that are unique in the
    population (equal, in expectation, to the share of the population that is unique);
    ``sample_count = fraction * n`` and ``population_count = fraction * N``. ``fraction`` is
    ``None`` when the model has no valid estimate on this sample (``note`` says why).
    """

    model: str
    fraction: float | None
    sample_count: float | None
    population_count: float | None
    interval: tuple[float, float] | None = None
    interval_method: str | None = None
    note: str = ""

    @property
    def valid(self) -> bool:
        """Whether the model produced an estimate."""
        return self.fraction is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable form (plain floats, lists, strings, None)."""
        return {
            "model": self.model,
            "fraction": self.fraction,
            "sample_count": self.sample_count,
            "population_count": self.population_count,
            "interval": list(self.interval) if self.interval is not None else None,
            "interval_method": self.interval_method,
            "note": self.note,
        }


@dataclass(frozen=True)
class PopulationUniqueness:
    """Population-uniqueness estimates of every model for one sample.

    ``estimates`` maps each name of :data:`MODELS` to its :class:`UniquenessEstimate`;
    ``dankar`` is the estimate Dankar's decision rule picks and ``dankar_model`` the model it
    picked. ``summary`` reads "between X and Y depending on the model".
    """

    sampling_fraction: float
    records: int
    classes: int
    sample_uniques: int
    population_size: float
    estimates: dict[str, UniquenessEstimate]
    dankar: UniquenessEstimate
    dankar_model: str
    summary: str
    bootstrap: int = 0
    seed: int = 0
    extras: dict[str, Any] = field(default_factory=dict)

    def range(self) -> tuple[float, float]:
        """Smallest and largest valid ``fraction`` over the models of :data:`MODELS`."""
        values = [e.fraction for e in self.estimates.values() if e.fraction is not None]
        return (min(values), max(values))

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable form; the keys are stable for reports and ``--json`` output."""
        low, high = self.range()
        return {
            "sampling_fraction": self.sampling_fraction,
            "records": self.records,
            "classes": self.classes,
            "sample_uniques": self.sample_uniques,
            "population_size": self.population_size,
            "estimates": {name: e.to_dict() for name, e in self.estimates.items()},
            "dankar": self.dankar.to_dict(),
            "dankar_model": self.dankar_model,
            "min": low,
            "max": high,
            "summary": self.summary,
            "bootstrap": self.bootstrap,
            "seed": self.seed,
            **self.extras,
        }


# --------------------------------------------------------------------------------------------
# Input checks and frequencies of frequencies


def frequencies_of_frequencies(class_sizes: Any) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(sizes, counts)``: each distinct class size ``s`` (ascending) and ``c_s``.

    Zero sizes (empty classes) are ignored; negative or non-integer sizes raise
    :class:`DataError`.
    """
    arr = np.asarray(class_sizes)
    if arr.ndim != 1:
        arr = arr.ravel()
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr)):
            raise DataError("class sizes must be non-negative integers (found a non-integer)")
    elif arr.dtype.kind not in "iub":
        raise DataError(f"class sizes must be non-negative integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.min() < 0:
        raise DataError(f"class sizes must be non-negative integers, found {int(arr.min())}")
    top = int(arr.max())
    # bincount is the fast path; for a few giant classes np.unique avoids a huge histogram.
    if top <= 4 * arr.size + 1024:
        hist = np.bincount(arr)
        sizes = np.flatnonzero(hist)
        counts = hist[sizes]
    else:
        sizes, counts = np.unique(arr, return_counts=True)
    keep = sizes > 0
    return sizes[keep].astype(np.int64), counts[keep].astype(np.int64)


# --------------------------------------------------------------------------------------------
# The models, each on (sizes, counts, f); each returns U, the estimated number of population
# uniques (NaN when the model has no valid estimate).


def _poisson_probability(f: float, lam_times_f: float = 1.0) -> float:
    """P[no one else in the population] for a sample unique when ``f lambda = lam_times_f``."""
    return math.exp(-lam_times_f * (1.0 - f) / f)


def _poisson_gamma_parameters(
    sizes: np.ndarray, counts: np.ndarray, f: float
) -> tuple[float, float] | None:
    """Moment estimates ``(alpha, beta)`` of the Gamma prior; ``None`` without overdispersion."""
    u = counts.sum()
    if u < 2:
        return None
    mean = float((sizes * counts).sum() / u)
    # Unbiased variance: the classes are the observations.
    var = float(((sizes - mean) ** 2 * counts).sum() / (u - 1))
    if not var > mean:
        return None
    beta = (var / mean - 1.0) / f
    alpha = mean * mean / (var - mean)
    return alpha, beta


def _poisson_gamma_uniques(sizes: np.ndarray, counts: np.ndarray, f: float) -> tuple[float, str]:
    c1 = _count_of_size(sizes, counts, 1)
    params = _poisson_gamma_parameters(sizes, counts, f)
    if params is None:
        return c1 * _poisson_probability(f) / f, "no overdispersion: Poisson limit"
    alpha, beta = params
    prob = math.exp((alpha + 1.0) * (math.log1p(f * beta) - math.log1p(beta)))
    return c1 * prob / f, f"alpha={alpha:.4g}, beta={beta:.4g}"


def _poisson_gamma_uniques_batch(
    sizes: np.ndarray, counts: np.ndarray, f: float
) -> np.ndarray:
    """Vectorized Poisson-Gamma ``U`` over rows of ``counts`` (bootstrap replicates)."""
    u = counts.sum(axis=1).astype(float)
    mean = (counts * sizes).sum(axis=1) / u
    with np.errstate(invalid="ignore", divide="ignore"):
        var = (counts * (sizes[None, :] - mean[:, None]) ** 2).sum(axis=1) / (u - 1.0)
        beta = (var / mean - 1.0) / f
        alpha = mean * mean / (var - mean)
        prob = np.exp((alpha + 1.0) * (np.log1p(f * beta) - np.log1p(beta)))
    prob = np.where(var > mean, prob, _poisson_probability(f))
    c1 = counts[:, 0] if sizes[0] == 1 else np.zeros(len(counts))
    return c1 * prob / f


def _log_hypergeom_one(pop: np.ndarray, size: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """log H(1; N, s, n) = log(s C(N - s, n - 1) / C(N, n)), continuous in N."""
    gl = special.gammaln
    return (
        np.log(size)
        + gl(pop - size + 1) - gl(draws) - gl(pop - size - draws + 2)
        - (gl(pop + 1) - gl(draws + 1) - gl(pop - draws + 1))
    )


def _zayatz_uniques_batch(sizes: np.ndarray, counts: np.ndarray, f: float) -> np.ndarray:
    """Zayatz's ``U`` for each row of ``counts`` (a single sample is one row)."""
    counts = np.atleast_2d(counts).astype(float)
    n = counts @ sizes
    pop = n / f
    # Sizes above N - n + 1 cannot yield exactly one sampled member: their probability is 0.
    with np.errstate(invalid="ignore", divide="ignore"):
        logp = _log_hypergeom_one(pop[:, None], sizes[None, :].astype(float), n[:, None])
    possible = sizes[None, :] <= (pop - n + 1.0)[:, None] + 1e-9
    logp = np.where(possible, logp, -np.inf)
    # Normalize by the largest term so that tiny probabilities do not underflow.
    shift = np.max(np.where(counts > 0, logp, -np.inf), axis=1, keepdims=True)
    shift = np.where(np.isfinite(shift), shift, 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        weights = np.where(counts > 0, counts * np.exp(logp - shift), 0.0)
    denom = weights.sum(axis=1)
    c1 = counts[:, 0] if sizes[0] == 1 else np.zeros(len(counts))
    first = weights[:, 0] if sizes[0] == 1 else np.zeros(len(counts))
    with np.errstate(invalid="ignore", divide="ignore"):
        cond = np.where(c1 > 0, first / denom, 0.0)
    return c1 * cond / f


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


def _count_of_size(sizes: np.ndarray, counts: np.ndarray, size: int) -> int:
    idx = np.searchsorted(sizes, size)
    if idx < len(sizes) and sizes[idx] == size:
        return int(counts[idx])
    return 0


# --------------------------------------------------------------------------------------------
# Public entry point


def population_uniqueness(
    sample_class_sizes: Any,
    sampling_fraction: float,
    *,
    bootstrap: int = 200,
    seed: int = 0,
) -> PopulationUniqueness:
    """Estimate the share of the sample's records that are unique in the population.

    ``sample_class_sizes`` holds the size of every equivalence class of the sample (any order);
    ``sampling_fraction`` is ``f = n / N`` in ``(0, 1]``. ``bootstrap`` is the number of class
    bootstrap replicates used for the intervals of Poisson-Gamma, Zayatz and SNB (0: no such
    intervals); ``seed`` makes them reproducible. The models, their sources, intervals and the
    results on degenerate inputs are described in this module's docstring.
    """
    f = check_sampling_fraction(sampling_fraction)
    sizes, counts = frequencies_of_frequencies(sample_class_sizes)
    n = int((sizes * counts).sum())
    if n == 0:
        raise DataError("population uniqueness needs a non-empty sample (0 records)")
    if bootstrap < 0:
        raise DataError(f"bootstrap must be >= 0, got {bootstrap}")
    u = int(counts.sum())
    c1 = _count_of_size(sizes, counts, 1)
    pop = n / f

    def make(model, uniques, interval=None, method=None, note=""):
        if uniques is None or not math.isfinite(uniques):
            return UniquenessEstimate(model, None, None, None, None, None, note)
        frac = float(uniques / pop)
        return UniquenessEstimate(model, frac, frac * n, float(uniques),
                                  interval, method, note)

    estimates: dict[str, UniquenessEstimate] = {}
    naive = c1 / n
    estimates["naive"] = UniquenessEstimate(
        "naive", naive, float(c1), naive * pop, None, None,
        "every sample unique counted as population-unique (upper bound)")

    if f == 1.0 or c1 == 0:
        exact = (naive, naive)
        why = ("exact: the sample is the population" if f == 1.0
               else "no sample uniques: no population uniques in the sample")
        for model in MODELS[1:]:
            estimates[model] = make(model, c1 / f, exact, "exact", why)
        dankar = make("dankar", c1 / f, exact, "exact", why)
        chosen = "exact"
        return _finish(f, n, u, c1, pop, estimates, dankar, chosen, bootstrap, seed)

    # Poisson with the plug-in lambda = n_j / f, interval from the exact Poisson bounds.
    p_point = _poisson_probability(f)
    p_low = _poisson_probability(f, _GARWOOD_HIGH_1)
    p_high = _poisson_probability(f, _GARWOOD_LOW_1)
    estimates["poisson"] = make(
        "poisson", c1 * p_point / f, (c1 * p_low / n, c1 * p_high / n),
        "exact Poisson 95% bounds on lambda")

    boot = None
    if bootstrap > 0 and u >= 2:
        rng = np.random.default_rng(seed)
        boot = rng.multinomial(u, counts / u, size=bootstrap).astype(np.int64)
        boot_n = boot @ sizes

    def boot_interval(values: np.ndarray) -> tuple[float, float] | None:
        fracs = values / (boot_n / f)
        fracs = fracs[np.isfinite(fracs)]
        if len(fracs) < max(10, bootstrap // 2):
            return None
        low, high = np.percentile(fracs, [2.5, 97.5])
        return (float(low), float(high))

    boot_method = f"class bootstrap, {bootstrap} replicates, 2.5-97.5 percentiles"

    uniques_pg, note_pg = _poisson_gamma_uniques(sizes, counts, f)
    interval = boot_interval(_poisson_gamma_uniques_batch(sizes, boot, f)) if boot is not None else None
    estimates["poisson_gamma"] = make("poisson_gamma", uniques_pg, interval,
                                      boot_method if interval else None, note_pg)

    uniques_z = float(_zayatz_uniques_batch(sizes, counts, f)[0])
    interval = boot_interval(_zayatz_uniques_batch(sizes, boot, f)) if boot is not None else None
    estimates["zayatz"] = make("zayatz", uniques_z, interval, boot_method if interval else None)

    uniques_p, interval_p, note_p = _pitman_estimate(sizes, counts, f, n)
    estimates["pitman"] = make("pitman", uniques_p, interval_p,
                               "observed information, delta method, 95%" if interval_p else None,
                               note_p)

    uniques_s, note_s, fit_s = _snb_estimate(sizes, counts, f)
    interval = None
    if boot is not None and math.isfinite(uniques_s):
        interval = boot_interval(_snb_uniques_batch(sizes, boot, f, start=fit_s))
    estimates["snb"] = make("snb", uniques_s, interval, boot_method if interval else None, note_s)

    # Dankar et al.'s decision rule, with ARX's fall-backs to Zayatz.
    zay = estimates["zayatz"]
    if f <= DANKAR_THRESHOLD:
        chosen = "pitman" if estimates["pitman"].valid and estimates["pitman"].fraction > 0 else "zayatz"
    else:
        snb = estimates["snb"]
        if snb.valid and snb.fraction > 0 and snb.fraction <= (zay.fraction or 0.0):
            chosen = "snb"
        else:
            chosen = "zayatz"
    picked = estimates[chosen]
    dankar = UniquenessEstimate("dankar", picked.fraction, picked.sample_count,
                                picked.population_count, picked.interval,
                                picked.interval_method, f"chose {chosen}")
    return _finish(f, n, u, c1, pop, estimates, dankar, chosen, bootstrap, seed)


def _percent(x: float) -> str:
    if 0.0 < x < 1e-6:
        return "<0.0001%"
    return f"{100.0 * x:.3g}%"


def _finish(f, n, u, c1, pop, estimates, dankar, chosen, bootstrap, seed) -> PopulationUniqueness:
    valid = [(e.fraction, name) for name, e in estimates.items() if e.fraction is not None]
    (low, low_name), (high, high_name) = min(valid), max(valid)
    if low == high:
        spread = f"{_percent(low)} of the sample's records for every model"
    else:
        spread = (f"between {_percent(low)} ({low_name}) and {_percent(high)} ({high_name}) "
                  f"of the sample's records depending on the model")
    summary = (
        f"population uniqueness at f = {f:.4g}: {spread}; "
        f"Dankar's rule ({chosen}): {_percent(dankar.fraction or 0.0)}"
    )
    return PopulationUniqueness(
        sampling_fraction=f, records=n, classes=u, sample_uniques=c1, population_size=pop,
        estimates=estimates, dankar=dankar, dankar_model=chosen, summary=summary,
        bootstrap=bootstrap, seed=seed,
    )
