"""Dagster time-window partitions from a release spec's ``partitions`` block.

The windows and their rows are defined in :mod:`anon_dagster.partitions`; this module gives
Dagster the same windows. Only complete periods exist (``end_offset=0``): a release is never
made of a period still filling up.
"""

from __future__ import annotations

import pandas as pd
from dagster import TimeWindowPartitionsDefinition

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
