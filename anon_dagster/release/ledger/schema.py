"""The ledger's database: an embedded SQLite file, its schema and the transactions that write it.

Every write happens inside one ``BEGIN IMMEDIATE`` transaction: a process killed midway
leaves no partial entry (SQLite rolls the journal back) and the previous entry intact. The
database runs in WAL mode, so readers never wait for a writer.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ...errors import UserError

SCHEMA_VERSION = 1
LEDGER_ENV = "ANON_DAGSTER_LEDGER"
STATUSES = ("published", "failed")


class LedgerError(UserError):
    """The ledger cannot be opened or is of an unknown schema version."""


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


_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS publications (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        release TEXT NOT NULL,
        partition TEXT NOT NULL,
        population TEXT,
        status TEXT NOT NULL CHECK (status IN ('published', 'failed')),
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
        superseded_by INTEGER REFERENCES publications(id)
    )""",
    """CREATE INDEX IF NOT EXISTS publications_by_population
        ON publications(population, status, superseded_by)""",
    """CREATE INDEX IF NOT EXISTS publications_by_release
        ON publications(release, partition, status)""",
    """CREATE TABLE IF NOT EXISTS classes (
        publication_id INTEGER NOT NULL REFERENCES publications(id),
        class_id INTEGER NOT NULL,
        signature TEXT NOT NULL,
        rows INTEGER NOT NULL,
        PRIMARY KEY (publication_id, class_id)
    )""",
    """CREATE TABLE IF NOT EXISTS members (
        publication_id INTEGER NOT NULL REFERENCES publications(id),
        person TEXT NOT NULL,
        class_id INTEGER NOT NULL
    )""",
    """CREATE INDEX IF NOT EXISTS members_by_publication ON members(publication_id)""",
    """CREATE TABLE IF NOT EXISTS epsilon_spend (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        population TEXT NOT NULL,
        release TEXT NOT NULL,
        partition TEXT NOT NULL,
        data_hash TEXT NOT NULL,
        epsilon REAL NOT NULL,
        publication_id INTEGER REFERENCES publications(id),
        spent_at TEXT NOT NULL
    )""",
    """CREATE INDEX IF NOT EXISTS epsilon_by_population ON epsilon_spend(population)""",
]


class LedgerDatabase:
    """The SQLite database of a ledger at ``path``, created with its schema on first use.

    Each method opens its own connection; processes coordinate through SQLite's locks (WAL
    mode, ``BEGIN IMMEDIATE``, a busy timeout).
    """

    def __init__(self, path: str | Path | None = None, *, timeout: float = 60.0):
        self.path = Path(path) if path is not None else default_ledger_path()
        self.timeout = timeout
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LedgerError(f"{self.path}: cannot create the ledger folder: {exc.strerror}") from None
        self._init_schema()

    # ----- connections ------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise LedgerError(f"{self.path}: cannot open the ledger: {exc}") from None
        conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: BEGIN IMMEDIATE takes the write lock up front, so the
        read-check-write sequences inside cannot interleave with another process's."""
        conn = self._connect()
        try:
            self._begin_immediate(conn)
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            conn.close()

    def _begin_immediate(self, conn: sqlite3.Connection) -> None:
        # busy_timeout covers lock waits; the loop covers the rare SQLITE_BUSY that WAL
        # recovery can return immediately.
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() > deadline:
                    raise LedgerError(f"{self.path}: the ledger stayed locked for {self.timeout:.0f} s") from None
                time.sleep(0.05)

    def _init_schema(self) -> None:
        conn = self._connect()
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":  # pragma: no cover - filesystems without shared memory
                raise LedgerError(f"{self.path}: cannot switch the ledger to WAL mode (got {mode})")
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise LedgerError(f"{self.path}: not a ledger database: {exc}") from None
        conn.close()
        with self._write() as conn:
            for statement in _SCHEMA:
                conn.execute(statement)
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) != SCHEMA_VERSION:
                raise LedgerError(
                    f"{self.path}: ledger schema version {row[0]} is not supported "
                    f"(this version reads {SCHEMA_VERSION})"
                )

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
        finally:
            conn.close()

    def counts(self) -> dict[str, int]:
        """Row counts per table (for diagnostics and tests)."""
        conn = self._connect()
        try:
            return {
                t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])
                for t in ("publications", "classes", "members", "epsilon_spend")
            }
        finally:
            conn.close()
