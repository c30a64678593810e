"""Publishing a release that requires approval: awaiting, approved, rejected, refused decisions.

The release's evaluations run as ``pipeline`` (``ANON_DAGSTER_RUNNER``); approvers decide from
processes of their own (the variable changed in between, as another account would be).
"""

from __future__ import annotations

import json

import pytest

from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import governance, pipeline, publication
from anon_dagster.release.governance import AwaitingApproval, DecisionRefused, decide
from anon_dagster.release.publication import PublicationRefused, publish_release

PARTITION = "2023"


def evaluate(governed, partition: str = PARTITION):
    return pipeline.run_gate(governed.spec, partition=partition, keystore=open_keystore(), ledger=governed.ledger)


def publish(governed, run):
    return publish_release(governed.spec, run.evaluation, anonymized=run.anonymized.data,
                           pseudonymized=run.pseudonymized.data, ledger=governed.ledger)


def awaiting(governed, run) -> AwaitingApproval:
    with pytest.raises(AwaitingApproval) as caught:
        publish(governed, run)
    return caught.value


def approve(governed, evaluation: str, who: str, monkeypatch, reason: str = "checked the report", **kw):
    monkeypatch.setenv(governance.RUNNER_ENV, f"desk-of-{who}")  # the approver's own account
    try:
        return decide(governed.spec, governed.ledger, partition=PARTITION, evaluation=evaluation, approver=who,
                      decision=kw.pop("decision", "approve"), reason=reason, **kw)
    finally:
        monkeypatch.setenv(governance.RUNNER_ENV, "pipeline")


def target(governed):
    return publication.publication_target(governed.spec, PARTITION)


def test_a_passing_evaluation_awaits_approval_and_publishes_nothing(governed):
    run = evaluate(governed)
    assert run.evaluation.passed
    waiting = awaiting(governed, run)
    assert waiting.outcome == "awaiting approval"
    assert not isinstance(waiting, PublicationRefused)  # neither refused nor published
    assert not target(governed).exists() and governed.ledger.current("tiny", PARTITION) is None
    assert waiting.evaluation == run.evaluation.id and (waiting.approvals, waiting.needed) == (0, 1)
    assert f"--evaluation {run.evaluation.id}" in waiting.command and "--partition 2023" in waiting.command
    assert waiting.report_path.exists()  # the report the approvers read
    recorded = governance.Governance.read(governed.ledger).evaluations("tiny", PARTITION, run.evaluation.id)
    assert len(recorded) == 1
    entry = recorded[0]
    assert entry["verdict"] == "awaiting" and entry["runner"] == "pipeline"
    assert (entry["spec_hash"], entry["data_hash"]) == (run.evaluation.spec_hash, run.evaluation.data_hash)
    assert entry["code_version"] == governance.code_version()
    assert [c["name"] for c in entry["checks"]] == [c.name for c in run.evaluation.checks]
    assert entry["checks"][0]["measured"] == run.evaluation.checks[0].to_json()["measured"]
    assert entry["rows"] == run.evaluation.rows and entry["report_path"] == str(waiting.report_path)
    # asked again, the same evaluation is recorded once
    awaiting(governed, run)
    assert len(governance.Governance.read(governed.ledger).evaluations("tiny", PARTITION, run.evaluation.id)) == 1


def test_once_approved_the_same_evaluation_publishes_and_its_report_says_who_when_why(governed, monkeypatch):
    run = evaluate(governed)
    waiting = awaiting(governed, run)
    done = approve(governed, waiting.evaluation, "dpo", monkeypatch, reason="risk below the policy")
    assert (done.approvals, done.needed, done.rejected) == (1, 1, False)
    published = publish(governed, run)
    assert published.published.path == target(governed) and target(governed).exists()
    report = json.loads(published.published.report_path.with_suffix(".json").read_text())
    approval = report["verdict"]["approval"]
    assert [a["approver"] for a in approval["approvals"]] == ["dpo"]
    assert approval["approvals"][0]["reason"] == "risk below the policy"
    assert approval["approvals"][0]["at"] == done.decision.at and approval["runner"] == "pipeline"
    markdown = published.published.report_path.read_text()
    assert "**Approval**" in markdown and "risk below the policy" in markdown
    # the publication's report is the one: the awaiting report is gone from the report folder
    assert not waiting.report_path.exists()


def test_two_approvals_required_wait_for_the_second_approver(governed, monkeypatch):
    governed.edit(lambda raw: raw["approval"].update(min_approvals=2))
    run = evaluate(governed)
    waiting = awaiting(governed, run)
    assert approve(governed, waiting.evaluation, "dpo", monkeypatch).approvals == 1
    assert awaiting(governed, run).approvals == 1  # still waiting: nothing published
    assert not target(governed).exists()
    with pytest.raises(DecisionRefused, match="already decided"):
        approve(governed, waiting.evaluation, "dpo", monkeypatch)
    assert approve(governed, waiting.evaluation, "ciso", monkeypatch).approvals == 2
    assert publish(governed, run).published.path.exists()


def test_a_rejection_blocks_the_publication_and_later_approvals(governed, monkeypatch):
    run = evaluate(governed)
    waiting = awaiting(governed, run)
    done = approve(governed, waiting.evaluation, "ciso", monkeypatch, decision="reject", reason="purpose unclear")
    assert done.rejected and "rejected by ciso" in done.describe()
    with pytest.raises(PublicationRefused, match="rejected by ciso.*purpose unclear"):
        publish(governed, run)
    with pytest.raises(DecisionRefused, match="was rejected by ciso"):
        approve(governed, waiting.evaluation, "dpo", monkeypatch)
    assert not target(governed).exists()


def test_a_rejection_needs_a_reason(governed, monkeypatch):
    waiting = awaiting(governed, evaluate(governed))
    with pytest.raises(DecisionRefused, match="needs a reason"):
        approve(governed, waiting.evaluation, "ciso", monkeypatch, decision="reject", reason=" ")


def test_an_approver_not_listed_is_refused(governed, monkeypatch):
    waiting = awaiting(governed, evaluate(governed))
    with pytest.raises(DecisionRefused, match=r"'mallory' is not an approver of release 'tiny' \(approval.approvers: dpo, ciso\)"):
        approve(governed, waiting.evaluation, "mallory", monkeypatch)
    assert governance.Governance.read(governed.ledger).latest_decision_seq() == 0  # nothing recorded


def test_the_runner_may_not_approve_its_own_evaluation(governed, monkeypatch):
    governed.edit(lambda raw: raw["approval"].update(approvers=["dpo", "pipeline"]))
    waiting = awaiting(governed, evaluate(governed))
    # by its own name
    with pytest.raises(DecisionRefused, match="pipeline ran evaluation .*distinct_from_runner"):
        approve(governed, waiting.evaluation, "pipeline", monkeypatch)
    # or from the runner's account under another approver's name
    with pytest.raises(DecisionRefused, match=r"this process \(it runs as pipeline\) ran evaluation"):
        decide(governed.spec, governed.ledger, partition=PARTITION, evaluation=waiting.evaluation, approver="dpo",
               decision="approve")
    assert governance.Governance.read(governed.ledger).latest_decision_seq() == 0


def test_without_distinct_from_runner_the_runner_may_approve(governed, monkeypatch):
    governed.edit(lambda raw: raw["approval"].update(approvers=["dpo", "pipeline"], distinct_from_runner=False))
    run = evaluate(governed)
    waiting = awaiting(governed, run)
    assert decide(governed.spec, governed.ledger, partition=PARTITION, evaluation=waiting.evaluation,
                  approver="pipeline", decision="approve").approvals == 1
    assert publish(governed, run).published.path.exists()


def test_an_unknown_evaluation_is_refused(governed, monkeypatch):
    run = evaluate(governed)  # checked, never submitted for publication: the ledger does not know it
    with pytest.raises(DecisionRefused, match=f"no evaluation '{run.evaluation.id}' awaits approval"):
        approve(governed, run.evaluation.id, "dpo", monkeypatch)
    with pytest.raises(DecisionRefused, match="no evaluation '0000000000000000'"):
        approve(governed, "0000000000000000", "dpo", monkeypatch)


def test_a_refused_evaluation_cannot_be_approved(governed, monkeypatch):
    def unreachable(raw):  # k = 30 of 40 rows, with no room to suppress: the anonymization cannot reach it
        raw["policy"]["thresholds"].update(k=30)
        raw["anonymization"].update(k=30, max_suppression=0.0)

    governed.edit(unreachable)
    run = evaluate(governed)
    assert not run.evaluation.passed
    with pytest.raises(PublicationRefused, match="k_anonymity"):
        publish(governed, run)
    with pytest.raises(DecisionRefused, match=f"evaluation {run.evaluation.id} was refused by its checks"):
        approve(governed, run.evaluation.id, "dpo", monkeypatch)


def test_a_spec_without_required_approval_publishes_as_before(governed, monkeypatch):
    governed.edit(lambda raw: raw.pop("approval"))
    run = evaluate(governed)
    done = publish(governed, run)
    report = json.loads(done.published.report_path.with_suffix(".json").read_text())
    assert "approval" not in report["verdict"]
    with pytest.raises(DecisionRefused, match="requires no approval"):
        approve(governed, run.evaluation.id, "dpo", monkeypatch)
