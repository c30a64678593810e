"""Dagster metadata of the core's results: plain data converted to :class:`dagster.MetadataValue`.

What is shown is the core's (``CheckResult.evidence``, :mod:`anon_dagster.release.shown_values`,
:mod:`anon_dagster.release.metadata_fit`); here, the conversion (docs/dagster.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dagster import (
    JsonMetadataValue,
    MarkdownMetadataValue,
    MetadataValue,
    TableColumn,
    TableMetadataValue,
    TableRecord,
    TableSchema,
    TextMetadataValue,
    serialize_value,
)

from ..objectstore import ObjectPath
from ..release.evaluation import CheckResult, Evaluation, EvidenceTable
from ..release.metadata_fit import (
    KEPT_WHOLE,
    MAX_METADATA_BYTES,
    cut_rows_note,
    cut_text,
    fit_entries,
    metadata_size,
    too_large,
    where_text,
)
from ..release.report.markdown import md_text
from ..release.shown_values import DIGITS, figure, measured_value, record_summary, rounded


def md_value(text: Any) -> MarkdownMetadataValue:
    """Prose the core wrote as Markdown that shows it as written (see the module docstring)."""
    return MetadataValue.md(md_text(text))


def _table(value: EvidenceTable) -> TableMetadataValue:
    schema = TableSchema(columns=[TableColumn(name, kind) for name, kind in value.columns])
    return MetadataValue.table(records=[TableRecord({k: figure(v) for k, v in row.items()}) for row in value.rows],
                               schema=schema)


def metadata_value(value: Any) -> Any:
    """One plain value as metadata: an :class:`EvidenceTable` a table, a path a path, a dict or a
    list JSON, a float a float; figures rounded (:func:`figure`); text, integers, booleans and
    None as they are (Dagster types them)."""
    if isinstance(value, EvidenceTable):
        return _table(value)
    if isinstance(value, Path | ObjectPath):  # an object-storage location is a path by its URI
        return MetadataValue.path(str(value))
    if isinstance(value, Mapping | list):
        return MetadataValue.json(rounded(value))
    if isinstance(value, float):
        return MetadataValue.float(figure(value))
    return value


def _size(value: Any) -> int:
    try:
        return len(serialize_value(value))
    except Exception:  # noqa: BLE001 - a plain value Dagster types when it stores it
        return len(json.dumps(value, default=str))


def metadata_bytes(metadata: Mapping[str, Any]) -> int:
    """The size of ``metadata`` as Dagster serializes it into the event log (each entry)."""
    return metadata_size(metadata, _size)


def fit(metadata: dict[str, Any], limit: int = MAX_METADATA_BYTES, whole: Path | str | None = None) -> dict[str, Any]:
    """``metadata`` cut to at most ``limit`` bytes as serialized
    (:mod:`anon_dagster.release.metadata_fit`); ``whole`` is where the whole evidence is."""
    where = where_text(whole)

    def cut(name: str, value: Any, out: dict[str, Any]) -> bool:
        if isinstance(value, TableMetadataValue) and len(value.records) > 1:
            keep = len(value.records) // 2
            out[name] = MetadataValue.table(records=value.records[:keep], schema=value.schema)
            before = out.get(f"{name}_note")
            out[f"{name}_note"] = MetadataValue.text(
                cut_rows_note(before.value if isinstance(before, TextMetadataValue) else None, keep, where))
            return True
        if isinstance(value, MarkdownMetadataValue | TextMetadataValue) and (short := cut_text(value.value, where)):
            out[name] = (MetadataValue.md if isinstance(value, MarkdownMetadataValue) else MetadataValue.text)(short)
            return True
        if isinstance(value, JsonMetadataValue):
            out[name] = MetadataValue.text(too_large(_size(value), where))
            return True
        return False

    return fit_entries(metadata, _size, cut, limit)


def as_metadata(values: Mapping[str, Any], whole: Path | str | None = None) -> dict[str, Any]:
    """Named plain values as metadata (:func:`metadata_value` each; a table's note as
    ``<name>_note``), fitted to :data:`MAX_METADATA_BYTES` (:func:`fit`)."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        out[name] = metadata_value(value)
        if isinstance(value, EvidenceTable) and value.note:
            out[f"{name}_note"] = MetadataValue.text(value.note)
    return fit(out, whole=whole)


def _measured(value: Any) -> MetadataValue:
    shown = measured_value(value)
    if isinstance(shown, str):
        return MetadataValue.text(shown)
    return MetadataValue.int(shown) if isinstance(shown, int) else MetadataValue.float(shown)


def check_metadata(result: CheckResult, evaluation: Evaluation, report: Path | None = None) -> dict[str, Any]:
    """Value, threshold, summary and the evidence of one check result, fitted to
    :data:`MAX_METADATA_BYTES`; ``report``, the evaluation's report (a refused evaluation's kept
    report), is linked as ``report``."""
    head = {"summary": md_value(result.summary), "measured": _measured(result.measured),
            "spec_key": MetadataValue.text(result.spec_key),
            # the contract form, as `anon-dagster check --json` prints it: full precision
            "check": MetadataValue.json(result.to_json()),
            "threshold": MetadataValue.text(result.threshold_text),
            **({"report": MetadataValue.path(str(report))} if report is not None else {})}
    return fit({**head, **as_metadata(result.evidence(evaluation), whole=report)}, whole=report)


def anonymized_metadata(result: Any, record_file: Path) -> dict[str, Any]:
    """The anonymized asset's metadata from the core's :class:`~anon_dagster.release.pipeline.Anonymized`:
    ``rows``, ``suppressed``, the ``transformation_record`` (:func:`record_summary`), the
    ``transformation_record_file`` and, when the policy was unreachable, ``policy_unreachable``."""
    out: dict[str, Any] = {
        **({"policy_unreachable": md_value(result.unreachable)} if result.unreachable else {}),
        "rows": len(result.data), "suppressed": result.suppressed,
        "transformation_record": MetadataValue.json(rounded(record_summary(result.record, record_file))),
        "transformation_record_file": MetadataValue.path(str(record_file)),
    }
    return fit(out, whole=record_file)


__all__ = [
    "DIGITS", "KEPT_WHOLE", "MAX_METADATA_BYTES", "anonymized_metadata", "as_metadata", "check_metadata", "figure", "fit",
    "md_value", "metadata_bytes", "metadata_value", "record_summary", "rounded",
]
