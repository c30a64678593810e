"""Spec-level entry points: compose a release, record its evaluation, rebuild its report.

These are what the Dagster layer and the CLI call; they only tie the ledger, the composition
check and the report to a release spec.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..errors import UserError
from .composition import CompositionResult, check_composition, class_assignment
from .dp import (
    DPAggregates,
    IntegerSource,
    aggregates_config,
    budget_population,
    dp_aggregates,
    epsilon_spend,
)
from .ledger import ClassAssignmentRows, Ledger, Publication, RecordOutcome
from .report import build_report, render_json


def spec_assignment(
    spec: Any,
    published: pd.DataFrame,
    persons: pd.Series | Sequence[object],
    *,
    linkage_key: bytes | None,
) -> ClassAssignmentRows:
    """The class assignment of ``published`` over the spec's quasi-identifiers."""
    return class_assignment(published, spec.quasi_identifiers, persons, linkage_key=linkage_key)


def compose(
    spec: Any,
    assignment: ClassAssignmentRows,
    ledger: Ledger,
    *,
    partition: str | None,
) -> CompositionResult | None:
    """The composition check of a spec's release; None when the spec declares no composition."""
    if spec.composition is None:
        return None
    return check_composition(
        assignment, ledger, population=spec.composition.population, release=spec.release,
        partition=partition, min_k=spec.composition.min_k,
    )


def dp_release(
    spec: Any,
    df: pd.DataFrame,
    ledger: Ledger,
    *,
    rng: IntegerSource | None = None,
) -> tuple[DPAggregates, dict[str, Any]]:
    """Noisy aggregates of a ``publication.mode: aggregates`` release, after its budget check.

    The budget is checked *before* any noise is drawn (a refused release computes nothing)
    and raises :class:`~anon_dagster.release.ledger.BudgetExceeded`. Returns the aggregates and the dict to pass as
    ``report_inputs(dp=...)`` (mechanism, per-cell error, budget state). Record the release
    with ``record_evaluation(..., epsilon_spend=epsilon_spend(spec))``, which spends the
    budget atomically (and refuses again if another release spent it meanwhile).
    """
    config = aggregates_config(spec)
    eps, total, method, delta = epsilon_spend(spec)
    state = ledger.budget(budget_population(spec), epsilon=eps, total=total, composition=method, delta=delta)
    if not state.allowed:
        raise state.refusal(spec.release)
    result = dp_aggregates(df, config, spec.publication.epsilon, rng)
    return result, {**result.to_dict(), "budget": state.to_dict()}


def record_evaluation(
    ledger: Ledger,
    spec: Any,
    inputs: Mapping[str, Any],
    *,
    assignment: ClassAssignmentRows | None = None,
    qis: Mapping[str, Any] | None = None,
    k: int | None = None,
    rows: int | None = None,
    report_path: str | None = None,
    epsilon_spend: tuple[float, float, str, float | None] | None = None,
    pending: Mapping[str, str] | None = None,
) -> tuple[RecordOutcome, dict[str, Any]]:
    """Build the report from ``inputs`` and record the evaluation in the ledger.

    A publishable report is recorded as a publication (it counts for later compositions and,
    for a DP release, spends ``epsilon_spend``); a report that is not publishable is recorded
    as a failed evaluation, kept for its report only. With ``pending`` (``published_path``,
    ``published_root``, ``file_hash`` of the staged file) a publishable report is recorded as
    a pending entry, marked published once its files are in place
    (:mod:`anon_dagster.release.publication`). ``qis`` defaults to the anonymization record's
    ``levels`` (global recoding) or the list of QIs. Returns the ledger outcome and the report.
    """
    report = build_report(inputs)
    publishable = report["verdict"]["publishable"]
    if qis is None:
        anon = inputs.get("anonymization") or {}
        qis = anon.get("levels") or {q: None for q in spec.quasi_identifiers}
    population = spec.composition.population if spec.composition else None
    if epsilon_spend is not None:
        population = budget_population(spec)
    metrics = inputs.get("measures") or {}
    outcome = ledger.record(
        release=spec.release, partition=inputs.get("partition") or "", population=population,
        spec_hash=inputs["spec_hash"], data_hash=inputs["data_hash"], qis=dict(qis),
        k=k if k is not None else metrics.get("k"), rows=rows if rows is not None else metrics.get("rows"),
        status=("pending" if pending is not None else "published") if publishable else "failed",
        assignment=assignment if publishable else None,
        published_at=inputs["evaluated_at"], report_path=report_path or inputs.get("report_path"),
        report_json=render_json(report), report_inputs=dict(inputs),
        epsilon_spend=epsilon_spend if publishable else None,
        **(dict(pending) if pending is not None and publishable else {}),
    )
    return outcome, report


def find_entry(ledger: Ledger, release: str, partition: str | None, publication_id: int | None = None) -> Publication:
    """The entry a report is rebuilt from: by id, else the latest of release/partition."""
    if publication_id is not None:
        entry = ledger.get(publication_id)
        if entry.release != release:
            raise UserError(f"ledger entry {publication_id} belongs to release {entry.release!r}, not {release!r}")
        return entry
    entry = ledger.latest(release, partition)
    if entry is None:
        where = f"{release}/{partition}" if partition else release
        raise UserError(f"{ledger.path}: no ledger entry for {where} (publish or evaluate it first)")
    return entry


def rebuild_report(entry: Publication) -> dict[str, Any]:
    """The report of a ledger entry, rebuilt from the inputs stored with it."""
    if entry.report_inputs is None:
        raise UserError(f"ledger entry {entry.id} ({entry.release}/{entry.partition}) holds no report inputs")
    return build_report(entry.report_inputs)
