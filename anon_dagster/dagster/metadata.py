"""Dagster metadata of the core's results: plain data converted to :class:`dagster.MetadataValue`.

Only conversion: which evidence a check shows is decided by the core
(:meth:`~anon_dagster.release.evaluation.CheckResult.evidence`), and every figure comes from the
:class:`~anon_dagster.release.evaluation.Evaluation` the core computed. No metadata shows the
values of a class: small classes are described by their sizes and by each QI's contribution.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dagster import MetadataValue, TableColumn, TableRecord, TableSchema

from ..release import gate
from ..release.evaluation import CheckResult, Evaluation, EvidenceTable


def metadata_value(value: Any) -> Any:
    """One plain value as metadata: an :class:`EvidenceTable` a table, a path a path, a dict or a
    list JSON; text, numbers, booleans and None as they are (Dagster types them)."""
    if isinstance(value, EvidenceTable):
        schema = TableSchema(columns=[TableColumn(name, kind) for name, kind in value.columns])
        return MetadataValue.table(records=[TableRecord(row) for row in value.rows], schema=schema)
    if isinstance(value, Path):
        return MetadataValue.path(str(value))
    if isinstance(value, Mapping | list):
        return MetadataValue.json(value)
    return value


def as_metadata(values: Mapping[str, Any]) -> dict[str, Any]:
    """Named plain values as metadata (:func:`metadata_value` each)."""
    return {name: metadata_value(value) for name, value in values.items()}


def _measured(value: Any) -> MetadataValue:
    if isinstance(value, bool) or value is None:
        return MetadataValue.text("n/a" if value is None else str(value))
    if isinstance(value, int):
        return MetadataValue.int(value)
    number = gate.as_float(value)
    return MetadataValue.float(number) if number is not None else MetadataValue.text(str(value))


def check_metadata(result: CheckResult, evaluation: Evaluation) -> dict[str, Any]:
    """Value, threshold, summary and the evidence of one check result."""
    return {"summary": MetadataValue.md(result.summary), "measured": _measured(result.measured),
            "spec_key": MetadataValue.text(result.spec_key),
            # the contract form, as `anon-dagster check --json` prints it
            "check": MetadataValue.json(result.to_json()),
            "threshold": MetadataValue.text(result.threshold_text),
            **as_metadata(result.evidence(evaluation))}


__all__ = ["as_metadata", "check_metadata", "metadata_value"]
