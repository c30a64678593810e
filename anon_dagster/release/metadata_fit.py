"""Keeping one event's metadata below what an orchestrator's event log takes.

Entries are cut largest first, never those of :data:`KEPT_WHOLE` (the verdict, its figures and
the contract form), until the whole fits in :data:`MAX_METADATA_BYTES` as serialized: a table to
its first half of rows (its ``<name>_note`` says so), a text over 2,000 characters to its first
1,000, a JSON value to one line giving its size. Each note names where the whole is, when known.
:func:`fit_values` cuts the plain values of :mod:`.shown_outcomes` before an orchestrator
converts them; the size it measures is the orchestrator's (its serialized form of each value).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from .evaluation import EvidenceTable
from .shown_values import Shown

# the most a materialization or check evaluation writes to the event log, as serialized there
MAX_METADATA_BYTES = 50_000
# entries never cut to fit: the verdict, its figures and the contract form
KEPT_WHOLE = ("summary", "measured", "threshold", "spec_key", "check", "report", "transformation_record_file")
LONG_TEXT, CUT_TEXT = 2000, 1000
_CUT = "cut to its first "


def where_text(whole: Path | str | None) -> str:
    return f"; the whole is in {whole}" if whole else ""


def cut_rows_note(before: str | None, keep: int, where: str) -> str:
    """A table's note once cut to ``keep`` rows (an earlier cut's words replaced)."""
    note = (before or "").split(_CUT)[0].removesuffix("; ")
    return (f"{note}; " if note else "") + f"{_CUT}{keep} rows to fit the event log{where}"


def cut_text(text: str, where: str) -> str | None:
    """A long text cut to fit; None for one short enough to keep."""
    return text[:CUT_TEXT] + f" … (cut to fit the event log{where})" if len(text) > LONG_TEXT else None


def too_large(size: int, where: str) -> str:
    return f"{size:,} bytes, too large for the event log{where}"


def fit_entries(entries: dict[str, Any], size: Callable[[Any], int],
                cut: Callable[[str, Any, dict[str, Any]], bool], limit: int = MAX_METADATA_BYTES) -> dict[str, Any]:
    """``entries`` cut until their size (``size`` of each value plus its name) is at most
    ``limit``: ``cut(name, value, out)`` makes one entry of ``out`` smaller, False if it cannot."""
    out = dict(entries)
    done: set[str] = set()
    measured: dict[str, tuple[Any, int]] = {}  # each entry's size, measured again once it is cut

    def size_of(name: str) -> int:
        if name not in measured or measured[name][0] is not out[name]:
            measured[name] = (out[name], size(out[name]))
        return measured[name][1]

    while sum(size_of(k) + len(k) for k in out) > limit:
        candidates = [(size_of(k), k) for k in out if k not in KEPT_WHOLE and k not in done]
        if not candidates:
            break
        _, name = max(candidates)
        if not cut(name, out[name], out):
            done.add(name)
    return out


def split_notes(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with each :class:`~.evaluation.EvidenceTable`'s note as its own entry
    ``<name>_note`` (a text) after the table's."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        noted = isinstance(value, EvidenceTable) and bool(value.note)
        out[name] = replace(value, note="") if noted else value
        if noted:
            out[f"{name}_note"] = Shown("text", value.note)
    return out


def cut_value(name: str, out: dict[str, Any], size: Callable[[Any], int], where: str) -> bool:
    """Make the plain value ``out[name]`` smaller (see the module docstring); False if it cannot be."""
    value = out[name]
    if isinstance(value, EvidenceTable) and len(value.rows) > 1:
        keep = len(value.rows) // 2
        out[name] = replace(value, rows=value.rows[:keep])
        before = out.get(f"{name}_note")
        out[f"{name}_note"] = Shown("text", cut_rows_note(before.value if isinstance(before, Shown) else None, keep,
                                                          where))
        return True
    if isinstance(value, Shown) and value.kind in ("md", "text") and (short := cut_text(value.value, where)):
        out[name] = Shown(value.kind, short)
        return True
    if isinstance(value, Mapping | list) or (isinstance(value, Shown) and value.kind == "json"):
        out[name] = Shown("text", too_large(size(value), where))
        return True
    return False


def fit_values(values: Mapping[str, Any], size: Callable[[Any], int], limit: int = MAX_METADATA_BYTES,
               whole: Path | str | None = None) -> dict[str, Any]:
    """Plain ``values`` (tables' notes split out, :func:`split_notes`) cut until they fit in
    ``limit`` as ``size`` measures each value; ``whole`` is where the whole evidence is."""
    where = where_text(whole)
    return fit_entries(split_notes(values), size, lambda name, _value, out: cut_value(name, out, size, where), limit)


def metadata_size(entries: Mapping[str, Any], size: Callable[[Any], int]) -> int:
    return sum(size(v) + len(k) for k, v in entries.items())


__all__ = ["KEPT_WHOLE", "MAX_METADATA_BYTES", "cut_rows_note", "cut_text", "cut_value", "fit_entries", "fit_values",
           "metadata_size", "split_notes", "too_large", "where_text"]
