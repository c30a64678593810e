"""The Dagster resource that chooses the engine: pandas by default, Spark on a given session."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from anon_dagster.dagster.resources import EngineResource
from anon_dagster.engine import PandasEngine


def test_the_default_is_the_pandas_engine():
    assert isinstance(EngineResource().open(), PandasEngine)


@pytest.mark.parametrize("wrap", [lambda s: s, lambda s: SimpleNamespace(spark_session=s)])
def test_spark_runs_on_the_session_given_and_leaves_it_running(spark, tmp_path, wrap):
    resource = EngineResource(engine="spark", max_driver_cells=1234, max_worker_cells=567,
                              scratch_dir=str(tmp_path / "scratch"))
    engine = resource.open(wrap(spark))
    assert engine.name == "spark" and engine.spark is spark and engine.max_driver_cells == 1234
    assert engine.max_worker_cells == 567
    engine.close()
    assert spark.range(3).count() == 3  # still running: the engine did not start it
