"""The driver's reads that spare passes over the rows: a frequency table read once per DataFrame,
a coarser one rolled up on the driver, the digest counted with the table's size."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from anon_dagster.engine import spark_session
from anon_dagster.engine.spark_frames import COUNT_COLUMN, FIRST_COLUMN, ROW_COLUMN
from anon_dagster.engine.spark_session import rolled_up


def test_a_table_is_rolled_up_with_counts_summed_and_the_earliest_first_row():
    table = pa.table({"a": pa.array(["x", None, "x", None, "y"]), "b": pa.array([1, 2, 3, None, 1]),
                      COUNT_COLUMN: pa.array([1, 2, 3, 4, 5], pa.int64()),
                      FIRST_COLUMN: pa.array([5, 1, 7, 3, 0], pa.int64())})
    got = rolled_up(table, ["a"]).to_pandas().sort_values(FIRST_COLUMN).reset_index(drop=True)
    # missing values one group, as Spark groups them
    assert got["a"].isna().tolist() == [False, True, False] and got["a"].dropna().tolist() == ["y", "x"]
    assert got[COUNT_COLUMN].tolist() == [5, 6, 4]
    assert got[FIRST_COLUMN].tolist() == [0, 1, 5]
    assert rolled_up(table, ["a"]).schema.field(COUNT_COLUMN).type == pa.int64()


def test_floating_point_keys_and_tables_without_first_rows_are_not_rolled_up():
    table = pa.table({"a": pa.array([1.0, float("nan")]), "b": pa.array([1, 2]),
                      COUNT_COLUMN: pa.array([1, 1]), FIRST_COLUMN: pa.array([0, 1])})
    assert rolled_up(table, ["a"]) is None
    assert rolled_up(table.drop_columns([FIRST_COLUMN]), ["b"]) is None


@pytest.fixture
def rows(spark):
    frame = pd.DataFrame({"a": ["x", "y", "x", None, "y", "x"], "b": [1, 2, 1, 3, 4, 1],
                          "c": ["p", "q", "r", "s", "t", "u"], ROW_COLUMN: [10, 11, 12, 13, 14, 15]})
    return spark.createDataFrame(frame)


@pytest.fixture
def collects(monkeypatch):
    """The tables Spark writes for the driver, counted."""
    calls = []
    original = spark_session.collect

    def counted(*args, **kwargs):
        calls.append(kwargs.get("what"))
        return original(*args, **kwargs)

    monkeypatch.setattr(spark_session, "collect", counted)
    return calls


def test_a_frequency_table_asked_again_is_the_one_read_and_a_coarser_one_is_rolled_up(spark, rows, tmp_path,
                                                                                      collects):
    from anon_dagster.engine.spark_engine import SparkEngine

    engine = SparkEngine(spark, scratch_dir=tmp_path / "memo")
    fine, _ = engine.frequencies(rows, ["a", "b"])
    fine.loc[0, COUNT_COLUMN] = 99  # the caller's frame is its own
    again, _ = engine.frequencies(rows, ["a", "b"])
    coarse, schema = engine.frequencies(rows, ["a"])
    assert len(collects) == 1
    # each counted by Spark alone (an engine of its own)
    expected_fine, _ = SparkEngine(spark, scratch_dir=tmp_path / "fine").frequencies(rows, ["a", "b"])
    expected, expected_schema = SparkEngine(spark, scratch_dir=tmp_path / "coarse").frequencies(rows, ["a"])
    assert len(collects) == 3
    pd.testing.assert_frame_equal(again, expected_fine)
    pd.testing.assert_frame_equal(coarse, expected)
    assert coarse["a"].dropna().tolist() == ["x", "y"] and coarse[COUNT_COLUMN].tolist() == [3, 2, 1]
    assert schema.types == expected_schema.types
    # without first rows: rolled up too, its combinations in the order of their first rows
    plain, _ = engine.frequencies(rows, ["b"], first_row=False)
    assert len(collects) == 3
    assert plain["b"].tolist() == [1, 2, 3, 4] and plain[COUNT_COLUMN].tolist() == [3, 1, 1, 1]
    assert FIRST_COLUMN not in plain.columns
    # a DataFrame of which no table with first rows was read is counted by Spark
    engine.frequencies(rows.where("b > 0"), ["a"], first_row=False)
    assert len(collects) == 4
    engine.close()


def test_the_digest_counted_with_the_table_size_is_the_table_digest(spark, rows, tmp_path, monkeypatch):
    from anon_dagster.engine import spark_frames
    from anon_dagster.engine.spark_engine import SparkEngine

    expected = spark_frames.table_digest(rows, ["a", "b", "c"])
    engine = SparkEngine(spark, scratch_dir=tmp_path / "digest")
    engine.wants_digest(rows)
    assert engine.check_fits(rows, ["a"], what="t", ways_out="w") == 3
    monkeypatch.setattr(spark_session, "table_digest", lambda *a: pytest.fail("the digest was computed again"))
    assert engine.digest(rows) == expected
    other = rows.where("b > 1")  # not named: its size counted alone, its digest by its own pass
    assert engine.check_fits(other, ["a"], what="t", ways_out="w") == 2
    monkeypatch.undo()
    assert engine.digest(other) == spark_frames.table_digest(other, ["a", "b", "c"]) != expected
    engine.close()
