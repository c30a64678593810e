"""Attacks on retention and erasure: the clock moved back, a deleted table's file copied back, a
key file of another partition swapped in, two deletions at once; the suppression list deleted or
replaced by an older copy, the custody log deleted, identifiers spelled another way, an unknown
person, an erasure while a run is under way."""

from __future__ import annotations

import json
import shutil
import threading
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from anon_dagster import storage
from anon_dagster.errors import DataError, UserError
from anon_dagster.pseudonymize.audit import AuditLog, AuditTampered
from anon_dagster.release import gate, pipeline
from anon_dagster.release.governance.erasure import erase, erasures
from anon_dagster.release.governance.retention import apply_retention
from anon_dagster.release.governance.suppression import list_path, person_pseudonyms, suppressed
from tests.support.ledgers import env_ledger

PERSON, OTHER = "PID000004", "PID000007"  # rows of 2023
LATER = datetime.now(UTC) + timedelta(days=400)  # every stored table is past its retention


def kek_of(stored) -> bytes:
    return stored.keystore.derive_key(storage.DATA_AT_REST_PURPOSE)


def erase_one(stored, person: str, why: str = "request of the person"):
    [outcome] = erase(stored.spec, stored.store.base, persons=[person], keystore=stored.keystore,
                      ledger=stored.ledger, why=why)
    return outcome


def linkage(stored, person: str) -> str:
    return str(person_pseudonyms(stored.spec, pd.Series([person]), stored.keystore)[0])


# --- 4. retention --------------------------------------------------------------------------

def test_moving_the_clock_back_after_a_deletion_brings_nothing_back(stored_release):
    spec, store, ledger = stored_release.spec, stored_release.store, stored_release.ledger
    done = apply_retention(spec, store, now=LATER, ledger=ledger, keystore=stored_release.keystore)
    assert len(done.tables) == 4
    past = apply_retention(spec, store, now=datetime(2020, 1, 1, tzinfo=UTC), ledger=ledger,
                           keystore=stored_release.keystore)
    assert past.tables == [] and store.partitions((spec.release, "raw")) == []
    assert len([e for e in ledger.content_events() if e["event"] == "retention"]) == 1


def test_a_deleted_tables_file_copied_back_does_not_decrypt(stored_release, tmp_path):
    spec, store = stored_release.spec, stored_release.store
    name = (spec.release, "raw")
    path = store.path(name, "2023", True)
    backup = tmp_path / "backup.enc"
    shutil.copy(path, backup)
    apply_retention(spec, store, now=LATER, ledger=stored_release.ledger, keystore=stored_release.keystore)
    shutil.copy(backup, path)  # copied back where it was
    with pytest.raises(DataError, match="data key is gone") as caught:
        store.read(name, "2023", lambda: kek_of(stored_release))
    assert "PID" not in str(caught.value)


def test_the_key_file_of_another_partition_swapped_in_does_not_decrypt(stored_release):
    spec, store = stored_release.spec, stored_release.store
    name = (spec.release, "raw")
    [mine] = store.key_folder(name, "2023").glob("*.key")
    [theirs] = store.key_folder(name, "2024").glob("*.key")
    record = json.loads(theirs.read_text())
    record["key_id"] = json.loads(mine.read_text())["key_id"]  # renamed to pass for 2023's key
    mine.write_text(json.dumps(record))
    with pytest.raises(DataError):  # the wrapping's associated data names release, step, partition, key id
        store.read(name, "2023", lambda: kek_of(stored_release))
    assert len(store.read(name, "2024", lambda: kek_of(stored_release))) == 40


def test_the_same_key_file_moved_to_another_step_does_not_decrypt(stored_release):
    spec, store = stored_release.spec, stored_release.store
    raw, pseudo = (spec.release, "raw"), (spec.release, "pseudonymized")
    shutil.rmtree(store.key_folder(pseudo, "2023"))
    shutil.copytree(store.key_folder(raw, "2023"), store.key_folder(pseudo, "2023"))
    with pytest.raises(DataError):
        store.read(pseudo, "2023", lambda: kek_of(stored_release))


def test_two_retention_runs_at_once_delete_each_table_and_keep_the_chains_whole(stored_release):
    spec, store = stored_release.spec, stored_release.store
    errors, outcomes = [], []

    def run() -> None:
        try:
            outcomes.append(apply_retention(spec, storage.TableStore(store.base), now=LATER,
                                            ledger=env_ledger(stored_release.ledger.path),
                                            keystore=stored_release.keystore))
        except Exception as exc:  # noqa: BLE001 - the test reports what a thread raised
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(len(o.tables) for o in outcomes) == [0, 4]  # one run deleted, the other found nothing
    assert store.partitions((spec.release, "raw")) == [] and store.partitions((spec.release, "pseudonymized")) == []
    events = [e for e in env_ledger(stored_release.ledger.path).content_events() if e["event"] == "retention"]
    assert len(events) == 1 and len(events[0]["tables"]) == 4
    deletions = [e for e in AuditLog(stored_release.keystore).entries() if e["event"]["action"] == "retention-delete"]
    assert len(deletions) == 4


# --- 2 and 5. erasure and the suppression list ----------------------------------------------

def test_a_deleted_suppression_list_refuses_the_next_run_naming_the_file(stored_release):
    erase_one(stored_release, PERSON)
    path = list_path(stored_release.keystore, "tiny")
    path.unlink()
    with pytest.raises(UserError, match="suppression.tiny.json: the suppression list .* is missing") as caught:
        pipeline.run_gate(stored_release.spec, partition="2023", keystore=stored_release.keystore)
    assert "\n" not in str(caught.value) and PERSON not in str(caught.value)
    # erasing the person again repairs it: the next run drops them
    erase_one(stored_release, PERSON)
    rerun = pipeline.run_gate(stored_release.spec, partition="2023", keystore=stored_release.keystore)
    assert linkage(stored_release, PERSON) not in set(rerun.pseudonymized.data[gate.LINKAGE_COLUMN])


def test_an_older_copy_of_the_suppression_list_refuses_the_next_run(stored_release, tmp_path):
    erase_one(stored_release, PERSON)
    path = list_path(stored_release.keystore, "tiny")
    older = tmp_path / "older.json"
    shutil.copy(path, older)  # its MAC is valid: it only lacks what came after
    erase_one(stored_release, OTHER)
    shutil.copy(older, path)
    with pytest.raises(UserError, match="lacks 1 person"):
        pipeline.run_gate(stored_release.spec, partition="2023", keystore=stored_release.keystore)
    with pytest.raises(UserError, match="lacks 1 person"):
        suppressed(stored_release.keystore, "tiny")


def test_a_deleted_custody_log_refuses_the_next_run(stored_release):
    erase_one(stored_release, PERSON)
    AuditLog(stored_release.keystore).path.unlink()
    with pytest.raises(AuditTampered):  # the log is anchored in the key store: its loss shows
        pipeline.run_gate(stored_release.spec, partition="2023", keystore=stored_release.keystore)


def test_an_identifier_with_other_spacing_is_the_same_person_as_declared(stored_release):
    # the pid column declares the default normalization: trimmed, case kept, NFC
    outcome = erase_one(stored_release, f"  {PERSON}\t")
    assert sum(t.rows_removed for t in outcome.tables) == 2  # raw and pseudonymized of 2023
    lower = erase_one(stored_release, PERSON.lower())  # case is kept: another identifier, in no table
    assert lower.tables == [] and lower.person != outcome.person


def test_an_unknown_person_changes_no_table_but_is_recorded_and_suppressed(stored_release):
    before = {p: len(stored_release.store.read(("tiny", "raw"), p, lambda: kek_of(stored_release)))
              for p in ("2023", "2024")}
    outcome = erase_one(stored_release, "PID999999")
    assert outcome.tables == [] and "no stored table" in outcome.describe("tiny")
    after = {p: len(stored_release.store.read(("tiny", "raw"), p, lambda: kek_of(stored_release)))
             for p in ("2023", "2024")}
    assert after == before
    # the request is answered all the same: recorded, and suppressed should the source deliver them later
    assert [e["person"] for e in erasures(stored_release.ledger, "tiny")] == [outcome.person]
    assert linkage(stored_release, "PID999999") in suppressed(stored_release.keystore, "tiny")


def test_a_run_that_ingested_before_an_erasure_drops_the_person_when_it_pseudonymizes(stored_release):
    spec, ks = stored_release.spec, stored_release.keystore
    ingested = pipeline.ingest(spec, "2023")  # the run has read its raw rows...
    assert (ingested.data["pid"] == PERSON).any()
    erase_one(stored_release, PERSON)  # ...another process erases the person meanwhile
    pseudo = pipeline.pseudonymize(spec, ingested.data, ks, partition="2023")
    assert len(pseudo.data) == len(ingested.data) - 1
    assert linkage(stored_release, PERSON) not in set(pseudo.data[gate.LINKAGE_COLUMN])
