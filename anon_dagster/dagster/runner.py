"""Materialize a release's partitions in-process and summarize each run (for scripts and demos).

The runs go through the release's job (the same assets, checks and gate as the UI or the
scheduler), against a real instance, so they show in ``dagster dev``. ``$DAGSTER_HOME``, where
that instance keeps its run storage and event log, is made owner-only before and after the runs
(:func:`~anon_dagster.release.run_storage.private_dagster_home`).
"""

from pathlib import Path

from dagster import DagsterInstance, Definitions, ExecuteInProcessResult

from ..release.partition_outcome import PartitionOutcome
from ..release.publication import kept_report
from ..release.run_storage import private_dagster_home
from ..spec import ReleaseSpec
from .approval import AWAITING_OUTCOME
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
    """Run the release's job once per partition; never raises for a refused release.

    ``log_level`` is the console log level of the runs (the event log keeps everything);
    ``translator`` the one the definitions were built with (default :class:`ReleaseTranslator`).
    """
    t = translator or ReleaseTranslator()
    job = defs.resolve_job_def(t.job_name(spec))
    private_dagster_home()
    try:
        outcomes = []
        for partition in partitions if partitions is not None else release_partitions(spec):
            result = job.execute_in_process(
                partition_key=partition, instance=instance, raise_on_error=False,
                run_config={"loggers": {"console": {"config": {"log_level": log_level}}}},
            )
            outcomes.append(_outcome(result, spec, partition, t, reports_dir))
        return outcomes
    finally:  # what the runs wrote under the home is owner-only too
        private_dagster_home()


def _outcome(result: ExecuteInProcessResult, spec: ReleaseSpec, partition: str | None, t: ReleaseTranslator,
             reports_dir: str | None) -> PartitionOutcome:
    """What the run of ``partition`` did, from its events."""
    out = PartitionOutcome(spec.release, partition, result.success,
                           failed_steps=[e.step_key for e in result.get_step_failure_events()])
    published_key = t.asset_key(spec, "published")
    refusal: tuple[list[str], list[str]] | None = None
    for evaluation in result.get_asset_check_evaluations():
        if evaluation.asset_key == published_key:  # the publication's outcome; freshness is no gate check
            awaiting = "outcome" in evaluation.metadata  # awaiting approval: failed, but nothing refused
            if evaluation.check_name == t.publication_check_name(spec) and not evaluation.passed and not awaiting:
                listed = evaluation.metadata.get("failed_checks")
                refusal = (list(listed.value) if listed is not None else [],
                           (evaluation.description or "").splitlines())
            continue
        contract = evaluation.metadata["check"].value if "check" in evaluation.metadata else None
        out.add_check(evaluation.check_name, evaluation.passed, evaluation.description, contract)
    if refusal is not None:
        out.add_refusal(t.publication_check_name(spec), *refusal)
    for mat in (event.materialization for event in result.get_asset_materialization_events()):
        rows = int(mat.metadata["rows"].value) if "rows" in mat.metadata else None
        if mat.asset_key == t.asset_key(spec, "raw"):
            out.rows_in = rows
        elif mat.asset_key == published_key:
            out.evaluation = str(mat.metadata["evaluation"].value) if "evaluation" in mat.metadata else None
            if "outcome" in mat.metadata and mat.metadata["outcome"].value == "refused":
                out.outcome = "refused"
                continue
            if "outcome" in mat.metadata and mat.metadata["outcome"].value == AWAITING_OUTCOME:
                out.outcome = AWAITING_OUTCOME
                out.approve_command = str(mat.metadata["approve_command"].value)
                out.report = Path(mat.metadata["report"].value) if "report" in mat.metadata else None
                continue
            out.outcome = "published"  # where the publication says it wrote
            out.published, out.report = Path(mat.metadata["path"].value), Path(mat.metadata["report"].value)
            out.rows_published = rows
    return out.finish(kept_report(spec, reports_dir, partition) if out.report is None else None)


__all__ = ["PartitionOutcome", "materialize_release", "release_partitions"]
