"""Time-window partitions from a release spec's ``partitions`` block.

Definition: a partition is a half-open window ``[start, end)`` of the spec's cadence; its rows
are the source rows whose ``partitions.column`` date falls inside the window. Partition keys
are the window's start formatted for the cadence: ``2024`` (yearly), ``2024-03`` (monthly),
``2024-04-01`` (quarterly, weekly, daily). Only complete periods exist (``end_offset=0``): a
release is never made of a period still filling up.
"""

from __future__ import annotations

from datetime import datetime

import pandas as pd
from dagster import PartitionsDefinition, TimeWindowPartitionsDefinition

from ..errors import DataError
from ..spec import ReleaseSpec

# cadence -> (cron of the window boundaries, key format)
CADENCES: dict[str, tuple[str, str]] = {
    "daily": ("0 0 * * *", "%Y-%m-%d"),
    "weekly": ("0 0 * * 1", "%Y-%m-%d"),
    "monthly": ("0 0 1 * *", "%Y-%m"),
    "quarterly": ("0 0 1 1,4,7,10 *", "%Y-%m-%d"),
    "yearly": ("0 0 1 1 *", "%Y"),
}


def partitions_def_for(spec: ReleaseSpec) -> TimeWindowPartitionsDefinition | None:
    """The spec's partitions as a Dagster definition, or None for an unpartitioned release."""
    if spec.partitions is None:
        return None
    cron, fmt = CADENCES[spec.partitions.cadence]
    start = pd.Timestamp(spec.partitions.start).to_pydatetime()
    end = pd.Timestamp(spec.partitions.end).to_pydatetime() if spec.partitions.end else None
    return TimeWindowPartitionsDefinition(
        start=start.strftime(fmt), end=end.strftime(fmt) if end else None, fmt=fmt,
        cron_schedule=cron, timezone="UTC", end_offset=0,
    )


def partition_window(partitions_def: PartitionsDefinition, key: str) -> tuple[datetime, datetime]:
    """The ``[start, end)`` window of partition ``key`` (naive UTC datetimes)."""
    assert isinstance(partitions_def, TimeWindowPartitionsDefinition)
    window = partitions_def.time_window_for_partition_key(key)
    return window.start.replace(tzinfo=None), window.end.replace(tzinfo=None)


def rows_in_window(df: pd.DataFrame, column: str, start: datetime, end: datetime,
                   source: str = "") -> pd.DataFrame:
    """Rows of ``df`` whose ``column`` date lies in ``[start, end)``.

    Raises DataError naming the file, column and a value that is not a date: a row that cannot
    be placed in a period would otherwise vanish from every release without anyone noticing.
    """
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
