"""A refusal is told: posted as JSON to the webhook of ``$ANON_DAGSTER_REFUSAL_WEBHOOK`` (no data,
no paths), delivery failures are one warning and never the step's outcome, and the refusal
sensor hands each refusal once to a function of yours.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from dagster import AssetKey, DagsterInstance, RunRequest, SensorResult, build_sensor_context

from anon_dagster.dagster import alerts
from anon_dagster.dagster.alerts import ENV_WEBHOOK, Refusal, RefusalAlertResource, without_paths
from anon_dagster.dagster.sensors import refusal_sensor
from tests.support.linkage import composing_release, two_years
from tests.support.releases import check_evaluations, load, run

pytestmark = pytest.mark.filterwarnings("ignore:.*scrypt n=.*is weak")

PUBLISHED = AssetKey(["yearly", "published"])
FIELDS = {"release", "partition", "failed_checks", "reasons", "evaluation_id", "run_id"}


@dataclass
class Hook:
    """A local webhook: what it received, and how it answers."""

    url: str
    received: list[dict] = field(default_factory=list)
    headers: list[dict] = field(default_factory=list)
    status: int = 204
    delay: float = 0.0


@pytest.fixture
def hook(monkeypatch) -> Iterator[Hook]:
    for proxy in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(proxy, raising=False)
    state: dict[str, Hook] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the http.server interface
            body = self.rfile.read(int(self.headers["Content-Length"]))
            h = state["hook"]
            time.sleep(h.delay)
            h.received.append(json.loads(body))
            h.headers.append(dict(self.headers))
            self.send_response(h.status)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state["hook"] = Hook(f"http://127.0.0.1:{server.server_address[1]}/refusals?token=s3cr3t")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state["hook"]
    finally:
        server.shutdown()
        server.server_close()


def refused_run(env, monkeypatch, url: str | None):
    """2023 published, then 2024 refused by composition, with the webhook variable set to ``url``."""
    if url is None:
        monkeypatch.delenv(ENV_WEBHOOK, raising=False)
    else:
        monkeypatch.setenv(ENV_WEBHOOK, url)
    defs, instance = load(env, composing_release(env, two_years())), DagsterInstance.ephemeral()
    assert run(defs, "yearly", "2023", instance).success
    return defs, instance, run(defs, "yearly", "2024", instance)


def warnings_of(instance, result) -> list[str]:
    return [e.user_message for e in instance.all_logs(result.run_id) if e.level >= 30 and e.user_message]


def test_a_refusal_is_posted_without_data_or_paths(env, monkeypatch, hook):
    _, instance, result = refused_run(env, monkeypatch, hook.url)
    assert not result.success and check_evaluations(result)["publication"].passed is False
    [payload] = hook.received  # the published 2023 sent nothing
    assert set(payload) == FIELDS
    assert payload["release"] == "yearly" and payload["partition"] == "2024"
    assert payload["failed_checks"] == ["composition"]
    assert len(payload["reasons"]) == 1 and payload["reasons"][0].startswith("composition: effective k = 1")
    assert payload["run_id"] == result.run_id
    [mat] = [e.event_specific_data.materialization for e in result.all_events
             if e.event_type_value == "ASSET_MATERIALIZATION" and e.asset_key == PUBLISHED]
    assert payload["evaluation_id"] == mat.metadata["evaluation"].value
    body = json.dumps(payload)
    assert "PID" not in body and str(env) not in body  # no identifier, no path
    assert hook.headers[0]["Content-Type"] == "application/json"
    # the URL and its token are configured by reference: never in the run's log
    assert not any("s3cr3t" in (e.user_message or "") for e in instance.all_logs(result.run_id))


def test_an_unreachable_webhook_is_a_warning_and_the_outcome_stays_the_refusal(env, monkeypatch, hook):
    _, instance, result = refused_run(env, monkeypatch, "http://127.0.0.1:9/refusals?token=s3cr3t")
    assert check_evaluations(result)["publication"].passed is False
    failures = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert [f.event_specific_data.error.cls_name for f in failures] == ["DagsterAssetCheckFailedError"]
    [warning] = [w for w in warnings_of(instance, result) if "refusal alert" in w]
    assert "could not be reached" in warning and "s3cr3t" not in warning and "127.0.0.1" not in warning


def test_no_webhook_no_post(env, monkeypatch, hook):
    _, instance, result = refused_run(env, monkeypatch, None)
    assert check_evaluations(result)["publication"].passed is False
    assert hook.received == [] and not [w for w in warnings_of(instance, result) if "refusal alert" in w]


def test_delivery_problems_are_one_line_without_the_url(hook):
    refusal = Refusal("r", "2024", ["k_anonymity"], ["k_anonymity: k = 1"], "abc", "run")
    hook.status = 500
    problem = RefusalAlertResource(webhook_url=hook.url).send(refusal)
    assert problem == "the webhook answered HTTP 500"
    hook.status, hook.delay = 204, 1.0
    problem = RefusalAlertResource(webhook_url=hook.url, timeout_seconds=0.2).send(refusal)
    assert problem is not None and "could not be reached" in problem and "s3cr3t" not in problem
    assert RefusalAlertResource(webhook_url="file:///etc/passwd").send(refusal) == "the webhook URL is not an http(s) URL"
    assert RefusalAlertResource().send(refusal) is None
    hook.delay = 0.0
    assert RefusalAlertResource(webhook_url=hook.url).send(refusal) is None
    assert hook.received[-1] == refusal.payload()


def test_reasons_lose_their_paths():
    assert without_paths("data_contract: could not be validated: OSError: '/srv/data/x.parquet' missing") == (
        "data_contract: could not be validated: OSError: '<path>' missing")
    assert without_paths("classes of k1*k2/N persons; yearly/2023 and 3/4") == "classes of k1*k2/N persons; yearly/2023 and 3/4"
    assert alerts.reason_lines(["composition: first line\nsecond line", ""]) == ["composition: first line", ""]


def test_the_resource_reads_the_url_by_reference(monkeypatch):
    monkeypatch.setenv(ENV_WEBHOOK, "https://hooks.example.org/x")
    resource = alerts.refusal_alert_from_env()
    assert resource is alerts.refusal_alert_from_env()  # one object for every release
    assert "hooks.example.org" not in repr(resource)
    monkeypatch.delenv(ENV_WEBHOOK)
    assert alerts.refusal_alert_from_env().webhook_url is None


def test_the_refusal_sensor_hands_each_refusal_once(env, monkeypatch):
    defs, instance, result = refused_run(env, monkeypatch, None)
    seen: list[Refusal] = []
    sensor = refusal_sensor(seen.append, [PUBLISHED])
    first = sensor(build_sensor_context(instance=instance))
    assert isinstance(first, SensorResult) and not first.run_requests
    [refusal] = seen
    assert (refusal.release, refusal.partition, refusal.failed_checks) == ("yearly", "2024", ["composition"])
    assert refusal.run_id == result.run_id and refusal.reasons[0].startswith("composition: ")
    again = sensor(build_sensor_context(instance=instance, cursor=first.cursor))
    assert len(seen) == 1 and again.cursor == first.cursor
    # a function may ask for runs of a job of its own
    job = defs.resolve_job_def("yearly_release")
    asking = refusal_sensor(lambda r: RunRequest(run_key=f"{r.release}/{r.partition}", partition_key=r.partition),
                            [PUBLISHED], name="rerun_refusals", job=job)
    requested = asking(build_sensor_context(instance=instance))
    assert [r.run_key for r in requested.run_requests] == ["yearly/2024"]
