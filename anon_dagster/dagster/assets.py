"""From a release spec to Dagster definitions: the assets ``<release>/raw -> pseudonymized ->
anonymized -> published``, their checks, job, schedule and sensors; each body calls the core,
which decides everything (docs/dagster.md)."""

from dataclasses import dataclass, field
from typing import Any

import dagster as dg
import pandas as pd

from ..engine import PandasEngine
from ..release import engine_steps, shown_outcomes
from ..release import published_table as table_target
from ..release import release_names as names
from ..release.governance.requests import governed
from ..release.ledger import Ledger
from ..release.release_names import SOURCE_INPUT, project_inputs
from ..release.step_conventions import STEPS, TABLE_KINDS, object_description
from ..release.step_storage import storage_folder
from ..spec import ReleaseSpec
from . import ordering
from .alerts import RESOURCE_KEY as ALERT_KEY
from .alerts import RefusalAlertResource, refusal_alert_from_env
from .approval import approval_sensor
from .failures import one_line_failures
from .metadata import as_metadata, check_result, event_values
from .partitions import partitions_def_for
from .sensors import freshness_evaluation, freshness_sensor, source_sensor
from .translator import ASSET_RESOURCES, ReleaseTranslator, asset_attributes, used_knowingly


@dataclass
class ReleaseDefinitions:
    """Everything built for one release."""

    spec: ReleaseSpec
    translator: ReleaseTranslator
    assets: list[dg.AssetsDefinition]
    checks: list[Any]
    job: Any  # the release's partitioned asset job
    schedule: dg.ScheduleDefinition | None
    partitions_def: dg.PartitionsDefinition | None
    # the source-file sensor (local sources), the freshness sensor and, with approval.required, the approval sensor
    sensors: list[dg.SensorDefinition] = field(default_factory=list)

    def definitions(self) -> dg.Definitions:
        """The release's assets, checks, job, schedule and sensors as Definitions, without the
        resources the releases share (merge them with ``Definitions.merge``)."""
        return dg.Definitions(assets=self.assets, asset_checks=self.checks, jobs=[self.job],
                           schedules=[self.schedule] if self.schedule is not None else [], sensors=self.sensors)


def partition_of(context: dg.AssetExecutionContext | dg.AssetCheckExecutionContext) -> str | None:
    return context.partition_key if context.has_partition_key else None


def run_ledger(context: dg.AssetExecutionContext | dg.AssetCheckExecutionContext) -> Ledger:
    """The run's ledger, opened and verified with the run's key store."""
    return context.resources.ledger.open(context.resources.keystore)


def storage_folders(context: dg.AssetExecutionContext) -> list[str]:
    """The folders the IO manager stores tables in: a publication is never written into one."""
    base = getattr(context.resources.io_manager, "base_dir", None)
    return [context.instance.storage_directory(), *([base] if base else [])]


def project_ins(spec: ReleaseSpec, step: str) -> dict[str, dg.AssetIn]:
    """The step's inputs from assets of the user's project (``source.asset``, a synthetic table's
    ``asset``), each loaded by that asset's own IO manager, partitions mapped as Dagster infers them."""
    return {name: dg.AssetIn(key=dg.AssetKey(path)) for name, path in project_inputs(spec, step).items()}


def upstream_partitioned(context: dg.AssetExecutionContext, name: str = SOURCE_INPUT) -> bool:
    """Whether the upstream asset of input ``name`` is partitioned (its partition is then the table's own)."""
    try:
        return context.asset_partitions_def_for_input(name) is not None
    except dg.DagsterInvariantViolationError:  # Dagster's answer for an unpartitioned upstream asset
        return False


def latest_outcome(context: dg.AssetExecutionContext, published: dg.AssetKey, partition: str | None) -> dict[str, Any]:
    """The metadata of the published asset's latest materialization of ``partition`` (empty: none)."""
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=published, asset_partitions=[partition] if partition else None), limit=1)
    event = records.records[0].asset_materialization if records.records else None
    return event_values(event.metadata if event else {})


def table_assets(spec: ReleaseSpec, t: ReleaseTranslator,
                 pdef: dg.PartitionsDefinition | None) -> list[dg.AssetsDefinition]:
    """The asset ``<release>/<table>`` handing the publication to an IO manager of the user's project,
    downstream of ``<release>/published`` (:func:`~anon_dagster.release.published_table.table_of_record`);
    none without ``publication.table``."""
    path = table_target.table_path(spec)
    if path is None:
        return []
    published = t.asset_key(spec, "published")

    @dg.asset(**{**asset_attributes(t, spec, "published", pdef), "key": dg.AssetKey(path), "kinds": set(TABLE_KINDS),
              "metadata": table_target.table_definition_metadata(spec, pdef is not None),
              "description": table_target.table_description(spec)},
           deps=[published], io_manager_key=spec.publication.io_manager, required_resource_keys={"ledger", "keystore"})
    @one_line_failures  # a table refused (TableRefused) is a user error
    def published_table(context: dg.AssetExecutionContext) -> pd.DataFrame:
        partition = partition_of(context)
        table, entry = table_target.table_of_record(spec, lambda: run_ledger(context), partition,
                                                    latest_outcome(context, published, partition),
                                                    published.to_user_string())
        context.add_output_metadata(as_metadata({"ledger_entry": entry.id, "data_hash": entry.data_hash},
                                                rows=len(table)))
        return table

    return [published_table]


def build_release(spec: ReleaseSpec, *, reports_dir: str | None = None, automate: bool = False,
                  translator: ReleaseTranslator | None = None,
                  refusal_alert: RefusalAlertResource | None = None, with_engine: bool = False) -> ReleaseDefinitions:
    """Build the assets, checks, job, schedule and sensors of one release. ``refusal_alert`` (default
    :func:`~.alerts.refusal_alert_from_env`) is bound to the published asset. With ``with_engine`` the
    steps run on the ``engine`` resource (:class:`~.resources.EngineResource`), else on pandas; each
    step's value is then a DataFrame or a StoredTable (:mod:`anon_dagster.release.engine_steps`)."""
    t = translator or ReleaseTranslator()
    uses = {"engine", "io_manager"} if with_engine else set()

    def engine(context: Any) -> Any:
        return context.resources.engine.run_engine() if with_engine else PandasEngine()

    def folder(context: dg.AssetExecutionContext) -> Any:  # the release's storage folder, for Spark's tables
        return storage_folder(getattr(context.resources.io_manager, "base_dir", None), context.instance.storage_directory)
    pdef = partitions_def_for(spec)
    key = {step: t.asset_key(spec, step) for step in STEPS}
    upstream = {step: dg.AssetIn(key=key[step]) for step in ("anonymized", "pseudonymized", "raw")}

    def row_asset(step: engine_steps.RowStep) -> dg.AssetsDefinition:
        ins = {**({step.upstream: upstream[step.upstream]} if step.upstream else {}), **project_ins(spec, step.name)}

        @dg.asset(**asset_attributes(t, spec, step.name, pdef), ins=ins,
                  required_resource_keys={*(["keystore"] if step.keystore else []), *uses})
        @one_line_failures
        def row(context: dg.AssetExecutionContext, **inputs: Any) -> Any:  # inputs: upstream values by name
            out = engine_steps.row_step(step, engine_steps.StepCall(
                engine(context), spec, partition_of(context), keystore=lambda: context.resources.keystore.open(),
                storage=lambda: folder(context), inputs=inputs, reports_dir=reports_dir,
                source_partitioned=lambda: upstream_partitioned(context)))
            if out.warning:
                context.log.warning(out.warning)
            context.add_output_metadata(as_metadata(out.entries, out.record_file, rows=out.rows))
            return out.value

        return row

    # before the publication step among the steps ready together (in-process executor: in that order)
    @dg.multi_asset_check(specs=t.check_specs(spec, pdef), name=names.checks_name(spec), can_subset=True,
                       ins=upstream, required_resource_keys={"ledger", "keystore", *uses}, op_tags={"dagster/priority": "1"})
    @one_line_failures
    def release_checks(context: dg.AssetCheckExecutionContext, anonymized: Any, pseudonymized: Any, raw: Any):
        waited = ordering.await_earlier_partition(context, spec, t, pdef)
        if waited:  # judged against the ledger as it is; the publication step waits again
            context.log.warning(waited)
        step = engine_steps.checks_step(engine(context), spec, anonymized=anonymized, pseudonymized=pseudonymized,
                                        raw=raw, ledger=run_ledger(context), partition=partition_of(context),
                                        only={k.name for k in context.selected_asset_check_keys},
                                        declared=[c.name for c in t.checks(spec)], reports_dir=reports_dir)
        if step.warning:
            context.log.warning(step.warning)
        for result in step.evaluation.checks:  # a refused evaluation's report linked from each failed check
            shown = shown_outcomes.check_shown(result, step.evaluation, step.report)
            yield check_result(shown, whole=shown.metadata.get("report"), asset_key=key["anonymized"],
                               check_name=result.name)

    condition = None
    if automate:  # the partition before is a dependency of an ordered release, its refusal no obstacle
        condition = dg.AutomationCondition.eager() & dg.AutomationCondition.all_deps_blocking_checks_passed().ignore(
            dg.AssetSelection.assets(key["published"]))
    with used_knowingly(ASSET_RESOURCES):  # an asset's own resource is a beta parameter
        published_asset = dg.asset(**asset_attributes(t, spec, "published", pdef), ins=upstream,
                                deps=ordering.earlier_partition_deps(spec, t),
                                check_specs=[t.publication_check_spec(spec, pdef), t.freshness_check_spec(spec)],
                                required_resource_keys={"ledger", "keystore", "io_manager", ALERT_KEY, *uses},
                                resource_defs={ALERT_KEY: refusal_alert or refusal_alert_from_env()},
                                automation_condition=condition)

    @published_asset
    @one_line_failures  # and a population lock held too long (TimeoutError), whose wait may be retried
    def published(context: dg.AssetExecutionContext, anonymized: Any, pseudonymized: Any, raw: Any) -> dg.MaterializeResult:
        waited = ordering.await_earlier_partition(context, spec, t, pdef)
        if waited:
            raise dg.Failure(description=waited)
        ledger = run_ledger(context)
        # the target is kept clear of the key store and the IO manager's storage, with the inputs
        step = engine_steps.published_step(
            engine(context), spec, anonymized=anonymized, pseudonymized=pseudonymized, raw=raw, ledger=ledger,
            partition=partition_of(context), keystore=context.resources.keystore,
            storage=storage_folders(context), reports_dir=reports_dir, run_id=context.run.run_id)
        if step.warning:
            context.log.warning(step.warning)
        shown = shown_outcomes.publication_shown(step, context.run.run_id)
        if shown.info:
            context.log.info(shown.info)
        if shown.refusal is not None and (problem := context.resources.refusal_alert.send(shown.refusal)):
            context.log.warning(shown_outcomes.undelivered_alert(problem))
        return dg.MaterializeResult(
            metadata=as_metadata(shown.metadata, whole=step.report, rows=shown.rows, columns=shown.columns),
            check_results=[check_result(shown.check, whole=step.report, check_name=t.publication_check_name(spec)),
                           freshness_evaluation(spec, ledger, t, of=dg.AssetCheckResult)])

    # one process per run (the steps share it) rather than one per step: what a UI run costs
    job = dg.define_asset_job(t.job_name(spec), selection=dg.AssetSelection.groups(t.group_name(spec)),
                           executor_def=dg.in_process_executor,
                           description=object_description("job", spec))
    schedule = dg.build_schedule_from_partitioned_job(job, name=t.schedule_name(spec)) if pdef is not None else None
    sensors = [s for s in (source_sensor(spec, job, t), freshness_sensor(spec, t)) if s is not None]
    if governed([spec]):  # an approval starts the publication's run
        sensors.append(approval_sensor([spec], translator=t, name=names.approval_sensor_name(spec),
                                       default_status=dg.DefaultSensorStatus.RUNNING))
    rows = [row_asset(step) for step in engine_steps.ROW_STEPS]
    return ReleaseDefinitions(spec, t, [*rows, published, *table_assets(spec, t, pdef)],
                              [release_checks], job, schedule, pdef, sensors)


__all__ = ["ReleaseDefinitions", "build_release", "latest_outcome", "partition_of", "project_ins", "table_assets",
           "upstream_partitioned"]
