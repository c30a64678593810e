"""Ledgers for tests: created explicitly (as ``anon-dagster ledger init`` does), with the tests' keys.

A ledger's anchor lives in a key store state folder: the one given, else the one the environment
names (``ANON_DAGSTER_KEYSTORE_STATE``, set by conftest's ``master_key``), else ``keystate``
beside the ledger's folder. :func:`env_ledger` uses the key store the environment names.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from anon_dagster.pseudonymize.keystore import ENV_STATE, EnvKeyBackend, KeyStore, open_keystore
from anon_dagster.release.ledger import Ledger, LedgerSeal, init_ledger

from .keys import MASTER_KEY


def fixed_keystore(state: Path) -> KeyStore:
    """The tests' fixed keys, with ``state`` as the key store's state folder."""
    return KeyStore(EnvKeyBackend(MASTER_KEY), Path(state))


def seal_for(path: Path, state: Path | None = None) -> LedgerSeal:
    """The seal of the tests' keys for the ledger at ``path``; its state folder is ``state``, else
    the environment's (``master_key`` sets it, so the CLI finds the same anchor), else ``keystate``
    beside the ledger's folder."""
    state = state or Path(os.environ.get(ENV_STATE) or Path(path).parent / "keystate")
    return LedgerSeal.from_keystore(fixed_keystore(state))


def new_ledger(path: Path, state: Path | None = None) -> Ledger:
    """A new ledger at ``path``, created explicitly."""
    return init_ledger(path, seal_for(path, state)).ledger


def open_test_ledger(path: Path, state: Path | None = None) -> Ledger:
    """The existing ledger at ``path``, opened with the tests' keys."""
    return Ledger(path, seal=seal_for(path, state))


def env_ledger(path: Path, *, create: bool = False) -> Ledger:
    """The ledger at ``path`` with the key store the environment names (created with ``create``)."""
    seal = LedgerSeal.from_keystore(open_keystore())
    return init_ledger(path, seal).ledger if create else Ledger(path, seal=seal)


# The schema of version 1 ledgers (entries without MACs), to test their migration.
V1_SCHEMA = [
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE publications (id INTEGER PRIMARY KEY AUTOINCREMENT, release TEXT NOT NULL,
        partition TEXT NOT NULL, population TEXT,
        status TEXT NOT NULL CHECK (status IN ('published', 'failed')), spec_hash TEXT NOT NULL,
        data_hash TEXT NOT NULL, qis TEXT NOT NULL, k INTEGER, rows INTEGER, published_at TEXT NOT NULL,
        report_path TEXT, report_json TEXT, report_inputs TEXT, epsilon REAL,
        superseded_by INTEGER REFERENCES publications(id))""",
    "CREATE INDEX publications_by_population ON publications(population, status, superseded_by)",
    "CREATE INDEX publications_by_release ON publications(release, partition, status)",
    """CREATE TABLE classes (publication_id INTEGER NOT NULL REFERENCES publications(id),
        class_id INTEGER NOT NULL, signature TEXT NOT NULL, rows INTEGER NOT NULL,
        PRIMARY KEY (publication_id, class_id))""",
    """CREATE TABLE members (publication_id INTEGER NOT NULL REFERENCES publications(id),
        person TEXT NOT NULL, class_id INTEGER NOT NULL)""",
    "CREATE INDEX members_by_publication ON members(publication_id)",
    """CREATE TABLE epsilon_spend (id INTEGER PRIMARY KEY AUTOINCREMENT, population TEXT NOT NULL,
        release TEXT NOT NULL, partition TEXT NOT NULL, data_hash TEXT NOT NULL, epsilon REAL NOT NULL,
        publication_id INTEGER REFERENCES publications(id), spent_at TEXT NOT NULL)""",
    "CREATE INDEX epsilon_by_population ON epsilon_spend(population)",
]


def write_v1_ledger(path: Path) -> None:
    """A schema version 1 ledger at ``path``: two versions of one partition (the first superseded,
    with a class assignment) and an ε spend, as version 1 wrote them."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    for statement in V1_SCHEMA:
        conn.execute(statement)
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    row = ("r", "2024", "patients", "s", "{}", 5, 10, "2024-01-01T00:00:00Z")
    conn.execute("INSERT INTO publications (release, partition, population, status, spec_hash, data_hash, qis, k, "
                 "rows, published_at) VALUES (?, ?, ?, 'published', ?, 'h1', ?, ?, ?, ?)", row)
    conn.execute("INSERT INTO publications (release, partition, population, status, spec_hash, data_hash, qis, k, "
                 "rows, published_at, epsilon) VALUES (?, ?, ?, 'published', ?, 'h2', ?, ?, ?, ?, 0.5)", row)
    conn.execute("UPDATE publications SET superseded_by = 2 WHERE id = 1")
    conn.executemany("INSERT INTO classes VALUES (1, ?, ?, ?)", [(0, '{"age": "30-39"}', 3), (1, '{"age": "40-49"}', 2)])
    conn.executemany("INSERT INTO members VALUES (1, ?, ?)", [(f"p{i}", i % 2) for i in range(5)])
    conn.execute("INSERT INTO epsilon_spend (population, release, partition, data_hash, epsilon, publication_id, "
                 "spent_at) VALUES ('patients', 'r', '2024', 'h2', 0.5, 2, '2024-01-01T00:00:00Z')")
    conn.commit()
    conn.close()
