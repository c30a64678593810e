"""A refusal is an outcome of the published asset: materialized with ``outcome: refused`` and its
reasons, the blocking ``publication`` check failed with one line per failed check, no stack trace
of ours; the runner reports it as refused with the failed checks.
"""

from __future__ import annotations

import json

import pytest
from dagster import AssetKey, DagsterInstance

from anon_dagster.dagster.runner import materialize_release
from anon_dagster.spec import load_spec
from tests.support.ledgers import env_ledger
from tests.support.linkage import composing_release, two_years
from tests.support.releases import check_evaluations, load, run, write_release

pytestmark = pytest.mark.filterwarnings("ignore:.*scrypt n=.*is weak")

RELEASE = "yearly"
STEPS = [AssetKey([RELEASE, s]) for s in ("raw", "pseudonymized", "anonymized")]
PUBLISHED = AssetKey([RELEASE, "published"])


def published_materialization(result):
    [mat] = [e.event_specific_data.materialization for e in result.all_events
             if e.event_type_value == "ASSET_MATERIALIZATION" and e.asset_key == PUBLISHED]
    return mat


def step_failures(result) -> dict[str, object]:
    return {e.step_key: e.event_specific_data.error for e in result.all_events if e.event_type_value == "STEP_FAILURE"}


def test_a_refusal_with_green_checks_is_the_published_assets_outcome(env):
    """2024's checks pass while 2023 is not yet published; published alone, later, refuses it."""
    defs, instance = load(env, composing_release(env, two_years())), DagsterInstance.ephemeral()
    checked = run(defs, RELEASE, "2024", instance, selection=STEPS)
    assert checked.success and check_evaluations(checked)["composition"].passed is True
    assert run(defs, RELEASE, "2023", instance).success

    later = run(defs, RELEASE, "2024", instance, selection=[PUBLISHED])
    assert not later.success
    mat = published_materialization(later)
    assert mat.partition == "2024" and mat.metadata["outcome"].value == "refused"
    assert mat.metadata["failed_checks"].value == ["composition"]
    assert mat.metadata["reasons"].value.startswith("composition: effective k = 1")
    assert mat.metadata["refusal"].value["failed_checks"] == ["composition"]
    assert "dagster/row_count" not in mat.metadata  # nothing was published
    publication = check_evaluations(later)["publication"]
    assert publication.passed is False and publication.blocking
    lines = publication.description.splitlines()
    assert len(lines) == 1 and lines[0].startswith("composition: effective k = 1")
    assert publication.metadata["evaluation"].value == mat.metadata["evaluation"].value
    # the step fails on Dagster's blocking check, not on an error of ours
    [error] = step_failures(later).values()
    assert error.cls_name == "DagsterAssetCheckFailedError" and "yearly/published: publication" in error.message
    shown = json.dumps({k: str(v.value) for k, v in mat.metadata.items()})
    assert "Traceback" not in shown and "Traceback" not in publication.description
    # the refusal is recorded in the ledger with its report, and nothing was written
    assert env_ledger(env / "state" / "ledger.sqlite").latest(RELEASE, "2024").status == "failed"
    assert (env / "reports" / RELEASE / "2024" / "risk_report.md").exists()
    assert not (env / "published" / RELEASE / "2024.parquet").exists()


def test_failed_checks_no_longer_skip_the_publication_step(env):
    defs, instance = load(env, composing_release(env, two_years())), DagsterInstance.ephemeral()
    assert run(defs, RELEASE, "2023", instance).success
    second = run(defs, RELEASE, "2024", instance)
    evaluations = check_evaluations(second)
    assert evaluations["composition"].passed is False and not evaluations["composition"].blocking
    assert evaluations["publication"].passed is False
    assert published_materialization(second).metadata["outcome"].value == "refused"
    assert set(step_failures(second)) == {"yearly__published"}  # the checks step itself succeeded


def test_a_publication_refused_by_its_target_names_the_reason(env):
    """No check failed: the publication folder holds a symbolic link, so nothing is written."""
    spec_path = write_release(env, thresholds={"k": 2})
    (env / "elsewhere").mkdir()
    (env / "published").mkdir()
    (env / "published" / "tiny").symlink_to(env / "elsewhere", target_is_directory=True)
    defs = load(env, spec_path)
    result = run(defs, "tiny", "2023", DagsterInstance.ephemeral())
    assert not result.success
    [mat] = [e.event_specific_data.materialization for e in result.all_events
             if e.event_type_value == "ASSET_MATERIALIZATION" and e.asset_key == AssetKey(["tiny", "published"])]
    assert mat.metadata["outcome"].value == "refused" and mat.metadata["failed_checks"].value == []
    publication = check_evaluations(result)["publication"]
    assert publication.passed is False and publication.description
    # the alert's reasons never name this machine's paths
    assert str(env) not in json.dumps(mat.metadata["refusal"].value)
    assert not any((env / "elsewhere").iterdir())
    [outcome] = materialize_release(defs, load_spec(spec_path), DagsterInstance.ephemeral(), ["2023"])
    assert outcome.outcome == "refused" and outcome.failed_checks == ["publication"]
    assert outcome.reasons and outcome.reasons[0].startswith("publication: ")


def test_the_runner_reports_a_refused_partition_with_its_failed_checks(env):
    spec_path = composing_release(env, two_years())
    defs = load(env, spec_path)
    spec = load_spec(spec_path)
    published, refused = materialize_release(defs, spec, DagsterInstance.ephemeral())
    assert published.outcome == "published" and published.success and published.published.exists()
    assert refused.partition == "2024" and refused.refused and not refused.success
    assert refused.failed_checks == ["composition"]
    assert len(refused.reasons) == 1 and refused.reasons[0].startswith("composition: effective k = 1")
    assert refused.published is None and refused.report == env / "reports" / RELEASE / "2024" / "risk_report.md"
    assert refused.evaluation and refused.failed_steps == ["yearly__published"]
