"""A release whose source is an asset of the user's Dagster project (``source.asset``), and a
synthetic release whose table is one (``anonymization.synthetic.table: {asset: key}``).

The raw asset then depends on that asset and loads it through the upstream asset's own IO
manager (an :class:`~dagster.AssetIn` with its key, no input manager of ours). Partitions map
as Dagster infers them: a partition of the same key when the upstream asset has the release's
partitions (identity), the overlapping windows when it has other time windows, and the whole
asset when it is unpartitioned. The value loaded goes to the core's
:func:`~anon_dagster.release.pipeline.ingest_frame`: the same checks as a file, the rows of the
partition's window; an upstream partition with rows outside its window is refused rather than
trimmed, as a per-partition file is.

A synthetic table supplied by an asset (the user's generator's output) is an input of the
anonymized asset, loaded and partition-mapped the same way, and handed to the core's
:func:`~anon_dagster.release.pipeline.anonymize`, which checks it as it checks a file's.
"""

from __future__ import annotations

from typing import Any

from dagster import AssetExecutionContext, AssetIn, AssetKey, DagsterInvariantViolationError

from ..release import pipeline
from ..spec import ReleaseSpec

SOURCE_INPUT = "source"
SYNTHETIC_INPUT = "synthetic_table"


def source_ins(spec: ReleaseSpec) -> dict[str, AssetIn]:
    """The raw asset's input: the upstream asset named by ``source.asset``; none for a file source."""
    key = spec.source.asset_key
    return {SOURCE_INPUT: AssetIn(key=AssetKey(list(key)))} if key is not None else {}


def synthetic_ins(spec: ReleaseSpec) -> dict[str, AssetIn]:
    """The anonymized asset's extra input: the asset named by ``anonymization.synthetic.table:
    {asset: key}``; none for a file's table or the built-in synthesizer."""
    settings = spec.anonymization.synthetic
    table = settings.table if settings is not None else None
    if table is None or isinstance(table, str):
        return {}
    return {SYNTHETIC_INPUT: AssetIn(key=AssetKey(list(table.asset_key)))}


def synthetic_table(inputs: dict[str, Any]) -> Any | None:
    """The synthetic table the asset of :func:`synthetic_ins` loaded into ``inputs`` (None without one)."""
    return inputs.get(SYNTHETIC_INPUT)


def upstream_partitioned(context: AssetExecutionContext, name: str = SOURCE_INPUT) -> bool:
    """Whether the upstream asset of input ``name`` is partitioned (its partition is then the table's own)."""
    try:
        return context.asset_partitions_def_for_input(name) is not None
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


__all__ = ["SOURCE_INPUT", "SYNTHETIC_INPUT", "ingest_source", "source_ins", "synthetic_ins", "synthetic_table",
           "upstream_partitioned"]
