"""The ledger's entries: recording one evaluation of a release partition, and reading them back."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from ...errors import UserError
from .budget import BudgetState, budget_state
from .linkage import ClassAssignmentRows
from .schema import STATUSES, LedgerDatabase, LedgerError

# Test hook: called inside the write transaction, after the rows are inserted and before the
# commit. Tests set it in a child process to kill it mid-transaction; production leaves it None.
_in_transaction_hook: Callable[[], None] | None = None


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


class Ledger(LedgerDatabase):
    """The publication ledger at ``path`` (created with its schema on first use).

    Each method opens its own connection, so a Ledger object is cheap and safe to share
    between threads; processes coordinate through SQLite's locks (WAL mode, ``BEGIN
    IMMEDIATE``, a busy timeout).
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
                state = budget_state(conn, population or release, *epsilon_spend)
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
            return budget_state(conn, population, epsilon, total, composition, delta)
        finally:
            conn.close()
