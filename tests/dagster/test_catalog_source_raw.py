"""In Dagster the release's steps run the pandas pipeline: a release whose source is a table of
the Spark catalog (``source.table``) fails at its raw asset with the pipeline's one line naming the
spec, the key and the ways out (the description of the step's Dagster ``Failure``, without a
Python stack), and nothing after it runs."""

from __future__ import annotations

import yaml
from dagster import DagsterInstance

from tests.support.releases import load, materialized, run, write_release


def test_the_raw_asset_fails_with_the_one_line(env):
    spec_path = write_release(env, composition=False)
    spec = yaml.safe_load(spec_path.read_text())
    spec["source"] = {"table": "clinic.visits"}
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    result = run(load(env, spec_path), "tiny", "2023", DagsterInstance.ephemeral())
    assert not result.success
    failures = result.get_step_failure_events()
    assert [f.step_key.split(".")[-1].split("__")[-1] for f in failures] == ["raw"], [f.step_key for f in failures]
    # the pipeline's user error is the step's Failure, its description the one line
    assert failures[0].event_specific_data.error.cls_name == "Failure"
    assert failures[0].step_failure_data.user_failure_data.description == (
        f"{spec_path}: source.table 'clinic.visits' is a table of the Spark "
        "catalog, read by the Spark engine only: run the command with --engine spark, or give the rows with "
        "--input DATA (a csv or parquet file) where the command takes it")
    assert not materialized(result) and not (env / "published").exists()
