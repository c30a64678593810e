"""Which publications an approval makes due: the partitions whose evaluation became approved.

A cursor is the ledger ``seq`` of the last decision already seen (0 for none). A decision after
it makes its partition due when, counting every decision of its subject, the approvals reach
``approval.min_approvals`` of the spec it names (whose hash is the subject's: a spec changed
since no longer asks for it) and none rejects it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...spec import ReleaseSpec
from ..ledger import Ledger
from .binding import Subject
from .records import APPROVE, REJECT, Governance, counted_approvals


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


__all__ = ["Due", "approved_since"]
