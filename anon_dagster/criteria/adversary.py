"""The adversary models of ``policy.adversary``: which risk is the headline, what each needs.

- prosecutor: knows the person is in the release; risk of a row is 1 / (size of its class).
  Headline figures ``prosecutor_max`` and ``prosecutor_avg``.
- journalist: knows the person is in the population, not whether in the release; risk of a
  row is 1 / (size of its class in the population). Headline ``journalist_max`` and
  ``journalist_avg``.
- marketer: re-identifies as many rows as possible, not one person; risk is the expected share
  of rows re-identified. Headline ``marketer``.

The journalist and marketer models need population class sizes: a declared
``policy.population``, or a ``policy.sampling_fraction`` below 1 (with a fraction of 1 the
population is the release itself and both models collapse into the prosecutor's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HEADLINE_RISKS: dict[str, tuple[str, ...]] = {
    "prosecutor": ("prosecutor_max", "prosecutor_avg"),
    "journalist": ("journalist_max", "journalist_avg"),
    "marketer": ("marketer",),
}

# adversaries whose risk is computed against population class sizes
NEEDS_POPULATION = ("journalist", "marketer")


def headline_risk(adversary: str, measures: Mapping[str, Any]) -> dict[str, Any]:
    """The figures the declared adversary names, read from ``RiskMeasures.to_dict()``.

    ``{"adversary", "figures": {key: value or None}}``; a figure the kernel could not measure
    (no population for a journalist) is None, never replaced by another model's figure.
    """
    keys = HEADLINE_RISKS[adversary]
    return {"adversary": adversary, "figures": {k: measures.get(k) for k in keys}}


def adversary_problem(adversary: str, population: Any, sampling_fraction: float | None) -> str | None:
    """Why the declared adversary cannot be modelled with what the policy declares, or None."""
    if adversary not in NEEDS_POPULATION or population is not None:
        return None
    if sampling_fraction is None:
        return (f"the {adversary} model needs population class sizes: declare policy.population "
                "or a policy.sampling_fraction below 1")
    if sampling_fraction >= 1:
        return (f"the {adversary} model needs population class sizes: with sampling_fraction 1 the "
                "population is the release itself and the model is the prosecutor's; declare "
                "policy.population or a policy.sampling_fraction below 1")
    return None
