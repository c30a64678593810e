"""Materialize a release's partitions in-process and summarize each run (for scripts and demos).

Runs the release's job through Dagster itself (same assets, checks, blocking and gate as the
UI or the scheduler would run), against a real instance, so the runs show in ``dagster dev``.
"""

from dataclasses import dataclass, field
from pathlib import Path

from dagster import DagsterInstance, Definitions

from ..partitions import UNPARTITIONED
from ..spec import ReleaseSpec
from .assets import reports_folder
from .partitions import partitions_def_for
from .translator import ReleaseTranslator


@dataclass
class PartitionOutcome:
    """What one run of a release partition did."""

    release: str
    partition: str | None
    success: bool
    rows_in: int | None = None
    rows_published: int | None = None
    failed_checks: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    failed_steps: list[str] = field(default_factory=list)
    # every check evaluation in its contract form (as `anon-dagster check --json`), by check name
    checks: dict[str, dict] = field(default_factory=dict)
    published: Path | None = None
    report: Path | None = None


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
    outcomes = []
    for partition in partitions if partitions is not None else release_partitions(spec):
        result = job.execute_in_process(
            partition_key=partition, instance=instance, raise_on_error=False,
            run_config={"loggers": {"console": {"config": {"log_level": log_level}}}},
        )
        out = PartitionOutcome(spec.release, partition, result.success)
        for event in result.all_events:
            if event.event_type_value == "ASSET_CHECK_EVALUATION":
                evaluation = event.event_specific_data
                contract = evaluation.metadata.get("check")
                if contract is not None:
                    out.checks[evaluation.check_name] = contract.value
                if not evaluation.passed:
                    out.failed_checks.append(evaluation.check_name)
                    if evaluation.description:
                        out.reasons.append(f"{evaluation.check_name}: {evaluation.description}")
            elif event.event_type_value == "STEP_FAILURE":
                out.failed_steps.append(event.step_key)
            elif event.event_type_value == "ASSET_MATERIALIZATION":
                mat = event.event_specific_data.materialization
                rows = mat.metadata.get("rows")
                if mat.asset_key == t.asset_key(spec, "raw") and rows is not None:
                    out.rows_in = int(rows.value)
                if mat.asset_key == t.asset_key(spec, "published"):
                    out.published = spec.resolve(spec.publication.path, partition=partition or UNPARTITIONED)
                    out.rows_published = int(rows.value) if rows is not None else None
        if out.published is not None:
            out.report = out.published.with_suffix("").with_name(out.published.stem + ".report.md")
        else:
            folder = reports_folder(spec, reports_dir, partition)
            out.report = folder / "risk_report.md" if (folder / "risk_report.md").exists() else None
        outcomes.append(out)
    return outcomes
