"""Dagster resources: the key store (configured only by reference, :class:`dagster.EnvVar`), the
publication ledger and the execution engine (docs/dagster.md)."""

from typing import TYPE_CHECKING, Any

from dagster import ConfigurableResource, EnvVar, InitResourceContext, ResourceDependency
from pydantic import PrivateAttr

from ..pseudonymize.keystore import KeyStore
from ..pseudonymize.keystore.guarded import keystore_variables, open_keystore_guarded

if TYPE_CHECKING:
    from ..engine import Engine
    from ..release import Ledger


class KeyStoreResource(ConfigurableResource):
    """The key store, opened at run time (``path``, ``passphrase`` unset: the core's environment
    variables); failures are :class:`~anon_dagster.errors.SecretError` without content."""

    path: str | None = None
    passphrase: str | None = None

    _store: KeyStore | None = PrivateAttr(default=None)

    def open(self) -> KeyStore:
        """The opened key store (cached for the life of this resource instance)."""
        if self._store is None:
            self._store = open_keystore_guarded(self.path, self.passphrase)
        return self._store

    def derive_key(self, purpose: str) -> bytes:
        """A 32-byte subkey for an internal purpose (``ledger-linkage``, ``data-at-rest``)."""
        return self.open().derive_key(purpose)


def keystore_from_env() -> KeyStoreResource:
    """A KeyStoreResource referring to the key store variables set when the definitions load."""
    return KeyStoreResource(**{k: EnvVar(v) if v else None for k, v in keystore_variables().items()})


class LedgerResource(ConfigurableResource):
    """The publication ledger: ``path``, else ``$ANON_DAGSTER_LEDGER``, else under ``$DAGSTER_HOME``."""

    path: str | None = None

    def open(self, keystore: "KeyStoreResource | KeyStore") -> "Ledger":
        """The ledger, opened and verified with the integrity key of ``keystore``."""
        from ..release.ledger import open_ledger

        return open_ledger(self.path, keystore)


class EngineResource(ConfigurableResource):
    """Where the rows are processed: ``engine`` ``pandas`` (default) or ``spark`` (docs/scale.md);
    ``spark``: a SparkSession, or a resource holding one (dagster-pyspark's), to run on."""

    engine: str = "pandas"
    spark_master: str = "local[2]"
    max_driver_cells: int = 50_000_000
    max_worker_cells: int = 20_000_000
    scratch_dir: str | None = None
    spark: ResourceDependency[Any] = None

    _opened: Any = PrivateAttr(default=None)

    def open(self, spark_session: Any = None) -> "Engine":
        """The engine; ``spark_session`` (a SparkSession, or a resource holding one) for Spark."""
        from ..engine import open_engine

        session = getattr(spark_session, "spark_session", spark_session)
        return open_engine(self.engine, spark_master=self.spark_master, spark=session,
                           max_driver_cells=self.max_driver_cells, max_worker_cells=self.max_worker_cells,
                           scratch_dir=self.scratch_dir)

    def run_engine(self) -> "Engine":
        """The run's engine, on ``spark`` when given: opened once, closed once the run's steps are done."""
        if self._opened is None:
            self._opened = self.open(self.spark)
        return self._opened

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._opened is not None:
            self._opened.close()
            self._opened = None
