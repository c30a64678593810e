"""A backfill of every partition, launched from the UI's API and run by Dagster's own daemon,
publishes in partition order and is not held back by a refusal.

``dagster dev`` (webserver and daemon, own process group, stopped at the end) on a fresh ledger
and Dagster home, with the release definitions on the in-process executor (a backfill's runs go
through Dagster's asset job, so the definitions' executor is theirs); one asset backfill of the
three years of a composed release, as the UI's "Materialize all partitions" launches it. 2023 and 2024 hold the same persons (each year alone
passes, the second composed with the first does not), 2025 other persons: run one after the
other they give 2023 published, 2024 refused, 2025 published, and so must the backfill, whose
runs the daemon launches as the partitions' dependencies allow.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.support.keys import MASTER_KEY
from tests.support.ledgers import new_ledger, open_test_ledger
from tests.support.linkage import composing_release, two_years

pytestmark = pytest.mark.slow

YEARS = ("2023", "2024", "2025")

BACKFILL = """
mutation Backfill($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
  }
}"""
DEFINITIONS = """
import os
import sys

from dagster import Definitions, in_process_executor

# Dagster starts run workers as spawned processes, whose __main__ has no file: pyspark, when it is
# installed (Great Expectations imports it then), takes such a process for its own doctests and
# exits it. Naming a file keeps this environment's workers alive; the releases are unchanged.
if getattr(sys.modules["__main__"], "__spec__", None) is None and not hasattr(sys.modules["__main__"], "__file__"):
    sys.modules["__main__"].__file__ = __file__

from anon_dagster.dagster import load_release_definitions

defs = Definitions.merge(load_release_definitions(os.environ["ANON_DAGSTER_CONFIG"]),
                         Definitions(executor=in_process_executor))
"""
STATUS = "query Status($id: String!) { partitionBackfillOrError(backfillId: $id) { ... on PartitionBackfill { status } } }"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(port: int, query: str, variables: dict | None = None) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"query": query, "variables": variables or {}}).encode())
    with urllib.request.urlopen(request, timeout=30) as response:
        body = json.loads(response.read())
    assert "errors" not in body, body["errors"]
    return body["data"]


def stop_group(proc: subprocess.Popen) -> None:
    """SIGINT (dagster dev shuts its children down), then SIGKILL of the whole group."""
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


def three_years(tmp: Path) -> Path:
    """2023 and 2024 of the same eight persons, 2025 of eight others."""
    data = two_years()
    later = two_years(other_people=True)
    later = later[later["visit_date"].str.startswith("2024")].assign(
        visit_date="2025-05-02", pid=lambda d: d["pid"].str.replace("PID", "NEW"))
    spec = composing_release(tmp, pd.concat([data, later], ignore_index=True))
    text = yaml.safe_load(spec.read_text())
    text["partitions"]["end"] = "2026-01-01"
    spec.write_text(yaml.safe_dump(text, sort_keys=False))
    return spec


def test_a_backfill_of_every_partition_publishes_in_order(tmp_path):
    spec = three_years(tmp_path)
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    ledger = tmp_path / "ledger.sqlite"
    new_ledger(ledger, tmp_path / "keystate")  # as `anon-dagster ledger init` does
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANON_DAGSTER_")}
    env.update({"DAGSTER_HOME": str(home), "ANON_DAGSTER_CONFIG": str(spec.parent),
                "ANON_DAGSTER_LEDGER": str(ledger), "ANON_DAGSTER_MASTER_KEY": MASTER_KEY,
                "ANON_DAGSTER_KEYSTORE_STATE": str(tmp_path / "keystate")})
    definitions = tmp_path / "definitions.py"
    definitions.write_text(DEFINITIONS)
    port = free_port()
    log = open(tmp_path / "dagster-dev.log", "wb")
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "dagster"), "dev", "-f", str(definitions),
         "-h", "127.0.0.1", "-p", str(port)],
        cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2).read()
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                assert server.poll() is None, (tmp_path / "dagster-dev.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "dagster dev did not start in 180 s"
                time.sleep(1)
        assets = [{"path": ["yearly", step]} for step in ("raw", "pseudonymized", "anonymized", "published")]
        launched = graphql(port, BACKFILL, {"params": {"partitionNames": list(YEARS), "assetSelection": assets,
                                                       "fromFailure": False}})["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        deadline, status = time.monotonic() + 600, None
        while time.monotonic() < deadline:
            status = graphql(port, STATUS, {"id": launched["backfillId"]})["partitionBackfillOrError"].get("status")
            if status not in ("REQUESTED", "CANCELING", "FAILING", None):
                break
            time.sleep(3)
        assert status in ("COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED"), (
            status, (tmp_path / "dagster-dev.log").read_text()[-3000:])
    finally:
        stop_group(server)
        log.close()
    book = open_test_ledger(ledger, tmp_path / "keystate")
    outcomes = {year: (e.status if (e := book.latest("yearly", year)) else None) for year in YEARS}
    assert outcomes == {"2023": "published", "2024": "failed", "2025": "published"}
    published = sorted(p.name for p in (tmp_path / "published" / "yearly").glob("*.parquet"))
    assert published == ["2023.parquet", "2025.parquet"]
