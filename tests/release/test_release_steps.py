"""The core's release steps that the Dagster layer only calls: one answer for the CLI and Dagster.

* :func:`~anon_dagster.release.stored.evaluate_stored` judges a stored anonymized table with the
  record it carries exactly as ``anon-dagster check`` judges the partition;
* :func:`~anon_dagster.release.publication.keep_evaluation` keeps a refused evaluation in the
  ledger with its report, and no report for a passing one (its report is its publication's);
* :func:`~anon_dagster.release.publication.publish_release` publishes per ``publication.mode``
  and states the figures of what it wrote;
* :meth:`~anon_dagster.release.evaluation.CheckResult.evidence` chooses each check's evidence,
  never the values of a class; :meth:`TransformationRecord.summary` leaves Mondrian's boxes in the file.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from anon_dagster import storage
from anon_dagster.cli import main
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import gate, pipeline, publication
from anon_dagster.release.evaluation import EvidenceTable
from anon_dagster.release.stored import at_rest_policy, evaluate_stored, stored_record
from anon_dagster.spec import load_spec
from tests.support.ledgers import env_ledger
from tests.support.releases import write_release
from tests.support.specs import release_spec

RISK_CHECKS = {"k_anonymity", "journalist_risk_max"}


def population_release(tmp: Path) -> Path:
    """A Mondrian release whose journalist risk needs its record (to place the population), with a
    utility query and a composition block."""
    spec_path = write_release(tmp, name="steps", method="mondrian", thresholds={"k": 2, "journalist_max": 0.5})
    data = pd.read_csv(tmp / "data" / "steps.csv")
    rng = np.random.default_rng(1)
    others = pd.DataFrame({"age": rng.choice([30, 31, 42, 43], 320), "sex": rng.choice(["F", "M"], 320),
                           "region": rng.choice(["North", "South"], 320)})
    pd.concat([data[["age", "sex", "region"]], others]).to_csv(tmp / "data" / "people.csv", index=False)
    spec = yaml.safe_load(spec_path.read_text())
    spec["policy"]["population"] = {"path": "../data/people.csv"}
    spec["utility_queries"] = [{"name": "diagnosis_by_sex", "group_by": ["sex"], "target": "diagnosis",
                                "max_error_points": 100.0}]
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return spec_path


def stored(table: pd.DataFrame, tmp: Path, keystore) -> pd.DataFrame:
    """``table`` stored encrypted as the IO manager stores it, and read back."""
    tables = storage.TableStore(tmp / "store")
    key = keystore.derive_key(storage.DATA_AT_REST_PURPOSE)
    tables.write(("steps", "anonymized"), "2023", table, key)
    return tables.read(("steps", "anonymized"), "2023", lambda: key, encrypted_only=True)


def cli_check(capsys, spec: Path, ledger: Path) -> dict:
    capsys.readouterr()
    main(["check", str(spec), "--partition", "2023", "--json", "--ledger", str(ledger)])
    return json.loads(capsys.readouterr().out)


def test_the_stored_tables_evaluation_is_the_one_anon_dagster_check_prints(tmp_path, master_key, capsys):
    spec_path = population_release(tmp_path)
    spec = load_spec(spec_path)
    ledger = env_ledger(tmp_path / "ledger.sqlite", create=True)
    cli = cli_check(capsys, spec_path, ledger.path)
    keystore = open_keystore()
    run = pipeline.run_gate(spec, partition="2023", keystore=keystore, ledger=ledger)
    table = stored(gate.attach_record(run.anonymized.data, run.anonymized.record), tmp_path, keystore)
    assert stored_record(table).to_json() == run.anonymized.record.to_json()  # it travelled with the table

    def evaluation(anonymized: pd.DataFrame):
        return evaluate_stored(spec, anonymized, pseudonymized=run.pseudonymized.data, raw=run.ingested.data,
                               ledger=ledger, partition="2023")

    got = evaluation(table).to_json()
    assert [c["name"] for c in got["checks"]] == [c["name"] for c in cli["checks"]]
    assert {"journalist_risk_max", "utility_diagnosis_by_sex", "composition", "data_contract"} <= {
        c["name"] for c in cli["checks"]}
    for mine, printed in zip(got["checks"], cli["checks"], strict=True):
        assert mine["passed"] == printed["passed"], mine["name"]
        assert mine["measured"] == pytest.approx(printed["measured"]), mine["name"]
    assert got["verdict"] == cli["verdict"] == "pass"
    # the same as the record passed by hand: nothing else is read
    explicit = pipeline.evaluate(spec, table, record=run.anonymized.record, original=run.pseudonymized.data,
                                 raw=run.ingested.data, ledger=ledger, partition="2023")
    assert evaluation(table).id == explicit.id

    # a table without its record, or with one of another format: the risk checks fail saying why,
    # and the checks that do not need it are still judged
    bare = table.copy()
    bare.attrs = {}
    other = table.copy()
    other.attrs = {gate.RECORD_ATTR: {**run.anonymized.record.to_json(), "format": "someone-else/9"}}
    assert stored_record(bare) is None and stored_record(other) is None
    for anonymized in (bare, other):
        result = evaluation(anonymized)
        assert not result.passed
        for name in RISK_CHECKS:
            check = result.check(name)
            assert check.passed is False and "could not be measured" in check.summary, name
        assert result.check("data_contract").passed and result.check("composition").passed


def test_the_at_rest_policy_of_each_step(tmp_path):
    spec = load_spec(write_release(tmp_path))  # pseudonymizes a column: the key store is opened anyway
    assert pipeline.needs_keystore(spec)
    assert [at_rest_policy(spec, s) for s in ("raw", "pseudonymized", "anonymized", "published")] == [
        storage.ENCRYPTED, storage.ENCRYPTED, storage.ENCRYPTED, None]
    no_keys = release_spec({"name": {"role": "identifier"}, "age": {"role": "quasi"}, "dx": {"role": "sensitive"}},
                           anonymization={"method": "none", "k": 1}, thresholds={"k": 1})
    assert not pipeline.needs_keystore(no_keys)
    assert [at_rest_policy(no_keys, s) for s in ("raw", "pseudonymized", "anonymized", "published")] == [
        storage.ENCRYPTED_IF_AVAILABLE, storage.ENCRYPTED_IF_AVAILABLE, storage.ENCRYPTED_IF_AVAILABLE, None]


def test_keep_evaluation_records_a_refusal_with_its_report_and_keeps_none_for_a_passing_one(tmp_path, master_key):
    ledger = env_ledger(tmp_path / "ledger.sqlite", create=True)
    keystore = open_keystore()
    refused_spec = load_spec(write_release(tmp_path, name="tiny", method="none", k=5, thresholds={"k": 5}))
    refused = pipeline.run_gate(refused_spec, partition="2023", keystore=keystore, ledger=ledger).evaluation
    assert not refused.passed
    folder = publication.reports_folder(refused_spec, None, "2023")
    assert folder == tmp_path / "reports" / "tiny" / "2023"
    assert publication.kept_report(refused_spec, None, "2023") is None

    kept = publication.keep_evaluation(refused_spec, refused, ledger, folder)
    assert kept == publication.Kept(folder / "risk_report.md", refused=True)
    assert publication.kept_report(refused_spec, None, "2023") == kept.report
    assert publication.kept_report(refused_spec, None, "2024") is None
    entry = ledger.latest("tiny", "2023")
    assert entry.status == "failed"
    report = json.loads((folder / "risk_report.json").read_text())
    assert report["verdict"]["publishable"] is False
    assert {c["name"] for c in report["verdict"]["checks"] if not c["passed"]} == {
        c.name for c in refused.checks if not c.passed}
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for fmt in ("md", "html", "json"):
        assert stat.S_IMODE((folder / f"risk_report.{fmt}").stat().st_mode) == 0o600

    passing_spec = load_spec(write_release(tmp_path, name="fine", thresholds={"k": 2}))
    passing = pipeline.run_gate(passing_spec, partition="2023", keystore=keystore, ledger=ledger).evaluation
    assert passing.passed
    other = tmp_path / "elsewhere" / "{release}"
    kept = publication.keep_evaluation(passing_spec, passing, ledger,
                                       publication.reports_folder(passing_spec, str(other), "2023"))
    # a passing evaluation's report is its publication's: none in the report folder
    assert kept == publication.Kept(None, refused=False)
    assert not list((tmp_path / "elsewhere").rglob("risk_report.*"))
    assert ledger.latest("fine", "2023") is None  # the publication step records what it publishes

    # evidence that cannot be kept is said, never raised: the verdicts stand
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    kept = publication.keep_evaluation(refused_spec, refused, ledger, blocked / "2023")
    assert kept.report is None and kept.problem and "\n" not in kept.problem


def test_publish_release_publishes_the_rows_and_states_what_it_wrote(tmp_path, master_key):
    ledger = env_ledger(tmp_path / "ledger.sqlite", create=True)
    spec = load_spec(write_release(tmp_path, thresholds={"k": 2}))
    run = pipeline.run_gate(spec, partition="2023", keystore=open_keystore(), ledger=ledger)
    done = publication.publish_release(spec, run.evaluation, anonymized=run.anonymized.data,
                                       pseudonymized=run.pseudonymized.data, ledger=ledger)
    figures = done.figures()
    assert list(figures) == ["path", "rows", "columns", "class_size_histogram", "data_hash", "ledger_entry",
                             "ledger_action", "report", "evaluation"]
    published = pd.read_parquet(figures["path"])
    assert figures["path"] == tmp_path / "published" / "tiny" / "2023.parquet"
    assert figures["rows"] == len(published) and figures["columns"] == list(published.columns)
    current = ledger.current("tiny", "2023")
    assert (figures["ledger_entry"], figures["data_hash"]) == (current.id, current.data_hash)
    assert figures["report"] == tmp_path / "published" / "tiny" / "2023.report.md" and figures["report"].exists()
    assert figures["evaluation"] == run.evaluation.id
    # the histogram is the published file's, regrouped here
    histogram = figures["class_size_histogram"]
    assert isinstance(histogram, EvidenceTable)
    sizes = published.groupby(list(spec.quasi_identifiers), dropna=False).size()
    assert sum(r["rows"] for r in histogram.rows) == len(published)
    assert sum(r["classes"] for r in histogram.rows) == len(sizes)
    # the same evaluation published again changes nothing
    again = publication.publish_release(spec, run.evaluation, anonymized=run.anonymized.data,
                                        pseudonymized=run.pseudonymized.data, ledger=ledger).figures()
    assert (again["ledger_action"], again["ledger_entry"]) == ("unchanged", figures["ledger_entry"])


def test_publish_release_publishes_dp_aggregates_and_spends_their_epsilon(tmp_path, master_key):
    ledger = env_ledger(tmp_path / "ledger.sqlite", create=True)
    spec_path = write_release(tmp_path, name="dp", method="none", k=1, thresholds={"k": 1})
    raw = yaml.safe_load(spec_path.read_text())
    raw["publication"] = {
        "path": "../published/{release}/{partition}.csv", "mode": "aggregates", "epsilon": 1.0, "total_epsilon": 1.5,
        "aggregates": {"group_by": ["region"], "count": True, "max_contributions": 1, "person": "pid",
                       "domain": {"region": ["North", "South"]}},
    }
    spec_path.write_text(yaml.safe_dump(raw, sort_keys=False))
    spec = load_spec(spec_path)
    keystore = open_keystore()
    run = pipeline.run_gate(spec, partition="2023", keystore=keystore, ledger=ledger)
    assert [c.name for c in run.evaluation.checks] == ["epsilon_budget"] and run.evaluation.passed
    done = publication.publish_release(spec, run.evaluation, anonymized=run.anonymized.data,
                                       pseudonymized=run.pseudonymized.data, ledger=ledger)
    figures = done.figures()
    assert list(figures) == ["path", "cells", "epsilon", "expected_error", "data_hash", "ledger_entry",
                             "ledger_action", "report", "evaluation"]
    table = pd.read_csv(figures["path"])
    assert figures["cells"] == len(table) == 2 and sorted(table["region"]) == ["North", "South"]
    assert figures["epsilon"] == 1.0
    assert isinstance(figures["expected_error"], dict) and figures["expected_error"]
    # the ε was spent with the entry: the next year would bring the budget to 2.0 of 1.5
    later = pipeline.run_gate(spec, partition="2024", keystore=keystore, ledger=ledger).evaluation
    assert later.check("epsilon_budget").passed is False
    with pytest.raises(publication.PublicationRefused):
        publication.publish_release(spec, later, anonymized=run.anonymized.data,
                                    pseudonymized=run.pseudonymized.data, ledger=ledger)


def test_each_check_shows_its_own_evidence_and_never_the_values_of_a_class(tmp_path, master_key):
    ledger = env_ledger(tmp_path / "ledger.sqlite", create=True)
    spec = load_spec(population_release(tmp_path))
    run = pipeline.run_gate(spec, partition="2023", keystore=open_keystore(), ledger=ledger)
    evaluation = run.evaluation
    evidence = {c.name: c.evidence(evaluation) for c in evaluation.checks}
    for name in RISK_CHECKS:
        assert set(evidence[name]) == {"class_size_histogram", "small_classes", "qi_contributions"}, name
    k = evidence["k_anonymity"]
    assert k["class_size_histogram"] == evaluation.class_size_table()
    assert sum(r["rows"] for r in k["class_size_histogram"].rows) == evaluation.rows
    assert [c for c, _ in k["small_classes"].columns] == ["size", "classes", "rows"]
    assert [c for c, _ in k["qi_contributions"].columns] == ["qi", "rows_below_k_without", "contribution"]
    assert [r["qi"] for r in k["qi_contributions"].rows] == [
        c["qi"] for c in evaluation.small_classes["contributions"]]
    assert set(evidence["utility_diagnosis_by_sex"]) == {"per_group"}
    per_group = evidence["utility_diagnosis_by_sex"]["per_group"]
    assert per_group == EvidenceTable.from_frame(evaluation.check("utility_diagnosis_by_sex").details["table"])
    assert set(evidence["composition"]) == {"composition"}
    assert evidence["composition"]["composition"] == evaluation.check("composition").details["composition"]
    assert evidence["data_contract"] == {"failed_expectations": []}
    # sizes and QI names only: no region, sex or age value of any class
    shown = json.dumps([[t.rows for t in e.values() if isinstance(t, EvidenceTable)]
                        for name, e in evidence.items() if name != "utility_diagnosis_by_sex"], default=str)
    assert not any(value in shown for value in ("North", "South", '"F"', '"M"', "[30", "[40"))
    assert evaluation.check("k_anonymity").threshold_text == ">= 2"
    assert evaluation.check("journalist_risk_max").threshold_text == "<= 0.5"


def test_evidence_tables_keep_numbers_as_numbers_and_the_rest_as_text():
    frame = pd.DataFrame({"group": ["a", None], "share": [0.5, np.nan], "n": [3, 4]})
    table = EvidenceTable.from_frame(frame)
    assert table.columns == [("group", "string"), ("share", "float"), ("n", "int")]
    assert table.rows == [{"group": "a", "share": 0.5, "n": 3}, {"group": "", "share": None, "n": 4}]
    assert table.note == ""
    cut = EvidenceTable.from_frame(pd.DataFrame({"x": range(80)}))
    assert len(cut.rows) == 20 and cut.note == "20 of 80 rows shown"


def test_the_records_summary_leaves_mondrians_boxes_in_the_file(tmp_path, master_key):
    spec = load_spec(population_release(tmp_path))
    record = pipeline.run_gate(spec, partition="2023", keystore=open_keystore(), ledger=None).anonymized.record
    assert record.mondrian is not None
    summary = record.summary(gate.RECORD_FILE)
    full = json.loads(json.dumps(record.to_json()))
    assert summary["mondrian"]["boxes"] == f"{record.mondrian.boxes.classes} class boxes, in transformations.json"
    assert {**summary, "mondrian": full["mondrian"]} == full
    json.dumps(summary)  # plain JSON
    plain = load_spec(write_release(tmp_path, name="global"))
    other = pipeline.run_gate(plain, partition="2023", keystore=open_keystore(), ledger=None).anonymized.record
    assert other.mondrian is None and other.summary(gate.RECORD_FILE) == json.loads(json.dumps(other.to_json()))
