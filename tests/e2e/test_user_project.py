"""A release built the way users build a project: a Dagster project of their own made by
``create-dagster project``, the plugin's component added by ``dg scaffold defs``, the project's
own upstream asset of discharges kept in DuckDB by the project's IO manager, and two release
specs whose source is that asset: one published to object storage (the local S3-compatible server), one also to a
DuckDB table. 2024 passes the gate; 2025 (one diagnosis per class: l = 1) is refused, and
writes nothing anywhere."""

from __future__ import annotations

import textwrap

import duckdb
import pandas as pd
import pytest
import yaml
from dagster import AssetKey, DagsterInstance

from tests.support.projects import COMPONENT, dg, load_project, scaffold_project

PACKAGE = "clinic_project"

# the project's own asset: generated discharges, one partition per year, stored in DuckDB
WAREHOUSE = '''\
import dagster as dg
import pandas as pd

YEARS = dg.TimeWindowPartitionsDefinition(start="2024", end="2026", fmt="%Y", cron_schedule="0 0 1 1 *",
                                          timezone="UTC", end_offset=0)


def discharges(year: int) -> pd.DataFrame:
    """Classes of 4 over (age, sex, province); two diagnoses per class in 2024, one in 2025."""
    diagnoses = ["I10", "E11"] if year == 2024 else ["I10"]
    rows = []
    for age in (34, 37, 61, 66):
        for sex in ("F", "M"):
            for province in ("08", "17"):
                for j in range(4):
                    n = len(rows)
                    rows.append({"patient_id": f"P{year}{n:05d}", "full_name": f"Patient {year} {n}",
                                 "age": age, "sex": sex, "province": province,
                                 "admission_date": f"{year}-{1 + n % 12:02d}-15",
                                 "diagnosis": diagnoses[j % len(diagnoses)], "length_of_stay": 1 + n % 9})
    return pd.DataFrame(rows)


@dg.asset(key=["warehouse", "discharges"], partitions_def=YEARS, io_manager_key="warehouse",
          metadata={"partition_expr": "admission_date"})
def warehouse_discharges(context: dg.AssetExecutionContext) -> pd.DataFrame:
    return discharges(int(context.partition_key))
'''

# the project's resources, in a module of their own (a module with a @definitions function
# contributes only what that function returns)
RESOURCES = '''\
import dagster as dg
from dagster_duckdb_pandas import DuckDBPandasIOManager


@dg.definitions
def resources():
    return dg.Definitions(resources={"warehouse": DuckDBPandasIOManager(database=DATABASE)})
'''


def spec(release: str, publication: dict) -> dict:
    return {
        "release": release,
        "source": {"asset": "warehouse/discharges"},
        "partitions": {"cadence": "yearly", "start": "2024-01-01", "end": "2026-01-01", "column": "admission_date"},
        "columns": {
            "patient_id": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research"}},
            "full_name": {"role": "identifier"},
            "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [10, 20]}},
            "sex": {"role": "quasi"},
            "province": {"role": "quasi", "partition_key": True},
            "admission_date": {"role": "insensitive"},
            "diagnosis": {"role": "sensitive"},
            "length_of_stay": {"role": "insensitive"},
        },
        "anonymization": {"method": "global", "k": 2, "max_suppression": 0.0},
        "policy": {"thresholds": {"k": 2, "l_distinct": 2}},
        "publication": publication,
    }


@pytest.fixture
def project(tmp_path, master_key, s3_bucket, monkeypatch):
    """The project's folder, its database and its Definitions, loaded as ``dg`` loads them."""
    home = tmp_path / "dagster_home"
    made = scaffold_project(tmp_path, PACKAGE, home)
    database = tmp_path / "clinic.duckdb"
    (made.defs / "warehouse.py").write_text(WAREHOUSE)
    (made.defs / "resources.py").write_text(RESOURCES.replace("DATABASE)", f"{str(database)!r})"))
    dg(made, home, "scaffold", "defs", COMPONENT, "releases")
    releases = made.defs / "releases"
    scaffolded = yaml.safe_load((releases / "defs.yaml").read_text())
    assert scaffolded == {"type": COMPONENT, "attributes": {"config_dir": "specs"}}
    for starter in (releases / "specs").glob("*.yaml"):  # the starter release: replaced by the project's own
        starter.unlink()
    (releases / "defs.yaml").write_text(textwrap.dedent(f"""\
        type: {COMPONENT}
        attributes:
          config_dir: specs
          storage_dir: {tmp_path / "state" / "storage"}
          ledger_path: {tmp_path / "state" / "ledger.sqlite"}
        """))
    to_s3 = spec("discharges_open", {"path": s3_bucket.uri("open-data/{release}/{partition}.parquet")})
    to_table = spec("discharges_table", {"path": "../../../../../published/{release}/{partition}.parquet",
                                         "io_manager": "warehouse", "table": "discharges_open"})
    for body in (to_s3, to_table):
        (releases / "specs" / f"{body['release']}.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    monkeypatch.setenv("ANON_DAGSTER_LEDGER", str(tmp_path / "state" / "ledger.sqlite"))
    from anon_dagster.cli import main

    assert main(["ledger", "init"]) == 0
    return made.root, database, load_project(made)


def run(defs, partition: str, instance, keys: list[AssetKey]):
    job = defs.resolve_implicit_global_asset_job_def()
    return job.execute_in_process(partition_key=partition, instance=instance, asset_selection=keys,
                                  raise_on_error=False)


def release_keys(release: str, *extra: str) -> list[AssetKey]:
    return [AssetKey([release, s]) for s in ("raw", "pseudonymized", "anonymized", "published", *extra)]


def table(database) -> pd.DataFrame:
    with duckdb.connect(str(database)) as db:
        return db.sql("select * from discharges_table.discharges_open").df()


def test_a_users_project_publishes_to_object_storage_and_duckdb_and_a_refusal_writes_nothing(project, s3_bucket):
    root, database, defs = project
    instance = DagsterInstance.ephemeral()
    raw = defs.resolve_assets_def(AssetKey(["discharges_open", "raw"]))
    assert AssetKey(["warehouse", "discharges"]) in raw.asset_deps[AssetKey(["discharges_open", "raw"])]
    everything = [AssetKey(["warehouse", "discharges"]), *release_keys("discharges_open"),
                  *release_keys("discharges_table", "discharges_open")]

    passed = run(defs, "2024", instance, everything)
    assert passed.success, [e.message for e in passed.all_events if e.event_type_value == "STEP_FAILURE"]
    objects = s3_bucket.objects()
    assert "open-data/discharges_open/2024.parquet" in objects
    import io

    on_s3 = pd.read_parquet(io.BytesIO(objects["open-data/discharges_open/2024.parquet"]))
    assert len(on_s3) == 64 and not {"full_name"} & set(on_s3.columns)
    assert not set(on_s3["patient_id"]) & {f"P2024{n:05d}" for n in range(64)}  # pseudonyms only
    in_file = pd.read_parquet(root / "published" / "discharges_table" / "2024.parquet")
    rows = table(database)
    pd.testing.assert_frame_equal(rows.drop(columns="partition_start"), in_file, check_dtype=False)
    assert set(rows["partition_start"]) == {pd.Timestamp("2024-01-01")}

    refused = run(defs, "2025", instance, everything)
    assert not refused.success
    outcomes = {e.asset_key.to_user_string(): e.event_specific_data.materialization.metadata["outcome"].value
                for e in refused.all_events if e.event_type_value == "ASSET_MATERIALIZATION"
                and "outcome" in e.event_specific_data.materialization.metadata}
    assert outcomes == {"discharges_open/published": "refused", "discharges_table/published": "refused"}
    assert not any("2025" in key for key in s3_bucket.objects())
    assert not (root / "published" / "discharges_table" / "2025.parquet").exists()
    assert len(table(database)) == len(in_file)  # 2024's rows, nothing of 2025
    assert "discharges_table/discharges_open" not in {
        e.asset_key.to_user_string() for e in refused.all_events if e.event_type_value == "ASSET_MATERIALIZATION"}
