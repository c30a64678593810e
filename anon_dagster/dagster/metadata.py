"""Dagster metadata of the core's results: the plain values of :mod:`anon_dagster.release.shown_outcomes`,
fitted to the event log by :mod:`anon_dagster.release.metadata_fit`, as :class:`dagster.MetadataValue`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dagster as dg

from ..objectstore import ObjectPath
from ..release.evaluation import EvidenceTable
from ..release.metadata_fit import MAX_METADATA_BYTES, fit_values, metadata_size
from ..release.shown_outcomes import ShownCheck
from ..release.shown_values import Shown, figure, rounded


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


def as_metadata(values: Mapping[str, Any], whole: Path | str | None = None, *, rows: int | None = None,
                columns: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    """Named plain values, with ``rows`` and ``columns`` (name, dtype) as Dagster's ``dagster/row_count``
    and ``dagster/column_schema``, fitted to :data:`MAX_METADATA_BYTES` as Dagster serializes them
    (:func:`~anon_dagster.release.metadata_fit.fit_values`; ``whole``: where the whole evidence is),
    each as :func:`metadata_value` (a table's note as ``<name>_note``)."""
    extra: dict[str, Any] = {} if rows is None else {"dagster/row_count": int(rows)}
    if columns is not None:  # Dagster's own value, which no cut changes
        extra["dagster/column_schema"] = dg.TableSchema(columns=[dg.TableColumn(c, kind) for c, kind in columns])
    fitted = fit_values({**values, **extra}, lambda value: _size(metadata_value(value)), whole=whole)
    return {name: metadata_value(value) for name, value in fitted.items()}


def event_values(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The plain values of an event's metadata (each :class:`~dagster.MetadataValue`'s ``value``)."""
    return {k: getattr(v, "value", v) for k, v in metadata.items()}


def check_result(shown: ShownCheck, whole: Path | str | None = None, of: type = dg.AssetCheckResult, **key: Any) -> Any:
    """The core's verdict as an :class:`AssetCheckResult` (or ``of``, e.g. an
    :class:`~dagster.AssetCheckEvaluation`); ``key``: ``check_name``, ``asset_key``."""
    severity = dg.AssetCheckSeverity.ERROR if shown.severity == "error" else dg.AssetCheckSeverity.WARN
    return of(passed=shown.passed, severity=severity, description=shown.description,
              metadata=as_metadata(shown.metadata, whole=whole), **key)


__all__ = ["MAX_METADATA_BYTES", "as_metadata", "check_result", "event_values", "metadata_bytes", "metadata_value"]
