"""The published rows of a Spark release, written by the executors and streamed into the target.

:func:`spark_rows` gives the publication protocol (:func:`~anon_dagster.release.publication.publish`)
the published rows without reading them to the driver as a table: when the protocol stages the
target, Spark writes the published columns as parquet part files under the engine's scratch
folder, each part sorted by the rows' source position (:data:`~.spark_frames.ROW_COLUMN`, no
shuffle). When the parts' row groups hold disjoint ranges of positions (a table whose steps kept
the source's order in its parts, as global recoding does), taking the row groups by their
smallest position gives the source order; otherwise (parts a shuffle mixed, as Mondrian's) Spark
writes them again globally sorted (``orderBy``). The driver then copies them into the staged
file one row group at a time (parquet: the same Arrow row groups; csv: each row group's text as
pandas writes it, every column in the dtype it has in the whole table) and removes the part
files. The driver holds one row group at a time,
whatever the number of rows, and the protocol hashes the bytes as they are written.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..byte_sink import ByteSink
from ..io import table_format
from ..release.published_rows import PublishedRows
from .spark_frames import ROW_COLUMN


def reader_dtypes(schema: pa.Schema, nulls: dict[str, int]) -> dict[str, str]:
    """The dtype of each column of ``schema`` in ``Table.to_pandas()`` of the whole table, which
    has ``nulls[c]`` nulls in column ``c``: an integer column with a null is float64, a boolean
    one object, the others as an empty table of ``schema`` reads."""
    empty = schema.empty_table().to_pandas()
    dtypes = {}
    for field in schema:
        kind = str(empty[field.name].dtype)
        if nulls.get(field.name, 0):
            kind = "float64" if pa.types.is_integer(field.type) else "object" if pa.types.is_boolean(field.type) else kind
        dtypes[field.name] = kind
    return dtypes


def _null_counts(files: Sequence[Path], names: Sequence[str]) -> dict[str, int]:
    """Each column's nulls, from the part files' footers (Spark writes every row group's statistics)."""
    counts = dict.fromkeys(names, 0)
    for path in files:
        meta = pq.ParquetFile(path).metadata
        for group in range(meta.num_row_groups):
            row_group = meta.row_group(group)
            for i in range(row_group.num_columns):
                column = row_group.column(i)
                name = column.path_in_schema
                if name in counts:
                    stats = column.statistics
                    # no statistics: counted as holding nulls, which only widens an integer column's dtype
                    counts[name] += stats.null_count if stats is not None and stats.has_null_count else 1
    return counts


def ordered_groups(files: Sequence[Path]) -> list[tuple[Path, int]] | None:
    """The row groups of ``files`` (each sorted by :data:`ROW_COLUMN`) in the order of their
    positions, when their ranges of positions are disjoint (None when two overlap, or a group
    has no statistics of the column)."""
    ranges = []
    for path in files:
        meta = pq.ParquetFile(path).metadata
        index = meta.schema.names.index(ROW_COLUMN)
        for group in range(meta.num_row_groups):
            stats = meta.row_group(group).column(index).statistics
            if meta.row_group(group).num_rows == 0:
                continue
            if stats is None or not stats.has_min_max:
                return None
            ranges.append((stats.min, stats.max, path, group))
    ranges.sort(key=lambda r: r[0])
    if any(later[0] <= earlier[1] for earlier, later in zip(ranges, ranges[1:], strict=False)):
        return None
    return [(path, group) for _, _, path, group in ranges]


def copy_parts(groups: Sequence[tuple[Path, int]], names: Sequence[str], schema: pa.Schema, sink: ByteSink,
               name: str) -> dict[str, str]:
    """Write the rows of the row ``groups`` (file, index; in order; columns ``names`` of
    ``schema``) into ``sink`` as the file ``name``'s format says, one row group at a time;
    returns the columns' dtypes as a reader of the file gets them."""
    schema = pa.schema([schema.field(n) for n in names])  # without Spark's key-value metadata
    dtypes = reader_dtypes(schema, _null_counts(sorted({f for f, _ in groups}), names))
    files = {path: pq.ParquetFile(path) for path, _ in groups}

    def tables() -> Iterator[pa.Table]:
        for path, group in groups:
            yield files[path].read_row_group(group, columns=list(names)).cast(schema)

    if table_format(name) == "parquet":
        with pq.ParquetWriter(sink, schema) as writer:
            for table in tables():
                writer.write_table(table)
        return dtypes
    header = True
    for table in tables():
        sink.write(table.to_pandas().astype(dtypes).to_csv(index=False, header=header).encode("utf-8"))
        header = False
    if header:  # no row: the header alone, as pandas writes an empty table
        sink.write(schema.empty_table().to_pandas().to_csv(index=False).encode("utf-8"))
    return dtypes


def all_groups(files: Sequence[Path]) -> list[tuple[Path, int]]:
    """Every row group of ``files``, file by file."""
    return [(f, g) for f in files for g in range(pq.ParquetFile(f).metadata.num_row_groups)]


def spark_rows(engine: Any, df: Any, columns: Sequence[str], rows: int) -> PublishedRows:
    """``df``'s ``columns`` (``rows`` rows) as :class:`PublishedRows` written by Spark (see the
    module docstring); the columns' dtypes are those of the file once written (before: the
    dtypes of ``df``'s schema)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema

    names = list(columns)
    selected = [F.col(f"`{c}`") for c in names]
    published = df.select(*selected)
    positioned = ROW_COLUMN in df.columns
    picked = df.select(*selected, F.col(ROW_COLUMN)) if positioned and ROW_COLUMN not in names else published
    declared = to_arrow_schema(published.schema)
    written: dict[str, str] = {}

    def parts(target: Path, frame: Any) -> list[Path]:
        frame.write.parquet(str(target))
        return sorted(target.glob("*.parquet"))  # part-00000, ...: the parts' order

    def write(sink: ByteSink, name: str) -> None:
        folder = engine.scratch / f"publish-{uuid.uuid4().hex}"
        try:
            files = parts(folder / "parts", picked.sortWithinPartitions(ROW_COLUMN) if positioned else picked)
            groups = ordered_groups(files) if positioned else all_groups(files)
            if groups is None:  # the parts' positions interleave: sorted globally instead
                files = parts(folder / "sorted", picked.orderBy(ROW_COLUMN))
                groups = all_groups(files)
            schema = pq.read_schema(files[0]) if files else declared
            written.update(copy_parts(groups, names, schema, sink, name))
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    # before any write (the same data already in place: nothing staged), the declared schema's dtypes
    return PublishedRows(int(rows), names, write, lambda: written or reader_dtypes(declared, {}))


def publication_inputs(engine: Any, spec: Any, evaluation: Any, anonymized: Any, rows: int,
                       pseudonymized: Callable[[], Any], keystore: Any, ledger: Any) -> Any:
    """What :func:`~anon_dagster.release.publication.publish_release` reads when the rows are on
    Spark (a :class:`~anon_dagster.release.publish_step.PublicationInputs`): the anonymized
    (``rows`` rows) and the pseudonymized (``pseudonymized()``) rows of erased persons, on the
    driver (what its last look for an erasure counts, so it counts what it would count on
    pandas); for a passing evaluation of rows the published rows, written by Spark when the
    protocol stages the file (:func:`spark_rows`: never read to the driver whole); for
    aggregates, the aggregates counted on Spark (:func:`~.spark_aggregates.dp_release`: the
    budget checked, the groups counted by Spark, the noise drawn on the driver), computed when
    the publication asks."""
    from ..release.publish_step import PublicationInputs

    published = None
    if evaluation.passed and spec.publication.mode != "aggregates":
        published = spark_rows(engine, anonymized, spec.published_columns, rows)
    aggregates = None
    if spec.publication.mode == "aggregates":
        from .spark_aggregates import dp_release

        aggregates = lambda: dp_release(engine, spec, pseudonymized(), ledger)  # noqa: E731
    return PublicationInputs(erased_rows(engine, spec, anonymized, keystore),
                             erased_rows(engine, spec, pseudonymized(), keystore), published, aggregates)


def erased_rows(engine: Any, spec: Any, df: Any, keystore: Any) -> pd.DataFrame:
    """The linkage pseudonyms of ``df``'s rows whose person is on the release's suppression list."""
    from ..release.gate import LINKAGE_COLUMN

    if keystore is None or LINKAGE_COLUMN not in df.columns:
        return pd.DataFrame()
    from pyspark.sql import functions as F

    from ..release.governance.suppression import suppressed
    from .spark_store import driver_rows

    listed = suppressed(keystore, spec.release)
    if not listed:
        return pd.DataFrame()
    erased = engine.spark.createDataFrame(pa.table({LINKAGE_COLUMN: pa.array(sorted(listed), type=pa.string())}))
    hits = df.select(LINKAGE_COLUMN).join(F.broadcast(erased), on=LINKAGE_COLUMN, how="left_semi")
    return driver_rows(engine, hits, [LINKAGE_COLUMN], hits.count(), what="the rows of erased persons")


__all__ = ["all_groups", "copy_parts", "erased_rows", "ordered_groups", "publication_inputs", "reader_dtypes",
           "spark_rows"]
