"""DP aggregates on Spark: contribution bounding and the groups counted by Spark, the noise drawn
on the driver by the pandas engine's sampler; the same published table as the pandas engine for
the same random source (hand-computed and hypothesis-generated frames)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.engine.base import UnsupportedOnEngine
from anon_dagster.engine.spark_aggregates import dp_aggregates as spark_dp
from anon_dagster.engine.spark_frames import read_parquet
from anon_dagster.errors import DataError
from anon_dagster.release.dp import AggregatesConfig, SumSpec, dp_aggregates

HUGE = 10**12  # an epsilon whose noise is 0 in every cell, for the hand-computed values


def on_spark(spark, frame: pd.DataFrame, folder: Path):
    """``frame`` as the Spark engine reads it: from parquet, with each row's position."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"t{random.randrange(10**9)}.parquet"
    frame.to_parquet(path, index=False)
    return read_parquet(spark, path)


def both(spark_engine, spark, frame: pd.DataFrame, config: AggregatesConfig, epsilon, seed: int, folder: Path):
    pandas = dp_aggregates(frame, config, epsilon, rng=random.Random(seed))
    sdf = on_spark(spark, frame, folder)
    return pandas, spark_dp(spark_engine, sdf, config, epsilon, rng=random.Random(seed))


def test_bounding_keeps_each_persons_first_rows_by_hand(spark_engine, spark, tmp_path):
    # person a has three rows, b two: with max_contributions 2 the third row of a (stay 50) is
    # dropped; cells F and M, and the declared domain's unused value X gets a zero cell
    frame = pd.DataFrame({"pid": ["a", "b", "a", "b", "a", "c"],
                          "sex": ["F", "M", "F", "M", "M", None],
                          "stay": [3, 4, 5.5, 7, 50, 1]})
    config = AggregatesConfig(group_by=("sex",), sums=(SumSpec("stay", 0, 10),), max_contributions=2,
                              person="pid", domain={"sex": ("F", "M", "X")})
    pandas, spark = both(spark_engine, spark, frame, config, HUGE, 0, tmp_path)
    # F: a's 3 and 5.5 (rounded half to even: 6) → count 2, sum 9; M: b's 4 and 7 → 2, 11
    assert spark.table.to_dict("list") == {"sex": ["F", "M", "X"], "count": [2, 2, 0], "sum_stay": [9, 11, 0]}
    pd.testing.assert_frame_equal(spark.table, pandas.table)
    assert (spark.rows_dropped_by_bound, spark.rows_outside_domain, spark.rows_used) == (1, 1, 4)
    assert spark.to_dict() == pandas.to_dict()


def test_the_same_noise_for_the_same_seed(spark_engine, spark, tmp_path):
    frame = pd.DataFrame({"pid": list("abcdabcd"), "g": list("xyxyxxyy"), "v": [1, 2, 3, 4, 5, 6, 7, 8]})
    config = AggregatesConfig(group_by=("g",), sums=(SumSpec("v", 0, 5),), person="pid")
    pandas, spark = both(spark_engine, spark, frame, config, "0.5", 7, tmp_path)
    pd.testing.assert_frame_equal(spark.table, pandas.table)
    other = dp_aggregates(frame, config, "0.5", rng=random.Random(8))
    assert not other.table.equals(pandas.table)  # the seed matters: the test compares draws


def test_missing_values_are_refused_as_pandas_refuses_them(spark_engine, spark, tmp_path):
    frame = pd.DataFrame({"pid": ["a", None], "g": ["x", "y"], "v": [1.0, np.nan]})
    config = AggregatesConfig(group_by=("g",), person="pid")
    with pytest.raises(DataError, match="'pid' has missing values"):
        spark_dp(spark_engine, on_spark(spark, frame, tmp_path), config, 1)
    config = AggregatesConfig(group_by=("g",), sums=(SumSpec("v", 0, 3),))
    with pytest.raises(DataError, match="'v' has missing or non-numeric values"):
        dp_aggregates(frame, config, 1, rng=random.Random(0))
    with pytest.raises(DataError, match="'v' has missing or non-numeric values"):
        spark_dp(spark_engine, on_spark(spark, frame, tmp_path), config, 1, rng=random.Random(0))


def test_a_sum_over_text_is_refused_in_one_line(spark_engine, spark, tmp_path):
    frame = pd.DataFrame({"g": ["x"], "v": ["3"]})
    config = AggregatesConfig(group_by=("g",), sums=(SumSpec("v", 0, 3),))
    with pytest.raises(UnsupportedOnEngine, match="column 'v' of type string"):
        spark_dp(spark_engine, on_spark(spark, frame, tmp_path), config, 1)


@st.composite
def frames(draw):
    n = draw(st.integers(0, 12))
    person = draw(st.lists(st.sampled_from(["p1", "p2", "p3", ""]), min_size=n, max_size=n))
    g = draw(st.lists(st.sampled_from(["x", "y", "", None]), min_size=n, max_size=n))
    h = draw(st.lists(st.sampled_from([1.0, 2.0, None]), min_size=n, max_size=n))
    v = draw(st.lists(st.sampled_from([-3.5, 0.5, 2.5, 7.0, 100.0, 1.5]), min_size=n, max_size=n))
    w = draw(st.lists(st.integers(-5, 20), min_size=n, max_size=n))
    frame = pd.DataFrame({"pid": pd.Series(person, dtype=object), "g": pd.Series(g, dtype=object),
                          "h": pd.Series(h, dtype="float64"), "v": pd.Series(v, dtype="float64"),
                          "w": pd.Series(w, dtype="int64")})
    group_by = draw(st.sampled_from([(), ("g",), ("h",), ("g", "h")]))
    domain = {"g": ("x", "y", "unused")} if "g" in group_by and draw(st.booleans()) else None
    config = AggregatesConfig(group_by=group_by, count=draw(st.booleans()),
                              sums=(SumSpec("v", 0, 10), SumSpec("w", -2, 9)),
                              max_contributions=draw(st.integers(1, 3)),
                              person="pid" if draw(st.booleans()) else None, domain=domain,
                              clamp_negative=draw(st.booleans()))
    return frame, config, draw(st.integers(0, 2**16))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(frames())
def test_both_engines_publish_the_same_aggregates(spark_engine, spark, tmp_path, case):
    frame, config, seed = case
    pandas, spark_result = both(spark_engine, spark, frame, config, "0.7", seed, tmp_path / "h")
    pd.testing.assert_frame_equal(spark_result.table, pandas.table)
    assert spark_result.to_dict() == pandas.to_dict()


@pytest.mark.usefixtures("master_key")
def test_a_release_of_aggregates_gives_the_same_gate_and_table_on_both_engines(spark_engine, tmp_path):
    from anon_dagster.engine.spark_aggregates import dp_release as spark_release
    from anon_dagster.pseudonymize import open_keystore
    from anon_dagster.release import pipeline
    from anon_dagster.release.gate import publishable_view
    from anon_dagster.release.publish import dp_release
    from anon_dagster.spec import load_spec
    from tests.support.ledgers import new_ledger
    from tests.support.spark_releases import aggregates_release

    spec = load_spec(aggregates_release(tmp_path, total_epsilon=1.0))
    ledger = new_ledger(tmp_path / "l.sqlite")
    keystore = open_keystore()
    pandas = pipeline.run_gate(spec, partition="2024", keystore=keystore, ledger=ledger)
    spark = spark_engine.run_gate(spec, partition="2024", keystore=keystore, ledger=ledger)
    assert [c.name for c in spark.evaluation.checks] == [c.name for c in pandas.evaluation.checks] == ["epsilon_budget"]
    assert spark.evaluation.checks[0] == pandas.evaluation.checks[0]
    assert spark.evaluation.checks[0].passed
    mine, info = dp_release(spec, publishable_view(pandas.pseudonymized.data), ledger, rng=random.Random(3))
    theirs, spark_info = spark_release(spark_engine, spec, spark.pseudonymized.df, ledger, rng=random.Random(3))
    pd.testing.assert_frame_equal(theirs.table, mine.table)
    assert spark_info == info
    assert info["rows_dropped_by_contribution_bound"] > 0 and info["cells"] == 9
