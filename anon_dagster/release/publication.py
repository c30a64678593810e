"""Publishing an evaluated release, or keeping the evidence of a refused one.

The publication protocol, written once for both kinds of release (rows, DP aggregates):

1. refuse unless the evaluation passes (nothing is written);
2. write the table aside, under a hidden name in the publication's folder;
3. record the publication in the ledger (one transaction: the entry, the class assignment
   keyed by linkage pseudonyms, the report inputs; for DP aggregates the ε spend);
4. rename the table into place;
5. write the risk report (md, html, json) beside it.

A failure before the rename leaves the previous publication intact and no new ledger entry.
A refused evaluation is recorded in the ledger as failed (it never counts for composition) and
keeps its report in the partition's report folder.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..anonymize.record import TransformationRecord
from ..errors import UserError
from ..io import plain_json, write_bytes_atomic, write_table_atomic
from ..partitions import UNPARTITIONED
from ..spec import ReleaseSpec
from . import gate
from .evaluation import Evaluation
from .ledger import Ledger, RecordOutcome, dataset_hash
from .publish import record_evaluation
from .report import build_report, render, report_inputs

RECORD_FILE = gate.RECORD_FILE
REPORT_STEM = "risk_report"


class PublicationRefused(UserError):
    """The evaluation did not pass: nothing was written. ``refusals`` says why, check by check."""

    def __init__(self, message: str, refusals: list[str]):
        super().__init__(message)
        self.refusals = refusals


@dataclass
class Published:
    """What a publication wrote: the file, its ledger entry and its report."""

    path: Path
    rows: int
    columns: list[str]
    data_hash: str
    ledger_entry: int | None
    ledger_action: str
    report_path: Path


def publication_target(spec: ReleaseSpec, partition: str | None) -> Path:
    """Where the partition's publication goes (``publication.path`` with {partition} filled in)."""
    return spec.resolve(spec.publication.path, partition=partition or UNPARTITIONED)


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
    for fmt in ("md", "html", "json"):
        write_bytes_atomic(render(report, fmt).encode(), base.with_name(f"{base.name}.{fmt}"), mode=mode)


def write_record(record: TransformationRecord, folder: Path) -> Path:
    """The transformation record as ``<folder>/transformations.json`` (atomically; sorted keys
    and no final newline, as report folders have always held it)."""
    return record.write(Path(folder) / RECORD_FILE, sort_keys=True, final_newline=False)


def write_evaluation_report(spec: ReleaseSpec, evaluation: Evaluation, folder: Path) -> dict[str, Any]:
    """The evaluation's risk report written into ``folder`` (``risk_report.md|html|json``)."""
    inputs = evaluation_report_inputs(spec, evaluation, report_path=str(Path(folder) / f"{REPORT_STEM}.md"))
    report = build_report(inputs)
    write_report_files(report, Path(folder) / REPORT_STEM)
    return report


def record_refusal(spec: ReleaseSpec, evaluation: Evaluation, ledger: Ledger, folder: Path) -> dict[str, Any]:
    """Record a refused evaluation in the ledger (failed: never composed) and write its report."""
    inputs = evaluation_report_inputs(spec, evaluation, report_path=str(Path(folder) / f"{REPORT_STEM}.md"))
    _, report = record_evaluation(ledger, spec, inputs)
    write_report_files(report, Path(folder) / REPORT_STEM)
    return report


def _refuse_unless_passed(spec: ReleaseSpec, evaluation: Evaluation) -> None:
    if not evaluation.passed:
        where = f"{spec.release} {evaluation.partition or ''}".strip()
        raise PublicationRefused(f"{where}: publication refused, nothing written: " + "; ".join(evaluation.refusals),
                                 evaluation.refusals)


def _write_then_record(table: pd.DataFrame, target: Path,
                       record: Callable[[], tuple[RecordOutcome, dict[str, Any]]]) -> tuple[RecordOutcome, dict[str, Any]]:
    """Steps 2–5 of the protocol (see the module docstring)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    aside = target.with_name(f".{target.stem}.pending{target.suffix}")  # same format, hidden
    write_table_atomic(table, aside, mode=0o644)
    try:
        outcome, report = record()
        os.replace(aside, target)
    except BaseException:
        aside.unlink(missing_ok=True)
        raise
    write_report_files(report, report_base(target), mode=0o644)
    return outcome, report


def publish(spec: ReleaseSpec, evaluation: Evaluation, anonymized: pd.DataFrame, ledger: Ledger) -> Published:
    """Publish the rows of a passing evaluation (see the module docstring); PublicationRefused otherwise.

    ``anonymized`` is the table the evaluation judged; its published columns are written.
    """
    _refuse_unless_passed(spec, evaluation)
    out = gate.publishable_view(anonymized)[list(spec.published_columns)]
    target = publication_target(spec, evaluation.partition)
    report_path = report_base(target).with_suffix(".report.md")
    inputs = evaluation_report_inputs(spec, evaluation, published_path=str(target), report_path=str(report_path))
    report = build_report(inputs)
    if not report["verdict"]["publishable"]:  # the report judges the same checks: a second opinion
        raise PublicationRefused(f"{spec.release} {evaluation.partition or ''}: the report's verdict is "
                                 f"{report['verdict']['verdict']!r}: nothing written", [report["verdict"]["verdict"]])
    outcome, _ = _write_then_record(out, target, lambda: record_evaluation(
        ledger, spec, inputs, assignment=evaluation.assignment, rows=len(out), report_path=str(report_path)))
    return Published(target, len(out), list(out.columns), inputs["data_hash"], outcome.publication_id,
                     outcome.action, report_path)


def publish_aggregates(spec: ReleaseSpec, evaluation: Evaluation, pseudonymized: pd.DataFrame,
                       ledger: Ledger) -> tuple[Published, dict[str, Any]]:
    """Publish the noisy aggregates of a passing ``publication.mode: aggregates`` evaluation.

    The budget was checked by the evaluation; the noise is drawn once, here, and the budget is
    spent with the ledger entry in one transaction (refused again if another release spent it
    meanwhile). Returns the publication and the aggregates' expected errors.
    """
    from .dp import epsilon_spend
    from .publish import dp_release

    _refuse_unless_passed(spec, evaluation)
    aggregates, dp_info = dp_release(spec, gate.publishable_view(pseudonymized), ledger)
    target = publication_target(spec, evaluation.partition)
    report_path = report_base(target).with_suffix(".report.md")
    inputs = evaluation_report_inputs(spec, evaluation, published_path=str(target), report_path=str(report_path),
                                      dp=dp_info, data_hash=dataset_hash(aggregates.table))
    outcome, _ = _write_then_record(aggregates.table, target, lambda: record_evaluation(
        ledger, spec, inputs, rows=len(aggregates.table), report_path=str(report_path),
        epsilon_spend=epsilon_spend(spec)))
    published = Published(target, len(aggregates.table), list(aggregates.table.columns), inputs["data_hash"],
                          outcome.publication_id, outcome.action, report_path)
    return published, plain_json(aggregates.measures)


__all__ = [
    "PublicationRefused", "Published", "evaluation_report_inputs", "publication_target", "publish",
    "publish_aggregates", "record_refusal", "report_base", "write_evaluation_report", "write_record",
    "write_report_files",
]
