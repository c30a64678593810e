"""The sources the Spark engine reads besides parquet files: a table of the session's catalog
(``source.table``, read with ``spark.table(name)``) and a Delta table's folder (``source.format:
delta``, read with ``format("delta")``).

A parquet source gives each row its position in the files (:func:`.spark_frames.read_parquet`).
A catalog or Delta table has no row order to keep (its files, their order and its partitioning
are the storage's business), so each row is given a position derived from its contents instead
(:func:`content_positions`): the same rows give the same positions, whatever files hold them and
in whatever order Spark reads them. The position orders what the pipeline takes "first": the row
that numbers a class, MDAV's ties, the rows a person keeps under contribution bounding.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import DataError, UserError
from .spark_frames import ROW_COLUMN

# a position: the row's bucket (the high bits of its contents' xxhash64) times 2**RANK_BITS, plus
# its rank in the bucket ordered by every column: unique while a bucket holds < 2**31 rows
BUCKET_BITS = 32
RANK_BITS = 31


def content_positions(df: Any) -> Any:
    """``df`` with :data:`~.spark_frames.ROW_COLUMN`: each row's position, from its contents.

    The position is ``bucket * 2**31 + rank``: ``bucket`` is the top 32 bits of ``xxhash64`` of
    the row's values (every column, in the table's column order), ``rank`` the row's 0-based rank
    among the rows of its bucket ordered by every column, ascending, missing values first. Rows
    that tie in that order are equal in every column, so which of them takes which rank changes
    nothing: the positions are a function of the rows alone. Computed by a window partitioned by
    the bucket (one shuffle of the table, spread over the executors), whenever a step reads them;
    given the partition's rows, so that a partitioned release never ranks the whole table.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    columns = [F.col(f"`{c}`") for c in df.columns]
    bucket = F.shiftrightunsigned(F.xxhash64(*columns), 64 - BUCKET_BITS)
    rank = F.row_number().over(Window.partitionBy(bucket).orderBy(*[c.asc_nulls_first() for c in columns])) - 1
    return df.withColumn(ROW_COLUMN, bucket * F.lit(1 << RANK_BITS) + rank.cast("long"))


def read_catalog_table(spark: Any, spec: Any) -> Any:
    """The rows of ``source.table`` (``spark.table``), without positions yet (:func:`content_positions`,
    once the partition's rows are chosen). A name the session's catalog does not know is a
    DataError naming the spec, the key and the table."""
    name = spec.source.table
    try:
        df = spark.table(name)
    except Exception as exc:
        if _error_class(exc) in ("TABLE_OR_VIEW_NOT_FOUND", "SCHEMA_NOT_FOUND", "REQUIRES_SINGLE_PART_NAMESPACE") \
                or "not found" in str(exc).lower():
            raise DataError(f"{spec.label}: source.table {name!r}: no such table or view in the Spark session's "
                            "catalog (register it, or check the name and its database)") from None
        raise
    _check_columns(df, spec.source.described)
    return df


def read_delta(spark: Any, path: Path) -> Any:
    """The rows of the Delta table in the folder ``path`` (``format("delta")``), without positions
    yet (as :func:`read_catalog_table`). A session without a Delta reader is a UserError saying
    what it needs."""
    try:
        df = spark.read.format("delta").load(str(path))
    except Exception as exc:
        # the session's answer for a format no jar provides (a Py4J error, without an error class)
        if _error_class(exc) == "DATA_SOURCE_NOT_FOUND" or "DATA_SOURCE_NOT_FOUND" in str(exc) \
                or "data source: delta" in str(exc).lower():
            raise UserError(f"{path}: source.format delta needs a Spark session with Delta Lake (delta-spark) "
                            "configured: the delta-spark package and jars, spark.sql.extensions="
                            "io.delta.sql.DeltaSparkSessionExtension and spark.sql.catalog.spark_catalog="
                            "org.apache.spark.sql.delta.catalog.DeltaCatalog") from None
        raise
    _check_columns(df, str(path))
    return df


def _check_columns(df: Any, source: str) -> None:
    # a column called like the position would be overwritten by it
    if ROW_COLUMN in df.columns:
        raise DataError(f"{source}: column {ROW_COLUMN!r} is reserved for the rows' positions: rename it")


def _error_class(exc: Exception) -> str | None:
    get = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    try:
        return get() if get is not None else None
    except Exception:  # an error without a class
        return None


__all__ = ["BUCKET_BITS", "RANK_BITS", "content_positions", "read_catalog_table", "read_delta"]
