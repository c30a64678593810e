"""The refusal alert resource: posts each refusal (:mod:`anon_dagster.release.alerts`) to a webhook
configured by reference (``EnvVar``: Dagster shows the variable's name, never the URL)."""

from __future__ import annotations

import os
from functools import cache

from dagster import ConfigurableResource, EnvVar

from ..release.alerts import Refusal, post_refusal, reason_lines, without_paths

ENV_WEBHOOK = "ANON_DAGSTER_REFUSAL_WEBHOOK"
RESOURCE_KEY = "refusal_alert"


class RefusalAlertResource(ConfigurableResource):
    """Posts each refusal to ``webhook_url`` (none: nothing is sent); set it by reference."""

    webhook_url: str | None = None
    timeout_seconds: float = 5.0

    def send(self, refusal: Refusal) -> str | None:
        """Post ``refusal``: None when delivered or no URL is set, else one line why not."""
        return post_refusal(self.webhook_url, refusal, self.timeout_seconds)


@cache  # the same object for every release: one resource per resource key
def _alert(configured: bool) -> RefusalAlertResource:
    return RefusalAlertResource(webhook_url=EnvVar(ENV_WEBHOOK)) if configured else RefusalAlertResource()


def refusal_alert_from_env() -> RefusalAlertResource:
    """``webhook_url=EnvVar("ANON_DAGSTER_REFUSAL_WEBHOOK")`` when it is set as the definitions
    load, else one sending nothing."""
    return _alert(bool(os.environ.get(ENV_WEBHOOK)))


__all__ = ["ENV_WEBHOOK", "RESOURCE_KEY", "Refusal", "RefusalAlertResource", "reason_lines",
           "refusal_alert_from_env", "without_paths"]
