"""The ledger's database: an embedded SQLite file, its schema, and opening it only when it is sound.

Every write happens inside one ``BEGIN IMMEDIATE`` transaction: a process killed midway
leaves no partial entry (SQLite rolls the journal back) and the previous entry intact. The
database runs in WAL mode, so readers never wait for a writer.

A ledger is created only by :func:`~.lifecycle.init_ledger` (``anon-dagster ledger init``).
Opening one (:class:`LedgerDatabase`) never creates anything: a missing file, a file that is
not a ledger, a failing ``PRAGMA quick_check``, another schema version, or a content that does
not match its MACed chain of events or its anchor (:mod:`.chain`) is refused with one
:class:`LedgerError` naming the file, before anything is read from it or written to it.
The file, its WAL and shared-memory files are owner-only (0600).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .chain import (
    CONTENT_EVENTS,
    Anchor,
    ChainState,
    LedgerError,
    LedgerIntegrityError,
    LedgerSeal,
    append_event,
    check_against_anchor,
    check_assignment,
    read_anchor,
    verify_chain,
    verify_tables,
    write_anchor,
)

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
LEDGER_ENV = "ANON_DAGSTER_LEDGER"
# pending: recorded, its files on their way into place; counts for composition and the ε budget
# until reconciled (fail safe). abandoned: a pending entry whose files never took their place.
STATUSES = ("pending", "published", "failed", "abandoned")
COUNTED_STATUSES = ("pending", "published")

# Test hook: called after a write transaction commits and before the anchor is moved forward.
# Tests set it in a child process to kill it there; production leaves it None.
_after_commit_hook: Callable[[], None] | None = None


def default_ledger_path() -> Path:
    """``$ANON_DAGSTER_LEDGER``, else ``$DAGSTER_HOME/anon_dagster/ledger.sqlite``, else a
    git-ignored ``.anon_dagster/ledger.sqlite`` under the working directory."""
    env = os.environ.get(LEDGER_ENV)
    if env:
        return Path(env).expanduser()
    home = os.environ.get("DAGSTER_HOME")
    if home:
        return Path(home).expanduser() / "anon_dagster" / "ledger.sqlite"
    return Path(".anon_dagster") / "ledger.sqlite"


SCHEMA = [
    """CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE publications (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        release TEXT NOT NULL,
        partition TEXT NOT NULL,
        population TEXT,
        status TEXT NOT NULL CHECK (status IN ('pending', 'published', 'failed', 'abandoned')),
        spec_hash TEXT NOT NULL,
        data_hash TEXT NOT NULL,
        qis TEXT NOT NULL,
        k INTEGER,
        rows INTEGER,
        published_at TEXT NOT NULL,
        report_path TEXT,
        report_json TEXT,
        report_inputs TEXT,
        epsilon REAL,
        superseded_by INTEGER REFERENCES publications(id),
        published_path TEXT,
        published_root TEXT,
        file_hash TEXT,
        classes_count INTEGER NOT NULL DEFAULT 0,
        classes_digest TEXT,
        members_count INTEGER NOT NULL DEFAULT 0,
        members_digest TEXT
    )""",
    """CREATE INDEX publications_by_population ON publications(population, status, superseded_by)""",
    """CREATE INDEX publications_by_release ON publications(release, partition, status)""",
    """CREATE TABLE classes (
        publication_id INTEGER NOT NULL REFERENCES publications(id),
        class_id INTEGER NOT NULL,
        signature TEXT NOT NULL,
        rows INTEGER NOT NULL,
        PRIMARY KEY (publication_id, class_id)
    )""",
    """CREATE TABLE members (
        publication_id INTEGER NOT NULL REFERENCES publications(id),
        person TEXT NOT NULL,
        class_id INTEGER NOT NULL
    )""",
    """CREATE INDEX members_by_publication ON members(publication_id)""",
    """CREATE TABLE epsilon_spend (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        population TEXT NOT NULL,
        release TEXT NOT NULL,
        partition TEXT NOT NULL,
        data_hash TEXT NOT NULL,
        epsilon REAL NOT NULL,
        publication_id INTEGER REFERENCES publications(id),
        spent_at TEXT NOT NULL
    )""",
    """CREATE INDEX epsilon_by_population ON epsilon_spend(population)""",
    """CREATE TABLE chain (seq INTEGER PRIMARY KEY, body TEXT NOT NULL, mac TEXT NOT NULL)""",
]


def connect(path: Path, timeout: float) -> sqlite3.Connection:
    """A connection to the existing database at ``path`` (``mode=rw``: SQLite never creates it)."""
    try:
        conn = sqlite3.connect(f"file:{quote(str(Path(path).absolute()))}?mode=rw", uri=True,
                               timeout=timeout, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.Error as exc:
        raise LedgerError(f"{path}: cannot open the ledger: {exc}") from None
    return conn


def begin_immediate(conn: sqlite3.Connection, path: Path, timeout: float) -> None:
    """``BEGIN IMMEDIATE``, waiting up to ``timeout`` for the write lock."""
    # busy_timeout covers lock waits; the loop covers the rare SQLITE_BUSY that WAL
    # recovery can return immediately.
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise LedgerError(f"{path}: cannot write the ledger: {exc}") from None
            if time.monotonic() > deadline:
                raise LedgerError(f"{path}: the ledger stayed locked for {timeout:.0f} s") from None
            time.sleep(0.05)


def missing_ledger_error(path: Path, seal: LedgerSeal) -> LedgerError:
    """The error for a ledger file that does not exist (worse when its anchor says it held entries)."""
    try:
        anchor = read_anchor(seal, path)
    except LedgerError:
        anchor = None
    if anchor is not None and anchor.events > 1:
        return LedgerError(
            f"{path}: the ledger is missing, but its anchor in the key store's state records {anchor.events} "
            "events: restore the ledger from a backup (a new ledger would forget its publications and let "
            "later releases single people out)"
        )
    return LedgerError(f"{path}: no ledger here: create it with `anon-dagster ledger init --ledger {path}`")


class LedgerDatabase:
    """The SQLite database of an existing, verified ledger at ``path`` (see the module docstring).

    ``seal`` comes from the key store the caller opened (:meth:`LedgerSeal.from_keystore`).
    Each method opens its own connection; processes coordinate through SQLite's locks (WAL
    mode, ``BEGIN IMMEDIATE``, a busy timeout).
    """

    def __init__(self, path: str | Path | None = None, *, seal: LedgerSeal, timeout: float = 60.0):
        if not isinstance(seal, LedgerSeal):
            raise LedgerError("a ledger is opened with the seal of its key store (LedgerSeal.from_keystore)")
        self.path = Path(path) if path is not None else default_ledger_path()
        self.seal = seal
        self.timeout = timeout
        if not self.path.is_file():
            raise missing_ledger_error(self.path, seal)
        self._state = self.verify()

    # ----- opening and verifying --------------------------------------------------------------
    def verify(self, *, full: bool = False, anchored: bool = True) -> ChainState:
        """Check the file (``PRAGMA quick_check``, or ``integrity_check`` with ``full``), its schema
        version, every event's MAC, the tables against the events, and the anchor (rolled
        forward when behind; left out with ``anchored=False``, for adopting a ledger). ``full``
        also checks every entry's classes and members content."""
        try:
            conn = connect(self.path, self.timeout)
            try:
                return self._verify(conn, full, anchored)
            finally:
                conn.close()
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"{self.path}: the ledger file is damaged ({exc}); nothing was written to it; "
                              "restore it from a backup") from None

    def _verify(self, conn: sqlite3.Connection, full: bool, anchored: bool) -> ChainState:
        check = conn.execute("PRAGMA integrity_check" if full else "PRAGMA quick_check").fetchall()
        if [r[0] for r in check] != ["ok"]:
            raise LedgerError(f"{self.path}: the ledger file is damaged ({check[0][0]}); nothing was written to it; "
                              "restore it from a backup")
        meta = self._meta(conn)
        version = meta.get("schema_version")
        if version == "1":
            raise LedgerError(f"{self.path}: ledger schema version 1 (entries without MACs): migrate it with "
                              f"`anon-dagster ledger init --migrate --ledger {self.path}`")
        if version != str(SCHEMA_VERSION):
            raise LedgerError(f"{self.path}: ledger schema version {version} is not supported "
                              f"(this version reads {SCHEMA_VERSION})")
        self.ledger_id, self.key_version = meta.get("ledger_id", ""), int(meta.get("key_version", "0"))
        key = self.seal.key(self.key_version)
        state = verify_chain(conn, self.path, key, self.ledger_id)
        verify_tables(conn, self.path, state)
        if full:  # the same check as reading an assignment, for every entry
            for pid in state.entries:
                check_assignment(conn, self.path, pid)

        if not anchored:
            return state

        def mac_at(seq: int) -> str | None:
            row = conn.execute("SELECT mac FROM chain WHERE seq = ?", (seq,)).fetchone()
            return None if row is None else str(row[0])

        if check_against_anchor(self.path, state, read_anchor(self.seal, self.path), mac_at):
            write_anchor(self.seal, self.path, Anchor(self.ledger_id, self.key_version, state.events, state.head))
        # only once it is known sound: a copy restored from a backup (VACUUM INTO) is not in WAL mode
        if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            if str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower() != "wal":
                raise LedgerError(f"{self.path}: cannot switch the ledger to WAL mode")  # pragma: no cover
        return state

    def _meta(self, conn: sqlite3.Connection) -> dict[str, str]:
        try:
            return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}
        except sqlite3.OperationalError:
            raise LedgerError(f"{self.path}: not a ledger database (no meta table)") from None
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"{self.path}: not a ledger database: {exc}") from None

    # ----- connections ------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        return connect(self.path, self.timeout)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: BEGIN IMMEDIATE takes the write lock up front, so the
        read-check-write sequences inside cannot interleave with another process's. After the
        commit the anchor is moved forward to the new head."""
        conn = self._connect()
        committed = False
        try:
            begin_immediate(conn, self.path, self.timeout)
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:  # SQLite may have rolled back itself (disk full)
                    conn.execute("ROLLBACK")
                raise
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise LedgerError(f"{self.path}: the ledger could not be written ({exc}); nothing was recorded") from None
            committed = True
        except sqlite3.Error as exc:
            raise LedgerError(f"{self.path}: the ledger could not be written ({exc}); nothing was recorded") from None
        finally:
            conn.close()
        if committed:
            if _after_commit_hook is not None:
                _after_commit_hook()
            self._roll_anchor()

    def _append(self, conn: sqlite3.Connection, event: dict[str, Any]) -> None:
        """Append one event to the chain, inside the caller's write transaction."""
        append_event(conn, self.seal.key(self.key_version), event)

    def _roll_anchor(self) -> None:
        """Move the anchor to the ledger's head. A failure (disk full) only leaves the ledger
        ahead of its anchor, which the next open accepts and rolls forward: it is logged, not raised."""
        try:
            conn = self._connect()
            try:
                seq, mac = conn.execute("SELECT seq, mac FROM chain ORDER BY seq DESC LIMIT 1").fetchone()
            finally:
                conn.close()
            write_anchor(self.seal, self.path, Anchor(self.ledger_id, self.key_version, int(seq), str(mac)))
        except (OSError, LedgerError, sqlite3.Error) as exc:
            log.warning("%s: the ledger's anchor could not be moved forward (%s); the next open does it",
                        self.path, type(exc).__name__)

    @property
    def schema_version(self) -> int:
        conn = self._connect()
        try:
            return int(conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
        finally:
            conn.close()

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        conn = self._connect()
        try:
            return conn.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"{self.path}: the ledger cannot be read ({exc})") from None
        finally:
            conn.close()

    def append_content_event(self, event: dict[str, Any], check: Callable[[list[dict[str, Any]]], None] | None = None
                             ) -> int:
        """Append a governance event (``event["event"]`` one of :data:`~.chain.CONTENT_EVENTS`) in
        one write transaction; ``check``, given the content events already recorded, may refuse it
        (raising) under the write lock, so two writers cannot both pass it. Returns its ``seq``."""
        if event.get("event") not in CONTENT_EVENTS:
            raise LedgerError(f"{self.path}: {event.get('event')!r} is not a governance event")
        with self._write() as conn:
            if check is not None:
                check(self._content_events(conn))
            seq, _ = append_event(conn, self.seal.key(self.key_version), event)
        return seq

    def content_events(self) -> list[dict[str, Any]]:
        """Every governance event, oldest first, read in one snapshot of a ledger verified again
        (every MAC, the anchor): an event edited since the ledger was opened is refused."""
        conn = self._connect()
        try:
            conn.execute("BEGIN")  # one snapshot: what is verified is what is read
            try:
                self._verify(conn, False, True)
                return self._content_events(conn)
            finally:
                conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"{self.path}: the ledger cannot be read ({exc})") from None
        finally:
            conn.close()

    @staticmethod
    def _content_events(conn: sqlite3.Connection) -> list[dict[str, Any]]:
        marks = " OR ".join("body LIKE ?" for _ in CONTENT_EVENTS)
        rows = conn.execute(f"SELECT body FROM chain WHERE {marks} ORDER BY seq",
                            tuple(f'%"event":"{k}"%' for k in CONTENT_EVENTS)).fetchall()
        events = [json.loads(r[0]) for r in rows]
        return [e for e in events if e.get("event") in CONTENT_EVENTS]

    def counts(self) -> dict[str, int]:
        """Row counts per table (for diagnostics and tests)."""
        conn = self._connect()
        try:
            return {
                t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])
                for t in ("publications", "classes", "members", "epsilon_spend", "chain")
            }
        finally:
            conn.close()


__all__ = [
    "COUNTED_STATUSES", "LEDGER_ENV", "SCHEMA", "SCHEMA_VERSION", "STATUSES", "LedgerDatabase", "LedgerError",
    "LedgerIntegrityError", "begin_immediate", "connect", "default_ledger_path", "missing_ledger_error",
]
