"""A release of DP aggregates materialized through Dagster on the Spark engine: the publication
step counts the groups on Spark and publishes through the same protocol as the pandas engine,
so both engines publish the same file and record the same ledger entry, and both refuse a
partition over the population's epsilon budget.

The noise is drawn fresh per publication by design (``secrets.SystemRandom``); here the DP
module's random source is replaced by a seeded ``random.Random`` for both runs, so the two
engines draw the same noise and their files can be compared value for value.
"""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from dagster import DagsterInstance

from anon_dagster.dagster import load_release_definitions
from anon_dagster.dagster.resources import EngineResource
from anon_dagster.dagster.runner import materialize_release
from anon_dagster.engine import spark_store
from anon_dagster.release import dp, evaluation_memo
from anon_dagster.spec import load_spec
from tests.support.ledgers import env_ledger
from tests.support.spark_releases import aggregates_release

pytestmark = pytest.mark.usefixtures("master_key")

SEED = 11
# the fields of a ledger entry that say what was published and spent; the paths and the time
# (each engine has its own folder and clock) are left out
ENTRY_FIELDS = ("release", "partition", "population", "status", "spec_hash", "data_hash", "qis", "k", "rows",
                "epsilon", "file_hash", "superseded_by")


def run(root: Path, engine: EngineResource | None) -> dict[str | None, object]:
    """Partitions 2023 then 2024 of the release through its job, on ``engine`` (None: pandas)."""
    evaluation_memo.forget()
    # ε 0.5 per partition of 0.8: the first partition published spends 0.5, a second would
    # bring the population to 1.0, over the budget
    spec_path = aggregates_release(root, total_epsilon=0.8, seed=3)
    env_ledger(root / "ledger.sqlite", create=True)
    defs = load_release_definitions(spec_path.parent, engine=engine, storage_dir=str(root / "storage"),
                                    ledger_path=str(root / "ledger.sqlite"))
    outcomes = materialize_release(defs, load_spec(spec_path), DagsterInstance.ephemeral(), ["2023", "2024"])
    return {o.partition: o for o in outcomes}


def entries(root: Path) -> list[dict]:
    ledger = env_ledger(root / "ledger.sqlite")
    return [{f: getattr(e, f) for f in ENTRY_FIELDS} | {"dp": (e.report_inputs or {}).get("dp")}
            for e in ledger.entries(include_failed=True, include_superseded=True)]


def test_spark_publishes_the_pandas_aggregates_and_refuses_over_budget(spark, tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    drawn: list[int] = []

    def seeded() -> random.Random:
        drawn.append(SEED)
        return random.Random(SEED)

    monkeypatch.setattr(dp, "secrets", SimpleNamespace(SystemRandom=seeded))
    to_driver: list[str] = []  # what the Spark run read to the driver as rows
    read_rows = spark_store.driver_rows
    monkeypatch.setattr(spark_store, "driver_rows", lambda *a, what, **k: to_driver.append(what) or read_rows(
        *a, what=what, **k))
    pandas = run(tmp_path / "pandas", None)
    on_spark = run(tmp_path / "spark", EngineResource(engine="spark", spark=spark,
                                                       scratch_dir=str(tmp_path / "scratch")))
    assert len(drawn) == 2  # one draw per engine: the 2023 publication; the refused 2024 draws nothing
    assert to_driver == []  # the groups only: no row reached the driver

    # 2023 published on both: the same cells, the same noisy values, byte for byte the same file
    for outcomes in (pandas, on_spark):
        assert outcomes["2023"].outcome == "published"
        assert list(outcomes["2023"].checks) == ["epsilon_budget"]
    mine, theirs = pandas["2023"].published, on_spark["2023"].published
    assert theirs == tmp_path / "spark" / "published" / "dp" / "2023.parquet"
    table = pd.read_parquet(theirs)
    pd.testing.assert_frame_equal(table, pd.read_parquet(mine))
    assert theirs.read_bytes() == mine.read_bytes()
    # the declared domain's three regions by the observed sexes (F, M, and empty or missing as one)
    assert list(table.columns) == ["region", "sex", "count", "sum_stay"] and len(table) == 9
    assert set(table["region"]) == {"North", "South", "East"}

    # the same ledger entries: the publication's ε spend, cells, hashes, report's dp entry; the
    # refused 2024 recorded as failed
    spark_entries, pandas_entries = entries(tmp_path / "spark"), entries(tmp_path / "pandas")
    assert [e["partition"] for e in spark_entries] == [e["partition"] for e in pandas_entries] == ["2023", "2024"]
    assert spark_entries[0] == pandas_entries[0]
    # a refused evaluation's data hash is the digest of the table judged, which each engine
    # computes its own way; the rest of its entry is the same
    assert {**spark_entries[1], "data_hash": None} == {**pandas_entries[1], "data_hash": None}
    published = [e for e in spark_entries if e["partition"] == "2023"]
    assert [(e["status"], e["epsilon"], e["rows"]) for e in published] == [("published", 0.5, 9)]
    budget = published[0]["dp"]["budget"]
    assert published[0]["dp"]["cells"] == 9
    assert (budget["epsilon_spent"], budget["epsilon_after"], budget["total_epsilon"]) == (0.0, 0.5, 0.8)

    # 2024 would bring the population to ε 1.0 of 0.8: refused by the gate on both, nothing written
    for outcomes in (pandas, on_spark):
        assert (outcomes["2024"].outcome, outcomes["2024"].failed_checks) == ("refused", ["epsilon_budget"])
    assert on_spark["2024"].checks == pandas["2024"].checks
    assert on_spark["2024"].reasons == pandas["2024"].reasons
    assert [e["status"] for e in spark_entries if e["partition"] == "2024"] == ["failed"]
    assert not (tmp_path / "spark" / "published" / "dp" / "2024.parquet").exists()
