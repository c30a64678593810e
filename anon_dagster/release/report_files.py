"""Where a partition's evaluation evidence goes, and the report files written there.

A partition's *report folder* (:func:`reports_folder`) holds its transformation record
(:func:`write_record`) and the report of a refused evaluation (``risk_report.md|html|json``,
:func:`write_evaluation_report`); a passing evaluation's report is its publication's
(``<stem>.report.md|html|json`` beside the published file, :func:`report_base`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..anonymize.record import TransformationRecord
from ..io import plain_json, write_bytes_atomic
from ..partitions import UNPARTITIONED
from ..spec import ReleaseSpec
from . import gate
from .evaluation import Evaluation
from .ledger.lifecycle import private_folders
from .report import build_report, render, report_inputs
from .targets import REPORT_FORMATS

RECORD_FILE = gate.RECORD_FILE
REPORT_STEM = "risk_report"


def reports_folder(spec: ReleaseSpec, reports_dir: str | None, partition: str | None) -> Path:
    """Where a partition's transformation record and the report of its evaluation go: ``reports_dir``
    (may hold {release}; relative to the spec's folder) or ``reports/<release>`` beside the spec
    folder, then the partition (``all`` for an unpartitioned release)."""
    base = spec.resolve(reports_dir) if reports_dir else spec.resolve("../reports/{release}")
    return base / (partition or UNPARTITIONED)


def evaluation_report_path(folder: Path) -> Path:
    """The Markdown report of the evaluation kept in ``folder`` (beside its .html and .json)."""
    return Path(folder) / f"{REPORT_STEM}.md"


def kept_report(spec: ReleaseSpec, reports_dir: str | None, partition: str | None) -> Path | None:
    """The Markdown report of the refused evaluation kept for ``partition`` (:func:`keep_evaluation`),
    None when none was kept (a passing evaluation's report is its publication's)."""
    report = evaluation_report_path(reports_folder(spec, reports_dir, partition))
    return report if report.exists() else None


def remove_kept_report(folder: Path) -> bool:
    """Remove the evaluation report kept in ``folder`` (``risk_report.md|html|json``), if any: the
    partition's current evaluation passed, so its report is its publication's. True if one was there."""
    removed = False
    for fmt in REPORT_FORMATS:
        path = Path(folder) / f"{REPORT_STEM}.{fmt}"
        if path.is_file() or path.is_symlink():
            path.unlink()
            removed = True
    return removed


def publication_target(spec: ReleaseSpec, partition: str | None) -> Path:
    """Where the partition's publication goes (``publication.path`` with {partition} filled in)."""
    from .targets import target_of

    return target_of(spec, partition).path


def report_base(target: Path) -> Path:
    """``<stem>.report`` beside the publication (the report files add .md, .html, .json)."""
    return target.with_name(f"{target.stem}.report")


def evaluation_report_inputs(spec: ReleaseSpec, evaluation: Evaluation, *, published_path: str | None = None,
                             report_path: str | None = None, dp: Any = None,
                             data_hash: str | None = None) -> dict[str, Any]:
    """The report inputs of an evaluation (the dict the ledger stores and the report is built from)."""
    queries = [{"name": c.name.removeprefix("utility_"), "error_points": c.measured,
                "max_error_points": c.threshold, "passed": c.passed, "severity": c.severity}
               for c in evaluation.checks if c.name.startswith("utility_")]
    risk = bool(evaluation.measures)
    return report_inputs(
        spec, partition=evaluation.partition, data_hash=data_hash or evaluation.data_hash,
        measures=evaluation.measures if risk else None,
        class_sizes=evaluation.class_sizes if risk else None,
        population_uniqueness=evaluation.measures.get("population_uniqueness") if risk else None,
        utility={"queries": plain_json(queries)} if risk else None,
        anonymization_record=plain_json(evaluation.record or {}) if risk else None,
        composition=evaluation.composition, dp=dp,
        checks=[c.report_entry() for c in evaluation.checks], mitigations=evaluation.mitigations,
        published_path=published_path, report_path=report_path,
    )


def write_report_files(report: dict[str, Any], base: Path, mode: int = 0o600) -> None:
    """Write ``report`` as ``<base>.md``, ``<base>.html`` and ``<base>.json``, each atomically."""
    for fmt in REPORT_FORMATS:
        write_bytes_atomic(render(report, fmt).encode(), base.with_name(f"{base.name}.{fmt}"), mode=mode)


def write_record(record: TransformationRecord, folder: Path) -> Path:
    """The transformation record as ``<folder>/transformations.json`` (atomically; sorted keys
    and no final newline, as report folders have always held it); the folder is owner-only."""
    private_folders(Path(folder), "the report folder")
    return record.write(Path(folder) / RECORD_FILE, sort_keys=True, final_newline=False)


def write_evaluation_report(spec: ReleaseSpec, evaluation: Evaluation, folder: Path) -> dict[str, Any]:
    """The evaluation's risk report written into ``folder`` (``risk_report.md|html|json``, owner-only)."""
    inputs = evaluation_report_inputs(spec, evaluation, report_path=str(evaluation_report_path(folder)))
    report = build_report(inputs)
    private_folders(Path(folder), "the report folder")
    write_report_files(report, Path(folder) / REPORT_STEM)
    return report
