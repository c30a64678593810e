"""A parquet source on object storage (``s3://``, ``gs://``, ``az://``, ``abfs[s]://``) read by
the executors through ``pyarrow.fs``, without a Hadoop connector.

Spark reads object storage through Hadoop file systems (``s3a://`` with the hadoop-aws jars,
EMRFS, the GCS connector, ...), which a session may or may not have, each with its own scheme
and configuration (its credentials in Spark's configuration, which Spark writes to the event
log). The pandas engine reads the same locations through :mod:`anon_dagster.objectstore`. So
the Spark engine reads them the same way, on the executors:

- the driver reads the object's parquet footer (the schema and each row group's rows: metadata
  only) and makes one task per row group;
- each task opens the store with :func:`anon_dagster.objectstore.filesystem`, configured from
  the environment of the executor's Python worker (the AWS SDK's chain: instance roles and
  profiles, or the variables set when the session started; GCS and Azure likewise), reads its
  row group and hands it to Spark as Arrow batches (``mapInArrow``). Credentials never enter
  Spark's configuration, a task's closure or a query plan: the closure holds the location and
  the row groups, nothing else;
- each row keeps its position, as a local file's rows do (:func:`~.spark_frames.read_parquet`):
  its index in the object (the row group's first row plus its index in the group).

Types are what Spark makes of the same file: timestamps in microseconds (Spark has no finer
unit; nanoseconds floored as the local reader floors them), dictionary-encoded columns as their
values, unsigned integers widened; a column of unsigned 64-bit integers is refused (Spark has no
type that holds every one). The pandas index
a file may carry is left out.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import DataError
from .spark_frames import ROW_COLUMN, is_pandas_index

WIDER = {pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64()}


def spark_type(field: pa.Field, source: str) -> pa.DataType:
    """The Arrow type a column is handed to Spark as (module docstring)."""
    kind = field.type
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if pa.types.is_large_string(kind):
        return pa.string()
    if pa.types.is_large_binary(kind):
        return pa.binary()
    if pa.types.is_timestamp(kind):  # Spark's unit; an instant in UTC, as Spark holds it
        return pa.timestamp("us", tz="UTC" if kind.tz else None)
    if kind == pa.uint64():
        raise DataError(f"{source}: column {field.name!r} holds unsigned 64-bit integers, which Spark has no type "
                        "for: store them as signed integers or text")
    return WIDER.get(kind, kind)


def object_schema(schema: pa.Schema, source: str) -> pa.Schema:
    """The schema of the rows handed to Spark: the file's columns (its pandas index left out)
    as :func:`spark_type`, then each row's position (:data:`ROW_COLUMN`)."""
    fields = [pa.field(f.name, spark_type(f, source)) for f in schema if not is_pandas_index(f.name)]
    return pa.schema([*fields, pa.field(ROW_COLUMN, pa.int64())])


def row_group_tasks(location: Any) -> tuple[pa.Schema, list[tuple[int, int]]]:
    """The object's schema and its row groups as (group, first row), from its footer."""
    import pyarrow.parquet as pq

    from ..objectstore import LocationError, describe, filesystem

    try:
        with filesystem(location).open_input_file(location.fs_path) as handle:
            parquet = pq.ParquetFile(handle)
            meta, schema = parquet.metadata, parquet.schema_arrow
    except FileNotFoundError:
        raise DataError(f"{location}: no such object") from None
    except LocationError as exc:
        raise DataError(str(exc)) from None
    except (OSError, pa.ArrowException) as exc:
        raise DataError(f"{location}: cannot read as parquet: {describe(exc)}") from None
    firsts = np.concatenate([[0], np.cumsum([meta.row_group(i).num_rows for i in range(meta.num_row_groups)])])
    return schema, [(i, int(firsts[i])) for i in range(meta.num_row_groups)]


def as_spark(column: pa.ChunkedArray, kind: pa.DataType) -> pa.Array:
    """``column`` as ``kind`` (:func:`spark_type`); nanoseconds floored to microseconds, as the
    local reader floors them (``floor(ns / 1000)``, also before 1970)."""
    column = column.combine_chunks()
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    if pa.types.is_timestamp(column.type) and column.type.unit == "ns":
        ticks = column.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        column = pa.array(np.floor_divide(ticks, 1000), type=pa.int64(), mask=column.is_null().to_numpy(
            zero_copy_only=False)).cast(pa.timestamp("us", tz=column.type.tz))
    return column.cast(kind)


def read_groups(uri: str, schema: pa.Schema) -> Any:
    """The function each task runs: the row groups its input batches name, read from ``uri``
    and converted to ``schema``. Its closure, which Spark ships to the tasks, holds the location
    and the schema only: the store is opened from the task's own environment."""

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow.parquet as pq

        from ..objectstore import ObjectPath, filesystem

        location = ObjectPath.parse(uri)
        names = [f.name for f in schema if f.name != ROW_COLUMN]
        with filesystem(location).open_input_file(location.fs_path) as handle:
            parquet = pq.ParquetFile(handle)
            for batch in batches:
                for group, first in zip(batch.column("group").to_pylist(), batch.column("first").to_pylist(),
                                        strict=True):
                    table = parquet.read_row_group(group, columns=names)
                    arrays = [as_spark(table.column(n), schema.field(n).type) for n in names]
                    arrays.append(pa.array(np.arange(first, first + table.num_rows, dtype=np.int64)))
                    yield from pa.Table.from_arrays(arrays, schema=schema).to_batches()

    return read


def read_object_parquet(spark: Any, location: Any) -> Any:
    """The parquet object at ``location`` (an :class:`~anon_dagster.objectstore.ObjectPath`) as a
    Spark DataFrame with each row's position (:data:`ROW_COLUMN`), read by the executors."""
    from pyspark.sql.pandas.types import from_arrow_schema

    schema, tasks = row_group_tasks(location)
    out = object_schema(schema, str(location))
    rows = pa.table({"group": pa.array([g for g, _ in tasks], pa.int32()),
                     "first": pa.array([f for _, f in tasks], pa.int64())})
    plan = spark.createDataFrame(rows).repartition(max(len(tasks), 1))  # one task per row group
    return plan.mapInArrow(read_groups(str(location), out), from_arrow_schema(out))


__all__ = ["as_spark", "object_schema", "read_object_parquet", "row_group_tasks", "spark_type"]
