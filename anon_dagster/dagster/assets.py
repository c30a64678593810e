"""From a release spec to Dagster definitions: assets, blocking checks, job and schedule.

For a release ``r`` the group ``r`` holds (names from the :class:`ReleaseTranslator`)::

    r/raw ──► r/pseudonymized ──► r/anonymized ──► r/published
                                   └─ blocking checks: one per declared check (criteria registry)

Each body is a few lines calling the core (:mod:`anon_dagster.release.pipeline`,
:mod:`~anon_dagster.release.stored`, :mod:`~anon_dagster.release.publication`), which decides
everything; this module only moves values between Dagster and the core. Every check is
partition-aware, blocking (ERROR severity, WARN for a utility query marked ``severity: warn``)
and always yields a result. ``r/published`` evaluates the gate again itself before writing
anything, so a run that selects only it cannot publish what the checks refused.
"""


from dataclasses import dataclass
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
    Failure,
    MaterializeResult,
    MetadataValue,
    PartitionsDefinition,
    ScheduleDefinition,
    asset,
    build_schedule_from_partitioned_job,
    define_asset_job,
    multi_asset_check,
)

from ..release import gate, pipeline, publication
from ..release.ledger import Ledger
from ..release.publication import reports_folder
from ..release.stored import evaluate_stored
from ..spec import ReleaseSpec
from .metadata import as_metadata, check_metadata
from .partitions import partitions_def_for
from .translator import ReleaseTranslator


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


def build_release(spec: ReleaseSpec, *, reports_dir: str | None = None, automate: bool = False,
                  translator: ReleaseTranslator | None = None) -> ReleaseDefinitions:
    """Build the assets, checks, job and schedule of one release (see the module docstring)."""
    t = translator or ReleaseTranslator()
    pdef = partitions_def_for(spec)
    key = {step: t.asset_key(spec, step) for step in ("raw", "pseudonymized", "anonymized", "published")}
    common = {"group_name": t.group_name(spec), "partitions_def": pdef}

    def attributes(step: str) -> dict[str, Any]:
        return {"key": key[step], **common, "kinds": t.kinds(spec, step), "metadata": t.metadata(spec, step),
                "description": t.description(spec, step)}

    upstream = {"anonymized": AssetIn(key=key["anonymized"]), "pseudonymized": AssetIn(key=key["pseudonymized"]),
                "raw": AssetIn(key=key["raw"])}

    @asset(**attributes("raw"), required_resource_keys={"keystore"})
    def raw(context: AssetExecutionContext) -> pd.DataFrame:
        if pipeline.needs_keystore(spec):
            # opened first: a key store that cannot be opened, or that sits among the release's
            # data, fails the run before any write
            pipeline.check_keystore(spec, context.resources.keystore.open())
        ingested = pipeline.ingest(spec, partition_of(context))
        context.add_output_metadata({"rows": len(ingested.data), "source": ingested.source,
                                     "columns": len(ingested.data.columns)})
        return ingested.data

    @asset(**attributes("pseudonymized"), ins={"raw": AssetIn(key=key["raw"])}, required_resource_keys={"keystore"})
    def pseudonymized(context: AssetExecutionContext, raw: pd.DataFrame) -> pd.DataFrame:
        store = context.resources.keystore.open() if pipeline.needs_keystore(spec) else None
        result = pipeline.pseudonymize(spec, raw, store, partition=partition_of(context))
        meta: dict[str, Any] = {"rows": len(result.data)}
        if result.summary:
            meta["pseudonymization"] = MetadataValue.json(result.summary)
        context.add_output_metadata(meta)
        return result.data

    @asset(**attributes("anonymized"), ins={"pseudonymized": AssetIn(key=key["pseudonymized"])})
    def anonymized(context: AssetExecutionContext, pseudonymized: pd.DataFrame) -> pd.DataFrame:
        result = pipeline.anonymize(spec, pseudonymized)
        # the record places the population into these classes in the checks and the publication
        publication.write_record(result.record, reports_folder(spec, reports_dir, partition_of(context)))
        if result.unreachable:
            context.log.warning(f"{spec.release} {partition_of(context) or ''}: {result.unreachable}")
        context.add_output_metadata({
            **({"policy_unreachable": MetadataValue.md(result.unreachable)} if result.unreachable else {}),
            "rows": len(result.data), "suppressed": result.suppressed,
            "transformation_record": MetadataValue.json(result.record.summary(gate.RECORD_FILE)),
        })
        return gate.attach_record(result.data, result.record)

    @multi_asset_check(specs=t.check_specs(spec, pdef), name=f"{spec.release}_checks", can_subset=True,
                       ins=upstream, required_resource_keys={"ledger", "keystore"})
    def release_checks(context: AssetCheckExecutionContext, anonymized: pd.DataFrame,
                       pseudonymized: pd.DataFrame, raw: pd.DataFrame):
        selected = {k.name for k in context.selected_asset_check_keys}
        ledger = run_ledger(context)
        evaluation = evaluate_stored(spec, anonymized, pseudonymized=pseudonymized, raw=raw, ledger=ledger,
                                     partition=partition_of(context), only=selected)
        if selected == {c.name for c in t.checks(spec)}:  # a complete evaluation: its evidence is kept
            kept = publication.keep_evaluation(spec, evaluation, ledger,
                                               reports_folder(spec, reports_dir, partition_of(context)))
            if kept.problem:
                context.log.warning(f"the evaluation's report could not be kept: {kept.problem}")
        for result in evaluation.checks:
            yield AssetCheckResult(
                asset_key=key["anonymized"], check_name=result.name, passed=bool(result.passed),
                severity=AssetCheckSeverity.ERROR if result.severity == "error" else AssetCheckSeverity.WARN,
                description=result.summary, metadata=check_metadata(result, evaluation),
            )

    @asset(**attributes("published"), ins=upstream, required_resource_keys={"ledger", "keystore", "io_manager"},
           automation_condition=(AutomationCondition.eager() & AutomationCondition.all_deps_blocking_checks_passed())
           if automate else None)
    def published(context: AssetExecutionContext, anonymized: pd.DataFrame, pseudonymized: pd.DataFrame,
                  raw: pd.DataFrame) -> MaterializeResult:
        # re-verification: the gate evaluated again here, never read from Dagster's event storage
        ledger = run_ledger(context)
        evaluation = evaluate_stored(spec, anonymized, pseudonymized=pseudonymized, raw=raw, ledger=ledger,
                                     partition=partition_of(context))
        try:  # the target is kept clear of the key store and the IO manager's storage, with the inputs
            done = publication.publish_release(spec, evaluation, anonymized=anonymized, pseudonymized=pseudonymized,
                                               ledger=ledger, keystore=context.resources.keystore,
                                               storage=storage_folders(context))
        except publication.PublicationRefused as exc:
            raise Failure(description=str(exc), metadata={"refused_by": MetadataValue.json(exc.refusals)},
                          allow_retries=False) from None
        return MaterializeResult(metadata=as_metadata(done.figures()))

    job = define_asset_job(t.job_name(spec), selection=AssetSelection.groups(t.group_name(spec)),
                           description=f"Release {spec.release}: ingest, pseudonymize, anonymize, check, publish.")
    schedule = build_schedule_from_partitioned_job(job, name=t.schedule_name(spec)) if pdef is not None else None
    return ReleaseDefinitions(spec, t, [raw, pseudonymized, anonymized, published], [release_checks], job,
                              schedule, pdef)


__all__ = ["ReleaseDefinitions", "build_release", "partition_of", "reports_folder"]
