"""Dagster time-window partitions: the windows of :mod:`anon_dagster.partitions`, complete
periods only (``end_offset=0``): a release is never made of a period still filling up."""

from __future__ import annotations

from dagster import TimeWindowPartitionsDefinition

from ..partitions import window_schedule
from ..spec import ReleaseSpec


def partitions_def_for(spec: ReleaseSpec) -> TimeWindowPartitionsDefinition | None:
    """The spec's partitions as a Dagster definition, or None for an unpartitioned release."""
    window = window_schedule(spec)
    return TimeWindowPartitionsDefinition(**window, timezone="UTC", end_offset=0) if window is not None else None
