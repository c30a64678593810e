"""Criteria: the one description of every threshold and of every check a spec declares.

:data:`REGISTRY` holds one :class:`Criterion` per key of ``policy.thresholds``; the spec model,
the release gate, the anonymizer's policy, the risk report and the check descriptions are
derived from it. :data:`ATTACK_CRITERIA` holds one :class:`AttackCriterion` per attack of
``policy.attacks`` (singling out, linkability, inference: residual risks judged with their
interval). :data:`SYNTHETIC_CRITERIA` holds one :class:`SyntheticCriterion` per bound of
``policy.synthetic`` (the audit of a synthetic release). :func:`declared_checks` lists every check a release spec declares, as the Dagster
layer and the CLI show them. Plain Python (no Dagster import).
"""

from .adversary import HEADLINE_RISKS, NEEDS_POPULATION, adversary_problem, headline_risk
from .attacks import (
    ATTACK_CRITERIA,
    EVIDENCE_MARGIN,
    AttackCriterion,
    AttackJudgement,
    attack_criterion_for_check,
    declared_attacks,
)
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
from .synthetic import (
    SYNTHETIC_CRITERIA,
    SyntheticCriterion,
    declared_synthetic,
    synthetic_criterion_for_check,
)

__all__ = [
    "ATTACK_CRITERIA",
    "EVIDENCE_MARGIN",
    "HEADLINE_RISKS",
    "NEEDS_POPULATION",
    "REGISTRY",
    "SYNTHETIC_CRITERIA",
    "TOLERANCE",
    "AttackCriterion",
    "AttackJudgement",
    "Criterion",
    "DeclaredCheck",
    "Judgement",
    "RecursiveCL",
    "SyntheticCriterion",
    "ThresholdType",
    "adversary_problem",
    "attack_criterion_for_check",
    "criterion_for_check",
    "declared_attacks",
    "declared_checks",
    "declared_synthetic",
    "declared_thresholds",
    "headline_risk",
    "plain_threshold",
    "synthetic_criterion_for_check",
]
