"""``dagster dev`` for end-to-end tests: a webserver and daemon on a free localhost port.

:func:`dagster_dev` starts ``dagster dev -f DEFINITIONS`` in its own process group, on a fresh
Dagster home (telemetry off) and a fresh ledger (created explicitly, as ``anon-dagster ledger
init`` does), with the tests' keys and ``ANON_DAGSTER_CONFIG`` naming the spec folder; none of
the shell's ``ANON_DAGSTER_*`` variables reach it. It yields once the webserver answers and stops
the whole group at the end (SIGINT, so ``dagster dev`` shuts its children down, then SIGKILL).
:func:`graphql`, :func:`launch_job` and :func:`wait_for_run` talk to its GraphQL API as the UI does.
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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .keys import MASTER_KEY
from .ledgers import new_ledger

REPO = Path(__file__).resolve().parents[2]
DEMO_DEFINITIONS = REPO / "definitions.py"
FINISHED = ("SUCCESS", "FAILURE", "CANCELED")

LAUNCH = """
mutation Launch($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on InvalidSubsetError { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}"""
RUN_STATUS = "query Status($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"
REPOSITORIES = "{ repositoriesOrError { ... on RepositoryConnection { nodes { name location { name } } } } }"


@dataclass
class DagsterDev:
    """A running ``dagster dev``: its port, process, log file, and the state it was given."""

    port: int
    process: subprocess.Popen
    log: Path
    folder: Path
    home: Path
    ledger: Path
    keystate: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


def free_port() -> int:
    """A TCP port of 127.0.0.1 free at the time of the call."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(port: int, query: str, variables: dict | None = None) -> dict:
    """The ``data`` of a GraphQL request to the webserver on ``port``; a GraphQL error fails the test."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"query": query, "variables": variables or {}}).encode())
    with urllib.request.urlopen(request, timeout=30) as response:
        body = json.loads(response.read())
    assert "errors" not in body, body["errors"]
    return body["data"]


def stop_group(proc: subprocess.Popen, timeout: float = 20) -> None:
    """SIGINT (dagster dev shuts its children down), then SIGKILL of the whole group."""
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=timeout)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


@contextmanager
def dagster_dev(folder: Path, spec_folder: Path, *, definitions: Path = DEMO_DEFINITIONS,
                startup_timeout: float = 180) -> Iterator[DagsterDev]:
    """``dagster dev`` on ``definitions`` with the releases of ``spec_folder``, its state in ``folder``."""
    home = folder / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    ledger, keystate = folder / "ledger.sqlite", folder / "keystate"
    new_ledger(ledger, keystate)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANON_DAGSTER_")}
    env.update({"DAGSTER_HOME": str(home), "ANON_DAGSTER_CONFIG": str(spec_folder),
                "ANON_DAGSTER_LEDGER": str(ledger), "ANON_DAGSTER_MASTER_KEY": MASTER_KEY,
                "ANON_DAGSTER_KEYSTORE_STATE": str(keystate)})
    port = free_port()
    log = folder / "dagster-dev.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "dagster"), "dev", "-f", str(definitions),
             "-h", "127.0.0.1", "-p", str(port)],
            cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    server = DagsterDev(port, proc, log, folder, home, ledger, keystate)
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            try:
                urllib.request.urlopen(f"{server.url}/server_info", timeout=2).read()
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                assert proc.poll() is None, server.log_tail()
                assert time.monotonic() < deadline, f"dagster dev did not start in {startup_timeout:.0f} s"
                time.sleep(0.5)
        yield server
    finally:
        stop_group(proc)


def launch_job(server: DagsterDev, job: str, partition: str | None = None) -> str:
    """Launch ``job`` (for ``partition``) through the API as the UI's launchpad does; the run's id."""
    repo = graphql(server.port, REPOSITORIES)["repositoriesOrError"]["nodes"][0]
    tags = [{"key": "dagster/partition", "value": partition}] if partition else []
    launched = graphql(server.port, LAUNCH, {"params": {
        "selector": {"repositoryLocationName": repo["location"]["name"], "repositoryName": repo["name"],
                     "jobName": job},
        "runConfigData": {}, "executionMetadata": {"tags": tags},
    }})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return launched["run"]["runId"]


def wait_for_run(server: DagsterDev, run_id: str, timeout: float = 180) -> str:
    """The run's final status (SUCCESS, FAILURE or CANCELED), polled every half second."""
    deadline, status = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        status = graphql(server.port, RUN_STATUS, {"id": run_id})["runOrError"].get("status")
        if status in FINISHED:
            return status
        time.sleep(0.5)
    raise AssertionError(f"run {run_id} not finished in {timeout:.0f} s (last status {status})\n{server.log_tail()}")
