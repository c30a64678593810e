"""The tamper-evident audit log of reversals: JSON lines, each entry MACed and chained.

Entry ``i`` is one JSON object on line ``i + 1``::

    {"seq": i, "ts": "2026-01-01T10:00:00.123456+00:00", "prev": <mac of entry i-1, or 64 zeros>,
     "kv": <key version of the audit key>, "event": {...}, "mac": <hex>}

with ``mac = HMAC-SHA256(A_kv, canonical_json({seq, ts, prev, kv, event}))`` where ``A_kv`` is
``keystore.derive_key("audit-log", kv)`` — a key separate from every pseudonym key. So:

* an **edited** entry no longer matches its MAC (forging one needs the audit key);
* a **deleted** entry leaves a gap in ``seq`` and a ``prev`` that does not match;
* **reordered** entries break ``seq`` and ``prev``;
* a **truncated** tail is caught by the head file ``<log>.head`` (the last ``seq`` and MAC,
  itself MACed). Someone who can write both files *and* keeps an older copy of both can roll
  them back together: keep a copy of the head elsewhere (or ship the log to append-only
  storage) when that matters.

Writers take an exclusive lock, so concurrent reversals append in order.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..errors import SecretError, UserError
from .keystore import KeyStore

GENESIS = "0" * 64
AUDIT_FILENAME = "audit.jsonl"
ENV_AUDIT_LOG = "ANON_DAGSTER_AUDIT_LOG"


def default_audit_path(keystore: KeyStore) -> Path:
    """``$ANON_DAGSTER_AUDIT_LOG``, else ``audit.jsonl`` in the key store's folder."""
    env = os.environ.get(ENV_AUDIT_LOG)
    if env:
        return Path(env).expanduser()
    return keystore.require_state_dir() / AUDIT_FILENAME


def _canonical(obj: dict) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _line(entry: dict) -> str:
    """The one form an entry is written in: sorted keys, no escapes beyond JSON's own."""
    return json.dumps(entry, sort_keys=True, ensure_ascii=False)


def _mac(key: bytes, entry: dict) -> str:
    body = {k: entry[k] for k in ("seq", "ts", "prev", "kv", "event")}
    return hmac.new(key, _canonical(body), hashlib.sha256).hexdigest()


class AuditTampered(UserError):
    """The audit log does not verify; ``line`` is the 1-based line of the first bad entry."""

    def __init__(self, path: Path, line: int, reason: str):
        self.path, self.line, self.reason = path, line, reason
        super().__init__(f"{path}: line {line}: {reason}")


@dataclass(frozen=True)
class VerifyResult:
    """Outcome of :func:`verify_audit_log`: the number of entries that verified."""

    path: Path
    entries: int


class AuditLog:
    """Append-only, MAC-chained JSON-lines log (see the module docstring for the format)."""

    def __init__(self, keystore: KeyStore, path: str | Path | None = None):
        self.keystore = keystore
        self.path = Path(path) if path is not None else default_audit_path(keystore)
        self.head_path = self.path.with_name(self.path.name + ".head")

    def _key(self, version: int) -> bytes:
        return self.keystore.derive_key("audit-log", version)

    def _head_mac(self, seq: int, mac: str, version: int) -> str:
        return hmac.new(self._key(version), _canonical({"head": seq, "mac": mac, "kv": version}), hashlib.sha256).hexdigest()

    def append(self, event: dict) -> dict:
        """Append one event (a JSON-serializable dict without secrets); return the entry written.

        The log is verified from its head before writing, so an entry is never chained onto
        a log that was already tampered with.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "r+", encoding="utf-8") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                seq, prev = self._tail()
                kv = self.keystore.current_version
                entry = {"seq": seq, "ts": datetime.now(UTC).isoformat(), "prev": prev, "kv": kv, "event": event}
                entry["mac"] = _mac(self._key(kv), entry)
                handle.write(_line(entry) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
                self._write_head(seq, entry["mac"], kv)
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return entry

    def _tail(self) -> tuple[int, str]:
        """The next seq and the MAC to chain to, from a verified log."""
        result = self.verify()
        if result.entries == 0:
            return 0, GENESIS
        last = _last_line(self.path)
        entry = json.loads(last)
        return entry["seq"] + 1, entry["mac"]

    def _write_head(self, seq: int, mac: str, kv: int) -> None:
        head = {"seq": seq, "mac": mac, "kv": kv, "head_mac": self._head_mac(seq, mac, kv)}
        tmp = self.head_path.with_name(self.head_path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps(head) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.head_path)

    def verify(self) -> VerifyResult:
        """Check every entry's MAC, sequence and chain, and the head; raise AuditTampered."""
        return verify_audit_log(self.keystore, self.path)


def _last_line(path: Path) -> str:
    with open(path, "rb") as handle:
        lines = handle.read().splitlines()
    return lines[-1].decode("utf-8")


def verify_audit_log(keystore: KeyStore, path: str | Path) -> VerifyResult:
    """Verify an audit log; raise :class:`AuditTampered` naming the first bad line.

    A missing log with no head is an empty log (nothing was ever reversed).
    """
    path = Path(path)
    log = AuditLog(keystore, path)
    keys: dict[int, bytes] = {}

    def key(version: int, line: int) -> bytes:
        if version not in keys:
            try:
                keys[version] = keystore.derive_key("audit-log", version)
            except SecretError:
                raise AuditTampered(path, line, f"entry MACed with key version {version}, which the key store does not hold") from None
        return keys[version]

    prev, count, last_mac = GENESIS, 0, None
    if path.exists():
        with open(path, "rb") as handle:
            for lineno, raw in enumerate(handle, start=1):
                if not raw.strip():
                    raise AuditTampered(path, lineno, "blank line (entries are never removed or split)")
                try:
                    entry = json.loads(raw.decode("utf-8"))
                    seq, mac, kv = entry["seq"], entry["mac"], int(entry["kv"])
                    _ = entry["ts"], entry["event"], entry["prev"]
                except (ValueError, KeyError, TypeError):  # UnicodeDecodeError is a ValueError
                    raise AuditTampered(path, lineno, "not a well-formed audit entry") from None
                expected_mac = _mac(key(kv, lineno), entry)
                if not hmac.compare_digest(str(mac), expected_mac):
                    raise AuditTampered(path, lineno, "MAC does not match: the entry was edited")
                if raw.rstrip(b"\n") != _line(entry).encode("utf-8"):
                    # same content, other bytes (spacing, escapes): still not what was written
                    raise AuditTampered(path, lineno, "the entry was rewritten (its bytes differ from what was written)")
                if seq != count:
                    what = "deleted or moved" if isinstance(seq, int) and seq > count else "reordered or duplicated"
                    raise AuditTampered(path, lineno, f"sequence {seq} where {count} was expected: entries were {what}")
                if entry["prev"] != prev:
                    raise AuditTampered(path, lineno, "does not chain to the entry before it: entries were deleted or reordered")
                prev, last_mac, count = mac, mac, count + 1
    if log.head_path.exists():
        try:
            head = json.loads(log.head_path.read_text(encoding="utf-8"))
            ok = hmac.compare_digest(head["head_mac"], log._head_mac(int(head["seq"]), head["mac"], int(head["kv"])))
        except (ValueError, KeyError, TypeError, SecretError):
            ok = False
        if not ok:
            raise AuditTampered(path, count + 1, f"the head file {log.head_path.name} was modified")
        if head["seq"] != count - 1 or head["mac"] != last_mac:
            raise AuditTampered(
                path, count + 1,
                f"the log ends at entry {count - 1} but its head says {head['seq']}: entries were removed from the end",
            )
    elif count:
        raise AuditTampered(path, count, f"the head file {log.head_path.name} is missing")
    return VerifyResult(path, count)
