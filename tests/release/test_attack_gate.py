"""The attacks as blocking checks of the release gate (``policy.attacks``).

A generated register of 4,000 people (age, a 5-digit postcode and sex as quasi-identifiers, a
skewed diagnosis as the secret, a pseudonymized person identifier): published raw (method
``none``) nearly everybody is unique, so singling out and inference succeed against the people
of the release far more than against the control persons withheld from it; global recoding at
k = 10 leaves classes of 20 and more, where the attacks do no better against the people of the
release than against the others. Through ``anon-dagster check --json``, ``pipeline.run_gate``,
the stored evaluation, the risk report and a Dagster run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from dagster import DagsterInstance

from anon_dagster.anonymize.record import table_hash
from anon_dagster.cli import main
from anon_dagster.dagster import load_release_definitions
from anon_dagster.dagster.runner import materialize_release
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import attacks as gate_attacks
from anon_dagster.release import gate, pipeline, publication
from anon_dagster.release.report import build_report, render
from anon_dagster.release.stored import evaluate_stored
from anon_dagster.spec import load_spec
from tests.support.attack_register import (
    ATTACK_CHECKS,
    ROWS,
    register,
    sampled_release,
    write_release,
)
from tests.support.ledgers import env_ledger


def gate_run(path: Path) -> pipeline.GateRun:
    return pipeline.run_gate(load_spec(path), keystore=open_keystore())


def check_json(capsys, path: Path) -> tuple[int, dict]:
    code = main(["check", str(path), "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture(autouse=True)
def fresh_cache():
    gate_attacks.clear_cache()
    yield
    gate_attacks.clear_cache()


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """The raw and the k = 10 releases of the register, each through the gate once."""
    folder = tmp_path_factory.mktemp("attack_gate")
    with pytest.MonkeyPatch.context() as mp:
        from tests.support.keys import MASTER_KEY

        mp.setenv("ANON_DAGSTER_MASTER_KEY", MASTER_KEY)
        mp.setenv("ANON_DAGSTER_KEYSTORE_STATE", str(folder / "keystate"))
        raw = write_release(folder, name="register_raw", method="none", k=1)
        k10 = write_release(folder, name="register_k10", method="global", k=10)
        yield {"folder": folder, "raw": raw, "k10": k10, "raw_run": gate_run(raw), "k10_run": gate_run(k10)}


# ----- the checks ------------------------------------------------------------------------------


def test_a_raw_release_fails_the_attack_checks_through_check_json(tmp_path, capsys, master_key):
    spec = write_release(tmp_path, name="register_raw", method="none", k=1)
    code, out = check_json(capsys, spec)
    assert code == 1 and out["verdict"] == "fail"
    checks = {c["name"]: c for c in out["checks"]}
    assert [c["name"] for c in out["checks"]] == [*ATTACK_CHECKS, "data_contract"]
    for name in ("singling_out_risk", "inference_risk"):
        assert checks[name]["passed"] is False and checks[name]["severity"] == "error"
        assert checks[name]["measured"] > 0.5 > checks[name]["threshold"]
    assert checks["singling_out_risk"]["spec_key"] == "policy.attacks.singling_out"
    assert checks["inference_risk"]["threshold"] == 0.1


def test_a_raw_release_fails_the_attack_checks_through_run_gate(releases):
    run = releases["raw_run"]
    evaluation = run.evaluation
    assert not evaluation.passed
    assert {c.name for c in evaluation.checks if c.blocks} == {"singling_out_risk", "inference_risk"}
    singling = evaluation.check("singling_out_risk")
    assert "violates the threshold <= 0.05" in singling.summary
    table = singling.details["table"]  # the figures the Dagster check shows as its evidence
    assert list(table["attack"]) == ["singling_out_univariate", "singling_out_multivariate"]
    assert table["residual"].max() == pytest.approx(singling.measured)
    inference = evaluation.check("inference_risk").details["table"]
    assert list(inference["secret"]) == ["diagnosis"] and inference["main_targets"].iloc[0] == 2000
    assert evaluation.check("linkability_risk").passed  # half a record links few people here
    figures = evaluation.measures["attacks"]
    assert [r["attack"] for r in figures["results"]] == [
        "singling_out_univariate", "singling_out_multivariate", "linkability", "inference"]


def test_the_control_persons_are_withheld_before_anonymization_and_never_published(releases):
    run = releases["raw_run"]
    record = run.anonymized.record
    control = record.attack_control
    assert (control.source, control.rows_before, control.rows_withheld, control.persons_withheld) == (
        "withheld", ROWS, 1000, 1000)  # 10 %, at least 1,000 rows
    assert record.rows_in == ROWS - 1000 == len(run.anonymized.data)  # method none: nothing suppressed
    released = set(gate.publishable_view(run.anonymized.data)["pid"])
    pseudonyms = set(run.pseudonymized.data["pid"])
    assert len(pseudonyms - released) == 1000
    # the record says how many, never who; the published view has no trace of the slice
    assert not any(p in json.dumps(record.to_json()) for p in pseudonyms)
    assert gate.SOURCE_ROW_COLUMN in run.anonymized.data.columns
    assert gate.SOURCE_ROW_COLUMN not in gate.publishable_view(run.anonymized.data).columns
    # the record's output hash is the published table's (the column is the pipeline's, not the anonymization's)
    assert record.output_hash == table_hash(gate.publishable_view(run.anonymized.data))


def test_a_global_k_10_release_passes_the_attack_checks(releases, capsys, master_key):
    evaluation = releases["k10_run"].evaluation
    assert evaluation.passed, evaluation.render_text()
    for name in ATTACK_CHECKS:
        check = evaluation.check(name)
        assert check.passed and check.measured <= check.threshold, check.summary
        assert (check.details["table"]["high"] <= check.threshold + 0.10).all()
    code, out = check_json(capsys, releases["k10"])
    assert code == 0 and out["verdict"] == "pass"
    assert {c["name"]: c["measured"] for c in out["checks"] if c["name"] in ATTACK_CHECKS} == {
        c.name: c.measured for c in evaluation.checks if c.name in ATTACK_CHECKS}


def test_a_tiny_control_set_fails_as_not_enough_evidence(tmp_path, master_key):
    spec = write_release(tmp_path, name="register_tiny", control={"fraction": 0.005, "min_rows": 0})
    run = gate_run(spec)
    assert run.anonymized.record.attack_control.rows_withheld == 20
    check = run.evaluation.check("inference_risk")
    assert not check.passed and check.blocks
    assert check.measured <= check.threshold  # the point estimate alone would pass
    assert "not enough evidence" in check.summary and "20 control targets" in check.summary
    assert check.details["table"]["high"].max() > check.threshold + 0.10


def test_a_declared_population_gives_the_control_records_and_nothing_is_withheld(tmp_path, master_key):
    run = gate_run(sampled_release(tmp_path))
    control = run.anonymized.record.attack_control
    assert (control.source, control.rows_withheld, control.persons_withheld, control.control_rows) == (
        "population", 0, 0, ROWS)
    assert run.anonymized.record.rows_in == ROWS  # every record of the sample goes on to the release
    assert [c.name for c in run.evaluation.checks if c.name in ATTACK_CHECKS] == ATTACK_CHECKS
    assert all(c.summary and not c.summary.startswith("could not") for c in run.evaluation.checks)
    targets = {r["attack"]: r["targets"] for r in run.evaluation.measures["attacks"]["results"]}
    assert targets["inference"] == {"main": 2000, "control": 2000}


def test_a_warn_severity_reports_without_blocking(tmp_path, master_key):
    spec = write_release(tmp_path, name="register_warned", method="none", k=1, severity="warn")
    evaluation = gate_run(spec).evaluation
    assert evaluation.passed
    failed = [c for c in evaluation.checks if not c.passed]
    assert {c.name for c in failed} == {"singling_out_risk", "inference_risk"}
    assert all(c.severity == "warn" for c in failed)


# ----- one run of the attacks per evaluation ---------------------------------------------------


def _stored(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` written as parquet and read back, as the intermediates are stored."""
    from io import BytesIO

    buffer = BytesIO()
    table.to_parquet(buffer, index=False)
    buffer.seek(0)
    return pd.read_parquet(buffer)


def test_the_re_verification_judges_the_same_figures_from_the_cache(releases, monkeypatch):
    run = releases["k10_run"]
    spec = load_spec(releases["k10"])
    calls = []
    real = gate_attacks.run_attacks
    monkeypatch.setattr(gate_attacks, "run_attacks", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    anonymized = gate.attach_record(_stored(run.anonymized.data), run.anonymized.record)
    pseudonymized, raw = _stored(run.pseudonymized.data), run.ingested.data
    checks = evaluate_stored(spec, anonymized, pseudonymized=pseudonymized, raw=raw, ledger=None, partition=None)
    again = evaluate_stored(spec, anonymized, pseudonymized=pseudonymized, raw=raw, ledger=None, partition=None)
    assert len(calls) == 1  # the publication step's re-verification ran no attack
    assert again.id == checks.id and again.measures["attacks"] == checks.measures["attacks"]
    # the stored tables give the figures the gate gave in memory: the control records re-derived
    assert checks.measures["attacks"] == run.evaluation.measures["attacks"]
    assert [c.to_json() for c in checks.checks] == [c.to_json() for c in run.evaluation.checks]
    gate_attacks.clear_cache()  # and computed again, the figures are the same: seeded, keyed
    fresh = evaluate_stored(spec, anonymized, pseudonymized=pseudonymized, raw=raw, ledger=None, partition=None)
    assert len(calls) == 2 and fresh.measures["attacks"] == checks.measures["attacks"]


def test_another_partition_table_is_refused_not_attacked(releases):
    run = releases["k10_run"]
    spec = load_spec(releases["k10"])
    other = run.pseudonymized.data.iloc[::-1].reset_index(drop=True)  # the same rows, another table
    evaluation = pipeline.evaluate(spec, run.anonymized.data, record=run.anonymized.record, original=other,
                                   raw=run.ingested.data, ledger=None, partition=None)
    for name in ATTACK_CHECKS:
        check = evaluation.check(name)
        assert not check.passed and check.summary.startswith("could not be measured: DataError")
    unmarked = gate.publishable_view(run.anonymized.data)
    evaluation = pipeline.evaluate(spec, unmarked, record=run.anonymized.record, original=run.pseudonymized.data,
                                   raw=run.ingested.data, ledger=None, partition=None)
    assert "anonymized without setting the attacks" in evaluation.check("singling_out_risk").summary
    evaluation = pipeline.evaluate(spec, run.anonymized.data.iloc[1:], record=run.anonymized.record,
                                   original=run.pseudonymized.data, raw=run.ingested.data, ledger=None, partition=None)
    assert "output hash differs" in evaluation.check("singling_out_risk").summary


def test_the_attack_command_gives_the_gates_figures(releases, capsys, master_key):
    code = main(["attack", str(releases["k10"]), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["released_rows"] == len(releases["k10_run"].anonymized.data)
    assert out["control"]["source"] == "withheld" and out["control"]["rows"] == 1000
    gate_figures = {(r["attack"], r["secret"]): r for r in releases["k10_run"].evaluation.measures["attacks"]["results"]}
    for r in out["attacks"]:
        assert r == gate_figures[(r["attack"], r["secret"])]


# ----- the report ------------------------------------------------------------------------------


def test_the_reports_attacks_section_has_the_figures_and_no_value_of_any_person(releases):
    run = releases["raw_run"]
    spec = load_spec(releases["raw"])
    report = build_report(publication.evaluation_report_inputs(spec, run.evaluation))
    section = report["measures"]["attacks"]
    assert section["control"]["rows_withheld"] == 1000 and "costs that share" in section["cost"]
    assert [(r["attack"], r["secret"]) for r in section["results"]] == [
        ("singling_out_univariate", None), ("singling_out_multivariate", None), ("linkability", None),
        ("inference", "diagnosis")]
    by_name = {r["attack"]: r for r in section["results"]}
    figures = {r["attack"]: r for r in run.evaluation.measures["attacks"]["results"]}
    for name, row in by_name.items():
        assert row["main"] == pytest.approx(figures[name]["main"]["rate"])
        assert row["control"] == pytest.approx(figures[name]["control"]["rate"])
        assert row["baseline"] == pytest.approx(figures[name]["baseline"]["rate"])
        assert (row["residual"], row["low"], row["high"]) == pytest.approx(
            (figures[name]["residual"]["risk"], figures[name]["residual"]["low"], figures[name]["residual"]["high"]))
    assert {c["name"]: c["passed"] for c in section["checks"]} == {
        "singling_out_risk": False, "linkability_risk": True, "inference_risk": False}
    markdown, html = render(report, "md"), render(report, "html")
    assert "**Attacks**" in markdown and "<h3>Attacks</h3>" in html
    attacks_md = markdown.split("**Attacks**", 1)[1].split("## 4.", 1)[0]
    assert "singling out (every column together)" in attacks_md
    assert f"{by_name['inference']['residual']:.4g}" in attacks_md
    # no quasi-identifier value, pseudonym or identifier of any person, in the section or the JSON
    data = register()
    pseudonyms = set(run.pseudonymized.data["pid"])
    values = set(data["zip"]) | set(data["pid"]) | pseudonyms
    shown = attacks_md + html.split("<h3>Attacks</h3>", 1)[1].split("<h2>4.", 1)[0] + json.dumps(section)
    tokens = set(re.findall(r"[A-Za-z0-9_:+/=-]+", shown))  # whole words: 0.010034 is no postcode 10034
    assert not values & tokens
    assert not [v for v in pseudonyms if v in render(report, "json")]


# ----- Dagster ---------------------------------------------------------------------------------


def test_a_dagster_run_shows_the_three_checks_and_refuses_the_publication(tmp_path, monkeypatch, master_key):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    raw = write_release(tmp_path, name="register_raw", method="none", k=1)
    k10 = write_release(tmp_path, name="register_k10", method="global", k=10)
    ledger = tmp_path / "state" / "ledger.sqlite"
    ledger.parent.mkdir()
    env_ledger(ledger, create=True)
    defs = load_release_definitions(tmp_path / "specs", storage_dir=str(tmp_path / "state" / "storage"),
                                    ledger_path=str(ledger))
    with DagsterInstance.ephemeral() as instance:
        [refused] = materialize_release(defs, load_spec(raw), instance)
        [published] = materialize_release(defs, load_spec(k10), instance)
    assert refused.outcome == "refused" and refused.published is None
    assert {"singling_out_risk", "inference_risk"} <= set(refused.failed_checks)
    assert "linkability_risk" not in refused.failed_checks
    for outcome in (refused, published):
        assert [n for n in outcome.checks if n in ATTACK_CHECKS] == ATTACK_CHECKS
    assert not (tmp_path / "published" / "register_raw.csv").exists()
    assert published.outcome == "published" and published.published.exists()
    out = pd.read_csv(published.published)
    assert gate.SOURCE_ROW_COLUMN not in out.columns and len(out) <= ROWS - 1000
    # the figures Dagster judged are those of the gate run outside it
    gate_attacks.clear_cache()
    evaluation = gate_run(k10).evaluation
    assert {n: published.checks[n] for n in ATTACK_CHECKS} == {
        c.name: c.to_json() for c in evaluation.checks if c.name in ATTACK_CHECKS}
