"""Telling someone that a publication was refused: the refusal as plain data, and a webhook.

A refusal (:class:`Refusal`) says which release and partition, which checks failed and why (one
line per failed check), the evaluation's id and the run: never a value of the data, never a
path of this machine (a reason that names a file has the path replaced by ``<path>``). It is
what the published asset's materialization carries (``refusal``), what
:class:`RefusalAlertResource` posts, and what :func:`~anon_dagster.dagster.sensors.refusal_sensor`
hands to user code.

:class:`RefusalAlertResource` posts the refusal as JSON to a webhook when the published step
refuses. Its URL is configured by reference (``EnvVar``): Dagster shows the variable's name, never
the URL, which often holds a token. Delivery is best effort: a timeout, a refused connection or
an error status is one warning in the run's log, and the step's outcome stays the refusal.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from dagster import ConfigurableResource, EnvVar

ENV_WEBHOOK = "ANON_DAGSTER_REFUSAL_WEBHOOK"
RESOURCE_KEY = "refusal_alert"

# an absolute path of this machine (two components at least, not inside a word: "k1*k2/N" stays)
_PATH = re.compile(r"(?<![\w.:/])(?:~|[A-Za-z]:)?/(?:[^\s'\"/]+/)+[^\s'\",;)]*")


def without_paths(text: str) -> str:
    """``text`` with every absolute path replaced by ``<path>``."""
    return _PATH.sub("<path>", text)


def reason_lines(refusals: Sequence[str]) -> list[str]:
    """One line per refusal (``"<check>: <first line of its summary>"``), without paths."""
    return [without_paths(r.strip().splitlines()[0]) if r.strip() else "" for r in refusals]


@dataclass(frozen=True)
class Refusal:
    """A refused publication, as an alert tells it (no personal data, no paths)."""

    release: str
    partition: str | None
    failed_checks: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    evaluation_id: str | None = None
    run_id: str | None = None

    def payload(self) -> dict[str, Any]:
        """The JSON object posted: release, partition, failed_checks, reasons, evaluation_id, run_id."""
        return asdict(self)

    @classmethod
    def from_payload(cls, payload: dict[str, Any], run_id: str | None = None) -> Refusal:
        """The refusal a materialization's ``refusal`` metadata holds (``run_id`` from its event)."""
        return cls(release=str(payload["release"]), partition=payload.get("partition"),
                   failed_checks=[str(c) for c in payload.get("failed_checks") or []],
                   reasons=[str(r) for r in payload.get("reasons") or []],
                   evaluation_id=payload.get("evaluation_id"), run_id=run_id or payload.get("run_id"))


class RefusalAlertResource(ConfigurableResource):
    """Posts each refusal of a publication to ``webhook_url`` (JSON, ``timeout_seconds``).

    No URL: nothing is sent. Set it by reference, ``RefusalAlertResource(webhook_url=EnvVar(...))``
    (:func:`refusal_alert_from_env` does for ``$ANON_DAGSTER_REFUSAL_WEBHOOK``); only ``http`` and
    ``https`` URLs are used.
    """

    webhook_url: str | None = None
    timeout_seconds: float = 5.0

    def send(self, refusal: Refusal) -> str | None:
        """Post ``refusal``; returns None when delivered (or when no URL is set), else one line
        saying why not (never the URL)."""
        if not self.webhook_url:
            return None
        if not self.webhook_url.lower().startswith(("http://", "https://")):
            return "the webhook URL is not an http(s) URL"
        request = urllib.request.Request(
            self.webhook_url, data=json.dumps(refusal.payload()).encode(), method="POST",
            headers={"Content-Type": "application/json", "User-Agent": "anon_dagster"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_seconds) as response:
                status = response.status
        except urllib.error.HTTPError as exc:
            return f"the webhook answered HTTP {exc.code}"
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            return f"the webhook could not be reached ({type(exc).__name__}: {without_paths(str(reason))[:120]})"
        return None if 200 <= status < 300 else f"the webhook answered HTTP {status}"


_DEFAULT: dict[bool, RefusalAlertResource] = {}


def refusal_alert_from_env() -> RefusalAlertResource:
    """The alert resource of the definitions: ``webhook_url=EnvVar("ANON_DAGSTER_REFUSAL_WEBHOOK")``
    when that variable is set as they load, else one that sends nothing.

    The same object for every release (Dagster wants one definition per resource key).
    """
    configured = bool(os.environ.get(ENV_WEBHOOK))
    if configured not in _DEFAULT:
        _DEFAULT[configured] = (RefusalAlertResource(webhook_url=EnvVar(ENV_WEBHOOK)) if configured
                                else RefusalAlertResource())
    return _DEFAULT[configured]


__all__ = ["ENV_WEBHOOK", "RESOURCE_KEY", "Refusal", "RefusalAlertResource", "reason_lines",
           "refusal_alert_from_env", "without_paths"]
