"""Cell suppression on Spark (``anonymization.suppression: cells``): the pandas engine's
decision (:func:`~anon_dagster.anonymize.global_method.run_global`), taken on the driver, applied
by Spark.

Definitions. At the node the search chose, the failing classes' rows may keep their place with
some QI cells replaced by ``*`` (:func:`~anon_dagster.anonymize.local_suppression.local_suppression`),
when that publishes more than suppressing them whole (the pandas engine's rule,
``global_method._cells_publish_more``). Every row of a class at the node is treated alike (the
verdict is a class's, and so is each step's choice of rows), so the outcome is a function of the
bottom frequency table: the driver expands that table to its rows (each combination repeated
``count`` times, within ``max_driver_cells``; a larger table is refused naming its size), runs the
pandas engine's functions on them, and reads back, per combination, which columns are blanked and
whether it is still suppressed whole. Spark applies that with a broadcast join on the
combination's values (the QIs at level 0, or at ``anonymization.min_levels``, and the partition
keys), before the node's labels replace the values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..hierarchies import TOP
from .spark_frames import DriverLimit, arrow_values, lookup_frame, null_safe

DROP_COLUMN = "__cells_drop"
BLANK_PREFIX = "__cells_blank"


@dataclass
class CellPlan:
    """The cells decision per row of the bottom frequency table: ``blank[c]`` the combinations
    whose ``c`` is published as ``*``, ``still`` those suppressed whole; ``cells`` the cells
    suppressed per column and ``info`` the record's ``cell_suppression`` entry."""

    blank: dict[str, np.ndarray]
    still: np.ndarray
    cells: dict[str, int]
    info: dict[str, Any]
    sizes: np.ndarray
    starred: set[str] = field(default_factory=set)


def expanded_rows(freq: pd.DataFrame, counts: np.ndarray, columns: list[str], max_cells: int) -> pd.DataFrame:
    """The rows the frequency table counts (each combination ``count`` times, in the order of the
    combinations' first rows); DriverLimit when rows × columns exceed ``max_cells``."""
    n = int(counts.sum())
    cells = n * max(len(columns), 1)
    if cells > max_cells:
        raise DriverLimit(
            f"cell suppression works on the rows of the bottom frequency table: {n:,} rows x {len(columns)} columns "
            f"= {cells:,} cells, more than the Spark engine holds on the driver (max_driver_cells={max_cells:,}): "
            "use suppression: rows, split the release into partitions, or raise max_driver_cells on a driver "
            "with the memory for it")
    index = np.repeat(np.arange(len(freq)), counts)
    return freq[columns].iloc[index].reset_index(drop=True)


def plan_cells(engine: Any, spec: Any, policy: Any, freq: pd.DataFrame, counts: np.ndarray, coded: dict[str, Any],
               above: dict[str, int], raised: dict[str, int], pks: list[str], fail_rows: np.ndarray,
               columns: list[str]) -> CellPlan | None:
    """The pandas engine's cell suppression of the failing combinations ``fail_rows`` (module
    docstring); None when suppressing them whole is kept (cells would not publish more)."""
    from ..anonymize.criteria import sensitive_attributes
    from ..anonymize.global_method import _cells_publish_more
    from ..anonymize.local_suppression import local_suppression
    from ..anonymize.record import breakdown
    from ..risk.classes import EquivalenceClasses

    gen = list(coded)
    work = expanded_rows(freq, counts, columns, engine.max_driver_cells)
    index = np.repeat(np.arange(len(freq)), counts)
    full = work.copy()
    for c in gen:
        if above[c] > 0 or c in raised:  # published as the node's labels, a categorical as on pandas
            qi, level = coded[c], above[c]
            cat = pd.Categorical.from_codes(qi.level_maps[level][qi.codes][index],
                                            categories=pd.Index(qi.labels[level], dtype=object))
            full[c] = pd.Series(cat, name=c)
    sens = ([a.code(work[a.name]) for a in sensitive_attributes(spec, policy.sensitive)]
            if policy.needs_sensitive else [])
    fail = fail_rows[index]
    importance = {c: spec.columns[c].importance for c in gen}
    celled, cells, still = local_suppression(full, gen, pks, importance, policy, sens, candidates=fail)
    if not _cells_publish_more(policy, celled, gen + pks, fail, still):
        return None
    touched = np.zeros(len(full), dtype=bool)
    blank_rows: dict[str, np.ndarray] = {}
    for c in gen:
        blank_rows[c] = (celled[c].astype(str).to_numpy() == TOP) & (full[c].astype(str).to_numpy() != TOP) & ~still
        touched |= blank_rows[c]
    first = np.searchsorted(index, np.arange(len(freq)))  # each combination's first expanded row
    info = {
        "rows_with_cells_suppressed": int(touched.sum()),
        "by_partition_key": breakdown(work, touched, pks),
        "by_query": {q.name: breakdown(work, touched, [c for c in q.group_by if c in work.columns])
                     for q in spec.utility_queries},
    }
    kept = celled.loc[~still]
    qis = [c for c in spec.quasi_identifiers if c in kept.columns]
    sizes = EquivalenceClasses.from_frame(kept, qis).sizes if len(kept) and qis else np.zeros(0, dtype=np.int64)
    return CellPlan({c: m[first] for c, m in blank_rows.items()}, still[first], cells, info, sizes,
                    {c for c in gen if cells.get(c, 0) > 0})


def mark_cells(engine: Any, df: Any, schema: pa.Schema, freq: pd.DataFrame, keys: list[str], plan: CellPlan) -> Any:
    """``df`` with each row's decision joined from ``plan`` (a broadcast of the combinations
    touched: their values of ``keys``, a flag per blanked column and whether suppressed whole)."""
    from pyspark.sql import functions as F

    chosen = plan.still.copy()
    for m in plan.blank.values():
        chosen |= m
    rows = np.flatnonzero(chosen)
    spark_types = {f.name: f.dataType for f in df.schema.fields}
    columns: dict[str, pa.Array] = {}
    casts: dict[str, Any] = {}
    pairs = []
    for i, c in enumerate(keys):
        columns[f"__key{i}"] = arrow_values(freq[c].to_numpy(dtype=object)[rows], schema.field(c).type)
        casts[f"__key{i}"] = spark_types[c]
        pairs.append((c, f"__key{i}"))
    frame = pd.DataFrame({f"__key{i}": columns[f"__key{i}"].to_pandas() for i in range(len(keys))})
    # several combinations differ only by a sensitive value: one decision per key
    unique = ~frame.astype(str).duplicated().to_numpy() if len(keys) else np.arange(len(rows)) == 0
    pick = rows[unique]
    table = {name: arr.filter(pa.array(unique)) for name, arr in columns.items()}
    table[DROP_COLUMN] = pa.array(plan.still[pick])
    for j, c in enumerate(plan.blank):
        table[f"{BLANK_PREFIX}{j}"] = pa.array(plan.blank[c][pick])
    lookup = lookup_frame(engine.spark, table, casts)
    return df.join(F.broadcast(lookup), on=null_safe(df, lookup, pairs), how="left").drop(*columns)


def blank_cells(df: Any, plan: CellPlan) -> Any:
    """The marked rows of ``df`` (:func:`mark_cells`) carried out: the blanked cells written
    ``*`` (a column published at level 0 becomes text, as the pandas engine's holds ``*`` among
    its values), the rows suppressed whole removed."""
    from pyspark.sql import functions as F

    out = df.filter(~F.coalesce(F.col(DROP_COLUMN), F.lit(False)))
    kinds = dict(out.dtypes)
    for j, c in enumerate(plan.blank):
        if c not in plan.starred:
            continue
        flag = F.coalesce(F.col(f"{BLANK_PREFIX}{j}"), F.lit(False))
        value = F.col(f"`{c}`")
        if kinds[c] in ("float", "double"):  # a whole number written as the project labels it: 34, not 34.0
            text = F.when(value == F.floor(value), value.cast("long").cast("string")).otherwise(value.cast("string"))
        else:
            text = value.cast("string")
        out = out.withColumn(c, F.when(flag, F.lit(TOP)).otherwise(text))
    return out.drop(DROP_COLUMN, *[f"{BLANK_PREFIX}{j}" for j in range(len(plan.blank))])


__all__ = ["CellPlan", "blank_cells", "expanded_rows", "mark_cells", "plan_cells"]
