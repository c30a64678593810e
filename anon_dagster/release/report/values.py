"""Values of a report: canonical JSON values and the one text form of a figure."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...io import plain_json


def canonical(value: Any) -> Any:
    """``value`` as plain JSON types (:func:`anon_dagster.io.plain_json`), floats rounded to 12
    significant digits so a rebuilt report is byte-identical."""
    return plain_json(value, digits=12)


def render_json(report: Mapping[str, Any]) -> str:
    """Canonical JSON text of a report (see the module docstring)."""
    return json.dumps(canonical(report), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def format_value(value: Any, missing: str = "—") -> str:
    """A figure as text: floats to 4 significant digits, lists and dicts as JSON, None as ``missing``."""
    if value is None:
        return missing
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | dict):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return str(value)
