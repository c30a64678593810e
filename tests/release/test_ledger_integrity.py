"""The ledger cannot vanish or rot silently: created only on request, refused when missing, damaged,
edited, truncated, reordered or replaced, and never written to then."""

from __future__ import annotations

import base64
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

from anon_dagster.pseudonymize.keystore import EnvKeyBackend, KeyStore
from anon_dagster.release.composition import class_assignment
from anon_dagster.release.ledger import (
    Ledger,
    LedgerError,
    LedgerIntegrityError,
    LedgerSeal,
    init_ledger,
)
from tests.support.keys import MASTER_KEY
from tests.support.ledgers import new_ledger, open_test_ledger, seal_for, write_v1_ledger

KEY = b"k" * 32


def _assignment(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"age": rng.integers(0, 3, n).astype(str)})
    return class_assignment(df, ["age"], [f"p{i}" for i in range(n)], linkage_key=KEY)


def _record(ledger: Ledger, data_hash: str, partition: str = "2024", **kw):
    return ledger.record(release="r", partition=partition, population="patients", spec_hash="s",
                         data_hash=data_hash, qis={"age": 1}, k=5, rows=10, **kw)


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    """A ledger with two versions of one partition, another partition with an ε spend, a failed entry."""
    led = new_ledger(tmp_path / "l.sqlite")
    _record(led, "h1", assignment=_assignment(20))
    _record(led, "h2", assignment=_assignment(15, seed=1))
    _record(led, "h3", partition="2025", epsilon_spend=(0.5, 1.0, "basic", None))
    _record(led, "h4", partition="2026", status="failed")
    return led


def _sql(path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


def _files(path) -> dict[str, bytes]:
    """The ledger's files, byte for byte (after its WAL is folded in, so reads change nothing)."""
    return {p.name: p.read_bytes() for p in sorted(path.parent.iterdir()) if p.name.startswith(path.name)}


# ----- lifecycle --------------------------------------------------------------------------------


def test_a_missing_ledger_is_an_error_naming_it_and_nothing_is_created(tmp_path):
    path = tmp_path / "typo" / "ledger.sqlite"
    with pytest.raises(LedgerError) as exc:
        open_test_ledger(path)
    assert str(path) in str(exc.value) and "anon-dagster ledger init" in str(exc.value)
    assert not path.exists() and not path.parent.exists()


def test_init_creates_an_owner_only_ledger_and_is_idempotent(tmp_path):
    path = tmp_path / "new" / "deeper" / "ledger.sqlite"
    outcome = init_ledger(path, seal_for(path, tmp_path / "keystate"))
    assert outcome.action == "created"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o700
    anchors = tmp_path / "keystate" / "ledger-anchors"
    assert stat.S_IMODE(anchors.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in anchors.iterdir())
    # a reader holding the database open keeps the WAL and shared-memory files: owner-only too
    reader = sqlite3.connect(path)
    reader.execute("SELECT COUNT(*) FROM publications").fetchone()
    _record(outcome.ledger, "h1")
    for side in ("-wal", "-shm"):
        assert stat.S_IMODE(os.stat(f"{path}{side}").st_mode) == 0o600, side
    reader.close()
    again = init_ledger(path, seal_for(path, tmp_path / "keystate"))
    assert again.action == "exists" and again.ledger.counts()["publications"] == 1


def test_a_lost_ledger_is_not_started_over(ledger):
    path = ledger.path
    path.unlink()
    for side in ("-wal", "-shm"):
        os.unlink(f"{path}{side}") if os.path.exists(f"{path}{side}") else None
    with pytest.raises(LedgerError, match="missing, but its anchor .* records"):
        open_test_ledger(path)
    with pytest.raises(LedgerError, match="restore the ledger from a backup"):
        new_ledger(path)  # init refuses too
    assert not path.exists()


def test_a_damaged_page_is_refused_and_never_written_to(ledger):
    path = ledger.path
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'publications'").fetchone()[0]
    conn.close()
    raw = bytearray(path.read_bytes())
    start = (root - 1) * page  # the publications table's page: its b-tree header garbled
    raw[start: start + 12] = b"\xff" * 12
    path.write_bytes(bytes(raw))
    before = _files(path)
    with pytest.raises(LedgerError, match="damaged|integrity"):
        open_test_ledger(path)
    assert _files(path) == before


def test_another_schema_version_and_a_file_that_is_not_a_ledger_are_refused(tmp_path):
    other = tmp_path / "other.sqlite"
    _sql(other, "CREATE TABLE t (x)")
    with pytest.raises(LedgerError, match="not a ledger"):
        open_test_ledger(other)
    with pytest.raises(LedgerError, match="not a ledger"):
        new_ledger(other)  # init does not take over a database of something else
    text = tmp_path / "text.sqlite"
    text.write_text("hello")
    with pytest.raises(LedgerError, match="text.sqlite"):
        new_ledger(text)
    assert text.read_text() == "hello"


# ----- edits, deletions, reordering, replacement -----------------------------------------------

EDITS = {
    "an entry's k": ["UPDATE publications SET k = 50 WHERE id = 2"],
    "a failed entry made a publication": ["UPDATE publications SET status = 'published' WHERE id = 4"],
    "a superseded entry made current": ["UPDATE publications SET superseded_by = NULL WHERE id = 1"],
    "an entry deleted": ["DELETE FROM members WHERE publication_id = 2", "DELETE FROM classes WHERE publication_id = 2",
                         "UPDATE publications SET superseded_by = NULL WHERE id = 1",
                         "DELETE FROM publications WHERE id = 2"],
    "a member deleted": ["DELETE FROM members WHERE rowid = (SELECT MIN(rowid) FROM members WHERE publication_id = 2)"],
    "a member added": ["INSERT INTO members VALUES (2, 'someone', 0)"],
    "an epsilon spend deleted (budget regained)": ["DELETE FROM epsilon_spend"],
    "an epsilon spend lowered": ["UPDATE epsilon_spend SET epsilon = 0.01"],
    "an entry inserted": ["INSERT INTO publications (release, partition, population, status, spec_hash, data_hash, "
                          "qis, published_at) VALUES ('r', '2030', 'patients', 'published', 's', 'x', '{}', 'now')"],
    "an event edited": ["UPDATE chain SET body = replace(body, '\"published\"', '\"failed\"') WHERE seq = 2"],
    "two events swapped": ["UPDATE chain SET seq = -1 WHERE seq = 2", "UPDATE chain SET seq = 2 WHERE seq = 3",
                           "UPDATE chain SET seq = 3 WHERE seq = -1"],
    "an event deleted": ["DELETE FROM chain WHERE seq = 3"],
    "the last entry and its events cut off": ["DELETE FROM publications WHERE id = 4",
                                              "DELETE FROM chain WHERE seq = (SELECT MAX(seq) FROM chain)"],
    "every entry and event but the first cut off": [
        "DELETE FROM members", "DELETE FROM classes", "DELETE FROM epsilon_spend", "UPDATE publications SET "
        "superseded_by = NULL", "DELETE FROM publications", "DELETE FROM chain WHERE seq > 1"],
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edit_is_refused_on_open_and_nothing_is_written(ledger, edit):
    _sql(ledger.path, *EDITS[edit])
    before = _files(ledger.path)
    with pytest.raises(LedgerIntegrityError, match="integrity check"):
        open_test_ledger(ledger.path)
    assert _files(ledger.path) == before


def test_a_changed_member_is_refused_where_it_is_read_and_by_a_full_verify(ledger):
    # a member moved to another class keeps the counts: it is caught when the assignment is read
    _sql(ledger.path, "UPDATE members SET class_id = 1 - class_id WHERE rowid = (SELECT MIN(rowid) FROM members "
                      "WHERE publication_id = 2)")
    opened = open_test_ledger(ledger.path)
    with pytest.raises(LedgerIntegrityError, match="members of entry 2"):
        opened.assignment(2)
    with pytest.raises(LedgerIntegrityError, match="members of entry 2"):
        opened.verify(full=True)
    # the composition reads every earlier assignment it composes with: it never uses the edited one
    from anon_dagster.release.composition import check_composition

    with pytest.raises(LedgerIntegrityError):
        check_composition(_assignment(10, 5), opened, population="patients", release="other", partition="",
                          min_k=1)


def test_an_older_copy_put_back_is_refused(tmp_path):
    led = new_ledger(tmp_path / "l.sqlite")
    _record(led, "h1", assignment=_assignment(20))
    backup = tmp_path / "copy.sqlite"
    conn = sqlite3.connect(led.path)
    conn.execute(f"VACUUM INTO '{backup}'")
    conn.close()
    _record(led, "h2", assignment=_assignment(20, seed=3))  # publishes more people afterwards
    for side in ("", "-wal", "-shm"):
        if os.path.exists(f"{led.path}{side}"):
            os.unlink(f"{led.path}{side}")
    shutil.copy(backup, led.path)
    with pytest.raises(LedgerIntegrityError, match="anchor records"):
        open_test_ledger(led.path)


def test_another_ledger_put_in_its_place_is_refused(tmp_path):
    led = new_ledger(tmp_path / "l.sqlite")
    _record(led, "h1", assignment=_assignment(20))
    # a fresh ledger under the same keys (MACs valid), swapped in
    other = new_ledger(tmp_path / "elsewhere" / "l.sqlite", tmp_path / "keystate")
    for side in ("", "-wal", "-shm"):
        if os.path.exists(f"{led.path}{side}"):
            os.unlink(f"{led.path}{side}")
    shutil.copy(other.path, led.path)
    with pytest.raises(LedgerIntegrityError, match="not the ledger its anchor records"):
        open_test_ledger(led.path)


def test_under_another_key_the_ledger_is_refused(ledger, tmp_path):
    other = KeyStore(EnvKeyBackend(base64.b64encode(b"z" * 32).decode()), tmp_path / "keystate")
    with pytest.raises(LedgerIntegrityError):
        Ledger(ledger.path, seal=LedgerSeal.from_keystore(other))


def test_an_edited_anchor_is_refused(ledger, tmp_path):
    anchor = next((tmp_path / "keystate" / "ledger-anchors").glob("*.json"))
    doc = json.loads(anchor.read_text())
    doc["events"] = 1  # as if the ledger held nothing
    anchor.write_text(json.dumps(doc))
    with pytest.raises(LedgerIntegrityError, match="anchor .* was edited"):
        open_test_ledger(ledger.path)


def test_a_missing_anchor_is_refused_and_adopting_is_explicit(ledger, tmp_path):
    for anchor in (tmp_path / "keystate" / "ledger-anchors").glob("*.json"):
        anchor.unlink()
    with pytest.raises(LedgerIntegrityError, match="ledger init --adopt"):
        open_test_ledger(ledger.path)
    with pytest.raises(LedgerIntegrityError, match="--adopt"):
        new_ledger(ledger.path)  # a plain init does not adopt
    outcome = init_ledger(ledger.path, seal_for(ledger.path), adopt=True)
    assert outcome.action == "adopted" and outcome.ledger.counts()["publications"] == 4
    assert open_test_ledger(ledger.path).counts()["publications"] == 4


def test_a_key_rotation_keeps_the_ledger_readable(ledger, tmp_path):
    # the master key store gains version 2: the ledger keeps the version it was made with
    v1 = base64.b64decode(MASTER_KEY)
    rotated = KeyStore(EnvKeyBackend(f"1:{base64.b64encode(v1).decode()},2:{base64.b64encode(b'v' * 32).decode()}"),
                       tmp_path / "keystate")
    assert rotated.current_version == 2
    reopened = Ledger(ledger.path, seal=LedgerSeal.from_keystore(rotated))
    _record(reopened, "h5", partition="2027")
    assert open_test_ledger(ledger.path).counts()["publications"] == 5


def test_keys_from_the_environment_without_a_state_folder_have_nowhere_to_anchor(tmp_path):
    store = KeyStore(EnvKeyBackend(MASTER_KEY), None)
    with pytest.raises(LedgerError, match="ANON_DAGSTER_KEYSTORE_STATE"):
        LedgerSeal.from_keystore(store)


def test_the_seal_cannot_be_serialized_or_shown_with_its_key(tmp_path):
    import pickle

    seal = seal_for(tmp_path / "l.sqlite")
    with pytest.raises(TypeError):
        pickle.dumps(seal)
    assert MASTER_KEY not in repr(seal) and "key version 1" in repr(seal)


# ----- crashes around the anchor ---------------------------------------------------------------

_KILLED_AFTER_COMMIT = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from anon_dagster.release.ledger import schema
    from tests.support.ledgers import open_test_ledger

    schema._after_commit_hook = lambda: os._exit(9)   # the commit is on disk, the anchor not moved
    open_test_ledger(Path(sys.argv[1]), Path(sys.argv[2])).record(
        release="r", partition="2030", population="patients", spec_hash="s", data_hash="late", qis={}, k=5)
    """
)


def test_a_process_killed_between_commit_and_anchor_leaves_a_ledger_ahead_that_opens(ledger, tmp_path):
    state = tmp_path / "keystate"
    anchor = next((state / "ledger-anchors").glob("*.json"))
    before = json.loads(anchor.read_text())["events"]
    child = subprocess.run([sys.executable, "-c", _KILLED_AFTER_COMMIT, str(ledger.path), str(state)],
                           cwd=os.getcwd(), capture_output=True, text=True, timeout=120)
    assert child.returncode == 9, child.stderr
    assert json.loads(anchor.read_text())["events"] == before  # the anchor is behind
    reopened = open_test_ledger(ledger.path)  # the events beyond it are MACed: rolled forward
    assert reopened.latest("r", "2030").data_hash == "late"
    assert json.loads(anchor.read_text())["events"] == before + 1


def test_an_anchor_that_cannot_be_written_does_not_undo_a_commit(ledger, monkeypatch, caplog):
    from anon_dagster.release.ledger import schema

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(schema, "write_anchor", full)
    outcome = _record(ledger, "h9", partition="2031")
    assert outcome.action == "inserted"
    assert "anchor could not be moved forward" in caplog.text
    monkeypatch.undo()
    assert open_test_ledger(ledger.path).get(outcome.publication_id).data_hash == "h9"


# ----- schema version 1 ----------------------------------------------------------------------


def test_a_version_1_ledger_is_refused_until_migrated_explicitly(tmp_path):
    path = tmp_path / "old.sqlite"
    write_v1_ledger(path)
    os.chmod(path, 0o644)
    with pytest.raises(LedgerError, match="ledger init --migrate"):
        open_test_ledger(path)
    with pytest.raises(LedgerError, match="--migrate"):
        new_ledger(path)
    outcome = init_ledger(path, seal_for(path), migrate=True)
    assert outcome.action == "migrated"
    led = open_test_ledger(path)
    assert led.schema_version == 2
    history = led.entries(include_superseded=True)
    assert [(p.id, p.status, p.superseded_by) for p in history] == [(1, "published", 2), (2, "published", None)]
    assert [p.id for p in led.entries(population="patients")] == [2]
    assert len(led.assignment(1).members) == 5
    assert led.budget("patients", total=1.0).composed_before == pytest.approx(0.5)
    backup = tmp_path / "old.sqlite.v1-backup"
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600 and stat.S_IMODE(path.stat().st_mode) == 0o600
    conn = sqlite3.connect(backup)
    assert conn.execute("SELECT value FROM meta").fetchone()[0] == "1"
    conn.close()
    # migrated entries are protected like any other from then on
    _sql(path, "UPDATE publications SET k = 99 WHERE id = 2")
    with pytest.raises(LedgerIntegrityError):
        open_test_ledger(path)


_KILLED_WHILE_CREATING = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from anon_dagster.release.ledger import lifecycle
    from tests.support.ledgers import seal_for

    real = lifecycle.append_event
    def die(*args, **kwargs):
        real(*args, **kwargs)
        os._exit(9)          # inside the creating transaction, before its commit
    lifecycle.append_event = die
    lifecycle.init_ledger(Path(sys.argv[1]), seal_for(Path(sys.argv[1]), Path(sys.argv[2])))
    """
)


def test_a_creation_killed_midway_is_finished_by_the_next_init(tmp_path):
    path, state = tmp_path / "l.sqlite", tmp_path / "keystate"
    child = subprocess.run([sys.executable, "-c", _KILLED_WHILE_CREATING, str(path), str(state)],
                           cwd=os.getcwd(), capture_output=True, text=True, timeout=120)
    assert child.returncode == 9, child.stderr
    assert path.exists()
    with pytest.raises(LedgerError):
        open_test_ledger(path, state)  # not a ledger yet: never read as one
    assert init_ledger(path, seal_for(path, state)).action == "created"
    assert open_test_ledger(path, state).counts()["chain"] == 1
