"""Which publications an approval makes due: the partitions whose evaluation became approved.

A cursor is the ledger ``seq`` of the last decision already seen (0 for none). A decision after
it makes its partition due when, counting every decision of its subject, the approvals reach
``approval.min_approvals`` of the spec it names (whose hash is the subject's: a spec changed
since no longer asks for it) and none rejects it.

An orchestrator's run for a due partition (:func:`approval_runs`) has the run key
``approval:<release>:<partition>:<evaluation>:<seq>`` (each approval starts one run), the
partition key of a partitioned release, and the tag :data:`APPROVED_TAG` naming the evaluation;
its cursor is the seq as text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...spec import ReleaseSpec
from ..ledger import Ledger
from .binding import Subject
from .records import APPROVE, REJECT, Governance, counted_approvals

APPROVED_TAG = "anon_dagster/approved_evaluation"


@dataclass(frozen=True)
class Due:
    """A partition to publish now: its evaluation was approved by the decision at ``seq``."""

    subject: Subject
    seq: int


def approved_since(ledger: Ledger, specs: Iterable[ReleaseSpec], cursor: int) -> tuple[list[Due], int]:
    """The partitions made due by decisions after ``cursor`` (one per subject, oldest first), and
    the new cursor (the last decision's seq)."""
    governance = Governance.read(ledger)
    by_release = {s.release: s for s in specs}
    due: dict[Subject, Due] = {}
    for event in governance.events:
        if event["event"] != "decision" or int(event["seq"]) <= cursor or event.get("decision") != APPROVE:
            continue
        subject = Subject.of(event)
        spec = by_release.get(subject.release)
        if spec is None or spec.approval is None or not spec.approval.required or subject.spec_hash != spec.spec_hash():
            continue
        decided = governance.decisions(subject)
        recorded = governance.recorded(subject) or {}
        counted = counted_approvals(decided, list(spec.approval.approvers), str(recorded.get("runner") or ""),
                                    spec.approval.distinct_from_runner)
        if len(counted) >= spec.approval.min_approvals and not any(d.decision == REJECT for d in decided):
            due.setdefault(subject, Due(subject, int(event["seq"])))
    return list(due.values()), max(cursor, governance.latest_decision_seq())


@dataclass(frozen=True)
class ApprovalRun:
    """The run an approval asks for: the release, its partition key (None: unpartitioned), run key and tags."""

    release: str
    partition: str | None
    run_key: str
    tags: dict[str, str]


def governed(specs: Iterable[ReleaseSpec]) -> dict[str, ReleaseSpec]:
    """The releases of ``specs`` whose publication waits for an approval (``approval.required``), by name."""
    return {s.release: s for s in specs if s.approval is not None and s.approval.required}


def approval_runs(ledger: Ledger, specs: Iterable[ReleaseSpec], cursor: str | None) -> tuple[list[ApprovalRun], str]:
    """The runs the decisions after ``cursor`` (text; empty: none seen) make due, and the new cursor."""
    by_release = {s.release: s for s in specs}
    due, seq = approved_since(ledger, by_release.values(), int(cursor or 0))
    runs = [ApprovalRun(d.subject.release, d.subject.partition if by_release[d.subject.release].partitions else None,
                        f"approval:{d.subject.release}:{d.subject.partition}:{d.subject.evaluation}:{d.seq}",
                        {APPROVED_TAG: d.subject.evaluation}) for d in due]
    return runs, str(seq)


__all__ = ["APPROVED_TAG", "ApprovalRun", "Due", "approval_runs", "approved_since", "governed"]
