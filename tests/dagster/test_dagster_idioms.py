"""What Dagster shows of a release, from its spec: owners, tags, kinds, descriptions, code versions,
row counts and the published schema; the freshness of its publications; the sensor of its
source files; one process per run.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
import yaml
from dagster import AssetKey, DagsterInstance, SensorResult, SkipReason, build_sensor_context

from anon_dagster.dagster import KeyStoreResource, LedgerResource, ReleaseTranslator
from anon_dagster.dagster.assets import build_release
from anon_dagster.dagster.sensors import freshness_evaluation, source_requests
from anon_dagster.errors import SpecError
from anon_dagster.release.step_conventions import package_version
from anon_dagster.spec import load_spec
from tests.support.ledgers import env_ledger
from tests.support.releases import check_evaluations, load, run, write_release

pytestmark = pytest.mark.filterwarnings("ignore:.*scrypt n=.*is weak")

STEPS = ("raw", "pseudonymized", "anonymized", "published")


def edit(spec_path, **changes):
    spec = yaml.safe_load(spec_path.read_text())
    spec.update(changes)
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return spec_path


def asset_spec(defs, release: str, step: str):
    key = AssetKey([release, step])
    return defs.resolve_assets_def(key).specs_by_key[key]


def test_owners_tags_kinds_and_descriptions_come_from_the_spec(env):
    spec_path = edit(write_release(env), description="Visits of the tiny clinic, yearly",
                     owners=["privacy-office@example.org", "team:open-data"], tags={"domain": "health", "tier": "gold"})
    defs = load(env, spec_path)
    for step in STEPS:
        spec = asset_spec(defs, "tiny", step)
        assert spec.owners == ["privacy-office@example.org", "team:open-data"]
        assert spec.tags["domain"] == "health" and spec.tags["tier"] == "gold"
        assert spec.description.startswith("Visits of the tiny clinic, yearly\n\n")
        assert spec.code_version.startswith(f"{package_version()}-")
    assert asset_spec(defs, "tiny", "raw").kinds == {"pandas", "csv"}
    assert asset_spec(defs, "tiny", "published").kinds == {"parquet"}


def test_a_bad_owner_or_tag_is_a_spec_error_naming_the_key(env):
    spec_path = edit(write_release(env), owners=["nobody"], tags={"tier": "top tier"})
    with pytest.raises(SpecError) as info:
        load_spec(spec_path)
    keys = {p.key for p in info.value.problems}
    assert keys == {"owners.0", "tags.tier"}


def test_the_code_version_changes_with_what_the_spec_publishes_only(env):
    spec_path = write_release(env)
    before = asset_spec(load(env, spec_path), "tiny", "anonymized").code_version
    edit(spec_path, tags={"domain": "health"}, owners=["team:open-data"])
    assert asset_spec(load(env, spec_path), "tiny", "anonymized").code_version == before
    spec = yaml.safe_load(spec_path.read_text())
    spec["anonymization"]["k"] = 3
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    assert asset_spec(load(env, spec_path), "tiny", "anonymized").code_version != before


def test_row_counts_and_the_published_schema(env):
    defs = load(env, write_release(env, thresholds={"k": 2, "prosecutor_max": 0.5}))
    result = run(defs, "tiny", "2023", DagsterInstance.ephemeral())
    assert result.success
    mats = {e.asset_key.path[-1]: e.event_specific_data.materialization for e in result.all_events
            if e.event_type_value == "ASSET_MATERIALIZATION"}
    published = pd.read_parquet(env / "published" / "tiny" / "2023.parquet")
    assert mats["raw"].metadata["dagster/row_count"].value == 40
    assert mats["anonymized"].metadata["dagster/row_count"].value == mats["anonymized"].metadata["rows"].value
    assert mats["published"].metadata["dagster/row_count"].value == len(published)
    schema = mats["published"].metadata["dagster/column_schema"].value
    assert [c.name for c in schema.columns] == list(published.columns)
    assert mats["published"].metadata["outcome"].value == "published"
    assert check_evaluations(result)["freshness"].passed is True


def test_the_release_job_runs_its_steps_in_one_process(env):
    defs = load(env, write_release(env))
    assert defs.resolve_job_def("tiny_release").executor_def.name == "in_process"


def test_freshness_fails_once_the_latest_publication_is_past_its_review(env):
    spec_path = edit(write_release(env, thresholds={"k": 2}), policy={"thresholds": {"k": 2}, "review_after_days": 30})
    defs = load(env, spec_path)
    spec, t = load_spec(spec_path), ReleaseTranslator()
    ledger = env_ledger(env / "state" / "ledger.sqlite")
    empty = freshness_evaluation(spec, ledger, t)
    assert empty.passed and "nothing published" in empty.description
    assert run(defs, "tiny", "2023", DagsterInstance.ephemeral()).success
    now = datetime.now(UTC)
    assert freshness_evaluation(spec, ledger, t, now=now + timedelta(days=29)).passed
    late = freshness_evaluation(spec, ledger, t, now=now + timedelta(days=31))
    assert not late.passed and late.check_name == "freshness" and late.asset_key == AssetKey(["tiny", "published"])
    assert "review after 30 days" in late.description and late.metadata["latest_partition"].value == "2023"


def test_the_freshness_sensor_judges_from_the_ledger_without_a_run(env):
    spec_path = write_release(env)
    defs = load(env, spec_path)
    [sensor] = [s for s in build_release(load_spec(spec_path)).sensors if s.name == "tiny_freshness_sensor"]
    resources = {"ledger": LedgerResource(path=str(env / "state" / "ledger.sqlite")), "keystore": KeyStoreResource()}
    result = sensor(build_sensor_context(instance=DagsterInstance.ephemeral(), resources=resources))
    assert isinstance(result, SensorResult) and result.asset_events[0].passed
    missing = {**resources, "ledger": LedgerResource(path=str(env / "no" / "ledger.sqlite"))}
    skipped = sensor(build_sensor_context(instance=DagsterInstance.ephemeral(), resources=missing))
    assert isinstance(skipped, SkipReason) and "ledger" in skipped.skip_message
    assert defs is not None


def per_partition_release(env):
    spec_path = write_release(env)
    data = pd.read_csv(env / "data" / "tiny.csv")
    for year in ("2023", "2024"):
        data[data["visit_date"].str.startswith(year)].to_csv(env / "data" / f"tiny_{year}.csv", index=False)
    spec = yaml.safe_load(spec_path.read_text())
    spec["source"]["path"] = "../data/tiny_{partition}.csv"
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return load_spec(spec_path)


def touch(path, seconds: int) -> None:
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + seconds * 10**9))


def test_the_source_sensor_runs_each_partition_whose_file_appears_or_changes(env):
    spec = per_partition_release(env)
    (env / "data" / "tiny_2024.csv").rename(env / "data" / "later.csv")
    requests, cursor = source_requests(spec, None)
    assert [r.partition_key for r in requests] == ["2023"]
    assert source_requests(spec, cursor)[0] == []
    (env / "data" / "later.csv").rename(env / "data" / "tiny_2024.csv")  # 2024's file appears
    requests, cursor = source_requests(spec, cursor)
    assert [r.partition_key for r in requests] == ["2024"]
    touch(env / "data" / "tiny_2023.csv", 5)  # and 2023's changes
    requests, cursor = source_requests(spec, cursor)
    assert [r.partition_key for r in requests] == ["2023"] and requests[0].run_key.startswith("2023@")
    assert source_requests(spec, cursor)[0] == []


def test_one_source_file_runs_every_partition_once_then_the_latest_on_a_change(env):
    spec = load_spec(write_release(env))
    requests, cursor = source_requests(spec, None)
    assert [r.partition_key for r in requests] == ["2023", "2024"]
    assert source_requests(spec, cursor)[0] == []
    touch(env / "data" / "tiny.csv", 5)
    requests, cursor = source_requests(spec, cursor)
    assert [r.partition_key for r in requests] == ["2024"]


def test_the_source_sensor_through_dagster(env):
    spec = load_spec(write_release(env))
    [sensor] = [s for s in build_release(spec).sensors if s.name == "tiny_source_sensor"]
    context = build_sensor_context(instance=DagsterInstance.ephemeral())
    first = sensor(context)
    assert [r.partition_key for r in first.run_requests] == ["2023", "2024"]
    again = sensor(build_sensor_context(instance=DagsterInstance.ephemeral(), cursor=first.cursor))
    assert not again.run_requests and again.skip_reason is not None


def test_a_releases_definitions_with_its_sensors_load(env, repo_root):
    from pathlib import Path

    from dagster import Definitions

    from anon_dagster.dagster import AnonParquetIOManager, AnonReleaseComponent, keystore_from_env

    releases = AnonReleaseComponent(config_dir=str(repo_root / "assets_config")).releases(Path(env))
    keystore = keystore_from_env()
    defs = Definitions.merge(*(r.definitions() for r in releases), Definitions(resources={
        "keystore": keystore, "io_manager": AnonParquetIOManager(keystore=keystore), "ledger": LedgerResource()}))
    Definitions.validate_loadable(defs)
    names = {s.name for s in defs.sensors}
    assert {"hospital_discharges_source_sensor", "hospital_discharges_freshness_sensor"} <= names
