"""Every check a release spec declares, in the order the Dagster layer and the CLI show them.

A row release (``publication.mode: rows``) declares one check per threshold of
``policy.thresholds`` (registry order), one per attack of ``policy.attacks``
(``singling_out_risk``, ``linkability_risk``, ``inference_risk``; severity ``policy.attacks.
severity``), one per bound of ``policy.synthetic`` (``synthetic_copy_rate_gap``,
``synthetic_closer_to_train_gap``, ``synthetic_mia_auc``: the audit of a synthetic release),
one per utility query (``utility_<name>``), the composition check when
``composition`` is set, and the data contract. An aggregates release
(``publication.mode: aggregates``) declares only ``epsilon_budget``: no row is published, so
row-level thresholds do not apply; the population's epsilon budget governs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .attacks import declared_attacks
from .registry import declared_thresholds
from .synthetic import declared_synthetic

DATA_CONTRACT_TEXT = (
    "Great Expectations: published columns exactly the allowed set, no identifier or raw "
    "identifier value, pseudonym formats, partition keys not null"
)


@dataclass(frozen=True)
class DeclaredCheck:
    """One check a spec declares: its name, the spec key declaring it, and what it compares.

    ``severity`` is ``"error"`` (blocks the publication) or ``"warn"`` (reported only);
    ``comparison`` is ``">="``, ``"<="`` or ``"holds"``; ``threshold`` is the declared limit as
    plain JSON values (None when the check has no number, like the data contract).
    """

    name: str
    spec_key: str
    severity: str
    description: str
    comparison: str
    threshold: Any

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "spec_key": self.spec_key, "severity": self.severity,
                "description": self.description, "comparison": self.comparison,
                "threshold": self.threshold}


def declared_checks(spec: Any) -> list[DeclaredCheck]:
    """Every check ``spec`` (a :class:`~anon_dagster.spec.ReleaseSpec`) declares, in order
    (see the module docstring).

    Typed ``Any`` because the spec model is itself derived from this package (an import of it
    here would be a cycle).
    """
    pub = spec.publication
    if pub.mode == "aggregates":
        total = pub.total_epsilon if pub.total_epsilon is not None else pub.epsilon
        return [DeclaredCheck(
            name="epsilon_budget", spec_key="publication.epsilon", severity="error",
            description=(f"composed epsilon of the population after this release <= {total:g} "
                         f"({pub.budget_composition} composition), declared in publication.epsilon"
                         if total is not None else
                         "composed epsilon of the population after this release <= its total, "
                         "declared in publication.epsilon"),
            comparison="<=", threshold=float(total) if total is not None else None,
        )]
    checks = [
        DeclaredCheck(name=c.check_name, spec_key=c.spec_key, severity="error",
                      description=c.describe(threshold), comparison=c.comparison, threshold=threshold)
        for c, threshold in declared_thresholds(spec.policy.thresholds)
    ]
    attacks = getattr(spec.policy, "attacks", None)
    checks += [
        DeclaredCheck(name=c.check_name, spec_key=c.spec_key, severity=attacks.severity,
                      description=c.describe(threshold), comparison=c.comparison, threshold=threshold)
        for c, threshold in declared_attacks(attacks)
    ]
    checks += [
        DeclaredCheck(name=c.check_name, spec_key=c.spec_key, severity="error",
                      description=c.describe(threshold), comparison=c.comparison, threshold=threshold)
        for c, threshold in declared_synthetic(getattr(spec.policy, "synthetic", None))
    ]
    for q in spec.utility_queries:
        key = f"utility_queries.{q.name}"
        bound = ("largest error reported, no bound" if q.max_error_points is None
                 else f"error <= {q.max_error_points} points")
        checks.append(DeclaredCheck(
            name=f"utility_{q.name}", spec_key=key, severity=q.severity,
            description=(f"prevalence of {q.target} by {', '.join(q.group_by)}: {bound} "
                         f"({q.severity}), declared in {key}"),
            comparison="<=", threshold=q.max_error_points,
        ))
    if spec.composition is not None:
        comp = spec.composition
        checks.append(DeclaredCheck(
            name="composition", spec_key="composition.min_k", severity="error",
            description=(f"effective k of the intersection with earlier publications of population "
                         f"{comp.population!r} >= {comp.min_k}, declared in composition.min_k"),
            comparison=">=", threshold=comp.min_k,
        ))
    checks.append(DeclaredCheck(
        name="data_contract", spec_key="columns", severity="error",
        description=f"{DATA_CONTRACT_TEXT}, declared in columns", comparison="holds", threshold=None,
    ))
    return checks
