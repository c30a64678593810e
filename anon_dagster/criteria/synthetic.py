"""The synthetic-release criteria of ``policy.synthetic``: one blocking check per bound declared.

A synthetic release is audited (:mod:`anon_dagster.risk.synthetic_audit`) against the real
records it was made from (*train*) and real records it never saw (*control*, withheld before
the synthesis). :data:`SYNTHETIC_CRITERIA` holds one :class:`SyntheticCriterion` per key,
stating, like the threshold registry (:mod:`.registry`) does for ``policy.thresholds``:

- the spec key (``policy.synthetic.<key>``) and what it accepts (a fraction in [0, 1]);
- the audit figure it reads (``measured_key``, a key of ``SyntheticAudit.figures()``) and the
  check that judges it (``check_name``, stable: users select and alert on these names);
- how it is judged: the figure is at most the bound (a figure exactly at it, up to
  :data:`~.registry.TOLERANCE`, passes; an unmeasured one never does).

The spec model (:mod:`anon_dagster.spec.policy`), the declared checks, the gate and the report
derive from it. Plain Python (no Dagster import).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .registry import (
    FRACTION,
    TOLERANCE,
    Judgement,
    ThresholdType,
    _exact,
    _number,
    declared_bounds,
)


@dataclass(frozen=True)
class SyntheticCriterion:
    """One key of ``policy.synthetic`` (see the module docstring)."""

    key: str
    check_name: str
    measured_key: str
    label: str
    definition: str
    threshold_type: ThresholdType = FRACTION
    comparison: str = "<="

    @property
    def spec_key(self) -> str:
        """The dotted key of the spec that declares this bound."""
        return f"policy.synthetic.{self.key}"

    def describe(self, threshold: Any) -> str:
        """The check's description: what is compared with what, and the spec key declaring it."""
        return f"{self.label} {self.comparison} {_exact(threshold)}, declared in {self.spec_key}"

    def value(self, figures: Mapping[str, Any]) -> float | None:
        """The audit figure this criterion judges (None when absent or not a number)."""
        return _number(figures.get(self.measured_key))

    def judge(self, figures: Mapping[str, Any], threshold: Any,
              fmt: Callable[[Any], str] = _exact) -> Judgement:
        """The verdict on ``figures`` (``SyntheticAudit.figures()``)."""
        value = self.value(figures)
        if value is None:
            return Judgement(None, False, f"{self.label}: not measured (the audit gave no "
                                          f"'{self.measured_key}'), so it cannot pass")
        passed = bool(value <= float(threshold) + TOLERANCE)
        verdict = "meets" if passed else "violates"
        return Judgement(value, passed, f"{self.label} = {fmt(value)} {verdict} the threshold "
                                        f"{self.comparison} {fmt(float(threshold))}")


SYNTHETIC_CRITERIA: dict[str, SyntheticCriterion] = {c.key: c for c in (
    SyntheticCriterion(
        key="copy_rate_gap", check_name="synthetic_copy_rate_gap", measured_key="copy_rate_gap",
        label="exact-copy rate gap (train - control)",
        definition="share of synthetic rows equal to a training row minus the share equal to a control row",
    ),
    SyntheticCriterion(
        key="closer_to_train_gap", check_name="synthetic_closer_to_train_gap", measured_key="closer_to_train_gap",
        label="closer-to-train gap (DCR)",
        definition="share of synthetic rows closer to the training rows than to the control rows (ties half), "
                   "minus 0.5",
    ),
    SyntheticCriterion(
        key="mia_auc", check_name="synthetic_mia_auc", measured_key="mia_auc",
        label="membership-inference AUC",
        definition="AUC of an attacker scoring training against control records by their distance to the "
                   "closest synthetic row (the nearer, the likelier a member)",
    ),
)}

_BY_CHECK = {c.check_name: c for c in SYNTHETIC_CRITERIA.values()}


def synthetic_criterion_for_check(name: str) -> SyntheticCriterion | None:
    """The synthetic criterion judged by the check named ``name`` (None for any other check)."""
    return _BY_CHECK.get(name)


def declared_synthetic(bounds: Any) -> list[tuple[SyntheticCriterion, float]]:
    """``(criterion, threshold)`` for every bound declared in ``policy.synthetic`` (a model, a
    mapping, or None), in registry order."""
    return declared_bounds(SYNTHETIC_CRITERIA, bounds)


__all__ = ["SYNTHETIC_CRITERIA", "SyntheticCriterion", "declared_synthetic", "synthetic_criterion_for_check"]
