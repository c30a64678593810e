"""A synthetic release (``anonymization.method: synthetic``) on the Spark engine: synthesized and
audited on the driver with the pandas engine's code, so the same checks, figures and published
file as on pandas; a generator's table given by a Dagster asset judged as on pandas; a partition
too large for the driver refused naming its size. Before, the engine anonymized such a release
by global recoding, and its audit checks failed with no figure."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import pandas as pd
import pytest
import yaml

from anon_dagster.cli import main
from anon_dagster.dagster.resources import EngineResource
from anon_dagster.engine.spark_engine import SparkEngine
from anon_dagster.engine.spark_frames import DriverLimit
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import evaluation_memo, pipeline
from anon_dagster.release import synthetic as gate_synthetic
from anon_dagster.spec import load_spec
from tests.support.attack_register import ROWS, write_release
from tests.support.ledgers import env_ledger
from tests.support.releases import check_evaluations, materialized
from tests.support.synthetic_project import copier, population_model, run_partition

pytestmark = pytest.mark.usefixtures("master_key", "spark")

SYNTHETIC_CHECKS = ["synthetic_copy_rate_gap", "synthetic_closer_to_train_gap", "synthetic_mia_auc"]


@pytest.fixture(autouse=True)
def fresh_cache():
    gate_synthetic.clear_cache()
    evaluation_memo.forget()
    yield
    gate_synthetic.clear_cache()


def synthetic_release(folder, leaf: int):
    """The register synthesized by CART with leaves of at least ``leaf`` rows (1: its records copied)."""
    path = write_release(folder, name=f"register_leaf{leaf}")
    spec = yaml.safe_load(path.read_text())
    spec["columns"]["pid"] = {"role": "identifier"}  # a synthetic row is nobody's: dropped
    spec["anonymization"] = {"method": "synthetic", "synthetic": {"min_samples_leaf": leaf}}
    spec["policy"] = {"synthetic": {"copy_rate_gap": 0.05, "closer_to_train_gap": 0.1, "mia_auc": 0.6,
                                    "control": {"fraction": 0.5}}}
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def check(spec, engine: str) -> tuple[int, dict]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["check", str(spec), "--json", "--engine", engine])
    shown = json.loads(out.getvalue())
    shown.pop("evaluation")  # a digest each engine computes its own way
    return code, shown


@pytest.mark.parametrize(("leaf", "verdict"), [(1, "fail"), (200, "pass")])
def test_the_audit_on_spark_judges_as_on_pandas(tmp_path, leaf, verdict):
    spec = synthetic_release(tmp_path, leaf)
    pandas, spark = check(spec, "pandas"), check(spec, "spark")
    assert spark == pandas
    code, shown = spark
    assert (code, shown["verdict"]) == ((0, "pass") if verdict == "pass" else (1, "fail"))
    judged = {c["name"]: c for c in shown["checks"]}
    assert all(judged[name]["measured"] is not None for name in SYNTHETIC_CHECKS)
    if leaf == 1:  # every training record copied: the exact-copy gap far above its bound
        assert not judged["synthetic_copy_rate_gap"]["passed"] and judged["synthetic_copy_rate_gap"]["measured"] > 0.2


def test_the_synthetic_table_and_its_audit_are_the_pandas_ones(tmp_path, spark_engine):
    spec = load_spec(synthetic_release(tmp_path, 200))
    keystore = open_keystore()
    on_pandas = pipeline.run_gate(spec, keystore=keystore)
    on_spark = spark_engine.run_gate(spec, keystore=keystore)
    assert on_spark.evaluation.measures["synthetic"] == on_pandas.evaluation.measures["synthetic"]
    assert on_spark.evaluation.measures["attacks"] == on_pandas.evaluation.measures["attacks"]
    record = on_spark.anonymized.record
    assert record.synthetic == on_pandas.anonymized.record.synthetic and record.synthetic is not None
    assert record.attack_control.to_json() == on_pandas.anonymized.record.attack_control.to_json()
    table = on_spark.anonymized.df.toPandas()
    expected = on_pandas.anonymized.data
    assert len(table) == len(expected) == ROWS - record.attack_control.rows_withheld
    assert table[list(expected.columns)].astype(str).values.tolist() == expected.astype(str).values.tolist()


def test_spark_publishes_the_pandas_synthetic_file(tmp_path, monkeypatch, capsys):
    files = {}
    for engine in ("pandas", "spark"):
        spec = synthetic_release(tmp_path / engine, 200)
        env_ledger(tmp_path / engine / "ledger.sqlite", create=True)
        monkeypatch.setenv("ANON_DAGSTER_LEDGER", str(tmp_path / engine / "ledger.sqlite"))
        assert main(["publish", str(spec), "--engine", engine]) == 0, capsys.readouterr().err
        files[engine] = (tmp_path / engine / "published" / "register_leaf200.csv").read_bytes()
    assert files["spark"] == files["pandas"]
    assert len(pd.read_csv(io.BytesIO(files["spark"]))) > ROWS // 3


def test_a_partition_over_the_driver_budget_is_refused_naming_its_size(tmp_path, spark):
    spec = load_spec(synthetic_release(tmp_path, 200))
    engine = SparkEngine(spark, scratch_dir=tmp_path / "scratch", max_driver_cells=10_000)
    try:
        with pytest.raises(DriverLimit, match=r"^anonymization.method synthetic: the generator and its audit read every "
                                              r"row on the driver, and the pseudonymized partition has 4,000 rows x \d "
                                              r"columns .*max_driver_cells=10,000"):
            engine.run_gate(spec, keystore=open_keystore())
    finally:
        engine.close()


@pytest.mark.parametrize(("generate", "published"), [(population_model, True), (copier, False)])
def test_a_generator_asset_is_judged_on_spark_as_on_pandas(tmp_path, monkeypatch, spark, generate, published):
    outcomes = {}
    for engine in ("pandas", "spark"):
        env = tmp_path / engine
        env.mkdir()
        monkeypatch.setenv("ANON_DAGSTER_LEDGER", str(env / "state" / "ledger.sqlite"))
        evaluation_memo.forget()
        gate_synthetic.clear_cache()
        resource = EngineResource(engine="spark", spark=spark, scratch_dir=str(tmp_path / "scratch")) \
            if engine == "spark" else None
        _, result = run_partition(env, generate, resource)
        checks = {name: (c.passed, c.metadata["check"].value["measured"] if "check" in c.metadata else None)
                  for name, c in check_evaluations(result).items()}
        assert {"synthetic_copy_rate_gap", "publication"} <= set(checks)
        target = env / "published" / "synth" / "2023.parquet"
        outcomes[engine] = (checks, "synth/published" in materialized(result), target.exists(),
                            pd.read_parquet(target).astype(str).values.tolist() if target.exists() else None)
    assert outcomes["spark"] == outcomes["pandas"]
    assert outcomes["spark"][1:3] == (published, published)
