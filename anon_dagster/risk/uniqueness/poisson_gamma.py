"""The Poisson-Gamma model: the Poisson model with ``lambda_j ~ Gamma(alpha, scale beta)``.

So ``n_j`` is negative binomial. Given ``n_j``, ``lambda_j ~ Gamma(alpha + n_j, rate 1/beta +
f)`` and ``P[no one else in the population] = ((1/beta + f) / (1/beta + 1)) ** (alpha + n_j)``.
``alpha`` and ``beta`` are fitted by moments on the observed class sizes (mean ``m``, variance
``v``): ``f beta = v/m - 1``, ``alpha = m**2 / (v - m)`` (Bethlehem, Keller and Pannekoek 1990;
Skinner and Holmes 1998). Without overdispersion (``v <= m``) it is the Poisson model. It
understates at small ``f`` on heavy-tailed populations.
"""

from __future__ import annotations

import math

import numpy as np

from .common import _count_of_size
from .poisson import _poisson_probability


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
