"""A release's publication handed as a table to an IO manager of the user's project.

With ``publication.io_manager`` and ``publication.table`` the release has one more asset,
``<release>/<table>`` (``schema.table``: the asset ``<release>/<table>`` with ``schema`` in its
metadata, where database IO managers read it), downstream of ``<release>/published``, stored by
the IO manager the spec names. Its body hands on a partition's table only when:

1. the partition's latest outcome, as ``<release>/published`` materialized it, is
   ``published`` (a refusal, or no outcome yet, fails the step with the reason, nothing
   written);
2. the ledger's current publication of the partition is that outcome's entry; and
3. the rows are read back from the publication's file, whose SHA-256 must be the one the
   ledger recorded (:func:`anon_dagster.release.published_table.publication_table`).

So nothing refused is ever handed to the IO manager: in a run that materializes both, a
refusal fails the blocking ``publication`` check and Dagster does not run this asset; run on
its own, it reads the outcome and refuses itself. The file stays the publication of record
(ledger entry, report); the table is its copy, row for row, with the partition's start in
``publication.table_partition_column`` for a partitioned release (the ``partition_expr`` of
database IO managers).
"""

from typing import Any

import pandas as pd
from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetRecordsFilter,
    AssetsDefinition,
    Failure,
    MetadataValue,
    PartitionsDefinition,
    asset,
)

from ..release.published_table import TableRefused, publication_table
from ..spec import ReleaseSpec
from .sensors import OUTCOME_KEY
from .translator import ReleaseTranslator


def table_key(spec: ReleaseSpec) -> AssetKey | None:
    """``<release>/<table>`` (the table's name without its schema); None without a table publication."""
    if spec.publication.table is None:
        return None
    return AssetKey([spec.release, spec.publication.table.rpartition(".")[2]])


def table_metadata(spec: ReleaseSpec, partitioned: bool) -> dict[str, Any]:
    """What a database IO manager reads from the definition: the schema, and the partition column."""
    schema = spec.publication.table.rpartition(".")[0] if spec.publication.table else ""
    out: dict[str, Any] = {"schema": schema} if schema else {}
    if partitioned:
        out["partition_expr"] = spec.publication.table_partition_column
    return out


def latest_outcome(context: AssetExecutionContext, published: AssetKey, partition: str | None) -> dict[str, Any]:
    """The metadata of the published asset's latest materialization of ``partition`` (empty: none)."""
    records = context.instance.fetch_materializations(
        AssetRecordsFilter(asset_key=published, asset_partitions=[partition] if partition else None), limit=1)
    if not records.records:
        return {}
    event = records.records[0].asset_materialization
    return {k: getattr(v, "value", v) for k, v in (event.metadata if event else {}).items()}


def table_assets(spec: ReleaseSpec, t: ReleaseTranslator, pdef: PartitionsDefinition | None) -> list[AssetsDefinition]:
    """The table asset of the release (see the module docstring); none without ``publication.table``."""
    key = table_key(spec)
    if key is None:
        return []
    published = t.asset_key(spec, "published")

    @asset(key=key, group_name=t.group_name(spec), partitions_def=pdef, deps=[published],
           io_manager_key=spec.publication.io_manager, metadata=table_metadata(spec, pdef is not None),
           kinds={"pandas", "table"}, owners=t.owners(spec, "published") or None,
           tags=t.tags(spec, "published") or None, code_version=t.code_version(spec, "published"),
           required_resource_keys={"ledger", "keystore"},
           description=(f"{spec.release}'s publication as the table {spec.publication.table}, through the IO "
                        f"manager {spec.publication.io_manager!r}: only a partition whose latest outcome is "
                        "published, its rows read back from the file of record and checked against the "
                        "ledger's SHA-256. A refused partition writes nothing."))
    def published_table(context: AssetExecutionContext) -> pd.DataFrame:
        partition = context.partition_key if context.has_partition_key else None
        where = f"{spec.release} {partition or ''}".strip()
        outcome = latest_outcome(context, published, partition)
        if outcome.get(OUTCOME_KEY) != "published":
            said = f"was {outcome[OUTCOME_KEY]}" if OUTCOME_KEY in outcome else "has no outcome yet"
            raise Failure(description=f"{where}: the publication {said} ({published.to_user_string()}): "
                                      f"nothing written to {spec.publication.table}")
        try:
            table, entry = publication_table(spec, context.resources.ledger.open(context.resources.keystore),
                                             partition)
        except TableRefused as exc:
            raise Failure(description=str(exc)) from None
        if outcome.get("ledger_entry") not in (None, entry.id):
            raise Failure(description=f"{where}: the ledger's current publication (entry {entry.id}) is not the "
                                      f"one {published.to_user_string()} published (entry "
                                      f"{outcome['ledger_entry']}): nothing written")
        context.add_output_metadata({"ledger_entry": entry.id, "data_hash": entry.data_hash,
                                     "dagster/row_count": MetadataValue.int(len(table))})
        return table

    return [published_table]


__all__ = ["latest_outcome", "table_assets", "table_key", "table_metadata"]
