"""Opening the key store the environment or the settings name, and creating one.

:func:`open_keystore` picks the backend: keys from the environment, a Vault Transit key, an
encrypted key file, or (only when asked for) the git-ignored development store. *One key
source*: when more than one of them is configured, every entry point refuses to open any
(:func:`check_one_key_source`), instead of each picking its own by a precedence the others may
not share.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from ...errors import SecretError
from .apart import check_location, project_root
from .base import (
    ENV_DEV,
    ENV_KEYSTORE,
    ENV_MASTER_KEY,
    ENV_PASSPHRASE,
    ENV_STATE,
    ENV_VAULT_KEY,
    KeyStore,
)
from .env import EnvKeyBackend
from .file import KEYSTORE_FILENAME, FileKeyBackend, keystore_file

# The package's name, not this module's: log configuration (the demo, the CLI) addresses the key
# store's logger as "anon_dagster.pseudonymize.keystore".
log = logging.getLogger(__package__)

DEV_KEYSTORE = Path(".anon_dagster") / "dev-keystore"
# Not a secret: the development key store protects synthetic demo data only.
DEV_PASSPHRASE = "anon-dagster-development-only"
DEV_WARNING = (
    "DEVELOPMENT KEY STORE in {path}: it lives inside the project folder and its passphrase may be "
    "the public default; never use it for real personal data (set ANON_DAGSTER_KEYSTORE to a "
    "location apart from the data, or ANON_DAGSTER_MASTER_KEY)"
)


def dev_keystore_requested() -> bool:
    """Whether the environment asks for the development key store (``ANON_DAGSTER_DEV_KEYSTORE``)."""
    value = os.environ.get(ENV_DEV)
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def dev_keystore_path() -> Path:
    """The development key store folder: ``.anon_dagster/dev-keystore`` at the project root."""
    return project_root() / DEV_KEYSTORE


def _state_dir_for_env() -> Path | None:
    folder = os.environ.get(ENV_STATE)
    if not folder:
        return None
    path = Path(folder).expanduser().resolve()
    check_location(path / "state")
    return path


PATH_GIVEN = "a key store path given explicitly (--path, the Dagster resource's path)"


def _same_key_file(a: str | Path, b: str | Path) -> bool:
    return keystore_file(a).resolve() == keystore_file(b).resolve()


def key_sources(path: str | Path | None = None) -> list[str]:
    """The key sources configured, by the name of what configures them.

    ``ANON_DAGSTER_MASTER_KEY``, ``ANON_DAGSTER_VAULT_KEY`` and ``ANON_DAGSTER_KEYSTORE`` when set
    (to anything non-empty: a value of spaces is a configured source, and a broken one), plus
    ``path`` when it names another key file than ``ANON_DAGSTER_KEYSTORE`` (or that is unset).
    The development store is no source: it is only the fallback when none is configured.
    """
    sources = [name for name in (ENV_MASTER_KEY, ENV_VAULT_KEY, ENV_KEYSTORE) if os.environ.get(name)]
    env_path = os.environ.get(ENV_KEYSTORE)
    if path is not None and not (env_path and _same_key_file(path, env_path)):
        sources.append(PATH_GIVEN)
    return sources


def check_one_key_source(path: str | Path | None = None) -> None:
    """Refuse (SecretError) when more than one key source is configured (:func:`key_sources`).

    Two sources are two different key stores: the CLI and Dagster would each pick one (no
    pseudonym in common, and a composition check that cannot see the other's publications).
    There is no precedence between them: the operator unsets all but one.
    """
    sources = key_sources(path)
    if len(sources) > 1:
        named = ", ".join(sources[:-1]) + " and " + sources[-1]
        raise SecretError(
            f"{'both' if len(sources) == 2 else 'all of'} {named} are set: each names another key store, "
            "so the entry points (CLI commands, Dagster) would pseudonymize and compose under different "
            "keys; keep exactly one key source"
        )


def open_keystore(path: str | Path | None = None, *, passphrase: str | None = None,
                  dev: bool | None = None, create_dev: bool = True) -> KeyStore:
    """Open the key store the environment (or ``path``) names.

    Exactly one source may be configured (:func:`check_one_key_source`; SecretError naming them
    otherwise): an explicit ``path`` or ``ANON_DAGSTER_KEYSTORE`` (an encrypted key file,
    unsealed with ``ANON_DAGSTER_KEYSTORE_PASSPHRASE``), ``ANON_DAGSTER_MASTER_KEY`` (keys from
    the environment) or ``ANON_DAGSTER_VAULT_KEY`` (a Vault Transit key, with ``VAULT_ADDR`` and
    ``VAULT_TOKEN``). With none, only with ``dev=True`` or ``ANON_DAGSTER_DEV_KEYSTORE=1``, the
    git-ignored development store ``.anon_dagster/dev-keystore`` at the project root (created on
    first use, with a warning). Anything else raises :class:`SecretError`, whose message never
    holds key material.
    """
    check_one_key_source(path)
    dev = dev_keystore_requested() if dev is None else dev
    if path is None and os.environ.get(ENV_MASTER_KEY):
        return KeyStore(EnvKeyBackend(os.environ[ENV_MASTER_KEY]), _state_dir_for_env())
    if path is None and os.environ.get(ENV_VAULT_KEY):
        from .vault import VaultTransitBackend  # only deployments that use Vault load it

        return KeyStore(VaultTransitBackend.from_env(), _state_dir_for_env())
    path = path if path is not None else os.environ.get(ENV_KEYSTORE) or None
    passphrase = passphrase if passphrase is not None else os.environ.get(ENV_PASSPHRASE)
    if path is None:
        if not dev:
            raise SecretError(
                f"no key store configured: set {ENV_KEYSTORE} (and {ENV_PASSPHRASE}) or {ENV_MASTER_KEY}; "
                f"for a local demo only, {ENV_DEV}=1 uses {DEV_KEYSTORE}/ in the project"
            )
        folder = dev_keystore_path()
        passphrase = passphrase or DEV_PASSPHRASE
        # logged, not warnings.warn: the CLI and Dagster runs show it as one plain line
        log.warning(DEV_WARNING.format(path=folder))
        file = folder / KEYSTORE_FILENAME
        if not file.exists() and create_dev:
            backend = FileKeyBackend.create(file, passphrase, dev=True)
        else:
            backend = FileKeyBackend.open(file, passphrase, dev=True)
        return KeyStore(backend, folder, dev=True)
    backend = FileKeyBackend.open(path, passphrase or "", dev=dev)
    return KeyStore(backend, backend.file.parent, dev=dev)


def init_keystore(path: str | Path, passphrase: str, *, scrypt_n: int | None = None,
                  dev: bool = False) -> KeyStore:
    """Create an encrypted key store at ``path`` (a file, or a folder for ``keystore.json``)."""
    backend = FileKeyBackend.create(path, passphrase, scrypt_n=scrypt_n, dev=dev)
    return KeyStore(backend, backend.file.parent, dev=dev)
