"""What a release step's event shows, as plain data: entry names, their order and kinds.

An orchestrator converts these values (:class:`~.shown_values.Shown`, paths, tables, plain
values) to its own metadata and fits them to its event log (:mod:`.metadata_fit`); it decides
nothing of what is shown.

- a gate check: ``summary`` (Markdown), ``measured``, ``spec_key``, ``check`` (the contract form
  of ``anon-dagster check --json``, at full precision), ``threshold``, the kept ``report`` of a
  refused evaluation, then the check's evidence (:meth:`~.evaluation.CheckResult.evidence`);
- the raw step: ``rows``, ``source`` and ``columns``; the pseudonymized step: ``rows`` and,
  when it pseudonymized anything, the ``pseudonymization`` summary;
- the anonymized step: ``policy_unreachable`` (when it was), ``rows``, ``suppressed``, the
  ``transformation_record`` without what is per class and the ``transformation_record_file``;
- the published step: its outcome under :data:`~.refusal_feed.OUTCOME_KEY` (``published``,
  :data:`AWAITING_OUTCOME` or ``refused``), what the outcome says, and the ``publication``
  check's verdict; the ``freshness`` check's verdict from :class:`~.freshness.Freshness`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .alerts import Refusal
from .evaluation import CheckResult, Evaluation
from .freshness import Freshness
from .publish_step import AWAITING, PublicationStep
from .refusal_feed import OUTCOME_KEY, REFUSAL_KEY
from .shown_values import Shown, markdown, measured, record_summary, text

# the published step's outcome while its passing evaluation awaits approval (nothing written)
AWAITING_OUTCOME = "awaiting_approval"


@dataclass(frozen=True)
class ShownCheck:
    """A check's verdict as shown: ``severity`` ``error`` or ``warn``, one description, metadata."""

    passed: bool
    severity: str
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ShownPublication:
    """The published step's event: its ``metadata``, its ``publication`` check, the line logged
    (``info``), for a refusal the :class:`~.alerts.Refusal` an alert sends and, for a publication,
    the published ``rows`` and ``columns`` (name, dtype of the table written)."""

    metadata: dict[str, Any]
    check: ShownCheck
    info: str | None = None
    refusal: Refusal | None = None
    rows: int | None = None
    columns: list[tuple[str, str]] | None = None


def _report(report: Path | None) -> dict[str, Any]:
    return {"report": report} if report is not None else {}


def check_entries(result: CheckResult, evaluation: Evaluation, report: Path | None = None) -> dict[str, Any]:
    """A gate check's entries (see the module docstring); ``report`` is linked as ``report``."""
    return {"summary": markdown(result.summary), "measured": measured(result.measured),
            "spec_key": text(result.spec_key), "check": Shown("json", result.to_json()),
            "threshold": text(result.threshold_text), **_report(report), **result.evidence(evaluation)}


def check_shown(result: CheckResult, evaluation: Evaluation, report: Path | None = None) -> ShownCheck:
    """A gate check's verdict; a failed one links ``report`` (a refused evaluation's kept report)."""
    return ShownCheck(bool(result.passed), "error" if result.severity == "error" else "warn", result.summary,
                      check_entries(result, evaluation, report=None if result.passed else report))


def ingested_entries(ingested: Any) -> dict[str, Any]:
    """The raw step's entries from :class:`~.pipeline.Ingested`."""
    return {"rows": len(ingested.data), "source": ingested.source, "columns": len(ingested.data.columns)}


def pseudonymized_entries(result: Any) -> dict[str, Any]:
    """The pseudonymized step's entries from :class:`~.pipeline.Pseudonymized`."""
    return {"rows": len(result.data), **({"pseudonymization": Shown("json", result.summary)} if result.summary else {})}


def anonymized_entries(result: Any, record_file: Path) -> dict[str, Any]:
    """The anonymized step's entries from :class:`~.pipeline.Anonymized` (see the module docstring)."""
    return {**({"policy_unreachable": markdown(result.unreachable)} if result.unreachable else {}),
            "rows": len(result.data), "suppressed": result.suppressed,
            "transformation_record": record_summary(result.record, record_file),
            "transformation_record_file": record_file}


def freshness_shown(fresh: Freshness) -> ShownCheck:
    """The ``freshness`` check: ERROR when failed, ``age_days`` as the float the core rounded."""
    metadata = {k: Shown("float", v) if k == "age_days" else v for k, v in fresh.metadata.items()}
    return ShownCheck(fresh.passed, "error", fresh.description, metadata)


def undelivered_alert(problem: str) -> str:
    """The line logged when a refusal's alert was not delivered (``problem``: why not)."""
    return f"the refusal alert was not delivered: {problem}"


def publication_shown(step: PublicationStep, run_id: str | None) -> ShownPublication:
    """The published step's event for its outcome: published (the publication's figures),
    awaiting approval (the ``publication`` check fails with WARN: nothing was published, nothing
    refused) or refused (one line per failed check; the refusal without the run, the event's)."""
    evaluation = step.evaluation.id
    if step.published is not None:
        return ShownPublication({OUTCOME_KEY: "published", **step.published.figures()},
                                ShownCheck(True, "error", f"published: evaluation {evaluation}", {"evaluation": evaluation}),
                                rows=int(step.published.published.rows), columns=list(step.columns or []))
    if step.outcome == AWAITING:
        waiting = step.awaiting
        assert waiting is not None  # the AWAITING outcome carries it
        command = text(waiting.command)
        return ShownPublication(
            {OUTCOME_KEY: AWAITING_OUTCOME, "evaluation": evaluation, "approve_command": command,
             "approvals": f"{waiting.approvals} of {waiting.needed}", "ledger_event": waiting.entry,
             **_report(step.report)},
            ShownCheck(False, "warn", f"awaiting approval ({waiting.approvals} of {waiting.needed}): nothing "
                                      f"published. To approve: {waiting.command}",
                       {OUTCOME_KEY: AWAITING_OUTCOME, "evaluation": evaluation, "approve_command": command}),
            info=waiting.message)
    refusal, lines = step.refusal(run_id), step.reason_lines
    reasons, failed = markdown("\n".join(lines)), Shown("json", refusal.failed_checks)
    payload = {k: v for k, v in refusal.payload().items() if k != "run_id"}  # the run is the event's
    return ShownPublication(
        {OUTCOME_KEY: "refused", "reasons": reasons, "failed_checks": failed, "evaluation": evaluation,
         REFUSAL_KEY: Shown("json", payload), **_report(step.report)},
        ShownCheck(False, "error", "\n".join(lines), {"failed_checks": failed, "reasons": reasons,
                                                       "evaluation": evaluation}),
        info=f"{step.spec.release} {step.partition or ''}: publication refused, nothing written: "
             + "; ".join(refusal.reasons),
        refusal=refusal)


__all__ = ["AWAITING_OUTCOME", "ShownCheck", "ShownPublication", "anonymized_entries", "check_entries", "check_shown",
           "freshness_shown", "ingested_entries", "publication_shown", "pseudonymized_entries",
           "undelivered_alert"]
