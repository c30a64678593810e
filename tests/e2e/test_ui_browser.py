"""The failing check and its evidence, as a reviewer sees them in the Dagster UI.

Starts ``dagster dev`` on a free localhost port (own process group, killed at the end), launches
the release's job for one partition through the GraphQL API, waits for the run, then drives
headless Chromium through the DevTools protocol to the anonymized asset's checks page and waits
until the failing check and its metadata are rendered. The screenshot is saved under
``test-output/``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.keys import MASTER_KEY
from tests.support.ledgers import new_ledger
from tests.support.releases import write_release

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
OUTPUT = REPO / "test-output"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(port: int, query: str, variables: dict | None = None) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query, "variables": variables or {}}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        body = json.loads(response.read())
    assert "errors" not in body, body["errors"]
    return body["data"]


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

STATUS = "query Status($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"


async def page_text_when(url: str, needles: list[str], screenshot: Path, profile: Path,
                         timeout: float = 90.0) -> str:
    """Load ``url`` in headless Chromium; wait until every needle is in the page's text."""
    import websockets

    proc = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--remote-debugging-port=0",
         "--window-size=1400,1000", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            assert time.monotonic() < deadline, "chromium did not open its DevTools port"
            await asyncio.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            page = next(t for t in json.loads(r.read()) if t["type"] == "page")
        async with websockets.connect(page["webSocketDebuggerUrl"], max_size=64 * 2**20) as ws:
            counter = 0

            async def call(method: str, **params):
                nonlocal counter
                counter += 1
                await ws.send(json.dumps({"id": counter, "method": method, "params": params}))
                while True:
                    message = json.loads(await ws.recv())
                    if message.get("id") == counter:
                        return message.get("result", {})

            await call("Page.enable")
            await call("Page.navigate", url=url)
            text = ""
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                result = await call("Runtime.evaluate", returnByValue=True,
                                    expression="document.body ? document.body.innerText : ''")
                text = result.get("result", {}).get("value", "")
                if all(n in text for n in needles):
                    break
                await asyncio.sleep(1)
            shot = await call("Page.captureScreenshot", format="png")
            screenshot.write_bytes(base64.b64decode(shot["data"]))
            return text
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def stop_group(proc: subprocess.Popen) -> None:
    """SIGINT (dagster dev shuts its children down), then SIGKILL of the whole group."""
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=15)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make browser installs Debian's package)")
def test_failing_check_and_its_metadata_are_shown_in_the_ui(tmp_path):
    spec = write_release(tmp_path, name="ui_release", method="none", k=5,
                         thresholds={"k": 5, "prosecutor_max": 0.2})
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANON_DAGSTER_")}
    env.update({
        "DAGSTER_HOME": str(home), "ANON_DAGSTER_CONFIG": str(spec.parent),
        "ANON_DAGSTER_LEDGER": str(tmp_path / "ledger.sqlite"), "ANON_DAGSTER_MASTER_KEY": MASTER_KEY,
        "ANON_DAGSTER_KEYSTORE_STATE": str(tmp_path / "keystate"),
    })
    new_ledger(tmp_path / "ledger.sqlite", tmp_path / "keystate")  # as `anon-dagster ledger init` does
    dagster = Path(sys.executable).parent / "dagster"
    log = open(tmp_path / "dagster-dev.log", "wb")
    server = subprocess.Popen(
        [str(dagster), "dev", "-f", str(REPO / "definitions.py"), "-h", "127.0.0.1", "-p", str(port)],
        cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2).read()
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                assert server.poll() is None, (tmp_path / "dagster-dev.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "dagster dev did not start in 120 s"
                time.sleep(1)
        repos = graphql(port, "{ repositoriesOrError { ... on RepositoryConnection { nodes { name location { name } } } } }")
        repo = repos["repositoriesOrError"]["nodes"][0]
        launched = graphql(port, LAUNCH, {"params": {
            "selector": {"repositoryLocationName": repo["location"]["name"], "repositoryName": repo["name"],
                         "jobName": "ui_release_release"},
            "runConfigData": {},
            "executionMetadata": {"tags": [{"key": "dagster/partition", "value": "2023"}]},
        }})["launchRun"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        run_id = launched["run"]["runId"]
        deadline = time.monotonic() + 180
        status = None
        while time.monotonic() < deadline:
            status = graphql(port, STATUS, {"id": run_id})["runOrError"].get("status")
            if status in ("SUCCESS", "FAILURE", "CANCELED"):
                break
            time.sleep(1)
        assert status == "FAILURE"  # the blocking k check failed, so the run did

        OUTPUT.mkdir(exist_ok=True)
        screenshot = OUTPUT / "ui_failing_check.png"
        url = f"http://127.0.0.1:{port}/assets/ui_release/anonymized?view=checks&checkDetail=k_anonymity"
        needles = ["k_anonymity", "Failed", "violates the threshold >= 5", "class_size_histogram",
                   "small_classes", "measured", "threshold"]
        profile = tmp_path / "chromium-profile"
        profile.mkdir()
        text = asyncio.run(page_text_when(url, needles, screenshot, profile))
        missing = [n for n in needles if n not in text]
        assert not missing, f"not shown: {missing}\n{text[:2000]}"
        assert screenshot.stat().st_size > 10_000
        # the publication did not happen
        assert not (tmp_path / "published" / "ui_release" / "2023.parquet").exists()
    finally:
        stop_group(server)
        log.close()
