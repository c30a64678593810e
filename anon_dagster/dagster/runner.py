"""Materialize a release's partitions in-process through its job and summarize each run (scripts,
demos; the runs show in ``dagster dev``); the core reads what a run did (``release.run_outcome``)."""

from typing import Any

from dagster import DagsterInstance, Definitions, RunRequest

from ..release.partition_outcome import PartitionOutcome
from ..release.publication import kept_report
from ..release.run_outcome import RecordedCheck, run_outcome
from ..release.run_storage import private_dagster_home
from ..release.step_conventions import STEPS
from ..spec import ReleaseSpec
from .metadata import event_values
from .partitions import partitions_def_for
from .translator import ReleaseTranslator


def release_partitions(spec: ReleaseSpec) -> list[str | None]:
    """Every partition key of the release (``[None]`` when unpartitioned)."""
    pdef = partitions_def_for(spec)
    return list(pdef.get_partition_keys()) if pdef is not None else [None]


def materialize_release(defs: Definitions, spec: ReleaseSpec, instance: DagsterInstance,
                        partitions: list[str | None] | None = None,
                        reports_dir: str | None = None, log_level: str = "CRITICAL",
                        translator: ReleaseTranslator | None = None) -> list[PartitionOutcome]:
    """Run the release's job once per partition (``log_level``: of the console); never raises for
    a refused release. ``$DAGSTER_HOME`` is made owner-only before and after the runs."""
    private_dagster_home()
    try:
        return [_run(defs, spec, instance, partition, log_level, translator or ReleaseTranslator(), reports_dir)
                for partition in (partitions if partitions is not None else release_partitions(spec))]
    finally:  # what the runs wrote under the home is owner-only too
        private_dagster_home()


def run_requested(defs: Definitions, spec: ReleaseSpec, instance: DagsterInstance, request: RunRequest,
                  log_level: str = "CRITICAL", translator: ReleaseTranslator | None = None) -> PartitionOutcome:
    """Run what a sensor of the release requested (its partition, selection and tags) in-process,
    as the daemon would launch it, and summarize the run."""
    return _run(defs, spec, instance, request.partition_key, log_level, translator or ReleaseTranslator(), None,
                asset_selection=request.asset_selection, tags=request.tags)


def _run(defs: Definitions, spec: ReleaseSpec, instance: DagsterInstance, partition: str | None, log_level: str,
         t: ReleaseTranslator, reports_dir: str | None, **request: Any) -> PartitionOutcome:
    result = defs.resolve_job_def(t.job_name(spec)).execute_in_process(
        partition_key=partition, instance=instance, raise_on_error=False,
        run_config={"loggers": {"console": {"config": {"log_level": log_level}}}}, **request)
    step_of = {t.asset_key(spec, step): step for step in STEPS}.get
    checks = [RecordedCheck(step_of(e.asset_key), e.check_name, e.passed, e.description, event_values(e.metadata))
              for e in result.get_asset_check_evaluations()]
    mats = [(step_of(e.materialization.asset_key), event_values(e.materialization.metadata))
            for e in result.get_asset_materialization_events()]
    return run_outcome(spec.release, partition, result.success, [e.step_key for e in result.get_step_failure_events()],
                       checks, mats, t.publication_check_name(spec), kept_report(spec, reports_dir, partition))


__all__ = ["PartitionOutcome", "materialize_release", "release_partitions", "run_requested"]
