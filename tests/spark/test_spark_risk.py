"""Risk figures on Spark: ``groupBy(QIs + sensitive).count()`` measured by the existing code equals
``measure_risk`` on the same rows, every key of ``RiskMeasures.to_dict()``, bit for bit."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings

from anon_dagster.engine.spark_frames import FIRST_COLUMN, DriverLimit, read_parquet
from anon_dagster.risk import measure_risk
from anon_dagster.risk.frequencies import measure_frequencies
from tests.support.frames import QIS, SCORE_ORDER, SENSITIVE, tiny_frames

OPTIONS = {
    "sensitive_kind": {"diagnosis": "nominal", "score": "ordinal"},
    "sensitive_order": {"score": SCORE_ORDER},
    "recursive_c": 2.0,
    "sampling_fraction": 0.05,
}


def _on_spark(engine, df: pd.DataFrame, folder) -> object:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"t{len(list(folder.iterdir()))}.parquet"
    df.to_parquet(path, index=False)
    return read_parquet(engine.spark, path)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(df=tiny_frames())
def test_figures_from_spark_equal_measure_risk(spark_engine, tmp_path, df):
    expected = measure_risk(df, QIS, SENSITIVE, **OPTIONS).to_dict()
    sdf = _on_spark(spark_engine, df, tmp_path / "data")
    freq, _ = spark_engine.frequencies(sdf, QIS + SENSITIVE)
    categories = {"grade": list(df["grade"].dtype.categories)}
    got = measure_frequencies(freq, QIS, SENSITIVE, first_row=FIRST_COLUMN, categories=categories,
                              **OPTIONS).to_dict()
    assert got == expected


def test_a_frequency_table_over_the_driver_limit_is_refused_naming_its_size(spark_engine, tmp_path):
    df = pd.DataFrame({"a": range(300), "b": ["x"] * 300})
    sdf = _on_spark(spark_engine, df, tmp_path / "data")
    spark_engine.max_driver_cells = 500
    with pytest.raises(DriverLimit) as err:
        spark_engine.frequencies(sdf, ["a", "b"], what="the bottom frequency table")
    message = str(err.value)
    assert "the bottom frequency table has 300 rows x 4 columns = 1,200 cells" in message
    assert "max_driver_cells=500" in message and "generalize the quasi-identifiers" in message
    assert list((tmp_path / "scratch").iterdir()) == []  # nothing left behind
