"""From a release spec to Dagster definitions: assets, blocking checks, job and schedule.

:class:`ReleaseTranslator` decides how a spec becomes Dagster objects (asset keys, group,
check names, job and schedule names); :func:`build_release` builds them. For a release named
``r`` the group ``r`` holds::

    r/raw ──► r/pseudonymized ──► r/anonymized ──► r/published
                                   └─ blocking checks: one per threshold, one per utility
                                      query, composition, data_contract

Every check is partition-aware (same partitions as the asset), blocking with ERROR severity
(WARN only for a utility query the spec marks ``severity: warn``), and always yields a result:
an error while checking becomes a failed result that says what went wrong.
``r/published`` re-verifies the gate itself before writing anything, so a run that selects
only it cannot publish what the checks refused.
"""


import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckKey,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    AssetKey,
    AssetsDefinition,
    AssetSelection,
    AutomationCondition,
    Failure,
    MaterializeResult,
    MetadataValue,
    PartitionsDefinition,
    ScheduleDefinition,
    TableColumn,
    TableRecord,
    TableSchema,
    asset,
    build_schedule_from_partitioned_job,
    define_asset_job,
    multi_asset_check,
)

from ..errors import SpecError, UserError
from ..io import plain_json, write_bytes_atomic, write_table_atomic
from ..partitions import UNPARTITIONED, read_release_data
from ..pseudonymize.keystore import check_apart_from
from ..release import gate
from ..spec import ReleaseSpec, check_data
from . import core
from .io_manager import AT_REST_KEY
from .partitions import partitions_def_for


@dataclass(frozen=True)
class ReleaseTranslator:
    """Names of a release's Dagster objects; override to change the conventions."""

    spec: ReleaseSpec

    @property
    def group(self) -> str:
        return self.spec.release

    def asset_key(self, step: str) -> AssetKey:
        return AssetKey([self.spec.release, step])

    @property
    def job_name(self) -> str:
        return f"{self.spec.release}_release"

    @property
    def schedule_name(self) -> str:
        return f"{self.spec.release}_schedule"

    def check_names(self) -> list[tuple[str, str]]:
        """``(check name, severity)`` of every check on the anonymized asset, in order."""
        if self.spec.publication.mode == "aggregates":
            # statistics under differential privacy: governed by the population's epsilon
            # budget; no row is published, so row-level thresholds do not apply
            return [("epsilon_budget", "error")]
        names = [(gate.THRESHOLD_CHECKS[k][0], "error")
                 for k in self.spec.policy.thresholds.model_dump(exclude_none=True)]
        names += [(f"utility_{q.name}", q.severity) for q in self.spec.utility_queries]
        if self.spec.composition is not None and self.spec.publication.mode == "rows":
            names.append(("composition", "error"))
        names.append(("data_contract", "error"))
        return names


@dataclass
class ReleaseDefinitions:
    """Everything built for one release."""

    spec: ReleaseSpec
    translator: ReleaseTranslator
    assets: list[AssetsDefinition]
    checks: list[Any]
    job: Any  # the release's partitioned asset job
    schedule: ScheduleDefinition | None
    partitions_def: PartitionsDefinition | None


# ----- shared by the assets and checks ---------------------------------------------------------


def partition_of(context: AssetExecutionContext | AssetCheckExecutionContext) -> str | None:
    return context.partition_key if context.has_partition_key else None


def reports_folder(spec: ReleaseSpec, reports_dir: str | None, partition: str | None) -> Path:
    """Where a partition's transformation record and risk report files go.

    ``reports_dir`` (may hold {release}) or, by default, ``reports/<release>`` beside the folder
    of the spec file, like the demo's ``published/``.
    """
    base = spec.resolve(reports_dir) if reports_dir else spec.resolve("../reports/{release}")
    return base / (partition or UNPARTITIONED)


def histogram_table(hist: list[dict[str, Any]]) -> MetadataValue:
    schema = TableSchema(columns=[TableColumn("class_size", "string"), TableColumn("classes", "int"),
                                  TableColumn("rows", "int")])
    records = [TableRecord({"class_size": r["sizes"], "classes": r["classes"], "rows": r["rows"]}) for r in hist]
    return MetadataValue.table(records=records, schema=schema)


def frame_table(df: pd.DataFrame, limit: int = 50) -> MetadataValue:
    """A small DataFrame as a metadata table (values as text, except sizes and figures)."""
    df = df.head(limit)
    columns, records = [], []
    for c in df.columns:
        numeric = pd.api.types.is_numeric_dtype(df[c])
        columns.append(TableColumn(str(c), "float" if numeric else "string"))
    for row in df.itertuples(index=False):
        rec = {}
        for c, v in zip(df.columns, row, strict=True):
            rec[str(c)] = gate.as_float(v) if pd.api.types.is_numeric_dtype(df[c]) else ("" if pd.isna(v) else str(v))
        records.append(TableRecord(rec))
    return MetadataValue.table(records=records, schema=TableSchema(columns=columns))


def outcome_metadata(outcome: gate.Outcome, hist: list[dict[str, Any]] | None,
                     worst: pd.DataFrame | None) -> dict[str, Any]:
    """What a reviewer needs next to a verdict: value, threshold, summary and the evidence."""
    meta: dict[str, Any] = {"summary": MetadataValue.md(outcome.summary)}
    value = outcome.value
    if isinstance(value, bool) or value is None:
        meta["measured"] = MetadataValue.text("n/a" if value is None else str(value))
    elif isinstance(value, int):
        meta["measured"] = MetadataValue.int(value)
    else:
        meta["measured"] = MetadataValue.float(gate.as_float(value) or 0.0) if gate.as_float(value) is not None else MetadataValue.text(str(value))
    thr = outcome.threshold
    meta["threshold"] = MetadataValue.text("none" if thr is None else f"{outcome.comparison} {json.dumps(thr) if isinstance(thr, dict) else thr}")
    if hist is not None:
        meta["class_size_histogram"] = histogram_table(hist)
    if worst is not None:
        meta["worst_classes"] = frame_table(worst)
    table = outcome.details.get("table")
    if isinstance(table, pd.DataFrame):
        meta["per_group"] = frame_table(table)
    if "failed" in outcome.details:
        meta["failed_expectations"] = MetadataValue.json(outcome.details["failed"])
    if "composition" in outcome.details:
        meta["composition"] = MetadataValue.json(outcome.details["composition"])
    return meta


def composition_outcome(spec: ReleaseSpec, anonymized: pd.DataFrame, ledger: Any,
                        partition: str | None) -> gate.Outcome:
    """Intersection of this release with every earlier publication of the same population."""
    comp = spec.composition
    assert comp is not None
    data = gate.publishable_view(anonymized)
    assignment = core.class_assignment(data, spec.quasi_identifiers, anonymized[gate.LINKAGE_COLUMN])
    result = core.check_composition(assignment, ledger, population=comp.population, release=spec.release,
                               partition=partition, min_k=comp.min_k)
    summary = (f"effective k = {result.effective_k} against {len(result.compared)} earlier "
               f"publication(s) of population {comp.population!r} (minimum {comp.min_k}); "
               f"{result.exposed_persons} persons exposed. {result.text}")
    details = result.to_dict()
    return gate.Outcome(name="composition", passed=bool(result.passed), value=int(result.effective_k),
                          threshold=comp.min_k, comparison=">=", summary=summary,
                          details={"composition": details})


def _severity(outcome: gate.Outcome) -> AssetCheckSeverity:
    return AssetCheckSeverity.ERROR if outcome.severity == "error" else AssetCheckSeverity.WARN


# ----- the factory -------------------------------------------------------------------------


def build_release(spec: ReleaseSpec, *, reports_dir: str | None = None, automate: bool = False,
                  translator: ReleaseTranslator | None = None) -> ReleaseDefinitions:
    """Build the assets, checks, job and schedule of one release (see the module docstring)."""
    t = translator or ReleaseTranslator(spec)
    pdef = partitions_def_for(spec)
    raw_key, pseudo_key, anon_key, pub_key = (t.asset_key(s) for s in ("raw", "pseudonymized", "anonymized", "published"))
    needs_keystore = bool(spec.pseudonymized) or spec.composition is not None
    at_rest = "encrypted" if needs_keystore else "encrypted-if-available"
    spec_label = str(spec.spec_path) if spec.spec_path else spec.release
    common = {"group_name": t.group, "partitions_def": pdef}
    automation = (AutomationCondition.eager() & AutomationCondition.all_deps_blocking_checks_passed()) if automate else None

    @asset(key=raw_key, **common, kinds={"pandas", "parquet"},
           metadata={AT_REST_KEY: at_rest, "spec": spec_label},
           required_resource_keys={"keystore"},
           description=f"Rows of {spec.release}'s source for the partition, checked against the spec.")
    def raw(context: AssetExecutionContext) -> pd.DataFrame:
        if needs_keystore:
            # opened first: a key store that cannot be opened, or that sits among the release's
            # data, fails the run before any write
            check_apart_from(context.resources.keystore.open(), spec.data_folders(), f"release {spec.release!r}")
        df, path = read_release_data(spec, partition_of(context))
        check_data(spec, df, source=path)
        context.add_output_metadata({"rows": len(df), "source": str(path), "columns": len(df.columns)})
        return df

    @asset(key=pseudo_key, **common, kinds={"pandas", "parquet"},
           ins={"raw": AssetIn(key=raw_key)}, metadata={AT_REST_KEY: at_rest},
           required_resource_keys={"keystore"},
           description="Identifiers replaced by keyed pseudonyms (or dropped); still personal data.")
    def pseudonymized(context: AssetExecutionContext, raw: pd.DataFrame) -> pd.DataFrame:
        meta: dict[str, Any] = {"rows": len(raw)}
        if spec.pseudonymized:
            store = context.resources.keystore.open()
            out, summary = core.pseudonymize(raw, spec, store)
            meta["pseudonymization"] = MetadataValue.json(plain_json(summary.to_dict()))
        else:
            out = raw.drop(columns=[c for c in spec.identifiers if c in raw.columns])
        if spec.composition is not None:
            # the ledger's linkage pseudonym, under its own purpose key: never published
            key = context.resources.keystore.derive_key("ledger-linkage")
            out[gate.LINKAGE_COLUMN] = core.linkage_pseudonyms(raw[spec.composition.person].reset_index(drop=True), key)
        context.add_output_metadata(meta)
        return out

    @asset(key=anon_key, **common, kinds={"pandas", "parquet"},
           ins={"pseudonymized": AssetIn(key=pseudo_key)}, metadata={AT_REST_KEY: "owner-only"},
           required_resource_keys={"ledger"},
           description="Generalized and suppressed per the spec; its risk checks gate the publication.")
    def anonymized(context: AssetExecutionContext, pseudonymized: pd.DataFrame) -> pd.DataFrame:
        partition = partition_of(context)
        result, unreachable = anonymize_or_relax(pseudonymized, spec)
        data = result.data
        record = {**result.record, **({"policy_unreachable": unreachable} if unreachable else {})}
        # the population in the published classes, placed with this very record
        population = gate.population_in_classes(spec, data, record)
        outcomes, measures = gate.gate_outcomes(spec, data, pseudonymized, population)
        composition = None
        if spec.composition is not None and spec.publication.mode == "rows":
            comp = _safe_composition(spec, data, context, partition)
            outcomes.append(comp)
            composition = comp.details.get("composition")
        report = _write_report(spec, reports_folder(spec, reports_dir, partition), partition, data, measures,
                               outcomes, record, composition, unreachable)
        if unreachable:
            context.log.warning(f"{spec.release} {partition or ''}: {unreachable}")
        context.add_output_metadata({
            **({"policy_unreachable": MetadataValue.md(unreachable)} if unreachable else {}),
            "rows": len(data), "suppressed": int(result.suppressed),
            "k": measures.get("k"), "verdict": report["verdict"]["verdict"],
            "risk_report": MetadataValue.md(core.render(report, "md")),
            "transformation_record": MetadataValue.md("```json\n" + json.dumps(plain_json(_record_summary(record)), indent=2) + "\n```"),
            "report_files": MetadataValue.path(str(reports_folder(spec, reports_dir, partition))),
            "class_size_histogram": histogram_table(gate.class_size_histogram(measures)),
        })
        return data

    with warnings.catch_warnings():
        # partition-aware checks are a Dagster preview feature, used knowingly: without them a
        # check on a partitioned asset reports one unresolved result for all partitions
        warnings.filterwarnings("ignore", message="Specifying a partitions_def on an AssetCheckSpec")
        check_specs = [
            AssetCheckSpec(name, asset=anon_key, blocking=True, partitions_def=pdef,
                           additional_deps=[raw_key, pseudo_key], description=_check_description(spec, name))
            for name, _ in t.check_names()
        ]

    @multi_asset_check(specs=check_specs, name=f"{spec.release}_checks", can_subset=True,
                       ins={"anonymized": AssetIn(key=anon_key), "pseudonymized": AssetIn(key=pseudo_key),
                            "raw": AssetIn(key=raw_key)},
                       required_resource_keys={"ledger"})
    def release_checks(context: AssetCheckExecutionContext, anonymized: pd.DataFrame,
                       pseudonymized: pd.DataFrame, raw: pd.DataFrame):
        selected = {k.name for k in context.selected_asset_check_keys}
        outcomes: dict[str, gate.Outcome] = {}
        hist = worst = None
        record: dict[str, Any] | None = None
        measures: dict[str, Any] | None = None
        try:
            # the stored record of this partition places the population (once for all checks)
            record = gate.load_record(reports_folder(spec, reports_dir, partition_of(context)))
            population = gate.population_in_classes(spec, anonymized, record)
            verdicts, measures = gate.gate_outcomes(spec, anonymized, pseudonymized, population)
            outcomes.update({o.name: o for o in verdicts})
            hist = gate.class_size_histogram(measures)
            worst = gate.worst_classes(spec, anonymized)
        except Exception as exc:  # every check still yields a result, failed, saying why
            for name, sev in t.check_names():
                if name not in ("composition", "data_contract"):
                    outcomes[name] = gate.Outcome(name, False, sev, summary=f"could not be measured: {_describe(exc)}")
        if "composition" in selected:
            outcomes["composition"] = _safe_composition(spec, anonymized, context, partition_of(context))
        if "epsilon_budget" in selected:
            outcomes["epsilon_budget"] = _safe_budget(spec, context)
        if "data_contract" in selected:
            try:
                from .contract import validate_contract

                outcomes["data_contract"] = validate_contract(
                    spec, gate.publishable_view(anonymized), gate.raw_identifier_values(spec, raw))
            except Exception as exc:
                outcomes["data_contract"] = gate.Outcome("data_contract", False, summary=f"could not be validated: {_describe(exc)}")
        if any(o.blocks for o in outcomes.values()) and selected == {n for n, _ in t.check_names()}:
            # a refused release keeps its report, and the ledger remembers the evaluation
            try:
                _record_refusal(context, spec, anonymized, list(outcomes.values()),
                                reports_folder(spec, reports_dir, partition_of(context)), measures, record)
            except Exception as exc:
                context.log.warning(f"the refused evaluation could not be recorded: {_describe(exc)}")
        for name, _ in t.check_names():
            if name not in selected:
                continue
            o = outcomes.get(name) or gate.Outcome(name, False, summary="no result was computed")
            risk = name in {v[0] for v in gate.THRESHOLD_CHECKS.values()}
            yield AssetCheckResult(
                asset_key=anon_key, check_name=name, passed=bool(o.passed), severity=_severity(o),
                description=o.summary,
                metadata=outcome_metadata(o, hist if risk else None, worst if risk else None),
            )

    @asset(key=pub_key, **common, kinds={"parquet"},
           ins={"anonymized": AssetIn(key=anon_key), "pseudonymized": AssetIn(key=pseudo_key),
                "raw": AssetIn(key=raw_key)},
           required_resource_keys={"ledger"}, automation_condition=automation,
           description="The release file, written only if every blocking check of the partition passes "
                       "(re-verified here, whatever the run selected).")
    def published(context: AssetExecutionContext, anonymized: pd.DataFrame, pseudonymized: pd.DataFrame,
                  raw: pd.DataFrame) -> MaterializeResult:
        partition = partition_of(context)
        if spec.publication.mode == "aggregates":
            return _publish_aggregates(context, spec, t, pseudonymized, partition)
        # re-verification reads the stored record file, never Dagster's event storage
        population, population_error = None, None
        try:
            record = gate.load_record(reports_folder(spec, reports_dir, partition))
            population = gate.population_in_classes(spec, anonymized, record)
        except Exception as exc:
            population_error = f"population: {_describe(exc)}"
        refusals = _gate_refusals(context, spec, t, anonymized, pseudonymized, raw, partition, population)
        if population_error:
            refusals.insert(0, population_error)
        if refusals:
            raise Failure(
                description=f"{spec.release} {partition or ''}: publication refused, nothing written: " + "; ".join(refusals),
                metadata={"refused_by": MetadataValue.json(refusals)},
                allow_retries=False,
            )
        out = gate.publishable_view(anonymized)[list(spec.published_columns)]
        target = spec.resolve(spec.publication.path, partition=partition or UNPARTITIONED)
        entry = _publish(context, spec, anonymized, pseudonymized, out, partition, target, population)
        return MaterializeResult(metadata={
            "path": MetadataValue.path(str(target)), "rows": len(out),
            "columns": MetadataValue.json(list(out.columns)), **entry,
        })

    assets_defs = [raw, pseudonymized, anonymized, published]
    job = define_asset_job(t.job_name, selection=AssetSelection.groups(t.group),
                           description=f"Release {spec.release}: ingest, pseudonymize, anonymize, check, publish.")
    schedule = (build_schedule_from_partitioned_job(job, name=t.schedule_name)
                if pdef is not None else None)
    return ReleaseDefinitions(spec, t, assets_defs, [release_checks], job, schedule, pdef)


@dataclass
class _EmptyResult:
    data: pd.DataFrame
    record: dict[str, Any]
    suppressed: int


def anonymize_or_relax(df: pd.DataFrame, spec: ReleaseSpec) -> tuple[Any, str | None]:
    """The spec's anonymization; when its policy is unreachable, the closest evidence instead.

    The anonymizer refuses a policy no transformation reaches (``NoSolution``). A refusal
    inside the asset would leave the partition without check results, so the reviewer would
    see a crashed step instead of the criterion that cannot be met. Instead the anonymization
    is run again at the spec's own ``k`` with the attribute-disclosure and average-risk
    thresholds left out of the search, and the checks measure that table against the full
    policy: they fail on exactly the criteria that cannot be met, and the publication is
    refused. If even that is impossible (k larger than the partition), the table is empty and
    every check fails. The second value says what happened (None when the policy was met).
    """
    try:
        return core.anonymize(df, spec), None
    except SpecError:
        raise
    except UserError as exc:
        reason = f"the declared policy is unreachable: {exc}"
    thresholds = spec.policy.thresholds.model_copy(update={
        "l_distinct": None, "l_entropy": None, "recursive_cl": None, "t_closeness": None,
        "prosecutor_avg": None})
    relaxed = spec.model_copy(update={"policy": spec.policy.model_copy(update={"thresholds": thresholds})})
    try:
        result = core.anonymize(df, relaxed)
        return result, (reason + f". Shown instead: the anonymization at k={spec.anonymization.k} "
                        "without the attribute-disclosure and average-risk criteria, measured against "
                        "the full policy by the checks; it cannot be published.")
    except UserError as exc2:
        empty = df.iloc[0:0]
        return _EmptyResult(empty, {"method": spec.anonymization.method, "rows_in": len(df)}, len(df)), (
            reason + f". No relaxed anonymization exists either ({exc2}): the table is empty and "
            "every check fails.")


def _gate_refusals(context: AssetExecutionContext, spec: ReleaseSpec, t: ReleaseTranslator,
                   anonymized: pd.DataFrame, pseudonymized: pd.DataFrame, raw: pd.DataFrame,
                   partition: str | None, population: pd.DataFrame | None = None) -> list[str]:
    """Why the publication must not happen (empty when it may).

    Independent of the event log: the data is re-measured against every threshold, utility
    query (ERROR severity), the composition with the ledger and the contract. The event log
    adds one more reason: a blocking check whose latest evaluation for this partition failed on
    the materialization being published.
    """
    refusals = []
    try:
        outcomes, _ = gate.gate_outcomes(spec, anonymized, pseudonymized, population)
        refusals += [f"{o.name}: {o.summary}" for o in outcomes if o.blocks]
    except Exception as exc:
        refusals.append(f"re-measurement failed: {_describe(exc)}")
    if spec.composition is not None and spec.publication.mode == "rows":
        try:
            comp = composition_outcome(spec, anonymized, context.resources.ledger.open(), partition)
            if comp.blocks:
                refusals.append(f"composition: {comp.summary}")
        except Exception as exc:
            refusals.append(f"composition could not be checked: {_describe(exc)}")
    problems = gate.contract_problems(spec, gate.publishable_view(anonymized)[
        [c for c in anonymized.columns if c not in gate.INTERNAL_COLUMNS]],
        gate.raw_identifier_values(spec, raw))
    refusals += [f"data_contract: {p}" for p in problems]
    refusals += _failed_evaluations(context, t, partition)
    return refusals


def _failed_evaluations(context: AssetExecutionContext, t: ReleaseTranslator, partition: str | None) -> list[str]:
    """Blocking ERROR checks whose latest evaluation of this partition failed on the current data."""
    from dagster import AssetRecordsFilter
    from dagster._core.event_api import PartitionKeyFilter

    instance = context.instance
    anon_key = t.asset_key("anonymized")
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=anon_key, asset_partitions=[partition] if partition else None), limit=1
    ).records
    if not records:
        return []
    current_run = records[0].event_log_entry.run_id
    keys = [AssetCheckKey(anon_key, name) for name, sev in t.check_names() if sev == "error"]
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(
        keys, partition_filter=PartitionKeyFilter(key=partition))
    reasons = []
    for key, rec in latest.items():
        evaluation = rec.event.dagster_event.event_specific_data if rec.event and rec.event.dagster_event else None
        if evaluation is None or getattr(evaluation, "passed", True):
            continue
        target = evaluation.target_materialization_data
        if target is not None and target.run_id == current_run and evaluation.severity == AssetCheckSeverity.ERROR:
            reasons.append(f"{key.name}: its latest evaluation of this data failed")
    return reasons


def _safe_composition(spec: ReleaseSpec, anonymized: pd.DataFrame, context: Any,
                      partition: str | None) -> gate.Outcome:
    try:
        return composition_outcome(spec, anonymized, context.resources.ledger.open(), partition)
    except Exception as exc:  # a composition that cannot be checked fails, never passes
        return gate.Outcome("composition", False, summary=f"could not be checked: {_describe(exc)}")


def _safe_budget(spec: ReleaseSpec, context: Any) -> gate.Outcome:
    """Whether this release's epsilon fits in its population's remaining budget."""
    from ..release.dp import budget_population, epsilon_spend

    try:
        eps, total, method, delta = epsilon_spend(spec)
        state = context.resources.ledger.open().budget(budget_population(spec), epsilon=eps, total=total,
                                                      composition=method, delta=delta)
    except Exception as exc:
        return gate.Outcome("epsilon_budget", False, summary=f"could not be checked: {_describe(exc)}")
    summary = (f"population {state.population!r}: epsilon {eps:g} brings the budget from "
               f"{state.composed_before:.4g} to {state.composed_after:.4g} of {total:g} ({method} composition)")
    return gate.Outcome("epsilon_budget", bool(state.allowed), value=float(state.composed_after),
                          threshold=float(total), comparison="<=", summary=summary,
                          details={"composition": plain_json(state.to_dict())})


def _publish_aggregates(context: AssetExecutionContext, spec: ReleaseSpec, t: ReleaseTranslator,
                        pseudonymized: pd.DataFrame, partition: str | None) -> MaterializeResult:
    """Publish noisy aggregates: budget checked first, noise drawn once, budget spent with the
    ledger entry in one transaction, file renamed into place last."""
    import os

    from ..release import dp_release
    from ..release.dp import epsilon_spend

    refusals = [f"{r}" for r in _failed_evaluations(context, t, partition)]
    budget = _safe_budget(spec, context)
    if budget.blocks:
        refusals.append(f"epsilon_budget: {budget.summary}")
    if refusals:
        raise Failure(description=f"{spec.release} {partition or ''}: publication refused, nothing written: "
                      + "; ".join(refusals), allow_retries=False)
    ledger = context.resources.ledger.open()
    aggregates, dp_info = dp_release(spec, gate.publishable_view(pseudonymized), ledger)
    target = spec.resolve(spec.publication.path, partition=partition or UNPARTITIONED)
    stem = target.with_suffix("")
    report_path = Path(f"{stem}.report.md")
    inputs = core.report_inputs(
        spec, partition=partition, data_hash=core.dataset_hash(aggregates.table), dp=dp_info,
        checks=_outcome_dicts([budget]), published_path=str(target), report_path=str(report_path))
    aside = target.with_name(f".{target.stem}.pending{target.suffix}")
    write_table_atomic(aggregates.table, aside, mode=0o644)
    try:
        outcome, report = core.record_evaluation(ledger, spec, inputs, rows=len(aggregates.table),
                                                 report_path=str(report_path), epsilon_spend=epsilon_spend(spec))
        os.replace(aside, target)
    except BaseException:
        aside.unlink(missing_ok=True)
        raise
    _write_report_files(report, Path(f"{stem}.report"), mode=0o644)
    return MaterializeResult(metadata={
        "path": MetadataValue.path(str(target)), "cells": len(aggregates.table),
        "epsilon": float(spec.publication.epsilon or 0), "ledger_entry": outcome.publication_id,
        "report": MetadataValue.path(str(report_path)),
        "expected_error": MetadataValue.json(plain_json(aggregates.measures)),
    })


def _outcome_dicts(outcomes: list[gate.Outcome]) -> list[dict[str, Any]]:
    return [{"name": o.name, "passed": bool(o.passed), "severity": o.severity, "value": plain_json(o.value),
             "threshold": plain_json(o.threshold), "comparison": o.comparison, "summary": o.summary}
            for o in outcomes]


def _report_inputs(spec: ReleaseSpec, partition: str | None, data: pd.DataFrame, measures: dict[str, Any],
                   outcomes: list[gate.Outcome], record: dict[str, Any] | None,
                   composition: Any, mitigations: list[str], published_path: str | None = None,
                   report_path: str | None = None) -> dict[str, Any]:
    view = gate.publishable_view(data)
    queries = [{"name": o.name.removeprefix("utility_"), "error_points": o.value,
                "max_error_points": o.threshold, "passed": o.passed, "severity": o.severity}
               for o in outcomes if o.name.startswith("utility_")]
    return core.report_inputs(
        spec, partition=partition, data_hash=core.dataset_hash(view), measures=measures,
        class_sizes=gate.class_sizes(spec, data), population_uniqueness=measures.get("population_uniqueness"),
        utility={"queries": plain_json(queries)}, anonymization_record=plain_json(record or {}),
        composition=composition, checks=_outcome_dicts(outcomes), mitigations=mitigations,
        published_path=published_path, report_path=report_path,
    )


def _write_report(spec: ReleaseSpec, folder: Path, partition: str | None, data: pd.DataFrame,
                  measures: dict[str, Any], outcomes: list[gate.Outcome], record: dict[str, Any] | None,
                  composition: Any, unreachable: str | None) -> dict[str, Any]:
    """Write the risk report (md, html, json) and transformation record into ``folder``."""
    inputs = _report_inputs(spec, partition, data, measures, outcomes, record, composition,
                            [unreachable] if unreachable else [], report_path=str(folder / "risk_report.md"))
    report = core.build_report(inputs)
    if record is not None:
        write_bytes_atomic(json.dumps(plain_json(record), indent=2, sort_keys=True).encode(), folder / "transformations.json")
    _write_report_files(report, folder / "risk_report")
    return report


def _record_refusal(context: Any, spec: ReleaseSpec, anonymized: pd.DataFrame, outcomes: list[gate.Outcome],
                    folder: Path, measures: dict[str, Any] | None, record: dict[str, Any] | None) -> None:
    """Record a refused evaluation in the ledger, with its report (verdict: not publishable).

    ``measures`` and ``record`` are those the checks used (population placed in the classes),
    so the report states the very figures the checks refused; ``measures`` is None only when
    the checks could not measure, and the report then holds what can be measured without them.
    """
    if measures is None:
        measures = gate.measure(spec, anonymized)
    comp = next((o.details.get("composition") for o in outcomes if o.name == "composition"), None)
    inputs = _report_inputs(spec, partition_of(context), anonymized, measures, outcomes, record, comp,
                            [], report_path=str(folder / "risk_report.md"))
    _, report = core.record_evaluation(context.resources.ledger.open(), spec, inputs)
    _write_report_files(report, folder / "risk_report")


def _publish(context: AssetExecutionContext, spec: ReleaseSpec, anonymized: pd.DataFrame,
             pseudonymized: pd.DataFrame, out: pd.DataFrame, partition: str | None, target: Path,
             population: pd.DataFrame | None = None) -> dict[str, Any]:
    """Write the release file and record it in the ledger, as one step for the reader.

    The file is written aside first; the ledger entry (class assignment keyed by linkage
    pseudonyms, report inputs) is recorded; only then is the file renamed into place. A
    failure before the rename leaves the previous publication intact and no new entry; the
    report is written beside the publication.
    """
    import os

    outcomes, measures = gate.gate_outcomes(spec, anonymized, pseudonymized, population)
    composition = None
    assignment = None
    if spec.composition is not None and gate.LINKAGE_COLUMN in anonymized.columns:
        comp = composition_outcome(spec, anonymized, context.resources.ledger.open(), partition)
        outcomes.append(comp)
        composition = comp.details.get("composition")
        assignment = core.class_assignment(out, spec.quasi_identifiers, anonymized[gate.LINKAGE_COLUMN])
    outcomes.append(gate.Outcome("data_contract", True, summary="re-verified before writing (columns, identifiers, formats, partition keys)"))
    stem = target.with_suffix("")
    report_path = Path(f"{stem}.report.md")
    inputs = _report_inputs(spec, partition, anonymized, measures, outcomes, None, composition, [],
                            published_path=str(target), report_path=str(report_path))
    report = core.build_report(inputs)
    if not report["verdict"]["publishable"]:
        raise Failure(description=f"{spec.release} {partition or ''}: the report's verdict is "
                                  f"{report['verdict']['verdict']!r}: nothing written", allow_retries=False)
    aside = target.with_name(f".{target.stem}.pending{target.suffix}")  # same format, hidden
    write_table_atomic(out, aside, mode=0o644)
    try:
        outcome, report = core.record_evaluation(context.resources.ledger.open(), spec, inputs,
                                                 assignment=assignment, rows=len(out), report_path=str(report_path))
        os.replace(aside, target)
    except BaseException:
        aside.unlink(missing_ok=True)
        raise
    _write_report_files(report, Path(f"{stem}.report"), mode=0o644)
    return {"data_hash": inputs["data_hash"], "ledger_entry": outcome.publication_id,
            "ledger_action": outcome.action, "report": MetadataValue.path(str(report_path))}


def _write_report_files(report: dict[str, Any], base: Path, mode: int = 0o600) -> None:
    """Write ``report`` as ``<base>.md``, ``<base>.html`` and ``<base>.json``, each atomically."""
    for fmt in ("md", "html", "json"):
        write_bytes_atomic(core.render(report, fmt).encode(), base.with_name(f"{base.name}.{fmt}"), mode=mode)


def _record_summary(record: dict[str, Any]) -> dict[str, Any]:
    """The record for Dagster's metadata: Mondrian's per-class boxes (large) stay in the file."""
    mondrian = record.get("mondrian")
    if isinstance(mondrian, dict) and "boxes" in mondrian:
        boxes = mondrian["boxes"]
        return {**record, "mondrian": {**mondrian, "boxes": f"{boxes.get('classes')} class boxes, in {gate.RECORD_FILE}"}}
    return record


def _describe(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _check_description(spec: ReleaseSpec, name: str) -> str:
    for key, (check_name, comparison, label) in gate.THRESHOLD_CHECKS.items():
        if check_name == name:
            value = getattr(spec.policy.thresholds, key)
            return f"{label} {comparison} {value} (declared in gate.thresholds.{key})"
    if name == "composition" and spec.composition:
        return (f"effective k of the intersection with earlier publications of population "
                f"{spec.composition.population!r} >= {spec.composition.min_k}")
    if name == "data_contract":
        return "Great Expectations: published columns exactly the allowed set, no identifier or raw identifier value, pseudonym formats, partition keys not null"
    for q in spec.utility_queries:
        if name == f"utility_{q.name}":
            return f"prevalence of {q.target} by {', '.join(q.group_by)}: error <= {q.max_error_points} points ({q.severity})"
    return name
