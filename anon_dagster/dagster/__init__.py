"""Dagster wiring of anon_dagster: each release spec becomes a privacy-gated asset graph.

The core (spec, risk, anonymize, pseudonymize, release) knows nothing of Dagster; this package
is the thin layer that turns it into assets, blocking asset checks, partitions, a job and a
schedule per release, resources and an IO manager. See docs/dagster.md.
"""

from .components import AnonReleaseComponent, load_release_definitions
from .factory import ReleaseDefinitions, ReleaseTranslator, build_release
from .io_manager import AnonParquetIOManager
from .resources import KeyStoreResource, LedgerResource, keystore_from_env

__all__ = [
    "AnonParquetIOManager",
    "AnonReleaseComponent",
    "KeyStoreResource",
    "LedgerResource",
    "ReleaseDefinitions",
    "ReleaseTranslator",
    "build_release",
    "keystore_from_env",
    "load_release_definitions",
]
