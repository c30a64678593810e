"""The refusal alert, the Dagster side: :class:`RefusalAlertResource` posts each refusal of a
publication to a webhook configured by reference (``EnvVar``: Dagster shows the variable's name,
never the URL). The refusal and its post are the core's (:mod:`anon_dagster.release.alerts`).
"""

from __future__ import annotations

import os

from dagster import ConfigurableResource, EnvVar

from ..release.alerts import Refusal, post_refusal, reason_lines, without_paths

ENV_WEBHOOK = "ANON_DAGSTER_REFUSAL_WEBHOOK"
RESOURCE_KEY = "refusal_alert"


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
        return post_refusal(self.webhook_url, refusal, self.timeout_seconds)


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
