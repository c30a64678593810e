"""Partitions of one population published in order: the published asset's dependency on its partition
before and the wait for a run deciding it; the rules are :mod:`anon_dagster.release.population_order`'s."""

from __future__ import annotations

from typing import Any

import dagster as dg

from ..release import population_order as order
from ..spec import ReleaseSpec
from .translator import ReleaseTranslator

PARTITION_TAG = "dagster/partition"
IN_PROGRESS = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.STARTING,
               dg.DagsterRunStatus.STARTED]
PREVIOUS_PARTITION = dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1)


def earlier_partition_deps(spec: ReleaseSpec, translator: ReleaseTranslator) -> list[dg.AssetDep]:
    """The published asset's dependency on its own partition before (none for an unordered release)."""
    if not order.is_ordered(spec):
        return []
    return [dg.AssetDep(translator.asset_key(spec, "published"), partition_mapping=PREVIOUS_PARTITION)]


def previous_partition(partitions_def: dg.PartitionsDefinition | None, partition: str | None) -> str | None:
    """The partition key before ``partition`` (None for the first one, or when unpartitioned)."""
    return order.previous_key(list(partitions_def.get_partition_keys()), partition) if partitions_def else None


def deciding_runs(instance: dg.DagsterInstance, spec: ReleaseSpec, translator: ReleaseTranslator, partition: str,
                  *, besides: str | None = None) -> list[str]:
    """The ids of the runs in progress that decide ``partition``'s publication (``population_order.decides``)."""
    published = translator.asset_key(spec, "published").to_user_string()
    runs = [r.dagster_run for r in instance.get_run_records(
        filters=dg.RunsFilter(statuses=IN_PROGRESS, tags={PARTITION_TAG: partition}))]
    return [run.run_id for run in runs if run.run_id != besides and order.decides(
        [k.to_user_string() for k in run.asset_selection or ()], run.job_name, published, translator.job_name(spec))]


def await_earlier_partition(context: Any, spec: ReleaseSpec, translator: ReleaseTranslator,
                            partitions_def: dg.PartitionsDefinition | None, *,
                            timeout: float = order.ORDER_WAIT_SECONDS, poll: float = order.POLL_SECONDS) -> str | None:
    """Wait while a run deciding the partition before this one is in progress (ordered releases);
    None when the step may go on, else one line saying what it waited for in vain."""
    partition = context.partition_key if context.has_partition_key else None
    earlier = order.earlier_partition(
        spec, partition, lambda: list(partitions_def.get_partition_keys()) if partitions_def else [])
    if earlier is None:
        return None
    return order.wait_while_deciding(
        spec, partition, earlier,
        lambda: deciding_runs(context.instance, spec, translator, earlier, besides=context.run.run_id),
        on_wait=context.log.info, timeout=timeout, poll=poll)


__all__ = ["PREVIOUS_PARTITION", "await_earlier_partition", "deciding_runs", "earlier_partition_deps",
           "previous_partition"]
