"""The IO manager of a release's intermediate tables: :mod:`anon_dagster.storage` per asset and partition.

The asset key is the table's name, the definition metadata's ``anon_dagster/at_rest`` its policy.
The base folder is ``base_dir`` if set, else ``$DAGSTER_HOME/anon_dagster/storage``, else the
Dagster instance's storage folder: never the repository or the publication folder.
"""

import os
from pathlib import Path

import pandas as pd
from dagster import ConfigurableIOManager, InputContext, OutputContext, ResourceDependency

from .. import storage
from .resources import KeyStoreResource

AT_REST_KEY = "anon_dagster/at_rest"


class AnonParquetIOManager(ConfigurableIOManager):
    """Stores DataFrames as parquet per asset and partition, owner-only, encrypted as the asset's policy says."""

    base_dir: str | None = None
    keystore: ResourceDependency[KeyStoreResource]

    def _store(self, context: InputContext | OutputContext) -> storage.TableStore:
        if self.base_dir:
            return storage.TableStore(Path(self.base_dir).expanduser())
        if os.environ.get("DAGSTER_HOME"):
            return storage.TableStore(Path(os.environ["DAGSTER_HOME"]) / "anon_dagster" / "storage")
        instance = context.step_context.instance if isinstance(context, OutputContext) else context.instance
        return storage.TableStore(Path(instance.storage_directory()) / "anon_dagster")

    def handle_output(self, context: OutputContext, obj: pd.DataFrame) -> None:
        if obj is None:
            return
        policy = (context.definition_metadata or {}).get(AT_REST_KEY, storage.OWNER_ONLY)
        # the key comes before any write: a key store that cannot be opened leaves nothing on disk
        key = storage.data_key(policy, self.keystore.derive_key)
        if key is None and policy == storage.ENCRYPTED_IF_AVAILABLE:
            context.log.warning(f"{context.asset_key.to_user_string()}: no key store configured, personal data "
                                "stored owner-only without encryption at rest")
        self._store(context).write(context.asset_key.path, _partition(context), obj, key)
        context.add_output_metadata({"storage": "encrypted (AES-256-GCM), owner-only" if key else "owner-only"})

    def load_input(self, context: InputContext) -> pd.DataFrame:
        upstream = context.upstream_output
        policy = ((upstream.definition_metadata if upstream else None) or {}).get(AT_REST_KEY, storage.OWNER_ONLY)
        return self._store(context).read(
            context.asset_key.path, _partition(context),
            lambda: self.keystore.derive_key(storage.DATA_AT_REST_PURPOSE),
            # never fall back to clear text where encryption is required
            encrypted_only=policy == storage.ENCRYPTED)


def _partition(context: InputContext | OutputContext) -> str | None:
    return context.asset_partition_key if context.has_asset_partitions else None
