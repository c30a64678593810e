"""A report's inputs: everything it states, gathered into one canonical dict (the ledger stores
it), with the traceability figures, the distributions and, when the caller gave none, the
checks of the declared thresholds (judged by the criteria registry)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from ...criteria import declared_thresholds, headline_risk
from .values import canonical, format_value

REPORT_FORMAT = 1

# prosecutor-risk bins of the risk distribution (upper bounds, as ARX shows them)
RISK_BINS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.334, 0.5, 1.0)


# ----- traceability ---------------------------------------------------------------------------


def package_version() -> str | None:
    try:
        return metadata.version("anon_dagster")
    except metadata.PackageNotFoundError:
        return None


def git_revision(start: Path | None = None) -> str | None:
    """``git rev-parse HEAD`` of the checkout holding this package, or None when unavailable."""
    where = start or Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=10, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    rev = out.stdout.strip()
    return rev if out.returncode == 0 and len(rev) >= 7 else None


# ----- distributions --------------------------------------------------------------------------


def class_size_distribution(class_sizes: Sequence[int] | np.ndarray) -> list[dict[str, int]]:
    """Frequencies of frequencies: for each class size, how many classes and rows have it."""
    sizes = np.asarray(class_sizes, dtype=np.int64)
    sizes = sizes[sizes > 0]
    if sizes.size == 0:
        return []
    values, counts = np.unique(sizes, return_counts=True)
    return [{"size": int(s), "classes": int(c), "rows": int(s * c)} for s, c in zip(values, counts, strict=True)]


def risk_distribution(class_sizes: Sequence[int] | np.ndarray) -> list[dict[str, Any]]:
    """Share of rows per prosecutor-risk bin (a row's risk is 1/|its class|)."""
    sizes = np.asarray(class_sizes, dtype=np.int64)
    sizes = sizes[sizes > 0]
    n = int(sizes.sum())
    out, lower = [], 0.0
    risk = 1.0 / sizes if n else np.zeros(0)
    for upper in RISK_BINS:
        rows = int(sizes[(risk > lower) & (risk <= upper)].sum()) if n else 0
        out.append({"from": lower, "to": upper, "rows": rows, "share": rows / n if n else 0.0})
        lower = upper
    return out


# ----- inputs ---------------------------------------------------------------------------------


def _spec_payload(spec: Any) -> dict[str, Any]:
    return spec.model_dump(mode="json", exclude={"spec_path"})


def _check_dict(check: Any) -> dict[str, Any]:
    d = canonical(check)
    if not isinstance(d, dict) or "name" not in d or "passed" not in d:
        raise TypeError(f"a check must have a name and passed (got {check!r})")
    d.setdefault("severity", "error")
    return d


def threshold_checks(thresholds: Any, measures: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One check per declared threshold against ``measures`` (``RiskMeasures.to_dict()`` keys),
    judged by the criteria registry exactly as the release gate judges it (same names, figures,
    comparisons and summaries), in registry order.

    Used when the caller has not computed its own checks. ``thresholds`` is the spec's
    ``policy.thresholds`` or its dict. A threshold whose measure is absent fails: a risk that
    cannot be measured must not pass silently.
    """
    out = []
    for criterion, declared in declared_thresholds(thresholds):
        judged = criterion.judge(measures, declared, format_value)
        out.append({"name": criterion.check_name, "passed": judged.passed, "severity": "error",
                    "value": judged.value, "threshold": declared, "comparison": criterion.comparison,
                    "summary": judged.summary})
    return out


# Mondrian class ranges listed in a report (the record file beside it holds every class)
RANGES_SHOWN = 20


def record_for_report(record: Mapping[str, Any]) -> dict[str, Any]:
    """The transformation record's JSON as a report states it: what was done, not the per-class detail.

    Mondrian's class boxes (how to place a population into its classes) and all but the first
    :data:`RANGES_SHOWN` class ranges stay in the record file (``transformations.json``): a
    report, and the ledger entry that stores its inputs, stay small whatever the class count.
    """
    out = {k: v for k, v in record.items() if k != "suppression"}
    mondrian = out.get("mondrian")
    if isinstance(mondrian, Mapping):
        ranges = list(mondrian.get("ranges") or [])
        boxes = mondrian.get("boxes")
        classes = boxes.get("classes") if isinstance(boxes, Mapping) else mondrian.get("classes")
        out["mondrian"] = {
            **mondrian, "ranges": ranges[:RANGES_SHOWN],
            "ranges_truncated": int(mondrian.get("ranges_truncated") or 0) + max(len(ranges) - RANGES_SHOWN, 0),
            "boxes": f"{classes} class boxes, in the transformation record",
        }
    return out


def report_inputs(
    spec: Any,
    *,
    partition: str | None,
    data_hash: str,
    measures: Mapping[str, Any] | None = None,
    class_sizes: Sequence[int] | np.ndarray | None = None,
    population_uniqueness: Any = None,
    utility: Mapping[str, Any] | None = None,
    anonymization_record: Mapping[str, Any] | None = None,
    suppression: Mapping[str, Any] | None = None,
    composition: Any = None,
    dp: Any = None,
    checks: Sequence[Any] | None = None,
    mitigations: Sequence[str] | None = None,
    evaluated_at: str | datetime | None = None,
    seed: int | None = None,
    published_path: str | None = None,
    report_path: str | None = None,
    attacks: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything a report states, as one canonical dict (stored in the ledger entry).

    ``measures`` is ``RiskMeasures.to_dict()``; ``class_sizes`` the published classes' sizes
    (for the distributions); ``population_uniqueness`` the estimator result (``to_dict()``);
    ``utility`` ``{"generic": {...}, "queries": [{name, error_points, max_error_points,
    passed, ...}]}``; ``suppression`` ``{"rows", "share", "by_group": {...}}`` (taken from the
    anonymization record's ``suppression`` entry when not given); ``composition`` a
    :class:`~anon_dagster.release.composition.CompositionResult` or its dict; ``dp`` the DP
    aggregates' ``to_dict()`` (with ``budget``); ``checks`` the gate's outcomes (objects or
    dicts with name, passed, severity, value, threshold, summary), computed from the declared
    thresholds when omitted. ``attacks`` is the attacks' figures of ``policy.attacks``
    (:meth:`~anon_dagster.release.attacks.AttackRun.to_dict`: counts, rates, intervals and
    column names), taken from ``measures["attacks"]`` when not given (and then left out of the
    measures). ``evaluated_at`` defaults to now (UTC).
    """
    if evaluated_at is None:
        evaluated_at = datetime.now(UTC)
    if isinstance(evaluated_at, datetime):
        evaluated_at = evaluated_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    measures = dict(measures or {})
    if attacks is None and isinstance(measures.get("attacks"), Mapping):
        attacks = measures.pop("attacks")
    record = dict(anonymization_record or {})
    if suppression is None and isinstance(record.get("suppression"), Mapping):
        suppression = record["suppression"]
    if checks is None:
        checks = threshold_checks(spec.policy.thresholds, measures)
    if composition is not None:
        comp = canonical(composition)
        if not any(_check_dict(c)["name"] == "composition" for c in checks):
            checks = [*checks, {
                "name": "composition", "passed": bool(comp.get("passed")), "severity": "error",
                "value": comp.get("effective_k"), "threshold": comp.get("min_k"), "comparison": ">=",
                "summary": f"effective k after composition = {comp.get('effective_k')} "
                           f"(min_k {comp.get('min_k')}), {comp.get('exposed_persons')} persons exposed",
            }]
    budget = canonical(dp).get("budget") if isinstance(canonical(dp), dict) else None
    if budget and not any(_check_dict(c)["name"] == "epsilon_budget" for c in checks):
        checks = [*checks, {
            "name": "epsilon_budget", "passed": bool(budget.get("allowed")), "severity": "error",
            "value": budget.get("epsilon_after"), "threshold": budget.get("total_epsilon"), "comparison": "<=",
            "summary": f"epsilon after this release {budget.get('epsilon_after')} of "
                       f"{budget.get('total_epsilon')} ({budget.get('composition')} composition)",
        }]
    inputs = {
        "report_format": REPORT_FORMAT,
        "release": spec.release,
        "partition": partition or "",
        "data_hash": data_hash,
        "spec_hash": spec.spec_hash(),
        "spec": _spec_payload(spec),
        "package_version": package_version(),
        "git_revision": git_revision(),
        "seed": seed if seed is not None else spec.anonymization.seed,
        "evaluated_at": evaluated_at,
        "published_path": published_path,
        "report_path": report_path,
        "measures": measures,
        "class_sizes": class_size_distribution(class_sizes) if class_sizes is not None else None,
        "population_uniqueness": population_uniqueness,
        "utility": utility,
        "anonymization": record_for_report(record) or None,
        "suppression": suppression,
        "composition": composition,
        "dp": dp,
        "checks": [_check_dict(c) for c in checks],
        "mitigations": list(mitigations or []),
        # the figures of the declared adversary model, stated first in the report (none for
        # aggregates: no row is published, the epsilon budget governs)
        "headline_risk": (headline_risk(spec.policy.adversary, measures)
                          if spec.publication.mode == "rows" else None),
    }
    if attacks is not None:  # only with policy.attacks: other reports' inputs are as they were
        inputs["attacks"] = attacks
    return canonical(inputs)
