"""A release's publication handed as a table to an IO manager of the user's project: the asset
``<release>/<table>``, downstream of ``<release>/published``; what it hands on is decided by
:func:`anon_dagster.release.published_table.table_of_record` (docs/dagster.md)."""

from typing import Any

import dagster as dg
import pandas as pd

from ..release.published_table import (
    TableRefused,
    table_definition_metadata,
    table_description,
    table_of_record,
    table_path,
)
from ..spec import ReleaseSpec
from .translator import ReleaseTranslator, asset_attributes


def latest_outcome(context: dg.AssetExecutionContext, published: dg.AssetKey, partition: str | None) -> dict[str, Any]:
    """The metadata of the published asset's latest materialization of ``partition`` (empty: none)."""
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=published, asset_partitions=[partition] if partition else None), limit=1)
    event = records.records[0].asset_materialization if records.records else None
    return {k: getattr(v, "value", v) for k, v in (event.metadata if event else {}).items()}


def table_assets(spec: ReleaseSpec, t: ReleaseTranslator,
                 pdef: dg.PartitionsDefinition | None) -> list[dg.AssetsDefinition]:
    """The table asset of the release; none without ``publication.table``."""
    path = table_path(spec)
    if path is None:
        return []
    published = t.asset_key(spec, "published")

    @dg.asset(**{**asset_attributes(t, spec, "published", pdef), "key": dg.AssetKey(path), "kinds": {"pandas", "table"},
              "metadata": table_definition_metadata(spec, pdef is not None), "description": table_description(spec)},
           deps=[published], io_manager_key=spec.publication.io_manager, required_resource_keys={"ledger", "keystore"})
    def published_table(context: dg.AssetExecutionContext) -> pd.DataFrame:
        partition = context.partition_key if context.has_partition_key else None
        try:
            table, entry = table_of_record(spec, lambda: context.resources.ledger.open(context.resources.keystore),
                                           partition, latest_outcome(context, published, partition),
                                           published.to_user_string())
        except TableRefused as exc:
            raise dg.Failure(description=str(exc)) from None
        context.add_output_metadata({"ledger_entry": entry.id, "data_hash": entry.data_hash,
                                     "dagster/row_count": dg.MetadataValue.int(len(table))})
        return table

    return [published_table]


__all__ = ["latest_outcome", "table_assets"]
