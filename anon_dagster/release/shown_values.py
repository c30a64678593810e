"""Figures and records as an orchestrator's metadata shows them (plain values, no Dagster).

- a figure is rounded to :data:`DIGITS` significant digits, as the report writes them
  (:func:`~.report.values.format_value`); integers, and floats holding one, stay exact;
- a measured value is an integer, a rounded float, or text (``n/a`` for none);
- the transformation record is shown without what is per class (Mondrian's ranges: the QI
  values of each class), which stays in the record file;
- a value that must be shown as one kind whatever its type is a :class:`Shown`: Markdown that
  reads as written, text, JSON as it is (unrounded: the contract form), an integer or a float.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .gate import as_float
from .report.markdown import md_text

# significant digits of a figure shown (the report's format_value)
DIGITS = 4


def figure(value: Any) -> Any:
    """A figure as shown: a float to :data:`DIGITS` significant digits (``0.9794362523823854`` →
    ``0.9794``), anything else as it is (integers exact, and so a float holding one)."""
    if isinstance(value, float) and math.isfinite(value) and not value.is_integer():
        return float(f"{value:.{DIGITS}g}")
    return value


def rounded(value: Any) -> Any:
    """``value`` with every float inside it (dicts, lists) rounded by :func:`figure`."""
    if isinstance(value, Mapping):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(v) for v in value]
    return figure(value)


def measured_value(value: Any) -> int | float | str:
    """A check's measured value as shown: ``n/a`` for None, a boolean as text, an integer exact,
    a number rounded (:func:`figure`), anything else as text."""
    if isinstance(value, bool) or value is None:
        return "n/a" if value is None else str(value)
    if isinstance(value, int):
        return value
    number = as_float(value)
    return figure(number) if number is not None else str(value)


def record_summary(record: Any, record_file: Path | str) -> dict[str, Any]:
    """The transformation record as shown: :meth:`TransformationRecord.summary` without what is
    per class (Mondrian's ranges become a count), which stays in ``record_file``."""
    name = Path(str(record_file)).name
    out = record.summary(name)
    mondrian = out.get("mondrian")
    if isinstance(mondrian, Mapping) and isinstance(mondrian.get("ranges"), list):
        classes = len(mondrian["ranges"]) + int(mondrian.get("ranges_truncated") or 0)
        out["mondrian"] = {**mondrian, "ranges": f"{classes} class ranges, in {name}"}
        out["mondrian"].pop("ranges_truncated", None)
    return out


@dataclass(frozen=True)
class Shown:
    """``value`` shown as ``kind``: ``md`` (Markdown), ``text``, ``json`` (unrounded), ``int`` or ``float``."""

    kind: str
    value: Any


def markdown(text: Any) -> Shown:
    """Prose the core wrote, as Markdown that shows it as written (:func:`~.report.markdown.md_text`)."""
    return Shown("md", md_text(text))


def text(value: Any) -> Shown:
    return Shown("text", value)


def measured(value: Any) -> Shown:
    """A check's measured value (:func:`measured_value`) as text, an integer or a float."""
    shown = measured_value(value)
    return Shown("text" if isinstance(shown, str) else "int" if isinstance(shown, int) else "float", shown)


__all__ = ["DIGITS", "Shown", "figure", "markdown", "measured", "measured_value", "record_summary", "rounded", "text"]
