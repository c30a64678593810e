"""Intermediate tables at rest: the encrypted file format, owner-only files and folders, refusals naming the file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster import storage
from anon_dagster.errors import DataError, SecretError
from anon_dagster.pseudonymize import EnvKeyBackend, KeyStore
from anon_dagster.storage import TableStore, decrypt, encrypt
from tests.support.keys import MASTER_KEY

FIXTURES = Path(__file__).parent / "fixtures" / "storage"
KEY = bytes(range(32))
NAME = ("clinic", "raw")


def frame() -> pd.DataFrame:
    return pd.DataFrame({"pid": ["P-00017", "P-00018"], "age": [34, 71], "region": ["N", "S"]})


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=2048), st.binary(min_size=1, max_size=64))
def test_encryption_round_trips_and_hides_the_plaintext(data, aad):
    blob = encrypt(data, KEY, aad)
    assert decrypt(blob, KEY, aad) == data
    assert len(blob) == len(data) + 8 + 12 + 16  # magic, nonce, GCM tag
    if len(data) >= 16:
        assert data not in blob


def test_tampered_moved_or_rekeyed_bytes_do_not_decrypt():
    key = os.urandom(32)
    blob = encrypt(b"parquet bytes of personal data", key, b"r/raw|2024")
    flipped = bytearray(blob)
    flipped[-1] ^= 1
    for bad_blob, bad_key, aad in ((bytes(flipped), key, b"r/raw|2024"), (blob, key, b"r/raw|2025"),
                                   (blob, os.urandom(32), b"r/raw|2024"), (b"PAR1" + blob, key, b"r/raw|2024")):
        with pytest.raises(DataError, match="^the-file: "):
            decrypt(bad_blob, bad_key, aad, where="the-file")


def test_a_file_written_by_an_earlier_version_still_decrypts():
    # written by the IO manager before the format moved into the core, under the data-at-rest
    # subkey of the tests' master key, for the table clinic/raw of partition 2024
    key = KeyStore(EnvKeyBackend(MASTER_KEY)).derive_key(storage.DATA_AT_REST_PURPOSE)
    store = TableStore(FIXTURES)
    assert store.path(NAME, "2024", True).read_bytes().startswith(storage.MAGIC)
    back = store.read(NAME, "2024", lambda: key, encrypted_only=True)
    pd.testing.assert_frame_equal(back, frame())


def test_an_encrypted_table_round_trips_owner_only_in_private_folders(tmp_path):
    base = tmp_path / "storage"
    store = TableStore(base)
    path = store.write(NAME, "2024", frame(), KEY)
    assert path == base / "clinic" / "raw" / "2024.parquet.enc"
    blob = path.read_bytes()
    assert blob.startswith(b"ANONENC2") and b"P-00017" not in blob and b"PAR1" not in blob
    assert sorted(p.name for p in path.parent.iterdir()) == ["2024.parquet.enc"]  # no temporary left
    key_files = list(store.key_folder(NAME, "2024").iterdir())
    assert [f.name for f in key_files] == [f"{blob[8:24].hex()}.key"] and mode(key_files[0]) == 0o600
    assert mode(path) == 0o600
    assert [mode(f) for f in (base, base / "clinic", base / "clinic" / "raw")] == [0o700] * 3
    pd.testing.assert_frame_equal(store.read(NAME, "2024", lambda: KEY), frame())


def test_without_a_key_the_table_is_clear_text_and_owner_only(tmp_path):
    base = tmp_path / "storage"
    base.mkdir(mode=0o755)
    store = TableStore(base)
    path = store.write(("clinic", "anonymized"), None, frame(), None)
    assert path.name == "__all__.parquet" and path.read_bytes().startswith(b"PAR1")
    assert mode(path) == 0o600 and mode(base) == 0o700 and mode(path.parent) == 0o700

    def no_key() -> bytes:
        raise AssertionError("a clear-text table needs no key")

    pd.testing.assert_frame_equal(store.read(("clinic", "anonymized"), None, no_key), frame())


@pytest.mark.parametrize("harm", ["wrong key", "moved to another partition", "moved to another table", "altered byte"])
def test_a_file_that_was_harmed_is_refused_naming_it(tmp_path, harm):
    store = TableStore(tmp_path)
    path = store.write(NAME, "2024", frame(), KEY)
    name, partition, key = NAME, "2024", KEY
    if harm == "wrong key":
        key = os.urandom(32)
    elif harm == "moved to another partition":
        partition = "2025"
        store.path(NAME, "2024", True).rename(store.path(NAME, partition, True))
    elif harm == "moved to another table":
        name = ("clinic", "pseudonymized")
        store.path(name, partition, True).parent.mkdir()
        store.path(NAME, "2024", True).rename(store.path(name, partition, True))
    else:
        blob = bytearray(path.read_bytes())
        blob[len(blob) // 2] ^= 1
        path.write_bytes(bytes(blob))
    where = store.path(name, partition, True)
    with pytest.raises(DataError, match="cannot be decrypted") as err:
        store.read(name, partition, lambda: key)
    assert str(err.value).startswith(f"{where}: ")


def test_where_encryption_is_required_a_clear_copy_is_never_read(tmp_path):
    store = TableStore(tmp_path)
    store.write(NAME, "2024", frame(), None)
    with pytest.raises(DataError, match="not materialized yet") as err:
        store.read(NAME, "2024", lambda: KEY, encrypted_only=True)
    assert str(err.value).startswith(f"{store.path(NAME, '2024', True)}: ")


def test_a_write_removes_the_copy_in_the_other_form(tmp_path):
    store = TableStore(tmp_path)
    store.write(NAME, "2024", frame(), None)
    store.write(NAME, "2024", frame().head(1), KEY)
    assert not store.path(NAME, "2024", False).exists()
    assert len(store.read(NAME, "2024", lambda: KEY)) == 1
    store.write(NAME, "2024", frame(), None)
    assert not store.path(NAME, "2024", True).exists()


def test_a_missing_table_is_named(tmp_path):
    with pytest.raises(DataError, match=r"__all__\.parquet: not materialized yet \(materialize clinic/raw first\)"):
        TableStore(tmp_path).read(NAME, None, lambda: KEY)


def test_the_policy_decides_whether_a_key_is_needed():
    def derive(purpose: str) -> bytes:
        assert purpose == "data-at-rest"
        return KEY

    def no_store(purpose: str) -> bytes:
        raise SecretError("no key store configured")

    assert storage.data_key("encrypted", derive) == KEY
    assert storage.data_key("encrypted-if-available", derive) == KEY
    assert storage.data_key("encrypted-if-available", no_store) is None
    assert storage.data_key("owner-only", derive) is None
    with pytest.raises(SecretError):
        storage.data_key("encrypted", no_store)


def test_a_stored_time_edited_to_extend_retention_leaves_the_table_unreadable(tmp_path):
    import json
    from datetime import UTC, datetime

    store = TableStore(tmp_path)
    store.write(NAME, "2024", frame(), KEY, stored_at=datetime(2026, 1, 1, 8, tzinfo=UTC))
    assert store.stored_at(NAME, "2024") == datetime(2026, 1, 1, 8, tzinfo=UTC)
    [key_file] = store.key_folder(NAME, "2024").iterdir()
    record = json.loads(key_file.read_text())
    key_file.write_text(json.dumps({**record, "stored_at": "2027-01-01T08:00:00Z"}))
    with pytest.raises(DataError, match="cannot be decrypted"):
        store.read(NAME, "2024", lambda: KEY, encrypted_only=True)


def test_a_rewrite_and_a_shred_destroy_the_key_of_the_version_they_replace(tmp_path):
    store = TableStore(tmp_path, on_read=lambda name, partition: None)
    first = store.write(NAME, "2024", frame(), KEY).read_bytes()
    copy = tmp_path / "copy.enc"
    copy.write_bytes(first)
    store.write(NAME, "2024", frame().head(1), KEY)
    with pytest.raises(DataError, match="data key is gone"):
        store.read_file(copy, NAME, "2024", lambda: KEY)
    assert len(store.read(NAME, "2024", lambda: KEY)) == 1
    shredded = store.shred(NAME, "2024")
    assert shredded.key_destroyed and shredded.files == [store.path(NAME, "2024", True)]
    assert store.partitions(NAME) == [] and not store.key_folder(NAME, "2024").exists()


def test_a_shred_deletes_the_engines_clear_text_folder_of_the_rows_and_no_other_partitions(tmp_path):
    """A step run on Spark stores a pointer here and its rows in clear-text parquet folders beside
    it: shredding the partition (retention, erasure) removes those folders too, the partition
    beside it untouched."""
    store = TableStore(tmp_path, on_read=lambda name, partition: None)
    store.write(NAME, "2024", frame(), KEY)
    store.write(NAME, "2025", frame(), KEY)
    for partition in ("2024", "2025"):
        rows = store.engine_folder(NAME, partition) / "run-1"
        rows.mkdir(parents=True)
        (rows / "part-00000.parquet").write_bytes(b"rows in clear text")
    shredded = store.shred(NAME, "2024")
    assert store.engine_folder(NAME, "2024") in shredded.files and not store.engine_folder(NAME, "2024").exists()
    assert (store.engine_folder(NAME, "2025") / "run-1" / "part-00000.parquet").exists()
    assert store.partitions(NAME) == ["2025"]
