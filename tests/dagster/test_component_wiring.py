"""The component's Definitions carry what each release builds: its sensors, and one executor
that runs every step in the run's own process."""

from __future__ import annotations

from anon_dagster.dagster import AnonReleaseComponent
from tests.support.releases import write_release


def test_the_components_definitions_hold_every_releases_sensors_and_run_in_process(env):
    spec = write_release(env)
    defs = AnonReleaseComponent(config_dir=str(spec.parent)).build_definitions(env)
    names = {s.name for s in defs.sensors or []}
    built = AnonReleaseComponent(config_dir=str(spec.parent)).releases(env)
    expected = {s.name for r in built for s in r.sensors}
    assert expected and expected <= names
    assert defs.executor is not None and defs.executor.name == "in_process"
    # a selection materialized from the UI runs through an implicit job with that executor
    job = defs.resolve_implicit_global_asset_job_def()
    assert job.executor_def.name == "in_process"
