"""Intermediate tables at rest: parquet files, owner-only, personal data encrypted.

Definitions:

* layout: the table named ``(release, step)`` is stored, per partition, at
  ``<base>/<release>/<step>/<partition>.parquet`` (``__all__`` when unpartitioned), or
  ``.parquet.enc`` when encrypted; ``<base>`` and every folder below it have mode 0700, files
  mode 0600, written atomically;
* data key: every write of an encrypted table draws a fresh random 256-bit key for that one
  partition (envelope encryption). It is kept only *wrapped*, AES-256-GCM-encrypted under the key
  store's ``data-at-rest`` subkey, in its own file
  ``<base>/.keys/<release>/<step>/<partition>/<key id>.key`` (JSON: ``format``, ``key_id``,
  ``stored_at``, the wrapped key); the associated data of the wrapping is
  ``data-key|<release>/<step>|<partition>|<key id>|<stored_at>``, so a stored time edited to
  extend retention leaves the key unusable;
* encrypted file: ``ANONENC2 | key id (16 bytes) | nonce (12 bytes) | ciphertext+tag``, the
  AES-256-GCM encryption of the table's parquet (pyarrow) bytes under its data key. The
  associated data is ``<release>/<step>|<partition>`` (empty partition when unpartitioned), so
  a file moved to another table or partition does not decrypt. Files of the earlier format
  ``ANONENC1 | nonce | ciphertext+tag`` (encrypted under the ``data-at-rest`` subkey itself)
  are still read;
* crypto-shredding (:meth:`TableStore.shred`): the partition's key files are removed before its
  table. Without its data key no copy of an ``ANONENC2`` file (a backup, a copied disk) can be
  decrypted, even with the key store; a rewrite (:meth:`TableStore.write`) shreds the key of the
  version it replaces the same way;
* stored time: when a table was stored (``stored_at`` of its key file, else the file's
  modification time), which retention counts from;
* custody: every successful :meth:`TableStore.read` calls the store's ``on_read`` hook with the
  table's name and partition; by default the core's
  :func:`anon_dagster.release.governance.access.record_read`, which appends reads of raw and
  pseudonymized tables to the custody log;
* policies: ``encrypted`` (raw and pseudonymized tables: the key store must open),
  ``encrypted-if-available`` (a release that needs no key store: encrypted when one opens, else
  clear text), ``owner-only`` (clear text). Every policy stores owner-only.
"""

from __future__ import annotations

import base64
import io
import json
import os
import secrets
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .errors import DataError, SecretError
from .io import write_bytes_atomic

MAGIC = b"ANONENC1"
ENVELOPE_MAGIC = b"ANONENC2"
KEY_ID_BYTES = 16
KEYS_FOLDER = ".keys"  # never a release name (those start with a letter or _)
KEY_FILE_FORMAT = "anon_dagster.data-key"
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


ReadHook = Callable[[Sequence[str], "str | None"], None]


# the suffix of an engine's folder of a step's rows (TableStore.engine_folder)
ENGINE_FOLDER_SUFFIX = ".spark"

@dataclass(frozen=True)
class Shredded:
    """What :meth:`TableStore.shred` removed: the table's files and whether a data key was destroyed."""

    files: list[Path]
    key_destroyed: bool


@dataclass(frozen=True)
class TableStore:
    """The intermediate tables stored under ``base`` (layout in the module docstring).

    ``on_read`` is called after every successful read (None: the core's custody hook)."""

    base: Path
    on_read: ReadHook | None = field(default=None, compare=False)

    def path(self, name: Sequence[str], partition: str | None, encrypted: bool) -> Path:
        """Where the table ``name`` (``(release, step)``) of ``partition`` is stored."""
        return self.base.joinpath(*name, f"{partition or '__all__'}.parquet" + (".enc" if encrypted else ""))

    def key_folder(self, name: Sequence[str], partition: str | None) -> Path:
        """The folder holding the wrapped data key of the table ``name`` of ``partition``."""
        return self.base.joinpath(KEYS_FOLDER, *name, partition or "__all__")

    def write(self, name: Sequence[str], partition: str | None, df: pd.DataFrame, key: bytes | None, *,
              stored_at: datetime | None = None) -> Path:
        """Store ``df``, under a fresh data key wrapped by ``key`` (clear text if None); the copy in
        the other form and the data key of the version replaced are removed. ``stored_at`` (default
        now) is the stored time retention counts from."""
        path = self.path(name, partition, key is not None)
        make_private_dirs(path.parent, self.base)
        aad = associated_data(name, partition)
        buffer = io.BytesIO()
        df.to_parquet(buffer, engine="pyarrow", index=False)
        when = (stored_at or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if key is None:
            write_bytes_atomic(buffer.getvalue(), path, mode=0o600)
            self._drop_keys(name, partition)
        else:
            key_id, data_key_bytes = secrets.token_bytes(KEY_ID_BYTES), secrets.token_bytes(32)
            folder = self.key_folder(name, partition)
            make_private_dirs(folder, self.base)
            wrapped = encrypt(data_key_bytes, key, _wrap_aad(aad, key_id, when))
            record = {"format": KEY_FILE_FORMAT, "key_id": key_id.hex(), "stored_at": when,
                      "wrapped": base64.b64encode(wrapped).decode()}
            # the new key is on disk before the file that needs it; the old one goes after it
            write_bytes_atomic(json.dumps(record, sort_keys=True).encode(), folder / f"{key_id.hex()}.key")
            write_bytes_atomic(ENVELOPE_MAGIC + key_id + encrypt(buffer.getvalue(), data_key_bytes, aad)[len(MAGIC):],
                               path, mode=0o600)
            for old in folder.glob("*.key"):
                if old.name != f"{key_id.hex()}.key":
                    old.unlink(missing_ok=True)
        if key is None and stored_at is not None:
            os.utime(path, (stored_at.timestamp(), stored_at.timestamp()))
        # a stale copy in the other form must not be read later
        self.path(name, partition, key is None).unlink(missing_ok=True)
        return path

    def read(self, name: Sequence[str], partition: str | None, key: Callable[[], bytes], *,
             encrypted_only: bool = False) -> pd.DataFrame:
        """The stored table: the encrypted file, decrypted under ``key()``, else the clear one
        (never with ``encrypted_only``); DataError naming the file when there is none, or when its
        data key was destroyed. The ``on_read`` hook is called once it is read."""
        path = self.path(name, partition, True)
        encrypted = path.exists()
        if not encrypted and not encrypted_only:
            path = self.path(name, partition, False)
        if not path.exists():
            raise DataError(f"{path}: not materialized yet (materialize {'/'.join(name)} first)")
        # the key is asked for only for an encrypted file: a release without a key store reads its own
        table = self.read_file(path, name, partition, key if encrypted else None)
        hook = self.on_read if self.on_read is not None else _default_read_hook
        hook(name, partition)
        return table

    def read_file(self, path: Path, name: Sequence[str], partition: str | None,
                  key: Callable[[], bytes] | None) -> pd.DataFrame:
        """The table in the file ``path`` (a stored table's file, or a copy of one) of the table
        ``name`` of ``partition``: decrypted with the partition's data key as it is stored now,
        unwrapped under ``key()`` (clear text when ``key`` is None). No hook is called."""
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise DataError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None
        aad = associated_data(name, partition)
        if key is not None and data.startswith(ENVELOPE_MAGIC):
            key_id = data[len(ENVELOPE_MAGIC):len(ENVELOPE_MAGIC) + KEY_ID_BYTES]
            data_key_bytes = self._unwrap(path, name, partition, key_id, key())
            data = decrypt(MAGIC + data[len(ENVELOPE_MAGIC) + KEY_ID_BYTES:], data_key_bytes, aad, str(path))
        elif key is not None:
            data = decrypt(data, key(), aad, str(path))
        try:
            return pd.read_parquet(io.BytesIO(data), engine="pyarrow")
        except (OSError, ValueError) as exc:
            raise DataError(f"{path}: not a parquet table ({type(exc).__name__})") from None

    def _unwrap(self, path: Path, name: Sequence[str], partition: str | None, key_id: bytes, kek: bytes) -> bytes:
        key_file = self.key_folder(name, partition) / f"{key_id.hex()}.key"
        try:
            record = json.loads(key_file.read_text(encoding="utf-8"))
            wrapped, when = base64.b64decode(record["wrapped"]), str(record["stored_at"])
        except FileNotFoundError:
            raise DataError(f"{path}: cannot be decrypted: its data key is gone (destroyed by retention, erasure "
                            "or a later write of the table, or the file was moved here)") from None
        except (OSError, ValueError, KeyError, TypeError):
            raise DataError(f"{key_file}: not a data key file") from None
        return decrypt(wrapped, kek, _wrap_aad(associated_data(name, partition), key_id, when), str(path))

    def stored_at(self, name: Sequence[str], partition: str | None) -> datetime | None:
        """When the table ``name`` of ``partition`` was stored (UTC); None when it is not stored."""
        for encrypted in (True, False):
            path = self.path(name, partition, encrypted)
            if not path.exists():
                continue
            if encrypted:
                for key_file in sorted(self.key_folder(name, partition).glob("*.key")):
                    try:
                        when = json.loads(key_file.read_text(encoding="utf-8"))["stored_at"]
                        return datetime.strptime(when, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
                    except (OSError, ValueError, KeyError, TypeError):
                        break
            return datetime.fromtimestamp(path.stat().st_mtime, UTC)
        return None

    def partitions(self, name: Sequence[str]) -> list[str | None]:
        """The partitions of the table ``name`` that are stored (None for the unpartitioned table), sorted."""
        folder = self.base.joinpath(*name)
        found: set[str | None] = set()
        for suffix in (".parquet", ".parquet.enc"):
            for file in folder.glob(f"*{suffix}"):
                stem = file.name[: -len(suffix)]
                found.add(None if stem == "__all__" else stem)
        return sorted(found, key=lambda p: (p is not None, p or ""))

    def engine_folder(self, name: Sequence[str], partition: str | None) -> Path:
        """The folder an engine that keeps a step's rows where it processes them (the Spark
        engine's parquet folders) writes the table ``name`` of ``partition`` under."""
        return self.base.joinpath(*name, f"{partition or '__all__'}{ENGINE_FOLDER_SUFFIX}")

    def shred(self, name: Sequence[str], partition: str | None) -> Shredded:
        """Delete the table ``name`` of ``partition``: its data key first (crypto-shredding: no copy
        of its encrypted file can be decrypted after), then its files, and the engine's folder of
        its rows (:meth:`engine_folder`: in clear text, so deleted, never left behind)."""
        destroyed = self._drop_keys(name, partition)
        files = []
        for encrypted in (True, False):
            path = self.path(name, partition, encrypted)
            if path.exists():
                path.unlink()
                files.append(path)
        rows = self.engine_folder(name, partition)
        if rows.is_dir():
            shutil.rmtree(rows)
            files.append(rows)
        return Shredded(files, destroyed)

    def _drop_keys(self, name: Sequence[str], partition: str | None) -> bool:
        folder = self.key_folder(name, partition)
        had = folder.is_dir() and any(folder.glob("*.key"))
        if folder.is_dir():
            shutil.rmtree(folder)
        return had


def _wrap_aad(aad: bytes, key_id: bytes, stored_at: str) -> bytes:
    return b"data-key|" + aad + b"|" + key_id.hex().encode() + b"|" + stored_at.encode()


def _default_read_hook(name: Sequence[str], partition: str | None) -> None:
    # the core's custody hook, imported when first needed (it never imports this module)
    from .release.governance.access import record_read

    record_read(name, partition)


def associated_data(name: Sequence[str], partition: str | None) -> bytes:
    """The associated data of the table ``name`` of ``partition``: ``<release>/<step>|<partition>``."""
    return f"{'/'.join(name)}|{partition or ''}".encode()


__all__ = ["DATA_AT_REST_PURPOSE", "ENCRYPTED", "ENCRYPTED_IF_AVAILABLE", "ENGINE_FOLDER_SUFFIX", "ENVELOPE_MAGIC",
           "KEYS_FOLDER", "MAGIC", "OWNER_ONLY", "ReadHook", "Shredded", "TableStore", "associated_data", "data_key", "decrypt", "encrypt",
           "make_private_dirs", "read_table", "write_table"]
