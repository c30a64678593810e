"""The tamper-evident audit log of reversals: JSON lines, each entry MACed, chained, and anchored in the key store.

Entry ``i`` is one JSON object on line ``i + 1``::

    {"seq": i, "ts": "2026-01-01T10:00:00.123456+00:00", "prev": <mac of entry i-1, or 64 zeros>,
     "kv": <key version of the audit key>, "event": {...}, "mac": <hex>}

with ``mac = HMAC-SHA256(A_kv, canonical_json({seq, ts, prev, kv, event}))`` where ``A_kv`` is
``keystore.derive_key("audit-log", kv)`` — a key separate from every pseudonym key. So:

* an **edited** entry no longer matches its MAC (forging one needs the audit key);
* a **deleted** entry leaves a gap in ``seq`` and a ``prev`` that does not match;
* **reordered** entries break ``seq`` and ``prev``;
* a **truncated** tail is caught by the head file ``<log>.head`` (the last ``seq`` and MAC,
  itself MACed);
* a log **wiped** (log and head deleted), **emptied**, **replaced** by another valid log under
  the same key, or **rolled back** to an older copy (log and head together) is caught by the
  **anchor**: after every entry the key store records how many entries the log holds and the
  MAC of the last one (:mod:`.keystore.anchor` — sealed in the encrypted key file, or a MACed
  file in the state folder for keys from the environment or Vault).

One append, under the anchor's lock (so two reversals at once can neither interleave nor lose
an anchor update): verify the log against the anchor; write the entry and fsync it; write the
head; record the anchor. The entry goes first because a process killed between the steps must
leave the anchor *behind* the log, never ahead: an anchor ahead by one cannot be told from the
attack of cutting off the last entry, while an entry beyond the anchor proves itself (its MAC
needs the audit key, its ``prev`` must be the anchored MAC). So verification accepts the head
and the anchor exactly one entry behind when that entry verifies, and reports the entry as not
yet anchored; the next append anchors it. That entry was written by a call that never returned:
:func:`~.reversal.reidentify` hands out identifiers only after its entry is anchored. Before
the very first entry the anchor is recorded as "no entry", so a missing anchor is never the
trace of a crash.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from ..errors import SecretError, UserError
from .keystore import KeyStore
from .keystore.anchor import GENESIS, AnchorInvalid, AnchorStore, AuditAnchor

AUDIT_FILENAME = "audit.jsonl"
ENV_AUDIT_LOG = "ANON_DAGSTER_AUDIT_LOG"
# the orchestrator's run the entries being written belong to (set by release governance's
# custody_context); "-" outside any run
RUN: ContextVar[str | None] = ContextVar("anon_dagster_audit_run", default=None)


def current_run() -> str:
    """The run id the entries written now belong to, ``-`` outside an orchestrator's run."""
    return RUN.get() or "-"


__all__ = [
    "AUDIT_FILENAME", "ENV_AUDIT_LOG", "GENESIS", "RUN", "AuditLog", "AuditTampered", "VerifyResult",
    "current_run", "default_audit_path", "describe_entry", "verify_audit_log",
]


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


def _entries(n: int) -> str:
    return f"{n} entry" if n == 1 else f"{n} entries"


def _head_path(path: Path) -> Path:
    return path.with_name(path.name + ".head")


def _head_mac(keystore: KeyStore, seq: int, mac: str, version: int) -> str:
    key = keystore.derive_key("audit-log", version)
    return hmac.new(key, _canonical({"head": seq, "mac": mac, "kv": version}), hashlib.sha256).hexdigest()


class AuditTampered(UserError):
    """The audit log does not verify.

    ``line`` is the 1-based line of the first bad entry, or None when the log as a whole is
    wrong (wiped, emptied, rolled back); ``kind`` names what was found: ``"edited"``,
    ``"truncated"``, ``"wiped"``, ``"emptied"``, ``"rolled back"``, ``"replaced"``,
    ``"anchor missing"``, ``"anchor invalid"``, ``"anchor behind"``, ...
    """

    def __init__(self, path: Path, line: int | None, reason: str, kind: str = "tampered"):
        self.path, self.line, self.reason, self.kind = path, line, reason, kind
        where = f"{path}: line {line}" if line is not None else str(path)
        super().__init__(f"{where}: {reason}")


@dataclass(frozen=True)
class VerifyResult:
    """Outcome of :func:`verify_audit_log`.

    ``entries`` verified; ``anchored`` is how many of them the key store's anchor records
    (``entries`` or ``entries - 1`` after an interrupted append; None when the log was checked
    alone), ``anchor`` where that anchor is; ``last_mac`` is what the next entry chains to.
    """

    path: Path
    entries: int
    anchored: int | None = None
    anchor: str | None = None
    last_mac: str = GENESIS

    @property
    def unanchored(self) -> int:
        """Entries beyond the anchor: 1 after an append was interrupted before its anchor, else 0."""
        return 0 if self.anchored is None else self.entries - self.anchored


class AuditLog:
    """Append-only, MAC-chained, anchored JSON-lines log (see the module docstring)."""

    def __init__(self, keystore: KeyStore, path: str | Path | None = None):
        self.keystore = keystore
        self.path = Path(path) if path is not None else default_audit_path(keystore)
        self.head_path = _head_path(self.path)

    def append(self, event: dict) -> dict:
        """Append one event (a JSON-serializable dict without secrets); return the entry once anchored.

        The log is verified against the anchor first, so an entry is never chained onto a log
        that was tampered with, erased or replaced; the key store must have somewhere to record
        the anchor (SecretError otherwise: nothing is written).
        """
        store = self.keystore.audit_anchor()
        with store.lock():
            state = _verify(self.keystore, self.path, store)
            return self._append_locked(store, state, event)

    def adopt(self, actor: str, reason: str) -> dict:
        """Anchor a log that has no anchor (written before anchoring existed); return the entry logging it.

        Only a log that verifies on its own, and only when the key store records no anchor at
        all: an anchor that disagrees with the log is never overwritten. The adoption is itself
        an entry (who, why, how many entries were adopted), so it shows in the log.
        """
        actor, reason = (actor or "").strip(), (reason or "").strip()
        if not actor or not reason:
            raise UserError("adopting an audit log needs an actor (who) and a reason (why)")
        store = self.keystore.audit_anchor()
        with store.lock():
            existing = store.read()
            if existing is not None:
                raise UserError(
                    f"{self.path}: {store.describe()} already anchors an audit log ({_entries(existing.count)}); "
                    "only a log without any anchor can be adopted"
                )
            state = _verify(self.keystore, self.path, None)
            store.write(AuditAnchor(state.entries, state.last_mac))
            state = replace(state, anchored=state.entries, anchor=store.describe())
            event = {"action": "adopt-log", "actor": actor, "reason": reason, "entries": state.entries}
            return self._append_locked(store, state, event)

    def _append_locked(self, store: AnchorStore, state: VerifyResult, event: dict) -> dict:
        """Write one entry after ``state`` (verified under ``store``'s lock, which the caller holds)."""
        if state.entries == 0 and store.read() is None:
            # "no entry yet" is recorded before the first entry, so that a crash before that
            # entry's anchor leaves the anchor one behind, never missing
            store.write(AuditAnchor(0, GENESIS))
        seq, kv = state.entries, self.keystore.current_version
        entry = {"seq": seq, "ts": datetime.now(UTC).isoformat(), "prev": state.last_mac, "kv": kv, "event": event}
        entry["mac"] = _mac(self.keystore.derive_key("audit-log", kv), entry)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        created = not self.path.exists()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as handle:
            handle.write(_line(entry) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        if created:  # the new file's name must be on disk before the anchor says it has an entry
            _fsync_dir(self.path.parent)
        self._write_head(seq, entry["mac"], kv)
        store.write(AuditAnchor(seq + 1, entry["mac"]))
        return entry

    def _write_head(self, seq: int, mac: str, kv: int) -> None:
        head = {"seq": seq, "mac": mac, "kv": kv, "head_mac": _head_mac(self.keystore, seq, mac, kv)}
        tmp = self.head_path.with_name(self.head_path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps(head) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.head_path)

    def verify(self) -> VerifyResult:
        """Check every entry's MAC, sequence and chain, the head and the anchor; raise AuditTampered."""
        return verify_audit_log(self.keystore, self.path)

    def entries(self) -> list[dict]:
        """Every entry, oldest first, once the whole log verifies (AuditTampered otherwise); the
        entries beyond the verified count (an append under way) are left out."""
        result = self.verify()
        if not self.path.exists():
            return []
        with open(self.path, encoding="utf-8") as handle:
            return [json.loads(line) for line, _ in zip(handle, range(result.entries), strict=False)]


def describe_entry(entry: dict) -> str:
    """One line of an entry: sequence, time, action, actor, then its other fields (``key=value``).

    Entries hold no secret; the pseudonyms a reversal logs (``first_pseudonyms``) are left out,
    a pseudonym being personal data still (its digest and count are shown)."""
    event = {k: v for k, v in (entry.get("event") or {}).items() if k != "first_pseudonyms"}
    head = [str(entry.get("seq")), str(entry.get("ts")), str(event.pop("action", "-")), str(event.pop("actor", "-"))]
    rest = [f"{k}={json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v}" for k, v in sorted(event.items())]
    return "  ".join(head + rest)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def verify_audit_log(keystore: KeyStore, path: str | Path, *, anchored: bool = True) -> VerifyResult:
    """Verify an audit log; raise :class:`AuditTampered` saying what is wrong, and where.

    Every entry's MAC, sequence and chain, the head file, and the key store's anchor: the log
    must be the one the key store last recorded, with at most one entry beyond it (an append
    interrupted before its anchor). A missing log with neither head nor anchor is an empty log:
    a fresh installation, nothing ever reversed. ``anchored=False`` checks the log alone (a copy
    kept elsewhere), which cannot tell an erased or rolled-back log. SecretError when the key
    store has nowhere to keep an anchor.
    """
    path = Path(path)
    if not anchored:
        return _verify(keystore, path, None)
    store = keystore.audit_anchor()
    # under the writers' lock: read without it, the anchor and the log could be seen on either
    # side of another process's append (anchor read before its first entry, log after)
    with store.lock():
        return _verify(keystore, path, store)


@dataclass
class _Scan:
    """What reading the log found: whether it exists, its entries, and the MACs verification needs."""

    exists: bool
    count: int = 0
    last_mac: str = GENESIS
    before_last: str = GENESIS  # MAC of entry count - 2 (the last entry's prev)
    mac_at: str | None = None  # MAC of the entry the anchor names, once read


def _scan(keystore: KeyStore, path: Path, want: int | None) -> _Scan:
    """Check every entry's MAC, sequence and chain; remember the MAC of entry ``want``."""
    keys: dict[int, bytes] = {}

    def key(version: int, line: int) -> bytes:
        if version not in keys:
            try:
                keys[version] = keystore.derive_key("audit-log", version)
            except SecretError:
                raise AuditTampered(path, line, f"entry MACed with key version {version}, which the key store does not hold") from None
        return keys[version]

    scan = _Scan(exists=path.exists())
    if not scan.exists:
        return scan
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
                raise AuditTampered(path, lineno, "MAC does not match: the entry was edited", "edited")
            if raw.rstrip(b"\n") != _line(entry).encode("utf-8"):
                # same content, other bytes (spacing, escapes): still not what was written
                raise AuditTampered(path, lineno, "the entry was rewritten (its bytes differ from what was written)", "edited")
            if seq != scan.count:
                what = "deleted or moved" if isinstance(seq, int) and seq > scan.count else "reordered or duplicated"
                raise AuditTampered(path, lineno, f"sequence {seq} where {scan.count} was expected: entries were {what}", what)
            if entry["prev"] != scan.last_mac:
                raise AuditTampered(path, lineno, "does not chain to the entry before it: entries were deleted or reordered", "reordered")
            if seq == want:
                scan.mac_at = mac
            scan.before_last, scan.last_mac, scan.count = scan.last_mac, mac, scan.count + 1
    return scan


def _check_head(keystore: KeyStore, path: Path, scan: _Scan) -> None:
    """The head file must name the last entry, or the one before it (a writer stopped between the two)."""
    head_path = _head_path(path)
    if not head_path.exists():
        if scan.count > 1:  # one entry and no head: the first append stopped before its head
            raise AuditTampered(path, scan.count, f"the head file {head_path.name} is missing", "head missing")
        return
    try:
        head = json.loads(head_path.read_text(encoding="utf-8"))
        seq, mac, kv = head["seq"], head["mac"], int(head["kv"])
        ok = type(seq) is int and isinstance(mac, str) and hmac.compare_digest(
            str(head["head_mac"]), _head_mac(keystore, seq, mac, kv))
    except (ValueError, KeyError, TypeError, SecretError):
        ok = False
    if not ok:
        raise AuditTampered(path, scan.count + 1, f"the head file {head_path.name} was modified", "head modified")
    if (seq, mac) == (scan.count - 1, scan.last_mac):
        return
    if scan.count >= 2 and (seq, mac) == (scan.count - 2, scan.before_last):
        return  # the last entry was written, its head not yet
    if scan.count == 0:
        kind = "wiped" if not scan.exists else "emptied"
        state = "is missing" if not scan.exists else "holds no entry"
        raise AuditTampered(path, None, f"{kind}: the log {state} but its head file records entry {seq}", kind)
    if seq > scan.count - 1:
        raise AuditTampered(
            path, scan.count + 1,
            f"truncated: the log ends at entry {scan.count - 1} but its head says {seq}: entries were removed from the end",
            "truncated",
        )
    raise AuditTampered(
        path, scan.count + 1,
        f"the log ends at entry {scan.count - 1} but its head names entry {seq} with another MAC: the head or the log was replaced",
        "replaced",
    )


def _verify(keystore: KeyStore, path: Path, store: AnchorStore | None) -> VerifyResult:
    anchor: AuditAnchor | None = None
    anchor_error: AnchorInvalid | None = None
    if store is not None:
        try:
            anchor = store.read()
        except AnchorInvalid as exc:  # reported after the log's own checks, which name a line
            anchor_error = exc
    want = anchor.count - 1 if anchor is not None and anchor.count > 0 else None
    scan = _scan(keystore, path, want)
    _check_head(keystore, path, scan)
    if store is None:
        return VerifyResult(path, scan.count, last_mac=scan.last_mac)
    if anchor_error is not None:
        raise AuditTampered(path, None, f"anchor invalid: {anchor_error}", "anchor invalid")
    where, n = store.describe(), scan.count
    if anchor is None:
        if n:
            raise AuditTampered(
                path, None,
                f"anchor missing: the log holds {_entries(n)} but {where} records none (the anchor was removed, "
                "or the log belongs to another key store; a log written before anchoring is adopted with "
                "'anon-dagster audit anchor')",
                "anchor missing",
            )
        return VerifyResult(path, 0, 0, where)
    c = anchor.count
    if n < c:
        if not scan.exists:
            kind, what = "wiped", f"the log is missing (deleted, or {ENV_AUDIT_LOG} or --log names another file)"
        elif n == 0:
            kind, what = "emptied", "the log holds no entry"
        else:
            kind, what = "rolled back", (f"the log ends at entry {n - 1} (an older copy, its last entries cut off "
                                         "together with the head, or a shorter log)")
        raise AuditTampered(path, None, f"{kind}: {what}, but {where} records {_entries(c)}", kind)
    if c > 0 and scan.mac_at != anchor.head:
        raise AuditTampered(
            path, c, f"replaced: entry {c - 1} is not the one {where} records (another log, or a rewritten one)", "replaced",
        )
    if n > c + 1:
        raise AuditTampered(
            path, c + 2,
            f"anchor behind: the log holds {_entries(n)} but {where} records {c}: the key store or its anchor was "
            "restored from an older copy, or entries were written without anchoring them",
            "anchor behind",
        )
    return VerifyResult(path, n, c, where, scan.last_mac)
