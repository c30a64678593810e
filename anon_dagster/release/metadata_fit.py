"""Keeping one event's metadata below what an orchestrator's event log takes.

Entries are cut largest first, never those of :data:`KEPT_WHOLE` (the verdict, its figures and
the contract form), until the whole fits in :data:`MAX_METADATA_BYTES` as serialized: a table to
its first half of rows (its ``<name>_note`` says so), a text over 2,000 characters to its first
1,000, a JSON value to one line giving its size. Each note names where the whole is, when known.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

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
    while sum(size(v) + len(k) for k, v in out.items()) > limit:
        candidates = [(size(v), k) for k, v in out.items() if k not in KEPT_WHOLE and k not in done]
        if not candidates:
            break
        _, name = max(candidates)
        if not cut(name, out[name], out):
            done.add(name)
    return out


def metadata_size(entries: Mapping[str, Any], size: Callable[[Any], int]) -> int:
    return sum(size(v) + len(k) for k, v in entries.items())


__all__ = ["KEPT_WHOLE", "MAX_METADATA_BYTES", "cut_rows_note", "cut_text", "fit_entries", "metadata_size",
           "too_large", "where_text"]
