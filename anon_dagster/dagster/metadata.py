"""Dagster metadata of an evaluation: what a reviewer needs next to each verdict.

Only conversion to :class:`dagster.MetadataValue`: every figure comes from the
:class:`~anon_dagster.release.evaluation.Evaluation` the core computed. No metadata shows the
values of a class: small classes are described by their sizes and by each QI's contribution.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
from dagster import MetadataValue, TableColumn, TableRecord, TableSchema

from ..anonymize.record import TransformationRecord
from ..criteria import criterion_for_check
from ..release import gate
from ..release.evaluation import CheckResult, Evaluation


def histogram_table(hist: list[dict[str, Any]]) -> MetadataValue:
    """The class-size histogram as a metadata table (sizes, classes, rows)."""
    schema = TableSchema(columns=[TableColumn("class_size", "string"), TableColumn("classes", "int"),
                                  TableColumn("rows", "int")])
    records = [TableRecord({"class_size": r["sizes"], "classes": r["classes"], "rows": r["rows"]}) for r in hist]
    return MetadataValue.table(records=records, schema=schema)


def frame_table(df: pd.DataFrame, limit: int = 50) -> MetadataValue:
    """A small DataFrame as a metadata table (values as text, except numbers)."""
    df = df.head(limit)
    numeric = {c: pd.api.types.is_numeric_dtype(df[c]) for c in df.columns}
    columns = [TableColumn(str(c), "float" if numeric[c] else "string") for c in df.columns]
    records = [TableRecord({str(c): gate.as_float(v) if numeric[c] else ("" if pd.isna(v) else str(v))
                            for c, v in zip(df.columns, row, strict=True)})
               for row in df.itertuples(index=False)]
    return MetadataValue.table(records=records, schema=TableSchema(columns=columns))


def _measured(value: Any) -> MetadataValue:
    if isinstance(value, bool) or value is None:
        return MetadataValue.text("n/a" if value is None else str(value))
    if isinstance(value, int):
        return MetadataValue.int(value)
    number = gate.as_float(value)
    return MetadataValue.float(number) if number is not None else MetadataValue.text(str(value))


def check_metadata(result: CheckResult, evaluation: Evaluation) -> dict[str, Any]:
    """Value, threshold, summary and the evidence of one check result."""
    meta: dict[str, Any] = {"summary": MetadataValue.md(result.summary), "measured": _measured(result.measured),
                            "spec_key": MetadataValue.text(result.spec_key),
                            # the contract form, as `anon-dagster check --json` prints it
                            "check": MetadataValue.json(result.to_json())}
    thr = result.threshold
    meta["threshold"] = MetadataValue.text(
        "none" if thr is None else f"{result.comparison} {json.dumps(thr) if isinstance(thr, dict) else thr}")
    if criterion_for_check(result.name) is not None:  # a risk threshold: show the classes
        meta["class_size_histogram"] = histogram_table(gate.class_size_histogram(evaluation.measures))
        if evaluation.small_classes is not None:  # sizes and per-QI contributions, never QI values
            meta["small_classes"] = frame_table(pd.DataFrame(evaluation.small_classes["by_size"],
                                                             columns=["size", "classes", "rows"]))
            meta["qi_contributions"] = frame_table(pd.DataFrame(
                evaluation.small_classes["contributions"], columns=["qi", "rows_below_k_without", "contribution"]))
    table = result.details.get("table")
    if isinstance(table, pd.DataFrame):
        meta["per_group"] = frame_table(table)
    if "failed" in result.details:
        meta["failed_expectations"] = MetadataValue.json(result.details["failed"])
    if "composition" in result.details:
        meta["composition"] = MetadataValue.json(result.details["composition"])
    return meta


def record_summary(record: TransformationRecord) -> dict[str, Any]:
    """The record's JSON for Dagster's metadata: Mondrian's per-class boxes (large) stay in the file."""
    out = record.to_json()
    if record.mondrian is not None:
        boxes = f"{record.mondrian.boxes.classes} class boxes, in {gate.RECORD_FILE}"
        return {**out, "mondrian": {**out["mondrian"], "boxes": boxes}}
    return out


__all__ = ["check_metadata", "frame_table", "histogram_table", "record_summary"]
