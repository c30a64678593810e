"""Dagster metadata of the core's results: the plain values of :mod:`anon_dagster.release.shown_outcomes`
converted to :class:`dagster.MetadataValue` and fitted to the event log (docs/dagster.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dagster as dg

from ..objectstore import ObjectPath
from ..release.evaluation import CheckResult, Evaluation, EvidenceTable
from ..release.metadata_fit import (
    MAX_METADATA_BYTES,
    cut_rows_note,
    cut_text,
    fit_entries,
    metadata_size,
    too_large,
)
from ..release.metadata_fit import where_text as _where
from ..release.shown_outcomes import ShownCheck, anonymized_entries, check_entries
from ..release.shown_values import Shown, figure, record_summary, rounded


def metadata_value(value: Any) -> Any:
    """One plain value as metadata: a :class:`Shown` as its kind, an :class:`EvidenceTable` a
    table, a path a path, a dict or a list JSON and a float a float (figures rounded:
    :func:`figure`); text, integers, booleans and None as they are (Dagster types them)."""
    if isinstance(value, Shown):
        return getattr(dg.MetadataValue, value.kind)(value.value)
    if isinstance(value, EvidenceTable):
        schema = dg.TableSchema(columns=[dg.TableColumn(name, kind) for name, kind in value.columns])
        return dg.MetadataValue.table(records=[dg.TableRecord({k: figure(v) for k, v in row.items()})
                                            for row in value.rows], schema=schema)
    if isinstance(value, Path | ObjectPath):  # an object-storage location is a path by its URI
        return dg.MetadataValue.path(str(value))
    if isinstance(value, Mapping | list):
        return dg.MetadataValue.json(rounded(value))
    return dg.MetadataValue.float(figure(value)) if isinstance(value, float) else value


def _size(value: Any) -> int:
    try:
        return len(dg.serialize_value(value))
    except Exception:  # noqa: BLE001 - a plain value Dagster types when it stores it
        return len(json.dumps(value, default=str))


def metadata_bytes(metadata: Mapping[str, Any]) -> int:
    """The size of ``metadata`` as Dagster serializes it into the event log (each entry)."""
    return metadata_size(metadata, _size)


def fit(metadata: dict[str, Any], limit: int = MAX_METADATA_BYTES, whole: Path | str | None = None) -> dict[str, Any]:
    """``metadata`` cut to at most ``limit`` bytes as serialized
    (:mod:`anon_dagster.release.metadata_fit`); ``whole`` is where the whole evidence is."""
    where = _where(whole)

    def cut(name: str, value: Any, out: dict[str, Any]) -> bool:
        if isinstance(value, dg.TableMetadataValue) and len(value.records) > 1:
            keep = len(value.records) // 2
            out[name] = dg.MetadataValue.table(records=value.records[:keep], schema=value.schema)
            before = out.get(f"{name}_note")
            out[f"{name}_note"] = dg.MetadataValue.text(
                cut_rows_note(before.value if isinstance(before, dg.TextMetadataValue) else None, keep, where))
            return True
        prose = isinstance(value, dg.MarkdownMetadataValue | dg.TextMetadataValue)
        if prose and (short := cut_text(value.value, where)):
            markdown = isinstance(value, dg.MarkdownMetadataValue)
            out[name] = (dg.MetadataValue.md if markdown else dg.MetadataValue.text)(short)
            return True
        if isinstance(value, dg.JsonMetadataValue):
            out[name] = dg.MetadataValue.text(too_large(_size(value), where))
            return True
        return False

    return fit_entries(metadata, _size, cut, limit)


def as_metadata(values: Mapping[str, Any], whole: Path | str | None = None, *, rows: int | None = None,
                columns: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    """Named plain values as metadata (:func:`metadata_value` each; a table's note as
    ``<name>_note``), then ``rows`` and ``columns`` (name, dtype) as Dagster's ``dagster/row_count``
    and ``dagster/column_schema``, fitted to :data:`MAX_METADATA_BYTES` (:func:`fit`)."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        out[name] = metadata_value(value)
        if isinstance(value, EvidenceTable) and value.note:
            out[f"{name}_note"] = dg.MetadataValue.text(value.note)
    if rows is not None:
        out["dagster/row_count"] = dg.MetadataValue.int(int(rows))
    if columns is not None:
        out["dagster/column_schema"] = dg.TableSchema(columns=[dg.TableColumn(c, kind) for c, kind in columns])
    return fit(out, whole=whole)


def event_values(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The plain values of an event's metadata (each :class:`~dagster.MetadataValue`'s ``value``)."""
    return {k: getattr(v, "value", v) for k, v in metadata.items()}


def check_metadata(result: CheckResult, evaluation: Evaluation, report: Path | None = None) -> dict[str, Any]:
    """One gate check's metadata (:func:`~anon_dagster.release.shown_outcomes.check_entries`)."""
    return as_metadata(check_entries(result, evaluation, report), whole=report)


def anonymized_metadata(result: Any, record_file: Path) -> dict[str, Any]:
    """The anonymized asset's metadata (:func:`~anon_dagster.release.shown_outcomes.anonymized_entries`)."""
    return as_metadata(anonymized_entries(result, record_file), whole=record_file)


def check_result(shown: ShownCheck, whole: Path | str | None = None, of: type = dg.AssetCheckResult, **key: Any) -> Any:
    """The core's verdict as an :class:`AssetCheckResult` (or ``of``, e.g. an
    :class:`~dagster.AssetCheckEvaluation`); ``key``: ``check_name``, ``asset_key``."""
    severity = dg.AssetCheckSeverity.ERROR if shown.severity == "error" else dg.AssetCheckSeverity.WARN
    return of(passed=shown.passed, severity=severity, description=shown.description,
              metadata=as_metadata(shown.metadata, whole=whole), **key)


__all__ = ["MAX_METADATA_BYTES", "anonymized_metadata", "as_metadata", "check_metadata", "check_result", "event_values", "fit",
           "metadata_bytes", "metadata_value", "record_summary"]
