"""The retention schedule: its job deletes the intermediates past their retention, as the core does,
and records each deletion in the custody log with the run's id."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import yaml
from dagster import DagsterInstance

from anon_dagster import storage
from anon_dagster.dagster.retention import retention_schedule
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.pseudonymize.audit import AuditLog
from anon_dagster.release.ledger import open_ledger
from anon_dagster.spec import load_spec
from tests.support.ledgers import env_ledger
from tests.support.releases import write_release


def test_the_scheduled_job_deletes_what_is_past_retention_with_the_run_in_custody(env):
    spec_path = write_release(env)
    raw = yaml.safe_load(spec_path.read_text())
    raw["retention"] = {"raw_days": 30}
    spec_path.write_text(yaml.safe_dump(raw, sort_keys=False))
    spec = load_spec(spec_path)
    env_ledger(env / "state" / "ledger.sqlite", create=True)
    keystore = open_keystore()
    kek = keystore.derive_key(storage.DATA_AT_REST_PURPOSE)
    store = storage.TableStore(env / "store")
    frame = pd.DataFrame({"pid": ["P1"], "age": [40]})
    store.write(("tiny", "raw"), "2023", frame, kek, stored_at=datetime(2020, 1, 1, tzinfo=UTC))  # long past
    store.write(("tiny", "raw"), "2024", frame, kek)  # stored now: 30 days to go
    store.write(("tiny", "pseudonymized"), "2023", frame, kek, stored_at=datetime(2020, 1, 1, tzinfo=UTC))

    schedule = retention_schedule([spec], base_dir=str(env / "store"))
    assert schedule.cron_schedule == "0 3 * * *" and schedule.execution_timezone == "UTC"
    result = schedule.job.execute_in_process(instance=DagsterInstance.ephemeral())
    assert result.success
    # pseudonymized_days is not set: that table stays however old it is
    assert store.partitions(("tiny", "raw")) == ["2024"] and store.partitions(("tiny", "pseudonymized")) == ["2023"]
    deleted = [e["event"] for e in AuditLog(keystore).entries() if e["event"]["action"] == "retention-delete"]
    assert [(d["partition"], d["run"]) for d in deleted] == [("2023", result.run_id)]
    [event] = [e for e in open_ledger(None, keystore).content_events() if e["event"] == "retention"]
    assert [t["partition"] for t in event["tables"]] == ["2023"]


def test_the_component_schedules_retention_only_when_a_spec_declares_it(env):
    from anon_dagster.dagster import load_release_definitions

    spec_path = write_release(env)
    plain = load_release_definitions(spec_path.parent, storage_dir=str(env / "store"))
    assert "anon_dagster_retention_schedule" not in {s.name for s in plain.schedules}
    raw = yaml.safe_load(spec_path.read_text())
    raw["retention"] = {"raw_days": 30, "pseudonymized_days": 90}
    spec_path.write_text(yaml.safe_dump(raw, sort_keys=False))
    governed = load_release_definitions(spec_path.parent, storage_dir=str(env / "store"))
    [schedule] = [s for s in governed.schedules if s.name == "anon_dagster_retention_schedule"]
    assert schedule.cron_schedule == "0 3 * * *"
    assert governed.resolve_job_def("anon_dagster_retention") is not None
