"""An approval binds one evaluation's subject: a change of data, spec or code voids it, and an
approval edited, deleted or forged in the ledger (or erased from the custody log) is caught."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest

from anon_dagster.pseudonymize import open_keystore
from anon_dagster.pseudonymize.audit import AuditTampered
from anon_dagster.release import governance, pipeline
from anon_dagster.release.governance import AwaitingApproval, DecisionRefused, binding, decide
from anon_dagster.release.ledger import LedgerError, LedgerIntegrityError
from anon_dagster.release.publication import PublicationRefused, publish_release
from tests.support.ledgers import env_ledger

PARTITION = "2023"


def evaluate(governed):
    return pipeline.run_gate(governed.spec, partition=PARTITION, keystore=open_keystore(), ledger=governed.ledger)


def publish(governed, run):
    return publish_release(governed.spec, run.evaluation, anonymized=run.anonymized.data,
                           pseudonymized=run.pseudonymized.data, ledger=governed.ledger)


def approved_run(governed, monkeypatch):
    """An evaluation that awaited approval, approved by dpo (from dpo's account)."""
    run = evaluate(governed)
    with pytest.raises(AwaitingApproval):
        publish(governed, run)
    monkeypatch.setenv(governance.RUNNER_ENV, "dpo-desk")
    decide(governed.spec, governed.ledger, partition=PARTITION, evaluation=run.evaluation.id, approver="dpo",
           decision="approve", reason="fine")
    monkeypatch.setenv(governance.RUNNER_ENV, "pipeline")
    return run


def still_awaits(governed, run) -> AwaitingApproval:
    with pytest.raises(AwaitingApproval) as caught:
        publish(governed, run)
    assert caught.value.approvals == 0
    return caught.value


def test_a_data_change_voids_the_approval(governed, monkeypatch):
    approved = approved_run(governed, monkeypatch)
    source = governed.spec.resolve(governed.spec.source.path)
    data = pd.read_csv(source)
    data.loc[0, "diagnosis"] = "C30" if data.loc[0, "diagnosis"] != "C30" else "A10"
    data.to_csv(source, index=False)
    changed = evaluate(governed)
    assert changed.evaluation.data_hash != approved.evaluation.data_hash
    assert changed.evaluation.id != approved.evaluation.id
    waiting = still_awaits(governed, changed)
    assert waiting.evaluation == changed.evaluation.id
    assert not governed.spec.resolve(governed.spec.publication.path, partition=PARTITION).exists()


def test_a_spec_change_voids_the_approval(governed, monkeypatch):
    approved = approved_run(governed, monkeypatch)
    governed.edit(lambda raw: raw.update(description="a wider audience"))
    changed = evaluate(governed)
    assert changed.evaluation.spec_hash != approved.evaluation.spec_hash
    still_awaits(governed, changed)
    # the old evaluation cannot be approved under the new spec
    monkeypatch.setenv(governance.RUNNER_ENV, "ciso-desk")
    with pytest.raises(DecisionRefused, match="the spec .* changed since evaluation"):
        decide(governed.spec, governed.ledger, partition=PARTITION, evaluation=approved.evaluation.id,
               approver="ciso", decision="approve")


def test_a_code_version_change_voids_the_approval(governed, monkeypatch):
    approved = approved_run(governed, monkeypatch)
    with monkeypatch.context() as upgraded:
        upgraded.setattr(binding, "code_version", lambda: "9.9.9+0123456789abcdef")
        waiting = still_awaits(governed, approved)  # the very same evaluation, under other code
        assert waiting.evaluation == approved.evaluation.id
        recorded = governance.Governance.read(governed.ledger).evaluations("tiny", PARTITION, approved.evaluation.id)
        assert [e["code_version"] for e in recorded][-1] == "9.9.9+0123456789abcdef" and len(recorded) == 2
    # back to the installed code: the evaluation recorded under the other code cannot be approved here
    monkeypatch.setenv(governance.RUNNER_ENV, "ciso-desk")
    with pytest.raises(DecisionRefused, match="the code changed since evaluation"):
        decide(governed.spec, governed.ledger, partition=PARTITION, evaluation=approved.evaluation.id,
               approver="ciso", decision="approve")
    monkeypatch.setenv(governance.RUNNER_ENV, "pipeline")
    # and dpo's approval, of the subject under the installed code, counts again
    assert publish(governed, approved).published.path.exists()


def test_an_approval_edited_in_the_ledger_file_is_detected(governed, monkeypatch):
    approved = approved_run(governed, monkeypatch)
    conn = sqlite3.connect(governed.ledger.path)
    with conn:
        changed = conn.execute("""UPDATE chain SET body = replace(body, '"approver":"dpo"', '"approver":"ciso"')
                                  WHERE body LIKE '%"event":"decision"%'""").rowcount
    conn.close()
    assert changed == 1
    with pytest.raises(LedgerIntegrityError, match="does not match its MAC"):
        publish(governed, approved)
    with pytest.raises(LedgerIntegrityError):
        env_ledger(governed.ledger.path)


def test_an_approval_deleted_from_the_ledger_file_is_detected(governed, monkeypatch):
    approved = approved_run(governed, monkeypatch)
    conn = sqlite3.connect(governed.ledger.path)
    with conn:
        conn.execute("DELETE FROM chain WHERE body LIKE '%\"event\":\"decision\"%'")
    conn.close()
    with pytest.raises(LedgerError):  # the last event gone: behind its anchor
        publish(governed, approved)


def test_an_approval_without_its_custody_entry_does_not_publish(governed, monkeypatch):
    run = evaluate(governed)
    with pytest.raises(AwaitingApproval):
        publish(governed, run)
    # written with the ledger's own key (a key holder), but never through approve: no custody entry
    subject = governance.admission.subject_of(governed.spec, run.evaluation)
    governed.ledger.append_content_event({"event": "decision", **subject.fields(), "decision": "approve",
                                          "approver": "dpo", "by": "someone", "reason": "",
                                          "at": "2030-01-01T00:00:00Z", "custody": {"seq": 0, "mac": "0" * 64}})
    with pytest.raises(PublicationRefused, match="no entry in the custody log"):
        publish(governed, run)


def test_an_erased_custody_log_stops_the_publication(governed, monkeypatch):
    approved = approved_run(governed, monkeypatch)
    log = governance.custody_log(open_keystore())
    assert [e["event"]["action"] for e in log.entries()] == ["approve"]
    log.path.unlink()
    with pytest.raises(AuditTampered, match="wiped"):
        publish(governed, approved)
