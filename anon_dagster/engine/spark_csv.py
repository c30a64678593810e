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
  which come to the driver as a frequency table (within ``max_driver_cells``); each distinct
  text's number, as pandas computes it, is joined back. So every value is the one pandas reads.

A quoted field may span lines, so Spark cannot split the file: it is read by one task, in file
order, and the rows' positions are their order in the file, as on pandas.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import DataError
from .spark_frames import ROW_COLUMN, lookup_frame

TEXT_COLUMN, NUMBER_COLUMN = "__csv_text", "__csv_number"


def read_csv(engine: Any, spec: Any, path: Path, separator: str | None) -> Any:
    """The csv file ``path`` on Spark with each row's position, typed as the pandas engine types it."""
    from pyspark.sql import functions as F

    from ..io import MISSING_SPELLINGS, first_line, sniffed_separator
    from ..partitions import date_columns, text_columns

    if not path.is_file():
        raise DataError(f"{path}: a csv source is one file")
    try:
        header = first_line(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read as csv: {exc}") from None
    sep = separator or sniffed_separator(header)
    df = engine.spark.read.csv(str(path), header=True, sep=sep, encoding="UTF-8", quote='"', escape='"',
                               multiLine=True, inferSchema=False, mode="FAILFAST")
    names = [c.lstrip("\ufeff") if i == 0 else c for i, c in enumerate(df.columns)]
    if len(set(names)) < len(names):
        raise DataError(f"{path}: the header names a column twice")
    text, dates = set(text_columns(spec)), set(date_columns(spec))
    missing = sorted(MISSING_SPELLINGS)
    columns = []
    for old, name in zip(df.columns, names, strict=True):
        cell = F.col(f"`{old}`")
        cell = F.when(cell == "", None).otherwise(cell)  # a quoted empty cell is missing too
        if name not in text:
            cell = F.when(cell.isin(missing), None).otherwise(cell)
        columns.append(cell.alias(name))
    df = df.select(*columns, F.monotonically_increasing_id().alias(ROW_COLUMN))  # one task: the file's order
    for name in names:
        if name not in text and name not in dates:
            df = numbers_where_lossless(engine, df, name, str(path))
    return df


def numbers_where_lossless(engine: Any, df: Any, column: str, source: str) -> Any:
    """``df`` with ``column`` as the numbers pandas reads when that loses nothing, else as it is."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from ..io import numbers_if_lossless

    freq, _ = engine.frequencies(df.select(f"`{column}`"), [column], first_row=False,
                                 what=f"{source}: the distinct values of csv column {column!r}, which")
    present = freq[column].dropna().astype(object)
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


__all__ = ["numbers_where_lossless", "read_csv"]
