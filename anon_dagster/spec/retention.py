"""The ``retention`` block of release spec v1: how long stored intermediate tables are kept.

``retention: {raw_days: N, pseudonymized_days: N}``

- ``raw_days``: the raw table of a partition (as ingested, identifiers in clear) is deleted once
  ``N`` days have passed since it was stored;
- ``pseudonymized_days``: the same for the pseudonymized table (and the anonymized table, which
  still holds the linkage pseudonyms and is made from it).

A table is *past its retention* at ``now`` when ``now >= stored_at + N × 24 h`` (UTC). A key left
out keeps that table until it is deleted by hand. Publications, reports and the ledger are not
intermediates: retention never deletes them. The deletion itself is in
:mod:`anon_dagster.release.governance.retention`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from .columns import Integer, _Model

RETENTION_KEYS = ("raw_days", "pseudonymized_days")


class RetentionSpec(_Model):
    """How many days each stored intermediate table is kept (see the module docstring)."""

    raw_days: Integer | None = Field(default=None, ge=1)
    pseudonymized_days: Integer | None = Field(default=None, ge=1)


def retention_message(loc: tuple[Any, ...], error: Mapping[str, Any]) -> str | None:
    """The message for a pydantic error under ``retention`` (None elsewhere)."""
    if not loc or loc[0] != "retention":
        return None
    if error.get("type") == "extra_forbidden" and len(loc) == 2:
        return f"unknown key {str(loc[1])!r} (retention takes: {', '.join(RETENTION_KEYS)})"
    if len(loc) == 2 and error.get("type") in ("greater_than_equal", "int_type", "int_parsing", "int_from_float"):
        return f"{error.get('input')!r} is not a number of days (a whole number, at least 1)"
    return None


def retention_problems(retention: RetentionSpec | None) -> list[tuple[str, str]]:
    """``(key, message)`` for a ``retention`` block that keeps nothing for a limited time."""
    if retention is not None and retention.raw_days is None and retention.pseudonymized_days is None:
        return [("retention", f"an empty retention block limits nothing: give {' or '.join(RETENTION_KEYS)}")]
    return []


__all__ = ["RETENTION_KEYS", "RetentionSpec", "retention_message", "retention_problems"]
