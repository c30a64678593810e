"""The ledger's linkage is keyed on what is published: a person spelled differently in a later
year, but given the same published pseudonym, is the same person to the composition check.

An adversary joins two publications on the published pseudonym; the pseudonym is keyed on the
*normalized* identifier (trim, Unicode form, case, as the person column declares). These tests
re-spell the persons of a first year in a second one (surrounding spaces, NFD, case, full-width
digits) and check that composition still finds them, through ``pipeline.run_gate`` and
``anon-dagster compose``; and that the linkage never joins what the published pseudonyms keep
apart, so the verdict is not just "refuse everything".
"""

from __future__ import annotations

import itertools
import json
import unicodedata

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster.cli import main
from anon_dagster.errors import DataError
from anon_dagster.io import read_table
from anon_dagster.pseudonymize import KeyStore, pseudonymize_values
from anon_dagster.pseudonymize.keystore import EnvKeyBackend
from anon_dagster.pseudonymize.methods import PERSON_NORMALIZATION
from anon_dagster.release import pipeline
from anon_dagster.release.ledger import linkage_pseudonyms
from anon_dagster.release.publication import PublicationRefused, publish
from anon_dagster.spec import NormalizeSpec, load_spec
from tests.support.keys import MASTER_KEY
from tests.support.ledgers import new_ledger
from tests.support.linkage import composing_release, person_id, two_years

FULL_WIDTH = str.maketrans("0123456789", "０１２３４５６７８９")


def accented_id(i: int) -> str:
    """An identifier with a non-ASCII letter (NFC), so that its NFD spelling is other bytes."""
    return unicodedata.normalize("NFC", f"PIDÉ{i:05d}")


def nfd(pid: str) -> str:
    return unicodedata.normalize("NFD", pid)


# (name, the 2024 spelling, the person column's normalize block, the ids' base spelling)
RESPELLINGS = [
    ("surrounding spaces", lambda p: f"  {p}\t", None, person_id),
    ("NFD instead of NFC", nfd, None, accented_id),
    ("lower case", str.lower, {"case": "upper"}, person_id),
    ("full-width digits", lambda p: p.translate(FULL_WIDTH), {"unicode": "NFKC"}, person_id),
    ("all at once", lambda p: f" {nfd(p).lower().translate(FULL_WIDTH)} ", {"case": "upper", "unicode": "NFKC"},
     accented_id),
]


def two_year_gate(tmp_path, data, **release):
    """2023 published through the pipeline, then 2024 taken through the gate."""
    spec = load_spec(composing_release(tmp_path, data, **release))
    keystore, ledger = KeyStore(EnvKeyBackend(MASTER_KEY)), new_ledger(tmp_path / "ledger.sqlite")
    first = pipeline.run_gate(spec, partition="2023", keystore=keystore, ledger=ledger)
    assert first.evaluation.passed, first.evaluation.refusals
    published = publish(spec, first.evaluation, first.anonymized.data, ledger)
    second = pipeline.run_gate(spec, partition="2024", keystore=keystore, ledger=ledger)
    return spec, ledger, read_table(published.path), second


@pytest.mark.parametrize(("name", "spell", "normalize", "base"), RESPELLINGS, ids=[r[0] for r in RESPELLINGS])
def test_respelled_persons_are_found_by_composition(tmp_path, name, spell, normalize, base):
    data = two_years(spell, base=base)
    assert set(data["pid"][:16:2]).isdisjoint(data["pid"][1:16:2])  # the raw texts differ
    spec, ledger, published_2023, second = two_year_gate(tmp_path, data, normalize=normalize)
    # the attack the check must see: 2024's pseudonyms are 2023's, so joining the files links everyone
    assert set(second.anonymized.data["pid"]) == set(published_2023["pid"])
    composition = second.evaluation.check("composition")
    assert composition.passed is False and composition.measured == 1
    assert composition.details["composition"]["exposed_persons"] == 2
    with pytest.raises(PublicationRefused, match="composition"):
        publish(spec, second.evaluation, second.anonymized.data, ledger)
    assert not (tmp_path / "published" / "yearly" / "2024.parquet").exists()


def test_respelled_persons_of_a_dropped_person_column_are_found(tmp_path):
    """No published pseudonym: the linkage spells persons with NFKC, trim and full case folding."""
    spell = RESPELLINGS[-1][1]
    _, _, published_2023, second = two_year_gate(tmp_path, two_years(spell, base=accented_id), pseudonymized=False)
    assert "pid" not in published_2023.columns
    composition = second.evaluation.check("composition")
    assert composition.passed is False and composition.measured == 1


def test_other_persons_pass_so_the_refusal_is_the_linkage(tmp_path):
    _, _, _, second = two_year_gate(tmp_path, two_years(other_people=True))
    composition = second.evaluation.check("composition")
    assert composition.passed is True and composition.measured == 4


def test_spellings_the_published_pseudonyms_tell_apart_stay_apart(tmp_path):
    """Case kept (the default): "pid000001" is published under another pseudonym than "PID000001",
    so no join of the publications links them, and the composition does not either."""
    _, _, published_2023, second = two_year_gate(tmp_path, two_years(str.lower))
    assert set(second.anonymized.data["pid"]).isdisjoint(published_2023["pid"])
    assert second.evaluation.check("composition").passed is True


def test_a_person_empty_after_normalization_is_refused_not_skipped(tmp_path):
    """A blank id gets no published pseudonym; it must not slip past the composition either."""
    data = two_years()
    data.loc[1, "pid"] = " \u00a0 "  # 2024's first row: spaces only (NFKC turns U+00A0 into a space)
    spec = load_spec(composing_release(tmp_path, data))
    with pytest.raises(DataError, match="1 values missing or empty after normalization") as exc:
        pipeline.run_gate(spec, partition="2024", keystore=KeyStore(EnvKeyBackend(MASTER_KEY)),
                          ledger=new_ledger(tmp_path / "ledger.sqlite"))
    assert "PID" not in str(exc.value)


def test_compose_on_an_anonymized_table_links_respelled_persons(tmp_path, master_key, capsys):
    spell, normalize = RESPELLINGS[3][1], RESPELLINGS[3][2]
    data = two_years(spell)
    spec, ledger, _, _ = two_year_gate(tmp_path, data, normalize=normalize)
    table = tmp_path / "as_published_2024.csv"
    data[data["visit_date"].str.startswith("2024")].drop(columns=["name"]).to_csv(table, index=False)
    args = ["compose", str(spec.spec_path), "--input", str(table), "--anonymized", "--partition", "2024",
            "--ledger", str(ledger.path), "--json"]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert json.loads(out)["effective_k"] == 1
    assert "PID" not in out and "０" not in out


def test_numbers_read_as_floats_link_as_the_integers_they_are():
    """A CSV column of ids with a gap is read as floats: 1234.0 is published (and linked) as 1234."""
    key = b"k" * 32
    as_ints = linkage_pseudonyms(pd.Series([1234, 99]), key)
    assert list(linkage_pseudonyms(pd.Series([1234.0, 99.0]), key)) == list(as_ints)
    assert list(linkage_pseudonyms(pd.Series(["1234", " 99"]), key)) == list(as_ints)


# ----- the linkage partitions persons exactly as the published pseudonyms do --------------------

OPTIONS = [NormalizeSpec(trim=t, case=c, unicode=u)
           for t, c, u in itertools.product([True, False], ["keep", "upper", "lower"], ["NFC", "NFKC", "none"])]
TRICKY = list("aAbBzZ19") + ["１", "９", " ", "\t", "\u00a0", "\u2003", "\u0301", "é", "É", "ß", "ẞ", "ﬁ", "Ω", "Ω"]


def _partition(values: list[str]) -> list[int]:
    """Which entries are equal, as first-occurrence codes: equal lists = same grouping."""
    return pd.factorize(pd.Series(values, dtype=object))[0].tolist()


@settings(max_examples=120, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(TRICKY), min_size=1, max_size=5), min_size=2, max_size=12),
       st.sampled_from(OPTIONS))
def test_linkage_groups_spellings_exactly_as_the_published_pseudonyms_do(values, options):
    keystore = KeyStore(EnvKeyBackend(MASTER_KEY))
    published, _ = pseudonymize_values(pd.Series(values, dtype=object), keystore, method="hmac", normalize=options)
    kept = [v for v, p in zip(values, published, strict=True) if isinstance(p, str)]  # empty → no pseudonym
    if not kept:
        return
    published = [p for p in published if isinstance(p, str)]
    linked = linkage_pseudonyms(pd.Series(kept, dtype=object), keystore.derive_key("ledger-linkage"), normalize=options)
    assert _partition(list(linked)) == _partition(published)
    # and the linkage is not the published pseudonym itself (another key, never published)
    assert set(linked).isdisjoint(p.split(":", 1)[1] for p in published)


REENCODINGS = {
    "padded": lambda v: f" \t{v}\u00a0", "upper": str.upper, "lower": str.lower, "casefold": str.casefold,
    "NFC": lambda v: unicodedata.normalize("NFC", v), "NFD": lambda v: unicodedata.normalize("NFD", v),
    "NFKD": lambda v: unicodedata.normalize("NFKD", v), "full-width": lambda v: v.translate(FULL_WIDTH),
}


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet=st.sampled_from([c for c in TRICKY if c.strip()]), min_size=1, max_size=6),
       st.lists(st.sampled_from(sorted(REENCODINGS)), min_size=1, max_size=3))
def test_the_default_person_spelling_joins_every_reencoding_of_the_text(value, steps):
    """A person column that is not pseudonymized may be published as text, which a reader can
    trim, case-map and Unicode-normalize before joining: the default linkage joins all of those."""
    respelled = value
    for step in steps:
        respelled = REENCODINGS[step](respelled)
    key = b"k" * 32
    a, b = linkage_pseudonyms(pd.Series([value, respelled], dtype=object), key, normalize=PERSON_NORMALIZATION)
    assert a == b, (value, respelled)


def test_the_default_person_spelling_keeps_content_apart():
    """Only encodings are folded, never content: these are four persons."""
    values = pd.Series(["PID1", "PID01", "PID-1", "PIDI"], dtype=object)
    assert len(set(linkage_pseudonyms(values, b"k" * 32, normalize=PERSON_NORMALIZATION))) == 4
