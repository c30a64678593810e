"""Dagster resources: the key store, kept apart from the data and configured only by reference.

:class:`KeyStoreResource` opens the key store at run time. Its settings are *where* the store
and its passphrase come from, set with :class:`dagster.EnvVar` so that Dagster keeps only the
variable's name in run config and shows only that name in the UI; the secret values never enter
config, metadata, logs or the event log. Left unset, the core falls back to the environment
variables of the runtime contract (docs/contracts.md) (``ANON_DAGSTER_KEYSTORE``, ``ANON_DAGSTER_KEYSTORE_PASSPHRASE``,
``ANON_DAGSTER_MASTER_KEY``).
"""


import os
from typing import Any

from dagster import ConfigurableResource, EnvVar
from pydantic import PrivateAttr

from ..errors import SecretError
from ..pseudonymize.keystore import ENV_KEYSTORE, ENV_PASSPHRASE


class KeyStoreResource(ConfigurableResource):
    """Opens the key store for pseudonymization, ledger linkage and encryption at rest.

    ``path`` and ``passphrase`` are meant to be :class:`dagster.EnvVar` references; see
    :func:`keystore_from_env`. Opening failures raise :class:`SecretError`, whose message never
    holds key material or the passphrase.
    """

    path: str | None = None
    passphrase: str | None = None

    _store: Any = PrivateAttr(default=None)

    def open(self) -> Any:
        """The opened key store (cached for the life of this resource instance)."""
        if self._store is None:
            self._store = _open_keystore(self.path, self.passphrase)
        return self._store

    def derive_key(self, purpose: str) -> bytes:
        """A 32-byte subkey for an internal purpose (``ledger-linkage``, ``data-at-rest``)."""
        return self.open().derive_key(purpose)


def _open_keystore(path: str | None, passphrase: str | None) -> Any:
    from ..pseudonymize import open_keystore

    try:
        return open_keystore(path, passphrase=passphrase)
    except SecretError:
        raise
    except Exception as exc:  # the message may quote file content: keep only the type
        raise SecretError(f"the key store cannot be opened ({type(exc).__name__})") from None


def keystore_from_env() -> KeyStoreResource:
    """A KeyStoreResource reading its settings from the contract's environment variables.

    A variable that is not set when the definitions load is left out (the core then applies
    its own default, e.g. the development key store), rather than failing every run with
    "environment variable not set".
    """
    return KeyStoreResource(
        path=EnvVar(ENV_KEYSTORE) if os.environ.get(ENV_KEYSTORE) else None,
        passphrase=EnvVar(ENV_PASSPHRASE) if os.environ.get(ENV_PASSPHRASE) else None,
    )


class LedgerResource(ConfigurableResource):
    """The publication ledger (SQLite): ``path``, else ``$ANON_DAGSTER_LEDGER``, else under
    ``$DAGSTER_HOME`` (see :func:`anon_dagster.release.default_ledger_path`)."""

    path: str | None = None

    def open(self) -> Any:
        from ..release import Ledger

        return Ledger(self.path)
