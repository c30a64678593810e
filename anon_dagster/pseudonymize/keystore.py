"""The key store: versioned master keys held apart from the data, behind pluggable backends.

A :class:`KeyStore` never hands out a master key. It hands out *subkeys*, each derived for one
use with HKDF-SHA256 (RFC 5869), whose ``info`` is the JSON list
``["anon_dagster", family, *labels, version]`` — length-delimited, so no two uses can collide:

* pseudonym keys: ``["anon_dagster", "pseudonym", method, purpose, v]`` (one per purpose, so the
  research and the billing tables share no pseudonym and cannot be joined);
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
  service, which only computes one MAC per key version; subkeys are expanded from it locally.

:func:`open_keystore` picks the backend from the environment.
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import hmac
import json
import logging
import os
import secrets
import stat
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF, HKDFExpand
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from ..errors import SecretError
from ..io import write_bytes_atomic

log = logging.getLogger(__name__)

ENV_KEYSTORE = "ANON_DAGSTER_KEYSTORE"
ENV_PASSPHRASE = "ANON_DAGSTER_KEYSTORE_PASSPHRASE"
ENV_MASTER_KEY = "ANON_DAGSTER_MASTER_KEY"
ENV_DEV = "ANON_DAGSTER_DEV_KEYSTORE"
ENV_STATE = "ANON_DAGSTER_KEYSTORE_STATE"
ENV_VAULT_KEY = "ANON_DAGSTER_VAULT_KEY"  # read by the Vault backend (vault.py)

FILE_FORMAT = "anon_dagster.keystore"
FILE_FORMAT_VERSION = 1
KEYSTORE_FILENAME = "keystore.json"
MASTER_KEY_BYTES = 32
# OWASP's current recommendation for scrypt; about 0.3 s and 128 MiB per unsealing.
DEFAULT_SCRYPT_N = 2**17
MIN_SCRYPT_N = 2**10  # below this the passphrase is barely stretched; only tests go that low
SCRYPT_R = 8
SCRYPT_P = 1
DEV_KEYSTORE = Path(".anon_dagster") / "dev-keystore"
# Not a secret: the development key store protects synthetic demo data only.
DEV_PASSPHRASE = "anon-dagster-development-only"
DEV_WARNING = (
    "DEVELOPMENT KEY STORE in {path}: it lives inside the project folder and its passphrase may be "
    "the public default; never use it for real personal data (set ANON_DAGSTER_KEYSTORE to a "
    "location apart from the data, or ANON_DAGSTER_MASTER_KEY)"
)

# Folder names that hold data or what is published from it: a key store there would travel with
# the data it protects (backups, copies, shares), which defeats keeping the key apart.
FORBIDDEN_FOLDER_NAMES = frozenset({
    "data", "dataset", "datasets", "raw", "published", "publication", "publications", "public",
    "export", "exports", "output", "outputs",
})


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def hkdf_info(family: str, *labels: str | int) -> bytes:
    """The HKDF ``info`` of a subkey: a JSON list, so labels are length-delimited."""
    return json.dumps(["anon_dagster", family, *labels], separators=(",", ":")).encode("utf-8")


@dataclass(frozen=True)
class KeyInfo:
    """What may be shown about one master key version: never the key."""

    version: int
    created: str | None
    backend: str

    def to_dict(self) -> dict:
        return {"version": self.version, "created": self.created, "backend": self.backend}


# ----- backends -------------------------------------------------------------------------------


class KeyBackend(ABC):
    """Where master keys live. Implementations never return a master key, only derived keys.

    ``derive(version, info, length)`` must be a pseudo-random function of the version's master
    key and ``info``; the file and environment backends use HKDF-SHA256 on a key they hold in
    memory, an external backend (KMS, Vault Transit) can compute ``MAC(master, root-label)`` in the
    service once per version and expand locally (see :class:`ExternalKeyBackend`).
    """

    kind: str = "abstract"

    @abstractmethod
    def versions(self) -> list[KeyInfo]:
        """Every key version the backend holds, oldest first."""

    @abstractmethod
    def derive(self, version: int, info: bytes, length: int = 32) -> bytes:
        """A ``length``-byte key derived from master key ``version`` for ``info``."""

    def rotate(self) -> KeyInfo:
        """Add a new master key version and return it (backends that cannot, explain why)."""
        raise SecretError(f"the {self.kind} key backend cannot create keys: rotate them where they are managed")

    def describe(self) -> str:
        """A line safe to show: the backend kind and where the store is (no key material)."""
        return self.kind

    def __reduce__(self):  # keys must not leak into pickles (process pools, Dagster metadata)
        raise TypeError("key backends cannot be serialized")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"


class _MemoryKeys(KeyBackend):
    """Shared logic of the backends that hold the master keys in memory."""

    def __init__(self, keys: dict[int, bytes], created: dict[int, str | None]):
        self._keys = dict(keys)
        self._created = dict(created)

    def versions(self) -> list[KeyInfo]:
        return [KeyInfo(v, self._created.get(v), self.kind) for v in sorted(self._keys)]

    def derive(self, version: int, info: bytes, length: int = 32) -> bytes:
        try:
            master = self._keys[version]
        except KeyError:
            have = ", ".join(str(v) for v in sorted(self._keys)) or "none"
            raise SecretError(f"key version {version} is not in the key store (versions: {have})") from None
        return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=info).derive(master)


class EnvKeyBackend(_MemoryKeys):
    """Master keys from ``ANON_DAGSTER_MASTER_KEY``: ``<base64>`` or ``1:<b64>,2:<b64>,...``.

    Each key decodes to at least 32 random bytes. Rotation happens in the secret manager that
    sets the variable (append ``N:<b64>``); the data keeps naming the version it was made with.
    """

    kind = "environment"

    def __init__(self, text: str, variable: str = ENV_MASTER_KEY):
        keys: dict[int, bytes] = {}
        parts = [p.strip() for p in text.strip().split(",") if p.strip()]
        if not parts:
            raise SecretError(f"{variable} is set but empty")
        for i, part in enumerate(parts):
            head, sep, body = part.partition(":")
            if sep:
                label = head[1:] if head[:1] in "vV" else head
                if not label.isdigit() or int(label) < 1:
                    raise SecretError(f"{variable}: entry {i + 1} must be '<version>:<base64 key>' with a version >= 1")
                version = int(label)
            else:
                if len(parts) > 1:
                    raise SecretError(f"{variable}: with several keys, write each as '<version>:<base64 key>'")
                version, body = 1, part
            try:
                key = base64.b64decode(body, validate=True)
            except (binascii.Error, ValueError):
                # the value itself is never echoed: it is (or is meant to be) a key
                raise SecretError(f"{variable}: key version {version} is not valid base64") from None
            if len(key) < MASTER_KEY_BYTES:
                raise SecretError(
                    f"{variable}: key version {version} has {len(key)} bytes; at least {MASTER_KEY_BYTES} random bytes are required"
                )
            if version in keys:
                raise SecretError(f"{variable}: key version {version} is given twice")
            keys[version] = key
        super().__init__(keys, {v: None for v in keys})
        self.variable = variable

    def describe(self) -> str:
        return f"environment variable {self.variable}"


class ExternalKeyBackend(KeyBackend):
    """Interface for a KMS or Vault backend: master keys never leave the service.

    Subclasses implement :meth:`versions` and :meth:`root_mac`, which asks the service for
    ``MAC(master_key[version], label)`` (e.g. Vault Transit ``POST /transit/hmac/<key>`` with
    ``key_version``, AWS KMS ``GenerateMac``, Google Cloud KMS ``MacSign``); :meth:`rotate` may
    call the service's key rotation. The returned MAC (at least 32 bytes of PRF output) is the
    pseudo-random key of HKDF-Expand, so every subkey is still bound to the service's key and
    to its own ``info``. One service call per key version and process: pseudonymizing a million
    rows does not make a million network calls.
    """

    kind = "external"
    ROOT_LABEL = b"anon_dagster root key v1"

    def __init__(self) -> None:
        self._roots: dict[int, bytes] = {}

    @abstractmethod
    def root_mac(self, version: int, label: bytes) -> bytes:
        """``MAC(master_key[version], label)`` computed by the service."""

    def derive(self, version: int, info: bytes, length: int = 32) -> bytes:
        if version not in self._roots:
            if version not in {k.version for k in self.versions()}:
                raise SecretError(f"key version {version} is not held by the {self.describe()}")
            root = self.root_mac(version, self.ROOT_LABEL)
            if len(root) < 32:
                raise SecretError(f"the {self.describe()} returned a MAC shorter than 32 bytes")
            self._roots[version] = root
        return HKDFExpand(algorithm=hashes.SHA256(), length=length, info=info).derive(self._roots[version])


# ----- the encrypted key file -----------------------------------------------------------------


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


def project_root(start: Path | None = None) -> Path:
    """The nearest folder above ``start`` (default: cwd) holding ``pyproject.toml`` or ``.git``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").exists() or (folder / ".git").exists():
            return folder
    return here


def check_location(path: str | Path, dev: bool = False) -> None:
    """Refuse a key store location that travels with the data or the code.

    The rule: no folder containing the key file (its own folder included) may be a git
    repository (hold ``.git``), be named like a data or publication folder
    (:data:`FORBIDDEN_FOLDER_NAMES`, case-insensitive), or be ``$DAGSTER_HOME`` (where Dagster
    keeps run storage and materialized data). ``dev=True`` is for the git-ignored development
    store ``.anon_dagster/dev-keystore``: it waives the repository rule, and checks folder names
    only inside the repository (a checkout under, say, ``/data/src/`` is not a data folder of the
    project's own); it warns.
    """
    file = Path(path).expanduser().resolve()
    dagster_home = os.environ.get("DAGSTER_HOME")
    home = Path(dagster_home).expanduser().resolve() if dagster_home else None
    inside_repo = True
    for folder in file.parents:
        if folder.name.lower() in FORBIDDEN_FOLDER_NAMES and (inside_repo or not dev):
            raise SecretError(
                f"{file}: refused: the key store is inside {folder}, a data or publication folder; "
                "keep keys apart from the data they protect (another place, other access control)"
            )
        if home is not None and folder == home:
            raise SecretError(f"{file}: refused: the key store is inside DAGSTER_HOME ({home}), where run data is stored")
        if (folder / ".git").exists():
            inside_repo = False  # folders from here up hold the repository, not its data
            if dev:
                continue
            raise SecretError(
                f"{file}: refused: the key store is inside the repository {folder}; put it outside "
                f"(e.g. ~/.config/anon_dagster/keystore.json), or set {ENV_DEV}=1 for the development store"
            )


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

    The plaintext of ``sealed`` is ``{"keys": {"1": b64(32 bytes), ...}}``.
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
        keys (the loser's pseudonyms would point to a key that no longer exists).
        """
        lock_fd = os.open(self.file.with_name(self.file.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            try:
                on_disk = json.loads(self.file.read_text(encoding="utf-8")).get("keys")
            except (OSError, ValueError, AttributeError):
                on_disk = None
            if on_disk != self._meta["keys"]:
                raise SecretError(f"{self.file}: the key store changed since it was opened (another rotation?); open it again")
            before = (dict(self._keys), dict(self._created), self._meta)
            info = self._add_version()
            try:
                self._save()
            except BaseException:
                self._keys, self._created, self._meta = before
                raise
            return info
        finally:
            os.close(lock_fd)  # closing releases the lock

    def _save(self, target: Path | None = None) -> None:
        plain = json.dumps({"keys": {str(v): _b64(k) for v, k in self._keys.items()}}).encode("utf-8")
        nonce = secrets.token_bytes(12)
        ciphertext = AESGCM(self._kek).encrypt(nonce, plain, _associated_data(self._meta))
        doc = {**self._meta, "sealed": {"alg": "AES-256-GCM", "nonce": _b64(nonce), "ciphertext": _b64(ciphertext)}}
        write_bytes_atomic(json.dumps(doc, indent=1).encode("utf-8") + b"\n", target or self.file, mode=0o600)


# ----- the key store --------------------------------------------------------------------------


class KeyStore:
    """Versioned master keys (through a backend) and the subkeys derived from them.

    ``state_dir`` is the folder beside the key store that holds what must stay with the keys,
    not with the data: token vaults and the reversal audit log.
    """

    def __init__(self, backend: KeyBackend, state_dir: Path | None = None, dev: bool = False):
        self.backend = backend
        self.state_dir = state_dir
        self.dev = dev
        if not backend.versions():
            raise SecretError(f"the {backend.describe()} holds no key")
        self._cache: dict[bytes, bytes] = {}

    # -- what may be shown --
    def versions(self) -> list[KeyInfo]:
        return self.backend.versions()

    @property
    def current_version(self) -> int:
        """The newest key version: new pseudonyms are made with it."""
        return max(k.version for k in self.versions())

    def describe(self) -> str:
        return self.backend.describe()

    def fingerprint(self, version: int) -> str:
        """64 bits of a dedicated HKDF output: tells two deployments hold the same key, reveals nothing.

        HKDF is a PRF keyed by the master key, so this is a random-looking value to anyone
        without the key; 64 bits leave no room to test key guesses (the key has 256 bits).
        """
        return self._derive(version, hkdf_info("fingerprint", version), 8).hex()

    # -- derived keys --
    def _resolve(self, version: int | None) -> int:
        return self.current_version if version is None else int(version)

    def _derive(self, version: int, info: bytes, length: int) -> bytes:
        cache_key = info + b"|" + str(length).encode()
        if cache_key not in self._cache:
            self._cache[cache_key] = self.backend.derive(version, info, length)
        return self._cache[cache_key]

    def derive_key(self, purpose: str, version: int | None = None) -> bytes:
        """A 32-byte key for an internal use (``"ledger-linkage"``, ``"data-at-rest"``, ...).

        HKDF-SHA256 of master key ``version`` (default: current) with
        ``info = ["anon_dagster", "internal", purpose, version]``.
        """
        if not purpose:
            raise SecretError("derive_key needs a non-empty purpose")
        v = self._resolve(version)
        return self._derive(v, hkdf_info("internal", purpose, v), 32)

    def pseudonym_key(self, method: str, purpose: str, version: int | None = None) -> bytes:
        """The per-purpose pseudonym subkey: info = ``["anon_dagster","pseudonym",method,purpose,v]``."""
        v = self._resolve(version)
        length = 64 if method == "aes_siv" else 32
        return self._derive(v, hkdf_info("pseudonym", method, purpose, v), length)

    # -- rotation --
    def rotate(self) -> KeyInfo:
        """Create master key version N+1 (see :mod:`.rotation` for what data needs afterwards)."""
        info = self.backend.rotate()
        return info

    # -- files beside the key store --
    def require_state_dir(self) -> Path:
        """The folder for token vaults and the audit log; SecretError when there is none."""
        if self.state_dir is None:
            raise SecretError(
                f"tokens and the reversal audit log need a folder apart from the data: set {ENV_STATE} "
                "(keys from the environment have no key file to sit beside)"
            )
        self.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self.state_dir

    def __reduce__(self):
        raise TypeError("a KeyStore cannot be serialized (it would carry key material)")

    def __repr__(self) -> str:
        versions = ", ".join(str(k.version) for k in self.versions())
        return f"<KeyStore {self.describe()}, versions [{versions}]>"


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


def open_keystore(path: str | Path | None = None, *, passphrase: str | None = None,
                  dev: bool | None = None, create_dev: bool = True) -> KeyStore:
    """Open the key store the environment (or ``path``) names.

    Order: an explicit ``path``; else ``ANON_DAGSTER_MASTER_KEY`` (keys from the environment);
    else ``ANON_DAGSTER_VAULT_KEY`` (a Vault Transit key, with ``VAULT_ADDR`` and ``VAULT_TOKEN``);
    else ``ANON_DAGSTER_KEYSTORE`` (an encrypted key file, unsealed with
    ``ANON_DAGSTER_KEYSTORE_PASSPHRASE``); else, only with ``dev=True`` or
    ``ANON_DAGSTER_DEV_KEYSTORE=1``, the git-ignored development store
    ``.anon_dagster/dev-keystore`` at the project root (created on first use, with a warning).
    Anything else raises :class:`SecretError`, whose message never holds key material.
    """
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


def check_apart_from(keystore: KeyStore, folders: list[Path], owner: str) -> None:
    """Refuse a key store whose files sit inside one of ``folders`` (a release's data folders).

    The folder names :func:`check_location` refuses cannot know where a particular release
    reads and publishes; this check, made when a release opens the store, does.
    """
    if keystore.state_dir is None:  # keys from the environment or an external service
        return
    where = Path(keystore.state_dir).expanduser().resolve()
    for folder in folders:
        folder = Path(folder).expanduser().resolve()
        if where == folder or folder in where.parents:
            raise SecretError(
                f"the key store lives inside {folder}, a data or publication folder of {owner}: "
                "keep keys apart from the data they protect (set ANON_DAGSTER_KEYSTORE elsewhere)"
            )


def init_keystore(path: str | Path, passphrase: str, *, scrypt_n: int | None = None,
                  dev: bool = False) -> KeyStore:
    """Create an encrypted key store at ``path`` (a file, or a folder for ``keystore.json``)."""
    backend = FileKeyBackend.create(path, passphrase, scrypt_n=scrypt_n, dev=dev)
    return KeyStore(backend, backend.file.parent, dev=dev)
