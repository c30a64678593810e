"""Release spec v1, the ``policy`` block: adversary, population, and the declared thresholds.

The thresholds model is derived from the criteria registry (:data:`anon_dagster.criteria.
REGISTRY`): one optional field per criterion, validated by the criterion's threshold type, so
the spec accepts exactly the thresholds the gate judges.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, create_model

from ..criteria import REGISTRY, RecursiveCL, adversary_problem
from .columns import Integer, Number, _Model

__all__ = ["PolicySpec", "PopulationSpec", "RecursiveCL", "ThresholdsSpec", "policy_problems", "threshold_message"]


class PopulationSpec(_Model):
    """The population the published rows are drawn from: microdata or a frequency table."""

    path: str
    count_column: str | None = None
    # The population is matched on these QIs only (it lacks the others, e.g. an event date):
    # its class sizes are then an upper bound on F, so journalist risk is understated.
    qis: list[str] | None = None


ThresholdsSpec = create_model(
    "ThresholdsSpec",
    __base__=_Model,
    __module__=__name__,
    __doc__="Declared limits, one optional field per criterion of the registry; each one present "
            "becomes a blocking check.",
    **{key: (c.threshold_type.annotation | None, None) for key, c in REGISTRY.items()},
)


class PolicySpec(_Model):
    """The risk policy, declared before anyone measures."""

    adversary: Literal["prosecutor", "journalist", "marketer"] = "prosecutor"
    population: PopulationSpec | None = None
    sampling_fraction: Number | None = Field(default=None, gt=0, le=1)
    thresholds: ThresholdsSpec = ThresholdsSpec()  # type: ignore[valid-type]
    severity: Literal["low", "medium", "high", "very_high"] = "high"
    review_after_days: Integer = Field(default=365, ge=1)


def threshold_message(loc: tuple[Any, ...], error: Mapping[str, Any]) -> str | None:
    """The message for a pydantic error under ``policy.thresholds`` (None elsewhere).

    An unknown key lists the known thresholds; a bad value says what the criterion accepts.
    """
    if len(loc) < 3 or tuple(loc[:2]) != ("policy", "thresholds"):
        return None
    key = str(loc[2])
    if key not in REGISTRY:
        return f"unknown threshold {key!r} (known thresholds: {', '.join(REGISTRY)})"
    if error.get("type") == "extra_forbidden":
        return None  # an unknown key inside a threshold's own mapping: the generic message
    if isinstance(error.get("input"), bool):
        return f"must be {REGISTRY[key].threshold_type.text}, not the boolean {str(error['input']).lower()}"
    return f"must be {REGISTRY[key].threshold_type.text} ({error['msg'][:1].lower()}{error['msg'][1:]})"


def policy_problems(spec: Any) -> list[tuple[str, str]]:
    """``(key, message)`` for every inconsistency of the policy with the rest of ``spec``."""
    problems: list[tuple[str, str]] = []
    policy = spec.policy
    declared = [c for key, c in REGISTRY.items() if getattr(policy.thresholds, key) is not None]
    if any(c.needs_population for c in declared) and policy.population is None and policy.sampling_fraction is None:
        names = ", ".join(c.key for c in declared if c.needs_population)
        problems.append(("policy.population", f"thresholds {names} need a population or a sampling_fraction"))
    reason = adversary_problem(policy.adversary, policy.population, policy.sampling_fraction)
    if reason:
        problems.append(("policy.adversary", reason))
    if any(c.needs_sensitive for c in declared) and not spec.sensitive:
        names = ", ".join(c.key for c in declared if c.needs_sensitive)
        problems.append(("policy.thresholds", f"thresholds {names} (l-diversity, t-closeness) need a column "
                                              "with role 'sensitive'"))
    pop = policy.population
    if pop is not None and pop.qis is not None:
        if not pop.qis:
            problems.append(("policy.population.qis", "an empty list matches nothing: name the QIs the population holds"))
        for q in pop.qis:
            if q not in spec.quasi_identifiers:
                problems.append(("policy.population.qis", f"{q!r} is not a quasi-identifier of the spec"))
    k = policy.thresholds.k
    if k is not None and spec.anonymization.method != "none" and spec.anonymization.k < k:
        problems.append(("anonymization.k", f"k={spec.anonymization.k} is below the policy threshold k={k}: "
                                            "the release could never pass"))
    return problems
