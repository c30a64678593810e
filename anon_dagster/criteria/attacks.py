"""The attack criteria of ``policy.attacks``: one blocking check per attack the spec declares.

The attacks of :mod:`anon_dagster.risk.attacks` (singling out, linkability, inference) report a
*residual risk*, ``(main - control) / (1 - control)``, with a 95 % interval. A spec bounds it per
attack; :data:`ATTACK_CRITERIA` holds one :class:`AttackCriterion` per key, stating, like the
threshold registry (:mod:`.registry`) does for ``policy.thresholds``:

- the spec key (``policy.attacks.<key>``) and what it accepts (a fraction in [0, 1]);
- the check that judges it (``check_name``, stable) and the attack results it judges
  (``attacks``: singling out judges its univariate and multivariate predicates, inference every
  secret): the check's figure is the *worst* of them;
- how it is judged (:meth:`AttackCriterion.judge`): it passes when every result's residual risk
  (point estimate) is at most the threshold **and** its interval's upper end is at most the
  threshold plus :data:`EVIDENCE_MARGIN`. A point estimate under the threshold with an interval
  reaching far above it is not evidence that the release is safe (too few targets: a small
  control set, a budget cut): the check fails as "not enough evidence".

A result is what :meth:`~anon_dagster.risk.attacks.AttackResult.to_json` gives: rates, counts,
intervals and column names, never a value of any person. Plain Python (no Dagster import).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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

# How far above the threshold the residual risk's interval may reach before the check fails for
# lack of evidence, even when the point estimate passes.
EVIDENCE_MARGIN = 0.10


@dataclass(frozen=True)
class AttackJudgement(Judgement):
    """:class:`~.registry.Judgement` of one attack check, with why it failed: ``reason`` is
    ``"passed"``, ``"risk"`` (the point estimate exceeds the threshold), ``"evidence"`` (the
    interval reaches beyond threshold + :data:`EVIDENCE_MARGIN`) or ``"unmeasured"``; ``high``
    the largest upper end of the judged results' intervals."""

    reason: str = "passed"
    high: float | None = None


@dataclass(frozen=True)
class AttackCriterion:
    """One key of ``policy.attacks`` (see the module docstring)."""

    key: str
    check_name: str
    attacks: tuple[str, ...]
    label: str
    definition: str
    threshold_type: ThresholdType = FRACTION
    comparison: str = "<="

    @property
    def spec_key(self) -> str:
        """The dotted key of the spec that declares this attack's threshold."""
        return f"policy.attacks.{self.key}"

    def describe(self, threshold: Any) -> str:
        """The check's description: what is compared with what, and the spec key declaring it."""
        return (f"{self.label} {self.comparison} {_exact(threshold)} (and its 95% interval's upper end <= "
                f"threshold + {EVIDENCE_MARGIN:g}), declared in {self.spec_key}")

    def results(self, figures: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """The attack results this criterion judges, in the order given."""
        return [r for r in figures if r.get("attack") in self.attacks]

    def value(self, figures: Sequence[Mapping[str, Any]]) -> float | None:
        """The worst residual risk (point estimate) of the judged results; None when one of them
        has none (no main or no control target), or there is no result."""
        risks = [_number((r.get("residual") or {}).get("risk")) for r in self.results(figures)]
        if not risks or any(v is None for v in risks):
            return None
        return max(risks)  # type: ignore[type-var]

    def judge(self, figures: Sequence[Mapping[str, Any]], threshold: Any,
              fmt: Callable[[Any], str] = _exact) -> AttackJudgement:
        """The verdict on ``figures`` (``AttackResult.to_json()`` of every attack run)."""
        judged = self.results(figures)
        value = self.value(figures)
        if value is None:
            why = ("no such attack was run" if not judged else
                   "an attack had no main or no control target")
            return AttackJudgement(None, False, f"{self.label}: not measured ({why}), so it cannot pass",
                                   reason="unmeasured")
        thr = float(threshold)
        worst = max(judged, key=lambda r: (r["residual"]["risk"], r["residual"].get("high") or 0.0))
        highs = [_number(r["residual"].get("high")) for r in judged]
        high = max(h if h is not None else 1.0 for h in highs)
        text = f"{self.label} = {fmt(value)} {_interval(worst, fmt)} ({_rates(worst, fmt)}{_which(worst, judged)})"
        cut = [r["cut"] for r in judged if r.get("cut")]
        cut_text = f"; cut by its budget: {cut[0]}" if cut else ""
        if value > thr + TOLERANCE:
            return AttackJudgement(value, False, f"{text} violates the threshold <= {fmt(thr)}{cut_text}",
                                   reason="risk", high=high)
        limit = thr + EVIDENCE_MARGIN
        if high > limit + TOLERANCE:
            widest = max(judged, key=lambda r: r["residual"].get("high") or 1.0)
            targets = widest.get("targets") or {}
            return AttackJudgement(
                value, False,
                f"{text} is within the threshold <= {fmt(thr)}, but the 95% interval reaches {fmt(high)}, "
                f"beyond threshold + {EVIDENCE_MARGIN:g} = {fmt(limit)}: not enough evidence "
                f"({targets.get('main', 0)} main and {targets.get('control', 0)} control targets){cut_text}",
                reason="evidence", high=high)
        return AttackJudgement(value, True, f"{text} meets the threshold <= {fmt(thr)}{cut_text}",
                               reason="passed", high=high)


def _interval(result: Mapping[str, Any], fmt: Callable[[Any], str]) -> str:
    residual = result["residual"]
    return f"[{fmt(residual.get('low'))}, {fmt(residual.get('high'))}]"


def _rates(result: Mapping[str, Any], fmt: Callable[[Any], str]) -> str:
    return " / ".join(f"{side} {fmt((result.get(side) or {}).get('rate'))}" for side in ("main", "control", "baseline"))


def _which(worst: Mapping[str, Any], judged: Sequence[Mapping[str, Any]]) -> str:
    if len(judged) < 2:
        return ""
    name = worst["attack"] if worst.get("secret") is None else f"secret {worst['secret']}"
    return f"; worst of {len(judged)}: {name}"


ATTACK_CRITERIA: dict[str, AttackCriterion] = {c.key: c for c in (
    AttackCriterion(
        key="singling_out", check_name="singling_out_risk",
        attacks=("singling_out_univariate", "singling_out_multivariate"),
        label="singling-out residual risk",
        definition="predicates built from a target's quasi-identifiers isolate them (one predicate per "
                   "column, and the conjunction of all); the worse of the two",
    ),
    AttackCriterion(
        key="linkability", check_name="linkability_risk", attacks=("linkability",),
        label="linkability residual risk",
        definition="two partial records of a target, sharing no column, meet at the same person",
    ),
    AttackCriterion(
        key="inference", check_name="inference_risk", attacks=("inference",),
        label="inference residual risk",
        definition="a target's secret is guessed from the class their quasi-identifiers fall in; "
                   "the worst secret",
    ),
)}

_BY_CHECK = {c.check_name: c for c in ATTACK_CRITERIA.values()}


def attack_criterion_for_check(name: str) -> AttackCriterion | None:
    """The attack criterion judged by the check named ``name`` (None for any other check)."""
    return _BY_CHECK.get(name)


def declared_attacks(attacks: Any) -> list[tuple[AttackCriterion, float]]:
    """``(criterion, threshold)`` for every attack declared in ``policy.attacks`` (a model, a
    mapping, or None), in registry order."""
    return declared_bounds(ATTACK_CRITERIA, attacks)


__all__ = ["ATTACK_CRITERIA", "EVIDENCE_MARGIN", "AttackCriterion", "AttackJudgement",
           "attack_criterion_for_check", "declared_attacks"]
