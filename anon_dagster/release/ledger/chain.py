"""The ledger's integrity: a MACed chain of events, and its head anchored outside the ledger file.

Definitions.

- The *integrity key* is the key store's ``ledger-integrity`` subkey
  (``keystore.derive_key("ledger-integrity", version)``), of the master key version recorded in
  the ledger when it was created. The ledger never opens the key store: its caller passes a
  :class:`LedgerSeal` built from the key store it opened.
- An *event* is one change of the ledger: ``init`` (the ledger's random id), ``record`` (an
  entry added, with its status and the digest of its content), ``status`` (a pending entry
  marked ``published`` or ``abandoned``), ``supersede`` (an entry superseded by a later one),
  ``migrate`` (a schema v1 ledger adopted); the governance events (:data:`CONTENT_EVENTS`:
  ``evaluation``, an evaluation awaiting approval or refused, and ``decision``, an approval or a
  rejection, ``retention``, intermediate tables deleted past their retention, and ``erasure``, a
  person removed from the intermediates) carry their whole content in the event itself, so the
  MAC covers it. Events are
  numbered 1, 2, ... (``seq``).
- The *MAC* of event n is HMAC-SHA256(integrity key, MAC of event n−1 ‖ canonical JSON of
  event n) (event 1 chains from the empty string). Editing, deleting, inserting or reordering
  an event breaks every later MAC; an entry whose content, status or supersession differs from
  what its events say is refused.
- An entry's *digest* is the SHA-256 of the canonical JSON of its immutable columns, the
  counts and digests of its class assignment (classes and members), and its ε spend rows.
- The *anchor* is a small file in the key store's state folder,
  ``<state>/ledger-anchors/<sha256 of the ledger's resolved path>.json`` (mode 0600), holding
  the ledger's id, the number of events and the last event's MAC, itself MACed under the
  integrity key. It lives with the keys, apart from the ledger and the data (the key store's
  location rules keep it out of data, publication and repository folders), so replacing,
  truncating or deleting the ledger file — or its whole folder — leaves the anchor saying what
  the ledger held. A ledger may be *ahead* of its anchor (a process stopped between its commit
  and the anchor's update: the events are MACed, so only a key holder wrote them); it is then
  rolled forward. A ledger *behind* its anchor, or whose event at the anchor's count has
  another MAC, was truncated or replaced, and is refused.

What the anchor cannot see: the ledger *and* the anchor both replaced by an older consistent
copy of the two (a backup restored over both). Keep the key store's state where the ledger's
writers cannot reach it to rule that out.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ...errors import UserError
from ...io import write_bytes_atomic

INTEGRITY_PURPOSE = "ledger-integrity"
ANCHOR_FOLDER = "ledger-anchors"
ANCHOR_FORMAT = "anon_dagster.ledger-anchor"
ANCHOR_VERSION = 1
# events whose body is their whole content (no table row): the governance records (retention:
# the intermediate tables deleted; erasure: a person removed, named by a digest only)
CONTENT_EVENTS = ("evaluation", "decision", "retention", "erasure")


class LedgerError(UserError):
    """The ledger cannot be opened: missing, corrupted, tampered with, or of another schema version."""


class LedgerIntegrityError(LedgerError):
    """The ledger's content does not match its MACed chain of events, or its anchor."""


def canonical(value: Any) -> bytes:
    """The canonical JSON of ``value`` (sorted keys, no spaces): what digests and MACs cover."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class LedgerSeal:
    """What the ledger's integrity needs from the key store its caller opened.

    ``key_for(version)`` returns the ``ledger-integrity`` subkey of master key ``version``;
    ``version`` is the current master key version (a new ledger is sealed with it; an existing
    ledger keeps the version recorded in it, so rotating the master key does not break it);
    ``anchor_dir`` is where the anchors live. Never serialized, never shown with its key.
    """

    __slots__ = ("_key_for", "anchor_dir", "version")

    def __init__(self, key_for: Callable[[int], bytes], version: int, anchor_dir: str | Path):
        self._key_for = key_for
        self.version = int(version)
        self.anchor_dir = Path(anchor_dir)

    @classmethod
    def from_keystore(cls, keystore: Any) -> LedgerSeal:
        """The seal of an opened key store (a :class:`~anon_dagster.pseudonymize.keystore.KeyStore`,
        or anything whose ``open()`` returns one, such as the Dagster key store resource).

        The anchor goes to ``<state>/ledger-anchors`` of the key store's state folder; keys from
        the environment have a state folder only with ``ANON_DAGSTER_KEYSTORE_STATE``.
        """
        from ...pseudonymize.keystore import ENV_STATE, KeyStore

        store = keystore if isinstance(keystore, KeyStore) else keystore.open()
        if store.state_dir is None:
            raise LedgerError(
                f"the ledger's anchor needs a folder kept with the keys, apart from the ledger: set {ENV_STATE} "
                "(keys from the environment have no key file to sit beside)"
            )
        return cls(lambda v: store.derive_key(INTEGRITY_PURPOSE, v), store.current_version,
                   Path(store.state_dir) / ANCHOR_FOLDER)

    def key(self, version: int) -> bytes:
        """The integrity key of master key ``version``."""
        return self._key_for(int(version))

    def anchor_path(self, ledger_path: Path) -> Path:
        """The anchor file of the ledger at ``ledger_path`` (named by its resolved path)."""
        name = hashlib.sha256(str(Path(ledger_path).resolve()).encode("utf-8")).hexdigest()[:32]
        return self.anchor_dir / f"{name}.json"

    def __reduce__(self):
        raise TypeError("a LedgerSeal cannot be serialized (it derives key material)")

    def __repr__(self) -> str:
        return f"<LedgerSeal key version {self.version}, anchors in {self.anchor_dir}>"


def event_mac(key: bytes, previous: str, body: bytes) -> str:
    """HMAC-SHA256(key, previous MAC ‖ newline ‖ body), as hex."""
    return hmac.new(key, previous.encode("ascii") + b"\n" + body, hashlib.sha256).hexdigest()


def append_event(conn: sqlite3.Connection, key: bytes, event: dict[str, Any]) -> tuple[int, str]:
    """Append ``event`` to the chain inside the caller's write transaction; returns (seq, mac)."""
    last = conn.execute("SELECT seq, mac FROM chain ORDER BY seq DESC LIMIT 1").fetchone()
    seq, previous = (int(last[0]) + 1, str(last[1])) if last else (1, "")
    body = canonical({**event, "seq": seq})
    mac = event_mac(key, previous, body)
    conn.execute("INSERT INTO chain (seq, body, mac) VALUES (?, ?, ?)", (seq, body.decode("utf-8"), mac))
    return seq, mac


# ----- entry digests ---------------------------------------------------------------------------

ENTRY_COLUMNS = (
    "id", "release", "partition", "population", "spec_hash", "data_hash", "qis", "k", "rows",
    "published_at", "report_path", "report_json", "report_inputs", "epsilon", "published_path",
    "published_root", "file_hash", "classes_count", "classes_digest", "members_count", "members_digest",
)
SPEND_COLUMNS = ("population", "release", "partition", "data_hash", "epsilon", "spent_at")


def members_digest(persons: list[object], class_ids: list[int]) -> str:
    """SHA-256 of the member rows (person, class id) in the order they were stored."""
    digest = hashlib.sha256()
    for person, class_id in zip(persons, class_ids, strict=True):
        digest.update(f"{person}\t{int(class_id)}\n".encode())
    return digest.hexdigest()


def classes_digest(rows: list[tuple[int, str, int]]) -> str:
    """SHA-256 of the class rows (class id, signature, rows) in class-id order."""
    digest = hashlib.sha256()
    for class_id, signature, n in rows:
        digest.update(f"{int(class_id)}\t{signature}\t{int(n)}\n".encode())
    return digest.hexdigest()


def entry_digest(row: dict[str, Any], spends: list[tuple]) -> str:
    """The digest of one entry: its immutable columns and its ε spend rows."""
    return hashlib.sha256(canonical({"entry": [row[c] for c in ENTRY_COLUMNS],
                                     "spends": [list(s) for s in spends]})).hexdigest()


def row_digests(conn: sqlite3.Connection, ids: list[int] | None = None) -> dict[int, str]:
    """The digest of every entry (or of ``ids``), read on ``conn``."""
    marks = "" if ids is None else ",".join("?" * len(ids))
    where, params = ("", ()) if ids is None else (f" WHERE id IN ({marks})", tuple(ids))
    rows = conn.execute(f"SELECT {', '.join(ENTRY_COLUMNS)} FROM publications{where}", params).fetchall()
    spend_where = "" if ids is None else f" WHERE publication_id IN ({marks})"
    spends: dict[int, list[tuple]] = {}
    for r in conn.execute(f"SELECT publication_id, {', '.join(SPEND_COLUMNS)} FROM epsilon_spend{spend_where} "
                          "ORDER BY id", params):
        spends.setdefault(r[0], []).append(tuple(r[1:]))
    return {int(r[0]): entry_digest(dict(zip(ENTRY_COLUMNS, r, strict=True)), spends.get(int(r[0]), [])) for r in rows}


def check_assignment(conn: sqlite3.Connection, path: Path, publication_id: int) -> tuple[pd.DataFrame, list[tuple]]:
    """The members and classes of an entry, refused unless they match the digests its entry carries."""
    expected = conn.execute("SELECT classes_digest, members_digest FROM publications WHERE id = ?",
                            (publication_id,)).fetchone()
    members = pd.read_sql_query("SELECT person, class_id FROM members WHERE publication_id = ? ORDER BY rowid",
                                conn, params=(publication_id,))
    classes = conn.execute("SELECT class_id, signature, rows FROM classes WHERE publication_id = ? ORDER BY class_id",
                           (publication_id,)).fetchall()
    if expected is None:
        raise LedgerError(f"{path}: no ledger entry {publication_id}")
    got = (classes_digest(classes) if classes else None,
           members_digest(members["person"].tolist(), members["class_id"].tolist()) if len(members) else None)
    for have, want, what in ((got[0], expected[0], "classes"), (got[1], expected[1], "members")):
        if not hmac.compare_digest(have or "", want or ""):
            raise LedgerIntegrityError(
                f"{path}: the ledger fails its integrity check (the {what} of entry {publication_id} were changed): "
                "it was edited outside anon-dagster; restore it from a backup"
            )
    return members, classes



# ----- verification ----------------------------------------------------------------------------


@dataclass
class EntryState:
    """What the events say of one entry."""

    digest: str
    status: str
    superseded_by: int | None = None


@dataclass
class ChainState:
    """The verified chain: its length, head MAC, ledger id and what it says of every entry."""

    events: int
    head: str
    ledger_id: str
    entries: dict[int, EntryState] = field(default_factory=dict)


def _fail(path: Path, what: str) -> LedgerIntegrityError:
    return LedgerIntegrityError(
        f"{path}: the ledger fails its integrity check ({what}): it was edited, truncated or replaced "
        "outside anon-dagster; nothing was read from it or written to it; restore it from a backup"
    )


def verify_chain(conn: sqlite3.Connection, path: Path, key: bytes, ledger_id: str) -> ChainState:
    """Check every event's MAC and sequence, then replay the events (see the module docstring)."""
    state = ChainState(0, "", ledger_id)
    previous = ""
    for seq, body, mac in conn.execute("SELECT seq, body, mac FROM chain ORDER BY seq"):
        if int(seq) != state.events + 1:
            raise _fail(path, f"event {state.events + 1} is missing")
        if not hmac.compare_digest(event_mac(key, previous, str(body).encode("utf-8")), str(mac)):
            raise _fail(path, f"event {seq} does not match its MAC")
        event = json.loads(body)
        if event.get("seq") != int(seq):
            raise _fail(path, f"event {seq} is out of place")
        _replay(state, event, path)
        state.events, state.head, previous = int(seq), str(mac), str(mac)
    if state.events == 0:
        raise _fail(path, "it holds no events")
    return state


def _replay(state: ChainState, event: dict[str, Any], path: Path) -> None:
    kind, seq = event.get("event"), event.get("seq")
    if seq == 1:
        if kind != "init" or event.get("ledger") != state.ledger_id:
            raise _fail(path, "its first event is not this ledger's creation")
        return
    if kind == "record":
        state.entries[int(event["id"])] = EntryState(str(event["digest"]), str(event["status"]))
    elif kind == "status":
        entry = state.entries.get(int(event["id"]))
        if entry is None or entry.status != "pending":
            raise _fail(path, f"event {seq} changes an entry that is not pending")
        entry.status = str(event["status"])
    elif kind == "supersede":
        old, new = state.entries.get(int(event["id"])), int(event["by"])
        if old is None or new not in state.entries:
            raise _fail(path, f"event {seq} supersedes an unknown entry")
        old.superseded_by = new
    elif kind != "migrate" and kind not in CONTENT_EVENTS:
        raise _fail(path, f"event {seq} is of unknown kind {kind!r}")


def verify_tables(conn: sqlite3.Connection, path: Path, state: ChainState) -> None:
    """The tables hold exactly what the events say: each entry's digest, status and
    supersession, and class and member row counts (their content is checked when read)."""
    rows = {int(r[0]): (r[1], r[2], r[3], r[4]) for r in conn.execute(
        "SELECT id, status, superseded_by, classes_count, members_count FROM publications")}
    if set(rows) != set(state.entries):
        extra, missing = sorted(set(rows) - set(state.entries)), sorted(set(state.entries) - set(rows))
        raise _fail(path, f"entry {(extra or missing)[0]} is {'not in its events' if extra else 'missing'}")
    digests = row_digests(conn)
    for pid, (status, superseded_by, _, _) in rows.items():
        expected = state.entries[pid]
        if not hmac.compare_digest(digests[pid], expected.digest):
            raise _fail(path, f"entry {pid} was changed")
        if status != expected.status or superseded_by != expected.superseded_by:
            raise _fail(path, f"the status of entry {pid} was changed")
    for table, position in (("classes", 2), ("members", 3)):
        counts = {int(r[0]): int(r[1]) for r in conn.execute(
            f"SELECT publication_id, COUNT(*) FROM {table} GROUP BY publication_id")}
        for pid in set(counts) | set(rows):
            if pid not in rows or counts.get(pid, 0) != int(rows[pid][position] or 0):
                raise _fail(path, f"the {table} of entry {pid} were changed")
    orphans = conn.execute(
        "SELECT COUNT(*) FROM epsilon_spend WHERE publication_id IS NULL "
        "OR publication_id NOT IN (SELECT id FROM publications)").fetchone()[0]
    if orphans:
        raise _fail(path, "an epsilon spend belongs to no entry")


# ----- the anchor ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Anchor:
    """The anchored head of a ledger: its id, number of events and last MAC."""

    ledger_id: str
    key_version: int
    events: int
    head: str


def _anchor_body(ledger_path: Path, anchor: Anchor) -> dict[str, Any]:
    return {"format": ANCHOR_FORMAT, "version": ANCHOR_VERSION, "ledger": str(Path(ledger_path).resolve()),
            "ledger_id": anchor.ledger_id, "key_version": anchor.key_version, "events": anchor.events,
            "head": anchor.head}


def read_anchor(seal: LedgerSeal, ledger_path: Path) -> Anchor | None:
    """The anchor of the ledger at ``ledger_path`` (None when there is none); an anchor that
    is unreadable or fails its MAC is refused."""
    file = seal.anchor_path(ledger_path)
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LedgerError(f"{file}: the ledger's anchor cannot be read ({exc.strerror})") from None
    try:
        data = json.loads(raw)
        anchor = Anchor(str(data["ledger_id"]), int(data["key_version"]), int(data["events"]), str(data["head"]))
        body = _anchor_body(ledger_path, anchor)
        ok = data.get("format") == ANCHOR_FORMAT and data.get("ledger") == body["ledger"] and hmac.compare_digest(
            str(data["mac"]), hmac.new(seal.key(anchor.key_version), canonical(body), hashlib.sha256).hexdigest())
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        raise LedgerIntegrityError(
            f"{file}: the anchor of ledger {ledger_path} was edited or belongs to another ledger or key; "
            "nothing was read from the ledger or written to it"
        )
    return anchor


def write_anchor(seal: LedgerSeal, ledger_path: Path, anchor: Anchor, *, replace: bool = False) -> None:
    """Write the anchor (atomically, 0600, its folder 0700), only forward: an anchor of the same
    ledger that already records as many events is kept, unless ``replace`` (a new ledger)."""
    file = seal.anchor_path(ledger_path)
    try:
        file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(file.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise LedgerError(f"{file.parent}: the ledger's anchor folder cannot be written ({exc.strerror})") from None
    try:
        # two processes that committed one after the other must not move the anchor backwards
        fcntl.flock(fd, fcntl.LOCK_EX)
        current = None if replace else read_anchor(seal, ledger_path)
        if current is not None and current.ledger_id == anchor.ledger_id and current.events >= anchor.events:
            return
        body = _anchor_body(ledger_path, anchor)
        mac = hmac.new(seal.key(anchor.key_version), canonical(body), hashlib.sha256).hexdigest()
        write_bytes_atomic(json.dumps({**body, "mac": mac}, indent=2, sort_keys=True).encode() + b"\n", file, mode=0o600)
    finally:
        os.close(fd)


def check_against_anchor(path: Path, state: ChainState, anchor: Anchor | None, mac_at: Callable[[int], str | None]) -> bool:
    """Whether the verified chain agrees with its anchor; True when the anchor is behind (to be
    rolled forward). Refuses a ledger without an anchor, of another id, or behind its anchor."""
    if anchor is None:
        raise LedgerIntegrityError(
            f"{path}: the ledger has no anchor in the key store's state: it was made with another key store "
            f"or its state was lost; if this ledger is the right one, adopt it with "
            f"`anon-dagster ledger init --adopt --ledger {path}`"
        )
    if anchor.ledger_id != state.ledger_id:
        raise _fail(path, "it is not the ledger its anchor records (another ledger was put in its place)")
    if anchor.events > state.events:
        raise _fail(path, f"its anchor records {anchor.events} events, the ledger holds {state.events}")
    if not hmac.compare_digest(mac_at(anchor.events) or "", anchor.head):
        raise _fail(path, f"event {anchor.events} differs from the one its anchor records")
    return anchor.events < state.events
