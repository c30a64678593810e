"""Attacks on approvals: names spelled another way, decisions replayed on another subject, the
ledger's decisions reordered, a rejection after an approval, two approvals at once.

Each test is an attack an operator could make by mistake or on purpose; it asserts the attack
is refused (or counts for nothing) and that what is recorded stays consistent.
"""

from __future__ import annotations

import sqlite3
import threading
import unicodedata

import pytest

from anon_dagster.errors import UserError
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.pseudonymize.audit import AuditLog
from anon_dagster.release import governance, pipeline
from anon_dagster.release.governance import AwaitingApproval, DecisionRefused, decide
from anon_dagster.release.governance.records import Decision, counted_approvals
from anon_dagster.release.ledger import LedgerError
from anon_dagster.release.publication import PublicationRefused, publish_release
from anon_dagster.spec.approval import ApprovalSpec, approval_problems, canonical_name
from tests.support.ledgers import env_ledger

PARTITION = "2023"


def evaluate(governed, partition: str = PARTITION):
    return pipeline.run_gate(governed.spec, partition=partition, keystore=open_keystore(), ledger=governed.ledger)


def publish(governed, run):
    return publish_release(governed.spec, run.evaluation, anonymized=run.anonymized.data,
                           pseudonymized=run.pseudonymized.data, ledger=governed.ledger)


def waiting_run(governed, partition: str = PARTITION):
    run = evaluate(governed, partition)
    with pytest.raises(AwaitingApproval):
        publish(governed, run)
    return run


def decide_as(governed, run, name: str, monkeypatch, *, desk: str | None = None, decision: str = "approve",
              partition: str = PARTITION, reason: str = "read the report"):
    """``name`` decides from an account of their own (``desk``), then the pipeline's account is back."""
    monkeypatch.setenv(governance.RUNNER_ENV, desk or "desk-of-someone")
    try:
        return decide(governed.spec, governed.ledger, partition=partition, evaluation=run.evaluation.id,
                      approver=name, decision=decision, reason=reason)
    finally:
        monkeypatch.setenv(governance.RUNNER_ENV, "pipeline")


def two_approvals(governed) -> None:
    def change(raw):
        raw["approval"]["min_approvals"] = 2
    governed.edit(change)


# --- 1. names spelled another way -------------------------------------------------------------

@pytest.mark.parametrize(("typed", "canonical"), [
    ("DPO", "dpo"), (" dpo ", "dpo"), ("\tDpo\t", "dpo"),
    ("ｄｐｏ", "dpo"),  # full-width letters: NFKC makes them the ASCII ones
    (unicodedata.normalize("NFD", "josé"), "josé"), (unicodedata.normalize("NFC", "JOSÉ"), "josé"),
])
def test_one_canonical_form_of_a_name(typed, canonical):
    assert canonical_name(typed) == canonical


@pytest.mark.parametrize("typed", ["dpo\u200b", "\u200ddpo", "d\u202epo", "dpo\x00", "   "])
def test_a_name_with_an_invisible_character_or_none_is_refused(typed):
    with pytest.raises(ValueError, match="U\\+|empty"):
        canonical_name(typed)


def test_a_look_alike_letter_is_another_name():
    assert canonical_name("dp\u043e") != canonical_name("dpo")  # Cyrillic o: not folded into Latin


def test_the_spec_refuses_one_approver_listed_under_two_spellings():
    problems = approval_problems(ApprovalSpec(required=True, approvers=["dpo", "DPO"], min_approvals=2))
    keys = [key for key, _ in problems]
    assert "approval.approvers.1" in keys  # listed twice
    assert "approval.min_approvals" in keys  # and 2 approvals from one person could never be had


def test_an_approver_typed_in_another_case_or_with_spaces_is_the_listed_one(governed, monkeypatch):
    run = waiting_run(governed)
    done = decide_as(governed, run, "  DPO ", monkeypatch)
    assert done.decision.approver == "dpo" and (done.approvals, done.needed) == (1, 1)
    assert publish(governed, run).published.path.exists()
    [entry] = [e["event"] for e in AuditLog(open_keystore()).entries() if e["event"]["action"] == "approve"]
    assert entry["actor"] == "dpo"  # one spelling in the custody log too


@pytest.mark.parametrize(("typed", "why"), [("dpo\u200b", "U\\+200B"), ("dp\u043e", "is not an approver")])
def test_an_invisible_or_look_alike_approver_is_refused_and_nothing_recorded(governed, monkeypatch, typed, why):
    run = waiting_run(governed)
    before = len(AuditLog(open_keystore()).entries())
    with pytest.raises(DecisionRefused, match=why) as caught:
        decide_as(governed, run, typed, monkeypatch)
    assert "\n" not in str(caught.value)
    assert len(AuditLog(open_keystore()).entries()) == before
    assert not governance.Governance.read(governed.ledger).decisions(
        governance.admission.subject_of(governed.spec, run.evaluation))


def test_one_person_spelling_their_name_two_ways_counts_once(governed, monkeypatch):
    two_approvals(governed)
    run = waiting_run(governed)
    assert decide_as(governed, run, "dpo", monkeypatch).approvals == 1
    with pytest.raises(DecisionRefused, match="already decided"):
        decide_as(governed, run, "DPO", monkeypatch, desk="another-desk")
    with pytest.raises(AwaitingApproval):
        publish(governed, run)


def test_counting_folds_spellings_even_of_decisions_recorded_before(governed):
    subject = governance.Subject("tiny", PARTITION, "e", "s", "d", "c")

    def approval(name: str, seq: int) -> Decision:
        return Decision(subject, "approve", name, "desk", "", "t", {}, seq)

    counted = counted_approvals([approval("dpo", 1), approval("DPO", 2), approval("Dpo ", 3)], ["dpo", "ciso"],
                                "pipeline", True)
    assert [d.seq for d in counted] == [1]
    # the runner's account spelled in another case is still the runner
    assert counted_approvals([approval("dpo", 1)], ["dpo"], "DPO", True) == []
    assert counted_approvals([Decision(subject, "approve", "ciso", "Pipeline", "", "t", {}, 1)], ["ciso"],
                             "pipeline", True) == []


def test_the_runner_cannot_approve_by_changing_the_case_of_its_name(governed, monkeypatch):
    monkeypatch.setenv(governance.RUNNER_ENV, "Dpo")
    run = evaluate(governed)
    with pytest.raises(AwaitingApproval):
        publish(governed, run)
    assert governance.Governance.read(governed.ledger).evaluations("tiny", PARTITION, run.evaluation.id)[-1][
        "runner"] == "dpo"
    with pytest.raises(DecisionRefused, match="distinct_from_runner"):
        decide_as(governed, run, "dpo", monkeypatch, desk="desk-of-dpo")
    with pytest.raises(DecisionRefused, match="distinct_from_runner"):  # nor from the runner's own account
        decide_as(governed, run, "ciso", monkeypatch, desk="DPO")


def test_a_runner_name_with_an_invisible_character_is_refused(monkeypatch):
    monkeypatch.setenv(governance.RUNNER_ENV, "pipe\u200bline")
    with pytest.raises(UserError, match="ANON_DAGSTER_RUNNER.*U\\+200B"):
        governance.runner()


# --- 2. the ledger's decisions reordered -------------------------------------------------------

def test_decisions_reordered_in_the_ledger_file_are_detected(governed, monkeypatch):
    two_approvals(governed)
    run = waiting_run(governed)
    decide_as(governed, run, "dpo", monkeypatch)
    decide_as(governed, run, "ciso", monkeypatch)
    conn = sqlite3.connect(governed.ledger.path)
    with conn:
        rows = conn.execute("SELECT seq, body, mac FROM chain WHERE body LIKE '%\"event\":\"decision\"%' "
                            "ORDER BY seq").fetchall()
        (a, body_a, mac_a), (b, body_b, mac_b) = rows
        conn.execute("UPDATE chain SET body = ?, mac = ? WHERE seq = ?", (body_b, mac_b, a))
        conn.execute("UPDATE chain SET body = ?, mac = ? WHERE seq = ?", (body_a, mac_a, b))
    conn.close()
    with pytest.raises(LedgerError):
        publish(governed, run)
    with pytest.raises(LedgerError):
        env_ledger(governed.ledger.path)


# --- 3. replaying an approval ------------------------------------------------------------------

def test_an_approval_of_one_partition_does_not_publish_another(governed, monkeypatch):
    run = waiting_run(governed)
    decide_as(governed, run, "dpo", monkeypatch)
    other = evaluate(governed, "2024")
    with pytest.raises(AwaitingApproval):
        publish(governed, other)
    with pytest.raises(DecisionRefused, match="no evaluation"):  # nor can it be replayed onto 2024
        decide_as(governed, run, "ciso", monkeypatch, partition="2024")


def test_an_approval_does_not_carry_to_another_release_of_the_same_data(governed, monkeypatch):
    run = waiting_run(governed)
    decide_as(governed, run, "dpo", monkeypatch)

    def rename(raw):
        raw["release"] = "tiny_copy"
    governed.edit(rename)
    copy = evaluate(governed)
    with pytest.raises(AwaitingApproval):
        publish(governed, copy)


def test_an_approver_added_to_the_spec_after_the_evaluation_cannot_approve_it(governed, monkeypatch):
    run = waiting_run(governed)

    def add(raw):
        raw["approval"]["approvers"].append("auditor")
    governed.edit(add)
    with pytest.raises(DecisionRefused, match="the spec .* changed since evaluation"):
        decide_as(governed, run, "auditor", monkeypatch)


def test_a_rejection_after_an_approval_wins(governed, monkeypatch):
    two_approvals(governed)
    run = waiting_run(governed)
    decide_as(governed, run, "dpo", monkeypatch)
    decide_as(governed, run, "ciso", monkeypatch, decision="reject", reason="a free-text column remains")
    with pytest.raises(PublicationRefused, match="rejected by ciso"):
        publish(governed, run)
    with pytest.raises(DecisionRefused, match="was rejected"):
        decide_as(governed, run, "dpo", monkeypatch, desk="desk-2")


def test_two_approvals_at_once_both_count_once_and_the_chains_stay_whole(governed, monkeypatch):
    two_approvals(governed)
    run = waiting_run(governed)
    monkeypatch.setenv(governance.RUNNER_ENV, "approvers-desk")  # both threads run under this account
    spec, errors, done = governed.spec, [], []

    def approve(name: str) -> None:
        try:
            done.append(decide(spec, env_ledger(governed.ledger.path), partition=PARTITION,
                               evaluation=run.evaluation.id, approver=name, decision="approve", reason="ok"))
        except Exception as exc:  # noqa: BLE001 - the test reports what a thread raised
            errors.append(exc)

    threads = [threading.Thread(target=approve, args=(name,)) for name in ("dpo", "ciso")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    monkeypatch.setenv(governance.RUNNER_ENV, "pipeline")
    assert errors == [] and len(done) == 2
    assert sorted(d.approvals for d in done)[-1] == 2
    ledger = env_ledger(governed.ledger.path)  # opens only if the chain verifies against its anchor
    decisions = governance.Governance.read(ledger).decisions(governance.admission.subject_of(spec, run.evaluation))
    assert sorted(d.approver for d in decisions) == ["ciso", "dpo"]
    log = AuditLog(open_keystore())
    assert log.verify().unanchored == 0  # verify raises on a broken chain; nothing is left unanchored
    assert sorted(e["event"]["actor"] for e in log.entries() if e["event"]["action"] == "approve") == ["ciso", "dpo"]
    assert publish(governed, run).published.path.exists()
