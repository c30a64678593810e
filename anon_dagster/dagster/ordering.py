"""Partitions of one population published in order, whatever launches them.

A release that is composed with the earlier publications of its population (``composition:``)
or spends a population's ε budget (``publication.mode: aggregates``) is judged against what the
ledger holds when it is judged: run out of order, 2025 would be composed with nothing and 2024
refused because of 2025, the reverse of running them one after the other. Such a release is
*ordered*:

- in Dagster's graph, ``<release>/published`` of a partition depends on the same asset of the
  partition before it (:func:`earlier_partition_deps`, a self-dependency with
  ``TimeWindowPartitionMapping(start_offset=-1, end_offset=-1)``; the first partition has none).
  A backfill, the automation daemon and the UI's "materialize missing" then materialize the
  published partitions one after the other; a refusal is materialized too (outcome ``refused``),
  so the partition after it is never held back by it;
- at run time, the checks and the publication of a partition wait while a run that decides the
  partition before it is in progress (:func:`await_earlier_partition`): runs launched together,
  in any order, give the outcome of running them one after the other. A partition whose
  predecessor no run is deciding is judged against the ledger as it is (with a warning);
- two publications of one population (two partitions, or two releases naming the same
  ``composition.population`` or ε budget) are never evaluated and written at the same time
  (:func:`population_lock`): each one is composed with the other's recorded outcome.

Releases of one population in different specs have no order between them (their partitions
need not line up): whichever publishes first is the earlier publication of the other.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dagster import (
    AssetDep,
    DagsterInstance,
    DagsterRunStatus,
    PartitionsDefinition,
    RunsFilter,
    TimeWindowPartitionMapping,
)

from ..release.publication import recorded_population
from ..spec import ReleaseSpec
from .translator import ReleaseTranslator

# how long a step waits for the run deciding the partition before it, or for another publication
# of its population, before it gives up (the checks then go on with a warning, the publication fails)
ORDER_WAIT_SECONDS = 3600.0
POLL_SECONDS = 1.0

PARTITION_TAG = "dagster/partition"
IN_PROGRESS = [DagsterRunStatus.NOT_STARTED, DagsterRunStatus.QUEUED, DagsterRunStatus.STARTING,
               DagsterRunStatus.STARTED]

PREVIOUS_PARTITION = TimeWindowPartitionMapping(start_offset=-1, end_offset=-1)


def is_ordered(spec: ReleaseSpec) -> bool:
    """Whether the release's partitions must be published in order: it is partitioned and is
    judged against its population's earlier publications (composition, or the ε budget)."""
    return spec.partitions is not None and recorded_population(spec) is not None


def earlier_partition_deps(spec: ReleaseSpec, translator: ReleaseTranslator) -> list[AssetDep]:
    """The published asset's dependency on its own partition before (none for an unordered release)."""
    if not is_ordered(spec):
        return []
    return [AssetDep(translator.asset_key(spec, "published"), partition_mapping=PREVIOUS_PARTITION)]


def previous_partition(partitions_def: PartitionsDefinition | None, partition: str | None) -> str | None:
    """The partition key before ``partition`` (None for the first one, or when unpartitioned)."""
    if partitions_def is None or partition is None:
        return None
    keys = list(partitions_def.get_partition_keys())
    index = keys.index(partition) if partition in keys else -1
    return keys[index - 1] if index > 0 else None


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
    """Wait while a run deciding the partition before this one is in progress (ordered releases).

    Returns None when the step may go on (nothing to wait for, or the earlier run ended), else
    one line saying what it waited for in vain (``timeout`` seconds).
    """
    partition = context.partition_key if context.has_partition_key else None
    earlier = previous_partition(partitions_def, partition) if is_ordered(spec) else None
    if earlier is None:
        return None
    deadline = time.monotonic() + timeout
    told = False
    while runs := deciding_runs(context.instance, spec, translator, earlier, besides=context.run.run_id):
        if time.monotonic() >= deadline:
            return (f"{spec.release} {partition}: the run deciding {earlier} ({runs[0]}) was still in progress "
                    f"after {timeout:g} s; partitions of population {recorded_population(spec)!r} are "
                    f"published in order")
        if not told:
            context.log.info(f"{spec.release} {partition}: waiting for {earlier} to be decided first (run {runs[0]}): "
                             f"partitions of population {recorded_population(spec)!r} are published in order")
            told = True
        time.sleep(poll)
    return None


@contextmanager
def population_lock(spec: ReleaseSpec, ledger_path: str | Path, *,
                    timeout: float = ORDER_WAIT_SECONDS, poll: float = POLL_SECONDS) -> Iterator[bool]:
    """Hold the lock of the release's population (none for a release without one) while its
    publication is evaluated and written; yields whether it is held.

    The lock file sits beside the ledger (``.<ledger>.<digest of the population>.lock``,
    owner-only), so every process publishing into that ledger on this machine takes the same one.
    Raises TimeoutError after ``timeout`` seconds.
    """
    population = recorded_population(spec)
    if population is None:
        yield False
        return
    try:
        import fcntl
    except ImportError:  # no advisory locks on this platform: the ledger's transactions still hold
        yield False
        return
    ledger = Path(ledger_path)
    digest = hashlib.sha256(population.encode()).hexdigest()[:16]
    fd = os.open(ledger.with_name(f".{ledger.name}.{digest}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"another publication of population {population!r} held its lock for "
                                       f"more than {timeout:g} s") from None
                time.sleep(poll / 10)
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


__all__ = ["ORDER_WAIT_SECONDS", "PREVIOUS_PARTITION", "await_earlier_partition", "deciding_runs",
           "earlier_partition_deps", "is_ordered", "population_lock", "previous_partition"]
