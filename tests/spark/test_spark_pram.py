"""PRAM on Spark (anon_dagster.engine.spark_pram): each row drawn at its rank in table order, so
the published rows, the record's ``pram`` entry and the gate are the pandas engine's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster.engine import spark_pram
from anon_dagster.engine.base import UnsupportedOnEngine
from anon_dagster.engine.spark_frames import ROW_COLUMN, published_columns, read_parquet
from anon_dagster.errors import DataError
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import pipeline
from anon_dagster.spec import load_spec
from tests.support.spark_releases import discharges, write_release

MATRIX = {"A10": {"A10": 0.7, "B20": 0.2, "C30": 0.1}, "B20": {"B20": 0.6, "A10": 0.4},
          "C30": {"C30": 0.5, "D40": 0.5}, "D40": {"D40": 0.9, "A10": 0.1}}


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 3000), data=st.data())
def test_draws_at_ranks_are_the_generators_draws_at_those_positions(seed, n, data):
    ranks = np.array(data.draw(st.lists(st.integers(0, n - 1), unique=True, min_size=1, max_size=n)), dtype=np.int64)
    expected = np.random.default_rng(seed).random(n)[ranks]
    assert np.array_equal(spark_pram.draws_at(seed, ranks), expected)


def test_ranks_follow_positions_across_files_gaps_and_buckets(spark_engine, tmp_path, monkeypatch):
    """Two files (positions 2**40 apart), rows filtered out in between, buckets of 7 rows: each
    row's rank is its index among the rows left, in position order."""
    folder = tmp_path / "parts"
    folder.mkdir()
    for i in range(2):
        pd.DataFrame({"v": np.arange(50) + 100 * i}).to_parquet(folder / f"part-{i}.parquet", index=False)
    monkeypatch.setattr(spark_pram, "ROWS_PER_BUCKET", 7)
    df = read_parquet(spark_engine.spark, folder).filter("v % 3 != 0")
    got = spark_pram.ranked(spark_engine, df).select("v", ROW_COLUMN, spark_pram.RANK_COLUMN).toPandas()
    got = got.sort_values(ROW_COLUMN)
    assert got[spark_pram.RANK_COLUMN].tolist() == list(range(len(got)))
    assert got["v"].tolist() == [v for v in range(150) if v % 3 and (v < 50 or v >= 100)]


def pram_spec(tmp_path, data=None, **anonymization):
    return load_spec(write_release(
        tmp_path, data=data, anonymization={"method": "global", "k": 3, "max_suppression": 0.05, "seed": 11,
                                            "pram": {"column": "diagnosis", "matrix": MATRIX}, **anonymization},
        policy={"thresholds": {"k": 3}}))


def both(spark_engine, spec):
    keystore = open_keystore()
    pandas = pipeline.anonymize(spec, pipeline.pseudonymize(spec, pipeline.ingest(spec, "2024").data, keystore,
                                                            partition="2024").data)
    pseudo = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, "2024"), keystore, partition="2024")
    spark = spark_engine.anonymize(spec, pseudo)
    rows = spark.df.select(*[f"`{c}`" for c in published_columns(spark.df)], ROW_COLUMN).toPandas()
    return pandas, spark, rows.sort_values(ROW_COLUMN).reset_index(drop=True)


@pytest.mark.usefixtures("master_key")
@pytest.mark.parametrize("method", ["global", "mondrian", "none"])
def test_pram_on_spark_publishes_the_pandas_engines_values_row_for_row(spark_engine, tmp_path, method, monkeypatch):
    monkeypatch.setattr(spark_pram, "ROWS_PER_BUCKET", 37)  # several buckets on the small table
    spec = pram_spec(tmp_path, data=discharges(600, seed=3), method=method)
    pandas, spark, rows = both(spark_engine, spec)
    assert pandas.record.pram.rows_changed > 0
    assert spark.record.pram == pandas.record.pram
    assert spark.record.suppression == pandas.record.suppression
    assert spark.record.classes == pandas.record.classes
    assert spark.record.utility == pandas.record.utility
    published = pandas.data.reset_index(drop=True)
    assert len(rows) == len(published)
    # row for row in source order: the same drawn diagnosis (and the same generalized QIs)
    assert rows["diagnosis"].tolist() == published["diagnosis"].astype(str).tolist()
    for column in ("sex", "region"):
        assert rows[column].astype(str).tolist() == published[column].astype(str).tolist()


@pytest.mark.usefixtures("master_key")
def test_a_value_without_a_row_in_the_matrix_is_an_unreachable_policy_on_both_engines(spark_engine, tmp_path):
    data = discharges(300, seed=4)
    data.loc[data.index[::7], "diagnosis"] = "Z99"
    spec = pram_spec(tmp_path, data=data)
    pandas, spark, rows = both(spark_engine, spec)
    assert pandas.unreachable is not None and "'Z99' has no row in the PRAM matrix" in pandas.unreachable
    assert spark.unreachable == pandas.unreachable
    assert len(rows) == len(pandas.data) == 0


@pytest.mark.usefixtures("master_key")
def test_pram_of_a_column_a_utility_query_groups_by_is_refused_on_spark(spark_engine, tmp_path):
    spec = load_spec(write_release(
        tmp_path, anonymization={"method": "global", "k": 3, "pram": {"column": "diagnosis", "matrix": MATRIX}},
        policy={"thresholds": {"k": 3}},
        utility_queries=[{"name": "by_diagnosis", "group_by": ["diagnosis"], "target": "stay"}]))
    pseudo = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, "2024"), open_keystore(), partition="2024")
    with pytest.raises(UnsupportedOnEngine, match="anonymization.pram of column 'diagnosis'"):
        spark_engine.anonymize(spec, pseudo)


def test_an_output_value_the_column_cannot_hold_is_refused(spark_engine, tmp_path):
    data = pd.DataFrame({"code": [1, 2, 2, 1], ROW_COLUMN: [0, 1, 2, 3]})
    df = spark_engine.spark.createDataFrame(data)

    class Spec:
        label = "spec.yaml"

        class anonymization:  # noqa: N801 - the spec's section
            pram = {"column": "code", "matrix": {"1": {"1": 0.5, "x": 0.5}, "2": {"2": 1.0}, "x": {"x": 1.0}}}
            seed = 0

    with pytest.raises(UnsupportedOnEngine, match="anonymization.pram of column 'code'"):
        spark_pram.apply_pram(spark_engine, Spec, df)
    Spec.anonymization.pram = {"column": "absent", "matrix": {"1": {"1": 1.0}}}
    with pytest.raises(DataError, match="PRAM column 'absent' is missing"):
        spark_pram.apply_pram(spark_engine, Spec, df)
