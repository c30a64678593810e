"""The approval sensor: one run request of the published asset's partition per evaluation an
approval made due, then none for the same approval (the cursor is the last decision's seq)."""

from __future__ import annotations

import pytest
import yaml
from dagster import AssetKey, Definitions, asset
from dagster import build_sensor_context as dagster_context

from anon_dagster.dagster.approval import approval_sensor
from anon_dagster.dagster.partitions import partitions_def_for
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import pipeline
from anon_dagster.release.governance import RUNNER_ENV, AwaitingApproval, decide
from anon_dagster.release.publication import publish_release
from anon_dagster.spec import load_spec
from tests.support.ledgers import env_ledger
from tests.support.releases import write_release


def test_an_approval_requests_the_publication_once(tmp_path, master_key, monkeypatch):
    spec_path = write_release(tmp_path, thresholds={"k": 2})
    raw = yaml.safe_load(spec_path.read_text())
    raw["approval"] = {"required": True, "approvers": ["dpo"], "min_approvals": 1}
    spec_path.write_text(yaml.safe_dump(raw, sort_keys=False))
    spec = load_spec(spec_path)
    ledger = env_ledger(tmp_path / "ledger.sqlite", create=True)
    monkeypatch.setenv(RUNNER_ENV, "pipeline")
    run = pipeline.run_gate(spec, partition="2023", keystore=open_keystore(), ledger=ledger)
    with pytest.raises(AwaitingApproval):
        publish_release(spec, run.evaluation, anonymized=run.anonymized.data, pseudonymized=run.pseudonymized.data,
                        ledger=ledger)
    sensor = approval_sensor([spec], ledger=lambda: env_ledger(ledger.path))

    @asset(key=AssetKey(["tiny", "published"]), partitions_def=partitions_def_for(spec))
    def published() -> None:  # a stand-in for the release's published asset, which the sensor targets
        return None

    defs = Definitions(assets=[published], sensors=[sensor])

    def build_sensor_context(cursor):
        return dagster_context(cursor=cursor, definitions=defs)
    nothing = sensor.evaluate_tick(build_sensor_context(cursor=None))
    assert nothing.run_requests == [] and nothing.cursor == "0"  # awaiting, nobody approved yet
    monkeypatch.setenv(RUNNER_ENV, "dpo-desk")
    decide(spec, ledger, partition="2023", evaluation=run.evaluation.id, approver="dpo", decision="approve")
    tick = sensor.evaluate_tick(build_sensor_context(cursor=nothing.cursor))
    assert [(r.partition_key, r.asset_selection) for r in tick.run_requests] == [("2023", [AssetKey(["tiny", "published"])])]
    assert tick.run_requests[0].tags["anon_dagster/approved_evaluation"] == run.evaluation.id
    assert int(tick.cursor) > 0
    again = sensor.evaluate_tick(build_sensor_context(cursor=tick.cursor))
    assert again.run_requests == [] and again.cursor == tick.cursor
