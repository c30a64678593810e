"""A Dagster run's loads of stored raw and pseudonymized tables are in the custody log with the
run's id, who ran it and which step read them; the anonymized table's loads are not (its reads
are not governed), and a custody log that was tampered with stops the run's reads."""

from __future__ import annotations

import json

from dagster import DagsterInstance

from anon_dagster.pseudonymize import open_keystore
from anon_dagster.pseudonymize.audit import AuditLog
from tests.support.ledgers import env_ledger
from tests.support.releases import load, run, write_release


def reads(keystore) -> list[dict]:
    return [e["event"] for e in AuditLog(keystore).entries() if e["event"]["action"] == "read"]


def messages(error) -> str:
    """An error's message and its causes'."""
    out = []
    while error is not None:
        out.append(error.message)
        error = error.cause
    return " ".join(out)


def test_a_runs_reads_are_in_custody_with_its_run_id(env, monkeypatch):
    monkeypatch.setenv("ANON_DAGSTER_RUNNER", "nightly-pipeline")
    spec = write_release(env)
    env_ledger(env / "state" / "ledger.sqlite", create=True)
    defs = load(env, spec)
    result = run(defs, "tiny", "2023", DagsterInstance.ephemeral())
    assert result.success
    found = reads(open_keystore())
    assert found, "no read recorded"
    assert {(r["release"], r["step"], r["partition"]) for r in found} == {("tiny", "raw", "2023"),
                                                                        ("tiny", "pseudonymized", "2023")}
    assert {r["run"] for r in found} == {result.run_id}
    assert {r["actor"] for r in found} == {"nightly-pipeline"}
    assert all(r["why"].startswith("input of ") for r in found)


def test_a_tampered_custody_log_stops_the_reads(env):
    spec = write_release(env)
    env_ledger(env / "state" / "ledger.sqlite", create=True)
    defs = load(env, spec)
    instance = DagsterInstance.ephemeral()
    assert run(defs, "tiny", "2023", instance).success
    keystore = open_keystore()
    log = AuditLog(keystore)
    lines = log.path.read_text().splitlines()
    entry = json.loads(lines[-1])
    entry["event"]["actor"] = "someone-else"  # rewrite who read
    log.path.write_text("\n".join([*lines[:-1], json.dumps(entry)]) + "\n")
    again = run(defs, "tiny", "2024", instance)
    assert not again.success
    failures = " ".join(messages(e.event_specific_data.error) for e in again.get_step_failure_events())
    assert "audit" in failures.lower() and "PID" not in failures  # said why, with no data


def test_the_runs_launcher_is_who_read_when_the_run_names_one(env, monkeypatch):
    monkeypatch.setenv("ANON_DAGSTER_RUNNER", "nightly-pipeline")
    spec = write_release(env)
    env_ledger(env / "state" / "ledger.sqlite", create=True)
    defs = load(env, spec)
    job = defs.resolve_job_def("tiny_release")
    result = job.execute_in_process(partition_key="2023", instance=DagsterInstance.ephemeral(),
                                    raise_on_error=False, tags={"user": "dpo@example.org"})
    assert result.success
    found = [r for r in reads(open_keystore()) if r["run"] == result.run_id]
    assert found and {r["actor"] for r in found} == {"dpo@example.org"}
