"""A release on the Spark engine inside a user's Dagster project, its source an asset of the
project (``source.asset``) that the project's IO manager (DuckDB) loads as a pandas DataFrame:
the same outcome per partition, the same checks and the same published rows as on pandas."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from dagster import AssetKey, DagsterInstance, Definitions, asset
from dagster_duckdb_pandas import DuckDBPandasIOManager

from anon_dagster.dagster import AnonReleaseComponent
from anon_dagster.dagster.resources import EngineResource
from anon_dagster.release import evaluation_memo
from anon_dagster.release.step_storage import SPARK_NOTE
from tests.support.ledgers import env_ledger
from tests.support.releases import check_evaluations, run, visits, write_release

pytestmark = pytest.mark.usefixtures("master_key")

UPSTREAM = AssetKey(["warehouse", "visits"])


def project(root, engine: EngineResource | None) -> Definitions:
    """The release ``tiny`` reading ``warehouse/visits`` (a DuckDB table of the project) on ``engine``."""
    root.mkdir(parents=True)
    spec_path = write_release(root, thresholds={"k": 2, "l_distinct": 2}, max_suppression=0.0,
                              data=visits(timestamps=True))
    spec = yaml.safe_load(spec_path.read_text())
    spec["source"] = {"asset": "warehouse/visits"}
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    env_ledger(root / "state" / "ledger.sqlite", create=True)

    @asset(key=UPSTREAM, io_manager_key="warehouse")
    def upstream() -> pd.DataFrame:
        return visits(timestamps=True)

    release = AnonReleaseComponent(specs=[str(spec_path)], storage_dir=str(root / "state" / "storage"),
                                   ledger_path=str(root / "state" / "ledger.sqlite"))
    own = Definitions(assets=[upstream], resources={"warehouse": DuckDBPandasIOManager(
        database=str(root / "project.duckdb"))})
    return Definitions.merge(release.build_definitions(root, engine=engine), own)


def outcome(root, engine):
    """Each year's run: whether it succeeded, the check verdicts, the published rows (or None)."""
    evaluation_memo.forget()
    defs = project(root, engine)
    instance = DagsterInstance.ephemeral()
    assert defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, asset_selection=[UPSTREAM]).success
    out = {}
    for year in ("2023", "2024"):
        result = run(defs, "tiny", year, instance)
        checks = {name: e.passed for name, e in check_evaluations(result).items() if name != "freshness"}
        file = root / "published" / "tiny" / f"{year}.parquet"
        out[year] = result.success, checks, pd.read_parquet(file) if file.exists() else None
    raw = instance.get_latest_materialization_event(AssetKey(["tiny", "raw"])).asset_materialization
    out["stored"] = raw.metadata["storage"].value.startswith(SPARK_NOTE.split("{")[0])
    return out


def test_a_project_asset_source_on_spark_is_published_as_on_pandas(tmp_path, spark):
    on_pandas = outcome(tmp_path / "pandas", None)
    on_spark = outcome(tmp_path / "spark", EngineResource(engine="spark", spark=spark,
                                                          scratch_dir=str(tmp_path / "scratch")))
    assert on_pandas["2023"][0] and not on_pandas["2024"][0]
    assert on_spark["stored"] and not on_pandas["stored"]  # the steps did run on Spark
    for year in ("2023", "2024"):
        assert on_spark[year][:2] == on_pandas[year][:2]
    assert on_spark["2024"][2] is None and on_pandas["2024"][2] is None
    # the pid pseudonym (scope release) is the same bytes on both engines: the rows are equal
    pd.testing.assert_frame_equal(on_spark["2023"][2], on_pandas["2023"][2], check_dtype=False)
    assert not list((tmp_path / "scratch").glob("asset-*"))
