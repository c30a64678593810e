"""The governance records of the ledger: evaluations awaiting approval (or refused) and decisions.

Both are events of the ledger's MACed chain (:data:`~anon_dagster.release.ledger.chain.CONTENT_EVENTS`)
whose body is their whole content, so editing, deleting or reordering one is caught as every
other event is (the ledger is refused when opened, or when they are read again). Their fields:

- ``evaluation``: the subject (:class:`~.binding.Subject`), ``verdict`` (``awaiting`` approval,
  or ``refused`` by its checks), ``runner``, ``at`` (UTC), ``rows``, ``checks`` (every check's
  name, verdict, figure measured and threshold, as ``anon-dagster check --json`` prints them),
  ``measures`` (every figure measured), ``refusals`` and ``report_path`` (the report the
  approvers read), and ``run_id`` when the publication was given its orchestrator run's id;
- ``decision``: the subject, ``decision`` (``approve`` or ``reject``), ``approver`` (the name
  given), ``by`` (the runner identity of the process that recorded it), ``reason``, ``at`` and
  ``custody`` (``seq`` and ``mac`` of its entry in the custody log).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...spec.approval import canonical_name
from ..ledger import Ledger
from .binding import Subject

AWAITING = "awaiting"
REFUSED = "refused"
APPROVE = "approve"
REJECT = "reject"


@dataclass(frozen=True)
class Decision:
    """One recorded approval or rejection."""

    subject: Subject
    decision: str
    approver: str
    by: str
    reason: str
    at: str
    custody: dict[str, Any]
    seq: int

    @classmethod
    def of(cls, event: dict[str, Any]) -> Decision:
        return cls(Subject.of(event), str(event["decision"]), str(event["approver"]), str(event.get("by") or ""),
                   str(event.get("reason") or ""), str(event["at"]), dict(event.get("custody") or {}),
                   int(event["seq"]))

    def for_report(self) -> dict[str, str]:
        """What the publication's report states of this decision: who, when, why."""
        return {"approver": self.approver, "at": self.at, "reason": self.reason, "recorded_by": self.by}


@dataclass(frozen=True)
class Governance:
    """The governance events of a ledger, verified and read in one snapshot."""

    events: list[dict[str, Any]]

    @classmethod
    def read(cls, ledger: Ledger) -> Governance:
        return cls(ledger.content_events())

    def evaluations(self, release: str, partition: str, evaluation: str) -> list[dict[str, Any]]:
        """The recorded evaluations with this id of this partition, oldest first."""
        return [e for e in self.events if e["event"] == "evaluation" and e.get("release") == release
                and (e.get("partition") or "") == partition and e.get("evaluation") == evaluation]

    def recorded(self, subject: Subject) -> dict[str, Any] | None:
        """The evaluation recorded for exactly ``subject`` (the latest), if any."""
        found = [e for e in self.events if e["event"] == "evaluation" and Subject.of(e) == subject]
        return found[-1] if found else None

    def decisions(self, subject: Subject) -> list[Decision]:
        """The decisions recorded for exactly ``subject``, oldest first."""
        return [Decision.of(e) for e in self.events if e["event"] == "decision" and Subject.of(e) == subject]

    def latest_decision_seq(self) -> int:
        """The ``seq`` of the last decision recorded (0 when none): a cursor of approvals."""
        return max((int(e["seq"]) for e in self.events if e["event"] == "decision"), default=0)


def same_name(name: str) -> str | None:
    """``name`` in canonical form (:func:`~anon_dagster.spec.approval.canonical_name`), None for
    a name that has none (a control or format character in it): such a name matches nobody."""
    try:
        return canonical_name(name)
    except ValueError:
        return None


def counted_approvals(decisions: list[Decision], approvers: list[str], runner: str | None,
                      distinct_from_runner: bool) -> list[Decision]:
    """The approvals that count: by a listed approver, not the runner when ``distinct_from_runner``
    (neither the name given nor the process that recorded it), one per approver (the first).
    Names are compared in canonical form: one person spelling their name two ways counts once,
    and a runner does not become someone else by a change of case."""
    listed = {same_name(a) for a in approvers} - {None}
    ran = same_name(runner) if runner is not None else None
    out: dict[str, Decision] = {}
    for d in decisions:
        who = same_name(d.approver)
        if d.decision != APPROVE or who is None or who not in listed or who in out:
            continue
        if distinct_from_runner and runner is not None and (ran is None or ran in (who, same_name(d.by))):
            continue
        out[who] = d
    return list(out.values())


__all__ = ["APPROVE", "AWAITING", "REFUSED", "REJECT", "Decision", "Governance", "counted_approvals", "same_name"]
