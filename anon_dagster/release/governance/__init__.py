"""Governance of releases: a passing evaluation is published only once the people the spec
names have approved it, and every decision leaves a trace that can be verified.

The workflow (docs/governance.md):

1. a spec declares ``approval: {required: true, approvers: [...], min_approvals: 1,
   distinct_from_runner: true}`` (:mod:`anon_dagster.spec.approval`);
2. a publication whose checks pass records the evaluation as awaiting approval in the ledger and
   publishes nothing (:func:`.admission.admit`, :class:`.admission.AwaitingApproval`);
3. an approver approves or rejects it (:func:`.decisions.decide`, ``anon-dagster approve`` and
   ``anon-dagster reject``): the decision goes to the custody log (:mod:`.custody`) and to the
   ledger, bound to the evaluation's subject (:mod:`.binding`);
4. the next publication of the same evaluation, once enough approvals count, publishes it; its
   report states who approved, when and why.

Modules: :mod:`.binding` (code version, runner, subject), :mod:`.records` (the ledger's
governance events), :mod:`.custody` (the custody log), :mod:`.decisions` (approve, reject),
:mod:`.admission` (the publication's approval step), :mod:`.requests` (the partitions an approval
made due, for a sensor), :mod:`.retention` (intermediates deleted past the spec's ``retention``),
:mod:`.erasure` and :mod:`.suppression` (a person removed from the intermediates and from every
later run), :mod:`.access` (the custody entries of reads, deletions, erasures and key operations).
"""

from .admission import OUTCOME, AwaitingApproval, admit, approve_command
from .binding import RUNNER_ENV, Subject, code_version, runner
from .custody import custody_log
from .decisions import DecisionRefused, Recorded, decide
from .records import Decision, Governance

__all__ = [
    "OUTCOME", "RUNNER_ENV", "AwaitingApproval", "Decision", "DecisionRefused", "Governance", "Recorded", "Subject",
    "admit", "approve_command", "code_version", "custody_log", "decide", "runner",
]
