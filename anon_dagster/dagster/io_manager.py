"""The IO manager of a release's intermediate tables (:mod:`anon_dagster.release.step_storage`)."""

from pathlib import Path

import pandas as pd
from dagster import ConfigurableIOManager, InputContext, OutputContext, ResourceDependency

from ..errors import SecretError
from ..release.governance.access import custody_context
from ..release.step_storage import AT_REST_KEY, read_step, step_policy, storage_folder, write_step
from .resources import KeyStoreResource


class AnonParquetIOManager(ConfigurableIOManager):
    """Stores DataFrames as parquet per asset and partition, owner-only, encrypted as the asset's policy says."""

    base_dir: str | None = None
    keystore: ResourceDependency[KeyStoreResource]

    def _folder(self, context: InputContext | OutputContext) -> Path:
        def instance_folder() -> str:  # only asked for when neither base_dir nor $DAGSTER_HOME is set
            instance = context.step_context.instance if isinstance(context, OutputContext) else context.instance
            return instance.storage_directory()

        return storage_folder(self.base_dir, instance_folder)

    def handle_output(self, context: OutputContext, obj: pd.DataFrame) -> None:
        if obj is None:
            return
        note, warning = write_step(self._folder(context), context.asset_key.path, _partition(context), obj,
                                   step_policy(context.definition_metadata), self.keystore.derive_key)
        if warning:
            context.log.warning(warning)
        context.add_output_metadata({"storage": note})

    def load_input(self, context: InputContext) -> pd.DataFrame:
        upstream = context.upstream_output
        try:  # the read goes into the custody log of the run's own key store
            store = self.keystore.open()
        except SecretError:  # none: the storage layer says once that reads go unrecorded
            store = None
        run_id, step, launcher = _run_and_step(context)
        with custody_context(keystore=store, run=run_id, why=f"input of {step}", actor=launcher):
            return read_step(self._folder(context), context.asset_key.path, _partition(context),
                             step_policy(upstream.definition_metadata if upstream else None), self.keystore.derive_key)


USER_TAG = "user"  # the run tag naming who launched it (Dagster+ sets it)


def _run_and_step(context: InputContext) -> tuple[str | None, str, str | None]:
    """The run id, step key and launcher (the run's ``user`` tag, set by Dagster+) of a load
    (None, the input's name and None outside a run)."""
    try:
        step = context.step_context
    except Exception:  # noqa: BLE001 - a context built outside a run (direct calls)
        return None, context.name or "input", None
    return step.run_id, step.step.key, step.run_tags.get(USER_TAG)


def _partition(context: InputContext | OutputContext) -> str | None:
    return context.asset_partition_key if context.has_asset_partitions else None


__all__ = ["AT_REST_KEY", "AnonParquetIOManager"]
