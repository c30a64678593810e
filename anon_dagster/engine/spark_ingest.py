"""The Spark engine's first two steps, as the pandas pipeline's ingest and pseudonymize
(:mod:`anon_dagster.release.pipeline`): the source read by Spark (parquet files, a Delta table's
folder or a table of the session's catalog: :mod:`.spark_sources`), the partition's
window filtered there and the spec checked against the schema and the hierarchies against each
column's distinct values; then the identifiers pseudonymized by ``mapInArrow`` calling the
project's keyed functions, keys re-derived on the executors (:mod:`.spark_pseudonyms`)."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DataError
from .base import UnsupportedOnEngine
from .spark_erasure import drop_erased
from .spark_frames import ROW_COLUMN, published_columns, read_parquet
from .spark_pseudonyms import DISTINCT_PREFIX
from .spark_results import SparkIngested, SparkPseudonymized
from .spark_session import SparkDriver, executor_errors


def read(engine: SparkDriver, spec: Any, partition: str | None, input_path: str | None, *, frame: Any = None,
         one_partition: bool = False, described: str | None = None) -> tuple[Any, Path | str]:
    """The partition's rows of ``input_path`` or the spec's source, identifiers as text, and what
    they were read from: a parquet file or folder, a parquet object on object storage (read by
    the executors: :mod:`.spark_objects`), a Delta table's folder (``source.format: delta``), a
    table of the session's catalog (``source.table``: its description, ``the catalog table
    'db.t'``), or ``frame``, a Spark DataFrame a Dagster asset gave
    (``source.asset``: read as a catalog table is). Rows keep their position (:mod:`.spark_sources`
    for the tables). ``one_partition``: the table is the partition's own, so a row outside its
    window is refused; ``described`` names the rows in errors instead of ``input_path``."""
    from pyspark.sql import functions as F

    from ..objectstore import ObjectPath, location
    from ..partitions import (
        check_partition,
        partition_format,
        partition_window,
        source_path,
        text_columns,
    )
    from .spark_dates import in_window, read_text_dates, stored_as_text
    from .spark_sources import content_positions, read_catalog_table

    check_partition(spec, partition)
    path: Path | str
    if frame is not None:
        path = spec.source.described
        df = frame
    elif input_path is None and spec.source.table is not None:
        path = spec.source.described
        df = read_catalog_table(engine.spark, spec)
    else:
        path = location(input_path) if input_path is not None else source_path(spec, partition)
        if isinstance(path, ObjectPath):
            df = _object_source(engine, spec, path, input_path)
        elif not path.exists():
            raise DataError(f"{path}: no such file")
        else:
            df = _local_source(engine, spec, path, input_path)
    path = described or path
    types = dict(df.dtypes)
    for name in text_columns(spec):
        kind = types.get(name)
        if kind is None or kind == "string":
            continue
        if kind in ("float", "double") or kind.startswith("decimal"):
            raise DataError(
                f"{path}: identifier column {name!r} is stored as floating-point numbers ({kind}): a float "
                "does not hold an identifier exactly (digits past the 16th are lost, 1.0 and 1 would be "
                "one person); store it as text or integers")
        if kind not in ("tinyint", "smallint", "int", "bigint"):
            raise DataError(f"{path}: identifier column {name!r} is stored as {kind}: store identifiers "
                            "as text or integers")
        df = df.withColumn(name, F.col(f"`{name}`").cast("string"))
    check_text_dates(engine, spec, df, str(path))
    text_partition = None
    if partition is not None and spec.partitions is not None:
        column = spec.partitions.column
        if column not in types:
            raise DataError(f"{path}: partition column {column!r} is missing from the data")
        if stored_as_text(df, column):  # read as the pandas engine reads it, over the whole table
            declared = spec.columns.get(column)
            text_partition = read_text_dates(engine, df, column, partition_format(spec), source=str(path),
                                             format_key="partitions.format",
                                             show_value=declared is None or declared.role != "identifier")
        start, end = partition_window(spec, partition)
        if text_partition is not None:
            inside = in_window(engine, df, text_partition, start, end)
        else:
            kind = types[column]
            lo = F.lit(start.to_pydatetime()).cast(kind)
            hi = F.lit(end.to_pydatetime()).cast(kind)
            inside = df.filter((F.col(f"`{column}`") >= lo) & (F.col(f"`{column}`") < hi))
        if one_partition or (input_path is None and frame is None and "{partition}" in (spec.source.path or "")):
            total, kept = df.count(), inside.count()
            if kept < total:
                raise DataError(
                    f"{path}: {total - kept} rows fall outside partition {partition!r} "
                    f"[{start.date()}, {end.date()}) of column {column!r}: fix the file or the spec")
        df = inside
    if ROW_COLUMN not in df.columns:  # a catalog or Delta table: positions from the rows' contents
        df = content_positions(df)
    return df, path


def _local_source(engine: SparkDriver, spec: Any, path: Path, input_path: str | None) -> Any:
    """A local parquet file or folder, csv file or Delta table's folder as a Spark DataFrame."""
    from ..io import table_format
    from .spark_sources import read_delta

    if input_path is None and spec.source.format == "delta":
        fmt = "delta"
    else:
        fmt = "parquet" if path.is_dir() else (spec.source.format if input_path is None and spec.source.format
                                                else table_format(path))
    if fmt == "csv":
        from .spark_csv import read_csv

        return read_csv(engine, spec, path, spec.source.separator if input_path is None else None)
    if fmt not in ("parquet", "delta"):
        raise UnsupportedOnEngine(f"a {fmt} source ({path})", hint="convert it to parquet, or use --engine pandas")
    return read_delta(engine.spark, path) if fmt == "delta" else read_parquet(engine.spark, path)


def _object_source(engine: SparkDriver, spec: Any, path: Any, input_path: str | None) -> Any:
    """A parquet object on object storage, read by the executors (:mod:`.spark_objects`)."""
    from ..io import table_format
    from .spark_objects import read_object_parquet

    fmt = spec.source.format if input_path is None and spec.source.format else table_format(path)
    if fmt != "parquet":
        raise UnsupportedOnEngine(f"a {fmt} source on object storage ({path})",
                                  hint="store it as parquet, or use --engine pandas")
    return read_object_parquet(engine.spark, path)


def check_text_dates(engine: SparkDriver, spec: Any, df: Any, source: str) -> None:
    """Every date-hierarchy column stored as text or integers read with one format over the whole
    table, as :func:`~anon_dagster.partitions.check_date_columns` reads it (the partition column:
    by the partition's window); a column of dates or timestamps is used as it is."""
    from ..spec import DateSpec, build_hierarchy
    from .spark_dates import read_text_dates, stored_as_text

    for name, column in spec.columns.items():
        if not isinstance(column.hierarchy, DateSpec) or name not in df.columns:
            continue
        if spec.partitions is not None and name == spec.partitions.column:
            continue
        if stored_as_text(df, name):
            hierarchy = build_hierarchy(spec, name)
            read_text_dates(engine, df, name, hierarchy.format, source=source, format_key=hierarchy.format_key)


def check_data(engine: SparkDriver, spec: Any, df: Any, source: str) -> None:
    """:func:`~anon_dagster.spec.check_data` on what it reads: the columns, and the distinct
    values of each column with a hierarchy (collected, one frequency table per column, in the
    order of their first rows)."""
    from ..spec import check_data

    values: dict[str, pd.Series] = {}
    for name in spec.hierarchies:
        if name in df.columns:  # in the order of their first rows: an error names the value pandas names
            freq, _ = engine.frequencies(df, [name], first_row=ROW_COLUMN in df.columns,
                                         what=f"the distinct values of column {name!r}")
            values[name] = freq[name]
    length = max([len(v) for v in values.values()] + [1])
    frame = {}
    for name in published_columns(df):
        if name in values and len(values[name]):
            v = values[name].reset_index(drop=True)
            frame[name] = pd.concat([v, v.iloc[[0] * (length - len(v))]], ignore_index=True)
        else:
            frame[name] = pd.Series([None] * length, dtype=object)
    check_data(spec, pd.DataFrame(frame), source=source)

def ingest(engine: SparkDriver, spec: Any, partition: str | None = None, input_path: str | None = None,
           **given: Any) -> SparkIngested:
    """The rows of ``partition`` read and checked against the spec (as the pandas ingest);
    ``given``: :func:`read`'s ``frame``, ``one_partition`` and ``described``."""
    df, path = read(engine, spec, partition, input_path, **given)
    check_data(engine, spec, df, str(path))
    return SparkIngested(df, str(path))

def is_spark_frame(value: object) -> bool:
    """Whether ``value`` is a Spark DataFrame (classic or Spark Connect)."""
    from pyspark.sql import DataFrame

    return isinstance(value, DataFrame) or type(value).__module__.startswith("pyspark.sql.connect")


@contextmanager
def asset_rows(engine: SparkDriver, spec: Any, partition: str | None, value: object, *,
               one_partition: bool = False) -> Iterator[SparkIngested]:
    """``source.asset`` on Spark: the partition's rows of the value the asset's IO manager loaded.

    A Spark DataFrame is read as a catalog table is (positions from its rows' contents). A pandas
    DataFrame takes the pandas engine's rules first (:func:`~anon_dagster.release.pipeline.ingest_frame`:
    the partition's rows, identifiers as text) and reaches Spark as a parquet file in the engine's
    scratch folder, so its rows keep the frame's order as a file's do and every figure is the
    pandas engine's. The file holds personal data: it is owner-only and removed when the block
    ends, by which time the caller has stored what it read. ``one_partition``: the table is the
    partition's own, so a row outside its window is refused."""
    from ..release.pipeline import ingest_frame

    described = spec.source.described
    if is_spark_frame(value):
        yield ingest(engine, spec, partition, frame=value, one_partition=one_partition)
        return
    frame = ingest_frame(spec, value, partition, source=described, one_partition=one_partition).data
    staged = engine.scratch / f"asset-{uuid.uuid4().hex}.parquet"
    try:
        write_private_parquet(frame, staged, described)
        yield ingest(engine, spec, partition, str(staged), described=described)
    finally:
        staged.unlink(missing_ok=True)


def write_private_parquet(frame: pd.DataFrame, path: Path, described: str) -> None:
    """``frame`` as an owner-only parquet file (no index); a column pyarrow cannot store as one
    type is a DataError naming ``described`` and the column, never a value."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        for name in frame.columns:
            try:
                pa.array(frame[name], from_pandas=True)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                raise DataError(f"{described}: column {name!r} mixes values of different types "
                                f"({frame[name].dtype}): give each column one type") from None
        raise DataError(f"{described}: the table cannot be stored as parquet: give each column one type") from None
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        pq.write_table(table, out)


def pseudonymize(engine: SparkDriver, spec: Any, ingested: SparkIngested, keystore: Any | None, *, linkage: bool = True,
                 partition: str | None = None) -> SparkPseudonymized:
    """Identifiers pseudonymized as declared, the others dropped, and with ``linkage`` and a
    composition block the ledger's linkage pseudonym (:func:`~anon_dagster.release.pipeline.pseudonymize`).

    The rows of a person on the release's suppression list are dropped first, on Spark
    (:func:`.spark_erasure.drop_erased`), as the pandas pipeline drops them."""
    from pyspark.sql import types as T

    from ..pseudonymize.methods import pseudonym_pattern, publication_label
    from ..pseudonymize.table import ColumnSummary
    from ..release import gate
    from ..release.ledger.linkage import person_normalization
    from ..release.pipeline import LINKAGE_PURPOSE, check_keystore
    from .spark_pseudonyms import (
        DISTINCT_PURPOSE,
        ColumnStep,
        KeyRequest,
        LinkageStep,
        PseudonymPlan,
        pseudonym_batches,
        pseudonymize_batches,
    )
    from .spark_tokens import TOKEN_LOOKUP_PURPOSE, attach_tokens

    wants_linkage = linkage and spec.composition is not None
    if spec.pseudonymized or wants_linkage:
        check_keystore(spec, keystore)
    df = drop_erased(engine, spec, ingested.df, keystore)
    steps, summaries, dropped, tokens = [], [], [], []
    for name in spec.identifiers:
        if name not in df.columns:
            raise DataError(f"{spec.label}: identifier column {name!r} is declared but missing from the data")
        how = spec.columns[name].pseudonymize
        if how is None:
            steps.append(ColumnStep(name, drop=True))
            dropped.append(name)
            continue
        method = how.method.lower()
        version = keystore.current_version
        publication = publication_label(spec.release, partition) if how.scope == "release" else None
        prefix = f"v{version}:" if how.prefix_version else ""
        norm = (how.normalize.trim, how.normalize.case, how.normalize.unicode)
        if how.scope == "row":
            key, distinct = None, KeyRequest("internal", DISTINCT_PURPOSE).checked(keystore)
        elif method == "token":  # no version prefix: a token is no key's function
            key, distinct, prefix = KeyRequest("internal", TOKEN_LOOKUP_PURPOSE).checked(keystore), None, ""
        else:
            key = KeyRequest("pseudonym", how.purpose, method, version, publication).checked(keystore)
            distinct = None
        steps.append(ColumnStep(name, method=method, scope=how.scope, purpose=how.purpose, key=key,
                                prefix=prefix, normalize=norm, distinct=distinct))
        if method == "token":
            tokens.append((steps[-1], publication))
        summaries.append(ColumnSummary(
            column=name, method=method, purpose=how.purpose,
            key_version=None if method == "token" or how.scope == "row" else version, rows=0, nulls_kept=0,
            distinct=0, reversible=method != "hmac", prefix_version=how.prefix_version and method != "token",
            pattern=pseudonym_pattern(method, how.prefix_version), scope=how.scope, publication=publication))
    link = None
    if wants_linkage:
        norm = person_normalization(spec)
        person = spec.composition.person
        if person not in df.columns:
            raise DataError(f"{spec.label}: composition.person {person!r} is not a column of the data")
        link = LinkageStep(gate.LINKAGE_COLUMN, person,
                           KeyRequest("internal", LINKAGE_PURPOSE).checked(keystore),
                           (norm.trim, norm.case, norm.unicode))
    kept = {s.column for s in steps if s.drop}
    fields, names = [], []
    changed = {s.column for s in steps if not s.drop}
    for f in df.schema.fields:
        if f.name in kept:
            continue
        fields.append(T.StructField(f.name, T.StringType(), True) if f.name in changed else f)
        names.append(f.name)
    for s in steps:
        if s.scope == "row" and not s.drop:
            fields.append(T.StructField(DISTINCT_PREFIX + s.column, T.StringType(), True))
            names.append(DISTINCT_PREFIX + s.column)
    if link is not None:
        fields.append(T.StructField(link.column, T.StringType(), True))
        names.append(link.column)
    plan = PseudonymPlan(tuple(steps), link, tuple(names))
    out = planned = df
    if spec.identifiers or link is not None:
        planned = df.mapInArrow(pseudonymize_batches(plan), T.StructType(fields))
        pairs: list[str] = []  # the token columns' (digest, token) tables, until the rows are materialized
        try:
            for step, publication in tokens:
                planned, folder = executor_errors(partial(attach_tokens, engine, df, planned, step, keystore,
                                                          publication))
                pairs.append(folder)
            out = planned
            if summaries or link is not None:
                # computed once: a scope-row pseudonym is random, and the keyed ones cost a pass
                with pseudonym_batches(engine.spark):
                    out = executor_errors(partial(planned.localCheckpoint, eager=True))
        finally:
            for folder in pairs:
                shutil.rmtree(folder, ignore_errors=True)
    backend = keystore.backend.kind if keystore is not None else None
    return SparkPseudonymized(out, summaries, dropped, backend, planned)


__all__ = ["asset_rows", "check_data", "check_text_dates", "ingest", "is_spark_frame", "pseudonymize", "read", "write_private_parquet"]
