"""The publication ledger: an embedded SQLite database of everything that was published.

Definitions.
- A *publication entry* records one evaluation of one release partition: release, partition,
  population (spec ``composition.population``), spec hash, data hash, the quasi-identifiers
  with their levels or regions, k reached, date, report path, the report itself (JSON) and the
  inputs it was built from, and the per-person class assignment. Its ``status`` is
  ``published`` (it counts for composition) or ``failed`` (an evaluation that did not pass its
  checks: kept for its report, never counted for composition).
- The *class assignment* maps each person, keyed by an internal *linkage pseudonym*
  (HMAC-SHA256 of the ``composition.person`` value under a ledger-only key), to the
  equivalence class(es) holding that person's rows. Linkage pseudonyms are never published
  nor logged; they exist so that later releases of the same population can be composed.
- Re-publishing the same release and partition with the same data hash is idempotent (the
  existing entry is returned); with a different data hash the new entry *supersedes* the old
  one, which stays in the history.
- The *epsilon ledger* records the privacy budget spent by differentially private releases,
  per population; a spend that would exceed the population's total is refused inside the
  same transaction that records it, so two concurrent releases cannot both squeeze in.

Every write happens inside one ``BEGIN IMMEDIATE`` transaction: a process killed midway
leaves no partial entry (SQLite rolls the journal back) and the previous entry intact.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError, UserError

SCHEMA_VERSION = 1
LEDGER_ENV = "ANON_DAGSTER_LEDGER"
STATUSES = ("published", "failed")

# Test hook: called inside the write transaction, after the rows are inserted and before the
# commit. Tests set it in a child process to kill it mid-transaction; production leaves it None.
_in_transaction_hook: Callable[[], None] | None = None


class LedgerError(UserError):
    """The ledger cannot be opened or is of an unknown schema version."""


class BudgetExceeded(UserError):
    """A differentially private release would spend more than its population's budget."""


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


def linkage_pseudonyms(values: pd.Series | Sequence[object], key: bytes) -> np.ndarray:
    """HMAC-SHA256 of each value's text under ``key``, as 32 hex characters (128 bits).

    ``key`` is the ledger-only subkey (``keystore.derive_key("ledger-linkage")``). Missing
    values are refused: a row without a person cannot be composed and would silently escape
    the intersection check.
    """
    if not isinstance(key, bytes | bytearray) or len(key) < 16:
        raise DataError("the ledger linkage key must be at least 16 bytes")
    series = pd.Series(values, copy=False)
    if series.isna().any():
        raise DataError(
            f"the person column has {int(series.isna().sum())} missing values: every published "
            "row needs a person to be composed with earlier releases"
        )
    k = bytes(key)
    return np.array(
        [hmac.new(k, str(v).encode("utf-8"), hashlib.sha256).hexdigest()[:32] for v in series],
        dtype=object,
    )


def dataset_hash(df: pd.DataFrame) -> str:
    """SHA-256 of a table's column names, dtypes and row values (row order matters).

    Uses pandas' per-row hash of each column, so equal tables hash equal whatever the file
    format they were read from, provided the dtypes agree.

    This is the report's and the ledger's identification of *what was published*: the dtypes
    are part of it (a categorical and a text column holding the same labels hash differently).
    :func:`anon_dagster.anonymize.record.table_hash` is the other hash, deliberately blind to
    that difference: it ties a transformation record to its table across a storage round trip.
    """
    digest = hashlib.sha256()
    digest.update(json.dumps([str(c) for c in df.columns]).encode())
    digest.update(json.dumps([str(t) for t in df.dtypes]).encode())
    digest.update(str(len(df)).encode())
    for col in df.columns:
        digest.update(pd.util.hash_pandas_object(df[col], index=False).to_numpy().tobytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class Publication:
    """One ledger entry (without its class assignment, which is loaded on demand)."""

    id: int
    release: str
    partition: str
    population: str | None
    status: str
    spec_hash: str
    data_hash: str
    qis: dict[str, Any]
    k: int | None
    rows: int | None
    published_at: str
    report_path: str | None
    report_json: str | None
    report_inputs: dict[str, Any] | None
    epsilon: float | None
    superseded_by: int | None


@dataclass
class RecordOutcome:
    """What :meth:`Ledger.record` did: ``inserted``, ``unchanged`` or ``superseded``."""

    action: str
    publication_id: int
    superseded_id: int | None = None


@dataclass(frozen=True)
class BudgetState:
    """Epsilon spent by a population, and what a new spend would bring it to."""

    population: str
    spent: list[float]
    requested: float
    total: float
    composition: str
    delta: float | None
    composed_before: float
    composed_after: float
    allowed: bool

    @property
    def remaining(self) -> float:
        return max(self.total - self.composed_before, 0.0)

    def refusal(self, what: str) -> BudgetExceeded:
        """The error refusing this spend; ``what`` names what would have been published."""
        return BudgetExceeded(
            f"population {self.population!r}: publishing {what} with epsilon={self.requested:g} "
            f"would bring the budget to {self.composed_after:.4g} ({self.composition} composition "
            f"over {len(self.spent) + 1} releases), above total_epsilon={self.total:g} "
            f"(already spent {self.composed_before:.4g})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "population": self.population,
            "releases_counted": len(self.spent),
            "epsilon_spent": self.composed_before,
            "epsilon_requested": self.requested,
            "epsilon_after": self.composed_after,
            "total_epsilon": self.total,
            "composition": self.composition,
            "delta": self.delta,
            "allowed": self.allowed,
        }


@dataclass
class ClassAssignmentRows:
    """The rows of a class assignment as stored: member pairs and per-class signatures."""

    members: pd.DataFrame  # person (str), class_id (int64): distinct pairs
    signatures: list[str]  # canonical JSON of each class's QI values, indexed by class_id
    rows_per_class: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


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


def compose_epsilons(epsilons: Sequence[float], method: str = "basic", delta: float | None = None) -> float:
    """Total epsilon of running mechanisms with the given epsilons (each ε_i-DP).

    basic: Σ ε_i. advanced (Dwork-Rothblum-Vadhan, heterogeneous form): for any δ' > 0 the
    composition is (ε', δ')-DP with ε' = sqrt(2 ln(1/δ') Σ ε_i²) + Σ ε_i (e^ε_i − 1); the
    basic bound stays valid, so the smaller of the two is returned.
    """
    eps = [float(e) for e in epsilons]
    basic = float(sum(eps))
    if method == "basic":
        return basic
    if method != "advanced":
        raise UserError(f"unknown budget composition {method!r} (use basic or advanced)")
    if delta is None or not 0 < delta < 1:
        raise UserError("advanced composition needs publication.delta in (0, 1)")
    if not eps:
        return 0.0
    advanced = float(
        np.sqrt(2 * np.log(1 / delta) * sum(e * e for e in eps)) + sum(e * np.expm1(e) for e in eps)
    )
    return min(basic, advanced)


class Ledger:
    """The publication ledger at ``path`` (created with its schema on first use).

    Each method opens its own connection, so a Ledger object is cheap and safe to share
    between threads; processes coordinate through SQLite's locks (WAL mode, ``BEGIN
    IMMEDIATE``, a busy timeout).
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

    # ----- writing ----------------------------------------------------------------------------
    def record(
        self,
        *,
        release: str,
        partition: str | None,
        population: str | None,
        spec_hash: str,
        data_hash: str,
        qis: dict[str, Any],
        k: int | None,
        rows: int | None = None,
        status: str = "published",
        assignment: ClassAssignmentRows | None = None,
        published_at: str | None = None,
        report_path: str | None = None,
        report_json: str | None = None,
        report_inputs: dict[str, Any] | None = None,
        epsilon_spend: tuple[float, float, str, float | None] | None = None,
    ) -> RecordOutcome:
        """Record one evaluation of ``release``/``partition`` in one transaction.

        ``status`` is ``published`` or ``failed``. If the current entry of the same release,
        partition and status has the same data hash, nothing is written (``unchanged``).
        Otherwise the entry is inserted and, for a publication, the previous current
        publication is marked as superseded by it. ``epsilon_spend`` = (epsilon,
        total_epsilon, composition, delta) spends budget for the population in the same
        transaction and raises :class:`BudgetExceeded` (nothing written) when it would exceed
        the total.
        """
        if status not in STATUSES:
            raise UserError(f"unknown ledger status {status!r} (use {' or '.join(STATUSES)})")
        partition = partition or ""
        published_at = published_at or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self._write() as conn:
            current = conn.execute(
                "SELECT id, data_hash FROM publications WHERE release = ? AND partition = ? "
                "AND status = ? AND superseded_by IS NULL ORDER BY id DESC LIMIT 1",
                (release, partition, status),
            ).fetchone()
            if current is not None and current[1] == data_hash:
                return RecordOutcome("unchanged", int(current[0]))
            epsilon = None
            if epsilon_spend is not None and status == "published":
                epsilon = float(epsilon_spend[0])
                state = self._budget_state(conn, population or release, *epsilon_spend)
                if not state.allowed:
                    raise state.refusal(f"{release}/{partition or '-'}")
            cur = conn.execute(
                "INSERT INTO publications (release, partition, population, status, spec_hash, "
                "data_hash, qis, k, rows, published_at, report_path, report_json, report_inputs, "
                "epsilon) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    release, partition, population, status, spec_hash, data_hash,
                    json.dumps(qis, sort_keys=True), None if k is None else int(k),
                    None if rows is None else int(rows), published_at, report_path, report_json,
                    # key order kept: the report lists columns in the order the spec declares them
                    None if report_inputs is None else json.dumps(report_inputs),
                    epsilon,
                ),
            )
            new_id = int(cur.lastrowid)
            if assignment is not None:
                conn.executemany(
                    "INSERT INTO classes (publication_id, class_id, signature, rows) VALUES (?, ?, ?, ?)",
                    (
                        (new_id, i, sig, int(n))
                        for i, (sig, n) in enumerate(zip(assignment.signatures, assignment.rows_per_class, strict=True))
                    ),
                )
                members = assignment.members
                conn.executemany(
                    "INSERT INTO members (publication_id, person, class_id) VALUES (?, ?, ?)",
                    zip(
                        [new_id] * len(members),
                        members["person"].astype(object).tolist(),
                        members["class_id"].astype("int64").tolist(),
                        strict=True,
                    ),
                )
            if epsilon is not None:
                conn.execute(
                    "INSERT INTO epsilon_spend (population, release, partition, data_hash, epsilon, "
                    "publication_id, spent_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (population or release, release, partition, data_hash, epsilon, new_id, published_at),
                )
            superseded = None
            if current is not None and status == "published":
                superseded = int(current[0])
                conn.execute("UPDATE publications SET superseded_by = ? WHERE id = ?", (new_id, superseded))
            if _in_transaction_hook is not None:
                _in_transaction_hook()
        return RecordOutcome("superseded" if superseded else "inserted", new_id, superseded)

    @staticmethod
    def _budget_state(
        conn: sqlite3.Connection,
        population: str,
        epsilon: float,
        total: float,
        composition: str,
        delta: float | None,
    ) -> BudgetState:
        spent = [float(r[0]) for r in conn.execute(
            "SELECT epsilon FROM epsilon_spend WHERE population = ? ORDER BY id", (population,)
        )]
        before = compose_epsilons(spent, composition, delta)
        after = compose_epsilons([*spent, float(epsilon)], composition, delta)
        # a tiny tolerance so a budget declared as a sum of decimals (0.1 × 10 = 1.0) is usable
        return BudgetState(population, spent, float(epsilon), float(total), composition, delta,
                           before, after, after <= total * (1 + 1e-9))

    # ----- reading ----------------------------------------------------------------------------
    _COLUMNS = (
        "id, release, partition, population, status, spec_hash, data_hash, qis, k, rows, "
        "published_at, report_path, report_json, report_inputs, epsilon, superseded_by"
    )

    @staticmethod
    def _publication(row: tuple) -> Publication:
        return Publication(
            id=int(row[0]), release=row[1], partition=row[2], population=row[3], status=row[4],
            spec_hash=row[5], data_hash=row[6], qis=json.loads(row[7]), k=row[8], rows=row[9],
            published_at=row[10], report_path=row[11], report_json=row[12],
            report_inputs=None if row[13] is None else json.loads(row[13]), epsilon=row[14],
            superseded_by=row[15],
        )

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        conn = self._connect()
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    def get(self, publication_id: int) -> Publication:
        rows = self._query(f"SELECT {self._COLUMNS} FROM publications WHERE id = ?", (publication_id,))
        if not rows:
            raise LedgerError(f"{self.path}: no ledger entry {publication_id}")
        return self._publication(rows[0])

    def entries(
        self,
        *,
        release: str | None = None,
        partition: str | None = None,
        population: str | None = None,
        include_failed: bool = False,
        include_superseded: bool = False,
    ) -> list[Publication]:
        """Ledger entries in publication order, filtered; by default only current publications."""
        where, params = [], []
        for column, value in (("release", release), ("partition", partition), ("population", population)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if not include_failed:
            where.append("status = 'published'")
        if not include_superseded:
            where.append("(superseded_by IS NULL OR status = 'failed')")
        sql = f"SELECT {self._COLUMNS} FROM publications"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [self._publication(r) for r in self._query(sql + " ORDER BY id", tuple(params))]

    def latest(self, release: str, partition: str | None, *, include_failed: bool = True) -> Publication | None:
        """The most recent entry of ``release``/``partition`` (a failed evaluation included)."""
        status = "" if include_failed else " AND status = 'published'"
        rows = self._query(
            f"SELECT {self._COLUMNS} FROM publications WHERE release = ? AND partition = ?{status} "
            "ORDER BY id DESC LIMIT 1",
            (release, partition or ""),
        )
        return self._publication(rows[0]) if rows else None

    def assignment(self, publication_id: int) -> ClassAssignmentRows:
        """The stored class assignment of an entry (empty for entries recorded without one)."""
        conn = self._connect()
        try:
            members = pd.read_sql_query(
                "SELECT person, class_id FROM members WHERE publication_id = ?", conn, params=(publication_id,)
            )
            classes = conn.execute(
                "SELECT class_id, signature, rows FROM classes WHERE publication_id = ? ORDER BY class_id",
                (publication_id,),
            ).fetchall()
        finally:
            conn.close()
        members["person"] = members["person"].astype(object)
        members["class_id"] = members["class_id"].astype("int64")
        return ClassAssignmentRows(
            members, [c[1] for c in classes], np.array([c[2] for c in classes], dtype=np.int64)
        )

    def budget(
        self,
        population: str,
        *,
        epsilon: float = 0.0,
        total: float,
        composition: str = "basic",
        delta: float | None = None,
    ) -> BudgetState:
        """The population's budget state if a release spending ``epsilon`` were added."""
        conn = self._connect()
        try:
            return self._budget_state(conn, population, epsilon, total, composition, delta)
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
