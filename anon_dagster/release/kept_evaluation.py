"""Keeping the evidence of an evaluation of every check: a refused one is recorded in the
ledger as failed (never composed) with its report in the partition's report folder; a passing
one removes the report an earlier evaluation left there (its report is its publication's)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..spec import ReleaseSpec
from .evaluation import Evaluation
from .ledger import Ledger
from .ledger.lifecycle import private_folders
from .publish import record_evaluation
from .report_files import (
    REPORT_STEM,
    evaluation_report_inputs,
    evaluation_report_path,
    remove_kept_report,
    write_report_files,
)


@dataclass
class Kept:
    """What :func:`keep_evaluation` kept: the report written (a refused evaluation's; None for a
    passing one, whose report is its publication's, or when it could not be written), whether
    the evaluation was recorded as refused, and ``problem``, what prevented keeping it."""

    report: Path | None
    refused: bool
    problem: str | None = None


def record_refusal(spec: ReleaseSpec, evaluation: Evaluation, ledger: Ledger, folder: Path) -> dict[str, Any]:
    """Record a refused evaluation in the ledger (failed: never composed) and write its report
    (owner-only) into ``folder``."""
    inputs = evaluation_report_inputs(spec, evaluation, report_path=str(evaluation_report_path(folder)))
    _, report = record_evaluation(ledger, spec, inputs)
    private_folders(Path(folder), "the report folder")
    write_report_files(report, Path(folder) / REPORT_STEM)
    return report


def keep_evaluation(spec: ReleaseSpec, evaluation: Evaluation, ledger: Ledger, folder: Path) -> Kept:
    """Keep the evidence of an evaluation of every check in ``folder``: a refused one is recorded
    in the ledger (failed: never composed) with its report (:func:`record_refusal`); a passing
    one's report is its publication's, so the report an earlier evaluation left in ``folder`` is
    removed (:func:`remove_kept_report`) and publishing it is the publication step's. An
    evaluation of some of the checks only proves nothing about the release: do not keep it.

    Never raises: the verdicts stand whatever becomes of their evidence, so what prevented keeping
    it is returned as ``problem`` (one line), for the caller to report.
    """
    from .evaluate_step import describe_error

    refused = not evaluation.passed
    try:
        if refused:
            record_refusal(spec, evaluation, ledger, folder)
        else:
            remove_kept_report(folder)
    except Exception as exc:  # noqa: BLE001 - reported by the caller; the check results still stand
        return Kept(None, refused, describe_error(exc))
    return Kept(evaluation_report_path(folder) if refused else None, refused)
