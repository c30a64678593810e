"""A ledger's life: created only on request, opened with the caller's key store, migrated, adopted.

- :func:`init_ledger` (``anon-dagster ledger init``) is the only way a ledger comes into being:
  an empty database (mode 0600, its folder created 0700), its random id and its first event,
  and its anchor. It refuses to start over where the anchor records a ledger that held
  entries (a lost ledger is restored, not replaced).
- ``init_ledger(migrate=True)`` converts a schema v1 ledger (entries without MACs) in place:
  a copy is kept first as ``<file>.v1-backup`` (0600), then one transaction rebuilds the
  publications table with the v2 columns, computes every entry's digest, and writes the
  chain (``init``, ``migrate``, one ``record`` per entry, then the supersessions); the anchor
  follows. The v1 entries are taken as they are: migrate a ledger you trust.
- ``init_ledger(adopt=True)`` anchors an existing v2 ledger that has no anchor in this key
  store's state (a ledger moved to another path, a key store state restored elsewhere): its
  chain must verify under this key store's integrity key, so only a ledger written with these
  keys can be adopted.
- :func:`open_ledger` opens an existing ledger with the seal of an opened key store.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .chain import (
    Anchor,
    LedgerError,
    LedgerIntegrityError,
    LedgerSeal,
    append_event,
    classes_digest,
    members_digest,
    read_anchor,
    row_digests,
    write_anchor,
)
from .publications import Ledger
from .schema import (
    SCHEMA,
    SCHEMA_VERSION,
    begin_immediate,
    connect,
    default_ledger_path,
    missing_ledger_error,
)

TIMEOUT = 60.0
_SIDE_FILES = ("-wal", "-shm")


def open_ledger(path: str | Path | None, keystore: Any) -> Ledger:
    """The existing ledger at ``path`` (default :func:`default_ledger_path`), checked with the
    integrity key of ``keystore`` (an opened key store, or a resource whose ``open()`` gives one)."""
    return Ledger(path, seal=LedgerSeal.from_keystore(keystore))


@dataclass
class InitOutcome:
    """What :func:`init_ledger` did: ``created``, ``exists``, ``completed`` (an interrupted
    creation finished), ``migrated`` or ``adopted``; and the ledger, opened."""

    action: str
    ledger: Ledger

    def describe(self) -> str:
        counts = self.ledger.counts()
        return {
            "created": f"{self.ledger.path}: new ledger created",
            "exists": f"{self.ledger.path}: already a ledger ({counts['publications']} entries), left as it was",
            "completed": f"{self.ledger.path}: an interrupted creation was finished",
            "migrated": f"{self.ledger.path}: migrated from schema version 1 ({counts['publications']} entries; "
                        f"the version 1 file is kept as {self.ledger.path.name}.v1-backup)",
            "adopted": f"{self.ledger.path}: adopted ({counts['publications']} entries), anchored in the key store's state",
        }[self.action]


def init_ledger(path: str | Path | None, seal: LedgerSeal, *, migrate: bool = False, adopt: bool = False) -> InitOutcome:
    """Create the ledger at ``path``, or migrate or adopt the one there (see the module docstring).

    An existing, sound ledger is left as it is (``exists``).
    """
    path = Path(path) if path is not None else default_ledger_path()
    if migrate and adopt:
        raise LedgerError("--migrate and --adopt cannot be combined")
    if not path.exists():
        if migrate or adopt:
            raise missing_ledger_error(path, seal)
        anchor = read_anchor(seal, path)
        if anchor is not None and anchor.events > 1:
            raise missing_ledger_error(path, seal)
        _create(path, seal)
        return InitOutcome("created", Ledger(path, seal=seal))
    if _never_created(path):  # a creation killed before its first commit left an empty file
        anchor = read_anchor(seal, path)
        if anchor is not None and anchor.events > 1:
            raise missing_ledger_error(path, seal)
        _remove(path)
        _create(path, seal)
        return InitOutcome("created", Ledger(path, seal=seal))
    version = _schema_version(path)
    if version == "1":
        if not migrate:
            raise LedgerError(f"{path}: ledger schema version 1: migrate it with "
                              f"`anon-dagster ledger init --migrate --ledger {path}`")
        _migrate_v1(path, seal)
        return InitOutcome("migrated", Ledger(path, seal=seal))
    if version != str(SCHEMA_VERSION):
        raise LedgerError(f"{path}: ledger schema version {version} is not supported (this version reads {SCHEMA_VERSION})")
    if read_anchor(seal, path) is None:
        unanchored = _Unanchored(path, seal=seal)
        state = unanchored.state
        if not adopt and state.events > 1:
            raise LedgerIntegrityError(
                f"{path}: the ledger has entries but no anchor in the key store's state; if it is the right "
                f"ledger, adopt it with `anon-dagster ledger init --adopt --ledger {path}`"
            )
        write_anchor(seal, path, Anchor(unanchored.ledger_id, unanchored.key_version, state.events, state.head),
                     replace=True)
        return InitOutcome("adopted" if state.events > 1 else "completed", Ledger(path, seal=seal))
    return InitOutcome("exists", Ledger(path, seal=seal))


class _Unanchored(Ledger):
    """A ledger verified in every respect but its anchor (to adopt it, or finish its creation)."""

    def __init__(self, path: Path, *, seal: LedgerSeal):
        self.path, self.seal, self.timeout = Path(path), seal, TIMEOUT
        self.state = self.verify(anchored=False)


def _never_created(path: Path) -> bool:
    """Whether ``path`` is a database file holding no table at all (or an empty file)."""
    if path.is_file() and path.stat().st_size == 0:
        return True
    try:
        conn = connect(path, TIMEOUT)
        try:
            return conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0
        finally:
            conn.close()
    except (sqlite3.DatabaseError, LedgerError):
        return False


def _schema_version(path: Path) -> str | None:
    try:
        conn = connect(path, TIMEOUT)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise LedgerError(f"{path}: not a ledger database ({exc}); nothing was written to it") from None
    if row is None:
        raise LedgerError(f"{path}: not a ledger database (no schema version); nothing was written to it")
    return str(row[0])


def private_folders(folder: Path, what: str = "the ledger folder") -> None:
    """Create ``folder`` and its missing parents with mode 0700 (existing ones are left as they are);
    LedgerError naming ``what`` when one cannot be created."""
    missing = []
    current = Path(folder)
    while not current.exists():
        missing.append(current)
        current = current.parent
    for part in reversed(missing):
        try:
            part.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise LedgerError(f"{part}: cannot create {what}: {exc.strerror}") from None


def _remove(path: Path) -> None:
    for suffix in ("", *_SIDE_FILES):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _create(path: Path, seal: LedgerSeal) -> None:
    private_folders(path.parent)
    try:
        # created owner-only before SQLite opens it: its WAL and shared-memory files take its mode
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600))
    except FileExistsError:
        raise LedgerError(f"{path}: another process is creating this ledger") from None
    except OSError as exc:
        raise LedgerError(f"{path}: cannot create the ledger: {exc.strerror}") from None
    try:
        conn = connect(path, TIMEOUT)
        try:
            if str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower() != "wal":
                raise LedgerError(f"{path}: cannot switch the ledger to WAL mode")  # pragma: no cover
            begin_immediate(conn, path, TIMEOUT)
            for statement in SCHEMA:
                conn.execute(statement)
            ledger_id = secrets.token_hex(16)
            conn.executemany("INSERT INTO meta VALUES (?, ?)", [
                ("schema_version", str(SCHEMA_VERSION)), ("ledger_id", ledger_id),
                ("key_version", str(seal.version)), ("created_at", _now())])
            seq, mac = append_event(conn, seal.key(seal.version), {"event": "init", "ledger": ledger_id})
            conn.execute("COMMIT")
        finally:
            conn.close()
        write_anchor(seal, path, Anchor(ledger_id, seal.version, seq, mac), replace=True)
    except BaseException:
        _remove(path)  # nothing was recorded: no half-made ledger is left behind
        raise


def _migrate_v1(path: Path, seal: LedgerSeal) -> None:
    backup = path.with_name(path.name + ".v1-backup")
    conn = connect(path, TIMEOUT)
    try:
        check = conn.execute("PRAGMA quick_check").fetchall()
        if [r[0] for r in check] != ["ok"]:
            raise LedgerError(f"{path}: the ledger file is damaged ({check[0][0]}): it cannot be migrated")
        try:
            os.close(os.open(backup, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600))
        except FileExistsError:
            raise LedgerError(f"{backup}: a backup of an earlier migration is in the way; move it first") from None
        try:
            target = sqlite3.connect(backup)
            try:
                conn.backup(target)
            finally:
                target.close()
            # the table is rebuilt (its status constraint changes): references to it must not follow it
            conn.execute("PRAGMA foreign_keys = OFF")
            begin_immediate(conn, path, TIMEOUT)
            try:
                _migrate_tables(conn, seal)
                if conn.execute("PRAGMA foreign_key_check").fetchall():
                    raise LedgerError(f"{path}: the version 1 ledger holds rows of unknown entries: "
                                      "it cannot be migrated")
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except BaseException:
            _remove(backup)  # the version 1 file is unchanged: its copy is not needed
            raise
        ledger_id = conn.execute("SELECT value FROM meta WHERE key = 'ledger_id'").fetchone()[0]
        seq, mac = conn.execute("SELECT seq, mac FROM chain ORDER BY seq DESC LIMIT 1").fetchone()
    finally:
        conn.close()
    for suffix in ("", *_SIDE_FILES):
        side = Path(f"{path}{suffix}")
        if side.exists():
            side.chmod(0o600)  # version 1 created its files with the default mode
    write_anchor(seal, path, Anchor(str(ledger_id), seal.version, int(seq), str(mac)), replace=True)


def _migrate_tables(conn: sqlite3.Connection, seal: LedgerSeal) -> None:
    v1_columns = ("id, release, partition, population, status, spec_hash, data_hash, qis, k, rows, published_at, "
                  "report_path, report_json, report_inputs, epsilon, superseded_by")
    new_table = SCHEMA[1].replace("CREATE TABLE publications", "CREATE TABLE publications_v2", 1)
    conn.execute(new_table)
    conn.execute(f"INSERT INTO publications_v2 ({v1_columns}) SELECT {v1_columns} FROM publications")
    conn.execute("DROP TABLE publications")
    conn.execute("ALTER TABLE publications_v2 RENAME TO publications")
    for statement in SCHEMA[2:4]:
        conn.execute(statement)
    conn.execute(SCHEMA[-1])  # the chain
    ids = [int(r[0]) for r in conn.execute("SELECT id FROM publications ORDER BY id")]
    for pid in ids:
        classes = conn.execute("SELECT class_id, signature, rows FROM classes WHERE publication_id = ? "
                               "ORDER BY class_id", (pid,)).fetchall()
        members = conn.execute("SELECT person, class_id FROM members WHERE publication_id = ? ORDER BY rowid",
                               (pid,)).fetchall()
        conn.execute(
            "UPDATE publications SET classes_count = ?, classes_digest = ?, members_count = ?, members_digest = ? "
            "WHERE id = ?",
            (len(classes), classes_digest(classes) if classes else None, len(members),
             members_digest([m[0] for m in members], [m[1] for m in members]) if members else None, pid))
    ledger_id = secrets.token_hex(16)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
    conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [
        ("ledger_id", ledger_id), ("key_version", str(seal.version)), ("migrated_at", _now())])
    key = seal.key(seal.version)
    append_event(conn, key, {"event": "init", "ledger": ledger_id})
    append_event(conn, key, {"event": "migrate", "from": 1, "entries": len(ids)})
    digests = row_digests(conn)
    statuses = dict(conn.execute("SELECT id, status FROM publications").fetchall())
    for pid in ids:
        append_event(conn, key, {"event": "record", "id": pid, "status": statuses[pid], "digest": digests[pid]})
    for old, new in conn.execute("SELECT id, superseded_by FROM publications WHERE superseded_by IS NOT NULL "
                                 "ORDER BY id").fetchall():
        append_event(conn, key, {"event": "supersede", "id": int(old), "by": int(new)})


__all__ = ["InitOutcome", "init_ledger", "open_ledger", "private_folders"]
