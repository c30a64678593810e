"""CSV sources on Spark, read as the pandas engine reads them (:func:`anon_dagster.io.read_table`).

Every cell is read as its text by Spark's csv reader (the separator sniffed from the header as
the pandas engine sniffs it unless ``source.separator`` gives it; RFC 4180 quoting, a quote
doubled inside a quoted field, quoted fields spanning lines; a UTF-8 byte order mark ignored),
an empty cell as missing. Then, column by column as on pandas:

- identifiers and ``composition.person`` keep their exact text (``NA`` may be someone's code);
- every other column's usual missing-value spellings (``NA``, ``null``, ...:
  :data:`anon_dagster.io.MISSING_SPELLINGS`) become missing;
- date columns (date hierarchies, the partition column) keep their text, read later with one
  format over the whole table (:mod:`.spark_dates`);
- the others become numbers when that loses nothing. The decision
  (:func:`anon_dagster.io.numbers_if_lossless`: no leading zero, every value a number, integers
  as long, others as double, nothing rounded) depends only on the column's distinct values,
  which come to the driver in one frequency table of (column, text) pairs for all such columns,
  one pass over the file (within ``max_driver_cells``); each distinct
  text's number, as pandas computes it, is joined back. So every value is the one pandas reads.

A quoted field may span lines, so Spark cannot split the file: it is read by one task, in file
order, and the rows' positions are their order in the file, as on pandas.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import DataError
from .spark_frames import ROW_COLUMN, lookup_frame

TEXT_COLUMN, NUMBER_COLUMN, CORRUPT_COLUMN = "__csv_text", "__csv_number", "__csv_corrupt"
INDEX_COLUMN = "__csv_column"
FIELDS_COLUMN = "__csv_fields"


def read_csv(engine: Any, spec: Any, path: Path, separator: str | None) -> Any:
    """The csv file ``path`` on Spark with each row's position, typed as the pandas engine types it."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from ..io import MISSING_SPELLINGS, first_line, sniffed_separator
    from ..partitions import date_columns, text_columns

    if not path.is_file():
        raise DataError(f"{path}: a csv source is one file")
    try:
        header = first_line(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read as csv: {exc}") from None
    sep = separator or sniffed_separator(header)
    options = {"header": True, "sep": sep, "encoding": "UTF-8", "quote": '"', "escape": '"', "multiLine": True}
    spelled = engine.spark.read.csv(str(path), inferSchema=False, **options).columns
    names = [c.lstrip("\ufeff") if i == 0 else c for i, c in enumerate(spelled)]
    if len(set(names)) < len(names):
        raise DataError(f"{path}: the header names a column twice")
    # every cell as text; a row whose fields differ in number from the header's is kept whole in
    # the corrupt-record column, so that a row with too many is refused as pandas refuses it
    schema = T.StructType([*[T.StructField(c, T.StringType()) for c in spelled],
                           T.StructField(CORRUPT_COLUMN, T.StringType())])
    df = engine.spark.read.csv(str(path), schema=schema, mode="PERMISSIVE", columnNameOfCorruptRecord=CORRUPT_COLUMN,
                               **options)
    df = df.withColumn(ROW_COLUMN, F.monotonically_increasing_id())  # one task: the file's order
    check_field_counts(df, spelled[0], len(spelled), sep, str(path))
    df = df.drop(CORRUPT_COLUMN)
    text, dates = set(text_columns(spec)), set(date_columns(spec))
    missing = sorted(MISSING_SPELLINGS)
    columns = []
    for old, name in zip(spelled, names, strict=True):
        cell = F.col(f"`{old}`")
        cell = F.when(cell == "", None).otherwise(cell)  # a quoted empty cell is missing too
        if name not in text:
            cell = F.when(cell.isin(missing), None).otherwise(cell)
        columns.append(cell.alias(name))
    df = df.select(*columns, F.col(ROW_COLUMN))
    return numbers_where_lossless(engine, df, [n for n in names if n not in text and n not in dates], str(path))


def field_counts(separator: str):
    """The function ``mapInArrow`` runs over the rows Spark found malformed (position, record
    text, first cell): each row's position and its number of fields, parsed by Python's csv
    module with the reader's quoting."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            records = batch.column(1).to_pylist()
            counts = [len(next(csv.reader([r], delimiter=separator, quotechar='"', doublequote=True), []))
                      for r in records]
            yield pa.RecordBatch.from_arrays([batch.column(0), pa.array(counts, pa.int64())],
                                             names=[ROW_COLUMN, FIELDS_COLUMN])
    return run


def check_field_counts(df: Any, first: str, expected: int, separator: str, source: str) -> None:
    """DataError, as pandas raises it, for a row with more fields than the header; a row with
    fewer has its missing cells missing, as on pandas."""
    from pyspark.sql import functions as F

    # a query of the raw file may not read the corrupt-record column alone: the first column too
    malformed = df.where(F.col(CORRUPT_COLUMN).isNotNull()).select(ROW_COLUMN, CORRUPT_COLUMN, f"`{first}`")
    longer = (malformed
              .mapInArrow(field_counts(separator), f"{ROW_COLUMN} long, {FIELDS_COLUMN} long")
              .where(F.col(FIELDS_COLUMN) > expected).orderBy(ROW_COLUMN).limit(1).collect())
    if longer:
        row, fields = int(longer[0][0]), int(longer[0][1])
        raise DataError(f"{source}: cannot read as csv: expected {expected} fields in data row {row + 1}, "
                        f"saw {fields}")


def numbers_where_lossless(engine: Any, df: Any, columns: list[str], source: str) -> Any:
    """``df`` with each of ``columns`` as the numbers pandas reads when that loses nothing, else as
    it is. The columns' distinct texts are read in one pass over the file (one frequency table of
    (column, text) pairs), each column decided on its own."""
    from pyspark.sql import functions as F

    if not columns:
        return df
    pairs = df.select(F.explode(F.array(*[
        F.struct(F.lit(i).alias(INDEX_COLUMN), F.col(f"`{c}`").alias(TEXT_COLUMN)) for i, c in enumerate(columns)
    ])).alias("pair")).select("pair.*")
    freq, _ = engine.frequencies(pairs, [INDEX_COLUMN, TEXT_COLUMN], first_row=False,
                                 what=f"{source}: the distinct values of the csv columns read as numbers, which")
    for i, column in enumerate(columns):
        present = freq.loc[freq[INDEX_COLUMN] == i, TEXT_COLUMN].dropna().astype(object)
        df = _as_numbers(engine, df, column, present)
    return df


def _as_numbers(engine: Any, df: Any, column: str, present: pd.Series) -> Any:
    """``df`` with ``column`` as numbers when pandas reads its distinct texts ``present`` as
    numbers losing nothing (each text's number joined back), else as it is."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from ..io import numbers_if_lossless

    if present.empty:
        return df
    read = numbers_if_lossless(pd.Series(present.to_numpy(), dtype=object))
    if read.dtype == object or pd.api.types.is_string_dtype(read.dtype):
        return df
    integral = pd.api.types.is_integer_dtype(read.dtype)
    numbers = pa.array(read.to_numpy(dtype=np.int64 if integral else np.float64))
    kind = T.LongType() if integral else T.DoubleType()
    lookup = lookup_frame(engine.spark, {TEXT_COLUMN: pa.array(present.tolist(), type=pa.string()),
                                         NUMBER_COLUMN: numbers}, {})
    out = df.join(F.broadcast(lookup), on=df[f"`{column}`"] == lookup[TEXT_COLUMN], how="left")
    return (out.withColumn(column, F.col(NUMBER_COLUMN).cast(kind)).drop(TEXT_COLUMN, NUMBER_COLUMN)
            .select(*[f"`{c}`" for c in df.columns]))


__all__ = ["check_field_counts", "field_counts", "numbers_where_lossless", "read_csv"]
