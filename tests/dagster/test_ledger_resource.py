"""The Dagster ledger resource opens only an existing, sound ledger, with the run's key store."""

from __future__ import annotations

import sqlite3

from dagster import DagsterInstance

from anon_dagster.dagster import AnonReleaseComponent
from tests.support.ledgers import env_ledger
from tests.support.releases import load, materialized, run, write_release


def _failures(result) -> list[str]:
    """Each failed step's error and what caused it, as text."""
    out = []
    for event in result.all_events:
        if event.event_type_value == "STEP_FAILURE":
            error, text = event.event_specific_data.error, ""
            while error is not None:
                text, error = text + error.message, error.cause
            out.append(text)
    return out


def test_a_missing_ledger_fails_the_run_naming_it_and_nothing_is_published(env):
    spec = write_release(env)
    ledger = env / "state" / "ledger.sqlite"
    defs = AnonReleaseComponent(specs=[str(spec)], storage_dir=str(env / "state" / "storage"),
                                ledger_path=str(ledger)).build_definitions(env)
    result = run(defs, "tiny", "2023", DagsterInstance.ephemeral())
    assert not result.success
    assert any(str(ledger) in m and "anon-dagster ledger init" in m for m in _failures(result))
    assert "tiny/published" not in materialized(result)
    assert not ledger.exists() and not (env / "published").exists()


def test_a_tampered_ledger_fails_the_run_and_nothing_is_published(env):
    spec = write_release(env)
    defs = load(env, spec)
    instance = DagsterInstance.ephemeral()
    assert run(defs, "tiny", "2023", instance).success
    path = env / "state" / "ledger.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("UPDATE publications SET population = 'someone_else'")  # composition would no longer see it
    conn.commit()
    conn.close()
    result = run(defs, "tiny", "2024", instance)
    assert not result.success
    assert any("integrity check" in m for m in _failures(result))
    assert not (env / "published" / "tiny" / "2024.parquet").exists()


def test_the_published_entry_is_recorded_with_its_file(env):
    spec = write_release(env)
    defs = load(env, spec)
    assert run(defs, "tiny", "2023", DagsterInstance.ephemeral()).success
    entry = env_ledger(env / "state" / "ledger.sqlite").current("tiny", "2023")
    assert entry.status == "published" and entry.published_path == str(env / "published" / "tiny" / "2023.parquet")
    assert not [p for p in (env / "published" / "tiny").iterdir() if p.name.endswith((".tmp", ".bak"))]
