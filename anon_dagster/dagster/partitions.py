"""Dagster time-window partitions from a release spec's ``partitions`` block.

The windows and their keys are defined in :mod:`anon_dagster.partitions`; this module gives
Dagster the same windows. Only complete periods exist (``end_offset=0``): a release is never
made of a period still filling up.
"""

from __future__ import annotations

import pandas as pd
from dagster import TimeWindowPartitionsDefinition

from ..partitions import KEY_FORMATS
from ..spec import ReleaseSpec

# the cron of each cadence's window boundaries
CRONS = {"daily": "0 0 * * *", "weekly": "0 0 * * 1", "monthly": "0 0 1 * *", "quarterly": "0 0 1 1,4,7,10 *",
         "yearly": "0 0 1 1 *"}


def partitions_def_for(spec: ReleaseSpec) -> TimeWindowPartitionsDefinition | None:
    """The spec's partitions as a Dagster definition, or None for an unpartitioned release."""
    if spec.partitions is None:
        return None
    fmt = KEY_FORMATS[spec.partitions.cadence]
    start = pd.Timestamp(spec.partitions.start).strftime(fmt)
    end = pd.Timestamp(spec.partitions.end).strftime(fmt) if spec.partitions.end else None
    return TimeWindowPartitionsDefinition(start=start, end=end, fmt=fmt, cron_schedule=CRONS[spec.partitions.cadence],
                                          timezone="UTC", end_offset=0)
