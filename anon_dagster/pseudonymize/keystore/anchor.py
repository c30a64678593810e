"""The audit anchor: what the key store records about the reversal audit log after each entry.

The audit log (:mod:`anon_dagster.pseudonymize.audit`) proves that what it holds was not edited,
reordered or cut short; on its own it cannot prove it was not *erased* or swapped for another
log (an older copy, or an empty path). So after every entry the key store records an
:class:`AuditAnchor` — how many entries the log holds and the MAC of the last one — somewhere
the log's own writers cannot reset without the key store noticing:

* the encrypted key file (:class:`~.file.KeyFileAnchor`): the anchor is sealed with the master
  keys, so it cannot be read, changed or removed without the passphrase, and deleting it means
  deleting the keys;
* keys from the environment or an external service hold no writable storage of their own, so
  the anchor is the file ``audit.anchor`` in the key store's state folder
  (``ANON_DAGSTER_KEYSTORE_STATE``), MACed under ``derive_key("audit-anchor", kv)``
  (:class:`StateFileAnchor`). Wiping or replacing the log alone, or pointing
  ``ANON_DAGSTER_AUDIT_LOG`` elsewhere, is detected; wiping the log *and* the state folder looks
  like a fresh installation (documented in ``docs/pseudonymization.md``).

Writers hold :meth:`AnchorStore.lock` for the whole append (verify, write the entry, record the
anchor), so two reversals at once cannot lose an anchor update. Readers take no lock: every
anchor is written to a temporary file and renamed, so a reader sees the old or the new one.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ...errors import SecretError
from ...io import write_bytes_atomic

ANCHOR_FILENAME = "audit.anchor"
ANCHOR_FORMAT = "anon_dagster.audit-anchor"
ANCHOR_KEY_PURPOSE = "audit-anchor"
GENESIS = "0" * 64  # the "previous MAC" of entry 0, and the head of an anchor that records no entry
_MAC = re.compile(r"[0-9a-f]{64}")


class AnchorInvalid(SecretError):
    """The anchor cannot be trusted: modified, unreadable, or MACed under a key the store lacks."""


@dataclass(frozen=True)
class AuditAnchor:
    """The log as the key store last recorded it: ``count`` entries, the last one MACed ``head``.

    ``count`` is 0 with ``head`` = :data:`GENESIS` before the first entry is written.
    """

    count: int
    head: str

    def to_dict(self) -> dict:
        return {"count": self.count, "head": self.head}

    @classmethod
    def from_dict(cls, doc: object) -> AuditAnchor:
        """The anchor a stored dict describes; ValueError unless it is exactly well formed."""
        if not isinstance(doc, dict):
            raise ValueError("not an object")
        count, head = doc.get("count"), doc.get("head")
        # bool is an int in Python: a stored ``true`` must not read as one entry
        if type(count) is not int or count < 0 or not isinstance(head, str) or not _MAC.fullmatch(head):
            raise ValueError("count or head")
        if count == 0 and head != GENESIS:
            raise ValueError("an anchor of no entry has the genesis head")
        return cls(count, head)


class AnchorStore(ABC):
    """Where one key store records its :class:`AuditAnchor`."""

    @abstractmethod
    def describe(self) -> str:
        """Where the anchor is, in words safe to show (no key material)."""

    @abstractmethod
    def lock(self) -> AbstractContextManager[None]:
        """A context manager holding the exclusive lock every anchor writer takes."""

    @abstractmethod
    def read(self) -> AuditAnchor | None:
        """The recorded anchor, or None when none was ever recorded; AnchorInvalid if it does not verify."""

    @abstractmethod
    def write(self, anchor: AuditAnchor) -> None:
        """Record ``anchor`` (atomically); the caller holds :meth:`lock`."""


@contextmanager
def locked_file(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created mode 0600) for the block.

    Each call opens its own descriptor, so two threads of one process exclude each other too;
    the lock goes with the descriptor, so a killed process never leaves it held.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


class _DerivesKeys(Protocol):
    """The part of a KeyStore the state-file anchor uses (no import of the KeyStore: no cycle)."""

    @property
    def current_version(self) -> int: ...

    def derive_key(self, purpose: str, version: int | None = None) -> bytes: ...


def _canonical(obj: dict) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode("utf-8")


class StateFileAnchor(AnchorStore):
    """The anchor as ``<state folder>/audit.anchor``, for backends without storage of their own.

    ``{"format": "anon_dagster.audit-anchor", "count": N, "head": <MAC>, "kv": v, "mac": <hex>}``
    with ``mac = HMAC-SHA256(derive_key("audit-anchor", v), canonical JSON of format, count,
    head, kv)``: editing it, or copying one from another key store, breaks the MAC.
    """

    def __init__(self, keys: _DerivesKeys, folder: Path):
        self.keys = keys
        self.path = Path(folder) / ANCHOR_FILENAME
        self.lock_path = self.path.with_name(self.path.name + ".lock")

    def describe(self) -> str:
        return f"the anchor file {self.path}"

    def lock(self) -> AbstractContextManager[None]:
        return locked_file(self.lock_path)

    def _mac(self, body: dict, version: int) -> str:
        return hmac.new(self.keys.derive_key(ANCHOR_KEY_PURPOSE, version), _canonical(body), hashlib.sha256).hexdigest()

    def read(self) -> AuditAnchor | None:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise AnchorInvalid(f"{self.path}: the anchor cannot be read ({type(exc).__name__})") from None
        try:
            doc = json.loads(raw.decode("utf-8"))
            body = {k: doc[k] for k in ("format", "count", "head", "kv")}
            if body["format"] != ANCHOR_FORMAT or type(body["kv"]) is not int:
                raise ValueError("format")
            anchor = AuditAnchor.from_dict(body)
            mac = doc["mac"]
        except (ValueError, KeyError, TypeError, AttributeError):  # UnicodeDecodeError is a ValueError
            raise AnchorInvalid(f"{self.path}: not a well-formed audit anchor") from None
        try:
            expected = self._mac(body, body["kv"])
        except SecretError:
            raise AnchorInvalid(
                f"{self.path}: the anchor is MACed with key version {body['kv']}, which the key store does not hold"
            ) from None
        if not isinstance(mac, str) or not hmac.compare_digest(mac, expected):
            raise AnchorInvalid(f"{self.path}: the anchor's MAC does not match: it was modified or belongs to another key store")
        return anchor

    def write(self, anchor: AuditAnchor) -> None:
        version = self.keys.current_version
        body = {"format": ANCHOR_FORMAT, **anchor.to_dict(), "kv": version}
        doc = {**body, "mac": self._mac(body, version)}
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_bytes_atomic(json.dumps(doc, sort_keys=True).encode("utf-8") + b"\n", self.path, mode=0o600)
