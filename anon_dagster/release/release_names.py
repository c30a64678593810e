"""The names and definition metadata an orchestrator gives a release's objects.

Asset ``<release>/<step>`` in the group ``<release>``; job ``<release>_release``, schedule
``<release>_schedule``, sensors ``<release>_source_sensor``, ``<release>_freshness_sensor`` and
(with ``approval.required``) ``<release>_approval_sensor``; the gate's checks run as
``<release>_checks``;
the publication's outcome is the check :data:`PUBLICATION_CHECK` and the age of the latest
publication the check :data:`FRESHNESS_CHECK`, both on the published step. The gate's checks are
on the anonymized step and also read :data:`CHECK_INPUTS`. Owners and tags are the spec's, on
every step. A step may also read an asset of the user's project (:func:`project_inputs`): the raw
step the ``source.asset`` as :data:`SOURCE_INPUT`, the anonymized step the
``anonymization.synthetic.table: {asset: key}`` as :data:`SYNTHETIC_INPUT`.
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
SOURCE_INPUT = "source"
SYNTHETIC_INPUT = "synthetic_table"


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


def approval_sensor_name(spec: ReleaseSpec) -> str:
    return f"{spec.release}_approval_sensor"


def checks_name(spec: ReleaseSpec) -> str:
    """The name of the one step evaluating the gate's checks."""
    return f"{spec.release}_checks"


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


def project_inputs(spec: ReleaseSpec, step: str) -> dict[str, list[str]]:
    """The assets of the user's project ``step`` reads, by input name: their key paths (none for
    a file source, a file's synthetic table or the built-in synthesizer)."""
    if step == "raw":
        key = spec.source.asset_key
        return {SOURCE_INPUT: list(key)} if key is not None else {}
    settings = spec.anonymization.synthetic if step == "anonymized" else None
    table = settings.table if settings is not None else None
    if table is None or isinstance(table, str):
        return {}
    return {SYNTHETIC_INPUT: list(table.asset_key)}


def check_metadata(check: DeclaredCheck) -> dict[str, Any]:
    """A gate check's definition metadata: the spec key it judges and its severity."""
    return {"spec_key": check.spec_key, "severity": check.severity}


__all__ = ["CHECK_INPUTS", "FRESHNESS_CHECK", "PUBLICATION_CHECK", "SOURCE_INPUT", "SYNTHETIC_INPUT",
           "approval_sensor_name", "asset_path", "check_metadata", "checks_name", "freshness_sensor_name", "job_name", "owners", "project_inputs", "schedule_name",
           "source_sensor_name", "step_metadata", "tags"]
