"""Erasure: a person leaves every stored intermediate and every later run; the ledger names them
by digest only and lists the earlier publications that held them; custody entries; tampering."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from anon_dagster import storage
from anon_dagster.cli import main
from anon_dagster.pseudonymize.audit import AuditLog, AuditTampered
from anon_dagster.release import gate, pipeline
from anon_dagster.release.governance.erasure import erase
from anon_dagster.release.governance.suppression import person_pseudonyms
from anon_dagster.release.publish_partition import publish_partition

PERSON = "PID000004"  # a row of 2023 (the first 40 rows), published in it (PID000003 is suppressed)


def tables(stored) -> dict[tuple[str, str], pd.DataFrame]:
    kek = stored.keystore.derive_key(storage.DATA_AT_REST_PURPOSE)
    out = {}
    for step in ("raw", "pseudonymized"):
        for partition in stored.store.partitions(("tiny", step)):
            out[(step, partition)] = stored.store.read(("tiny", step), partition, lambda: kek)
    return out


def test_a_person_leaves_every_intermediate_and_the_next_release(stored_release):
    spec, ks, ledger = stored_release.spec, stored_release.keystore, stored_release.ledger
    published = publish_partition(spec, partition="2023", ledger=ledger, keystore=ks)
    pseudonym = str(person_pseudonyms(spec, pd.Series([PERSON]), ks)[0])
    before = tables(stored_release)
    assert (before[("raw", "2023")]["pid"] == PERSON).sum() == 1
    assert (before[("pseudonymized", "2023")][gate.LINKAGE_COLUMN] == pseudonym).sum() == 1

    [outcome] = erase(spec, stored_release.store.base, persons=[PERSON], keystore=ks, ledger=ledger,
                      why="request 2026-17 of the person")
    after = tables(stored_release)
    assert len(after[("raw", "2023")]) == 39 and len(after[("raw", "2024")]) == 40
    assert not (after[("raw", "2023")]["pid"] == PERSON).any()
    assert not (after[("pseudonymized", "2023")][gate.LINKAGE_COLUMN] == pseudonym).any()
    assert [(t.step, t.partition, t.rows_removed) for t in outcome.tables] == [("raw", "2023", 1),
                                                                               ("pseudonymized", "2023", 1)]
    assert outcome.publications == [published.published.ledger_entry]

    rerun = pipeline.run_gate(spec, partition="2023", keystore=ks)
    assert len(rerun.ingested.data) == 40  # the source still holds them: its owner erases it there
    assert len(rerun.pseudonymized.data) == 39 and pseudonym not in set(rerun.pseudonymized.data[gate.LINKAGE_COLUMN])

    ledger_bytes = ledger.path.read_bytes()
    assert PERSON.encode() not in ledger_bytes
    [event] = [e for e in ledger.content_events() if e["event"] == "erasure"]
    assert event["person"] == outcome.person and PERSON not in json.dumps(event) and pseudonym not in json.dumps(event)
    assert event["publications"] == [published.published.ledger_entry]
    entries = [e["event"] for e in AuditLog(ks).entries()]
    assert [e["person"] for e in entries if e["action"] == "erase"] == [outcome.person]
    assert PERSON not in AuditLog(ks).path.read_text()


def test_a_copy_of_the_table_that_held_the_person_no_longer_decrypts(stored_release, tmp_path):
    spec, ks = stored_release.spec, stored_release.keystore
    kek = ks.derive_key(storage.DATA_AT_REST_PURPOSE)
    name = ("tiny", "raw")
    copy = tmp_path / "copy.enc"
    copy.write_bytes(stored_release.store.path(name, "2023", True).read_bytes())
    erase(spec, stored_release.store.base, persons=[PERSON], keystore=ks, ledger=stored_release.ledger, why="request")
    with pytest.raises(Exception, match="data key is gone"):
        stored_release.store.read_file(copy, name, "2023", lambda: kek)


def test_reads_are_in_custody_and_an_edited_entry_is_caught(stored_release, capsys, monkeypatch):
    monkeypatch.setenv("ANON_DAGSTER_RUNNER", "etl-service")
    from anon_dagster.release.governance.access import custody_context

    with custody_context(run="run-42", why="input of tiny/anonymized"):
        tables(stored_release)
    log = AuditLog(stored_release.keystore)
    reads = [e["event"] for e in log.entries() if e["event"]["action"] == "read"]
    assert [(r["step"], r["partition"], r["actor"], r["run"], r["why"]) for r in reads] == [
        ("raw", "2023", "etl-service", "run-42", "input of tiny/anonymized"),
        ("raw", "2024", "etl-service", "run-42", "input of tiny/anonymized"),
        ("pseudonymized", "2023", "etl-service", "run-42", "input of tiny/anonymized"),
        ("pseudonymized", "2024", "etl-service", "run-42", "input of tiny/anonymized")]
    capsys.readouterr()
    assert main(["audit", "show", "--action", "read"]) == 0
    assert "4 of 4 entries shown" in capsys.readouterr().out
    lines = log.path.read_text().splitlines()
    lines[1] = lines[1].replace('"partition": "2024"', '"partition": "2025"')
    log.path.write_text("\n".join(lines) + "\n")
    with pytest.raises(AuditTampered) as err:
        log.verify()
    assert err.value.kind == "edited" and err.value.line == 2
    assert main(["audit", "verify"]) == 1
    with pytest.raises(AuditTampered):  # a read of personal data is refused while custody is broken
        tables(stored_release)


def test_the_cli_erases_from_a_file_and_lists_without_the_identifier(stored_release, tmp_path, capsys):
    ids = tmp_path / "ids.txt"
    ids.write_text(f"{PERSON}\nPID000050\n")
    base = str(stored_release.store.base)
    assert main(["erase", str(stored_release.spec_path), "--file", str(ids), "--storage", base,
                 "--reason", "two requests"]) == 0
    out = capsys.readouterr().out
    assert PERSON not in out and "PID000050" not in out and out.count("erased") == 2
    assert main(["erase", str(stored_release.spec_path), "--list"]) == 0
    listed = capsys.readouterr().out
    assert listed.count("person ") == 2 and PERSON not in listed
    assert main(["erase", str(stored_release.spec_path), "--person", PERSON, "--storage", base]) == 2


def test_a_key_rotation_is_in_custody(tmp_path, monkeypatch):
    from anon_dagster.pseudonymize import open_keystore

    path = tmp_path / "keys" / "keystore.json"
    monkeypatch.delenv("ANON_DAGSTER_MASTER_KEY", raising=False)
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_PASSPHRASE", "a long test passphrase")
    assert main(["keys", "init", "--path", str(path), "--scrypt-n", "1024", "--reason", "new deployment"]) == 0
    assert main(["keys", "rotate", "--path", str(path), "--reason", "yearly rotation"]) == 0
    ks = open_keystore(str(path), passphrase="a long test passphrase")
    ops = [(e["event"]["action"], e["event"]["why"], e["event"].get("version")) for e in AuditLog(ks).entries()]
    assert ops == [("key-init", "new deployment", 1), ("key-rotate", "yearly rotation", 2)]


def test_only_the_suppressed_persons_rows_are_dropped_and_rows_without_a_person_stay(stored_release):
    from anon_dagster.release.governance.suppression import add_suppressed, drop_suppressed

    spec, ks = stored_release.spec, stored_release.keystore
    raw = pd.DataFrame({"pid": ["PID000001", None, " PID000001 ", "pid000001", ""], "age": [30, 31, 42, 43, 30]})
    assert drop_suppressed(spec, raw, ks) is raw  # nobody suppressed yet
    add_suppressed(ks, spec.release, {str(person_pseudonyms(spec, pd.Series(["PID000001"]), ks)[0])})
    # " PID000001 " is the same person once trimmed (the pid block's default normalize: trim, NFC, case kept)
    assert drop_suppressed(spec, raw, ks)["age"].tolist() == [31, 43, 30]


def test_a_person_erased_while_a_run_is_past_its_pseudonymize_step_is_not_published(stored_release):
    """The run read and pseudonymized the person before the erasure; its publication step, the
    last to look, refuses rather than publish them, and a new run of the partition publishes."""
    from anon_dagster.release.publication import PublicationRefused, publish_release

    spec, ks, ledger = stored_release.spec, stored_release.keystore, stored_release.ledger
    early = pipeline.run_gate(spec, partition="2023", keystore=ks, ledger=ledger)
    assert early.evaluation.passed
    pseudonym = str(person_pseudonyms(spec, pd.Series([PERSON]), ks)[0])
    assert pseudonym in set(early.anonymized.data[gate.LINKAGE_COLUMN])
    erase(spec, stored_release.store.base, persons=[PERSON], keystore=ks, ledger=ledger, why="request of the person")
    with pytest.raises(PublicationRefused, match="erased since this run read its data") as refused:
        publish_release(spec, early.evaluation, anonymized=gate.attach_record(early.anonymized.data, early.anonymized.record),
                        pseudonymized=early.pseudonymized.data, ledger=ledger, keystore=ks)
    assert PERSON not in str(refused.value) and pseudonym not in str(refused.value)
    assert not any(e.partition == "2023" for e in ledger.entries(release=spec.release) if e.status == "published")
    again = publish_partition(spec, partition="2023", ledger=ledger, keystore=ks)
    assert again.published is not None
