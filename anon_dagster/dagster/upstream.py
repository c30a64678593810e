"""A release whose source, or synthetic table, is an asset of the user's Dagster project: an
:class:`~dagster.AssetIn` with its key (loaded by that asset's own IO manager, partitions mapped
as Dagster infers them), the value handed to the core; docs/dagster.md."""

from __future__ import annotations

from typing import Any

from dagster import AssetExecutionContext, AssetIn, AssetKey, DagsterInvariantViolationError

from ..release import pipeline
from ..release.release_names import SOURCE_INPUT, SYNTHETIC_INPUT, project_inputs
from ..spec import ReleaseSpec


def _ins(spec: ReleaseSpec, step: str) -> dict[str, AssetIn]:
    return {name: AssetIn(key=AssetKey(path)) for name, path in project_inputs(spec, step).items()}


def source_ins(spec: ReleaseSpec) -> dict[str, AssetIn]:
    """The raw asset's input: the upstream asset named by ``source.asset``; none for a file source."""
    return _ins(spec, "raw")


def synthetic_ins(spec: ReleaseSpec) -> dict[str, AssetIn]:
    """The anonymized asset's extra input: the asset of ``anonymization.synthetic.table: {asset: key}``."""
    return _ins(spec, "anonymized")


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
    """The partition's rows of the release's source: the file, or the upstream asset's value in ``inputs``."""
    if spec.source.asset_key is None:
        return pipeline.ingest(spec, partition)
    return pipeline.ingest_frame(spec, inputs[SOURCE_INPUT], partition, source=spec.source.described,
                                 one_partition=partition is not None and upstream_partitioned(context))


__all__ = ["ingest_source", "source_ins", "synthetic_ins", "synthetic_table", "upstream_partitioned"]
