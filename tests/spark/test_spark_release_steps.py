"""The release's stored steps on the Spark engine (anon_dagster.release.engine_steps), without
Dagster: each step's table kept as a parquet folder behind a StoredTable, stored and read back
through step storage as the IO manager does, and the same outcome as the pandas engine's."""

from __future__ import annotations

import stat

import pandas as pd
import pytest
import yaml

from anon_dagster.errors import DataError
from anon_dagster.pseudonymize.keystore import open_keystore
from anon_dagster.release import engine_steps, evaluation_memo
from anon_dagster.release.step_storage import SPARK_NOTE, read_step, write_step
from anon_dagster.release.stored_table import StoredTable
from anon_dagster.spec import load_spec
from anon_dagster.storage import ENCRYPTED
from tests.support.ledgers import env_ledger
from tests.support.spark_releases import write_release

pytestmark = pytest.mark.usefixtures("master_key", "spark")

POLICY = {"k": 3, "l_distinct": 2}


def run_steps(engine, spec, partition, folder, ledger, table=None):
    """raw -> pseudonymized -> anonymized -> checks -> published, each table stored and read back
    between the steps with step storage (encrypted policy), as the IO manager does; ``table``:
    the value of a ``source.asset``."""
    store = open_keystore()
    values = {}

    def hand_on(step, out):
        write_step(folder, (spec.release, step), partition, out.value, ENCRYPTED, store.derive_key)
        values[step] = read_step(folder, (spec.release, step), partition, ENCRYPTED, store.derive_key)
        return values[step]

    raw = hand_on("raw", engine_steps.raw_step(engine, spec, partition, table=table,
                                               keystore=lambda: store, storage=lambda: folder))
    pseudo = hand_on("pseudonymized", engine_steps.pseudonymized_step(engine, spec, raw, keystore=lambda: store,
                                                                       partition=partition, storage=lambda: folder))
    anon = hand_on("anonymized", engine_steps.anonymized_step(engine, spec, pseudo, partition=partition,
                                                              reports_dir=str(folder / "reports"),
                                                              storage=lambda: folder))
    declared = [d.name for d in engine_steps.pipeline.declared_checks(spec)]
    checks = engine_steps.checks_step(engine, spec, anonymized=anon, pseudonymized=pseudo, raw=raw, ledger=ledger,
                                      partition=partition, only=set(declared), declared=declared,
                                      reports_dir=str(folder / "reports"))
    published = engine_steps.published_step(engine, spec, anonymized=anon, pseudonymized=pseudo, raw=raw,
                                            ledger=ledger, partition=partition, keystore=store,
                                            storage=[str(folder)], reports_dir=str(folder / "reports"))
    return values, checks, published


def verdicts(evaluation):
    return [(c.name, c.passed, c.severity, c.measured, c.threshold) for c in evaluation.checks]


def test_the_steps_on_spark_hand_on_stored_tables_and_publish_the_pandas_rows(tmp_path, spark_engine):
    from anon_dagster.engine import PandasEngine

    spec = load_spec(write_release(tmp_path, anonymization={"method": "global", "k": 3, "max_suppression": 0.05},
                                   policy={"thresholds": POLICY}))
    outcomes = {}
    for name, engine in (("pandas", PandasEngine()), ("spark", spark_engine)):
        evaluation_memo.forget()
        folder = tmp_path / name
        ledger = env_ledger(tmp_path / f"{name}.sqlite", create=True)
        values, checks, published = run_steps(engine, spec, "2023", folder / "storage", ledger)
        outcomes[name] = values, checks, published
        published_file = published.published.published.path
        outcomes[name] += (pd.read_parquet(published_file),)
        published_file.rename(tmp_path / f"{name}.parquet")  # the next engine publishes afresh
    (p_values, p_checks, p_pub, p_rows), (s_values, s_checks, s_pub, s_rows) = outcomes["pandas"], outcomes["spark"]
    assert all(isinstance(v, pd.DataFrame) for v in p_values.values())
    assert all(isinstance(v, StoredTable) for v in s_values.values())
    assert verdicts(s_checks.evaluation) == verdicts(p_checks.evaluation)
    assert verdicts(s_pub.evaluation) == verdicts(p_pub.evaluation)
    assert s_pub.outcome == p_pub.outcome == "published"
    assert s_values["anonymized"].rows == len(p_values["anonymized"])

    assert list(s_rows.columns) == list(p_rows.columns) and multiset(s_rows) == multiset(p_rows)
    assert s_rows["pid"].str.fullmatch(r"v1:[0-9a-f]{32}").all() and s_rows["pid"].is_unique
    # every folder the engine wrote is the owner's only
    for stored in s_values.values():
        assert stat.S_IMODE(stored.path.stat().st_mode) == 0o700
        assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in stored.path.iterdir())


def multiset(frame):  # pid is a scope-row pseudonym: random, one per row
    return sorted(map(tuple, frame.drop(columns=["pid"]).astype(str).to_numpy().tolist()))


def asset_spec(tmp_path):
    """The release of test_the_steps_on_spark... with its source the Dagster asset ``warehouse/discharges``."""
    path = write_release(tmp_path, anonymization={"method": "global", "k": 3, "max_suppression": 0.05},
                         policy={"thresholds": POLICY})
    raw = yaml.safe_load(path.read_text())
    raw["source"] = {"asset": "warehouse/discharges"}
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return load_spec(path), pd.read_parquet(tmp_path / "data" / "tiny.parquet")


@pytest.mark.parametrize("given", ["pandas", "spark"])
def test_an_asset_source_on_spark_gives_the_pandas_engines_outcome(tmp_path, spark_engine, given):
    """A pandas DataFrame (staged as parquet, its rows in the frame's order) and a Spark DataFrame
    (positions from its contents) as the asset's value: the pandas engine's verdicts and rows,
    and nothing of the staged file left in the scratch folder."""
    from anon_dagster.engine import PandasEngine

    spec, data = asset_spec(tmp_path)
    value = data if given == "pandas" else spark_engine.spark.read.parquet(str(tmp_path / "data" / "tiny.parquet"))
    outcomes = {}
    for name, engine, table in (("pandas", PandasEngine(), data), ("spark", spark_engine, value)):
        evaluation_memo.forget()
        ledger = env_ledger(tmp_path / f"{name}.sqlite", create=True)
        values, checks, published = run_steps(engine, spec, "2023", tmp_path / name / "storage", ledger, table)
        published_file = published.published.published.path
        outcomes[name] = checks, published, pd.read_parquet(published_file)
        published_file.rename(tmp_path / f"{name}.parquet")
    (p_checks, p_pub, p_rows), (s_checks, s_pub, s_rows) = outcomes["pandas"], outcomes["spark"]
    assert p_pub.outcome == s_pub.outcome == "published"
    assert verdicts(s_checks.evaluation) == verdicts(p_checks.evaluation)
    assert verdicts(s_pub.evaluation) == verdicts(p_pub.evaluation)
    assert list(s_rows.columns) == list(p_rows.columns) and multiset(s_rows) == multiset(p_rows)
    assert not list(spark_engine.scratch.glob("asset-*"))


def test_a_spark_asset_holding_another_partitions_rows_is_refused_when_it_is_the_partitions_own(
        tmp_path, spark_engine):
    spec, _ = asset_spec(tmp_path)
    store = open_keystore()
    with pytest.raises(DataError, match=r"the Dagster asset 'warehouse/discharges': \d+ rows fall outside "
                                        r"partition '2023'"):
        engine_steps.raw_step(spark_engine, spec, "2023",
                              table=spark_engine.spark.read.parquet(str(tmp_path / "data" / "tiny.parquet")),
                              table_partitioned=lambda: True, keystore=lambda: store,
                              storage=lambda: tmp_path / "storage")
    assert not (tmp_path / "storage").exists() or not any((tmp_path / "storage").rglob("*.parquet"))


def test_an_asset_column_of_mixed_types_is_refused_naming_the_column_and_no_value(tmp_path, spark_engine):
    spec, data = asset_spec(tmp_path)
    data["severity"] = pd.Series(["SECRET-NOTE-7" if i % 2 else 11 for i in range(len(data))], dtype=object)
    store = open_keystore()
    with pytest.raises(DataError) as refused:
        engine_steps.raw_step(spark_engine, spec, "2023", table=data, keystore=lambda: store,
                              storage=lambda: tmp_path / "storage")
    message = str(refused.value)
    assert "the Dagster asset 'warehouse/discharges'" in message and "'severity'" in message
    assert "SECRET" not in message and "11" not in message
    assert not list(spark_engine.scratch.glob("asset-*"))


def test_an_asset_value_that_is_no_dataframe_is_refused_naming_the_asset_on_spark(tmp_path, spark_engine):
    from anon_dagster.errors import UserError

    spec, _ = asset_spec(tmp_path)
    store = open_keystore()
    with pytest.raises(UserError, match="the Dagster asset 'warehouse/discharges' gave a builtins.list"):
        engine_steps.raw_step(spark_engine, spec, "2023", table=[1, 2], keystore=lambda: store,
                              storage=lambda: tmp_path / "storage")


def test_a_stored_folder_changed_after_its_step_is_refused(tmp_path, spark_engine):
    spec = load_spec(write_release(tmp_path, anonymization={"method": "global", "k": 3}, policy={"thresholds": POLICY}))
    store = open_keystore()
    folder = tmp_path / "storage"
    out = engine_steps.raw_step(spark_engine, spec, "2023", keystore=lambda: store,
                                storage=lambda: folder)
    note, warning = write_step(folder, (spec.release, "raw"), "2023", out.value, ENCRYPTED, store.derive_key)
    assert note == SPARK_NOTE.format(pointer="encrypted (AES-256-GCM), owner-only")
    assert warning and "clear text" in warning and "'encrypted'" in warning
    stored = read_step(folder, (spec.release, "raw"), "2023", ENCRYPTED, store.derive_key)
    assert stored == out.value and stored.rows == out.rows > 0
    part = next(p for p in stored.path.iterdir() if p.name.endswith(".parquet"))
    part.write_bytes(part.read_bytes() + b"\0")
    with pytest.raises(DataError, match="not the one its step wrote"):
        engine_steps.pseudonymized_step(spark_engine, spec, stored, keystore=lambda: store, partition="2023",
                                        storage=lambda: folder)


def test_the_driver_reads_a_stored_table_only_within_max_driver_cells(tmp_path, spark):
    from anon_dagster.engine.spark_engine import SparkEngine
    from anon_dagster.engine.spark_frames import DriverLimit
    from anon_dagster.engine.spark_store import driver_rows, load_table, store_table

    df = spark.createDataFrame(pd.DataFrame({"a": list("jihgfedcba"), "b": range(10), "__row": range(10, 0, -1)}))
    stored = store_table(df, tmp_path / "base" / "t" / "1", tmp_path / "base")
    assert stored.rows == 10 and stored.columns == ("a", "b", "__row")
    fits = SparkEngine(spark, max_driver_cells=20, scratch_dir=tmp_path / "scratch")
    rows = driver_rows(fits, load_table(fits, stored), ["a", "b"], stored.rows, what="the rows of erased persons")
    assert rows["a"].tolist() == list("abcdefghij")  # in the rows' source order
    over = SparkEngine(spark, max_driver_cells=19, scratch_dir=tmp_path / "scratch")
    with pytest.raises(DriverLimit, match=r"^the rows of erased persons has 10 rows x 2 columns = 20 cells, more than .*"
                                          r"max_driver_cells=19\)"):
        driver_rows(over, load_table(over, stored), ["a", "b"], stored.rows, what="the rows of erased persons")


def test_a_partition_awaiting_approval_on_spark_writes_no_row(tmp_path, spark_engine, monkeypatch):
    """Passed but not approved: the outcome awaits approval, nothing is at the target and Spark
    never wrote the published rows (they are written only when the protocol stages the file)."""
    spec = load_spec(write_release(tmp_path, anonymization={"method": "global", "k": 3, "max_suppression": 0.05},
                                   policy={"thresholds": POLICY},
                                   approval={"required": True, "approvers": ["dpo"], "min_approvals": 1}))
    from anon_dagster.engine import spark_publication

    def never(*args, **kwargs):
        raise AssertionError("the published rows were written for a partition awaiting approval")

    monkeypatch.setattr(spark_publication, "copy_parts", never)
    evaluation_memo.forget()
    ledger = env_ledger(tmp_path / "ledger.sqlite", create=True)
    _, _, published = run_steps(spark_engine, spec, "2023", tmp_path / "storage", ledger)
    assert published.outcome == "awaiting approval" and published.evaluation.passed
    assert not (tmp_path / "published").exists() or not any((tmp_path / "published").rglob("*.parquet"))
    assert published.awaiting is not None and "anon-dagster approve" in published.awaiting.command
