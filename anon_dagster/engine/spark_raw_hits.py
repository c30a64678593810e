"""The data contract's search for raw identifier values in published cells, on Spark.

Definition (:func:`anon_dagster.release.gate.raw_value_hits`): for a published column ``c`` and
an identifier ``i``, the hits are the published cells of ``c`` equal, as text, to a raw value of
``i``; ``i``'s own column is searched for all its raw values, every other text column only for
values of at least ``min_length`` characters (short ones collide with ordinary codes).

How Spark counts them without joining every published cell to every raw value:

- **An identifier's own pseudonymized column.** Its cells are pseudonyms, which match the
  method's format ``P`` (the contract counts the cells that do not). A cell equal to a raw value
  is the same text, so a cell matching ``P`` can only equal a raw value matching ``P``. When no
  cell fails the format and no raw value matches it, which one aggregation over the raw rows
  tells, the column holds no raw value: its count is 0 with no join. Otherwise it is joined like
  any other column.
- **Every other searched column** is first reduced to its distinct (column, value) pairs with
  their cell counts. A published column of categories has few, so the join that follows
  streams the raw values once against a small table (Spark broadcasts it) instead of shuffling
  both sides.

The figures are those of the definition in every case; only the work differs.
"""

from __future__ import annotations

from typing import Any


def raw_stats(raw: Any, idents: list[str], patterns: dict[str, str]) -> dict[str, tuple[int, int, int]]:
    """Per identifier of ``raw``: (non-null values, longest value in characters, values matching
    the format ``patterns[ident]`` of its published pseudonyms, 0 without one), one aggregation."""
    from pyspark.sql import functions as F

    aggs = []
    for i, ident in enumerate(idents):
        value = F.col(f"`{ident}`").cast("string")
        pattern = patterns.get(ident)
        aggs += [F.count(value).alias(f"n{i}"), F.max(F.length(value)).alias(f"l{i}"),
                 (F.sum(value.rlike(pattern).cast("long")) if pattern else F.lit(0)).alias(f"p{i}")]
    got = raw.agg(*aggs).collect()[0]
    return {ident: (int(got[f"n{i}"] or 0), int(got[f"l{i}"] or 0), int(got[f"p{i}"] or 0))
            for i, ident in enumerate(idents)}


def searched_pairs(idents: list[str], columns: list[str], text: list[str], stats: dict[str, tuple[int, int, int]],
                   min_length: int) -> list[tuple[str, str]]:
    """The (published column, identifier) pairs the definition searches: the identifier's own
    column when it has a raw value, a text column when one of its raw values is long enough."""
    pairs = []
    for ident in idents:
        n, longest, _ = stats[ident]
        for col in columns:
            if n and (col == ident or (col in text and longest >= min_length)):
                pairs.append((col, ident))
    return pairs


def raw_value_hits(spec: Any, published: Any, raw: Any | None, columns: list[str], types: dict[str, str],
                   categorical: set[str], min_length: int,
                   formats: dict[str, tuple[str, int]]) -> dict[tuple[str, str], int]:
    """Per searched (published column, identifier), the published cells equal to a raw value of
    that identifier (module docstring). ``formats``: per pseudonymized published column, the
    pattern of its pseudonyms and the number of its cells that do not match it (the contract's
    pattern and count)."""
    from pyspark.sql import functions as F

    if raw is None:
        return {}
    idents = [i for i in spec.identifiers if i in raw.columns]
    if not idents:
        return {}
    patterns = {name: formats[name][0] for name in idents if name in formats}
    off_format = {name: formats[name][1] for name in patterns}
    stats = raw_stats(raw, idents, patterns)
    text = [c for c in columns if types.get(c) == "string" and c not in categorical]
    hits = {pair: 0 for pair in searched_pairs(idents, columns, text, stats, min_length)}
    # an identifier's own column of well-formed pseudonyms, none of whose raw values looks like one
    proven = {(c, i) for c, i in hits if c == i and c in patterns and not off_format[c] and not stats[i][2]}
    joined = {pair for pair in hits if pair not in proven}
    if not joined:
        return hits
    searched = sorted({col for col, _ in joined})
    cells = published.select(F.explode(F.array(*[
        F.struct(F.lit(c).alias("col"), F.col(f"`{c}`").cast("string").alias("value")) for c in searched
    ])).alias("cell")).select("cell.col", "cell.value").where(F.col("value").isNotNull())
    own = [c for c, i in joined if c == i]
    # a cell can only hit its own identifier's values, or values of min_length characters or more
    cells = cells.where(F.col("col").isin(own) | (F.length("value") >= min_length))
    distinct_cells = cells.groupBy("col", "value").agg(F.count(F.lit(1)).alias("cells"))
    raw_values = None
    for ident in sorted({i for _, i in joined}):
        part = (raw.select(F.lit(ident).alias("ident"), F.col(f"`{ident}`").cast("string").alias("value"))
                .where(F.col("value").isNotNull()))
        raw_values = part if raw_values is None else raw_values.unionByName(part)
    matched = (distinct_cells.join(raw_values, on="value", how="inner")
               .where((F.col("col") == F.col("ident")) | (F.length("value") >= min_length))
               .dropDuplicates(["col", "value", "ident"]))  # a raw value repeated in the raw rows counts once
    for r in matched.groupBy("col", "ident").agg(F.sum("cells").alias("hits")).collect():
        if (r["col"], r["ident"]) in joined:  # a proven pair's column may be searched for another identifier
            hits[(r["col"], r["ident"])] = int(r["hits"])
    return hits


__all__ = ["raw_stats", "raw_value_hits", "searched_pairs"]
