"""Dagster time-window partitions: the windows of :mod:`anon_dagster.partitions`, complete
periods only (``end_offset=0``): a release is never made of a period still filling up."""

from __future__ import annotations

import pandas as pd
from dagster import TimeWindowPartitionsDefinition

from ..partitions import CRONS, KEY_FORMATS
from ..spec import ReleaseSpec


def partitions_def_for(spec: ReleaseSpec) -> TimeWindowPartitionsDefinition | None:
    """The spec's partitions as a Dagster definition, or None for an unpartitioned release."""
    if spec.partitions is None:
        return None
    fmt = KEY_FORMATS[spec.partitions.cadence]
    start = pd.Timestamp(spec.partitions.start).strftime(fmt)
    end = pd.Timestamp(spec.partitions.end).strftime(fmt) if spec.partitions.end else None
    return TimeWindowPartitionsDefinition(start=start, end=end, fmt=fmt, cron_schedule=CRONS[spec.partitions.cadence],
                                          timezone="UTC", end_offset=0)
