"""The release's attacks (``policy.attacks``) on the Spark engine: the same control records, the
same figures and verdicts as on pandas, no withheld person published, and a partition too large
for the driver, or a partition that is not the one anonymized, refused.

The register of 4,000 people (:mod:`tests.support.attack_register`): published raw (method
``none``) singling out and inference succeed, so the gate refuses; after global recoding or
Mondrian at k = 10 the attacks do no better against the people of the release than against the
control persons withheld from it, so it passes.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import pandas as pd
import pytest
from dagster import DagsterInstance

from anon_dagster.cli import main
from anon_dagster.dagster import load_release_definitions
from anon_dagster.dagster.resources import EngineResource
from anon_dagster.dagster.runner import materialize_release
from anon_dagster.engine.spark_engine import SparkEngine
from anon_dagster.engine.spark_frames import DriverLimit
from anon_dagster.engine.spark_gate import evaluate
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import attacks as gate_attacks
from anon_dagster.release import evaluation_memo, pipeline
from anon_dagster.spec import load_spec
from tests.support.attack_register import ATTACK_CHECKS, ROWS, sampled_release, write_release
from tests.support.ledgers import env_ledger

pytestmark = pytest.mark.usefixtures("master_key", "spark")


@pytest.fixture(autouse=True)
def fresh_cache():
    gate_attacks.clear_cache()
    yield
    gate_attacks.clear_cache()


def check(spec, engine: str) -> tuple[int, dict]:
    """``anon-dagster check SPEC --json --engine ENGINE`` without the evaluation's id (a digest
    each engine computes its own way)."""
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["check", str(spec), "--json", "--engine", engine])
    shown = json.loads(out.getvalue())
    shown.pop("evaluation")
    return code, shown


# the release's name keys its control slice: these pass or fail as the pandas gate tests say
@pytest.mark.parametrize(("method", "name", "verdict"), [("none", "register_raw", "fail"),
                                                         ("global", "register_k10", "pass"),
                                                         ("mondrian", "register_mondrian", None)])
def test_the_gate_judges_the_attacks_on_spark_as_on_pandas(tmp_path, method, name, verdict):
    spec = write_release(tmp_path, name=name, method=method)
    pandas, spark = check(spec, "pandas"), check(spec, "spark")
    assert spark == pandas
    code, shown = spark
    if verdict is not None:
        assert (code, shown["verdict"]) == ((0, "pass") if verdict == "pass" else (1, "fail"))
    judged = {c["name"]: c for c in shown["checks"]}
    assert set(ATTACK_CHECKS) <= set(judged)
    assert all(judged[name]["measured"] is not None for name in ATTACK_CHECKS)
    if method == "none":  # nearly everybody unique: singling out far above its bound
        assert not judged["singling_out_risk"]["passed"] and judged["singling_out_risk"]["measured"] > 0.5


def test_the_control_records_are_withheld_on_spark_as_on_pandas(tmp_path, spark_engine):
    spec = load_spec(write_release(tmp_path))
    keystore = open_keystore()
    on_pandas = pipeline.run_gate(spec, keystore=keystore)
    on_spark = spark_engine.run_gate(spec, keystore=keystore)
    control = on_spark.anonymized.record.attack_control
    assert control is not None and control.to_json() == on_pandas.anonymized.record.attack_control.to_json()
    assert control.source == "withheld" and 0 < control.rows_withheld < ROWS
    assert on_spark.anonymized.record.rows_in == ROWS - control.rows_withheld == on_pandas.anonymized.record.rows_in
    # the attacks' figures, what they ran on and their seed: the pandas engine's, number for number
    assert on_spark.evaluation.measures["attacks"] == on_pandas.evaluation.measures["attacks"]
    # no withheld person is among the rows anonymized for publication
    split = gate_attacks.control_split(spec, on_pandas.pseudonymized.data)
    withheld = set(split.control["pid"])
    published = {row["pid"] for row in on_spark.anonymized.df.select("pid").collect()}
    assert len(withheld) == control.persons_withheld and published and not published & withheld
    assert len(published) == ROWS - control.rows_withheld - on_spark.anonymized.suppressed


def test_a_declared_population_gives_the_control_records_on_spark_as_on_pandas(tmp_path, spark_engine):
    spec = load_spec(sampled_release(tmp_path))
    on_pandas = pipeline.run_gate(spec, keystore=open_keystore())
    on_spark = spark_engine.run_gate(spec, keystore=open_keystore())
    control = on_spark.anonymized.record.attack_control
    assert (control.source, control.rows_withheld, control.control_rows) == ("population", 0, ROWS)
    assert control.to_json() == on_pandas.anonymized.record.attack_control.to_json()
    assert on_spark.anonymized.record.rows_in == ROWS  # nothing withheld: every record goes on
    assert on_spark.evaluation.measures["attacks"] == on_pandas.evaluation.measures["attacks"]
    assert [c.passed for c in on_spark.evaluation.checks] == [c.passed for c in on_pandas.evaluation.checks]


def test_spark_publishes_the_pandas_file_without_the_withheld_persons(tmp_path, monkeypatch, capsys):
    files = {}
    for engine in ("pandas", "spark"):
        folder = tmp_path / engine
        spec = write_release(folder, name="register_k10")
        ledger = folder / "ledger.sqlite"
        env_ledger(ledger, create=True)
        monkeypatch.setenv("ANON_DAGSTER_LEDGER", str(ledger))
        assert main(["publish", str(spec), "--engine", engine]) == 0, capsys.readouterr().err
        files[engine] = (folder / "published" / "register_k10.csv").read_bytes()
    assert files["spark"] == files["pandas"]
    published = pd.read_csv(io.BytesIO(files["spark"]), dtype=str)
    withheld = gate_attacks.control_split(load_spec(spec), pipeline.pseudonymize(
        load_spec(spec), pipeline.ingest(load_spec(spec)).data, open_keystore()).data).control
    assert len(withheld) and not set(published["pid"]) & set(withheld["pid"])


def test_a_partition_over_the_driver_budget_is_refused_naming_its_size(tmp_path, spark, capsys):
    spec = load_spec(write_release(tmp_path))
    engine = SparkEngine(spark, scratch_dir=tmp_path / "scratch", max_driver_cells=10_000)
    try:
        with pytest.raises(DriverLimit, match=r"policy.attacks: .*the pseudonymized partition has 4,000 rows x "
                                              r"\d columns = [\d,]+ cells.*max_driver_cells=10,000"):
            engine.run_gate(spec, keystore=open_keystore())
    finally:
        engine.close()
    assert not (tmp_path / "published").exists()


def test_attacks_against_another_partition_fail_saying_why(tmp_path, spark_engine):
    spec = load_spec(write_release(tmp_path, name="register_k10"))
    run = spark_engine.run_gate(spec, keystore=open_keystore())
    assert run.evaluation.passed
    # the partition handed to the gate is not the one anonymized: a tenth of its rows are missing
    for other in (run.pseudonymized.df.where("age < 60"), run.pseudonymized.df.limit(ROWS - 1)):
        gate_attacks.clear_cache()
        judged = evaluate(spark_engine, spec, run.anonymized, original=other, raw=None, ledger=None, partition=None)
        failed = {c.name: c.summary for c in judged.checks if not c.passed}
        assert set(failed) == set(ATTACK_CHECKS), failed
        assert all("could not be measured: " in s and "not the one anonymized" in s for s in failed.values())
    # no partition at all: said so, every attack check failed
    judged = evaluate(spark_engine, spec, run.anonymized, original=None, raw=None, ledger=None, partition=None)
    failed = {c.name: c.summary for c in judged.checks if not c.passed}
    assert set(failed) == set(ATTACK_CHECKS)
    assert all(s.endswith("the attacks need the partition the table was made from") for s in failed.values())


def test_the_attacks_on_spark_through_dagster_decide_as_on_pandas(tmp_path, spark, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    decided = {}
    for engine in ("pandas", "spark"):
        folder = tmp_path / engine
        spec_path = write_release(folder, method="none")
        env_ledger(folder / "ledger.sqlite", create=True)
        evaluation_memo.forget()
        gate_attacks.clear_cache()
        resource = EngineResource(engine="spark", spark=spark, scratch_dir=str(tmp_path / "scratch")) \
            if engine == "spark" else None
        defs = load_release_definitions(folder / "specs", engine=resource, storage_dir=str(folder / "storage"),
                                        ledger_path=str(folder / "ledger.sqlite"))
        [outcome] = materialize_release(defs, load_spec(spec_path), DagsterInstance.ephemeral())
        decided[engine] = (outcome.outcome, outcome.failed_checks,
                           {name: (c["passed"], c["measured"]) for name, c in outcome.checks.items()})
    assert decided["spark"] == decided["pandas"]
    assert decided["spark"][0] == "refused" and "singling_out_risk" in decided["spark"][1]
    assert not (tmp_path / "spark" / "published").exists()
