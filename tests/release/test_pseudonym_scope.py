"""A pseudonym's scope, through the gate: two years of the same persons, each visiting twice a year.

``row`` links no two rows (not even one person's), so the gate has no person to measure;
``release`` (the default) links one person's rows within a partition and shares no pseudonym
between the two years' files; ``population`` gives a person one pseudonym in both years.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from anon_dagster.pseudonymize import KeyStore, pseudonym_pattern
from anon_dagster.pseudonymize.keystore import EnvKeyBackend
from anon_dagster.release import pipeline
from anon_dagster.release.gate import LINKAGE_COLUMN, publishable_view
from anon_dagster.spec import load_spec
from tests.support.keys import MASTER_KEY
from tests.support.ledgers import new_ledger
from tests.support.visits import PERSONS, scoped_release

YEARS = ("2023", "2024")


def two_years(tmp_path, scope: str | None) -> dict[str, pipeline.GateRun]:
    """Each year of the scoped release taken through the gate (evaluated, nothing published)."""
    spec = load_spec(scoped_release(tmp_path, scope))
    keystore, ledger = KeyStore(EnvKeyBackend(MASTER_KEY)), new_ledger(tmp_path / "ledger.sqlite")
    return {year: pipeline.run_gate(spec, partition=year, keystore=keystore, ledger=ledger) for year in YEARS}


def pseudonym_of_row(run: pipeline.GateRun) -> pd.DataFrame:
    """Each ingested row's person (raw ``pid``) beside its pseudonym."""
    return pd.DataFrame({"person": run.ingested.data["pid"], "pseudonym": run.pseudonymized.data["pid"]})


def published(run: pipeline.GateRun) -> set[str]:
    """The pseudonyms the year's file would hold."""
    return set(publishable_view(run.anonymized.data)["pid"].dropna())


def test_row_scope_gives_every_row_its_own_pseudonym_and_the_gate_no_person(tmp_path):
    runs = two_years(tmp_path, "row")
    for year, run in runs.items():
        rows = pseudonym_of_row(run)
        assert rows["person"].nunique() == PERSONS and len(rows) == 2 * PERSONS  # two visits each
        assert rows["pseudonym"].is_unique, year  # even the two visits of one person differ
        assert all(re.fullmatch(pseudonym_pattern("hmac"), p) for p in rows["pseudonym"])
        assert run.evaluation.check("data_contract").passed  # the contract checks the format
        assert "person" not in run.evaluation.measures  # nothing links rows: no person-level figure
        assert run.pseudonymized.summary["columns"][0]["scope"] == "row"
        assert run.pseudonymized.summary["columns"][0]["key_version"] is None  # no key made them
    assert not published(runs["2023"]) & published(runs["2024"])


@pytest.mark.parametrize("scope", [None, "release"], ids=["default", "release"])
def test_release_scope_links_a_person_within_a_partition_only(tmp_path, scope):
    runs = two_years(tmp_path, scope)
    by_year = {}
    for year, run in runs.items():
        rows = pseudonym_of_row(run)
        per_person = rows.groupby("person")["pseudonym"].nunique()
        assert (per_person == 1).all(), year  # one person, one pseudonym in the year
        assert rows.drop_duplicates("person")["pseudonym"].is_unique  # two persons, two pseudonyms
        assert run.evaluation.measures["person"]["persons"] == PERSONS  # the gate sees the persons
        column = run.pseudonymized.summary["columns"][0]
        assert column["scope"] == "release" and column["publication"] == f"visits/{year}"
        by_year[year] = dict(zip(rows["person"], rows["pseudonym"], strict=True))
    assert by_year["2023"].keys() == by_year["2024"].keys()  # the same persons in both years
    assert all(by_year["2023"][p] != by_year["2024"][p] for p in by_year["2023"])
    # the two years' files share no pseudonym: they do not join on pid
    assert published(runs["2023"]) and not published(runs["2023"]) & published(runs["2024"])


def test_population_scope_gives_a_person_one_pseudonym_in_every_partition(tmp_path):
    runs = two_years(tmp_path, "population")
    by_year = {}
    for year, run in runs.items():
        rows = pseudonym_of_row(run)
        assert (rows.groupby("person")["pseudonym"].nunique() == 1).all(), year
        assert run.evaluation.measures["person"]["persons"] == PERSONS
        by_year[year] = dict(zip(rows["person"], rows["pseudonym"], strict=True))
    assert by_year["2023"] == by_year["2024"]
    assert published(runs["2023"]) == published(runs["2024"])  # the files join on pid


def test_the_partition_given_to_the_pipeline_is_the_one_bound(tmp_path):
    """The same rows pseudonymized for two partitions get two sets of pseudonyms; for one, one."""
    spec = load_spec(scoped_release(tmp_path, "release"))
    keystore = KeyStore(EnvKeyBackend(MASTER_KEY))
    raw = pipeline.ingest(spec, "2023").data
    twice = [pipeline.pseudonymize(spec, raw, keystore, linkage=False, partition="2023").data["pid"] for _ in range(2)]
    other = pipeline.pseudonymize(spec, raw, keystore, linkage=False, partition="2024").data["pid"]
    whole = pipeline.pseudonymize(spec, raw, keystore, linkage=False).data["pid"]  # the whole release
    assert twice[0].tolist() == twice[1].tolist()
    assert not set(twice[0]) & set(other) and not set(twice[0]) & set(whole) and not set(other) & set(whole)


def test_the_ledger_linkage_stays_the_same_across_partitions_whatever_the_scope(tmp_path):
    """Composition must recognize a person in every year: the linkage pseudonym ignores the scope."""
    runs = two_years(tmp_path, "row")
    linkage = {year: dict(zip(run.ingested.data["pid"], run.pseudonymized.data[LINKAGE_COLUMN],
                              strict=True)) for year, run in runs.items()}
    assert linkage["2023"] == linkage["2024"]
