"""One key source for every entry point, and a ledger linkage key that rotation does not change.

With two key sources configured (a master key in the environment *and* a key file, or Vault),
the CLI and Dagster used to pick different ones: no pseudonym in common, and a composition
check that saw none of the other's publications. Now every way of opening the key store refuses,
naming the variables. And ``keys rotate`` used to change the ledger's linkage key, so a release
after a rotation looked like other people to the composition check.
"""

from __future__ import annotations

import base64
import json

import pytest

from anon_dagster.cli import main
from anon_dagster.errors import SecretError
from anon_dagster.pseudonymize import KeyStore, init_keystore, open_keystore
from anon_dagster.pseudonymize.keystore import EnvKeyBackend, FileKeyBackend, key_sources
from tests.support.keys import MASTER_KEY
from tests.support.linkage import composing_release, two_years

pytestmark = pytest.mark.filterwarnings("ignore:.*scrypt n=.*is weak")

FAST_N = 2**10
PASS = "correct horse battery staple"
OTHER_KEY = base64.b64encode(bytes(range(100, 132))).decode()
VAULT_TOKEN = "s.vault-token-never-shown"


@pytest.fixture
def store(tmp_path, monkeypatch):
    """An encrypted key file named by ANON_DAGSTER_KEYSTORE (with its passphrase)."""
    path = tmp_path / "keys" / "keystore.json"
    init_keystore(path, PASS, scrypt_n=FAST_N)
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE", str(path))
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_PASSPHRASE", PASS)
    return path


def _secrets_absent(text: str) -> None:
    for secret in (MASTER_KEY, OTHER_KEY, PASS, VAULT_TOKEN, base64.b64decode(MASTER_KEY).hex()):
        assert secret not in text


# ----- the rule -------------------------------------------------------------------------------


@pytest.mark.parametrize("variables", [
    ("ANON_DAGSTER_MASTER_KEY", "ANON_DAGSTER_KEYSTORE"),
    ("ANON_DAGSTER_MASTER_KEY", "ANON_DAGSTER_VAULT_KEY"),
    ("ANON_DAGSTER_VAULT_KEY", "ANON_DAGSTER_KEYSTORE"),
    ("ANON_DAGSTER_MASTER_KEY", "ANON_DAGSTER_VAULT_KEY", "ANON_DAGSTER_KEYSTORE"),
])
def test_two_configured_sources_are_refused_naming_them(store, monkeypatch, variables):
    if "ANON_DAGSTER_KEYSTORE" not in variables:
        monkeypatch.delenv("ANON_DAGSTER_KEYSTORE")
    if "ANON_DAGSTER_MASTER_KEY" in variables:
        monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", MASTER_KEY)
    if "ANON_DAGSTER_VAULT_KEY" in variables:
        monkeypatch.setenv("ANON_DAGSTER_VAULT_KEY", "pseudo")
        monkeypatch.setenv("VAULT_ADDR", "http://127.0.0.1:9")  # never contacted: refused before
        monkeypatch.setenv("VAULT_TOKEN", VAULT_TOKEN)
    with pytest.raises(SecretError) as exc:
        open_keystore()
    message = str(exc.value)
    assert all(v in message for v in variables) and "\n" not in message
    _secrets_absent(message)


def test_a_blank_master_key_beside_a_key_file_is_refused_not_ignored(store, monkeypatch):
    """Set to spaces by a broken template: the operator meant a source, so it counts as one."""
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", "   ")
    with pytest.raises(SecretError, match="ANON_DAGSTER_MASTER_KEY and ANON_DAGSTER_KEYSTORE"):
        open_keystore()


def test_an_empty_variable_is_no_source(store, monkeypatch):
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", "")
    monkeypatch.setenv("ANON_DAGSTER_VAULT_KEY", "")
    assert isinstance(open_keystore().backend, FileKeyBackend)


def test_an_explicit_path_beside_a_master_key_is_refused(store, monkeypatch):
    monkeypatch.delenv("ANON_DAGSTER_KEYSTORE")
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", MASTER_KEY)
    with pytest.raises(SecretError, match="ANON_DAGSTER_MASTER_KEY and a key store path given explicitly"):
        open_keystore(store, passphrase=PASS)


def test_an_explicit_path_to_another_key_file_than_the_variable_is_refused(store, tmp_path):
    other = tmp_path / "other" / "keystore.json"
    init_keystore(other, PASS, scrypt_n=FAST_N)
    with pytest.raises(SecretError, match="ANON_DAGSTER_KEYSTORE and a key store path given explicitly"):
        open_keystore(other, passphrase=PASS)


@pytest.mark.parametrize("spelling", ["file", "folder", "folder/", "dotdot", "relative"])
def test_the_same_key_file_spelled_otherwise_is_one_source(store, monkeypatch, spelling):
    monkeypatch.chdir(store.parent.parent)
    path = {"file": str(store), "folder": str(store.parent), "folder/": f"{store.parent}/",
            "dotdot": str(store.parent / ".." / "keys" / "keystore.json"), "relative": "keys/keystore.json"}[spelling]
    assert key_sources(path) == ["ANON_DAGSTER_KEYSTORE"]
    assert open_keystore(path, passphrase=PASS).fingerprint(1) == open_keystore().fingerprint(1)


def test_one_source_opens_as_before(store, monkeypatch):
    assert isinstance(open_keystore().backend, FileKeyBackend)
    monkeypatch.delenv("ANON_DAGSTER_KEYSTORE")
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", MASTER_KEY)
    assert isinstance(open_keystore().backend, EnvKeyBackend)


# ----- every CLI entry point ------------------------------------------------------------------


def _cli_calls(tmp_path, store) -> dict[str, list[str]]:
    spec = str(composing_release(tmp_path, two_years()))
    return {
        "check": ["check", spec, "--partition", "2023", "--ledger", str(tmp_path / "l.sqlite")],
        "compose": ["compose", spec, "--partition", "2023", "--ledger", str(tmp_path / "l.sqlite")],
        "anonymize": ["anonymize", spec, "--partition", "2023", "--output", str(tmp_path / "out.parquet")],
        "keys list": ["keys", "list"],
        "keys rotate": ["keys", "rotate"],
        "keys list --path": ["keys", "list", "--path", str(store)],
        "reidentify": ["reidentify", "--method", "aes_siv", "--purpose", "care", "--actor", "a", "--reason", "r",
                       "v1:AAAAAAAAAAAAAAAAAAAAAAAA"],
        "audit verify": ["audit", "verify"],
    }


@pytest.mark.parametrize("command", ["check", "compose", "anonymize", "keys list", "keys rotate",
                                     "keys list --path", "reidentify", "audit verify"])
def test_every_command_refuses_two_sources_in_one_line(tmp_path, store, monkeypatch, capsys, command):
    args = _cli_calls(tmp_path, store)[command]
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", MASTER_KEY)
    before = store.read_bytes()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "ANON_DAGSTER_MASTER_KEY" in err and "ANON_DAGSTER_KEYSTORE" in err
    _secrets_absent(err)
    assert store.read_bytes() == before  # keys rotate rotated nothing
    assert not (tmp_path / "out.parquet").exists()


# ----- the ledger linkage key outlives rotation -----------------------------------------------


def test_rotation_leaves_the_linkage_key_and_moves_every_other_key(store):
    ks = open_keystore()
    linkage, audit = ks.derive_key("ledger-linkage"), ks.derive_key("audit-log")
    pseudonym = ks.pseudonym_key("hmac", "research")
    ks.rotate()
    ks.rotate()
    again = open_keystore()  # from disk: versions 1, 2, 3
    assert again.current_version == 3
    assert again.derive_key("ledger-linkage") == linkage
    assert again.derive_key("audit-log") != audit and again.pseudonym_key("hmac", "research") != pseudonym
    # asked for explicitly, another version's linkage key is another key (never used implicitly)
    assert again.derive_key("ledger-linkage", version=3) != linkage


def test_a_master_key_list_gets_the_linkage_key_of_its_version_1(monkeypatch):
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", MASTER_KEY)
    alone = open_keystore().derive_key("ledger-linkage")
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", f"2:{OTHER_KEY},1:{MASTER_KEY}")
    assert open_keystore().derive_key("ledger-linkage") == alone


def test_a_store_without_version_1_refuses_the_linkage_key(monkeypatch):
    """Retiring version 1 would silently give the ledger another key: refused instead."""
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", f"2:{OTHER_KEY}")
    ks = open_keystore()
    assert len(ks.derive_key("audit-log")) == 32  # other keys follow the current version
    with pytest.raises(SecretError, match="key version 1") as exc:
        ks.derive_key("ledger-linkage")
    _secrets_absent(str(exc.value))


def test_a_release_that_composes_is_refused_by_a_store_without_version_1(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", f"2:{OTHER_KEY}")
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_STATE", str(tmp_path / "keystate"))
    ledger = str(tmp_path / "l.sqlite")
    assert main(["ledger", "init", "--ledger", ledger]) == 0  # the ledger needs no version 1
    spec = str(composing_release(tmp_path, two_years()))
    capsys.readouterr()
    assert main(["check", spec, "--partition", "2023", "--ledger", ledger]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "restore key version 1" in err


@pytest.mark.parametrize("purpose", ["Ledger-Linkage", " ledger-linkage", "ledger_linkage", "LEDGER-LINKAGE\n"])
def test_another_spelling_of_the_linkage_purpose_is_refused(purpose):
    """It would get an unpinned key that follows rotation: a silent second linkage."""
    ks = KeyStore(EnvKeyBackend(MASTER_KEY))
    with pytest.raises(SecretError, match="'ledger-linkage'"):
        ks.derive_key(purpose)


def test_keys_list_names_the_linkage_version(store, monkeypatch, capsys):
    assert main(["keys", "rotate"]) == 0
    assert "stays on key version 1" in capsys.readouterr().out
    assert main(["keys", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["keys"]
    assert [(r["version"], r["ledger_linkage"], r["current"]) for r in rows] == [(1, True, False), (2, False, True)]
    assert main(["keys", "list"]) == 0
    assert "older, ledger linkage" in capsys.readouterr().out
    monkeypatch.delenv("ANON_DAGSTER_KEYSTORE")
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", f"2:{OTHER_KEY}")
    assert main(["keys", "list"]) == 0
    assert "warning: key version 1" in capsys.readouterr().err

