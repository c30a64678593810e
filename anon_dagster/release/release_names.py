"""The names and definition metadata an orchestrator gives a release's objects.

Asset ``<release>/<step>`` in the group ``<release>``; job ``<release>_release``, schedule
``<release>_schedule``, sensors ``<release>_source_sensor`` and ``<release>_freshness_sensor``;
the publication's outcome is the check :data:`PUBLICATION_CHECK` and the age of the latest
publication the check :data:`FRESHNESS_CHECK`, both on the published step. The gate's checks are
on the anonymized step and also read :data:`CHECK_INPUTS`. Owners and tags are the spec's, on
every step.
"""

from __future__ import annotations

from typing import Any

from ..spec import ReleaseSpec
from .pipeline import DeclaredCheck
from .step_storage import AT_REST_KEY
from .stored import at_rest_policy

PUBLICATION_CHECK = "publication"
FRESHNESS_CHECK = "freshness"
# the steps a gate check reads besides the anonymized one it is on
CHECK_INPUTS = ("raw", "pseudonymized")


def asset_path(spec: ReleaseSpec, step: str) -> list[str]:
    return [spec.release, step]


def job_name(spec: ReleaseSpec) -> str:
    return f"{spec.release}_release"


def schedule_name(spec: ReleaseSpec) -> str:
    return f"{spec.release}_schedule"


def source_sensor_name(spec: ReleaseSpec) -> str:
    return f"{spec.release}_source_sensor"


def freshness_sensor_name(spec: ReleaseSpec) -> str:
    return f"{spec.release}_freshness_sensor"


def owners(spec: ReleaseSpec) -> list[str]:
    """The spec's ``owners`` (e-mail addresses or ``team:<name>``)."""
    return list(getattr(spec, "owners", None) or [])


def tags(spec: ReleaseSpec) -> dict[str, str]:
    return dict(getattr(spec, "tags", None) or {})


def step_metadata(spec: ReleaseSpec, step: str) -> dict[str, Any]:
    """A step's definition metadata: its storage policy under :data:`AT_REST_KEY` (stored steps),
    and on ``raw`` the spec it comes from (its file, else the release name)."""
    policy = at_rest_policy(spec, step)
    out: dict[str, Any] = {AT_REST_KEY: policy} if policy is not None else {}
    if step == "raw":
        out["spec"] = str(spec.spec_path) if spec.spec_path else spec.release
    return out


def check_metadata(check: DeclaredCheck) -> dict[str, Any]:
    """A gate check's definition metadata: the spec key it judges and its severity."""
    return {"spec_key": check.spec_key, "severity": check.severity}


__all__ = ["CHECK_INPUTS", "FRESHNESS_CHECK", "PUBLICATION_CHECK", "asset_path", "check_metadata",
           "freshness_sensor_name", "job_name", "owners", "schedule_name", "source_sensor_name", "step_metadata",
           "tags"]
