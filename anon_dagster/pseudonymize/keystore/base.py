"""The key store's interface: versioned master keys behind a backend, and the subkeys derived from them.

A :class:`KeyStore` never hands out a master key. It hands out *subkeys*, each derived for one
use with HKDF-SHA256 (RFC 5869), whose ``info`` is the JSON list
``["anon_dagster", family, *labels, version]`` — length-delimited, so no two uses can collide:

* pseudonym keys: ``["anon_dagster", "pseudonym", method, purpose, v]`` (one per purpose, so the
  research and the billing tables share no pseudonym and cannot be joined), and
  ``[..., purpose, "publication", "<release>/<partition>", v]`` for a pseudonym of scope ``release`` (one key
  per publication, so two publications share no pseudonym);
* internal keys, :meth:`KeyStore.derive_key`: ``["anon_dagster", "internal", purpose, v]`` for
  ``"ledger-linkage"``, ``"data-at-rest"``, ``"audit-log"``, ``"token-vault:<purpose>"``…

Every subkey follows the current key version, except the *pinned* ones
(:data:`PINNED_VERSIONS`): the ledger's linkage key is always derived from key version
:data:`LINKAGE_KEY_VERSION`, so ``keys rotate`` never changes how the ledger recognizes a person
(a rotation that changed it would make every earlier publication look like other people, and
the composition check would pass blind).

A :class:`KeyBackend` holds the master keys: in memory (:class:`_MemoryKeys`, HKDF on the key
itself) or in an external service (:class:`ExternalKeyBackend`, HKDF-Expand of one MAC per key
version computed by the service).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF, HKDFExpand

from ...errors import SecretError
from .anchor import AnchorStore, StateFileAnchor

ENV_KEYSTORE = "ANON_DAGSTER_KEYSTORE"
ENV_PASSPHRASE = "ANON_DAGSTER_KEYSTORE_PASSPHRASE"
ENV_MASTER_KEY = "ANON_DAGSTER_MASTER_KEY"
ENV_DEV = "ANON_DAGSTER_DEV_KEYSTORE"
ENV_STATE = "ANON_DAGSTER_KEYSTORE_STATE"
ENV_VAULT_KEY = "ANON_DAGSTER_VAULT_KEY"  # read by the Vault backend (vault.py)

MASTER_KEY_BYTES = 32

LINKAGE_PURPOSE = "ledger-linkage"
LINKAGE_KEY_VERSION = 1
# Internal purposes whose key outlives rotation: purpose -> the key version it is derived from.
# The linkage pseudonyms never leave the ledger, and the ledger keeps those of every earlier
# publication: a new key version would not protect them, only make them unrecognizable.
PINNED_VERSIONS: dict[str, int] = {LINKAGE_PURPOSE: LINKAGE_KEY_VERSION}


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

    def anchor_store(self) -> AnchorStore | None:
        """Where the backend itself records the audit anchor, or None when it has no storage.

        None (the default: keys from the environment, an external service) puts the anchor in
        the key store's state folder (:class:`~.anchor.StateFileAnchor`); a backend with storage
        of its own that the log's writers cannot reset (a KMS or Vault KV with check-and-set)
        can return an :class:`~.anchor.AnchorStore` of its own.
        """
        return None

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

    @staticmethod
    def _cache_key(info: bytes, length: int) -> bytes:
        return info + b"|" + str(length).encode()

    def _derive(self, version: int, info: bytes, length: int) -> bytes:
        cache_key = self._cache_key(info, length)
        if cache_key not in self._cache:
            self._cache[cache_key] = self.backend.derive(version, info, length)
        return self._cache[cache_key]

    def derive_key(self, purpose: str, version: int | None = None) -> bytes:
        """A 32-byte key for an internal use (``"ledger-linkage"``, ``"data-at-rest"``, ...).

        HKDF-SHA256 of master key ``version`` with ``info = ["anon_dagster", "internal",
        purpose, version]``. ``version`` defaults to the current one, except for a pinned
        purpose (:data:`PINNED_VERSIONS`: ``ledger-linkage`` → version 1), which defaults to its
        pinned version whatever rotation added; a store that no longer holds that version is
        refused (SecretError) rather than given another key.
        """
        if not purpose:
            raise SecretError("derive_key needs a non-empty purpose")
        near = purpose.strip().lower().replace("_", "-")
        if near in PINNED_VERSIONS and purpose != near:
            # another spelling would silently get an unpinned key that follows rotation
            raise SecretError(f"internal key purpose {purpose!r}: write it {near!r}")
        pinned = PINNED_VERSIONS.get(purpose)
        if version is None and pinned is not None:
            info = hkdf_info("internal", purpose, pinned)
            # checked once (then cached): a store without the version must not yield another key
            if self._cache_key(info, 32) not in self._cache and pinned not in {k.version for k in self.versions()}:
                raise SecretError(
                    f"the {purpose} key is derived from key version {pinned}, which the {self.describe()} "
                    f"does not hold: without it the ledger cannot recognize the persons of earlier "
                    f"publications; restore key version {pinned}"
                )
            return self._derive(pinned, info, 32)
        v = self._resolve(version)
        return self._derive(v, hkdf_info("internal", purpose, v), 32)

    def pseudonym_key(self, method: str, purpose: str, version: int | None = None,
                      publication: str | None = None) -> bytes:
        """The per-purpose pseudonym subkey: info = ``["anon_dagster","pseudonym",method,purpose,v]``;
        for a pseudonym of scope ``release``, bound to one publication,
        ``[..., purpose, "publication", publication, v]`` with ``publication`` its label
        (``"<release>/<partition>"``, :func:`~anon_dagster.pseudonymize.methods.publication_label`).
        The two lists differ in length, so no publication's key is another's or the unbound one."""
        v = self._resolve(version)
        length = 64 if method == "aes_siv" else 32
        labels: tuple[str | int, ...] = ((method, purpose, v) if publication is None
                                         else (method, purpose, "publication", publication, v))
        return self._derive(v, hkdf_info("pseudonym", *labels), length)

    # -- rotation --
    def rotate(self) -> KeyInfo:
        """Create master key version N+1 (see :mod:`.rotation` for what data needs afterwards)."""
        info = self.backend.rotate()
        return info

    # -- files beside the key store --
    def audit_anchor(self) -> AnchorStore:
        """Where this key store records the reversal audit log's head (:mod:`.anchor`).

        The backend's own storage (the encrypted key file), else ``audit.anchor`` in the state
        folder; SecretError when there is neither, so a reversal is refused rather than logged
        with nothing to anchor it.
        """
        own = self.backend.anchor_store()
        if own is not None:
            return own
        if self.state_dir is None:
            raise SecretError(
                f"the reversal audit log is anchored in the key store's state folder: set {ENV_STATE} "
                "(keys from the environment or an external service have no storage of their own)"
            )
        return StateFileAnchor(self, Path(self.state_dir))

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
