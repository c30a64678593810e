"""A release whose source is an asset of the user's Dagster project (``source.asset``).

The raw asset then depends on that asset and loads it through the upstream asset's own IO
manager (an :class:`~dagster.AssetIn` with its key, no input manager of ours). Partitions map
as Dagster infers them: a partition of the same key when the upstream asset has the release's
partitions (identity), the overlapping windows when it has other time windows, and the whole
asset when it is unpartitioned. The value loaded goes to the core's
:func:`~anon_dagster.release.pipeline.ingest_frame`: the same checks as a file, the rows of the
partition's window; an upstream partition with rows outside its window is refused rather than
trimmed, as a per-partition file is.
"""

from __future__ import annotations

from typing import Any

from dagster import AssetExecutionContext, AssetIn, AssetKey, DagsterInvariantViolationError

from ..release import pipeline
from ..spec import ReleaseSpec

SOURCE_INPUT = "source"


def source_ins(spec: ReleaseSpec) -> dict[str, AssetIn]:
    """The raw asset's input: the upstream asset named by ``source.asset``; none for a file source."""
    key = spec.source.asset_key
    return {SOURCE_INPUT: AssetIn(key=AssetKey(list(key)))} if key is not None else {}


def upstream_partitioned(context: AssetExecutionContext) -> bool:
    """Whether the upstream asset is partitioned (its partition is then the table's own)."""
    try:
        return context.asset_partitions_def_for_input(SOURCE_INPUT) is not None
    except DagsterInvariantViolationError:  # Dagster's answer for an unpartitioned upstream asset
        return False


def ingest_source(context: AssetExecutionContext, spec: ReleaseSpec, partition: str | None,
                  inputs: dict[str, Any]) -> pipeline.Ingested:
    """The partition's rows of the release's source: the file (:func:`~anon_dagster.release.pipeline.ingest`),
    or the upstream asset's value loaded into ``inputs`` (:func:`~anon_dagster.release.pipeline.ingest_frame`)."""
    if spec.source.asset_key is None:
        return pipeline.ingest(spec, partition)
    return pipeline.ingest_frame(spec, inputs[SOURCE_INPUT], partition, source=spec.source.described,
                                 one_partition=partition is not None and upstream_partitioned(context))


__all__ = ["SOURCE_INPUT", "ingest_source", "source_ins", "upstream_partitioned"]
