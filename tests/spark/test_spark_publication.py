"""The Spark engine's published rows (anon_dagster.engine.spark_publication): written by Spark,
streamed into the target one row group at a time, the file a reader gets equal to the one the
pandas engine writes from the same rows, in the rows' source order; and no driver budget stops
a publication any more."""

from __future__ import annotations

import hashlib
import io

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.byte_sink import ByteSink
from anon_dagster.engine.spark_frames import ROW_COLUMN
from anon_dagster.engine.spark_publication import (
    all_groups,
    copy_parts,
    ordered_groups,
    reader_dtypes,
    spark_rows,
)
from anon_dagster.release.published_rows import table_bytes

pytestmark = pytest.mark.usefixtures("spark")


def written(rows, name: str) -> tuple[bytes, str]:
    chunks: list[bytes] = []
    sink = ByteSink(lambda view: chunks.append(bytes(view)))
    rows.write(sink, name)
    data = b"".join(chunks)
    assert sink.sha256() == hashlib.sha256(data).hexdigest() and sink.size == len(data)
    return data, sink.sha256()


def whole(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows as the pandas engine's file of record reads them: through one Arrow table."""
    return pa.Table.from_pandas(frame, preserve_index=False).to_pandas()


def test_the_rows_come_out_in_source_order_from_many_part_files(spark_engine, spark, tmp_path):
    n = 40
    frame = pd.DataFrame({"age": [f"{i % 7 * 10}-{i % 7 * 10 + 9}" for i in range(n)],
                          "count": list(range(n)), ROW_COLUMN: list(range(n))[::-1]})
    df = spark.createDataFrame(frame).repartition(5)  # rows scattered over five parts
    rows = spark_rows(spark_engine, df, ["age", "count"], n)
    data, _ = written(rows, "out.parquet")
    got = pd.read_parquet(io.BytesIO(data))
    expected = frame.sort_values(ROW_COLUMN)[["age", "count"]].reset_index(drop=True)
    pd.testing.assert_frame_equal(got, whole(expected))
    assert rows.columns == [("age", str(got["age"].dtype)), ("count", "int64")]
    assert not list(spark_engine.scratch.glob("publish-*"))  # the part files are removed
    csv, _ = written(rows, "out.csv")
    assert csv == table_bytes(whole(expected), "out.csv")


def test_parts_holding_the_sources_order_are_taken_as_they_are(spark_engine, spark, monkeypatch):
    """Positions in contiguous ranges per part (the order a table keeps without a shuffle): the
    row groups taken by their smallest position give the source order, with no global sort."""
    from pyspark.sql import DataFrame

    n = 60
    frame = pd.DataFrame({"v": [f"r{i}" for i in range(n)], ROW_COLUMN: range(n)})
    df = spark.createDataFrame(frame).repartitionByRange(4, ROW_COLUMN)
    sorts = []
    real = DataFrame.orderBy
    monkeypatch.setattr(DataFrame, "orderBy", lambda self, *a, **k: sorts.append(a) or real(self, *a, **k))
    data, _ = written(spark_rows(spark_engine, df, ["v"], n), "t.parquet")
    assert pd.read_parquet(io.BytesIO(data))["v"].tolist() == frame["v"].tolist()
    assert sorts == []


def test_row_groups_are_ordered_by_position_only_when_their_ranges_are_disjoint(tmp_path):
    def part(name, positions):
        path = tmp_path / name
        pq.write_table(pa.table({ROW_COLUMN: pa.array(positions, type=pa.int64())}), path, row_group_size=2)
        return path

    later, earlier = part("part-00000.parquet", [10, 11, 12]), part("part-00001.parquet", [0, 1, 5])
    assert ordered_groups([later, earlier]) == [(earlier, 0), (earlier, 1), (later, 0), (later, 1)]
    mixed = part("part-00002.parquet", [4, 6])  # 4..6 overlaps 5
    assert ordered_groups([later, earlier, mixed]) is None
    touching = part("part-00003.parquet", [12, 13])  # a position twice: not disjoint
    assert ordered_groups([later, touching]) is None


def test_no_driver_budget_stops_the_published_rows(spark, tmp_path):
    from anon_dagster.engine.spark_engine import SparkEngine

    engine = SparkEngine(spark, max_driver_cells=1, scratch_dir=tmp_path / "scratch")
    frame = pd.DataFrame({"a": list("abcdef"), ROW_COLUMN: range(6)})
    data, _ = written(spark_rows(engine, spark.createDataFrame(frame), ["a"], 6), "t.parquet")
    assert pd.read_parquet(io.BytesIO(data))["a"].tolist() == list("abcdef")


def test_an_empty_table_is_a_file_with_its_columns(spark_engine, spark):
    schema = "a string, b long, __row long"
    df = spark.createDataFrame([], schema)
    csv, _ = written(spark_rows(spark_engine, df, ["a", "b"], 0), "t.csv")
    assert csv == b"a,b\n"
    data, _ = written(spark_rows(spark_engine, df, ["a", "b"], 0), "t.parquet")
    got = pd.read_parquet(io.BytesIO(data))
    assert list(got.columns) == ["a", "b"] and len(got) == 0


def part_files(tmp_path, table: pa.Table, sizes: list[int], row_group: int) -> list:
    """``table`` cut into part files of ``sizes`` rows, each in row groups of ``row_group`` rows."""
    files, start = [], 0
    for i, size in enumerate(sizes):
        path = tmp_path / f"part-{i:05d}.parquet"
        pq.write_table(table.slice(start, size), path, row_group_size=max(row_group, 1))
        files.append(path)
        start += size
    return files


cells = st.one_of(st.none(), st.integers(-5, 5))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ints=st.lists(cells, min_size=1, max_size=30), seed=st.integers(0, 10**6),
       row_group=st.integers(1, 7), texts=st.sampled_from(["", "x", "a,b", 'q"uote', None]))
def test_row_groups_copied_one_at_a_time_give_the_whole_tables_file(tmp_path_factory, ints, seed, row_group, texts):
    """Integers with and without nulls in some row groups only (a whole-table float column),
    booleans, text with commas and quotes, missing text: the csv is byte for byte the one pandas
    writes from the whole table, the parquet reads back as it."""
    n = len(ints)
    rng = np.random.default_rng(seed)
    flags = [bool(v) if v is not None and v % 2 else (None if v is None else False) for v in ints]
    table = pa.table({"n": pa.array(ints, type=pa.int64()), "flag": pa.array(flags, type=pa.bool_()),
                      "label": pa.array([texts if i % 3 else f"v{i}" for i in range(n)], type=pa.string()),
                      "x": pa.array(rng.normal(size=n))})
    cut = sorted(rng.choice(np.arange(1, n), size=min(2, n - 1), replace=False).tolist()) if n > 1 else []
    sizes = [b - a for a, b in zip([0, *cut], [*cut, n], strict=True)]
    files = part_files(tmp_path_factory.mktemp("parts"), table, sizes, row_group)
    expected = table.to_pandas()
    names = ["label", "n", "flag", "x"]
    for name in ("t.csv", "t.parquet"):
        out = io.BytesIO()
        dtypes = copy_parts(all_groups(files), names, table.schema, ByteSink(out.write), name)
        data = out.getvalue()
        assert dtypes == {c: str(expected[c].dtype) for c in names}
        if name.endswith(".csv"):
            assert data == table_bytes(expected[names], name)
        else:
            pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(data)), expected[names])


def test_reader_dtypes_widen_only_for_nulls():
    schema = pa.schema([("i", pa.int32()), ("b", pa.bool_()), ("s", pa.string()), ("f", pa.float64())])
    plain = reader_dtypes(schema, {})
    assert plain["i"] == "int32" and plain["b"] == "bool" and plain["f"] == "float64"
    nulls = reader_dtypes(schema, {"i": 1, "b": 2, "s": 3, "f": 1})
    assert nulls["i"] == "float64" and nulls["b"] == "object" and nulls["s"] == plain["s"] and nulls["f"] == "float64"
