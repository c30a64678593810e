"""A release inside a user's Dagster project: its source an asset of the project
(``source.asset``), its publication handed as a table to the project's IO manager
(``publication.io_manager``, ``publication.table``), here a real DuckDB database."""

from __future__ import annotations

import duckdb
import pandas as pd
import yaml
from dagster import AssetKey, DagsterInstance, Definitions, asset
from dagster_duckdb_pandas import DuckDBPandasIOManager

from tests.support.releases import check_evaluations, load, materialized, run, visits, write_release

UPSTREAM = AssetKey(["warehouse", "visits"])


def project(env, upstream_value=None) -> tuple[Definitions, str]:
    """The release ``tiny`` reading ``warehouse/visits`` and publishing to the DuckDB table
    ``tiny_open`` too, merged with the project's own asset and IO manager; the database's path."""
    spec_path = write_release(env, thresholds={"k": 2, "l_distinct": 2}, max_suppression=0.0, data=visits())
    spec = yaml.safe_load(spec_path.read_text())
    spec["source"] = {"asset": "warehouse/visits"}
    spec["publication"].update({"io_manager": "warehouse", "table": "tiny_open"})
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    database = str(env / "project.duckdb")

    @asset(key=UPSTREAM, io_manager_key="warehouse")
    def upstream() -> pd.DataFrame:
        return visits() if upstream_value is None else upstream_value

    own = Definitions(assets=[upstream], resources={"warehouse": DuckDBPandasIOManager(database=database)})
    return Definitions.merge(load(env, spec_path), own), database


def materialize_upstream(defs: Definitions, instance) -> None:
    job = defs.resolve_implicit_global_asset_job_def()
    assert job.execute_in_process(instance=instance, asset_selection=[UPSTREAM]).success


def table_rows(database: str) -> pd.DataFrame | None:
    with duckdb.connect(database) as db:
        tables = {r[0] for r in db.sql("select table_name from information_schema.tables "
                                       "where table_schema = 'tiny'").fetchall()}
        return db.sql("select * from tiny.tiny_open").df() if "tiny_open" in tables else None


def test_the_raw_asset_depends_on_the_project_asset_and_reads_its_partition(env):
    defs, _ = project(env)
    raw = defs.resolve_assets_def(AssetKey(["tiny", "raw"]))
    assert UPSTREAM in raw.asset_deps[AssetKey(["tiny", "raw"])]
    assert raw.specs_by_key[AssetKey(["tiny", "raw"])].kinds == {"pandas"}
    instance = DagsterInstance.ephemeral()
    materialize_upstream(defs, instance)
    result = run(defs, "tiny", "2023", instance)
    assert result.success
    raw_meta = next(e.event_specific_data.materialization.metadata for e in result.all_events
                    if e.event_type_value == "ASSET_MATERIALIZATION" and e.asset_key == AssetKey(["tiny", "raw"]))
    # the whole unpartitioned asset was loaded; the release took its partition's 32 rows
    assert raw_meta["source"].value == "the Dagster asset 'warehouse/visits'" and raw_meta["rows"].value == 32
    published = pd.read_parquet(env / "published" / "tiny" / "2023.parquet")
    assert set(published["visit_date"].astype(str)) == {"2023-06-01"}


def test_a_value_that_is_not_a_dataframe_fails_naming_the_asset(env):
    defs, _ = project(env, upstream_value=pd.DataFrame({"x": [1]}))
    instance = DagsterInstance.ephemeral()
    materialize_upstream(defs, instance)
    result = run(defs, "tiny", "2023", instance)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "the Dagster asset 'warehouse/visits'" in failure.message or \
        "the Dagster asset 'warehouse/visits'" in str(failure.event_specific_data.error)
    assert not (env / "published" / "tiny" / "2023.parquet").exists()


def test_a_published_partition_lands_in_the_table_and_a_refused_one_writes_nothing(env):
    defs, database = project(env)
    instance = DagsterInstance.ephemeral()
    materialize_upstream(defs, instance)
    good = run(defs, "tiny", "2023", instance)
    assert good.success and "tiny/tiny_open" in materialized(good)
    table = table_rows(database)
    published = pd.read_parquet(env / "published" / "tiny" / "2023.parquet")
    # the table is the file of record row for row, with the partition's start
    assert list(table.columns) == [*published.columns, "partition_start"]
    pd.testing.assert_frame_equal(table.drop(columns="partition_start"), published, check_dtype=False)
    assert set(table["partition_start"]) == {pd.Timestamp("2023-01-01")}

    bad = run(defs, "tiny", "2024", instance)
    assert not bad.success and check_evaluations(bad)["publication"].passed is False
    assert "tiny/tiny_open" not in materialized(bad)
    assert len(table_rows(database)) == len(published)  # 2023's rows only
    # run on its own, the table asset reads the refusal and writes nothing either
    alone = run(defs, "tiny", "2024", instance, selection=[AssetKey(["tiny", "tiny_open"])])
    assert not alone.success
    failure = next(e for e in alone.all_events if e.event_type_value == "STEP_FAILURE")
    assert "the publication was refused" in str(failure.event_specific_data.error) + (failure.message or "")
    assert len(table_rows(database)) == len(published)


def test_a_publication_file_changed_since_is_not_handed_on(env):
    defs, database = project(env)
    instance = DagsterInstance.ephemeral()
    materialize_upstream(defs, instance)
    assert run(defs, "tiny", "2023", instance, selection=[AssetKey(["tiny", s]) for s in
                                                          ("raw", "pseudonymized", "anonymized", "published")]).success
    assert table_rows(database) is None
    file = env / "published" / "tiny" / "2023.parquet"
    pd.read_parquet(file).head(1).to_parquet(file)  # someone rewrote the portal's file
    alone = run(defs, "tiny", "2023", instance, selection=[AssetKey(["tiny", "tiny_open"])])
    assert not alone.success
    failure = next(e for e in alone.all_events if e.event_type_value == "STEP_FAILURE")
    assert "is not the file the ledger recorded" in str(failure.event_specific_data.error) + (failure.message or "")
    assert table_rows(database) is None
