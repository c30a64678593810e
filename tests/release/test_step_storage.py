"""Where and how the steps' tables are stored between runs."""

from __future__ import annotations

import pandas as pd
import pytest

from anon_dagster import storage
from anon_dagster.errors import DataError, SecretError
from anon_dagster.release.step_storage import (
    AT_REST_KEY,
    CLEAR_NOTE,
    ENCRYPTED_NOTE,
    read_step,
    step_policy,
    storage_folder,
    write_step,
)

KEY = bytes(range(32))


def test_the_folder_is_the_setting_else_under_dagster_home_else_the_fallback(tmp_path, monkeypatch):
    asked = []
    fallback = lambda: asked.append(1) or tmp_path / "instance"  # noqa: E731
    assert storage_folder(str(tmp_path / "given"), fallback) == tmp_path / "given"
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert storage_folder(None, fallback) == tmp_path / "home" / "anon_dagster" / "storage"
    assert asked == []  # the orchestrator's folder is asked for only when needed
    monkeypatch.delenv("DAGSTER_HOME")
    assert storage_folder(None, fallback) == tmp_path / "instance" / "anon_dagster"


def test_a_step_without_a_policy_is_owner_only():
    assert step_policy(None) == step_policy({}) == storage.OWNER_ONLY
    assert step_policy({AT_REST_KEY: storage.ENCRYPTED}) == storage.ENCRYPTED


def test_without_a_key_store_the_table_is_stored_in_clear_with_a_warning_and_never_read_as_encrypted(tmp_path):
    def no_keystore(purpose: str) -> bytes:
        raise AssertionError("no key store")

    df = pd.DataFrame({"a": [1, 2]})
    note, warning = write_step(tmp_path, ["visits", "raw"], "2024", df, storage.OWNER_ONLY, no_keystore)
    assert (note, warning) == (CLEAR_NOTE, None)
    pd.testing.assert_frame_equal(read_step(tmp_path, ["visits", "raw"], "2024", storage.OWNER_ONLY, no_keystore), df)
    with pytest.raises(DataError):
        read_step(tmp_path, ["visits", "raw"], "2024", storage.ENCRYPTED, lambda p: KEY)


def test_with_a_key_the_table_is_encrypted(tmp_path):
    df = pd.DataFrame({"a": [1, 2]})
    note, warning = write_step(tmp_path, ["visits", "anonymized"], None, df, storage.ENCRYPTED, lambda p: KEY)
    assert (note, warning) == (ENCRYPTED_NOTE, None)
    assert list((tmp_path / "visits" / "anonymized").iterdir())[0].name == "__all__.parquet.enc"
    got = read_step(tmp_path, ["visits", "anonymized"], None, storage.ENCRYPTED, lambda p: KEY)
    pd.testing.assert_frame_equal(got, df)


def test_encrypted_if_available_without_a_key_store_warns_naming_the_table(tmp_path):
    def missing(purpose: str) -> bytes:
        raise SecretError("no key store configured")

    note, warning = write_step(tmp_path, ["visits", "pseudonymized"], "2024", pd.DataFrame({"a": [1]}),
                               storage.ENCRYPTED_IF_AVAILABLE, missing)
    assert note == CLEAR_NOTE
    assert warning == ("visits/pseudonymized: no key store configured, personal data stored owner-only without "
                       "encryption at rest")
