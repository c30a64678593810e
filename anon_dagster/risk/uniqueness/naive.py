"""The naive model: every sample unique is taken as population-unique.

``fraction = c_1 / n``. A population unique that was sampled is always a sample unique, so this
is an upper bound; it overstates strongly at small ``f``. It has no interval (it is an observed
figure).
"""

from __future__ import annotations

from .common import UniquenessEstimate


def naive_estimate(c1: int, n: int, pop: float) -> UniquenessEstimate:
    """The naive estimate for ``c1`` sample uniques among ``n`` records of a population of ``pop``."""
    naive = c1 / n
    return UniquenessEstimate(
        "naive", naive, float(c1), naive * pop, None, None,
        "every sample unique counted as population-unique (upper bound)")
