"""Criteria: the one description of every threshold and of every check a spec declares.

:data:`REGISTRY` holds one :class:`Criterion` per key of ``policy.thresholds``; the spec model,
the release gate, the anonymizer's policy, the risk report and the check descriptions are
derived from it. :func:`declared_checks` lists every check a release spec declares, as the
Dagster layer and the CLI show them. Plain Python (no Dagster import).
"""

from .adversary import HEADLINE_RISKS, NEEDS_POPULATION, adversary_problem, headline_risk
from .declared import DeclaredCheck, declared_checks
from .registry import (
    REGISTRY,
    TOLERANCE,
    Criterion,
    Judgement,
    RecursiveCL,
    ThresholdType,
    criterion_for_check,
    declared_thresholds,
    plain_threshold,
)

__all__ = [
    "HEADLINE_RISKS",
    "NEEDS_POPULATION",
    "REGISTRY",
    "TOLERANCE",
    "Criterion",
    "DeclaredCheck",
    "Judgement",
    "RecursiveCL",
    "ThresholdType",
    "adversary_problem",
    "criterion_for_check",
    "declared_checks",
    "declared_thresholds",
    "headline_risk",
    "plain_threshold",
]
