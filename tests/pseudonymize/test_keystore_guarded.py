"""Opening the key store for an orchestrator: failures told without the file's content."""

from __future__ import annotations

import pytest

from anon_dagster.errors import SecretError
from anon_dagster.pseudonymize.keystore import ENV_KEYSTORE, ENV_PASSPHRASE, guarded
from anon_dagster.pseudonymize.keystore.guarded import keystore_variables, open_keystore_guarded


def test_a_failure_that_may_quote_the_file_is_told_by_its_type_only(monkeypatch):
    def fails(path, passphrase=None):
        raise ValueError("line 1: secret-looking-content")

    monkeypatch.setattr(guarded, "open_keystore", fails)
    with pytest.raises(SecretError) as exc:
        open_keystore_guarded("/keys/k.json", "pw")
    assert str(exc.value) == "the key store cannot be opened (ValueError)"


def test_the_key_stores_own_error_is_kept(monkeypatch):
    def refuses(path, passphrase=None):
        raise SecretError("no key store configured")

    monkeypatch.setattr(guarded, "open_keystore", refuses)
    with pytest.raises(SecretError, match="^no key store configured$"):
        open_keystore_guarded()


def test_only_the_variables_that_are_set_are_referred_to(monkeypatch):
    assert keystore_variables() == {"path": None, "passphrase": None}
    monkeypatch.setenv(ENV_KEYSTORE, "/keys/k.json")
    assert keystore_variables() == {"path": ENV_KEYSTORE, "passphrase": None}
    monkeypatch.setenv(ENV_PASSPHRASE, "pw")
    assert keystore_variables() == {"path": ENV_KEYSTORE, "passphrase": ENV_PASSPHRASE}
