"""The Spark side of the Spark engine: the session, reading sources, collecting frequency tables,
applying label maps and suppression, and digests of tables that stay on Spark.

What reaches the driver is always an aggregate: a frequency table (``groupBy(columns).count()``
and each combination's first row), written by Spark as parquet into a scratch folder, read with
pyarrow and removed at once (``toArrow()`` of a large result would build it in the driver's JVM
and again in Python). A frequency table larger than the engine's ``max_driver_cells`` is refused
before it is read, naming its size and the ways out.

Rows keep their position in the source as the column :data:`ROW_COLUMN` (the file's rank among
the source's files, then ``_metadata.row_index``): the first row of each combination numbers the
classes as the pandas engine numbers them (:mod:`anon_dagster.risk.frequencies`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import DataError, SecretError, UserError
from ..pseudonymize.keystore.base import (
    ENV_KEYSTORE,
    ENV_MASTER_KEY,
    ENV_PASSPHRASE,
    ENV_VAULT_KEY,
)

ROW_COLUMN = "__row"
FIRST_COLUMN = "__first"
COUNT_COLUMN = "count"
# a row's position: the file's rank times this, plus its index in the file
FILE_STRIDE = 1 << 40
DEFAULT_MAX_DRIVER_CELLS = 50_000_000
# the most frequency cells (rows x columns) one executor is handed to cut a Mondrian part
DEFAULT_MAX_WORKER_CELLS = 20_000_000
KEY_VARIABLES = (ENV_MASTER_KEY, ENV_PASSPHRASE, ENV_KEYSTORE, ENV_VAULT_KEY, "VAULT_TOKEN")
_PANDAS_INDEX = re.compile(r"^__index_level_\d+__$")


class DriverLimit(UserError):
    """A frequency table too large for the driver (see :func:`collect`)."""


def start_session(master: str, app_name: str = "anon_dagster", conf: dict[str, str] | None = None) -> Any:
    """A SparkSession on ``master`` for the engine: no UI and no console progress, UTC session time,
    few shuffle partitions on a local master, key-store variables redacted in whatever Spark shows.

    The executors' Python is this interpreter unless ``PYSPARK_PYTHON`` says otherwise (they run
    the project's functions, so they need its environment).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.redaction.regex", "(?i)secret|password|token|access[.]?key|anon_dagster|passphrase"))
    if master.startswith("local"):
        builder = builder.config("spark.sql.shuffle.partitions", "8")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    check_session(spark)
    return spark


def check_session(spark: Any) -> None:
    """Refuse a session whose configuration carries a key-store variable (``spark.executorEnv.*``
    and the like are configuration, which Spark writes to its event log)."""
    for key, _ in spark.sparkContext.getConf().getAll():
        if any(var.lower() in key.lower() for var in KEY_VARIABLES):
            raise SecretError(
                f"the Spark configuration names the key-store variable in {key!r}: Spark writes its "
                "configuration to the event log; give the executors the key store through their "
                "environment instead (docs/scale.md)")


def is_pandas_index(name: str) -> bool:
    return bool(_PANDAS_INDEX.match(name))


def arrow_schema(path: Path) -> pa.Schema:
    """The schema of a parquet file or folder (metadata only)."""
    if path.is_dir():
        import pyarrow.dataset as ds

        return ds.dataset(path, format="parquet").schema
    return pq.read_schema(path)


def read_parquet(spark: Any, path: Path) -> Any:
    """A parquet file or folder as a Spark DataFrame with each row's position (:data:`ROW_COLUMN`).

    Nanosecond timestamps (pandas' default) are read as microseconds (Spark has no finer unit),
    without a time zone when the file has none; the pandas index a file may carry is left out.
    """
    from pyspark.sql import functions as F

    schema = arrow_schema(path)
    nanos = [f.name for f in schema if pa.types.is_timestamp(f.type) and f.type.unit == "ns"]
    previous = spark.conf.get("spark.sql.legacy.parquet.nanosAsLong", "false")
    if nanos:
        spark.conf.set("spark.sql.legacy.parquet.nanosAsLong", "true")
    try:
        df = spark.read.parquet(str(path))
        files = sorted(r[0] for r in df.select(F.col("_metadata.file_path")).distinct().collect())
    finally:
        spark.conf.set("spark.sql.legacy.parquet.nanosAsLong", previous)
    rank = F.lit(0)
    if len(files) > 1:
        ranks = F.create_map(*[x for i, f in enumerate(files) for x in (F.lit(f), F.lit(i))])
        rank = ranks[F.col("_metadata.file_path")]
    position = rank.cast("long") * F.lit(FILE_STRIDE) + F.col("_metadata.row_index")
    columns = []
    for field in schema:
        if is_pandas_index(field.name):
            continue
        col = F.col(f"`{field.name}`")
        if field.name in nanos:
            col = F.timestamp_micros(F.floor(col / 1000))
            col = col.cast("timestamp_ntz") if field.type.tz is None else col
        columns.append(col.alias(field.name))
    return df.select(*columns, position.alias(ROW_COLUMN))


def frequency_frame(df: Any, columns: Sequence[str], *, first_row: bool = True) -> Any:
    """``groupBy(columns)`` with each combination's rows (:data:`COUNT_COLUMN`) and, with
    ``first_row``, its first row's position (:data:`FIRST_COLUMN`). Missing values group together."""
    from pyspark.sql import functions as F

    aggregates = [F.count(F.lit(1)).alias(COUNT_COLUMN)]
    if first_row and ROW_COLUMN in df.columns:
        aggregates.append(F.min(ROW_COLUMN).alias(FIRST_COLUMN))
    if not columns:
        return df.agg(*aggregates)
    return df.groupBy(*[f"`{c}`" for c in columns]).agg(*aggregates)


def collect(df: Any, *, scratch: Path, max_cells: int, what: str) -> pa.Table:
    """A small Spark result on the driver: written as parquet under ``scratch`` by Spark, its size
    read from the files' metadata and refused when over ``max_cells`` (rows × columns), then read
    with pyarrow; the files are removed either way."""
    folder = scratch / f"collect-{uuid.uuid4().hex}"
    try:
        df.write.mode("overwrite").parquet(str(folder))
        files = sorted(folder.glob("*.parquet"))
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        cells = rows * max(len(df.columns), 1)
        if cells > max_cells:
            raise DriverLimit(
                f"{what} has {rows:,} rows x {len(df.columns)} columns = {cells:,} cells, more than the "
                f"Spark engine holds on the driver (max_driver_cells={max_cells:,}): generalize the "
                "quasi-identifiers in the source (coarser level-0 values: dates to days, ages to "
                "years), declare fewer quasi-identifiers, split the release into partitions, or raise "
                "max_driver_cells (SparkEngine(max_driver_cells=...)) on a driver with the memory for it")
        if not files:
            return pa.table({c: pa.array([], type=pa.null()) for c in df.columns})
        return pq.read_table(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def to_pandas(table: pa.Table) -> pd.DataFrame:
    """An Arrow table as the pandas engine reads a parquet file (``Table.to_pandas()``)."""
    return table.to_pandas()


def as_categoricals(table: pd.DataFrame, categories: dict[str, list[object]]) -> pd.DataFrame:
    """``table`` with the columns generalized above level 0 as the pandas engine holds them:
    categoricals of ``categories`` (each column's labels in the pandas engine's order)."""
    if not categories:
        return table
    table = table.copy()
    for name, cats in categories.items():
        if name in table.columns:
            table[name] = pd.Categorical(table[name], categories=pd.Index(cats, dtype=object))
    return table


def scratch_folder(scratch_dir: str | Path | None) -> Path:
    """The folder frequency tables are collected through (a fresh one under the system's
    temporary folder by default: a local master only; on a cluster, a folder the driver and the
    executors share)."""
    if scratch_dir is not None:
        folder = Path(scratch_dir)
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    return Path(tempfile.mkdtemp(prefix="anon-dagster-spark-"))


def arrow_values(values: Sequence[object], kind: pa.DataType) -> pa.Array:
    """Values read back from a collected table, in the Arrow type they were collected as."""
    series = pd.Series(list(values), dtype=object)
    return pa.array(series, type=kind, from_pandas=True)


def lookup_frame(spark: Any, columns: dict[str, pa.Array], casts: dict[str, Any]) -> Any:
    """A small Spark DataFrame of Arrow columns (a label map, the keys of failing classes), each
    cast to the Spark type ``casts`` gives (the source column's)."""
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(pa.table(columns))
    return frame.select(*[(F.col(f"`{c}`").cast(casts[c]) if c in casts else F.col(f"`{c}`")).alias(c)
                          for c in columns])


def null_safe(left: Any, right: Any, columns: Sequence[tuple[str, str]]) -> Any:
    """The join condition: each ``(left column, right column)`` equal, missing equal to missing."""
    condition = None
    for a, b in columns:
        part = left[f"`{a}`"].eqNullSafe(right[f"`{b}`"])
        condition = part if condition is None else condition & part
    return condition


def row_hash(columns: Sequence[str]) -> Any:
    """Each row's 64-bit hash over ``columns`` (``xxhash64`` of the row as JSON, missing values
    written as null) as an exact decimal, which :func:`table_digest` sums (0 without columns)."""
    from pyspark.sql import functions as F

    if not columns:
        return F.lit(0).cast("decimal(38,0)")
    row = F.to_json(F.struct(*[F.col(f"`{c}`") for c in columns]), {"ignoreNullFields": "false"})
    return F.xxhash64(row).cast("decimal(38,0)")


def digest_value(columns: Sequence[str], rows: int, summed: int | None) -> str:
    """:func:`table_digest` from its parts: the column names, the row count and the sum of the
    rows' :func:`row_hash` (summed in one aggregation or in groups then added: the same integer)."""
    digest = hashlib.sha256()
    digest.update("\0".join(columns).encode())
    digest.update(f"|{int(rows)}|{int(summed or 0)}".encode())
    return "spark:" + digest.hexdigest()


def table_digest(df: Any, columns: Sequence[str]) -> str:
    """A SHA-256 of the rows of ``df`` over ``columns``, computed on Spark: the column names, the
    row count and the sum of each row's 64-bit hash (:func:`row_hash`). Blind to row order, unlike
    the pandas engine's table hashes."""
    from pyspark.sql import functions as F

    columns = list(columns)
    got = df.agg(F.count(F.lit(1)).alias("n"), F.sum(row_hash(columns)).alias("h")).collect()[0]
    return digest_value(columns, got["n"], got["h"])


def weighted_breakdown(freq: pd.DataFrame, mask: np.ndarray, counts: np.ndarray, columns: Sequence[str],
                       limit: int) -> list[dict]:
    """:func:`~anon_dagster.anonymize.record.breakdown` from a frequency table: the rows of
    ``mask`` (frequency rows, each ``counts`` rows of the table) per combination of ``columns``."""
    from ..hierarchies import _as_label

    columns = list(columns)
    if not columns or not mask.any():
        return []
    plain = pd.DataFrame({c: freq[c].astype(object) for c in columns})
    plain["__n"] = counts
    totals = plain.groupby(columns, dropna=False, sort=False)["__n"].sum()
    chosen = plain[mask].groupby(columns, dropna=False, sort=False)["__n"].sum()
    chosen = chosen.sort_values(ascending=False).head(limit)
    out = []
    for group, count in chosen.items():
        values = group if isinstance(group, tuple) else (group,)
        total = int(totals.get(values if len(values) > 1 else values[0], 0))
        out.append({**{c: _as_label(v) for c, v in zip(columns, values, strict=True)},
                    "suppressed": int(count), "rows": total, "share": round(int(count) / total, 6) if total else None})
    return out


def method_columns(spec: Any, df: Any) -> tuple[Any, list[str], list[str], list[str], list[str]]:
    """What a per-part method (Mondrian, MDAV) works on: the spec's policy, its generalized QIs,
    partition keys, sensitive attributes (when the policy needs them) and the utility queries'
    group-by columns; a declared column missing from ``df`` is a DataError naming it."""
    from ..anonymize.criteria import Policy

    policy = Policy.from_spec(spec)
    gen, pks = list(spec.generalized_qis), list(spec.partition_keys)
    sens = list(policy.sensitive) if policy.needs_sensitive else []
    absent = [c for c in gen + pks + sens if c not in df.columns]
    if absent:
        raise DataError(f"{spec.label}: column {absent[0]!r} is declared but missing from the data")
    return policy, gen, pks, sens, [c for q in spec.utility_queries for c in q.group_by if c in df.columns]


def missing_file(path: Path) -> DataError:
    return DataError(f"{path}: no such file")


__all__ = [
    "COUNT_COLUMN", "DEFAULT_MAX_DRIVER_CELLS", "DEFAULT_MAX_WORKER_CELLS", "FILE_STRIDE", "FIRST_COLUMN", "ROW_COLUMN", "DriverLimit",
    "arrow_schema", "arrow_values", "check_session", "collect", "frequency_frame", "lookup_frame",
    "as_categoricals", "digest_value", "null_safe", "read_parquet", "row_hash", "scratch_folder", "start_session", "table_digest",
    "to_pandas",
    "weighted_breakdown",
]


INTERNAL_PREFIXES = ("__",)


def internal(name: str) -> bool:
    """A column the pipeline carries on Spark and never publishes (positions, linkage, counts)."""
    return name.startswith(INTERNAL_PREFIXES)


def published_columns(df: Any) -> list[str]:
    """The columns of a Spark DataFrame that are published (every one but the internal ones)."""
    return [c for c in df.columns if not internal(c)]

