"""``anon-dagster ledger init|verify|reconcile``, and every command that reads the ledger refusing a
missing one (a mistyped ``--ledger`` never reads as an empty ledger that passes)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from anon_dagster.cli import main
from anon_dagster.release.publication import publish
from tests.support.keys import MASTER_KEY
from tests.support.ledgers import env_ledger, write_v1_ledger
from tests.support.publishing import PUBLISHER, assert_agree, gated
from tests.support.releases import write_release


def cli(capsys, *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    assert MASTER_KEY not in out.out + out.err
    return code, out.out, out.err


@pytest.fixture
def keys(tmp_path, monkeypatch, master_key):
    """Keys from the environment, with the key store state where :func:`gated` anchors its ledger."""
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_STATE", str(tmp_path / "keystate"))
    return tmp_path / "keystate"


def test_ledger_init_creates_once_and_says_so(tmp_path, capsys, keys):
    path = tmp_path / "ledgers" / "main.sqlite"
    code, out, err = cli(capsys, "ledger", "init", "--ledger", path)
    assert (code, err) == (0, "") and "new ledger created" in out and path.exists()
    code, out, _ = cli(capsys, "ledger", "init", "--ledger", path)
    assert code == 0 and "already a ledger (0 entries)" in out
    code, out, _ = cli(capsys, "ledger", "verify", "--ledger", path)
    assert code == 0 and "sound" in out


@pytest.mark.parametrize("command", ["check", "compose", "report"])
def test_a_mistyped_ledger_is_an_error_for_every_command_that_reads_it(tmp_path, capsys, keys, command):
    spec = write_release(tmp_path)
    typo = tmp_path / "leger.sqlite"
    argv = [command, spec, "--partition", "2023", "--ledger", typo]
    code, out, err = cli(capsys, *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert str(typo) in err and "anon-dagster ledger init" in err
    assert not typo.exists()


def test_the_default_ledger_missing_is_an_error_too(tmp_path, capsys, keys, monkeypatch):
    spec = write_release(tmp_path)
    monkeypatch.setenv("ANON_DAGSTER_LEDGER", str(tmp_path / "nowhere" / "ledger.sqlite"))
    code, _, err = cli(capsys, "compose", spec, "--partition", "2023")
    assert code == 2 and "no ledger here" in err and "PASSED" not in err
    assert not (tmp_path / "nowhere").exists()


def test_check_without_composition_needs_no_ledger(tmp_path, capsys, keys, monkeypatch):
    spec = write_release(tmp_path, composition=False)
    monkeypatch.setenv("ANON_DAGSTER_LEDGER", str(tmp_path / "nowhere" / "ledger.sqlite"))
    code, out, _ = cli(capsys, "check", spec, "--partition", "2023")
    assert code == 0, out


def test_a_lost_ledger_fails_compose_with_the_anchor_saying_so(tmp_path, capsys, keys):
    first = gated(tmp_path)
    publish(first.spec, first.evaluation, first.anonymized, first.ledger)
    path = first.ledger.path
    for side in ("", "-wal", "-shm"):
        Path(f"{path}{side}").unlink(missing_ok=True)
    code, out, err = cli(capsys, "compose", first.spec.spec_path, "--partition", "2024", "--ledger", path)
    assert code == 2 and "missing, but its anchor" in err and "PASSED" not in out
    code, _, err = cli(capsys, "ledger", "init", "--ledger", path)
    assert code == 2 and "restore the ledger from a backup" in err and not path.exists()


def test_verify_finds_what_open_leaves_to_reads(tmp_path, capsys, keys):
    first = gated(tmp_path)
    publish(first.spec, first.evaluation, first.anonymized, first.ledger)
    conn = sqlite3.connect(first.ledger.path)
    conn.execute("UPDATE members SET person = 'someone else' WHERE rowid = (SELECT MIN(rowid) FROM members)")
    conn.commit()
    conn.close()
    code, _, err = cli(capsys, "ledger", "verify", "--ledger", first.ledger.path)
    assert code == 2 and "members of entry 1 were changed" in err


def test_a_version_1_ledger_is_refused_by_commands_and_migrated_by_init(tmp_path, capsys, keys):
    spec = write_release(tmp_path)
    path = tmp_path / "old.sqlite"
    write_v1_ledger(path)
    code, _, err = cli(capsys, "compose", spec, "--partition", "2023", "--ledger", path)
    assert code == 2 and "ledger init --migrate" in err
    code, out, _ = cli(capsys, "ledger", "init", "--migrate", "--ledger", path)
    assert code == 0 and "migrated from schema version 1 (2 entries" in out
    code, out, _ = cli(capsys, "ledger", "verify", "--ledger", path)
    assert code == 0 and "2 entries" in out


def test_reconcile_settles_what_a_killed_publisher_left(tmp_path, capsys, keys):
    first = gated(tmp_path)
    child = subprocess.run([sys.executable, "-c", PUBLISHER, str(first.dump(tmp_path / "e.pickle")),
                            str(first.ledger.path), str(keys), "data-placed", "0"],
                           cwd=Path(__file__).resolve().parents[2], capture_output=True, timeout=300)
    assert child.returncode == 137
    code, out, _ = cli(capsys, "ledger", "reconcile", "--ledger", first.ledger.path)
    assert code == 0 and "entry 1 published" in out and "1 pending entry reconciled" in out
    assert_agree(env_ledger(first.ledger.path), first.spec, "2023")
