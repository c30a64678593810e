"""Dankar's rule: which model to trust, from the sampling fraction.

The decision rule of Dankar, El Emam, Neisa and Roffey (2012) as ARX's
``RiskModelPopulationUniqueness`` applies it: ``f <= 0.1``: Pitman (Zayatz when Pitman has no
valid estimate); otherwise the smaller of Zayatz and SNB (Zayatz when SNB has none). The
estimate it reports is the chosen model's, interval included.
"""

from __future__ import annotations

from .common import UniquenessEstimate

DANKAR_THRESHOLD = 0.1
"""Sampling fraction at or below which Dankar's rule uses Pitman's model."""


def dankar_rule(estimates: dict[str, UniquenessEstimate], f: float) -> tuple[str, UniquenessEstimate]:
    """The model Dankar's rule picks among ``estimates`` at sampling fraction ``f``, and its estimate."""
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
    return chosen, dankar
