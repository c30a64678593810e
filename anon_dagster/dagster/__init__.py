"""Dagster wiring of anon_dagster: each release spec becomes a privacy-gated asset graph (assets,
blocking checks, partitions, job, schedule, sensors, resources); the core knows nothing of Dagster."""

from .assets import ReleaseDefinitions, build_release
from .components import AnonReleaseComponent, load_release_definitions
from .io_manager import AnonParquetIOManager
from .resources import KeyStoreResource, LedgerResource, keystore_from_env
from .translator import ReleaseTranslator

__all__ = ["AnonParquetIOManager", "AnonReleaseComponent", "KeyStoreResource", "LedgerResource", "ReleaseDefinitions",
           "ReleaseTranslator", "build_release", "keystore_from_env", "load_release_definitions"]
