"""Retention: exactly the intermediates past their date are deleted, their data key first, so a
copy of a deleted file can no longer be decrypted; the ledger and the custody log record it."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime

import pytest

from anon_dagster import storage
from anon_dagster.cli import main
from anon_dagster.errors import DataError
from anon_dagster.pseudonymize.audit import AuditLog
from anon_dagster.release.governance.binding import runner
from anon_dagster.release.governance.retention import apply_retention, expired_tables, parse_now

RAW_2023 = datetime(2026, 1, 1, 8, 0, tzinfo=UTC)
RAW_2024 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)


def stamped(stored) -> None:
    """Restore every stored table with a known stored time: raw 2023 and pseudonymized on
    2026-01-01 08:00, raw 2024 on 2026-01-05 08:00 (UTC)."""
    spec, kek = stored.spec, stored.keystore.derive_key(storage.DATA_AT_REST_PURPOSE)
    for step, partition, when in (("raw", "2023", RAW_2023), ("raw", "2024", RAW_2024),
                                  ("pseudonymized", "2023", RAW_2023), ("pseudonymized", "2024", RAW_2023)):
        name = (spec.release, step)
        table = stored.store.read_file(stored.store.path(name, partition, True), name, partition, lambda: kek)
        stored.store.write(name, partition, table, kek, stored_at=when)


def test_the_boundary_second_decides_and_only_tables_past_their_date_go(stored_release):
    stamped(stored_release)
    spec, store = stored_release.spec, stored_release.store
    # raw_days 7: raw/2023 stored 2026-01-01T08:00Z expires 2026-01-08T08:00Z (7 × 24 h later)
    assert expired_tables(spec, store, parse_now("2026-01-08T07:59:59Z")) == []
    at_boundary = expired_tables(spec, store, parse_now("2026-01-08T08:00:00Z"))
    assert [(t.step, t.partition, t.expired_at) for t in at_boundary] == [("raw", "2023", "2026-01-08T08:00:00Z")]
    # raw/2024 (stored 01-05) expires 01-12 08:00; pseudonymized (30 days) 2026-01-31T08:00Z
    later = expired_tables(spec, store, parse_now("2026-01-31T08:00:00Z"))
    assert [(t.step, t.partition) for t in later] == [("raw", "2023"), ("raw", "2024"), ("pseudonymized", "2023"),
                                                      ("pseudonymized", "2024")]


def test_a_copy_of_a_deleted_file_can_no_longer_be_decrypted(stored_release, tmp_path):
    stamped(stored_release)
    spec, store, ledger = stored_release.spec, stored_release.store, stored_release.ledger
    kek = stored_release.keystore.derive_key(storage.DATA_AT_REST_PURPOSE)
    name = (spec.release, "raw")
    copy = tmp_path / "backup-of-raw-2023.parquet.enc"
    shutil.copy(store.path(name, "2023", True), copy)
    assert len(store.read_file(copy, name, "2023", lambda: kek)) == 40  # the copy decrypts while the key exists

    done = apply_retention(spec, store, now=parse_now("2026-01-08T08:00:00Z"), ledger=ledger,
                           keystore=stored_release.keystore)
    assert [(t.step, t.partition, t.key_destroyed) for t in done.tables] == [("raw", "2023", True)]
    assert store.partitions(name) == ["2024"] and store.partitions((spec.release, "pseudonymized")) == ["2023", "2024"]
    assert not store.key_folder(name, "2023").exists()
    with pytest.raises(DataError, match="cannot be decrypted: its data key is gone"):
        store.read_file(copy, name, "2023", lambda: kek)

    event = [e for e in ledger.content_events() if e["event"] == "retention"]
    assert len(event) == 1 and event[0]["now"] == "2026-01-08T08:00:00Z"
    assert [(t["step"], t["partition"]) for t in event[0]["tables"]] == [("raw", "2023")]
    custody = [e["event"] for e in AuditLog(stored_release.keystore).entries()
               if e["event"]["action"] == "retention-delete"]
    assert [(c["step"], c["partition"], c["actor"], c["why"]) for c in custody] == [
        ("raw", "2023", runner(), f"retention of {spec.label}")]
    assert b"PID0000" not in ledger.path.read_bytes()


def test_the_cli_dry_run_deletes_nothing_and_the_run_deletes(stored_release, capsys):
    stamped(stored_release)
    spec_path, store = stored_release.spec_path, stored_release.store
    base = str(store.base)
    assert main(["retention", str(spec_path), "--storage", base, "--now", "2026-02-01T00:00:00Z", "--dry-run"]) == 0
    assert "would delete 4 intermediate table(s)" in capsys.readouterr().out
    assert store.partitions(("tiny", "raw")) == ["2023", "2024"]
    assert main(["retention", str(spec_path), "--storage", base, "--now", "2026-02-01T00:00:00Z"]) == 0
    assert "deleted 4 intermediate table(s)" in capsys.readouterr().out
    assert store.partitions(("tiny", "raw")) == [] and store.partitions(("tiny", "pseudonymized")) == []
    assert main(["retention", str(spec_path), "--storage", base, "--now", "2026-02-01T00:00:00Z"]) == 0
    assert "nothing past its retention" in capsys.readouterr().out


@pytest.mark.parametrize("block, message", [
    ({"raw_days": 0}, "not a number of days"),
    ({"raw_days": "7"}, "not a number of days"),
    ({"keep_days": 3}, "unknown key 'keep_days' (retention takes: raw_days, pseudonymized_days)"),
    ({}, "an empty retention block limits nothing"),
])
def test_a_bad_retention_block_is_named_with_file_and_key(tmp_path, block, message):
    import yaml

    from anon_dagster.errors import UserError
    from anon_dagster.spec import load_spec
    from tests.support.releases import write_release

    path = write_release(tmp_path)
    raw = yaml.safe_load(path.read_text())
    raw["retention"] = block
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(UserError) as err:
        load_spec(path)
    assert str(path.name) in str(err.value) and "retention" in str(err.value) and message in str(err.value)


def test_a_spec_without_retention_hashes_as_before_and_retention_leaves_the_hash(tmp_path):
    import yaml

    from anon_dagster.spec import load_spec
    from tests.support.releases import write_release

    path = write_release(tmp_path)
    before = load_spec(path)
    assert "retention" not in before.model_dump(mode="json")
    raw = yaml.safe_load(path.read_text())
    raw["retention"] = {"raw_days": 7}
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    assert load_spec(path).spec_hash() == before.spec_hash()
