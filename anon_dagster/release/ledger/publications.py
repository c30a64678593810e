"""The ledger's entries: recording one evaluation of a release partition, and reading them back.

Every change appends its events to the MACed chain (:mod:`.chain`) in the same transaction.
"""

from __future__ import annotations

import hmac
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ...errors import UserError
from .budget import BudgetState, budget_state
from .chain import (
    LedgerIntegrityError,
    check_assignment,
    classes_digest,
    members_digest,
    row_digests,
)
from .linkage import ClassAssignmentRows
from .schema import COUNTED_STATUSES, STATUSES, LedgerDatabase, LedgerError

# Test hook: called inside the write transaction, after the rows are inserted and before the
# commit. Tests set it in a child process to kill it mid-transaction; production leaves it None.
_in_transaction_hook: Callable[[], None] | None = None


@dataclass(frozen=True)
class Publication:
    """One ledger entry (without its class assignment, which is loaded on demand).

    ``published_path`` / ``published_root`` / ``file_hash``: where a file publication was placed,
    the publication folder it was placed under, and the SHA-256 of the file's bytes (None for
    entries recorded without a file, e.g. failed evaluations).
    """

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
    published_path: str | None = None
    published_root: str | None = None
    file_hash: str | None = None


@dataclass
class RecordOutcome:
    """What :meth:`Ledger.record` did: ``inserted``, ``unchanged`` or ``superseded``."""

    action: str
    publication_id: int
    superseded_id: int | None = None


class Ledger(LedgerDatabase):
    """The publication ledger at ``path``: opened only when it exists and passes its checks.

    Create one with :func:`~.lifecycle.init_ledger` (``anon-dagster ledger init``). Each method
    opens its own connection, so a Ledger object is cheap and safe to share between threads;
    processes coordinate through SQLite's locks (WAL mode, ``BEGIN IMMEDIATE``, a busy timeout).
    """

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
        published_path: str | None = None,
        published_root: str | None = None,
        file_hash: str | None = None,
    ) -> RecordOutcome:
        """Record one evaluation of ``release``/``partition`` in one transaction.

        ``status`` is ``published``, ``failed`` or ``pending``. For ``published`` and ``failed``:
        if the current entry of the same release, partition and status has the same data hash,
        nothing is written (``unchanged``); otherwise the entry is inserted and, for a
        publication, the previous current publication is marked as superseded by it. A
        ``pending`` entry is always inserted and supersedes nothing until
        :meth:`mark_published`; it counts for composition and the ε budget meanwhile.
        ``epsilon_spend`` = (epsilon, total_epsilon, composition, delta) spends budget for the
        population in the same transaction and raises :class:`BudgetExceeded` (nothing written)
        when it would exceed the total.
        """
        if status not in STATUSES or status == "abandoned":
            raise UserError(f"unknown ledger status {status!r} (use published, failed or pending)")
        partition = partition or ""
        published_at = published_at or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        counted = status in COUNTED_STATUSES
        with self._write() as conn:
            current = conn.execute(
                "SELECT id, data_hash FROM publications WHERE release = ? AND partition = ? "
                "AND status = ? AND superseded_by IS NULL ORDER BY id DESC LIMIT 1",
                (release, partition, "published" if status == "pending" else status),
            ).fetchone()
            if status != "pending" and current is not None and current[1] == data_hash:
                return RecordOutcome("unchanged", int(current[0]))
            epsilon = None
            if epsilon_spend is not None and counted:
                epsilon = float(epsilon_spend[0])
                state = budget_state(conn, population or release, *epsilon_spend)
                if not state.allowed:
                    raise state.refusal(f"{release}/{partition or '-'}")
            class_rows, member_rows = [], ([], [])
            if assignment is not None:
                class_rows = [(i, sig, int(n)) for i, (sig, n) in
                              enumerate(zip(assignment.signatures, assignment.rows_per_class, strict=True))]
                member_rows = (assignment.members["person"].astype(object).tolist(),
                               assignment.members["class_id"].astype("int64").tolist())
            cur = conn.execute(
                "INSERT INTO publications (release, partition, population, status, spec_hash, "
                "data_hash, qis, k, rows, published_at, report_path, report_json, report_inputs, "
                "epsilon, published_path, published_root, file_hash, classes_count, classes_digest, "
                "members_count, members_digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    release, partition, population, status, spec_hash, data_hash,
                    json.dumps(qis, sort_keys=True), None if k is None else int(k),
                    None if rows is None else int(rows), published_at, report_path, report_json,
                    # key order kept: the report lists columns in the order the spec declares them
                    None if report_inputs is None else json.dumps(report_inputs),
                    epsilon, published_path, published_root, file_hash,
                    len(class_rows), classes_digest(class_rows) if class_rows else None,
                    len(member_rows[0]), members_digest(*member_rows) if member_rows[0] else None,
                ),
            )
            new_id = int(cur.lastrowid)
            if class_rows:
                conn.executemany("INSERT INTO classes (publication_id, class_id, signature, rows) VALUES (?, ?, ?, ?)",
                                 ((new_id, *c) for c in class_rows))
                conn.executemany(
                    "INSERT INTO members (publication_id, person, class_id) VALUES (?, ?, ?)",
                    zip([new_id] * len(member_rows[0]), *member_rows, strict=True),
                )
            if epsilon is not None:
                conn.execute(
                    "INSERT INTO epsilon_spend (population, release, partition, data_hash, epsilon, "
                    "publication_id, spent_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (population or release, release, partition, data_hash, epsilon, new_id, published_at),
                )
            self._append(conn, {"event": "record", "id": new_id, "status": status,
                                "digest": row_digests(conn, [new_id])[new_id]})
            superseded = None
            if current is not None and status == "published":
                superseded = self._supersede(conn, int(current[0]), new_id)
            if _in_transaction_hook is not None:
                _in_transaction_hook()
        return RecordOutcome("superseded" if superseded else "inserted", new_id, superseded)

    def _supersede(self, conn: sqlite3.Connection, old: int, new: int) -> int:
        conn.execute("UPDATE publications SET superseded_by = ? WHERE id = ?", (new, old))
        self._append(conn, {"event": "supersede", "id": old, "by": new})
        return old

    def mark_published(self, publication_id: int) -> RecordOutcome:
        """A pending entry becomes the current publication of its release and partition (the
        previous one superseded by it), in one transaction."""
        with self._write() as conn:
            row = conn.execute("SELECT release, partition, status FROM publications WHERE id = ?",
                               (publication_id,)).fetchone()
            if row is None or row[2] != "pending":
                raise LedgerError(f"{self.path}: entry {publication_id} is not pending")
            current = conn.execute(
                "SELECT id FROM publications WHERE release = ? AND partition = ? AND status = 'published' "
                "AND superseded_by IS NULL AND id != ? ORDER BY id DESC LIMIT 1", (row[0], row[1], publication_id),
            ).fetchone()
            conn.execute("UPDATE publications SET status = 'published' WHERE id = ?", (publication_id,))
            self._append(conn, {"event": "status", "id": publication_id, "status": "published"})
            superseded = self._supersede(conn, int(current[0]), publication_id) if current else None
        return RecordOutcome("superseded" if superseded else "inserted", publication_id, superseded)

    def abandon(self, publication_id: int) -> None:
        """A pending entry whose files never took their place: kept in the history, never counted
        again for composition (its ε spend stays spent: the budget errs on the safe side)."""
        with self._write() as conn:
            row = conn.execute("SELECT status FROM publications WHERE id = ?", (publication_id,)).fetchone()
            if row is None or row[0] != "pending":
                raise LedgerError(f"{self.path}: entry {publication_id} is not pending")
            conn.execute("UPDATE publications SET status = 'abandoned' WHERE id = ?", (publication_id,))
            self._append(conn, {"event": "status", "id": publication_id, "status": "abandoned"})

    # ----- reading ----------------------------------------------------------------------------
    _COLUMNS = (
        "id, release, partition, population, status, spec_hash, data_hash, qis, k, rows, "
        "published_at, report_path, report_json, report_inputs, epsilon, superseded_by, "
        "published_path, published_root, file_hash"
    )

    @staticmethod
    def _publication(row: tuple) -> Publication:
        return Publication(
            id=int(row[0]), release=row[1], partition=row[2], population=row[3], status=row[4],
            spec_hash=row[5], data_hash=row[6], qis=json.loads(row[7]), k=row[8], rows=row[9],
            published_at=row[10], report_path=row[11], report_json=row[12],
            report_inputs=None if row[13] is None else json.loads(row[13]), epsilon=row[14],
            superseded_by=row[15], published_path=row[16], published_root=row[17], file_hash=row[18],
        )

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
        """Ledger entries in publication order, filtered; by default only the entries that
        count for composition: current publications and pending ones (see :data:`COUNTED_STATUSES`).
        ``include_failed`` adds failed and abandoned entries."""
        where, params = [], []
        for column, value in (("release", release), ("partition", partition), ("population", population)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if not include_failed:
            where.append("status IN ('pending', 'published')")
        if not include_superseded:
            where.append("(superseded_by IS NULL OR status IN ('failed', 'abandoned'))")
        sql = f"SELECT {self._COLUMNS} FROM publications"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [self._publication(r) for r in self._query(sql + " ORDER BY id", tuple(params))]

    def latest(self, release: str, partition: str | None, *, include_failed: bool = True) -> Publication | None:
        """The most recent published (or, with ``include_failed``, failed) entry of ``release``/``partition``."""
        statuses = "('published', 'failed')" if include_failed else "('published')"
        rows = self._query(
            f"SELECT {self._COLUMNS} FROM publications WHERE release = ? AND partition = ? AND status IN {statuses} "
            "ORDER BY id DESC LIMIT 1",
            (release, partition or ""),
        )
        return self._publication(rows[0]) if rows else None

    def current(self, release: str, partition: str | None) -> Publication | None:
        """The current publication of ``release``/``partition`` (published, not superseded)."""
        rows = self._query(
            f"SELECT {self._COLUMNS} FROM publications WHERE release = ? AND partition = ? AND status = 'published' "
            "AND superseded_by IS NULL ORDER BY id DESC LIMIT 1", (release, partition or ""))
        return self._publication(rows[0]) if rows else None

    def pending(self, release: str | None = None) -> list[Publication]:
        """Pending entries (of ``release``), oldest first: publications whose files may not be in place."""
        where, params = ("status = 'pending'", ()) if release is None else ("status = 'pending' AND release = ?",
                                                                           (release,))
        return [self._publication(r) for r in
                self._query(f"SELECT {self._COLUMNS} FROM publications WHERE {where} ORDER BY id", params)]

    def populations(self, release: str) -> set[str]:
        """The populations the counted entries of ``release`` belong to (None left out)."""
        rows = self._query("SELECT DISTINCT population FROM publications WHERE release = ? AND population IS NOT NULL "
                           "AND status IN ('pending', 'published')", (release,))
        return {str(r[0]) for r in rows}

    def assignment(self, publication_id: int) -> ClassAssignmentRows:
        """The stored class assignment of an entry (empty for entries recorded without one),
        refused unless its rows match the digests of its verified entry."""
        conn = self._connect()
        try:
            known = self._state.entries.get(publication_id)
            if known is None:  # recorded by another process since this ledger was opened
                self._state = self.verify()
                known = self._state.entries.get(publication_id)
            digest = row_digests(conn, [publication_id]).get(publication_id)
            if known is None or digest is None or not hmac.compare_digest(digest, known.digest):
                raise LedgerIntegrityError(
                    f"{self.path}: the ledger fails its integrity check (entry {publication_id} was changed): "
                    "it was edited outside anon-dagster; restore it from a backup"
                )
            members, classes = check_assignment(conn, self.path, publication_id)
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
            return budget_state(conn, population, epsilon, total, composition, delta)
        finally:
            conn.close()


__all__ = ["Ledger", "Publication", "RecordOutcome"]
