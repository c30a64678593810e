"""Release partitions: time windows over the spec's partition column, and reading their rows.

Definition: a partition is the half-open window ``[start, end)`` of the spec's cadence; its rows
are the source rows whose ``partitions.column`` date falls inside it. Partition keys are the
window's start formatted for the cadence: ``2024`` (yearly), ``2024-03`` (monthly),
``2024-04-01`` (quarterly, weekly — weeks start on Monday —, daily). An unpartitioned release
fills ``{partition}`` in its paths with ``all``.

The CLI and the Dagster assets read a release's rows through :func:`read_release_data`, so a
partition holds the same rows whichever way it is produced.
"""

from __future__ import annotations

import numbers
import re
from pathlib import Path

import pandas as pd

from .dates import parse_dates
from .errors import DataError, UserError
from .io import read_table
from .spec import DateSpec, ReleaseSpec, build_hierarchy

UNPARTITIONED = "all"

KEY_FORMATS = {"daily": "%Y-%m-%d", "weekly": "%Y-%m-%d", "monthly": "%Y-%m",
               "quarterly": "%Y-%m-%d", "yearly": "%Y"}
# The cron of each cadence's window boundaries (UTC): a window ends, and the next begins, at
# each of its times. Weeks start on Monday and quarters in January, April, July and October,
# as :func:`partition_window` aligns them; a scheduler releases a window at its end.
CRONS = {"daily": "0 0 * * *", "weekly": "0 0 * * 1", "monthly": "0 0 1 * *", "quarterly": "0 0 1 1,4,7,10 *",
         "yearly": "0 0 1 1 *"}
_OFFSETS = {
    "daily": pd.DateOffset(days=1),
    "weekly": pd.DateOffset(weeks=1),
    "monthly": pd.DateOffset(months=1),
    "quarterly": pd.DateOffset(months=3),
    "yearly": pd.DateOffset(years=1),
}


def window_schedule(spec: ReleaseSpec) -> dict[str, str | None] | None:
    """The spec's windows as a scheduler takes them: the key of the first window (``start``) and,
    when the spec ends, of the window it ends in (``end``), in the cadence's key format (``fmt``),
    and the ``cron_schedule`` of the windows' boundaries; None for an unpartitioned release."""
    if spec.partitions is None:
        return None
    fmt = KEY_FORMATS[spec.partitions.cadence]
    return {"start": pd.Timestamp(spec.partitions.start).strftime(fmt),
            "end": pd.Timestamp(spec.partitions.end).strftime(fmt) if spec.partitions.end else None,
            "fmt": fmt, "cron_schedule": CRONS[spec.partitions.cadence]}


def partition_window(spec: ReleaseSpec, key: str) -> tuple[pd.Timestamp, pd.Timestamp]:
    """The ``[start, end)`` window of partition ``key``.

    A key is refused (UserError, one line) unless it is written exactly in the cadence's key
    format, starts a window of the cadence, and lies within ``partitions.start`` and
    ``partitions.end``: the same keys Dagster lists for the spec. Every path a partition fills
    in is formatted only after this check.
    """
    if spec.partitions is None:
        raise UserError(f"{spec.label}: a partition was given but the spec declares no partitions")
    cadence = spec.partitions.cadence
    fmt = KEY_FORMATS[cadence]
    example = pd.Timestamp(spec.partitions.start).strftime(fmt)
    start = _key_start(key, fmt)
    if start is None:
        raise UserError(f"{spec.label}: partition {_shown(key)} is not a {cadence} partition key (like {example!r})")
    aligned = {
        "weekly": start.day_of_week == 0,
        "quarterly": start.month in (1, 4, 7, 10) and start.day == 1,
    }.get(cadence, True)
    if not aligned:
        raise UserError(f"{spec.label}: partition {key!r} does not start a {cadence} window "
                        f"({'a Monday' if cadence == 'weekly' else 'the first day of a quarter'})")
    end = start + _OFFSETS[cadence]
    # the bounds as Dagster reads them: the first window is the first that starts on or after
    # partitions.start (written in the key format); the last is the last to end by
    # partitions.end, the first window always existing
    first = _first_window(spec)
    if start < first:
        raise UserError(f"{spec.label}: partition {key!r} is before the first partition "
                        f"{first.strftime(fmt)!r} (partitions.start is {spec.partitions.start})")
    if spec.partitions.end and start > first:
        last = _key_start(pd.Timestamp(spec.partitions.end).strftime(fmt), fmt)
        if last is not None and end > last:
            raise UserError(f"{spec.label}: partition {key!r} does not end by partitions.end "
                            f"({spec.partitions.end}, exclusive)")
    return start, end


def _first_window(spec: ReleaseSpec) -> pd.Timestamp:
    """The start of the spec's first partition."""
    cadence = spec.partitions.cadence
    fmt = KEY_FORMATS[cadence]
    first = pd.Timestamp(pd.to_datetime(pd.Timestamp(spec.partitions.start).strftime(fmt), format=fmt))
    if cadence == "weekly":
        first += pd.Timedelta(days=(7 - first.day_of_week) % 7)
    elif cadence == "quarterly" and not (first.month in (1, 4, 7, 10) and first.day == 1):
        first = pd.Timestamp(year=first.year, month=first.month - (first.month - 1) % 3, day=1) + pd.DateOffset(months=3)
    return first


def _key_start(key: object, fmt: str) -> pd.Timestamp | None:
    """The start of the window ``key`` names, if ``key`` is written exactly in ``fmt``."""
    if not isinstance(key, str) or not _KEY_TEXT.fullmatch(key):
        return None
    try:
        start = pd.Timestamp(pd.to_datetime(key, format=fmt))
    except (ValueError, TypeError):
        return None
    return start if start.strftime(fmt) == key else None


_KEY_TEXT = re.compile(r"\d{4}(?:-\d{2}(?:-\d{2})?)?")


def _shown(key: object) -> str:
    """A refused key, quoted and cut short (it may be anything a user typed)."""
    text = repr(key)
    return text if len(text) <= 40 else text[:37] + "..."


def check_partition(spec: ReleaseSpec, partition: str | None) -> str | None:
    """``partition`` once validated against the spec's partitions (None stays None)."""
    if partition is not None:
        partition_window(spec, partition)
    return partition


def text_columns(spec: ReleaseSpec) -> list[str]:
    """The columns read as the exact text of their values: identifiers and ``composition.person``."""
    names = list(spec.identifiers)
    if spec.composition is not None and spec.composition.person not in names:
        names.append(spec.composition.person)
    return names


def date_columns(spec: ReleaseSpec) -> list[str]:
    """The columns read with one date format (:func:`~anon_dagster.dates.parse_dates`): the
    partition column and the columns with a date hierarchy."""
    names = [n for n, c in spec.columns.items() if isinstance(c.hierarchy, DateSpec)]
    if spec.partitions is not None and spec.partitions.column not in names:
        names.append(spec.partitions.column)
    return names


def read_spec_table(spec: ReleaseSpec, path: str | Path, separator: str | None = None,
                    fmt: str | None = None) -> pd.DataFrame:
    """A table read for ``spec``: identifiers as exact text, date columns as written."""
    return read_table(path, separator=separator, fmt=fmt, text_columns=text_columns(spec),
                      raw_columns=date_columns(spec))


def partition_format(spec: ReleaseSpec) -> str | None:
    """The declared date format of the partition column: ``partitions.format``, else the format
    of the column's date hierarchy (the spec refuses the two when they differ)."""
    if spec.partitions is None:
        return None
    declared = spec.columns.get(spec.partitions.column)
    hierarchy = declared.hierarchy if declared is not None else None
    return spec.partitions.format or (hierarchy.format if isinstance(hierarchy, DateSpec) else None)


def check_date_columns(spec: ReleaseSpec, df: pd.DataFrame, source: str) -> None:
    """Every date-hierarchy column of the whole file read with one format, so that a value that
    is not a date stops the ingest naming the file's row (not a row of the partition)."""
    for name, column in spec.columns.items():
        if isinstance(column.hierarchy, DateSpec) and name in df.columns:
            if spec.partitions is not None and name == spec.partitions.column:
                continue  # read by rows_in_window
            hierarchy = build_hierarchy(spec, name)
            parse_dates(df[name], name, hierarchy.format, source=source, format_key=hierarchy.format_key)


def rows_in_window(df: pd.DataFrame, column: str, start: pd.Timestamp, end: pd.Timestamp,
                   source: str = "", *, date_format: str | None = None, show_value: bool = True) -> pd.DataFrame:
    """Rows of ``df`` whose ``column`` date lies in ``[start, end)``.

    The column is read with one format (``date_format``, else the one that reads every value:
    :func:`~anon_dagster.dates.parse_dates`). Raises DataError naming the file, column and row
    of a value that is not a date: a row that cannot be placed in a period would otherwise
    vanish from every release without anyone noticing.
    """
    if column not in df.columns:
        raise DataError(f"{source}: partition column {column!r} is missing from the data")
    dates = parse_dates(df[column], column, date_format, source=source, format_key="partitions.format",
                        show_value=show_value)
    mask = (dates >= pd.Timestamp(start)) & (dates < pd.Timestamp(end))
    return df.loc[mask.to_numpy()]


def source_path(spec: ReleaseSpec, partition: str | None) -> Path:
    """The spec's source file for ``partition`` (its path may hold ``{partition}``); the
    partition is validated first. A source that is a Dagster asset (``source.asset``) has no
    file: UserError naming the asset (outside Dagster its rows come from ``--input``)."""
    check_partition(spec, partition)
    if spec.source.path is None:
        raise UserError(f"{spec.label}: the source is {spec.source.described}, read by Dagster: give the "
                        "table to read instead with --input DATA (a csv or parquet file)")
    if "{partition}" in spec.source.path and spec.partitions is not None and not partition:
        raise UserError(f"{spec.label}: the source path holds {{partition}}: give a partition")
    return spec.resolve(spec.source.path, partition=partition or UNPARTITIONED)


def read_release_data(spec: ReleaseSpec, partition: str | None = None,
                      input_path: str | Path | None = None) -> tuple[pd.DataFrame, str]:
    """The rows of ``partition`` (all rows when None), from ``input_path`` or the spec's source.

    Returns the table (index reset to 0..n-1) and the file it came from. The partition key is
    validated before any path is formed. Identifiers are read as text and dates with one
    format per column (:func:`read_spec_table`). A per-partition file (``{partition}`` in the
    source path) holding rows outside its window is refused rather than silently trimmed.
    """
    check_partition(spec, partition)
    if input_path is not None:
        path = Path(input_path)
        df = read_spec_table(spec, path)
    else:
        path = source_path(spec, partition)
        df = read_spec_table(spec, path, separator=spec.source.separator, fmt=spec.source.format)
    one_partition = input_path is None and "{partition}" in (spec.source.path or "")
    return release_rows(spec, df, partition, str(path), one_partition=one_partition), str(path)


def frame_rows(spec: ReleaseSpec, df: pd.DataFrame, partition: str | None, source: str, *,
               one_partition: bool = False) -> pd.DataFrame:
    """The rows of ``partition`` of a table given as a DataFrame (a Dagster asset's value), by
    the rules a file is read by: identifiers as the exact text of their values (integers as
    their decimal digits; floating-point identifiers refused), then :func:`release_rows`.
    ``source`` names the table in errors (say ``the Dagster asset 'a/b'``)."""
    check_partition(spec, partition)
    df = df.copy()
    for name in text_columns(spec):
        if name in df.columns:
            df[name] = identifier_text(df[name], name, source)
    return release_rows(spec, df, partition, source, one_partition=one_partition)


def identifier_text(column: pd.Series, name: str, source: str) -> pd.Series:
    """An identifier column of a DataFrame as the exact text of its values (missing values stay
    missing): what :func:`~anon_dagster.io.read_table` makes of a parquet file's."""
    if pd.api.types.is_float_dtype(column.dtype):
        raise DataError(f"{source}: identifier column {name!r} holds floating-point numbers ({column.dtype}): a "
                        "float does not hold an identifier exactly; give it as text or integers")
    if pd.api.types.is_bool_dtype(column.dtype) or not (
            pd.api.types.is_integer_dtype(column.dtype) or pd.api.types.is_string_dtype(column.dtype)
            or column.dtype == object):
        raise DataError(f"{source}: identifier column {name!r} is of type {column.dtype}: give identifiers "
                        "as text or integers")
    odd = sorted({type(v).__name__ for v in column.dropna()
                  if isinstance(v, bool) or not isinstance(v, (str, numbers.Integral))})
    if odd:
        raise DataError(f"{source}: identifier column {name!r} holds values of type {', '.join(odd)}: give "
                        "identifiers as text or integers")
    return column.map(lambda v: v if isinstance(v, str) or pd.isna(v) else str(int(v))).astype(object)


def release_rows(spec: ReleaseSpec, df: pd.DataFrame, partition: str | None, source: str, *,
                 one_partition: bool = False) -> pd.DataFrame:
    """The rows of ``partition`` (all rows when None) of the whole table ``df``, index reset.

    Every date-hierarchy column is read with one format over the whole table first. With
    ``one_partition`` (the table is the partition's own: a per-partition file, a partition of
    an upstream asset) a row outside the window is refused rather than silently trimmed.
    """
    check_date_columns(spec, df, source)
    if partition is None or spec.partitions is None:
        return df.reset_index(drop=True)
    start, end = partition_window(spec, partition)
    column = spec.partitions.column
    declared = spec.columns.get(column)
    rows = rows_in_window(df, column, start, end, source=source, date_format=partition_format(spec),
                          show_value=declared is None or declared.role != "identifier")
    if one_partition and len(rows) < len(df):
        raise DataError(
            f"{source}: {len(df) - len(rows)} rows fall outside partition {partition!r} "
            f"[{start.date()}, {end.date()}) of column {spec.partitions.column!r}: fix the "
            f"{'file' if spec.source.path else 'asset'} or the spec"
        )
    return rows.reset_index(drop=True)
