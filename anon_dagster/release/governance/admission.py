"""The publication's approval step: publish a passing evaluation only once it is approved.

Called by :func:`~anon_dagster.release.publication.publish_release` before anything is
written, for a spec whose ``approval.required`` is true:

- an evaluation refused by its checks is recorded as ``refused`` (so approving it is refused
  with the reason), then refused as every refused evaluation is;
- a rejection of the same subject (:class:`~.binding.Subject`: evaluation, spec hash, data
  hash, code version) refuses the publication (:class:`~anon_dagster.release.refusals.PublicationRefused`);
- with ``approval.min_approvals`` counted approvals (:func:`~.records.counted_approvals`), each
  with its entry in the verified custody log, the publication goes ahead and its report states
  who approved, when and why;
- otherwise nothing is published: the evaluation is recorded as ``awaiting`` (once per subject)
  with every figure, its report is written to the partition's report folder for the approvers,
  and :class:`AwaitingApproval` is raised, with the command that approves it.
"""

from __future__ import annotations

import shlex
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...io import plain_json
from ...spec import ReleaseSpec
from ..evaluation import Evaluation
from ..ledger import Ledger
from ..refusals import PublicationRefused, refuse_unless_passed
from . import binding
from .custody import custody_log, custody_missing, verified_entries
from .records import AWAITING, REFUSED, REJECT, Governance, counted_approvals

OUTCOME = "awaiting approval"


class AwaitingApproval(Exception):  # noqa: N818 - an outcome, not a failure: neither refused nor published
    """The checks passed but the release awaits approval: nothing was published.

    ``evaluation`` is the evaluation's id, ``command`` the command an approver runs,
    ``report_path`` the report they read, ``approvals`` and ``needed`` how many count and how
    many are required, ``entry`` the ledger event recording the evaluation.
    """

    outcome = OUTCOME

    def __init__(self, message: str, *, evaluation: str, command: str, report_path: Path | None,
                 approvals: int, needed: int, entry: int):
        super().__init__(message)
        self.evaluation, self.command, self.report_path = evaluation, command, report_path
        self.approvals, self.needed, self.entry = approvals, needed, entry


def approve_command(spec: ReleaseSpec, partition: str | None, evaluation: str) -> str:
    """The command that approves ``evaluation`` (the approver fills in their name and reason)."""
    where = f" --partition {shlex.quote(partition)}" if partition else ""
    return (f"anon-dagster approve {shlex.quote(str(spec.label))}{where} --evaluation {evaluation} "
            "--as NAME --reason TEXT")


def subject_of(spec: ReleaseSpec, evaluation: Evaluation) -> binding.Subject:
    """The subject a publication of ``evaluation`` needs approved, under this process's code."""
    return binding.Subject(spec.release, evaluation.partition or "", evaluation.id, evaluation.spec_hash,
                           evaluation.data_hash, binding.code_version())


def _record(ledger: Ledger, governance: Governance, subject: binding.Subject, verdict: str,
            evaluation: Evaluation, report_path: Path | None, run_id: str | None = None) -> int:
    """The ``evaluation`` event of ``subject`` (recorded now unless it already is); its ``seq``.
    ``run_id`` is the orchestrator's run that evaluated it, recorded only when given."""
    found = governance.recorded(subject)
    if found is not None and found.get("verdict") == verdict:
        return int(found["seq"])
    event = {"event": "evaluation", **subject.fields(), "verdict": verdict, "runner": binding.runner(),
             "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "rows": int(evaluation.rows),
             "checks": plain_json([c.to_json() for c in evaluation.checks]),
             "measures": plain_json(evaluation.measures), "refusals": list(evaluation.refusals),
             "report_path": str(report_path) if report_path is not None else None}
    if run_id:  # absent rather than null: events recorded without a run read as before
        event["run_id"] = str(run_id)
    return ledger.append_content_event(event)


def admit(spec: ReleaseSpec, evaluation: Evaluation, ledger: Ledger, *, keystore: Any = None,
          reports: Path | None = None, run_id: str | None = None) -> dict[str, Any] | None:
    """The approval step (see the module docstring): None when the spec requires no approval, else
    the approval as the publication's report states it; raises otherwise. ``reports`` is the
    partition's report folder (default :func:`~anon_dagster.release.report_files.reports_folder`);
    ``run_id`` (a Dagster run's id) goes into the evaluation's ledger event when it is recorded."""
    approval = spec.approval
    if approval is None or not approval.required:
        return None
    governance = Governance.read(ledger)
    subject = subject_of(spec, evaluation)
    if not evaluation.passed:
        _record(ledger, governance, subject, REFUSED, evaluation, None, run_id)
        refuse_unless_passed(spec, evaluation)
    where = subject.describe()
    decided = governance.decisions(subject)
    rejection = next((d for d in decided if d.decision == REJECT), None)
    if rejection is not None:
        message = (f"{where}: rejected by {rejection.approver} at {rejection.at} ({rejection.reason}): "
                   "publication refused, nothing written")
        raise PublicationRefused(message, [message])
    recorded = governance.recorded(subject)
    runner = str(recorded.get("runner") or "") if recorded is not None else binding.runner()
    counted = counted_approvals(decided, list(approval.approvers), runner, approval.distinct_from_runner)
    if counted:
        missing = custody_missing(counted, verified_entries(custody_log(keystore)))
        if missing:
            message = (f"{where}: the approval by {missing[0].approver} has no entry in the custody log: it was "
                       "not recorded by anon-dagster approve, or the log was replaced; publication refused, "
                       "nothing written")
            raise PublicationRefused(message, [message])
    if len(counted) >= approval.min_approvals:
        return {"required": True, "min_approvals": approval.min_approvals, "runner": runner,
                "code_version": subject.code_version, "approvals": [d.for_report() for d in counted]}
    from ..report_files import evaluation_report_path, reports_folder, write_evaluation_report

    folder = reports if reports is not None else reports_folder(spec, None, evaluation.partition)
    write_evaluation_report(spec, evaluation, folder)
    report = evaluation_report_path(folder)
    entry = _record(ledger, governance, subject, AWAITING, evaluation, report, run_id)
    command = approve_command(spec, evaluation.partition, evaluation.id)
    raise AwaitingApproval(
        f"{where}: every blocking check passed; awaiting approval ({len(counted)} of {approval.min_approvals}, "
        f"by {', '.join(approval.approvers)}): nothing published. Report: {report}. To approve: {command}",
        evaluation=evaluation.id, command=command, report_path=report, approvals=len(counted),
        needed=approval.min_approvals, entry=entry)


__all__ = ["OUTCOME", "AwaitingApproval", "admit", "approve_command", "subject_of"]
