"""The spec keys of a source only the Spark engine reads, and their validation.

- ``source.table``: a table (or view) of the Spark session's catalog, read with
  ``spark.table(name)``. The name is ``name``, ``db.name`` or ``catalog.db.name``: each part
  letters, digits and ``_`` starting with a letter or ``_``, or any text between backquotes
  (a backquote inside written twice, Spark's rule), so ``sales.`order lines``` names the table
  ``order lines`` of the database ``sales``. Exclusive with ``source.path`` and ``source.asset``,
  and with ``separator`` / ``format`` (which describe a file).
- ``source.format: delta``: ``source.path`` is the folder of a Delta table, read with
  ``format("delta")`` by a session that has Delta Lake configured.

The pandas engine reads neither: :func:`pandas_refusal` is the one line it answers with.
Nothing here imports Spark: a name is checked as text, so that a bad one is a spec problem naming
its key rather than a Spark parse error at run time.
"""

from __future__ import annotations

import re
from typing import Any

# one part of a multi-part name: a plain identifier, or backquoted text (`` for a backquote)
_PART = r"(?:[A-Za-z_][A-Za-z0-9_]*|`(?:[^`]|``)+`)"
_TABLE_NAME = re.compile(rf"{_PART}(?:\.{_PART}){{0,2}}")


def is_table_name(text: str) -> bool:
    """Whether ``text`` is a catalog table name as ``source.table`` accepts it (module docstring)."""
    return bool(_TABLE_NAME.fullmatch(text))


def table_name_parts(text: str) -> list[str]:
    """The parts of a valid table name, backquotes removed (``db.`a.b``` → ``["db", "a.b"]``)."""
    parts = re.findall(_PART, text)
    return [p[1:-1].replace("``", "`") if p.startswith("`") else p for p in parts]


def catalog_problems(source: Any) -> list[tuple[str, str]]:
    """``(key, message)`` for a ``source.table`` that is not a table name or is given with the keys
    of a file, and for a ``source.separator`` given with a Delta table. ``source`` is the spec's
    :class:`~.models.SourceSpec`; exclusivity with ``path`` and ``asset`` is checked by the caller."""
    problems = []
    if source.table is not None:
        if not is_table_name(source.table):
            problems.append(("source.table", f"{_shown(source.table)} is not a table name: name, db.name or "
                                             "catalog.db.name, each part letters, digits and _ (not starting "
                                             "with a digit) or `backquoted`"))
        for key in ("separator", "format"):
            if getattr(source, key) is not None:
                problems.append((f"source.{key}", "applies to a file source only: a catalog table is read from "
                                                  "the Spark session's catalog"))
    elif source.format == "delta" and source.separator is not None:
        problems.append(("source.separator", "applies to a csv file only: source.format is delta"))
    return problems


def pandas_refusal(spec: Any) -> str | None:
    """The one line the pandas engine answers a source it cannot read with (a catalog table, a
    Delta table): the spec, the key and the ways out; None for a source it reads."""
    key = spec.source.spark_only
    if key is None:
        return None
    what = (f"source.table {spec.source.table!r} is a table of the Spark catalog" if key == "source.table"
            else f"source.format delta ({spec.source.path!r}) is a Delta table")
    return (f"{spec.label}: {what}, read by the Spark engine only: run the command with --engine spark, "
            "or give the rows with --input DATA (a csv or parquet file) where the command takes it")


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = ["catalog_problems", "is_table_name", "pandas_refusal", "table_name_parts"]
