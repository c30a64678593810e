"""Materialize a release's partitions in-process through its job and summarize each run (for
scripts and demos; the runs show in ``dagster dev``). What a run did is read by the core
(:mod:`anon_dagster.release.run_outcome`)."""

from dagster import DagsterInstance, Definitions, ExecuteInProcessResult, RunRequest

from ..release.partition_outcome import PartitionOutcome
from ..release.publication import kept_report
from ..release.run_outcome import RecordedCheck, run_outcome
from ..release.run_storage import private_dagster_home
from ..release.step_conventions import STEPS
from ..spec import ReleaseSpec
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
    t = translator or ReleaseTranslator()
    job = defs.resolve_job_def(t.job_name(spec))
    private_dagster_home()
    try:
        return [_outcome(job.execute_in_process(
                    partition_key=partition, instance=instance, raise_on_error=False,
                    run_config={"loggers": {"console": {"config": {"log_level": log_level}}}}),
                    spec, partition, t, reports_dir)
                for partition in (partitions if partitions is not None else release_partitions(spec))]
    finally:  # what the runs wrote under the home is owner-only too
        private_dagster_home()


def run_requested(defs: Definitions, spec: ReleaseSpec, instance: DagsterInstance, request: RunRequest,
                  log_level: str = "CRITICAL", translator: ReleaseTranslator | None = None) -> PartitionOutcome:
    """Run what a sensor of the release requested (its partition, selection and tags) in-process,
    as the daemon would launch it, and summarize the run."""
    t = translator or ReleaseTranslator()
    job = defs.resolve_job_def(t.job_name(spec))
    result = job.execute_in_process(partition_key=request.partition_key, instance=instance, raise_on_error=False,
                                    asset_selection=request.asset_selection, tags=request.tags,
                                    run_config={"loggers": {"console": {"config": {"log_level": log_level}}}})
    return _outcome(result, spec, request.partition_key, t, None)


def _outcome(result: ExecuteInProcessResult, spec: ReleaseSpec, partition: str | None, t: ReleaseTranslator,
             reports_dir: str | None) -> PartitionOutcome:
    steps = {t.asset_key(spec, step): step for step in STEPS}
    checks = [RecordedCheck(steps.get(e.asset_key), e.check_name, e.passed, e.description,
                            {k: v.value for k, v in e.metadata.items()})
              for e in result.get_asset_check_evaluations()]
    mats = [(steps.get(e.materialization.asset_key), {k: v.value for k, v in e.materialization.metadata.items()})
            for e in result.get_asset_materialization_events()]
    return run_outcome(spec.release, partition, result.success, [e.step_key for e in result.get_step_failure_events()],
                       checks, mats, t.publication_check_name(spec), kept_report(spec, reports_dir, partition))


__all__ = ["PartitionOutcome", "materialize_release", "release_partitions", "run_requested"]
