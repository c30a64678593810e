"""Parquet storage of a release's intermediate tables, owner-only, personal data encrypted.

Layout: ``<base>/<release>/<step>/<partition>.parquet`` (``.parquet.enc`` when encrypted), in
folders of mode 0700 and files of mode 0600, written atomically. ``<base>`` is ``base_dir`` if
set, else ``$DAGSTER_HOME/anon_dagster/storage``, else the Dagster instance's storage folder:
never the repository or the publication folder.

An asset whose definition metadata holds ``anon_dagster/at_rest: encrypted`` (raw and
pseudonymized: still personal data) is stored as AES-256-GCM ciphertext of its parquet bytes,
under the key store's ``data-at-rest`` subkey, with a fresh 96-bit nonce per write; the asset
key and partition are authenticated as associated data, so a file moved to another asset or
partition does not decrypt. File format: ``ANONENC1 | nonce (12 bytes) | ciphertext+tag``.
"""


import io
import os
import secrets
from pathlib import Path

import pandas as pd
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from dagster import ConfigurableIOManager, InputContext, OutputContext, ResourceDependency

from ..errors import DataError, SecretError
from ..io import write_bytes_atomic
from .resources import KeyStoreResource

MAGIC = b"ANONENC1"
AT_REST_KEY = "anon_dagster/at_rest"
DATA_AT_REST_PURPOSE = "data-at-rest"


def encrypt(data: bytes, key: bytes, aad: bytes) -> bytes:
    """AES-GCM ciphertext of ``data`` in the file format above."""
    nonce = secrets.token_bytes(12)
    return MAGIC + nonce + AESGCM(key).encrypt(nonce, data, aad)


def decrypt(blob: bytes, key: bytes, aad: bytes, where: str = "") -> bytes:
    """Plaintext of ``blob``; DataError (naming the file) if it was not written here or was altered."""
    if not blob.startswith(MAGIC):
        raise DataError(f"{where}: not an encrypted anon_dagster file")
    nonce, body = blob[len(MAGIC):len(MAGIC) + 12], blob[len(MAGIC) + 12:]
    try:
        return AESGCM(key).decrypt(nonce, body, aad)
    except InvalidTag:
        raise DataError(f"{where}: cannot be decrypted: altered, moved, or encrypted under another key") from None


class AnonParquetIOManager(ConfigurableIOManager):
    """Stores DataFrames as parquet (pyarrow) per asset and partition; see the module docstring."""

    base_dir: str | None = None
    keystore: ResourceDependency[KeyStoreResource]

    def _base(self, context: InputContext | OutputContext) -> Path:
        if self.base_dir:
            return Path(self.base_dir).expanduser()
        home = os.environ.get("DAGSTER_HOME")
        if home:
            return Path(home) / "anon_dagster" / "storage"
        instance = context.step_context.instance if isinstance(context, OutputContext) else context.instance
        return Path(instance.storage_directory()) / "anon_dagster"

    @staticmethod
    def _policy(metadata: object) -> str:
        return (metadata or {}).get(AT_REST_KEY, "owner-only")  # type: ignore[union-attr]

    def _data_key(self, policy: str, context: OutputContext | InputContext) -> bytes | None:
        """The data-at-rest key, or None when the asset may be stored owner-only in clear.

        ``encrypted``: the key store must open. ``encrypted-if-available`` (a release that
        pseudonymizes nothing, so needs no key store): encrypt when a key store is configured,
        else store owner-only and say so.
        """
        if policy == "encrypted":
            return self.keystore.derive_key(DATA_AT_REST_PURPOSE)
        if policy == "encrypted-if-available":
            try:
                return self.keystore.derive_key(DATA_AT_REST_PURPOSE)
            except SecretError:
                context.log.warning(
                    f"{context.asset_key.to_user_string()}: no key store configured, personal data "
                    "stored owner-only without encryption at rest")
        return None

    def _path(self, context: InputContext | OutputContext, partition: str | None, encrypted: bool) -> Path:
        key_parts = context.asset_key.path
        name = f"{partition or '__all__'}.parquet" + (".enc" if encrypted else "")
        return self._base(context).joinpath(*key_parts, name)

    @staticmethod
    def _aad(context: InputContext | OutputContext, partition: str | None) -> bytes:
        return f"{context.asset_key.to_user_string()}|{partition or ''}".encode()

    def handle_output(self, context: OutputContext, obj: pd.DataFrame) -> None:
        if obj is None:
            return
        partition = context.asset_partition_key if context.has_asset_partitions else None
        # The key is fetched before anything is written: a key store that cannot be opened
        # fails the step with nothing on disk.
        key = self._data_key(self._policy(context.definition_metadata), context)
        encrypted = key is not None
        path = self._path(context, partition, encrypted)
        buffer = io.BytesIO()
        obj.to_parquet(buffer, engine="pyarrow", index=False)
        data = buffer.getvalue()
        if key is not None:
            data = encrypt(data, key, self._aad(context, partition))
        _make_private_dirs(path.parent, self._base(context))
        write_bytes_atomic(data, path, mode=0o600)
        # a stale copy in the other form must not be read later
        self._path(context, partition, not encrypted).unlink(missing_ok=True)
        context.add_output_metadata({"storage": "encrypted (AES-256-GCM), owner-only" if encrypted else "owner-only"})

    def load_input(self, context: InputContext) -> pd.DataFrame:
        upstream = context.upstream_output
        policy = self._policy(upstream.definition_metadata if upstream else None)
        partition = context.asset_partition_key if context.has_asset_partitions else None
        path = self._path(context, partition, True)
        encrypted = path.exists()
        if not encrypted:
            if policy == "encrypted":  # never fall back to clear text where encryption is required
                raise DataError(f"{path}: not materialized yet (materialize {context.asset_key.to_user_string()} first)")
            path = self._path(context, partition, False)
        if not path.exists():
            raise DataError(f"{path}: not materialized yet (materialize {context.asset_key.to_user_string()} first)")
        data = path.read_bytes()
        if encrypted:
            data = decrypt(data, self.keystore.derive_key(DATA_AT_REST_PURPOSE), self._aad(context, partition), str(path))
        return pd.read_parquet(io.BytesIO(data), engine="pyarrow")


def _make_private_dirs(folder: Path, base: Path) -> None:
    """Create ``folder``; ``base`` and every level below it get mode 0700 (above: defaults)."""
    base.parent.mkdir(parents=True, exist_ok=True)
    current = base
    for part in folder.relative_to(base).parts if folder != base else ():
        current.mkdir(mode=0o700, exist_ok=True)
        current = current / part
    current.mkdir(mode=0o700, exist_ok=True)
    base.chmod(0o700)
