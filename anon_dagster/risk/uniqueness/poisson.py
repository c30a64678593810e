"""The Poisson model: population class sizes ``F_j ~ Poisson(lambda_j)``, sampled independently.

Sampled records ``n_j ~ Poisson(f lambda_j)`` and unsampled ones ``F_j - n_j ~ Poisson((1-f)
lambda_j)``. With the plug-in ``lambda_j = n_j / f``, a sample unique is population-unique
with probability ``exp(-(1 - f) / f)``, so ``U = c_1 exp(-(1 - f) / f) / f``. Its interval is
the exact (Garwood) 95 % interval for the Poisson mean given one sampled record, carried
through ``exp(-(1 - f) lambda)``.
"""

from __future__ import annotations

import math

from scipy import stats

# Exact (Garwood) 95 % bounds for a Poisson mean when one event was observed.
_GARWOOD_LOW_1 = float(stats.chi2.ppf(0.025, 2) / 2.0)
_GARWOOD_HIGH_1 = float(stats.chi2.ppf(0.975, 4) / 2.0)


def _poisson_probability(f: float, lam_times_f: float = 1.0) -> float:
    """P[no one else in the population] for a sample unique when ``f lambda = lam_times_f``."""
    return math.exp(-lam_times_f * (1.0 - f) / f)


def poisson_estimate(c1: int, n: int, f: float) -> tuple[float, tuple[float, float]]:
    """Poisson's ``U`` and its exact 95 % interval on the fraction ``U / N``."""
    p_point = _poisson_probability(f)
    p_low = _poisson_probability(f, _GARWOOD_HIGH_1)
    p_high = _poisson_probability(f, _GARWOOD_LOW_1)
    return c1 * p_point / f, (c1 * p_low / n, c1 * p_high / n)
