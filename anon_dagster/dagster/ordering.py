"""Partitions of one population published in order, the Dagster side (see docs/dagster.md).

Which releases are ordered, the wait and the population lock are the core's
(:mod:`anon_dagster.release.population_order`). Here: the published asset's dependency on its own
partition before (:func:`earlier_partition_deps`: backfills, the automation daemon and
"materialize missing" then go one partition after the other), and the runs in progress that
decide a partition (:func:`deciding_runs`), which :func:`await_earlier_partition` waits for.
"""

from __future__ import annotations

from typing import Any

from dagster import (
    AssetDep,
    DagsterInstance,
    DagsterRunStatus,
    PartitionsDefinition,
    RunsFilter,
    TimeWindowPartitionMapping,
)

from ..release.population_order import (
    ORDER_WAIT_SECONDS,
    POLL_SECONDS,
    is_ordered,
    population_lock,
    previous_key,
    wait_while_deciding,
)
from ..spec import ReleaseSpec
from .translator import ReleaseTranslator

PARTITION_TAG = "dagster/partition"
IN_PROGRESS = [DagsterRunStatus.NOT_STARTED, DagsterRunStatus.QUEUED, DagsterRunStatus.STARTING,
               DagsterRunStatus.STARTED]

PREVIOUS_PARTITION = TimeWindowPartitionMapping(start_offset=-1, end_offset=-1)


def earlier_partition_deps(spec: ReleaseSpec, translator: ReleaseTranslator) -> list[AssetDep]:
    """The published asset's dependency on its own partition before (none for an unordered release)."""
    if not is_ordered(spec):
        return []
    return [AssetDep(translator.asset_key(spec, "published"), partition_mapping=PREVIOUS_PARTITION)]


def previous_partition(partitions_def: PartitionsDefinition | None, partition: str | None) -> str | None:
    """The partition key before ``partition`` (None for the first one, or when unpartitioned)."""
    if partitions_def is None:
        return None
    return previous_key(list(partitions_def.get_partition_keys()), partition)


def deciding_runs(instance: DagsterInstance, spec: ReleaseSpec, translator: ReleaseTranslator, partition: str,
                  *, besides: str | None = None) -> list[str]:
    """The ids of the runs in progress that decide ``partition``'s publication: runs of that
    partition whose selection holds the published asset (a run of the whole release job too)."""
    published = translator.asset_key(spec, "published")
    records = instance.get_run_records(filters=RunsFilter(statuses=IN_PROGRESS, tags={PARTITION_TAG: partition}))
    out = []
    for record in records:
        run = record.dagster_run
        if run.run_id == besides:
            continue
        selection = run.asset_selection  # none or empty: the whole job
        if (published in selection) if selection else run.job_name == translator.job_name(spec):
            out.append(run.run_id)
    return out


def await_earlier_partition(context: Any, spec: ReleaseSpec, translator: ReleaseTranslator,
                            partitions_def: PartitionsDefinition | None, *,
                            timeout: float = ORDER_WAIT_SECONDS, poll: float = POLL_SECONDS) -> str | None:
    """Wait while a run deciding the partition before this one is in progress (ordered releases);
    None when the step may go on, else one line saying what it waited for in vain."""
    partition = context.partition_key if context.has_partition_key else None
    earlier = previous_partition(partitions_def, partition) if is_ordered(spec) else None
    if earlier is None:
        return None
    return wait_while_deciding(
        spec, partition, earlier,
        lambda: deciding_runs(context.instance, spec, translator, earlier, besides=context.run.run_id),
        on_wait=context.log.info, timeout=timeout, poll=poll)


__all__ = ["ORDER_WAIT_SECONDS", "PREVIOUS_PARTITION", "await_earlier_partition", "deciding_runs",
           "earlier_partition_deps", "is_ordered", "population_lock", "previous_partition"]
