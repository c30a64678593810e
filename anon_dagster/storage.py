"""Intermediate tables at rest: parquet files, owner-only, personal data encrypted.

Definitions:

* layout: the table named ``(release, step)`` is stored, per partition, at
  ``<base>/<release>/<step>/<partition>.parquet`` (``__all__`` when unpartitioned), or
  ``.parquet.enc`` when encrypted; ``<base>`` and every folder below it have mode 0700, files
  mode 0600, written atomically;
* encrypted file: ``ANONENC1 | nonce (12 bytes) | ciphertext+tag``, the AES-256-GCM encryption
  of the table's parquet (pyarrow) bytes under the key store's ``data-at-rest`` subkey, with a
  fresh nonce per write. The associated data is ``<release>/<step>|<partition>`` (empty
  partition when unpartitioned), so a file moved to another table or partition does not decrypt;
* policies: ``encrypted`` (raw and pseudonymized tables: the key store must open),
  ``encrypted-if-available`` (a release that needs no key store: encrypted when one opens, else
  clear text), ``owner-only`` (clear text). Every policy stores owner-only.
"""

from __future__ import annotations

import io
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .errors import DataError, SecretError
from .io import write_bytes_atomic

MAGIC = b"ANONENC1"
NONCE_BYTES = 12
DATA_AT_REST_PURPOSE = "data-at-rest"
ENCRYPTED, ENCRYPTED_IF_AVAILABLE, OWNER_ONLY = "encrypted", "encrypted-if-available", "owner-only"


def encrypt(data: bytes, key: bytes, aad: bytes) -> bytes:
    """``data`` as an encrypted file's bytes (see the module docstring)."""
    nonce = secrets.token_bytes(NONCE_BYTES)
    return MAGIC + nonce + AESGCM(key).encrypt(nonce, data, aad)


def decrypt(blob: bytes, key: bytes, aad: bytes, where: str = "") -> bytes:
    """The plaintext of an encrypted file's bytes; DataError naming ``where`` if it was not written
    by :func:`encrypt`, or was altered, moved (other ``aad``) or encrypted under another key."""
    if not blob.startswith(MAGIC):
        raise DataError(f"{where}: not an encrypted anon_dagster file")
    nonce, body = blob[len(MAGIC):len(MAGIC) + NONCE_BYTES], blob[len(MAGIC) + NONCE_BYTES:]
    try:
        return AESGCM(key).decrypt(nonce, body, aad)
    except InvalidTag:
        raise DataError(f"{where}: cannot be decrypted: altered, moved, or encrypted under another key") from None


def write_table(path: Path, df: pd.DataFrame, key: bytes | None, aad: bytes) -> Path:
    """Write ``df`` as parquet to ``path``, encrypted under ``key`` (clear text if None), mode 0600, atomically."""
    buffer = io.BytesIO()
    df.to_parquet(buffer, engine="pyarrow", index=False)
    data = buffer.getvalue()
    return write_bytes_atomic(encrypt(data, key, aad) if key is not None else data, path, mode=0o600)


def read_table(path: Path, key: bytes | None, aad: bytes) -> pd.DataFrame:
    """The table :func:`write_table` wrote to ``path`` with the same ``key`` and ``aad``; DataError naming the file."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    if key is not None:
        data = decrypt(data, key, aad, str(path))
    try:
        return pd.read_parquet(io.BytesIO(data), engine="pyarrow")
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not a parquet table ({type(exc).__name__})") from None


def make_private_dirs(folder: Path, base: Path) -> None:
    """Create ``folder``; ``base`` and every folder from it down to ``folder`` get mode 0700
    (the folders above ``base`` are created with the default mode)."""
    base.parent.mkdir(parents=True, exist_ok=True)
    current = base
    for part in folder.relative_to(base).parts:
        current.mkdir(mode=0o700, exist_ok=True)
        current = current / part
    current.mkdir(mode=0o700, exist_ok=True)
    base.chmod(0o700)  # an existing base may have been created more open


def data_key(policy: str, derive_key: Callable[[str], bytes]) -> bytes | None:
    """The key a table of ``policy`` is encrypted under, or None when it is stored in clear text.

    ``derive_key`` is the key store's (purpose → subkey); its SecretError propagates for
    ``encrypted`` and means clear text for ``encrypted-if-available``.
    """
    if policy == ENCRYPTED:
        return derive_key(DATA_AT_REST_PURPOSE)
    if policy == ENCRYPTED_IF_AVAILABLE:
        try:
            return derive_key(DATA_AT_REST_PURPOSE)
        except SecretError:
            pass
    return None


@dataclass(frozen=True)
class TableStore:
    """The intermediate tables stored under ``base`` (layout in the module docstring)."""

    base: Path

    def path(self, name: Sequence[str], partition: str | None, encrypted: bool) -> Path:
        """Where the table ``name`` (``(release, step)``) of ``partition`` is stored."""
        return self.base.joinpath(*name, f"{partition or '__all__'}.parquet" + (".enc" if encrypted else ""))

    def write(self, name: Sequence[str], partition: str | None, df: pd.DataFrame, key: bytes | None) -> Path:
        """Store ``df``, encrypted under ``key`` (clear text if None); the copy in the other form is removed."""
        path = self.path(name, partition, key is not None)
        make_private_dirs(path.parent, self.base)
        write_table(path, df, key, associated_data(name, partition))
        # a stale copy in the other form must not be read later
        self.path(name, partition, key is None).unlink(missing_ok=True)
        return path

    def read(self, name: Sequence[str], partition: str | None, key: Callable[[], bytes], *,
             encrypted_only: bool = False) -> pd.DataFrame:
        """The stored table: the encrypted file, decrypted under ``key()``, else the clear one
        (never with ``encrypted_only``); DataError naming the file when there is none."""
        path = self.path(name, partition, True)
        encrypted = path.exists()
        if not encrypted and not encrypted_only:
            path = self.path(name, partition, False)
        if not path.exists():
            raise DataError(f"{path}: not materialized yet (materialize {'/'.join(name)} first)")
        # the key is asked for only for an encrypted file: a release without a key store reads its own
        return read_table(path, key() if encrypted else None, associated_data(name, partition))


def associated_data(name: Sequence[str], partition: str | None) -> bytes:
    """The associated data of the table ``name`` of ``partition``: ``<release>/<step>|<partition>``."""
    return f"{'/'.join(name)}|{partition or ''}".encode()


__all__ = ["DATA_AT_REST_PURPOSE", "ENCRYPTED", "ENCRYPTED_IF_AVAILABLE", "MAGIC", "OWNER_ONLY", "TableStore",
           "associated_data", "data_key", "decrypt", "encrypt", "make_private_dirs", "read_table", "write_table"]
