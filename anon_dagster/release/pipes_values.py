"""What a release step run in an external job sends back through Dagster Pipes, as plain data.

Dagster Pipes carries JSON: a check's metadata travels as raw values or ``{"raw_value", "type"}``
entries, which the orchestrator turns into its own metadata. This module holds the one
conversion of the values :mod:`.shown_outcomes` shows into that form (:func:`plain_metadata`),
entry for entry what the in-process step's metadata holds (``anon_dagster.dagster.metadata``
converts the same values to Dagster's types), and the names both sides agree on:

- the *extras* the orchestrator passes (:data:`EXTRA_SPEC` ... :data:`EXTRA_FREQUENCIES`);
- the *checks* step reports every check with its name, verdict, severity and metadata
  (:func:`check_message`), then one custom message :data:`CHECKS_MESSAGE` holding each check's
  description, which a Pipes check report does not carry;
- the *frequencies* step reports one custom message :data:`FREQUENCIES_MESSAGE`: where the
  published table's frequency table was written, its SHA-256, its rows, and every check's
  contract form (``CheckResult.to_json()``) as the external job judged it.

No secret ever enters a message: the key store is opened from the external job's own
environment and only the core's shown values (figures, verdicts, evidence without QI values) are sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..io import plain_json
from ..objectstore import ObjectPath
from ..spec import ReleaseSpec
from .evaluation import EvidenceTable
from .metadata_fit import fit_values
from .shown_outcomes import ShownCheck
from .shown_values import Shown, figure, rounded

# the extras of a step run through Pipes
EXTRA_SPEC = "spec"  # the release spec's path, as the external job sees it
EXTRA_PARTITION = "partition"  # the partition key (absent or None: the whole release)
EXTRA_ENGINE = "engine"  # pandas or spark
EXTRA_SPARK_MASTER = "spark_master"  # with the Spark engine: its master URL
EXTRA_STEP = "step"  # STEP_CHECKS or STEP_FREQUENCIES
EXTRA_INPUT = "input"  # the data to read instead of the spec's source (optional)
EXTRA_LEDGER = "ledger"  # the ledger file (optional: else ANON_DAGSTER_LEDGER, as ``check`` reads it)
EXTRA_ASSET = "asset_key"  # the checked (anonymized) asset's key, as a user string
EXTRA_FREQUENCIES = "frequencies"  # where the frequencies step writes the frequency table (parquet)

STEP_CHECKS = "checks"
STEP_FREQUENCIES = "frequencies"
STEPS = (STEP_CHECKS, STEP_FREQUENCIES)

# the ``kind`` of the custom messages
MESSAGE_KIND = "anon_dagster"
CHECKS_MESSAGE = "check_descriptions"
FREQUENCIES_MESSAGE = "frequency_table"


def plain_value(value: Any) -> Any:
    """One shown value as Pipes metadata: a :class:`Shown` as its kind, an :class:`EvidenceTable`
    a table (figures rounded), a path a path, a dict or a list JSON (rounded), a float a float
    (rounded); text, integers, booleans and None as raw values (the orchestrator types them)."""
    if isinstance(value, Shown):
        inner = plain_json(value.value) if value.kind == "json" else value.value
        return {"raw_value": inner, "type": value.kind}
    if isinstance(value, EvidenceTable):
        return {"raw_value": {"records": [{k: figure(v) for k, v in row.items()} for row in value.rows],
                              "schema": [{"name": name, "type": kind} for name, kind in value.columns]},
                "type": "table"}
    if isinstance(value, Path | ObjectPath):
        return {"raw_value": str(value), "type": "path"}
    if isinstance(value, Mapping | list):
        return {"raw_value": rounded(plain_json(value)), "type": "json"}
    if isinstance(value, float):
        return {"raw_value": figure(value), "type": "float"}
    return plain_json(value)


def _size(value: Any) -> int:
    return len(json.dumps(plain_value(value), default=str))


def plain_metadata(values: Mapping[str, Any], whole: Path | str | None = None) -> dict[str, Any]:
    """Named shown values as Pipes metadata: fitted to :data:`~.metadata_fit.MAX_METADATA_BYTES`
    by the in-process rules (:func:`~.metadata_fit.fit_values`, measured in this JSON form; a
    table's note as ``<name>_note``), then :func:`plain_value` each."""
    return {name: plain_value(value) for name, value in fit_values(values, _size, whole=whole).items()}


def check_message(name: str, shown: ShownCheck, asset_key: str | None) -> dict[str, Any]:
    """The keyword arguments of ``report_asset_check`` for one check's verdict as shown (the
    in-process step's ``check_result``)."""
    return {"check_name": name, "passed": bool(shown.passed), "severity": "ERROR" if shown.severity == "error" else "WARN",
            "metadata": plain_metadata(shown.metadata, whole=shown.metadata.get("report")), "asset_key": asset_key}


def custom_message(kind: str, **body: Any) -> dict[str, Any]:
    """A custom message of this package: ``{"kind": MESSAGE_KIND, "message": kind, ...}``."""
    return {"kind": MESSAGE_KIND, "message": kind, **plain_json(body)}


def find_message(messages: list[Any], kind: str) -> dict[str, Any] | None:
    """The last custom message of ``kind`` among ``messages`` (None when there is none)."""
    found = [m for m in messages if isinstance(m, Mapping) and m.get("kind") == MESSAGE_KIND and m.get("message") == kind]
    return dict(found[-1]) if found else None


def step_extras(spec: ReleaseSpec, step: str, partition: str | None, extras: Mapping[str, Any]) -> dict[str, Any]:
    """What the external job is given to run ``step`` of ``partition``: the spec's path, the step,
    the partition, then ``extras`` (which override them: ``spec`` as the job sees it)."""
    return {EXTRA_SPEC: str(spec.spec_path), EXTRA_STEP: step, EXTRA_PARTITION: partition, **extras}


def check_descriptions(messages: list[Any]) -> dict[str, str]:
    """The checks' descriptions the external job reported (:data:`CHECKS_MESSAGE`), by check name."""
    return (find_message(messages, CHECKS_MESSAGE) or {}).get("descriptions") or {}


__all__ = [
    "CHECKS_MESSAGE", "EXTRA_ASSET", "EXTRA_ENGINE", "EXTRA_FREQUENCIES", "EXTRA_INPUT", "EXTRA_LEDGER",
    "EXTRA_PARTITION", "EXTRA_SPARK_MASTER", "EXTRA_SPEC", "EXTRA_STEP", "FREQUENCIES_MESSAGE", "MESSAGE_KIND",
    "STEPS", "STEP_CHECKS", "STEP_FREQUENCIES", "check_descriptions", "check_message", "custom_message", "find_message",
    "plain_metadata", "plain_value", "step_extras",
]
