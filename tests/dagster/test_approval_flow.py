"""A release with approval required, through Dagster: awaiting approval (nothing published), the
approval recorded by ``anon-dagster approve``, the approval sensor's tick requesting the run, and
that run publishing; a change of the data after the approval voids it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from dagster import AssetKey, DagsterInstance, DefaultSensorStatus, build_sensor_context

from anon_dagster.cli import main as cli
from anon_dagster.dagster.resources import KeyStoreResource, LedgerResource
from anon_dagster.release.governance import RUNNER_ENV
from anon_dagster.release.targets import target_of
from anon_dagster.spec import load_spec
from tests.support.ledgers import env_ledger
from tests.support.releases import check_evaluations, load, run, write_release

PUBLISHED = AssetKey(["tiny", "published"])


@pytest.fixture
def governed(env: Path) -> Path:
    """The tiny release, with ``approval: {required: true, approvers: [dpo]}``; its spec's path."""
    path = write_release(env)
    raw = yaml.safe_load(path.read_text())
    raw["approval"] = {"required": True, "approvers": ["dpo"], "min_approvals": 1}
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def published_outcome(result) -> dict[str, object]:
    """The metadata values of the run's materialization of ``tiny/published``."""
    [mat] = [e.event_specific_data.materialization for e in result.all_events
             if e.event_type_value == "ASSET_MATERIALIZATION" and e.asset_key == PUBLISHED]
    return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}


def approve(spec: Path, env: Path, evaluation: str, monkeypatch, capsys) -> int:
    """``anon-dagster approve`` by the DPO, from a process that runs as someone else than the pipeline."""
    monkeypatch.setenv(RUNNER_ENV, "dpo-desk")
    code = cli(["approve", str(spec), "--partition", "2023", "--evaluation", evaluation, "--as", "dpo",
                "--reason", "figures read", "--ledger", str(env / "state" / "ledger.sqlite")])
    monkeypatch.setenv(RUNNER_ENV, "pipeline")
    capsys.readouterr()
    return code


def tick(defs, env: Path, instance, cursor: str | None):
    """One tick of the release's approval sensor, with the definitions' ledger and keys."""
    sensor = defs.resolve_sensor_def("tiny_approval_sensor")
    resources = {"ledger": LedgerResource(path=str(env / "state" / "ledger.sqlite")), "keystore": KeyStoreResource()}
    return sensor.evaluate_tick(build_sensor_context(instance=instance, cursor=cursor, definitions=defs,
                                                     resources=resources))


def test_awaiting_then_approved_through_the_cli_then_published_by_the_sensors_run(env, governed, monkeypatch,
                                                                                 capsys):
    monkeypatch.setenv(RUNNER_ENV, "pipeline")
    spec = load_spec(governed)
    defs = load(env, governed)
    assert defs.resolve_sensor_def("tiny_approval_sensor").default_status == DefaultSensorStatus.RUNNING
    with DagsterInstance.ephemeral() as instance:
        first = run(defs, "tiny", "2023", instance)
        meta = published_outcome(first)
        assert meta["outcome"] == "awaiting_approval" and not target_of(spec, "2023").path.exists()
        evaluation = meta["evaluation"]
        command = (f"anon-dagster approve {spec.label} --partition 2023 --evaluation {evaluation} "
                   "--as NAME --reason TEXT")
        assert meta["approve_command"] == command and Path(str(meta["report"])).exists()
        check = check_evaluations(first)["publication"]
        assert not check.passed and check.severity.value == "WARN" and command in check.description
        assert first.success  # nothing failed: the run ends awaiting, as the outcome says
        [recorded] = [e for e in env_ledger(env / "state" / "ledger.sqlite").content_events()
                      if e["event"] == "evaluation"]
        assert (recorded["verdict"], recorded["run_id"], recorded["runner"]) == ("awaiting", first.run_id, "pipeline")

        idle = tick(defs, env, instance, None)
        assert idle.run_requests == []  # nobody approved yet
        assert approve(governed, env, str(evaluation), monkeypatch, capsys) == 0
        due = tick(defs, env, instance, idle.cursor)
        assert [(r.partition_key, r.asset_selection) for r in due.run_requests] == [("2023", [PUBLISHED])]
        assert tick(defs, env, instance, due.cursor).run_requests == []  # each approval acted on once

        second = run(defs, "tiny", "2023", instance, selection=due.run_requests[0].asset_selection)
        done = published_outcome(second)
        assert done["outcome"] == "published" and done["evaluation"] == evaluation
        assert check_evaluations(second)["publication"].passed
        assert len(pd.read_parquet(target_of(spec, "2023").path)) == done["rows"]


def test_a_change_of_the_data_after_the_approval_voids_it(env, governed, monkeypatch, capsys):
    monkeypatch.setenv(RUNNER_ENV, "pipeline")
    spec = load_spec(governed)
    defs = load(env, governed)
    with DagsterInstance.ephemeral() as instance:
        evaluation = str(published_outcome(run(defs, "tiny", "2023", instance))["evaluation"])
        assert approve(governed, env, evaluation, monkeypatch, capsys) == 0
        source = env / "data" / "tiny.csv"
        rows = pd.read_csv(source)
        first = rows.index[rows["visit_date"] == "2023-03-01"][0]
        rows.loc[first, "diagnosis"] = "A10" if rows.loc[first, "diagnosis"] != "A10" else "B20"
        rows.to_csv(source, index=False)
        again = published_outcome(run(defs, "tiny", "2023", instance))
        assert again["outcome"] == "awaiting_approval" and again["evaluation"] != evaluation
        assert not target_of(spec, "2023").path.exists()
