"""The checks step and the publication step of a partition, without an orchestrator."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from anon_dagster.release import evaluation_memo, gate, pipeline, publication
from anon_dagster.release import publish_step as steps
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
