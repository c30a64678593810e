"""The checks step and the publication step of a partition, without an orchestrator."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from anon_dagster.release import evaluation_memo, gate, pipeline, publication
from anon_dagster.release import publish_step as steps
from anon_dagster.release.governance import RUNNER_ENV, decide
from anon_dagster.release.shown_outcomes import publication_shown
from anon_dagster.release.targets import target_of
from anon_dagster.spec import load_spec
from tests.support.ledgers import fixed_keystore, new_ledger
from tests.support.releases import write_release

pytestmark = pytest.mark.filterwarnings("ignore:.*scrypt n=.*is weak")


def stored(tmp: Path, partition: str = "2023", **release: object):
    """The release's spec, key store, ledger and the three tables its steps store for ``partition``."""
    spec = load_spec(write_release(tmp, **release))
    keystore = fixed_keystore(tmp / "keystate")
    ledger = new_ledger(tmp / "ledger" / "ledger.sqlite", tmp / "keystate")
    raw = pipeline.ingest(spec, partition).data
    pseudonymized = pipeline.pseudonymize(spec, raw, keystore, partition=partition).data
    anonymized = pipeline.anonymize(spec, pseudonymized)
    publication.write_record(anonymized.record, publication.reports_folder(spec, None, partition))
    tables = {"anonymized": gate.attach_record(anonymized.data, anonymized.record),
              "pseudonymized": pseudonymized, "raw": raw}
    return spec, keystore, ledger, tables


@pytest.fixture
def evaluated(monkeypatch) -> list[set | None]:
    """The ``only`` of every evaluation the steps compute."""
    calls: list[set | None] = []
    original = steps.evaluate_stored

    def counting(*args, **kwargs):
        calls.append(kwargs.get("only"))
        return original(*args, **kwargs)

    monkeypatch.setattr(steps, "evaluate_stored", counting)
    evaluation_memo.forget()
    return calls


def test_a_complete_check_is_taken_up_and_published(tmp_path, evaluated):
    spec, keystore, ledger, tables = stored(tmp_path)
    declared = [c.name for c in pipeline.declared_checks(spec)]
    checked = steps.check_step(spec, **tables, ledger=ledger, partition="2023", only=set(declared),
                               declared=declared)
    assert checked.evaluation.passed and checked.report is None and checked.problem is None
    outcome = steps.publication_step(spec, **tables, ledger=ledger, partition="2023", keystore=keystore)
    assert evaluated == [set(declared)]  # the publication took the checks' evaluation up
    assert not outcome.refused and outcome.refusals is None and outcome.evaluation is checked.evaluation
    written = pd.read_parquet(target_of(spec, "2023").path)
    assert outcome.published.published.rows == len(written) and outcome.report == outcome.published.published.report_path
    assert outcome.columns == [(c, str(written[c].dtype)) for c in written.columns]
    shown = publication_shown(outcome, "run-1")  # the event carries the table written, as written
    assert (shown.rows, shown.columns) == (len(written), outcome.columns)


def test_a_selection_of_checks_is_neither_kept_nor_taken_up(tmp_path, evaluated):
    spec, keystore, ledger, tables = stored(tmp_path)
    declared = [c.name for c in pipeline.declared_checks(spec)]
    checked = steps.check_step(spec, **tables, ledger=ledger, partition="2023", only={declared[0]},
                               declared=declared)
    assert [c.name for c in checked.evaluation.checks] == [declared[0]] and checked.report is None
    steps.publication_step(spec, **tables, ledger=ledger, partition="2023", keystore=keystore)
    assert evaluated == [{declared[0]}, None]  # evaluated again, every check


def test_a_refusal_writes_nothing_and_keeps_its_evidence(tmp_path, evaluated):
    spec, keystore, ledger, tables = stored(tmp_path, thresholds={"k": 2, "prosecutor_max": 0.01})
    outcome = steps.publication_step(spec, **tables, ledger=ledger, partition="2023", keystore=keystore)
    assert outcome.refused and outcome.published is None and outcome.columns is None
    assert publication_shown(outcome, "run-1").rows is None and publication_shown(outcome, "run-1").columns is None
    assert not target_of(spec, "2023").path.exists()
    refusal = outcome.refusal("run-1")
    failed = [c.name for c in outcome.evaluation.checks if not c.passed]
    assert refusal.failed_checks == failed and "prosecutor_risk_max" in failed and refusal.run_id == "run-1"
    assert [line.split(":", 1)[0] for line in outcome.reason_lines][:len(failed)] == failed
    assert len(outcome.reason_lines) == len(outcome.refusals) and all("\n" not in r for r in outcome.reason_lines)
    assert refusal.release == "tiny" and refusal.partition == "2023" and refusal.evaluation_id == outcome.evaluation.id
    assert outcome.report is not None and outcome.report.exists() and outcome.problem is None


def test_the_population_lock_held_too_long_is_one_line_naming_the_partition(tmp_path, monkeypatch):
    spec, keystore, ledger, tables = stored(tmp_path)

    def held(*_args, **_kwargs):
        raise TimeoutError("another publication of population 'tiny_people' held its lock for more than 1 s")

    monkeypatch.setattr(steps, "population_lock", held)
    with pytest.raises(TimeoutError, match=r"^tiny 2023: another publication of population 'tiny_people'"):
        steps.publication_step(spec, **tables, ledger=ledger, partition="2023", keystore=keystore)


def approval_required(spec_path: Path) -> None:
    """Add ``approval: {required: true, approvers: [dpo]}`` to the spec at ``spec_path``."""
    raw = yaml.safe_load(spec_path.read_text())
    raw["approval"] = {"required": True, "approvers": ["dpo"], "min_approvals": 1}
    spec_path.write_text(yaml.safe_dump(raw, sort_keys=False))


def governed(tmp: Path):
    """``stored`` for the tiny release with approval required."""
    approval_required(write_release(tmp))
    spec = load_spec(tmp / "specs" / "tiny.yaml")
    keystore = fixed_keystore(tmp / "keystate")
    ledger = new_ledger(tmp / "ledger" / "ledger.sqlite", tmp / "keystate")
    raw = pipeline.ingest(spec, "2023").data
    pseudonymized = pipeline.pseudonymize(spec, raw, keystore, partition="2023").data
    anonymized = pipeline.anonymize(spec, pseudonymized)
    tables = {"anonymized": gate.attach_record(anonymized.data, anonymized.record),
              "pseudonymized": pseudonymized, "raw": raw}
    return spec, keystore, ledger, tables


def test_a_passing_evaluation_awaiting_approval_is_its_own_outcome(tmp_path, evaluated, monkeypatch):
    monkeypatch.setenv(RUNNER_ENV, "pipeline")
    spec, keystore, ledger, tables = governed(tmp_path)
    outcome = steps.publication_step(spec, **tables, ledger=ledger, partition="2023", keystore=keystore,
                                     run_id="run-42")
    assert outcome.outcome == steps.AWAITING == "awaiting approval"
    assert not outcome.refused and outcome.published is None and outcome.refusals is None
    assert outcome.evaluation.passed and not target_of(spec, "2023").path.exists()  # nothing written
    waiting = outcome.awaiting
    assert waiting.command == (f"anon-dagster approve {spec.label} --partition 2023 --evaluation "
                               f"{outcome.evaluation.id} --as NAME --reason TEXT")
    assert (waiting.approvals, waiting.needed) == (0, 1) and waiting.command in waiting.message
    assert outcome.report is not None and outcome.report.exists()  # the report the approvers read
    events = [e for e in ledger.content_events() if e["event"] == "evaluation"]
    assert [(e["verdict"], e["evaluation"], e["run_id"], e["runner"], e["seq"]) for e in events] == \
        [("awaiting", outcome.evaluation.id, "run-42", "pipeline", waiting.entry)]


def test_the_next_publication_after_the_approval_publishes(tmp_path, evaluated, monkeypatch):
    monkeypatch.setenv(RUNNER_ENV, "pipeline")
    spec, keystore, ledger, tables = governed(tmp_path)
    first = steps.publication_step(spec, **tables, ledger=ledger, partition="2023", keystore=keystore)
    again = steps.publication_step(spec, **tables, ledger=ledger, partition="2023", keystore=keystore)
    assert again.outcome == steps.AWAITING and again.awaiting.entry == first.awaiting.entry  # recorded once
    assert "run_id" not in [e for e in ledger.content_events() if e["event"] == "evaluation"][0]
    monkeypatch.setenv(RUNNER_ENV, "dpo-desk")
    decide(spec, ledger, partition="2023", evaluation=first.evaluation.id, approver="dpo", decision="approve",
           reason="figures read", keystore=keystore)
    monkeypatch.setenv(RUNNER_ENV, "pipeline")
    done = steps.publication_step(spec, **tables, ledger=ledger, partition="2023", keystore=keystore)
    assert done.outcome == steps.PUBLISHED and done.awaiting is None
    assert done.evaluation.id == first.evaluation.id and target_of(spec, "2023").path.exists()
    approval = done.published.published.report_path.with_suffix(".json")
    assert '"approver": "dpo"' in approval.read_text()


def test_a_rejected_evaluation_is_a_refusal_not_awaiting(tmp_path, evaluated, monkeypatch):
    monkeypatch.setenv(RUNNER_ENV, "pipeline")
    spec, keystore, ledger, tables = governed(tmp_path)
    first = steps.publication_step(spec, **tables, ledger=ledger, partition="2023", keystore=keystore)
    monkeypatch.setenv(RUNNER_ENV, "dpo-desk")
    decide(spec, ledger, partition="2023", evaluation=first.evaluation.id, approver="dpo", decision="reject",
           reason="not this year", keystore=keystore)
    outcome = steps.publication_step(spec, **tables, ledger=ledger, partition="2023", keystore=keystore)
    assert outcome.outcome == steps.REFUSED and outcome.refused and outcome.awaiting is None
    assert "rejected by dpo" in outcome.reason_lines[0] and not target_of(spec, "2023").path.exists()


def test_an_engines_evaluation_is_remembered_under_the_engines_digests(tmp_path, evaluated):
    spec, keystore, ledger, tables = stored(tmp_path)
    declared = [c.name for c in pipeline.declared_checks(spec)]
    engines = steps.evaluate_stored(spec, tables["anonymized"], pseudonymized=tables["pseudonymized"],
                                    raw=tables["raw"], ledger=ledger, partition="2023")
    evaluated.clear()
    checked = steps.check_step(spec, **tables, ledger=ledger, partition="2023", only=set(declared),
                               declared=declared, digests=lambda: ("a", "b", "c"), evaluate=lambda: engines)
    assert checked.evaluation is engines and evaluated == []  # the pandas evaluation was not computed
    key = evaluation_memo.evaluation_key(spec, "2023", ("a", "b", "c"), ledger)
    assert evaluation_memo.recall(key) is engines
    pandas_key = evaluation_memo.evaluation_key(spec, "2023", evaluation_memo.table_digests(**tables), ledger)
    assert evaluation_memo.recall(pandas_key) is None


def test_evidence_that_could_not_be_kept_is_one_warning_line_of_a_refusal_only():
    line = "the evaluation's report could not be kept: disk full"
    assert steps.CheckStep(None, problem="disk full").warning == line
    assert steps.CheckStep(None).warning is None
    assert steps.PublicationStep(None, "2023", None, refusals=["k"], problem="disk full").warning == line
    assert steps.PublicationStep(None, "2023", None, published=object(), problem="disk full").warning is None
