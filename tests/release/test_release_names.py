"""The names and definition metadata of a release's objects."""

from __future__ import annotations

from anon_dagster import storage
from anon_dagster.release import release_names as names
from anon_dagster.release.step_storage import AT_REST_KEY
from anon_dagster.spec.loading import load_spec
from tests.support.releases import write_release


def test_every_name_is_the_release_name_with_its_role(tmp_path):
    spec = load_spec(write_release(tmp_path, name="visits"))
    assert names.asset_path(spec, "raw") == ["visits", "raw"]
    assert (names.job_name(spec), names.schedule_name(spec)) == ("visits_release", "visits_schedule")
    assert names.source_sensor_name(spec) == "visits_source_sensor"
    assert names.freshness_sensor_name(spec) == "visits_freshness_sensor"
    assert names.approval_sensor_name(spec) == "visits_approval_sensor"
    assert names.checks_name(spec) == "visits_checks"


def test_stored_steps_carry_their_policy_and_raw_its_spec(tmp_path):
    path = write_release(tmp_path, name="visits")
    spec = load_spec(path)
    raw = names.step_metadata(spec, "raw")
    assert raw["spec"] == str(path) and raw[AT_REST_KEY] in (storage.ENCRYPTED, storage.ENCRYPTED_IF_AVAILABLE)
    assert names.step_metadata(spec, "published") == {}  # the publication stores nothing
    assert names.owners(spec) == [] and names.tags(spec) == {}
