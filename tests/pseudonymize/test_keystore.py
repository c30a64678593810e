"""Key store: sealing, opening, refusing bad files and locations, rotation, derivation, CLI."""

from __future__ import annotations

import base64
import json
import logging
import os
import pickle
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF, HKDFExpand

from anon_dagster.cli import main
from anon_dagster.errors import SecretError
from anon_dagster.pseudonymize import (
    EnvKeyBackend,
    ExternalKeyBackend,
    FileKeyBackend,
    KeyInfo,
    KeyStore,
    check_location,
    init_keystore,
    open_keystore,
)

pytestmark = pytest.mark.filterwarnings("ignore:.*scrypt n=.*is weak")

FAST_N = 2**10  # tests only: the default (2**17) costs 0.3 s per unsealing
PASS = "correct horse battery staple"


@pytest.fixture
def store_path(tmp_path) -> Path:
    return tmp_path / "vault" / "keystore.json"


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ----- creating and opening -------------------------------------------------------------------


def test_create_then_open_gives_the_same_derived_keys(store_path):
    ks = init_keystore(store_path, PASS, scrypt_n=FAST_N)
    again = open_keystore(store_path, passphrase=PASS)
    assert again.derive_key("ledger-linkage") == ks.derive_key("ledger-linkage")
    assert [k.version for k in again.versions()] == [1]
    assert stat.S_IMODE(store_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store_path.parent.stat().st_mode) == 0o700


def test_file_holds_no_plain_key(store_path):
    ks = init_keystore(store_path, PASS, scrypt_n=FAST_N)
    master = ks.backend._keys[1]
    text = store_path.read_bytes()
    for form in (master, master.hex().encode(), base64.b64encode(master)):
        assert form not in text


def test_create_refuses_to_overwrite(store_path):
    init_keystore(store_path, PASS, scrypt_n=FAST_N)
    before = store_path.read_bytes()
    with pytest.raises(SecretError, match="already exists"):
        init_keystore(store_path, PASS, scrypt_n=FAST_N)
    assert store_path.read_bytes() == before


def test_folder_path_means_keystore_json_inside(tmp_path):
    folder = tmp_path / "keys"
    folder.mkdir()
    ks = init_keystore(folder, PASS, scrypt_n=FAST_N)
    assert (folder / "keystore.json").exists()
    assert open_keystore(folder, passphrase=PASS).derive_key("x") == ks.derive_key("x")


def test_wrong_passphrase_is_a_clear_error_and_writes_nothing(store_path):
    init_keystore(store_path, PASS, scrypt_n=FAST_N)
    before = snapshot(store_path.parent)
    with pytest.raises(SecretError, match="wrong passphrase") as err:
        open_keystore(store_path, passphrase="not the passphrase")
    assert PASS not in str(err.value) and "not the passphrase" not in str(err.value)
    assert snapshot(store_path.parent) == before


def _mutations():
    def flip_ciphertext(doc):
        ct = bytearray(base64.b64decode(doc["sealed"]["ciphertext"]))
        ct[5] ^= 0x01
        doc["sealed"]["ciphertext"] = base64.b64encode(bytes(ct)).decode()

    def edit_created(doc):  # metadata is the seal's associated data
        doc["keys"][0]["created"] = "2001-01-01T00:00:00+00:00"

    def add_version(doc):
        doc["keys"].append({"version": 2, "created": None})

    def drop_sealed(doc):
        del doc["sealed"]

    def bad_nonce(doc):
        doc["sealed"]["nonce"] = "###"

    return [flip_ciphertext, edit_created, add_version, drop_sealed, bad_nonce]


@pytest.mark.parametrize("mutate", _mutations(), ids=lambda f: f.__name__)
def test_corrupted_file_is_a_clear_error_and_writes_nothing(store_path, mutate):
    init_keystore(store_path, PASS, scrypt_n=FAST_N)
    doc = json.loads(store_path.read_text())
    mutate(doc)
    store_path.write_text(json.dumps(doc))
    os.chmod(store_path, 0o600)
    before = snapshot(store_path.parent)
    with pytest.raises(SecretError, match="modified or is corrupted|corrupted|not a readable") as err:
        open_keystore(store_path, passphrase=PASS)
    assert str(store_path) in str(err.value)
    assert snapshot(store_path.parent) == before


@pytest.mark.parametrize("content", [b"", b"{not json", b"[]", b'{"format": "something else"}', os.urandom(64)])
def test_garbage_file_is_refused(store_path, content):
    store_path.parent.mkdir(parents=True)
    store_path.write_bytes(content)
    os.chmod(store_path, 0o600)
    with pytest.raises(SecretError, match="not a readable anon_dagster key store"):
        open_keystore(store_path, passphrase=PASS)
    assert store_path.read_bytes() == content


def test_missing_file_says_how_to_create_one(store_path):
    with pytest.raises(SecretError, match="keys init"):
        open_keystore(store_path, passphrase=PASS)


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_group_or_world_readable_file_is_refused(store_path, mode):
    init_keystore(store_path, PASS, scrypt_n=FAST_N)
    os.chmod(store_path, mode)
    with pytest.raises(SecretError, match="chmod 600"):
        open_keystore(store_path, passphrase=PASS)


def test_missing_passphrase_is_refused(store_path):
    init_keystore(store_path, PASS, scrypt_n=FAST_N)
    with pytest.raises(SecretError, match="ANON_DAGSTER_KEYSTORE_PASSPHRASE"):
        open_keystore(store_path)


# ----- location rule --------------------------------------------------------------------------


@pytest.mark.parametrize("folder", ["data", "Published", "publication", "exports"])
def test_location_inside_data_or_publication_folder_is_refused(tmp_path, folder):
    path = tmp_path / folder / "keys" / "keystore.json"
    with pytest.raises(SecretError, match="data or publication folder"):
        init_keystore(path, PASS, scrypt_n=FAST_N)
    assert not path.exists()


def test_location_inside_a_repository_is_refused_unless_dev(tmp_path):
    repo = tmp_path / "project"
    (repo / ".git").mkdir(parents=True)
    path = repo / ".anon_dagster" / "dev-keystore" / "keystore.json"
    with pytest.raises(SecretError, match="inside the repository"):
        init_keystore(path, PASS, scrypt_n=FAST_N)
    assert not path.exists()
    init_keystore(path, PASS, scrypt_n=FAST_N, dev=True)  # the explicit development override
    assert path.exists()


def test_location_inside_dagster_home_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dh"))
    with pytest.raises(SecretError, match="DAGSTER_HOME"):
        check_location(tmp_path / "dh" / "keys" / "keystore.json")
    check_location(tmp_path / "elsewhere" / "keystore.json")  # no error


def test_dev_keystore_is_created_in_the_project_with_a_warning(tmp_path, monkeypatch, caplog):
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    monkeypatch.chdir(project / "src")
    with pytest.raises(SecretError, match="ANON_DAGSTER_DEV_KEYSTORE=1"):
        open_keystore()
    monkeypatch.setenv("ANON_DAGSTER_DEV_KEYSTORE", "1")
    monkeypatch.setattr("anon_dagster.pseudonymize.keystore.file.DEFAULT_SCRYPT_N", FAST_N)
    with caplog.at_level(logging.WARNING, logger="anon_dagster.pseudonymize.keystore"):
        ks = open_keystore()
    assert "DEVELOPMENT KEY STORE" in caplog.text
    assert ks.dev and ks.state_dir == project / ".anon_dagster" / "dev-keystore"
    assert (ks.state_dir / "keystore.json").exists()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="anon_dagster.pseudonymize.keystore"):
        assert open_keystore().derive_key("x") == ks.derive_key("x")
    assert "DEVELOPMENT KEY STORE" in caplog.text  # on every use, not only on creation


# ----- rotation and derivation ----------------------------------------------------------------


def test_rotate_adds_a_version_and_keeps_the_old_one(store_path):
    ks = init_keystore(store_path, PASS, scrypt_n=FAST_N)
    k1 = ks.derive_key("data-at-rest")
    info = ks.rotate()
    assert info.version == 2 and ks.current_version == 2
    again = open_keystore(store_path, passphrase=PASS)
    assert [k.version for k in again.versions()] == [1, 2]
    assert again.derive_key("data-at-rest", version=1) == k1
    assert again.derive_key("data-at-rest") != k1
    assert again.derive_key("data-at-rest") == ks.derive_key("data-at-rest", version=2)


def test_derive_key_is_hkdf_of_the_master_key_with_the_documented_info():
    master = bytes(range(32))
    ks = KeyStore(EnvKeyBackend(base64.b64encode(master).decode()))
    expected = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                    info=b'["anon_dagster","internal","ledger-linkage",1]').derive(master)
    assert ks.derive_key("ledger-linkage") == expected
    hmac_key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                    info=b'["anon_dagster","pseudonym","hmac","research",1]').derive(master)
    assert ks.pseudonym_key("hmac", "research") == hmac_key
    assert len(ks.pseudonym_key("aes_siv", "research")) == 64


def test_derived_keys_differ_per_purpose_and_family():
    ks = KeyStore(EnvKeyBackend(base64.b64encode(os.urandom(32)).decode()))
    keys = {ks.derive_key(p) for p in ("ledger-linkage", "data-at-rest", "audit-log")}
    keys |= {ks.pseudonym_key("hmac", p) for p in ("ledger-linkage", "research")}
    assert len(keys) == 5
    with pytest.raises(SecretError, match="version 7"):
        ks.derive_key("x", version=7)


# ----- environment and external backends ------------------------------------------------------


def test_env_backend_single_and_versioned_keys(monkeypatch):
    k1, k2 = os.urandom(32), os.urandom(32)
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", base64.b64encode(k1).decode())
    single = open_keystore()
    assert single.backend.kind == "environment" and single.current_version == 1
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY",
                       f"1:{base64.b64encode(k1).decode()}, v2:{base64.b64encode(k2).decode()}")
    both = open_keystore()
    assert both.current_version == 2
    assert both.derive_key("x", 1) == single.derive_key("x", 1)
    with pytest.raises(SecretError, match="rotate them where they are managed"):
        both.rotate()


@pytest.mark.parametrize("value, message", [
    (base64.b64encode(b"short").decode(), "at least 32"),
    ("!!!not-base64!!!", "not valid base64"),
    ("1:" + base64.b64encode(b"k" * 32).decode() + ",1:" + base64.b64encode(b"j" * 32).decode(), "twice"),
    ("x:" + base64.b64encode(b"k" * 32).decode(), "version"),
])
def test_env_backend_rejects_bad_keys_without_echoing_them(value, message):
    with pytest.raises(SecretError, match=message) as err:
        EnvKeyBackend(value)
    for part in value.replace(",", ":").split(":"):
        if len(part) > 3:
            assert part not in str(err.value)


class FakeTransit(ExternalKeyBackend):
    """Stands in for Vault Transit: holds keys 'remotely' and only answers MACs."""

    def __init__(self):
        super().__init__()
        self._remote = {1: os.urandom(32)}
        self.calls = 0

    def versions(self):
        return [KeyInfo(v, None, self.kind) for v in sorted(self._remote)]

    def root_mac(self, version, label):
        import hmac as _hmac
        self.calls += 1
        return _hmac.new(self._remote[version], label, "sha256").digest()

    def rotate(self):
        self._remote[max(self._remote) + 1] = os.urandom(32)
        return self.versions()[-1]


def test_external_backend_expands_locally_from_one_remote_mac_per_version():
    backend = FakeTransit()
    ks = KeyStore(backend)
    a, b = ks.derive_key("ledger-linkage"), ks.derive_key("audit-log")
    assert a != b and backend.calls == 1
    import hmac as _hmac
    prk = _hmac.new(backend._remote[1], ExternalKeyBackend.ROOT_LABEL, "sha256").digest()
    expected = HKDFExpand(algorithm=hashes.SHA256(), length=32,
                          info=b'["anon_dagster","internal","ledger-linkage",1]').derive(prk)
    assert a == expected
    ks.rotate()
    # an ordinary subkey follows the new version; the ledger's linkage key is pinned to version 1
    assert ks.current_version == 2 and ks.derive_key("audit-log") != b
    assert ks.derive_key("ledger-linkage") == a


def test_keystore_cannot_be_pickled(store_path):
    ks = init_keystore(store_path, PASS, scrypt_n=FAST_N)
    with pytest.raises(TypeError):
        pickle.dumps(ks)
    with pytest.raises(TypeError):
        pickle.dumps(ks.backend)
    assert "keystore.json" in repr(ks) and "versions [1]" in repr(ks)


def test_open_keystore_refuses_a_master_key_beside_a_key_file(store_path, monkeypatch):
    init_keystore(store_path, PASS, scrypt_n=FAST_N)
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE", str(store_path))
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_PASSPHRASE", PASS)
    assert isinstance(open_keystore().backend, FileKeyBackend)
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", base64.b64encode(os.urandom(32)).decode())
    # no precedence: two sources are two key stores (tests/pseudonymize/test_key_sources.py)
    with pytest.raises(SecretError, match="ANON_DAGSTER_MASTER_KEY and ANON_DAGSTER_KEYSTORE"):
        open_keystore()
    monkeypatch.delenv("ANON_DAGSTER_KEYSTORE")
    assert isinstance(open_keystore().backend, EnvKeyBackend)


# ----- CLI ------------------------------------------------------------------------------------


def test_cli_init_rotate_list(store_path, monkeypatch, capsys):
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_PASSPHRASE", PASS)
    assert main(["keys", "init", "--path", str(store_path), "--scrypt-n", str(FAST_N)]) == 0
    assert "key version 1" in capsys.readouterr().out
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE", str(store_path))
    assert main(["keys", "rotate"]) == 0
    assert "key version 2" in capsys.readouterr().out
    assert main(["keys", "list", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert [k["version"] for k in listing["keys"]] == [1, 2]
    assert [k["current"] for k in listing["keys"]] == [False, True]
    fps = [k["fingerprint"] for k in listing["keys"]]
    assert len(set(fps)) == 2 and all(len(f) == 16 for f in fps)
    assert main(["keys", "list"]) == 0
    assert "current" in capsys.readouterr().out


def test_cli_wrong_passphrase_exits_2_with_one_line(store_path, monkeypatch, capsys):
    init_keystore(store_path, PASS, scrypt_n=FAST_N)
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_PASSPHRASE", "nope")
    assert main(["keys", "list", "--path", str(store_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "wrong passphrase" in err and "nope" not in err


def test_cli_init_needs_a_location(capsys):
    assert main(["keys", "init"]) == 2
    assert "--path" in capsys.readouterr().err


def test_a_stale_rotation_is_refused(store_path):
    first = init_keystore(store_path, PASS, scrypt_n=FAST_N)
    second = open_keystore(store_path, passphrase=PASS)
    assert first.rotate().version == 2
    with pytest.raises(SecretError, match="changed since it was opened"):
        second.rotate()  # would otherwise write a different "version 2"
    again = open_keystore(store_path, passphrase=PASS)
    assert again.derive_key("x", 2) == first.derive_key("x", 2)
    assert not [p for p in store_path.parent.iterdir() if p.name.endswith(".new")]


def test_dev_store_of_a_checkout_under_a_data_named_folder_is_allowed(tmp_path):
    repo = tmp_path / "data" / "src" / "project"
    (repo / ".git").mkdir(parents=True)
    dev_file = repo / ".anon_dagster" / "dev-keystore" / "keystore.json"
    check_location(dev_file, dev=True)  # the repository sits in a folder named data: not its data
    with pytest.raises(SecretError, match="data or publication folder"):
        check_location(repo / "data" / "keystore.json", dev=True)  # the project's own data folder
    with pytest.raises(SecretError):
        check_location(dev_file)  # without the development switch the repository rule applies
