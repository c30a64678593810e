"""Key store and pseudonyms from outside, on locations, specs and values of our own.

* locations refused: inside a git repository, inside a folder named like data or publication
  (any case, any depth), through a symbolic link that points into a repository; mode 0644;
* ``ANON_DAGSTER_MASTER_KEY`` (one key, several versions, a short or malformed key refused
  without echoing it);
* rotation: data made with version 1 keeps its prefix and is still reversible after a rotation
  (AES-SIV and tokens), HMAC pseudonyms of version 1 are reproduced with ``key_version=1``;
* normalization options (trim, case, NFC / none), null and blank identifiers stay null;
* ``pseudonymize()``'s summary and repr never hold key material (raw, hex, base64).
"""

from __future__ import annotations

import base64
import json
import os
import unicodedata

import pandas as pd
import pytest

from anon_dagster.errors import SecretError, UserError
from anon_dagster.pseudonymize import (
    AuditLog,
    init_keystore,
    open_keystore,
    pseudonym_pattern,
    pseudonymize,
    pseudonymize_values,
    reidentify,
    verify_audit_log,
)
from anon_dagster.spec import NormalizeSpec
from tests.support.specs import release_spec

PASSPHRASE = "ext2 passphrase 91c4 not used elsewhere"
pytestmark = pytest.mark.filterwarnings("ignore:.*scrypt n=.*is weak")
MASTER = bytes(range(7, 39))  # 32 bytes
MASTER2 = bytes(range(100, 140))  # 40 bytes


def fast_init(path):
    return init_keystore(path, PASSPHRASE, scrypt_n=2**10)


@pytest.mark.parametrize("folder", ["repo/sub", "data", "x/Published/y", "exports", "OUTPUT"])
def test_key_store_locations_that_travel_with_data_or_code_are_refused(tmp_path, folder):
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    where = tmp_path / folder
    where.mkdir(parents=True, exist_ok=True)
    with pytest.raises(SecretError) as exc:
        fast_init(where / "keys.json")
    assert "refused" in str(exc.value)
    assert not (where / "keys.json").exists()


def test_a_symlink_into_a_repository_is_judged_by_where_it_points(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    safe = tmp_path / "secure"
    safe.mkdir()
    (safe / "keys.json").symlink_to(repo / "keys.json")
    with pytest.raises(SecretError, match="repository"):
        fast_init(safe / "keys.json")
    assert not (repo / "keys.json").exists()


def test_mode_0644_is_refused_with_the_fix(tmp_path):
    path = tmp_path / "secure" / "keys.json"
    path.parent.mkdir()
    fast_init(path)
    assert os.stat(path).st_mode & 0o777 == 0o600
    open_keystore(path, passphrase=PASSPHRASE)  # opens as created
    os.chmod(path, 0o644)
    with pytest.raises(SecretError) as exc:
        open_keystore(path, passphrase=PASSPHRASE)
    assert "chmod 600" in str(exc.value)
    assert PASSPHRASE not in str(exc.value)


def test_master_key_from_the_environment(monkeypatch):
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", base64.b64encode(MASTER).decode())
    one = open_keystore()
    assert [k.version for k in one.versions()] == [1]
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY",
                       f"1:{base64.b64encode(MASTER).decode()},2:{base64.b64encode(MASTER2).decode()}")
    two = open_keystore()
    assert two.current_version == 2
    # version 1 derives the same subkey whether it is alone or beside version 2
    assert two.derive_key("audit-log", version=1) == one.derive_key("audit-log")
    assert two.derive_key("audit-log") != one.derive_key("audit-log")
    # the ledger's linkage key stays on version 1 when version 2 is added
    assert two.derive_key("ledger-linkage") == one.derive_key("ledger-linkage")
    assert len(two.derive_key("data-at-rest")) == 32


@pytest.mark.parametrize("value", [base64.b64encode(b"x" * 16).decode(), "not*base64!!", "1:" + "A" * 8, ","])
def test_bad_master_key_is_refused_without_echo(monkeypatch, value):
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", value)
    with pytest.raises(SecretError) as exc:
        open_keystore()
    assert "ANON_DAGSTER_MASTER_KEY" in str(exc.value)
    if len(value) > 3:
        assert value not in str(exc.value)


def spec_for(columns):
    return release_spec({**columns, "age": {"role": "quasi"}}, release="ext2keys",
                        anonymization={"method": "none", "k": 1})


def test_rotation_keeps_old_data_reversible_and_reproducible(tmp_path):
    store = fast_init(tmp_path / "secure" / "keys.json")
    spec = spec_for({
        "pid": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research"}},
        "case": {"role": "identifier", "pseudonymize": {"method": "aes_siv", "purpose": "care"}},
        "mail": {"role": "identifier", "pseudonymize": {"method": "token", "purpose": "follow"}},
        "name": {"role": "identifier"},
    })
    df = pd.DataFrame({"pid": ["P1", "P2", "P1"], "case": ["C-1", "C-2", "C-3"],
                       "mail": ["a@x", "b@x", "a@x"], "name": ["Ann", "Bob", "Ann"], "age": [30, 40, 30]})
    old, summary = pseudonymize(df, spec, store)
    assert "name" not in old.columns and summary.to_dict()["dropped"] == ["name"]
    assert old["pid"].str.startswith("v1:").all() and old["case"].str.startswith("v1:").all()
    assert old["pid"].iloc[0] == old["pid"].iloc[2] != old["pid"].iloc[1]
    store.rotate()
    reopened = open_keystore(tmp_path / "secure" / "keys.json", passphrase=PASSPHRASE)
    assert reopened.current_version == 2
    new, _ = pseudonymize(df, spec, reopened)
    assert new["pid"].str.startswith("v2:").all()
    assert set(new["pid"]).isdisjoint(old["pid"]) and set(new["case"]).isdisjoint(old["case"])
    assert (new["mail"] == old["mail"]).all()  # tokens are random per value and stay
    again_v1, _ = pseudonymize(df, spec, reopened, key_version=1)
    assert (again_v1["pid"] == old["pid"]).all()
    audit = AuditLog(reopened)
    publication = "ext2keys/all"  # scope release (the default), a release without partitions
    back = reidentify(list(old["case"]), keystore=reopened, method="aes_siv", purpose="care",
                      actor="custodian", reason="court order 12", audit=audit, publication=publication)
    assert list(back.identifiers) == ["C-1", "C-2", "C-3"]
    tokens = reidentify(list(old["mail"]), keystore=reopened, method="token", purpose="follow",
                        actor="custodian", reason="recall", audit=audit, publication=publication)
    assert list(tokens.identifiers) == ["a@x", "b@x", "a@x"]
    # a pseudonym of another purpose does not open under this one
    other = reidentify(list(old["case"][:1]), keystore=reopened, method="aes_siv", purpose="billing",
                       actor="custodian", reason="test", audit=audit, publication=publication)
    assert other.identifiers == [None] and other.not_found == 1
    with pytest.raises(UserError):  # HMAC is one-way, and the refusal is logged too
        reidentify(list(old["pid"]), keystore=reopened, method="hmac", purpose="research",
                   actor="custodian", reason="test", audit=audit)
    lines = audit.path.read_text().splitlines()
    assert len(lines) == 4 and "refused" in lines[-1]
    verify_audit_log(reopened, audit.path)


def test_normalization_options_and_missing_identifiers(tmp_path):
    store = fast_init(tmp_path / "secure" / "keys.json")
    composed, decomposed = "José", unicodedata.normalize("NFD", "José")
    assert composed != decomposed
    values = pd.Series([" ab12 ", "AB12", composed, decomposed, None, "", "   ", float("nan")],
                       index=[10, 11, 12, 13, 14, 15, 16, 17], dtype=object)
    upper, _ = pseudonymize_values(values, store, method="hmac", purpose="p",
                                   normalize=NormalizeSpec(trim=True, case="upper", unicode="NFC"))
    assert list(upper.index) == list(values.index)
    assert upper[10] == upper[11]
    assert upper[12] == upper[13]
    assert upper.loc[14:].isna().all(), "null, empty and blank identifiers must stay null"
    assert upper.loc[:13].str.fullmatch(pseudonym_pattern("hmac")).all()
    keep, _ = pseudonymize_values(values, store, method="hmac", purpose="p",
                                  normalize=NormalizeSpec(trim=False, case="keep", unicode="none"))
    assert keep[10] != keep[11]
    assert keep[12] != keep[13]
    assert keep.loc[[14, 15, 17]].isna().all()


def test_summary_and_outputs_hold_no_key_material(tmp_path):
    store = fast_init(tmp_path / "secure" / "keys.json")
    spec = spec_for({
        "pid": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research"}},
        "case": {"role": "identifier", "pseudonymize": {"method": "aes_siv", "purpose": "care"}},
    })
    df = pd.DataFrame({"pid": [f"P{i}" for i in range(50)], "case": [f"C{i}" for i in range(50)],
                       "age": range(50)})
    table, summary = pseudonymize(df, spec, store)
    secrets = [store.pseudonym_key("hmac", "research"), store.pseudonym_key("aes_siv", "care"),
               store.derive_key("ledger-linkage")]
    text = json.dumps(summary.to_dict(), default=str) + repr(summary) + repr(store) + table.to_csv()
    for key in secrets:
        for form in (key.hex(), key.hex().upper(), base64.b64encode(key).decode(),
                     base64.urlsafe_b64encode(key).decode().rstrip("=")):
            assert form not in text
        assert key.decode("latin-1") not in text
    assert PASSPHRASE not in text
    described = summary.to_dict()
    assert described["personal_data"] is True
    assert {c["method"] for c in described["columns"]} == {"hmac", "aes_siv"}
