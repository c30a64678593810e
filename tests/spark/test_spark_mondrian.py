"""Mondrian on Spark: each partition-key part cut on an executor with the whole table's layout
(or, without partition keys, the table on the driver), giving the pandas engine's labels, its
transformation record (ranges, boxes, cut tree, figures) and its gate outcome."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.engine import spark_mondrian
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import pipeline
from anon_dagster.release.gate import publishable_view
from anon_dagster.spec import load_spec
from tests.support.spark_mondrian import CASES, adult_by_sex, assert_same, both
from tests.support.spark_releases import (
    COLUMNS,
    PARTITION_KEYS,
    TINY_COLUMNS,
    check_json,
    discharges,
    published_rows,
    tiny_discharges,
    without_id,
    write_release,
)

pytestmark = pytest.mark.usefixtures("master_key")

@pytest.mark.parametrize("case", list(CASES))
def test_same_labels_record_and_suppression(spark_engine, tmp_path, case):
    anonymization, thresholds, columns = CASES[case]
    spec = load_spec(write_release(tmp_path, columns=columns, anonymization={"method": "mondrian", **anonymization},
                                   policy={"thresholds": thresholds}))
    pandas, spark, published = both(spark_engine, spec)
    assert pandas.record.mondrian.classes > 5
    assert_same(pandas, spark, published)


def test_a_part_too_small_is_suppressed_alike(spark_engine, tmp_path):
    data = discharges(400, seed=3)
    data.loc[data.index[:3], "region"] = "East"  # a part of at most 3 rows, below k
    data.loc[data.index[:3], "admitted"] = pd.Timestamp("2024-03-01")
    spec = load_spec(write_release(tmp_path, data=data, anonymization={"method": "mondrian", "k": 4,
                                                                       "max_suppression": 0.05},
                                   policy={"thresholds": {"k": 4}}))
    pandas, spark, published = both(spark_engine, spec)
    assert pandas.record.mondrian.parts_suppressed
    assert_same(pandas, spark, published)


@pytest.mark.usefixtures("spark")
def test_the_gate_outcome_is_the_pandas_engines(tmp_path):
    spec = write_release(tmp_path, anonymization={"method": "mondrian", "k": 3, "max_suppression": 0.05},
                         policy={"thresholds": {"k": 3, "l_distinct": 2, "t_closeness": 0.35}},
                         utility_queries=[{"name": "by_region", "group_by": ["region"], "target": "diagnosis"}])
    for partition in ("2023", "2024"):
        code_p, pandas = check_json(spec, "--partition", partition)
        code_s, spark = check_json(spec, "--partition", partition, "--engine", "spark")
        assert without_id(spark) == without_id(pandas)
        assert code_s == code_p


def test_without_partition_keys_the_driver_cuts_the_frequency_cells_not_the_rows(spark_engine, tmp_path,
                                                                                  monkeypatch):
    columns = {**COLUMNS, "region": {"role": "quasi"}}
    spec = load_spec(write_release(tmp_path, columns=columns, anonymization={"method": "mondrian", "k": 3},
                                   policy={"thresholds": {"k": 3}}))
    pseudo = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, "2024"), open_keystore(), partition="2024")
    on_pandas = pipeline.anonymize(spec, pipeline.pseudonymize(spec, pipeline.ingest(spec, "2024").data,
                                                               open_keystore(), partition="2024").data)
    rows = len(on_pandas.data)
    # the 207 rows x 4 columns are over the budget, the frequency table's cells are not
    spark_engine.max_driver_cells = 800
    assert rows * 4 > 800
    done = spark_engine.anonymize(spec, pseudo, relax=False)
    assert published_rows(done.df.toPandas()[list(on_pandas.data.columns)]) == published_rows(on_pandas.data)
    assert done.record.to_json()["mondrian"] == on_pandas.record.to_json()["mondrian"]
    # the frequency table itself over the driver's budget: the table is cut as one part on the
    # executors instead, with the same result
    spark_engine.max_driver_cells = 300
    calls = []
    real = spark_mondrian._on_executors
    monkeypatch.setattr(spark_mondrian, "_on_executors", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    fresh = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, "2024"), open_keystore(), partition="2024")
    done = spark_engine.anonymize(spec, fresh, relax=False)
    assert calls == [1]
    assert published_rows(done.df.toPandas()[list(on_pandas.data.columns)]) == published_rows(on_pandas.data)
    assert done.record.to_json()["mondrian"] == on_pandas.record.to_json()["mondrian"]


def test_adult_by_sex_equals_the_pandas_engine(spark_engine, tmp_path, adult_dir):
    spec = adult_by_sex(tmp_path, adult_dir)
    pandas, spark, published = both(spark_engine, spec)
    assert pandas.record.mondrian.classes > 50
    assert_same(pandas, spark, published)


KEYS = st.sampled_from(PARTITION_KEYS)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(8, 40), seed=st.integers(0, 10**6), k=st.integers(2, 4),
       keys=st.lists(KEYS, min_size=2, max_size=3, unique=True), t=st.sampled_from([None, 0.45]))
def test_tiny_tables_alike(spark_engine, tmp_path_factory, n, seed, k, keys, t):
    """Nulls, empty strings, int and float partition keys, categories no row uses."""
    data, columns = tiny_discharges(n, seed, keys), TINY_COLUMNS
    thresholds = {"k": k, **({"t_closeness": t} if t else {})}
    spec = load_spec(write_release(tmp_path_factory.mktemp("tiny"), data=data, columns=columns,
                                   anonymization={"method": "mondrian", "k": k, "max_suppression": 0.5},
                                   policy={"thresholds": thresholds}))
    pandas, spark, published = both(spark_engine, spec)
    assert_same(pandas, spark, published)


def test_mondrian_with_suppression_cells_is_the_pandas_engines(spark_engine, tmp_path):
    """Cell suppression is global recoding's (Mondrian's classes reach k by its cuts, its small
    parts suppressed whole): the same labels, record and rows as on pandas, with either setting."""
    runs = {}
    for suppression in ("rows", "cells"):
        folder = tmp_path / suppression
        folder.mkdir()
        spec = load_spec(write_release(folder, anonymization={"method": "mondrian", "k": 4, "max_suppression": 0.05,
                                                              "suppression": suppression},
                                       policy={"thresholds": {"k": 4}}))
        pandas, spark, published = both(spark_engine, spec)
        assert_same(pandas, spark, published)
        assert spark.record.parameters.suppression == pandas.record.parameters.suppression == suppression
        runs[suppression] = published_rows(publishable_view(pandas.data))
    assert runs["cells"] == runs["rows"]
