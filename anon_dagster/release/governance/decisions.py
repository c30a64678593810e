"""Recording an approval or a rejection of an evaluation awaiting approval.

A decision is refused (:class:`DecisionRefused`, one line, nothing recorded) when the spec
requires no approval; when the approver is not listed in ``approval.approvers`` (names compared
in canonical form, :func:`~anon_dagster.spec.approval.canonical_name`: ``--as " DPO "`` is the
listed ``dpo``, recorded as the spec spells it; a name holding a zero-width or other format
character is refused); for an
approval, when ``approval.distinct_from_runner`` holds and the approver is the evaluation's
runner — the name given, or the identity of the process recording it (:func:`~.binding.runner`);
when the evaluation is unknown to the ledger (never recorded as awaiting approval), was refused
by its checks, or was already rejected; when the spec or the code changed since the evaluation
(its approval would bind nothing that can be published); when the approver already decided on
it; for a rejection, without a reason.

Otherwise the decision goes to the custody log first (:mod:`.custody`), then to the ledger as a
``decision`` event naming that custody entry, the checks above made again under the ledger's
write lock. A custody entry whose ledger decision then failed to be written (a lost lock, a
concurrent rejection) counts for nothing: only decisions in the ledger count, and only with
their custody entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...errors import UserError
from ...spec import ReleaseSpec
from ...spec.approval import canonical_name
from ..ledger import Ledger
from . import binding
from .custody import custody_log, record_custody
from .records import APPROVE, REFUSED, REJECT, Decision, Governance, counted_approvals, same_name


class DecisionRefused(UserError):
    """An approval or rejection that may not be recorded: nothing was written."""


@dataclass(frozen=True)
class Recorded:
    """A decision recorded: the decision itself, and the approvals that now count of those needed."""

    decision: Decision
    approvals: int
    needed: int
    rejected: bool

    def describe(self) -> str:
        d = self.decision
        if d.decision == REJECT:
            return (f"{d.subject.describe()}: rejected by {d.approver}; it will not be published "
                    f"(ledger event {d.seq}, custody entry {d.custody.get('seq')})")
        state = (f"{self.approvals} of {self.needed} approvals: the next publication of this evaluation publishes it"
                 if self.approvals >= self.needed else f"{self.approvals} of {self.needed} approvals: it still awaits "
                                                       f"{self.needed - self.approvals} more")
        return f"{d.subject.describe()}: approved by {d.approver}; {state} (ledger event {d.seq}, custody entry " \
               f"{d.custody.get('seq')})"


def decide(spec: ReleaseSpec, ledger: Ledger, *, partition: str | None, evaluation: str, approver: str,
           decision: str, reason: str = "", keystore: Any = None, audit_path: str | Path | None = None) -> Recorded:
    """Record ``decision`` (``approve`` or ``reject``) by ``approver`` on ``evaluation`` of
    ``partition`` (see the module docstring); :class:`DecisionRefused` otherwise."""
    if decision not in (APPROVE, REJECT):
        raise ValueError(f"decision {decision!r} is neither approve nor reject")
    partition, reason = partition or "", (reason or "").strip()
    where = f"{spec.release}/{partition}" if partition else spec.release
    approval = spec.approval
    if approval is None or not approval.required:
        raise DecisionRefused(f"{spec.label}: release {spec.release!r} requires no approval (approval.required is "
                              "not true): there is nothing to approve or reject")
    try:
        given = canonical_name(approver or "")
    except ValueError as exc:
        raise DecisionRefused(f"--as: the approver's name {exc}: type the name as approval.approvers lists it "
                              f"in {spec.label}") from None
    listed = {canonical_name(a): a for a in approval.approvers}
    if given not in listed:
        raise DecisionRefused(f"{spec.label}: {given!r} is not an approver of release {spec.release!r} "
                              f"(approval.approvers: {', '.join(approval.approvers)})")
    approver = listed[given]  # recorded as the spec spells it: one name per approver, whatever was typed
    if decision == REJECT and not reason:
        raise DecisionRefused("a rejection needs a reason (--reason): it is what the runner reads")
    governance = Governance.read(ledger)
    recorded = governance.evaluations(spec.release, partition, evaluation)
    if not recorded:
        raise DecisionRefused(f"{where}: no evaluation {evaluation!r} awaits approval in the ledger {ledger.path} "
                              "(unknown evaluation: its publication records it when its checks pass)")
    latest = recorded[-1]
    if latest.get("verdict") == REFUSED:
        raise DecisionRefused(f"{where}: evaluation {evaluation} was refused by its checks "
                              f"({'; '.join(latest.get('refusals') or [])[:200]}): there is nothing to {decision}")
    subject = binding.Subject.of(latest)
    if subject.spec_hash != spec.spec_hash():
        raise DecisionRefused(f"{where}: the spec {spec.label} changed since evaluation {evaluation} (spec hash "
                              f"{subject.spec_hash[:12]}, now {spec.spec_hash()[:12]}): publish again to evaluate "
                              "it anew, then decide on that evaluation")
    if subject.code_version != binding.code_version():
        raise DecisionRefused(f"{where}: the code changed since evaluation {evaluation} (code version "
                              f"{subject.code_version}, now {binding.code_version()}): publish again to evaluate it "
                              "anew, then decide on that evaluation")
    runner, by = str(latest.get("runner") or ""), binding.runner()
    ran = same_name(runner)
    if decision == APPROVE and approval.distinct_from_runner and (ran is None or ran in (given, same_name(by))):
        who = approver if ran == given else f"this process (it runs as {by})"
        raise DecisionRefused(f"{where}: {who} ran evaluation {evaluation}, and approval.distinct_from_runner "
                              "requires another person to approve it")

    def still_open(events: list[dict[str, Any]]) -> None:
        decided = Governance(events).decisions(subject)
        rejection = next((d for d in decided if d.decision == REJECT), None)
        if rejection is not None:
            raise DecisionRefused(f"{where}: evaluation {evaluation} was rejected by {rejection.approver} at "
                                  f"{rejection.at}: publish again to evaluate it anew")
        mine = next((d for d in decided if same_name(d.approver) == given), None)
        if mine is not None:
            raise DecisionRefused(f"{where}: {approver} already decided on evaluation {evaluation} "
                                  f"({mine.decision}, {mine.at})")

    still_open(governance.events)
    entry = record_custody(custody_log(keystore, audit_path), decision, subject, approver=approver, by=by,
                           reason=reason, runner=runner)
    event = {"event": "decision", **subject.fields(), "decision": decision, "approver": approver, "by": by,
             "reason": reason, "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
             "custody": {"seq": entry["seq"], "mac": entry["mac"]}}
    seq = ledger.append_content_event(event, check=still_open)
    decided = Governance.read(ledger).decisions(subject)
    counted = counted_approvals(decided, list(approval.approvers), runner, approval.distinct_from_runner)
    return Recorded(Decision.of({**event, "seq": seq}), len(counted), approval.min_approvals,
                    any(d.decision == REJECT for d in decided))


__all__ = ["DecisionRefused", "Recorded", "decide"]
