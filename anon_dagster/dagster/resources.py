"""Dagster resources: the key store (configured only by reference, :class:`dagster.EnvVar`: the
secret values never enter config, metadata or logs), the publication ledger and the execution
engine (the deployment's choice: :mod:`anon_dagster.engine`)."""

import os
from typing import TYPE_CHECKING, Any

from dagster import ConfigurableResource, EnvVar
from pydantic import PrivateAttr

from ..errors import SecretError
from ..pseudonymize.keystore import ENV_KEYSTORE, ENV_PASSPHRASE, KeyStore, open_keystore

if TYPE_CHECKING:
    from ..engine import Engine
    from ..release import Ledger


class KeyStoreResource(ConfigurableResource):
    """The key store of pseudonymization, ledger linkage and encryption at rest, opened at run time.

    ``path`` and ``passphrase`` unset: the core's environment variables (docs/contracts.md).
    Opening failures raise :class:`SecretError`, whose message never holds key material or the passphrase.
    """

    path: str | None = None
    passphrase: str | None = None

    _store: KeyStore | None = PrivateAttr(default=None)

    def open(self) -> KeyStore:
        """The opened key store (cached for the life of this resource instance)."""
        if self._store is None:
            try:
                self._store = open_keystore(self.path, passphrase=self.passphrase)
            except SecretError:
                raise
            except Exception as exc:  # the message may quote file content: keep only the type
                raise SecretError(f"the key store cannot be opened ({type(exc).__name__})") from None
        return self._store

    def derive_key(self, purpose: str) -> bytes:
        """A 32-byte subkey for an internal purpose (``ledger-linkage``, ``data-at-rest``)."""
        return self.open().derive_key(purpose)


def keystore_from_env() -> KeyStoreResource:
    """A KeyStoreResource referring to the key store variables that are set when the definitions load.

    An unset variable is left out (the core then applies its own default) rather than failing
    every run with "environment variable not set".
    """
    return KeyStoreResource(
        path=EnvVar(ENV_KEYSTORE) if os.environ.get(ENV_KEYSTORE) else None,
        passphrase=EnvVar(ENV_PASSPHRASE) if os.environ.get(ENV_PASSPHRASE) else None,
    )


class LedgerResource(ConfigurableResource):
    """The publication ledger: ``path``, else ``$ANON_DAGSTER_LEDGER``, else under ``$DAGSTER_HOME``
    (:func:`anon_dagster.release.default_ledger_path`); it must exist (``anon-dagster ledger init``)."""

    path: str | None = None

    def open(self, keystore: "KeyStoreResource | KeyStore") -> "Ledger":
        """The ledger, opened and verified with the integrity key of ``keystore``."""
        from ..release.ledger import open_ledger

        return open_ledger(self.path, keystore)


class EngineResource(ConfigurableResource):
    """Where the releases' rows are processed: ``engine`` ``pandas`` (the default) or ``spark``
    (``spark_master``, ``max_driver_cells``, ``scratch_dir``: docs/scale.md)."""

    engine: str = "pandas"
    spark_master: str = "local[2]"
    max_driver_cells: int = 50_000_000
    scratch_dir: str | None = None

    def open(self, spark_session: Any = None) -> "Engine":
        """The engine; ``spark_session`` (a SparkSession, or a resource with ``spark_session``,
        such as dagster-pyspark's) is the session the Spark engine runs on."""
        from ..engine import open_engine

        if self.engine == "pandas":
            return open_engine("pandas")
        session = getattr(spark_session, "spark_session", spark_session)
        return open_engine(self.engine, spark_master=self.spark_master, spark=session,
                           max_driver_cells=self.max_driver_cells, scratch_dir=self.scratch_dir)
