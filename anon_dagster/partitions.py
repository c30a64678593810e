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

from pathlib import Path

import pandas as pd

from .errors import DataError, UserError
from .io import read_table
from .spec import ReleaseSpec

UNPARTITIONED = "all"

KEY_FORMATS = {"daily": "%Y-%m-%d", "weekly": "%Y-%m-%d", "monthly": "%Y-%m",
               "quarterly": "%Y-%m-%d", "yearly": "%Y"}
_OFFSETS = {
    "daily": pd.DateOffset(days=1),
    "weekly": pd.DateOffset(weeks=1),
    "monthly": pd.DateOffset(months=1),
    "quarterly": pd.DateOffset(months=3),
    "yearly": pd.DateOffset(years=1),
}


def partition_window(spec: ReleaseSpec, key: str) -> tuple[pd.Timestamp, pd.Timestamp]:
    """The ``[start, end)`` window of partition ``key``; a key that starts no window is refused."""
    if spec.partitions is None:
        raise UserError(f"{spec.label}: a partition was given but the spec declares no partitions")
    cadence = spec.partitions.cadence
    fmt = KEY_FORMATS[cadence]
    example = pd.Timestamp(spec.partitions.start).strftime(fmt)
    try:
        start = pd.Timestamp(pd.to_datetime(key, format=fmt))
    except (ValueError, TypeError):
        raise UserError(f"{spec.label}: partition {key!r} is not a {cadence} partition key (like {example!r})") from None
    aligned = {
        "weekly": start.day_of_week == 0,
        "quarterly": start.month in (1, 4, 7, 10) and start.day == 1,
    }.get(cadence, True)
    if not aligned:
        raise UserError(f"{spec.label}: partition {key!r} does not start a {cadence} window "
                        f"({'a Monday' if cadence == 'weekly' else 'the first day of a quarter'})")
    return start, start + _OFFSETS[cadence]


def rows_in_window(df: pd.DataFrame, column: str, start: pd.Timestamp, end: pd.Timestamp,
                   source: str = "") -> pd.DataFrame:
    """Rows of ``df`` whose ``column`` date lies in ``[start, end)``.

    Raises DataError naming the file, column and a value that is not a date: a row that cannot
    be placed in a period would otherwise vanish from every release without anyone noticing.
    """
    if column not in df.columns:
        raise DataError(f"{source}: partition column {column!r} is missing from the data")
    raw = df[column]
    if pd.api.types.is_datetime64_any_dtype(raw):
        dates = raw
    else:  # text dates: each value parsed on its own, so "2024-01-05" and "2024-01-05 10:00" mix
        dates = pd.to_datetime(raw, errors="coerce", format="mixed")
    bad = dates.isna() & raw.notna()
    if bad.any():
        example = raw[bad].iloc[0]
        raise DataError(f"{source}: column {column!r}: value {example!r} is not a date "
                        f"({int(bad.sum())} such rows): rows cannot be assigned to a partition")
    if getattr(dates.dt, "tz", None) is not None:
        dates = dates.dt.tz_convert("UTC").dt.tz_localize(None)
    mask = (dates >= pd.Timestamp(start)) & (dates < pd.Timestamp(end))
    return df.loc[mask.to_numpy()]


def source_path(spec: ReleaseSpec, partition: str | None) -> Path:
    """The spec's source file for ``partition`` (its path may hold ``{partition}``)."""
    if "{partition}" in spec.source.path and spec.partitions is not None and not partition:
        raise UserError(f"{spec.label}: the source path holds {{partition}}: give a partition")
    return spec.resolve(spec.source.path, partition=partition or UNPARTITIONED)


def read_release_data(spec: ReleaseSpec, partition: str | None = None,
                      input_path: str | Path | None = None) -> tuple[pd.DataFrame, str]:
    """The rows of ``partition`` (all rows when None), from ``input_path`` or the spec's source.

    Returns the table (index reset to 0..n-1) and the file it came from. A per-partition file
    (``{partition}`` in the source path) holding rows outside its window is refused rather
    than silently trimmed.
    """
    if input_path is not None:
        path = Path(input_path)
        df = read_table(path)
    else:
        path = source_path(spec, partition)
        df = read_table(path, separator=spec.source.separator, fmt=spec.source.format)
    if partition is None or spec.partitions is None:
        if partition is not None:
            raise UserError(f"{spec.label}: partition {partition!r} given but the spec declares no partitions")
        return df.reset_index(drop=True), str(path)
    start, end = partition_window(spec, partition)
    rows = rows_in_window(df, spec.partitions.column, start, end, source=str(path))
    if input_path is None and "{partition}" in spec.source.path and len(rows) < len(df):
        raise DataError(
            f"{path}: {len(df) - len(rows)} rows fall outside partition {partition!r} "
            f"[{start.date()}, {end.date()}) of column {spec.partitions.column!r}: fix the file or the spec"
        )
    return rows.reset_index(drop=True), str(path)
