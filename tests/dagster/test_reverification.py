"""The publication step's re-verification takes up the checks' evaluation only when nothing it
depends on changed: the same stored tables, spec, population file and ledger entries.
"""

from __future__ import annotations

import pandas as pd
import pytest
from dagster import AssetKey, DagsterInstance

import anon_dagster.release.publish_step as steps
from anon_dagster.release import evaluation_memo
from tests.support.linkage import composing_release, two_years
from tests.support.releases import check_evaluations, load, run

pytestmark = pytest.mark.filterwarnings("ignore:.*scrypt n=.*is weak")

STEPS = [AssetKey(["yearly", s]) for s in ("raw", "pseudonymized", "anonymized")]


@pytest.fixture
def counted(monkeypatch) -> list[set | None]:
    """The ``only`` of every evaluation the release's steps compute."""
    calls: list[set | None] = []
    original = steps.evaluate_stored

    def counting(*args, **kwargs):
        calls.append(kwargs.get("only"))
        return original(*args, **kwargs)

    monkeypatch.setattr(steps, "evaluate_stored", counting)
    evaluation_memo.forget()
    return calls


def test_a_run_evaluates_the_gate_once(env, counted):
    defs = load(env, composing_release(env, two_years()))
    result = run(defs, "yearly", "2023", DagsterInstance.ephemeral())
    assert result.success and check_evaluations(result)["publication"].passed
    assert len(counted) == 1  # the checks' evaluation, taken up by the publication step


def test_a_publication_of_the_population_in_between_is_evaluated_again(env, counted):
    defs, instance = load(env, composing_release(env, two_years())), DagsterInstance.ephemeral()
    assert run(defs, "yearly", "2024", instance, selection=STEPS).success  # checked, not published
    assert run(defs, "yearly", "2023", instance).success
    counted.clear()
    later = run(defs, "yearly", "2024", instance, selection=[AssetKey(["yearly", "published"])])
    assert len(counted) == 1  # the ledger holds 2023 now: nothing was taken up
    assert check_evaluations(later)["publication"].passed is False


def test_the_digest_of_a_stored_table():
    table = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    assert evaluation_memo.table_digest(table) == evaluation_memo.table_digest(table.copy())
    changed = table.copy()
    changed.loc[1, "b"] = "z"
    assert evaluation_memo.table_digest(changed) != evaluation_memo.table_digest(table)
    carrying = table.copy()
    carrying.attrs = {"record": "another record"}
    assert evaluation_memo.table_digest(carrying) != evaluation_memo.table_digest(table)
    assert evaluation_memo.table_digest(table.astype({"a": "float64"})) != evaluation_memo.table_digest(table)
