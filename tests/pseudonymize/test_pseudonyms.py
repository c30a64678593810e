"""Pseudonym methods, table pseudonymization, unsafe methods refused, rotation helpers."""

from __future__ import annotations

import base64
import hmac
import json
import os
import re

import numpy as np
import pandas as pd
import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESSIV
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster.errors import DataError, SecretError, SpecError
from anon_dagster.pseudonymize import (
    PERSONAL_DATA_NOTICE,
    EnvKeyBackend,
    KeyStore,
    hmac_bridge,
    open_keystore,
    pseudonym_pattern,
    pseudonymize,
    pseudonymize_values,
    reidentify,
    rekey_aes_siv,
    rekey_token_vault,
)
from anon_dagster.pseudonymize.tokens import vault_path
from anon_dagster.spec import ENUMERATION_WARNING, NormalizeSpec
from tests.support.specs import release_spec

RAW = NormalizeSpec(trim=False, case="keep", unicode="none")


def env_keystore(tmp_path=None, versions: int = 1) -> KeyStore:
    text = ",".join(f"{v}:{base64.b64encode(os.urandom(32)).decode()}" for v in range(1, versions + 1))
    return KeyStore(EnvKeyBackend(text), tmp_path)


@pytest.fixture
def ks(tmp_path) -> KeyStore:
    return env_keystore(tmp_path / "state")


def spec_with(columns: dict) -> object:
    return release_spec(columns, release="r", source="raw.csv", publication="out.parquet")


# ----- determinism and separation -------------------------------------------------------------


@pytest.mark.parametrize("method", ["hmac", "aes_siv", "token"])
def test_same_value_key_purpose_gives_same_pseudonym(ks, method):
    values = pd.Series(["12345678Z", "87654321X", "12345678Z"])
    a, _ = pseudonymize_values(values, ks, method=method, purpose="research")
    b, _ = pseudonymize_values(values, ks, method=method, purpose="research")
    assert a.tolist() == b.tolist()
    assert a[0] == a[2] and a[0] != a[1]


@pytest.mark.parametrize("method", ["hmac", "aes_siv", "token"])
def test_other_purpose_gives_other_pseudonyms_and_columns_share_no_value(ks, method):
    values = pd.Series([f"{i:08d}{'TRWAGMYFPDXBNJZSQVHLCKE'[i % 23]}" for i in range(2000)])
    research, _ = pseudonymize_values(values, ks, method=method, purpose="research")
    billing, _ = pseudonymize_values(values, ks, method=method, purpose="billing")
    assert set(research).isdisjoint(set(billing))


def test_other_key_gives_other_pseudonyms(tmp_path):
    values = pd.Series(["a", "b"])
    one, _ = pseudonymize_values(values, env_keystore(), method="hmac")
    two, _ = pseudonymize_values(values, env_keystore(), method="hmac")
    assert set(one).isdisjoint(set(two))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=40, unique=True))
def test_one_to_one_on_distinct_inputs(values):
    ks = env_keystore()
    for method in ("hmac", "aes_siv"):
        out, distinct = pseudonymize_values(pd.Series(values, dtype=object), ks, method=method, normalize=RAW)
        assert distinct == len(values)
        assert out.nunique() == len(values) and not out.isna().any()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=30))
def test_aes_siv_round_trips_through_reidentify(tmp_path_factory, values):
    ks = env_keystore(tmp_path_factory.mktemp("state"))
    out, _ = pseudonymize_values(pd.Series(values, dtype=object), ks, method="aes_siv", purpose="care", normalize=RAW)
    back = reidentify(out.tolist(), keystore=ks, method="aes_siv", purpose="care", actor="t", reason="test")
    assert back.identifiers == values and back.not_found == 0


# ----- hand-checked constructions -------------------------------------------------------------


def test_hmac_pseudonym_is_truncated_hmac_sha256_under_the_purpose_key(ks):
    out, _ = pseudonymize_values(pd.Series(["12345678Z"]), ks, method="hmac", purpose="research")
    key = ks.pseudonym_key("hmac", "research", 1)
    expected = "v1:" + hmac.new(key, b"12345678Z", "sha256").digest()[:16].hex()
    assert out[0] == expected


def test_aes_siv_pseudonym_decrypts_with_purpose_as_associated_data(ks):
    out, _ = pseudonymize_values(pd.Series(["ana"]), ks, method="aes_siv", purpose="care")
    assert out[0].startswith("v1:")
    body = out[0][3:]
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    key = ks.pseudonym_key("aes_siv", "care", 1)
    assert AESSIV(key).decrypt(raw, [b"care"]) == b"ana"
    with pytest.raises(InvalidTag):  # another purpose does not authenticate
        AESSIV(key).decrypt(raw, [b"billing"])


@pytest.mark.parametrize("method", ["hmac", "aes_siv", "token"])
@pytest.mark.parametrize("prefix", [True, False])
def test_every_pseudonym_matches_its_pattern(ks, method, prefix):
    values = pd.Series(["x", "a much longer identifier 123", "ü"])
    out, _ = pseudonymize_values(values, ks, method=method, prefix_version=prefix)
    pattern = re.compile(pseudonym_pattern(method, prefix))
    assert all(pattern.fullmatch(p) for p in out)
    others = {"hmac", "aes_siv", "token"} - {method}
    if method != "aes_siv":  # base64url could happen to look like hex; the others are exclusive
        assert not any(re.fullmatch(pseudonym_pattern(o, prefix), p) for o in others - {"aes_siv"} for p in out)


def test_unknown_method_pattern_is_refused():
    with pytest.raises(ValueError):
        pseudonym_pattern("sha256")


# ----- nulls and normalization ----------------------------------------------------------------


@pytest.mark.parametrize("method", ["hmac", "aes_siv", "token"])
def test_missing_and_empty_identifiers_stay_missing(ks, method):
    values = pd.Series(["a", None, np.nan, "", "   ", pd.NA, "b"], dtype=object)
    out, distinct = pseudonymize_values(values, ks, method=method)
    assert out.isna().tolist() == [False, True, True, True, True, True, False]
    assert distinct == 2
    assert out[0] != out[6]


def test_normalization_trim_case_unicode(ks):
    norm = NormalizeSpec(trim=True, case="upper", unicode="NFC")
    values = pd.Series([" 1234a ", "1234A", "caf\u00e9", "cafe\u0301", "CAFÉ"])
    out, distinct = pseudonymize_values(values, ks, method="hmac", normalize=norm)
    assert out[0] == out[1]
    assert out[2] == out[3] == out[4]
    assert distinct == 2


def test_without_normalization_variants_stay_distinct(ks):
    values = pd.Series([" 1234a ", "1234A", "caf\u00e9", "cafe\u0301"])
    out, _ = pseudonymize_values(values, ks, method="hmac", normalize=RAW)
    assert out.nunique() == 4


def test_nfkc_folds_compatibility_characters(ks):
    values = pd.Series(["\uff11\uff12\uff13", "123"])  # full-width digits
    nfc, _ = pseudonymize_values(values, ks, method="hmac", normalize=NormalizeSpec(unicode="NFC"))
    nfkc, _ = pseudonymize_values(values, ks, method="hmac", normalize=NormalizeSpec(unicode="NFKC"))
    assert nfc[0] != nfc[1] and nfkc[0] == nfkc[1]


def test_integer_identifiers_read_as_floats_hash_like_integers(ks):
    ints, _ = pseudonymize_values(pd.Series([1234, 99]), ks, method="hmac")
    floats, _ = pseudonymize_values(pd.Series([1234.0, np.nan, 99.0]), ks, method="hmac")
    text, _ = pseudonymize_values(pd.Series(["1234", "99"]), ks, method="hmac")
    assert ints.tolist() == text.tolist() == [floats[0], floats[2]]
    with pytest.raises(DataError, match="'ids'.*fractional"):
        pseudonymize_values(pd.Series([1.5]), ks, method="hmac", column="ids")


# ----- tokens ---------------------------------------------------------------------------------


def test_tokens_persist_encrypted_beside_the_key_store(tmp_path):
    ks = env_keystore(tmp_path / "state")
    first, _ = pseudonymize_values(pd.Series(["alice@example.org", "bob"]), ks, method="token", purpose="mail")
    # a fresh KeyStore object over the same keys reads the same vault
    second, _ = pseudonymize_values(pd.Series(["bob", "carol"]), ks, method="token", purpose="mail")
    assert second[0] == first[1] and second[1] not in set(first)
    vault = vault_path(ks, "mail")
    assert vault.parent.parent == tmp_path / "state"
    raw = vault.read_bytes()
    assert b"alice" not in raw and first[0].encode() not in raw
    assert oct(vault.stat().st_mode & 0o777) == "0o600"


def test_tokens_need_a_state_folder():
    with pytest.raises(SecretError, match="ANON_DAGSTER_KEYSTORE_STATE"):
        pseudonymize_values(pd.Series(["a"]), env_keystore(None), method="token")


def test_tampered_vault_is_refused(tmp_path):
    ks = env_keystore(tmp_path / "state")
    pseudonymize_values(pd.Series(["a"]), ks, method="token", purpose="p")
    path = vault_path(ks, "p")
    doc = json.loads(path.read_text())
    ct = bytearray(base64.b64decode(doc["ciphertext"]))
    ct[0] ^= 1
    doc["ciphertext"] = base64.b64encode(bytes(ct)).decode()
    path.write_text(json.dumps(doc))
    with pytest.raises(SecretError, match="modified"):
        pseudonymize_values(pd.Series(["a"]), ks, method="token", purpose="p")


# ----- tables ---------------------------------------------------------------------------------


def test_pseudonymize_table_replaces_drops_and_passes_through(ks):
    spec = spec_with({
        "patient_id": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research"}},
        "case_id": {"role": "identifier", "pseudonymize": {"method": "aes_siv", "purpose": "care", "prefix_version": False}},
        "full_name": {"role": "identifier"},
        "age": {"role": "quasi"},
    })
    df = pd.DataFrame({
        "patient_id": ["p1", "p2", "p1", None],
        "case_id": ["c1", "c2", "c3", "c4"],
        "full_name": ["Ana", "Bo", "Ana", "Cy"],
        "age": [30, 40, 30, 50],
        "side": ["x", "y", "z", "w"],  # undeclared: carried through untouched
    }, index=[10, 11, 12, 13])
    out, summary = pseudonymize(df, spec, ks)
    assert list(out.columns) == ["patient_id", "case_id", "age", "side"]
    assert out.index.tolist() == [10, 11, 12, 13]
    assert out["age"].tolist() == [30, 40, 30, 50] and out["side"].tolist() == ["x", "y", "z", "w"]
    assert out["patient_id"][10] == out["patient_id"][12] and pd.isna(out["patient_id"][13])
    assert not set(out["patient_id"].dropna()) & {"p1", "p2"}
    d = summary.to_dict()
    assert d["personal_data"] is True and d["notice"] == PERSONAL_DATA_NOTICE
    assert d["dropped"] == ["full_name"]
    cols = {c["column"]: c for c in d["columns"]}
    assert cols["patient_id"] == {
        "column": "patient_id", "method": "hmac", "purpose": "research", "key_version": 1, "rows": 4,
        "nulls_kept": 1, "distinct": 2, "reversible": False, "prefix_version": True,
        "pattern": pseudonym_pattern("hmac", True), "scope": "release", "publication": "r/all",
    }
    assert cols["case_id"]["reversible"] and cols["case_id"]["distinct"] == 4
    assert all(re.fullmatch(cols["case_id"]["pattern"], p) for p in out["case_id"])
    assert df["patient_id"].tolist()[:3] == ["p1", "p2", "p1"]  # input untouched


def test_spec_without_pseudonymized_columns_never_opens_a_key_store(monkeypatch):
    spec = spec_with({"name": {"role": "identifier"}, "age": {"role": "quasi"}})
    out, summary = pseudonymize(pd.DataFrame({"name": ["a"], "age": [1]}), spec)
    assert list(out.columns) == ["age"] and summary.backend is None
    spec2 = spec_with({"id": {"role": "identifier", "pseudonymize": {"method": "hmac"}}, "age": {"role": "quasi"}})
    with pytest.raises(SecretError, match="no key store configured"):
        pseudonymize(pd.DataFrame({"id": ["a"], "age": [1]}), spec2)


def test_missing_identifier_column_is_a_data_error(ks):
    spec = spec_with({"id": {"role": "identifier", "pseudonymize": {"method": "hmac"}}, "age": {"role": "quasi"}})
    with pytest.raises(DataError, match="'id'"):
        pseudonymize(pd.DataFrame({"age": [1]}), spec, ks)


@pytest.mark.parametrize("method", ["sha256", "md5", "SHA1", "salted_sha256", "blake2b", "hash"])
def test_unsafe_method_in_spec_is_refused_with_the_enumeration_explanation(method):
    with pytest.raises(SpecError) as err:
        spec_with({"id": {"role": "identifier", "pseudonymize": {"method": method}}, "age": {"role": "quasi"}})
    text = str(err.value)
    assert "columns.id.pseudonymize.method" in text and "enumeration" in text
    assert ENUMERATION_WARNING in text


# ----- rotation -------------------------------------------------------------------------------


def test_after_rotation_new_data_gets_the_new_version_and_old_data_is_recomputable():
    ks = env_keystore(versions=2)
    values = pd.Series(["a", "b"])
    new, _ = pseudonymize_values(values, ks, method="hmac")
    old, _ = pseudonymize_values(values, ks, method="hmac", key_version=1)
    assert all(p.startswith("v2:") for p in new) and all(p.startswith("v1:") for p in old)
    assert set(new).isdisjoint(set(old))


def test_hmac_bridge_maps_old_to_new_pseudonyms():
    ks = env_keystore(versions=2)
    ids = pd.Series(["a", "b", "a", None, " b"])
    bridge = hmac_bridge(ids, ks, purpose="research", from_version=1)
    old, _ = pseudonymize_values(pd.Series(["a", "b"]), ks, method="hmac", purpose="research", key_version=1)
    new, _ = pseudonymize_values(pd.Series(["a", "b"]), ks, method="hmac", purpose="research", key_version=2)
    assert dict(zip(bridge["old"], bridge["new"], strict=True)) == dict(zip(old, new, strict=True))
    with pytest.raises(DataError):
        hmac_bridge(ids, ks, purpose="research", from_version=2)


def test_aes_siv_rekey_without_the_identifiers(tmp_path):
    ks = env_keystore(tmp_path, versions=2)
    values = pd.Series(["a", None, "b", "a"])
    old, _ = pseudonymize_values(values, ks, method="aes_siv", purpose="care", key_version=1)
    rekeyed = rekey_aes_siv(old, ks, purpose="care")
    direct, _ = pseudonymize_values(values, ks, method="aes_siv", purpose="care", key_version=2)
    assert rekeyed.isna().tolist() == [False, True, False, False]
    assert rekeyed.dropna().tolist() == direct.dropna().tolist()
    with pytest.raises(DataError, match="row 0"):
        rekey_aes_siv(["v1:AAAAAAAAAAAAAAAAAAAAAAAAAAAA"], ks, purpose="care")


def test_token_vault_rekey_keeps_tokens(tmp_path):
    ks = env_keystore(tmp_path, versions=2)
    tokens, _ = pseudonymize_values(pd.Series(["a", "b"]), ks, method="token", purpose="t", key_version=1)
    assert rekey_token_vault(ks, "t") == 2
    doc = json.loads(vault_path(ks, "t").read_text())
    assert doc["key_version"] == 2
    again, _ = pseudonymize_values(pd.Series(["b", "a"]), ks, method="token", purpose="t")
    assert again.tolist() == tokens.tolist()[::-1]


def test_a_colliding_token_draw_is_redrawn(tmp_path, monkeypatch):
    ks = env_keystore(tmp_path / "state")
    first, _ = pseudonymize_values(pd.Series(["a"]), ks, method="token", purpose="c")
    draws = iter([first[0], first[0], "tk_" + "b" * 26])
    monkeypatch.setattr("anon_dagster.pseudonymize.tokens.new_token", lambda: next(draws))
    second, _ = pseudonymize_values(pd.Series(["b", "a"]), ks, method="token", purpose="c")
    assert second.tolist() == ["tk_" + "b" * 26, first[0]]


@settings(max_examples=50, deadline=None)
@given(st.binary(min_size=0, max_size=200), st.lists(st.binary(max_size=100), max_size=20))
def test_hmac_kernel_equals_the_standard_library(key, values):
    from anon_dagster.pseudonymize.methods import hmac_digests
    assert hmac_digests(key, values) == [hmac.new(key, v, "sha256").digest() for v in values]


def test_cli_bridge_rekey_and_reseal_after_rotation(tmp_path, monkeypatch, capsys):
    from anon_dagster.cli import main

    keys = [base64.b64encode(os.urandom(32)).decode() for _ in range(2)]
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", f"1:{keys[0]}")
    ks1 = open_keystore()
    raw = pd.DataFrame({"pid": ["a", "b", None, "a"], "cid": ["x", "y", "z", None]})
    old_hmac, _ = pseudonymize_values(raw["pid"], ks1, method="hmac", purpose="research")
    old_siv, _ = pseudonymize_values(raw["cid"], ks1, method="aes_siv", purpose="care")
    tokens, _ = pseudonymize_values(raw["pid"], ks1, method="token", purpose="t")
    raw.to_csv(tmp_path / "raw.csv", index=False)
    pd.DataFrame({"cid": old_siv}).to_csv(tmp_path / "pseud.csv", index=False)

    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", f"1:{keys[0]},2:{keys[1]}")  # rotated
    ks2 = open_keystore()
    assert main(["keys", "bridge", "--input", str(tmp_path / "raw.csv"), "--column", "pid", "--purpose",
                 "research", "--from-version", "1", "--output", str(tmp_path / "bridge.csv")]) == 0
    bridge = pd.read_csv(tmp_path / "bridge.csv")
    new_hmac, _ = pseudonymize_values(raw["pid"], ks2, method="hmac", purpose="research")
    assert dict(zip(bridge["old"], bridge["new"], strict=True)) == {
        old_hmac[0]: new_hmac[0], old_hmac[1]: new_hmac[1]}
    assert main(["keys", "rekey", "--input", str(tmp_path / "pseud.csv"), "--column", "cid", "--purpose", "care",
                 "--output", str(tmp_path / "rekeyed.csv")]) == 0
    rekeyed = pd.read_csv(tmp_path / "rekeyed.csv")["cid"]
    new_siv, _ = pseudonymize_values(raw["cid"], ks2, method="aes_siv", purpose="care")
    assert rekeyed[:3].tolist() == new_siv[:3].tolist() and pd.isna(rekeyed[3])
    assert main(["keys", "reseal-tokens", "--purpose", "t"]) == 0
    assert json.loads(vault_path(ks2, "t").read_text())["key_version"] == 2
    again, _ = pseudonymize_values(raw["pid"], ks2, method="token", purpose="t")
    assert again.dropna().tolist() == tokens.dropna().tolist()
    capsys.readouterr()
    assert main(["keys", "bridge", "--input", str(tmp_path / "raw.csv"), "--column", "nope", "--purpose", "r",
                 "--from-version", "1", "--output", str(tmp_path / "b2.csv")]) == 2
    assert "'nope'" in capsys.readouterr().err and not (tmp_path / "b2.csv").exists()


# pieces that normalization folds together: case, composed/decomposed accents, spaces
_PIECES = st.sampled_from(["a", "A", " ", "é", "É", "e\u0301", "1", "\u00a0", "\t"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.lists(_PIECES, max_size=4).map("".join)), max_size=30),
       st.sampled_from(["hmac", "aes_siv"]), st.sampled_from(["keep", "upper", "lower"]))
def test_equal_outputs_exactly_when_normalized_inputs_are_equal(values, method, case):
    import unicodedata
    ks = env_keystore()
    norm = NormalizeSpec(trim=True, case=case, unicode="NFC")
    out, distinct = pseudonymize_values(pd.Series(values, dtype=object), ks, method=method, normalize=norm)

    def reference(v):  # the documented normalization, written independently
        if v is None:
            return None
        v = unicodedata.normalize("NFC", v.strip())
        v = v.upper() if case == "upper" else v.lower() if case == "lower" else v
        return v or None

    expected = [reference(v) for v in values]
    assert out.isna().tolist() == [e is None for e in expected]
    for i in range(len(values)):
        for j in range(len(values)):
            if expected[i] is not None and expected[j] is not None:
                assert (out[i] == out[j]) == (expected[i] == expected[j])
    assert distinct == len({e for e in expected if e is not None})


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=6)), max_size=60))
def test_keying_every_row_or_each_distinct_value_once_agree(values):
    from anon_dagster.pseudonymize.methods import hmac_column, normalize_identifiers
    arr = normalize_identifiers(pd.Series(values, dtype=object))
    key = os.urandom(32)
    once, d_once = hmac_column(key, arr, "v3:", dedupe=True)
    every, d_every = hmac_column(key, arr, "v3:", dedupe=False)
    assert once.to_pylist() == every.to_pylist()
    assert d_once == d_every
    # without the distinct count (what an executor asks for): the same pseudonyms, no count
    uncounted, d_none = hmac_column(key, arr, "v3:", dedupe=False, count=False)
    assert uncounted.to_pylist() == once.to_pylist() and d_none is None
    # RFC 2104 HMAC-SHA256, first 16 bytes in hex, null where the normalized value is missing
    import hmac as reference
    assert once.to_pylist() == [None if v is None else "v3:" + reference.new(key, v.encode(), "sha256").hexdigest()[:32]
                                for v in arr.to_pylist()]
    # an Arrow string column (what Spark's executors hold) normalizes as the pandas Series does
    import pyarrow as pa
    assert normalize_identifiers(pa.array(values, pa.string())).to_pylist() == arr.to_pylist()


def test_deduplication_is_chosen_when_identifiers_repeat():
    import pyarrow as pa

    from anon_dagster.pseudonymize.methods import repeats_enough_to_deduplicate
    distinct = pa.array([f"{i:07d}" for i in range(200_000)])
    five_each = pa.array([f"{i % 40_000:07d}" for i in range(200_000)])
    assert not repeats_enough_to_deduplicate(distinct, sample=10_000)
    assert repeats_enough_to_deduplicate(five_each, sample=10_000)
    assert repeats_enough_to_deduplicate(pa.array(["a", "a", None]))  # small: always exact


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=6)), max_size=60))
def test_aes_siv_every_row_or_each_distinct_value_once_agree(values):
    from anon_dagster.pseudonymize.methods import normalize_identifiers, siv_column
    arr = normalize_identifiers(pd.Series(values, dtype=object))
    key = os.urandom(64)
    once, d_once = siv_column(key, "p", arr, "v1:", dedupe=True)
    every, d_every = siv_column(key, "p", arr, "v1:", dedupe=False)
    assert once.to_pylist() == every.to_pylist()
    assert d_once == d_every
