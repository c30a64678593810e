"""The key store: versioned master keys held apart from the data, behind pluggable backends.

A :class:`KeyStore` never hands out a master key. It hands out *subkeys*, each derived for one
use with HKDF-SHA256 (RFC 5869), whose ``info`` is the JSON list
``["anon_dagster", family, *labels, version]`` — length-delimited, so no two uses can collide:

* pseudonym keys: ``["anon_dagster", "pseudonym", method, purpose, v]`` (one per purpose, so the
  research and the billing tables share no pseudonym and cannot be joined), and
  ``[..., purpose, "publication", "<release>/<partition>", v]`` for a pseudonym of scope ``release``
  (one key per publication, so two publications share no pseudonym);
* internal keys, :meth:`KeyStore.derive_key`: ``["anon_dagster", "internal", purpose, v]`` for
  ``"ledger-linkage"``, ``"data-at-rest"``, ``"audit-log"``, ``"token-vault:<purpose>"``…

Backends (:class:`KeyBackend`):

* :class:`FileKeyBackend` — an encrypted key file: the master keys are sealed with AES-256-GCM
  under a key-encryption key derived by scrypt from ``ANON_DAGSTER_KEYSTORE_PASSPHRASE``; the
  file's metadata (format, KDF parameters, key versions and dates) is bound as associated data,
  so editing any of it breaks the seal. The file must be mode 0600 and must not sit inside a
  data, publication or repository folder (:func:`check_location`).
* :class:`EnvKeyBackend` — master keys from ``ANON_DAGSTER_MASTER_KEY`` (base64; ``1:<b64>,2:<b64>``
  for several versions), for containers whose secret manager injects the variable.
* :class:`ExternalKeyBackend` — the interface for a KMS / Vault: the master key stays in the
  service, which only computes one MAC per key version; subkeys are expanded from it locally
  (:class:`~.vault.VaultTransitBackend` for Vault Transit).

:func:`open_keystore` picks the backend from the environment, and refuses when more than one
key source is configured (:func:`check_one_key_source`). The ledger's linkage key is pinned to
key version 1 (:data:`PINNED_VERSIONS`): rotation does not change it.

Modules: :mod:`.base` (the interface, subkey derivation, :class:`KeyStore`), :mod:`.env`,
:mod:`.file` and :mod:`.vault` (the backends), :mod:`.apart` (where a key store may not live),
:mod:`.locate` (opening from the environment or settings, creating), :mod:`.anchor` (where the key
store records the reversal audit log's head, so erasing or replacing the log is detected).
"""

from .anchor import ANCHOR_FILENAME, AnchorInvalid, AnchorStore, AuditAnchor, StateFileAnchor
from .apart import FORBIDDEN_FOLDER_NAMES, check_apart_from, check_location, project_root
from .base import (
    ENV_DEV,
    ENV_KEYSTORE,
    ENV_MASTER_KEY,
    ENV_PASSPHRASE,
    ENV_STATE,
    ENV_VAULT_KEY,
    LINKAGE_KEY_VERSION,
    LINKAGE_PURPOSE,
    MASTER_KEY_BYTES,
    PINNED_VERSIONS,
    ExternalKeyBackend,
    KeyBackend,
    KeyInfo,
    KeyStore,
    hkdf_info,
)
from .env import EnvKeyBackend
from .file import (
    DEFAULT_SCRYPT_N,
    FILE_FORMAT,
    FILE_FORMAT_VERSION,
    KEYSTORE_FILENAME,
    MIN_SCRYPT_N,
    SCRYPT_P,
    SCRYPT_R,
    FileKeyBackend,
    KeyFileAnchor,
    keystore_file,
)
from .locate import (
    DEV_KEYSTORE,
    DEV_PASSPHRASE,
    DEV_WARNING,
    check_one_key_source,
    dev_keystore_path,
    dev_keystore_requested,
    init_keystore,
    key_sources,
    open_keystore,
)

__all__ = [
    "ANCHOR_FILENAME", "AnchorInvalid", "AnchorStore", "AuditAnchor", "KeyFileAnchor", "StateFileAnchor",
    "DEFAULT_SCRYPT_N", "DEV_KEYSTORE", "DEV_PASSPHRASE", "DEV_WARNING", "ENV_DEV", "ENV_KEYSTORE",
    "ENV_MASTER_KEY", "ENV_PASSPHRASE", "ENV_STATE", "ENV_VAULT_KEY", "FILE_FORMAT",
    "FILE_FORMAT_VERSION", "FORBIDDEN_FOLDER_NAMES", "KEYSTORE_FILENAME", "LINKAGE_KEY_VERSION",
    "LINKAGE_PURPOSE", "MASTER_KEY_BYTES", "MIN_SCRYPT_N", "PINNED_VERSIONS", "SCRYPT_P", "SCRYPT_R",
    "EnvKeyBackend", "ExternalKeyBackend", "FileKeyBackend", "KeyBackend", "KeyInfo", "KeyStore",
    "check_apart_from", "check_location", "check_one_key_source", "dev_keystore_path",
    "dev_keystore_requested", "hkdf_info", "init_keystore", "key_sources", "keystore_file",
    "open_keystore", "project_root",
]
