"""From a release spec to Dagster definitions: assets, checks, job, schedule and sensors.

For a release ``r`` the group ``r`` holds ``r/raw -> r/pseudonymized -> r/anonymized ->
r/published`` (names from the :class:`ReleaseTranslator`): one partition-aware check per declared
check on the anonymized asset, and the blocking ``publication`` check and the ``freshness`` check
on the published one. Each body calls the core (:mod:`anon_dagster.release.pipeline`,
:mod:`~anon_dagster.release.publish_step`), which decides everything; this module only moves
values between Dagster and the core. See docs/dagster.md.
"""

import warnings
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetIn,
    AssetsDefinition,
    AssetSelection,
    AutomationCondition,
    DefaultSensorStatus,
    Definitions,
    Failure,
    MaterializeResult,
    MetadataValue,
    PartitionsDefinition,
    ScheduleDefinition,
    SensorDefinition,
    TableColumn,
    TableSchema,
    asset,
    build_schedule_from_partitioned_job,
    define_asset_job,
    in_process_executor,
    multi_asset_check,
)

from ..release import gate, pipeline, publication, publish_step
from ..release.ledger import Ledger
from ..release.publication import reports_folder
from ..release.publish_step import refusal_of
from ..spec import ReleaseSpec
from . import ordering
from .alerts import RESOURCE_KEY as ALERT_KEY
from .alerts import RefusalAlertResource, refusal_alert_from_env
from .approval import AWAITING_OUTCOME, approval_sensor
from .metadata import anonymized_metadata, as_metadata, check_metadata, fit, md_value
from .partitions import partitions_def_for
from .sensors import OUTCOME_KEY, REFUSAL_KEY, freshness_evaluation, freshness_sensor, source_sensor
from .table_target import table_assets
from .translator import ReleaseTranslator
from .upstream import ingest_source, source_ins, synthetic_ins, synthetic_table


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
    # the source-file sensor (local sources), the freshness sensor and, with approval.required,
    # the approval sensor
    sensors: list[SensorDefinition] = field(default_factory=list)

    def definitions(self) -> Definitions:
        """The release's assets, checks, job, schedule and sensors as Definitions, without the
        resources the releases share (merge them: ``Definitions.merge(*(r.definitions() for r
        in releases), Definitions(resources=...))``)."""
        return Definitions(assets=self.assets, asset_checks=self.checks, jobs=[self.job],
                           schedules=[self.schedule] if self.schedule is not None else [], sensors=self.sensors)


def partition_of(context: AssetExecutionContext | AssetCheckExecutionContext) -> str | None:
    return context.partition_key if context.has_partition_key else None


def run_ledger(context: AssetExecutionContext | AssetCheckExecutionContext) -> Ledger:
    """The run's ledger, opened and verified with the run's key store."""
    return context.resources.ledger.open(context.resources.keystore)


def storage_folders(context: AssetExecutionContext) -> list[str]:
    """The folders the IO manager stores tables in: a publication is never written into one."""
    folders = [context.instance.storage_directory()]
    base = getattr(context.resources.io_manager, "base_dir", None)
    return [*folders, base] if base else folders


def row_count(rows: int) -> dict[str, Any]:
    return {"dagster/row_count": MetadataValue.int(int(rows))}


def column_schema(table: pd.DataFrame, columns: list[str]) -> TableSchema:
    """The schema of the published columns, typed by the table they were written from."""
    return TableSchema(columns=[TableColumn(c, str(table[c].dtype) if c in table.columns else "unknown")
                                for c in columns])


def build_release(spec: ReleaseSpec, *, reports_dir: str | None = None, automate: bool = False,
                  translator: ReleaseTranslator | None = None,
                  refusal_alert: RefusalAlertResource | None = None) -> ReleaseDefinitions:
    """Build the assets, checks, job, schedule and sensors of one release (see the module docstring).

    ``refusal_alert`` is the alert the published step sends on a refusal (default
    :func:`~.alerts.refusal_alert_from_env`); it is bound to the published asset, so the
    definitions need no resource of their own for it.
    """
    t = translator or ReleaseTranslator()
    pdef = partitions_def_for(spec)
    key = {step: t.asset_key(spec, step) for step in ("raw", "pseudonymized", "anonymized", "published")}
    common = {"group_name": t.group_name(spec), "partitions_def": pdef}

    def attributes(step: str) -> dict[str, Any]:
        return {"key": key[step], **common, "kinds": t.kinds(spec, step), "metadata": t.metadata(spec, step),
                "description": t.description(spec, step), "owners": t.owners(spec, step) or None,
                "tags": t.tags(spec, step) or None, "code_version": t.code_version(spec, step)}

    upstream = {"anonymized": AssetIn(key=key["anonymized"]), "pseudonymized": AssetIn(key=key["pseudonymized"]),
                "raw": AssetIn(key=key["raw"])}

    @asset(**attributes("raw"), ins=source_ins(spec), required_resource_keys={"keystore"})
    def raw(context: AssetExecutionContext, **source: Any) -> pd.DataFrame:  # source: an upstream asset's value
        if pipeline.needs_keystore(spec):
            # opened first: a key store that cannot be opened, or that sits among the release's
            # data, fails the run before any write
            pipeline.check_keystore(spec, context.resources.keystore.open())
        ingested = ingest_source(context, spec, partition_of(context), source)
        context.add_output_metadata({"rows": len(ingested.data), "source": ingested.source,
                                     "columns": len(ingested.data.columns), **row_count(len(ingested.data))})
        return ingested.data

    @asset(**attributes("pseudonymized"), ins={"raw": AssetIn(key=key["raw"])}, required_resource_keys={"keystore"})
    def pseudonymized(context: AssetExecutionContext, raw: pd.DataFrame) -> pd.DataFrame:
        store = context.resources.keystore.open() if pipeline.needs_keystore(spec) else None
        result = pipeline.pseudonymize(spec, raw, store, partition=partition_of(context))
        meta: dict[str, Any] = {"rows": len(result.data), **row_count(len(result.data))}
        if result.summary:
            meta["pseudonymization"] = MetadataValue.json(result.summary)
        context.add_output_metadata(meta)
        return result.data

    @asset(**attributes("anonymized"), ins={"pseudonymized": AssetIn(key=key["pseudonymized"]), **synthetic_ins(spec)})
    def anonymized(context: AssetExecutionContext, pseudonymized: pd.DataFrame, **supplied: Any) -> pd.DataFrame:
        result = pipeline.anonymize(spec, pseudonymized, synthetic_table=synthetic_table(supplied))
        # the record places the population into these classes in the checks and the publication
        record_file = publication.write_record(result.record, reports_folder(spec, reports_dir, partition_of(context)))
        if result.unreachable:
            context.log.warning(f"{spec.release} {partition_of(context) or ''}: {result.unreachable}")
        context.add_output_metadata({**anonymized_metadata(result, record_file), **row_count(len(result.data))})
        return gate.attach_record(result.data, result.record)

    # before the publication step among the steps ready together (in-process executor: in that order)
    @multi_asset_check(specs=t.check_specs(spec, pdef), name=f"{spec.release}_checks", can_subset=True,
                       ins=upstream, required_resource_keys={"ledger", "keystore"}, op_tags={"dagster/priority": "1"})
    def release_checks(context: AssetCheckExecutionContext, anonymized: pd.DataFrame,
                       pseudonymized: pd.DataFrame, raw: pd.DataFrame):
        selected = {k.name for k in context.selected_asset_check_keys}
        waited = ordering.await_earlier_partition(context, spec, t, pdef)
        if waited:  # judged against the ledger as it is; the publication step waits again
            context.log.warning(waited)
        step = publish_step.check_step(spec, anonymized=anonymized, pseudonymized=pseudonymized, raw=raw,
                                       ledger=run_ledger(context), partition=partition_of(context), only=selected,
                                       declared=[c.name for c in t.checks(spec)], reports_dir=reports_dir)
        if step.problem:
            context.log.warning(f"the evaluation's report could not be kept: {step.problem}")
        evaluation, report = step.evaluation, step.report  # a refused evaluation's report, linked from each failed check
        for result in evaluation.checks:
            yield AssetCheckResult(
                asset_key=key["anonymized"], check_name=result.name, passed=bool(result.passed),
                severity=AssetCheckSeverity.ERROR if result.severity == "error" else AssetCheckSeverity.WARN,
                description=result.summary,
                metadata=check_metadata(result, evaluation, report=None if result.passed else report),
            )

    publication_check = t.publication_check_name(spec)
    condition = None
    if automate:  # the partition before is a dependency of an ordered release, its refusal no obstacle
        condition = AutomationCondition.eager() & AutomationCondition.all_deps_blocking_checks_passed().ignore(
            AssetSelection.assets(key["published"]))

    with warnings.catch_warnings():  # an asset's own resource is a beta parameter, used knowingly
        warnings.filterwarnings("ignore", message="Parameter `resource_defs` of function `asset`")
        published_asset = asset(**attributes("published"), ins=upstream, deps=ordering.earlier_partition_deps(spec, t),
                                check_specs=[t.publication_check_spec(spec, pdef), t.freshness_check_spec(spec)],
                                required_resource_keys={"ledger", "keystore", "io_manager", ALERT_KEY},
                                resource_defs={ALERT_KEY: refusal_alert or refusal_alert_from_env()},
                                automation_condition=condition)

    @published_asset
    def published(context: AssetExecutionContext, anonymized: pd.DataFrame, pseudonymized: pd.DataFrame,
                  raw: pd.DataFrame) -> MaterializeResult:
        partition = partition_of(context)
        waited = ordering.await_earlier_partition(context, spec, t, pdef)
        if waited:
            raise Failure(description=waited)
        ledger = run_ledger(context)
        try:  # the target is kept clear of the key store and the IO manager's storage, with the inputs
            step = publish_step.publication_step(
                spec, anonymized=anonymized, pseudonymized=pseudonymized, raw=raw, ledger=ledger, partition=partition,
                keystore=context.resources.keystore, storage=storage_folders(context), reports_dir=reports_dir,
                run_id=context.run.run_id)
        except TimeoutError as exc:
            raise Failure(description=str(exc)) from None
        if step.outcome == publish_step.AWAITING:
            return awaiting_result(context, step, ledger)
        if step.refused:
            return refused_result(context, step, ledger)
        done, report = step.published, step.report
        return MaterializeResult(
            metadata=fit({OUTCOME_KEY: "published", **as_metadata(done.figures(), whole=report),
                          **row_count(done.published.rows),
                          "dagster/column_schema": TableSchema(columns=[TableColumn(c, kind) for c, kind in step.columns])},
                         whole=report),
            check_results=[AssetCheckResult(check_name=publication_check, passed=True,
                                            description=f"published: evaluation {step.evaluation.id}",
                                            metadata={"evaluation": step.evaluation.id}),
                           freshness_result(ledger)])

    def freshness_result(ledger: Ledger) -> AssetCheckResult:
        """The ``freshness`` check as the ledger stands once this partition is decided."""
        fresh = freshness_evaluation(spec, ledger, t)
        return AssetCheckResult(check_name=fresh.check_name, passed=fresh.passed, severity=fresh.severity,
                                description=fresh.description, metadata=fresh.metadata)

    def awaiting_result(context: AssetExecutionContext, step: publish_step.PublicationStep,
                        ledger: Ledger) -> MaterializeResult:
        """Awaiting approval materialized: nothing written, so the ``publication`` check fails,
        with severity WARN because nothing was refused; no refusal alert. The metadata carry the
        evaluation, the command that approves it and the report the approvers read."""
        waiting, report = step.awaiting, step.report
        assert waiting is not None  # the AWAITING outcome carries it
        context.log.info(waiting.message)
        shown = {OUTCOME_KEY: AWAITING_OUTCOME, "evaluation": step.evaluation.id,
                 "approve_command": MetadataValue.text(waiting.command),
                 "approvals": f"{waiting.approvals} of {waiting.needed}", "ledger_event": waiting.entry,
                 **({"report": MetadataValue.path(str(report))} if report else {})}
        return MaterializeResult(
            metadata=shown,
            check_results=[AssetCheckResult(
                check_name=publication_check, passed=False, severity=AssetCheckSeverity.WARN,
                description=f"awaiting approval ({waiting.approvals} of {waiting.needed}): nothing published. "
                            f"To approve: {waiting.command}",
                metadata={OUTCOME_KEY: AWAITING_OUTCOME, "evaluation": step.evaluation.id,
                          "approve_command": MetadataValue.text(waiting.command)}),
                freshness_result(ledger)])

    def refused_result(context: AssetExecutionContext, step: publish_step.PublicationStep,
                       ledger: Ledger) -> MaterializeResult:
        """The refusal materialized: outcome, reasons and evidence on the published asset, the
        ``publication`` check failed with one line per failed check, and the alert sent."""
        if step.problem:
            context.log.warning(f"the evaluation's report could not be kept: {step.problem}")
        refusal, lines, report = step.refusal(context.run.run_id), step.reason_lines, step.report
        reasons = md_value("\n".join(lines))
        context.log.info(f"{spec.release} {step.partition or ''}: publication refused, nothing written: "
                         + "; ".join(refusal.reasons))
        problem = context.resources.refusal_alert.send(refusal)
        if problem:
            context.log.warning(f"the refusal alert was not delivered: {problem}")
        payload = {k: v for k, v in refusal.payload().items() if k != "run_id"}  # the run is the event's
        failed = MetadataValue.json(refusal.failed_checks)
        return MaterializeResult(
            metadata=fit({OUTCOME_KEY: "refused", "reasons": reasons, "failed_checks": failed,
                          "evaluation": step.evaluation.id, REFUSAL_KEY: MetadataValue.json(payload),
                          **({"report": MetadataValue.path(str(report))} if report else {})}, whole=report),
            check_results=[AssetCheckResult(
                check_name=publication_check, passed=False, severity=AssetCheckSeverity.ERROR,
                description="\n".join(lines),
                metadata={"failed_checks": failed, "reasons": reasons, "evaluation": step.evaluation.id}),
                freshness_result(ledger)])

    # one process per run (the steps share it) rather than one per step: what a UI run costs
    job = define_asset_job(t.job_name(spec), selection=AssetSelection.groups(t.group_name(spec)),
                           executor_def=in_process_executor,
                           description=f"Release {spec.release}: ingest, pseudonymize, anonymize, check, publish.")
    schedule = build_schedule_from_partitioned_job(job, name=t.schedule_name(spec)) if pdef is not None else None
    sensors = [s for s in (source_sensor(spec, job, t), freshness_sensor(spec, t)) if s is not None]
    if spec.approval is not None and spec.approval.required:  # an approval starts the publication's run
        sensors.append(approval_sensor([spec], translator=t, name=f"{spec.release}_approval_sensor",
                                       default_status=DefaultSensorStatus.RUNNING))
    return ReleaseDefinitions(spec, t, [raw, pseudonymized, anonymized, published, *table_assets(spec, t, pdef)],
                              [release_checks], job, schedule, pdef, sensors)


__all__ = ["ReleaseDefinitions", "build_release", "column_schema", "partition_of", "refusal_of", "reports_folder"]
