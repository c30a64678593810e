"""Pseudonym scopes through the release's Dagster job: both years of returning persons published,
then the two files compared as anyone holding them would (a join on ``pid``).
"""

from __future__ import annotations

import re

import pytest
from dagster import DagsterInstance

from anon_dagster.errors import SpecError
from anon_dagster.io import read_table
from anon_dagster.pseudonymize import pseudonym_pattern
from anon_dagster.spec import load_spec
from tests.support.releases import load, run
from tests.support.visits import PERSONS, scoped_release

pytestmark = pytest.mark.filterwarnings("ignore:.*scrypt n=.*is weak")


def publish_both_years(env, scope: str | None) -> dict[str, object]:
    """Each year published by the job; the published files and the pseudonymized asset's metadata."""
    defs, instance = load(env, scoped_release(env, scope)), DagsterInstance.ephemeral()
    files, summaries = {}, {}
    for year in ("2023", "2024"):
        result = run(defs, "visits", year, instance)
        assert result.success, [e.message for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
        files[year] = read_table(env / "published" / "visits" / f"{year}.parquet")
        [summary] = [e.event_specific_data.materialization.metadata["pseudonymization"].value
                     for e in result.all_events if e.event_type_value == "ASSET_MATERIALIZATION"
                     and e.asset_key.to_user_string() == "visits/pseudonymized"]
        summaries[year] = summary["columns"][0]
    return {"files": files, "summaries": summaries}


def test_row_scope_publishes_pseudonyms_that_link_nothing(env):
    out = publish_both_years(env, "row")
    for year, table in out["files"].items():
        assert len(table) == 2 * PERSONS and table["pid"].is_unique, year  # two visits each, all distinct
        assert all(re.fullmatch(pseudonym_pattern("hmac"), p) for p in table["pid"])
        assert out["summaries"][year]["scope"] == "row"
    assert not set(out["files"]["2023"]["pid"]) & set(out["files"]["2024"]["pid"])


@pytest.mark.parametrize("scope", [None, "release"], ids=["default", "release"])
def test_release_scope_files_do_not_join_across_years(env, scope):
    out = publish_both_years(env, scope)
    for year, table in out["files"].items():
        assert table["pid"].nunique() == PERSONS, year  # one pseudonym per person within the year
        assert out["summaries"][year]["publication"] == f"visits/{year}"
    assert not set(out["files"]["2023"]["pid"]) & set(out["files"]["2024"]["pid"])


def test_population_scope_files_join_on_every_person(env):
    out = publish_both_years(env, "population")
    years = [set(t["pid"]) for t in out["files"].values()]
    assert len(years[0]) == PERSONS and years[0] == years[1]


def test_population_scope_without_composition_is_refused_before_any_run(env):
    spec = scoped_release(env, "population", composition=False)
    with pytest.raises(SpecError, match=r"columns\.pid\.pseudonymize\.scope.*composition"):
        load_spec(spec)  # the command line is strict
    # the definitions still load (other releases stay in the UI); this one has nothing to run
    # but its failing spec check, which names the key
    defs = load(env, spec)
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert not any(k.endswith(("/raw", "/published")) for k in keys)
    checks = [s for c in defs.asset_checks or [] for s in c.check_specs if s.name == "spec_valid"]
    assert len(checks) == 1 and re.search(r"columns\.pid\.pseudonymize\.scope.*composition", checks[0].description)
    assert not (env / "published").exists()
