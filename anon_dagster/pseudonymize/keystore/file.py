"""The encrypted key file: master keys sealed with AES-256-GCM under a key from scrypt of a passphrase.

The key-encryption key is derived by scrypt from ``ANON_DAGSTER_KEYSTORE_PASSPHRASE``; the file's
metadata (format, KDF parameters, key versions and dates) is bound as associated data, so
editing any of it breaks the seal. The file must be mode 0600 and must not sit inside a data,
publication or repository folder (:func:`~.apart.check_location`).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import os
import secrets
import stat
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from ...errors import SecretError
from ...io import write_bytes_atomic
from .anchor import AnchorInvalid, AnchorStore, AuditAnchor, locked_file
from .apart import check_location
from .base import ENV_PASSPHRASE, MASTER_KEY_BYTES, KeyInfo, _MemoryKeys

FILE_FORMAT = "anon_dagster.keystore"
FILE_FORMAT_VERSION = 1
KEYSTORE_FILENAME = "keystore.json"
# OWASP's current recommendation for scrypt; about 0.3 s and 128 MiB per unsealing.
DEFAULT_SCRYPT_N = 2**17
MIN_SCRYPT_N = 2**10  # below this the passphrase is barely stretched; only tests go that low
SCRYPT_R = 8
SCRYPT_P = 1
SEALED_ANCHOR = "audit_anchor"  # the audit anchor's field in the sealed plaintext


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def _kek_and_check(passphrase: str, kdf: dict) -> tuple[bytes, bytes]:
    """scrypt(passphrase) → (AES-GCM key-encryption key, passphrase check value)."""
    stretched = Scrypt(
        salt=_unb64(kdf["salt"]), length=64, n=int(kdf["n"]), r=int(kdf["r"]), p=int(kdf["p"])
    ).derive(passphrase.encode("utf-8"))
    kek, check_key = stretched[:32], stretched[32:]
    # The check value only lets us tell "wrong passphrase" from "file modified": it is as
    # expensive to brute-force as the sealed keys themselves (one scrypt per guess).
    check = hmac.new(check_key, b"anon_dagster passphrase check", "sha256").digest()[:16]
    return kek, check


def _associated_data(meta: dict) -> bytes:
    return json.dumps(meta, sort_keys=True, separators=(",", ":")).encode("utf-8")


def keystore_file(path: str | Path) -> Path:
    """The key file a path names: the path itself, or ``keystore.json`` in it if it is a folder."""
    p = Path(path).expanduser()
    if p.is_dir() or str(path).endswith(("/", os.sep)):
        return p / KEYSTORE_FILENAME
    return p


def _check_mode(file: Path) -> None:
    mode = file.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SecretError(
            f"{file}: refused: permissions {stat.filemode(mode)} let other users read or change the key store; "
            f"run: chmod 600 {file}"
        )


class FileKeyBackend(_MemoryKeys):
    """Master keys sealed in one JSON file (AES-256-GCM, key from scrypt of the passphrase).

    Layout (every field but ``sealed`` is the associated data of the seal)::

        {"format": "anon_dagster.keystore", "format_version": 1,
         "kdf": {"name": "scrypt", "salt": b64, "n": 131072, "r": 8, "p": 1},
         "passphrase_check": b64(16 bytes),
         "keys": [{"version": 1, "created": "2026-01-01T00:00:00+00:00"}, ...],
         "sealed": {"alg": "AES-256-GCM", "nonce": b64(12 bytes), "ciphertext": b64}}

    The plaintext of ``sealed`` is ``{"keys": {"1": b64(32 bytes), ...}}``, plus
    ``"audit_anchor": {"count": N, "head": <MAC>}`` once a reversal was logged
    (:class:`KeyFileAnchor`).
    """

    kind = "encrypted-file"

    def __init__(self, file: Path, keys: dict[int, bytes], created: dict[int, str | None],
                 meta: dict, kek: bytes):
        super().__init__(keys, created)
        self.file = file
        self._meta = meta
        self._kek = kek

    def describe(self) -> str:
        return f"encrypted key file {self.file}"

    # -- creation and opening --
    @classmethod
    def create(cls, path: str | Path, passphrase: str, *, scrypt_n: int | None = None,
               dev: bool = False) -> FileKeyBackend:
        """Create a new key store with key version 1; refuse to overwrite an existing one."""
        scrypt_n = DEFAULT_SCRYPT_N if scrypt_n is None else scrypt_n
        file = keystore_file(path)
        check_location(file, dev=dev)
        if file.exists():
            raise SecretError(f"{file}: a key store already exists here; it is never overwritten (use 'keys rotate')")
        if not passphrase:
            raise SecretError(f"a passphrase is required to create a key store (set {ENV_PASSPHRASE})")
        if scrypt_n < MIN_SCRYPT_N or scrypt_n & (scrypt_n - 1):
            raise SecretError(f"scrypt n must be a power of two >= {MIN_SCRYPT_N} (default {DEFAULT_SCRYPT_N})")
        kdf = {"name": "scrypt", "salt": _b64(secrets.token_bytes(16)), "n": scrypt_n, "r": SCRYPT_R, "p": SCRYPT_P}
        kek, check = _kek_and_check(passphrase, kdf)
        meta = {"format": FILE_FORMAT, "format_version": FILE_FORMAT_VERSION, "kdf": kdf,
                "passphrase_check": _b64(check), "keys": []}
        backend = cls(file, {}, {}, meta, kek)
        backend._add_version()
        # the folder holds the key store, token vaults and the audit log: owner only
        file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        staged = file.with_name(f".{file.name}.{secrets.token_hex(6)}.new")
        backend._save(staged)
        try:
            os.link(staged, file)  # unlike a rename, a link never replaces a store created meanwhile
        except FileExistsError:
            raise SecretError(f"{file}: a key store already exists here; it is never overwritten (use 'keys rotate')") from None
        finally:
            staged.unlink(missing_ok=True)
        return backend

    @classmethod
    def open(cls, path: str | Path, passphrase: str, *, dev: bool = False) -> FileKeyBackend:
        """Unseal a key store; SecretError (never with key material) for every failure."""
        file = keystore_file(path)
        check_location(file, dev=dev)
        if not file.exists():
            raise SecretError(f"{file}: no key store here; create one with 'anon-dagster keys init'")
        _check_mode(file)
        if not passphrase:
            raise SecretError(f"{file}: a passphrase is required to open the key store (set {ENV_PASSPHRASE})")
        try:
            doc = json.loads(file.read_text(encoding="utf-8"))
            meta = {k: doc[k] for k in ("format", "format_version", "kdf", "passphrase_check", "keys")}
            sealed = doc["sealed"]
            if meta["format"] != FILE_FORMAT:
                raise ValueError("format")
            if meta["format_version"] != FILE_FORMAT_VERSION:
                raise SecretError(f"{file}: key store format version {meta['format_version']} is not supported")
            kdf = meta["kdf"]
            if kdf.get("name") != "scrypt":
                raise ValueError("kdf")
            nonce, ciphertext = _unb64(sealed["nonce"]), _unb64(sealed["ciphertext"])
            expected_check = _unb64(meta["passphrase_check"])
            versions = [int(k["version"]) for k in meta["keys"]]
        except SecretError:
            raise
        except (OSError, ValueError, KeyError, TypeError, AttributeError, binascii.Error):
            raise SecretError(f"{file}: not a readable anon_dagster key store (corrupted or not a key file)") from None
        if int(kdf.get("n", 0)) < 2**15:
            warnings.warn(f"{file}: scrypt n={kdf.get('n')} is weak; re-create the key store with the default", stacklevel=2)
        try:
            kek, check = _kek_and_check(passphrase, kdf)
        except (ValueError, TypeError, binascii.Error):
            raise SecretError(f"{file}: the key derivation parameters are invalid (corrupted key store)") from None
        if not hmac.compare_digest(check, expected_check):
            raise SecretError(f"{file}: wrong passphrase for this key store")
        try:
            plain = AESGCM(kek).decrypt(nonce, ciphertext, _associated_data(meta))
            keys = {int(v): _unb64(k) for v, k in json.loads(plain)["keys"].items()}
        except InvalidTag:
            raise SecretError(
                f"{file}: the key store was modified or is corrupted (its seal does not verify); restore it from a backup"
            ) from None
        except (ValueError, KeyError, TypeError, binascii.Error):
            raise SecretError(f"{file}: the sealed keys cannot be read (corrupted key store)") from None
        if sorted(keys) != sorted(versions):
            raise SecretError(f"{file}: the sealed keys do not match the listed versions (corrupted key store)")
        created = {int(k["version"]): k.get("created") for k in meta["keys"]}
        return cls(file, keys, created, meta, kek)

    # -- rotation --
    def _add_version(self) -> KeyInfo:
        version = max(self._keys, default=0) + 1
        created = datetime.now(UTC).isoformat(timespec="seconds")
        self._keys[version] = secrets.token_bytes(MASTER_KEY_BYTES)
        self._created[version] = created
        self._meta = {**self._meta, "keys": [*self._meta["keys"], {"version": version, "created": created}]}
        return KeyInfo(version, created, self.kind)

    def rotate(self) -> KeyInfo:
        """Add master key version N+1 (older versions stay, for data made with them).

        Under an exclusive lock, and only if the file still lists the versions this object
        unsealed: two concurrent rotations must not both write "version N+1" with different
        keys (the loser's pseudonyms would point to a key that no longer exists). What else is
        sealed in the file (the audit anchor) is taken from the file as it is now, not as it was
        when this object opened it: a rotation must not roll back a reversal's anchor.
        """
        with locked_file(self.lock_path):
            try:
                on_disk = json.loads(self.file.read_text(encoding="utf-8")).get("keys")
            except (OSError, ValueError, AttributeError):
                on_disk = None
            if on_disk != self._meta["keys"]:
                raise SecretError(f"{self.file}: the key store changed since it was opened (another rotation?); open it again")
            _, plain = self._unseal_on_disk()
            before = (dict(self._keys), dict(self._created), self._meta)
            info = self._add_version()
            try:
                self._save(extra={k: v for k, v in plain.items() if k != "keys"})
            except BaseException:
                self._keys, self._created, self._meta = before
                raise
            return info

    def _save(self, target: Path | None = None, extra: dict | None = None) -> None:
        plain = {"keys": {str(v): _b64(k) for v, k in self._keys.items()}, **(extra or {})}
        self._write_sealed(self._meta, plain, target or self.file)

    def _write_sealed(self, meta: dict, plain: dict, target: Path) -> None:
        """Seal ``plain`` under this object's key-encryption key with ``meta`` as associated data."""
        nonce = secrets.token_bytes(12)  # fresh per write: a GCM nonce is never reused under one key
        ciphertext = AESGCM(self._kek).encrypt(nonce, json.dumps(plain).encode("utf-8"), _associated_data(meta))
        doc = {**meta, "sealed": {"alg": "AES-256-GCM", "nonce": _b64(nonce), "ciphertext": _b64(ciphertext)}}
        write_bytes_atomic(json.dumps(doc, indent=1).encode("utf-8") + b"\n", target, mode=0o600)

    def _unseal_on_disk(self) -> tuple[dict, dict]:
        """The file's metadata and sealed plaintext as they are on disk now.

        Other processes rewrite the file (rotations, audit anchors), so writers read it again
        under the lock instead of trusting what this object unsealed. It is opened with the
        key-encryption key this object holds: a file re-created (another salt) or modified since
        does not unseal, and that is a SecretError.
        """
        try:
            doc = json.loads(self.file.read_text(encoding="utf-8"))
            meta = {k: doc[k] for k in ("format", "format_version", "kdf", "passphrase_check", "keys")}
            nonce, ciphertext = _unb64(doc["sealed"]["nonce"]), _unb64(doc["sealed"]["ciphertext"])
            plain = json.loads(AESGCM(self._kek).decrypt(nonce, ciphertext, _associated_data(meta)))
            if not isinstance(plain, dict) or not isinstance(plain.get("keys"), dict):
                raise ValueError("sealed content")
        except InvalidTag:
            raise SecretError(
                f"{self.file}: the key store was modified or replaced since it was opened (its seal does not verify); "
                "open it again, or restore it from a backup"
            ) from None
        except (OSError, ValueError, KeyError, TypeError, AttributeError, binascii.Error):
            raise SecretError(f"{self.file}: the key store can no longer be read (modified or corrupted since it was opened)") from None
        return meta, plain

    # -- the audit anchor --
    @property
    def lock_path(self) -> Path:
        """The lock file every writer of the key file holds (rotations, audit anchors)."""
        return self.file.with_name(self.file.name + ".lock")

    def anchor_store(self) -> KeyFileAnchor:
        return KeyFileAnchor(self)

    def adopt_rotations(self) -> None:
        """Take in the key versions another process added to the file since this object opened it.

        Called under the writers' lock, before the audit log is verified: an entry MACed with a
        version rotated in meanwhile must verify, not read as tampering. Only additions are
        taken in, and only from a file that unseals under this object's key-encryption key
        (the seal authenticates them); a version this object holds whose key differs on disk
        means the file was replaced, and that is a SecretError.
        """
        meta, plain = self._unseal_on_disk()
        try:
            on_disk = {int(v): _unb64(k) for v, k in plain["keys"].items()}
            created = {int(k["version"]): k.get("created") for k in meta["keys"]}
        except (ValueError, KeyError, TypeError, AttributeError, binascii.Error):
            raise SecretError(f"{self.file}: the sealed keys cannot be read (corrupted key store)") from None
        if sorted(on_disk) != sorted(created) or any(on_disk.get(v) != k for v, k in self._keys.items()):
            raise SecretError(f"{self.file}: the key store was replaced since it was opened; open it again")
        if len(on_disk) > len(self._keys):
            self._keys, self._created, self._meta = on_disk, created, meta


class KeyFileAnchor(AnchorStore):
    """The audit anchor sealed in the encrypted key file, beside the master keys.

    It is a field of the sealed plaintext (``{"keys": ..., "audit_anchor": {"count", "head"}}``),
    so it is confidential and authenticated like the keys: changing or removing it needs the
    passphrase, and deleting the file deletes the keys. A key file written before anchoring
    existed has no such field (a log that predates it is adopted with ``audit anchor``).
    """

    def __init__(self, backend: FileKeyBackend):
        self.backend = backend
        self._unusable: SecretError | None = None  # why the file could not be taken in, under the lock

    def describe(self) -> str:
        return f"the encrypted key file {self.backend.file}"

    @contextmanager
    def lock(self) -> Iterator[None]:
        with locked_file(self.backend.lock_path):
            # entries written since this store was opened may be MACed with a newer key version;
            # a file that cannot be taken in makes the anchor unreadable (read() says why)
            try:
                self.backend.adopt_rotations()
            except SecretError as exc:
                self._unusable = exc
            try:
                yield
            finally:
                self._unusable = None

    def read(self) -> AuditAnchor | None:
        if self._unusable is not None:
            raise AnchorInvalid(str(self._unusable))
        try:
            _, plain = self.backend._unseal_on_disk()
        except SecretError as exc:
            raise AnchorInvalid(str(exc)) from None
        if SEALED_ANCHOR not in plain:
            return None
        try:
            return AuditAnchor.from_dict(plain[SEALED_ANCHOR])
        except ValueError:
            raise AnchorInvalid(f"{self.backend.file}: the sealed audit anchor is malformed") from None

    def write(self, anchor: AuditAnchor) -> None:
        meta, plain = self.backend._unseal_on_disk()
        try:
            self.backend._write_sealed(meta, {**plain, SEALED_ANCHOR: anchor.to_dict()}, self.backend.file)
        except OSError as exc:
            raise SecretError(
                f"{self.backend.file}: the audit anchor cannot be recorded in the key file ({type(exc).__name__}); "
                "reversals need a writable key file"
            ) from None
