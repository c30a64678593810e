"""Dates stored as text (``"05/01/2024"``) or as integers (``20240105``) on Spark, read as the
pandas engine reads them (:mod:`anon_dagster.dates`): one format per column, the declared one or
the one candidate reading every value, a value it does not read refused naming the column, the
row and how many rows hold such values.

The texts are read on the driver from the column's frequency table (its distinct values with
their rows and first row: one aggregation, as small as the column's distinct values), stripped
as the pandas engine strips them, and read by :func:`~anon_dagster.dates.parse_distinct_dates`,
the function the pandas engine reads its column's distinct texts with. So the format chosen, the
ambiguities refused and the text of every error are the pandas engine's. The row an error names
is counted on Spark, only when there is an error: the rows before the value's first row.

The data keeps its text, as on pandas (a date hierarchy reads its labels' texts itself). Only the
partition column is read into dates, to filter the partition's window: each distinct text's
instant (microseconds, naive) joined to the rows as a broadcast lookup, so the window is compared
as integers, with no time zone of the session in between.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..dates import parse_distinct_dates
from .base import UnsupportedOnEngine
from .spark_frames import COUNT_COLUMN, FIRST_COLUMN, ROW_COLUMN, lookup_frame

DATE_KINDS = ("date", "timestamp", "timestamp_ntz")
INTEGER_KINDS = ("tinyint", "smallint", "int", "bigint")
TEXT_KEY = "__date_text"
MICROS_COLUMN = "__date_us"


@dataclass(frozen=True)
class TextDates:
    """A text (or integer) date column read: each distinct value as stored (``raw``, as text)
    and the naive instant it reads as, in microseconds (None: missing or blank)."""

    column: str
    raw: list[str]
    micros: list[int | None]


def stored_as_text(df: Any, column: str) -> bool:
    """Whether ``column`` of ``df`` holds its dates as text or integers (read here), rather than
    as dates or timestamps (used as they are); any other type is refused in one line."""
    kind = dict(df.dtypes)[column]
    if kind in DATE_KINDS:
        return False
    if kind == "string" or kind in INTEGER_KINDS:
        return True
    raise UnsupportedOnEngine(f"dates stored as {kind} (column {column!r})",
                              hint="store them as dates, timestamps, text or integers, or use --engine pandas")


def read_text_dates(engine: Any, df: Any, column: str, fmt: str | None, *, source: str, format_key: str,
                    show_value: bool = True) -> TextDates:
    """Read the dates of ``column`` (text or integers) of the whole table ``df`` as the pandas
    engine reads the column (module docstring); DataError as it raises it."""
    from pyspark.sql import functions as F

    positioned = ROW_COLUMN in df.columns  # a catalog table's rows have no order before the partition's
    text = F.col(f"`{column}`").cast("string").alias(column)
    framed = df.select(text, F.col(ROW_COLUMN)) if positioned else df.select(text)
    freq, _ = engine.frequencies(framed, [column], first_row=positioned,
                                 what=f"the distinct dates of column {column!r}")
    raw = [None if pd.isna(v) else str(v) for v in freq[column].tolist()]
    stripped = [None if v is None else (v.strip() or None) for v in raw]
    order = freq[FIRST_COLUMN].to_numpy() if positioned else np.zeros(len(raw), dtype=np.int64)
    texts: dict[str, list[int]] = {}  # stripped text -> [first row's position, rows]
    for value, first, rows in zip(stripped, order, freq[COUNT_COLUMN].to_numpy(), strict=True):
        if value is not None:
            seen = texts.setdefault(value, [int(first), 0])
            seen[0], seen[1] = min(seen[0], int(first)), seen[1] + int(rows)
    distinct = sorted(texts, key=lambda v: (texts[v][0], v) if positioned else v)

    def row_of(i: int) -> int:  # the 1-based row of the i-th text's first row, as the pandas engine counts rows
        spelled = [r for r, s in zip(raw, stripped, strict=True) if s == distinct[i]]
        rows = framed if positioned else _content_positioned(df, column)
        first = rows.filter(F.col(f"`{column}`").isin(spelled)).agg(F.min(ROW_COLUMN)).collect()[0][0]
        return rows.filter(F.col(ROW_COLUMN) < F.lit(first)).count() + 1

    parsed = parse_distinct_dates(pd.Series(distinct, dtype=object), [texts[v][1] for v in distinct], row_of,
                                  column, fmt, where=f"{source}: " if source else "", format_key=format_key,
                                  show_value=show_value)
    instant = {v: int(ns) // 1000 for v, ns in zip(distinct, parsed.to_numpy("datetime64[ns]").astype(np.int64),
                                                    strict=True)}
    kept = [i for i, v in enumerate(raw) if v is not None]
    return TextDates(column, [raw[i] for i in kept], [instant.get(stripped[i]) for i in kept])


def _content_positioned(df: Any, column: str) -> Any:
    """The rows of a table without an order of its own with their content positions (as the
    partition's rows get them), ``column`` as text: asked for only to name a row in an error."""
    from pyspark.sql import functions as F

    from .spark_sources import content_positions

    positioned = content_positions(df)
    return positioned.select(F.col(f"`{column}`").cast("string").alias(column), F.col(ROW_COLUMN))


def in_window(engine: Any, df: Any, dates: TextDates, start: pd.Timestamp, end: pd.Timestamp) -> Any:
    """The rows of ``df`` whose date in ``dates.column`` lies in ``[start, end)`` (a missing
    date in none), the column left as stored."""
    from pyspark.sql import functions as F

    lookup = lookup_frame(engine.spark, {TEXT_KEY: pa.array(dates.raw, pa.string()),
                                         MICROS_COLUMN: pa.array(dates.micros, pa.int64())}, {})
    key = F.col(f"`{dates.column}`").cast("string")
    joined = df.join(F.broadcast(lookup), on=key == F.col(TEXT_KEY), how="left")
    low, high = pd.Timestamp(start).value // 1000, pd.Timestamp(end).value // 1000
    inside = (F.col(MICROS_COLUMN) >= F.lit(low)) & (F.col(MICROS_COLUMN) < F.lit(high))
    return joined.filter(inside).drop(TEXT_KEY, MICROS_COLUMN)


__all__ = ["MICROS_COLUMN", "TextDates", "in_window", "read_text_dates", "stored_as_text"]
