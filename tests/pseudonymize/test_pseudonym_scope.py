"""Pseudonym scopes, column by column: keys bound to a publication, a vault per publication,
random row pseudonyms, and reversal and rotation under the publication the pseudonyms belong to.

Definitions under test (``anon_dagster.pseudonymize.methods``): a publication label is
``"<release>/<partition>"`` (``<release>/all`` without partitions) and names one publication
only; a ``release`` pseudonym's key is derived with the label in its HKDF info, so two
publications, and a publication and the unbound (``population``) key, share no key.
"""

from __future__ import annotations

import base64
import json
import re
import shutil

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from anon_dagster.errors import DataError, SecretError, UserError
from anon_dagster.pseudonymize import (
    AuditLog,
    EnvKeyBackend,
    KeyStore,
    hmac_bridge,
    pseudonym_pattern,
    pseudonymize,
    pseudonymize_values,
    publication_label,
    reidentify,
    rekey_aes_siv,
    rekey_token_vault,
)
from anon_dagster.pseudonymize.keystore import hkdf_info
from anon_dagster.pseudonymize.table import column_publication
from anon_dagster.pseudonymize.tokens import TokenVault, vault_path, vault_publications
from tests.support.keys import MASTER_KEY_BYTES
from tests.support.specs import release_spec

TWO_VERSIONS = ",".join(f"{v}:{base64.b64encode(bytes((b + v) % 256 for b in MASTER_KEY_BYTES)).decode()}"
                        for v in (1, 2))
IDS = pd.Series(["P1", "P2", "P1", None, "P3"])


@pytest.fixture
def ks(tmp_path) -> KeyStore:
    return KeyStore(EnvKeyBackend(TWO_VERSIONS), tmp_path / "state")


def values(ks: KeyStore, method: str, publication: str | None, **kw) -> list:
    scope = "population" if publication is None else "release"
    out, _ = pseudonymize_values(IDS, ks, method=method, purpose="care", scope=scope, publication=publication, **kw)
    return [None if pd.isna(p) else p for p in out]


# ----- labels and keys ------------------------------------------------------------------------


def test_a_publication_label_names_the_release_and_the_partition():
    assert publication_label("discharges", "2024") == "discharges/2024"
    assert publication_label("discharges", "2024-03") == "discharges/2024-03"
    assert publication_label("discharges", None) == "discharges/all"


@pytest.mark.parametrize(("release", "partition"), [
    ("a/b", "2024"), ("", "2024"), ("1st", "2024"), ("r", "all"), ("r", "2024/x"), ("r", "../x"), ("r", ""),
    ("r", "-2024"),
])
def test_a_label_that_could_name_two_publications_is_refused(release, partition):
    with pytest.raises(DataError):
        publication_label(release, partition)


names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
keys = st.none() | st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,8}", fullmatch=True).filter(lambda k: k != "all")


@given(st.tuples(names, keys), st.tuples(names, keys))
def test_two_publications_never_share_a_label(a, b):
    assert (publication_label(*a) == publication_label(*b)) == (a == b)


def test_every_publication_has_its_own_key_and_none_is_the_unbound_one(ks):
    bound = [ks.pseudonym_key("hmac", "care", 1, p) for p in ("r/2023", "r/2024", "r/all", "s/2023")]
    assert len(set(bound)) == 4 and ks.pseudonym_key("hmac", "care", 1) not in bound
    # the HKDF info lists differ in length: a purpose spelled like a scoped info cannot meet one
    assert hkdf_info("pseudonym", "hmac", "care", "publication", "r/2023", 1) != hkdf_info("pseudonym", "hmac", "care", 1)
    assert ks.pseudonym_key("hmac", "care/publication", 1) != ks.pseudonym_key("hmac", "care", 1, "publication")
    assert ks.pseudonym_key("aes_siv", "care", 1, "r/2023") != ks.pseudonym_key("aes_siv", "care", 2, "r/2023")


@pytest.mark.parametrize("method", ["hmac", "aes_siv", "token"])
def test_release_scope_links_within_one_publication_and_not_across(ks, method):
    first = values(ks, method, "r/2023")
    again = values(ks, method, "r/2023")
    other = values(ks, method, "r/2024")
    unbound = values(ks, method, None)
    assert first == again and first[0] == first[2] != first[1]  # one person, one pseudonym
    assert first[3] is None and other[3] is None  # missing stays missing
    present = [set(filter(None, v)) for v in (first, other, unbound)]
    assert not present[0] & present[1] and not present[0] & present[2] and not present[1] & present[2]
    pattern = pseudonym_pattern(method)
    assert all(re.fullmatch(pattern, p) for p in present[0] | present[1])


def test_release_scope_needs_its_publication(ks):
    with pytest.raises(DataError, match="one publication"):
        pseudonymize_values(IDS, ks, method="hmac", scope="release")
    with pytest.raises(DataError, match="scope 'sometimes'"):
        pseudonymize_values(IDS, ks, method="hmac", scope="sometimes")
    for scope in ("population", "row"):
        with pytest.raises(DataError, match="only scope 'release'"):
            pseudonymize_values(IDS, ks, method="hmac", scope=scope, publication="r/2024")
    with pytest.raises(DataError, match="not a publication label"):
        pseudonymize_values(IDS, ks, method="hmac", scope="release", publication="r/2024/x")


# ----- row ------------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", [True, False])
def test_row_scope_gives_every_row_a_fresh_random_pseudonym_of_the_hmac_format(ks, prefix):
    out, distinct = pseudonymize_values(IDS, ks, method="hmac", scope="row", prefix_version=prefix)
    again, _ = pseudonymize_values(IDS, ks, method="hmac", scope="row", prefix_version=prefix)
    present = out.dropna().tolist()
    assert len(present) == 4 and len(set(present)) == 4  # P1's two rows differ too
    assert out.isna().tolist() == IDS.isna().tolist() and distinct == 3  # a count, from the values
    assert not set(present) & set(again.dropna())  # not recomputable: another run, other values
    assert all(re.fullmatch(pseudonym_pattern("hmac", prefix), p) for p in present)
    assert not set(present) & set(values(ks, "hmac", None))  # not the keyed ones either


@pytest.mark.parametrize("method", ["aes_siv", "token"])
def test_row_scope_is_refused_for_a_reversible_method(ks, method):
    with pytest.raises(DataError, match="hmac only"):
        pseudonymize_values(IDS, ks, method=method, scope="row")


def test_row_scope_over_no_identifier_gives_nulls(ks):
    out, distinct = pseudonymize_values(pd.Series([None, " "], dtype=object), ks, method="hmac", scope="row")
    assert out.isna().all() and distinct == 0


# ----- tokens: a vault per publication --------------------------------------------------------


def test_each_publication_has_its_own_vault(ks):
    first, again, other = (values(ks, "token", p) for p in ("r/2023", "r/2023", "r/2024"))
    assert first == again and not set(filter(None, first)) & set(filter(None, other))
    assert vault_path(ks, "care", "r/2023").is_file() and vault_path(ks, "care", "r/2024").is_file()
    assert not vault_path(ks, "care").exists()  # the purpose's own vault is untouched
    assert vault_publications(ks, "care") == ["r/2023", "r/2024"]
    assert json.loads(vault_path(ks, "care", "r/2023").read_text())["publication"] == "r/2023"


def test_a_vault_moved_to_another_publication_is_refused(ks):
    values(ks, "token", "r/2023")
    target = vault_path(ks, "care", "r/2024")
    target.parent.mkdir(parents=True)
    shutil.copy(vault_path(ks, "care", "r/2023"), target)
    with pytest.raises(SecretError, match="publication 'r/2024'"):
        TokenVault.load(ks, "care", "r/2024")
    # rewriting the header to match does not help: the publication is sealed into the associated data
    doc = json.loads(target.read_text())
    target.write_text(json.dumps({**doc, "publication": "r/2024"}))
    with pytest.raises(SecretError, match="seal does not verify"):
        TokenVault.load(ks, "care", "r/2024")


def test_a_vault_path_takes_only_a_publication_label(ks):
    with pytest.raises(DataError):
        vault_path(ks, "care", "../../elsewhere")


# ----- reversal -------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["aes_siv", "token"])
def test_release_pseudonyms_reverse_with_their_publication_only(ks, method):
    pseudonyms = values(ks, method, "r/2024")
    audit = AuditLog(ks)
    back = reidentify(pseudonyms, keystore=ks, method=method, purpose="care", actor="a", reason="r",
                      audit=audit, publication="r/2024")
    assert back.identifiers == ["P1", "P2", "P1", None, "P3"] and back.not_found == 0
    for wrong in ("r/2023", None):
        refused = reidentify(pseudonyms, keystore=ks, method=method, purpose="care", actor="a", reason="r",
                             audit=audit, publication=wrong)
        assert refused.identifiers == [None] * 5 and refused.not_found == 4  # nothing decrypted
    entries = [json.loads(line)["event"] for line in audit.path.read_text().splitlines()]
    assert [e.get("publication") for e in entries] == ["r/2024", "r/2023", None]
    assert [e["scope"] for e in entries] == ["release", "release", "population"]


# ----- rotation -------------------------------------------------------------------------------


def test_a_bridge_and_a_rekey_stay_within_their_publication(ks):
    old_hmac = values(ks, "hmac", "r/2024", key_version=1)
    new_hmac = values(ks, "hmac", "r/2024", key_version=2)
    bridge = hmac_bridge(IDS, ks, purpose="care", from_version=1, publication="r/2024")
    assert dict(zip(bridge["old"], bridge["new"], strict=True)) == {
        o: n for o, n in zip(old_hmac, new_hmac, strict=True) if o is not None}
    old_siv = values(ks, "aes_siv", "r/2024", key_version=1)
    rekeyed = rekey_aes_siv(old_siv, ks, purpose="care", publication="r/2024")
    assert [None if pd.isna(p) else p for p in rekeyed] == values(ks, "aes_siv", "r/2024", key_version=2)
    with pytest.raises(DataError, match="publication 'r/2023'"):
        rekey_aes_siv(old_siv, ks, purpose="care", publication="r/2023")


def test_a_publication_vault_is_resealed_and_keeps_its_tokens(ks):
    tokens = values(ks, "token", "r/2024", key_version=1)
    assert rekey_token_vault(ks, "care", publication="r/2024") == 3
    assert json.loads(vault_path(ks, "care", "r/2024").read_text())["key_version"] == 2
    assert values(ks, "token", "r/2024") == tokens


# ----- a table as its spec declares -----------------------------------------------------------


def spec_of(scope: str, method: str = "aes_siv", **sections):
    block = {"method": method, "purpose": "care", "scope": scope}
    return release_spec({"pid": {"role": "identifier", "pseudonymize": block}, "age": {"role": "quasi"}},
                        release="r", **sections)


def test_a_table_is_bound_to_the_partition_it_is(ks):
    df = pd.DataFrame({"pid": ["P1", "P2", "P1"], "age": [30, 40, 30]})
    spec = spec_of("release")
    by_partition = {p: pseudonymize(df, spec, ks, partition=p)[0]["pid"].tolist() for p in ("2023", "2024", None)}
    assert by_partition["2023"] == values(ks, "aes_siv", "r/2023")[:2] + values(ks, "aes_siv", "r/2023")[:1]
    assert by_partition[None][0] == values(ks, "aes_siv", "r/all")[0]
    assert len({p for v in by_partition.values() for p in v}) == 6  # 2 persons x 3 publications


def test_the_publication_of_a_column_for_reversal(tmp_path):
    composition = {"composition": {"population": "people", "person": "pid"}}
    partitioned = {"partitions": {"cadence": "yearly", "start": "2023-01-01", "column": "day"}}
    day = {"day": {"role": "insensitive"}}

    def spec(scope, **sections):
        block = {"method": "hmac" if scope == "row" else "aes_siv", "purpose": "care", "scope": scope}
        return release_spec({"pid": {"role": "identifier", "pseudonymize": block}, "age": {"role": "quasi"}, **day},
                            release="r", **sections)

    assert column_publication(spec("release", **partitioned), "pid", "2024") == "r/2024"
    assert column_publication(spec("release"), "pid", None) == "r/all"
    assert column_publication(spec("population", **composition), "pid", None) is None
    refusals = [
        (spec("release", **partitioned), None, "give the partition"),
        (spec("release", **partitioned), "2024-03", "not a yearly partition key"),
        (spec("release"), "2024", "declares no partitions"),
        (spec("population", **composition), "2024", "give no partition"),
        (spec("row"), None, "random pseudonym"),
    ]
    for declared, partition, message in refusals:
        with pytest.raises(UserError, match=message) as err:
            column_publication(declared, "pid", partition)
        assert "columns.pid.pseudonymize.scope" in str(err.value) or "partition" in str(err.value)
    with pytest.raises(UserError, match="not a pseudonymized identifier"):
        column_publication(spec("release"), "age", None)
