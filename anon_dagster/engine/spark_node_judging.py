"""Global recoding on Spark when the bottom frequency table is over ``max_driver_cells`` and no
``anonymization.min_levels`` are declared: the lattice's nodes judged on Spark, the search run
on the driver over the sub-lattices whose tables fit.

Definitions. N is the table's rows, k the policy's k (``Policy.k``: anonymization.k, thresholds.k
and ceil(1 / prosecutor_max), the largest), B the suppression budget the search uses
(:func:`~anon_dagster.anonymize.criteria.suppression_budget`, floor(max_suppression × N)). A
node's *classes* are the distinct combinations of its labels and the partition keys (as the
bottom frequency table groups the values); its *table* is the frequency table the search would
read at it (the QIs at its levels, the partition keys, the sensitive attributes, the utility
queries' and the linkage columns), which *fits* when its rows × columns are at most
``max_driver_cells``.

**The class bound.** A node with more than ``class_bound = B + (N - B) // k`` classes satisfies
no policy within the budget. Proof: every class of fewer than k rows misses k (the search judges
k on every class), so its rows are suppressed; a satisfying node suppresses at most B rows, so
the rows r of its classes below k number at most B, and those classes at most r (each holds a
row). Its classes of k rows or more share the other N - r rows, so there are at most
(N - r) // k of them. Its classes number at most r + (N - r) // k, which does not decrease as r
grows (one row more below k removes at most one class of k or more), so at most
B + (N - B) // k. What else the policy asks only removes satisfying nodes: l-diversity and
t-closeness add failing classes, prosecutor_avg is a table-level condition that can only refuse
a node, and k per person removes the rows of the persons below k on top of the failing classes
(the rows removed, at least those of the classes below k, still number at most B), so the
bound holds for each of them. The row-level search that follows an unreached k per person uses
the same budget. No case of the search's policy breaks the proof, so none is refused for it.

**The walk.** Generalizing never adds classes or table rows (a coarser node's combinations are
images of the finer node's), so the nodes whose tables fit are the union of the sub-lattices
above the *minimal* ones. Spark judges nodes upward from the bottom, a node once all its direct
specializations are judged not to fit: its labels applied to the bottom frequency table (kept
on Spark) with the broadcast label maps :func:`~.spark_recoding.at_min_levels` applies, then
``groupBy`` and one aggregate giving its table's rows, its classes and N (two numbers reach the
driver, one Spark job per node). A node that fits is minimal; one that does not must have more
than ``class_bound`` classes, so it fails the policy; one that does not fit and has no more
classes is refused in one line (it may satisfy the policy, and its table would have to be
searched), naming the sizes, the bound and the ways out. Past :data:`MAX_NODES_OVER_BUDGET`
nodes that do not fit the walk stops, refused in one line naming that limit.

**The search.** Every node outside the union fails, so the optimum is in it: the driver runs
the search over each minimal node's sub-lattice (its table built at that node on Spark, as with
``min_levels``), the metric's figures those of the whole lattice (``Lattice.from_frequencies``'s
``whole``), and :func:`best_of` takes the node of least loss, ties (within the search's 1e-12)
to the node the whole lattice's search visits first, so the node, its loss and the rows
suppressed are those of the search over the rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from .spark_frames import COUNT_COLUMN, DriverLimit

MAX_NODES_OVER_BUDGET = 64
_TIE = 1e-12  # the search's tolerance between losses


def class_bound(policy: Any, rows: int) -> int:
    """The most classes a node satisfying ``policy`` within its suppression budget can have over
    ``rows`` rows: B + (rows - B) // k (module docstring: the proof)."""
    from ..anonymize.criteria import suppression_budget

    budget = min(suppression_budget(policy, rows), rows)
    return budget + (rows - budget) // max(int(policy.k), 1)


@dataclass
class NodeJudging:
    """What the walk found: the minimal nodes whose tables fit (levels of the generalized QIs),
    the Spark count jobs run, the nodes judged not to fit, the class bound and the rows."""

    minimal: list[tuple[int, ...]]
    spark_counts: int
    over_budget: int
    bound: int
    rows: int

    def to_json(self, qis: list[str], gen: list[str]) -> dict[str, Any]:
        """The record's ``search.judged_on_spark`` entry (the nodes named over every QI of the
        search, the partition keys at 0)."""
        return {
            "minimal_nodes": [{c: (int(node[gen.index(c)]) if c in gen else 0) for c in qis}
                              for node in self.minimal],
            "spark_counts": int(self.spark_counts),
            "nodes_over_budget": int(self.over_budget),
            "class_bound": int(self.bound),
            "rows": int(self.rows),
        }


def judge_nodes(engine: Any, policy: Any, df: Any, gen: list[str], pks: list[str], columns: list[str],
                full: dict[str, Any], fields: dict[str, Any], width: int, refused: DriverLimit) -> NodeJudging:
    """The walk of the module docstring over ``df`` (the frequency table's ``columns``; ``full``
    each generalized QI coded over its distinct values, ``fields`` their Arrow fields), ``width``
    the columns the driver reads per row of a table. ``refused``: the bottom table's refusal,
    whose line the refusals here extend."""
    from pyspark.sql import functions as F

    base = df.groupBy(*[f"`{c}`" for c in columns]).agg(F.count(F.lit(1)).alias(COUNT_COLUMN)).persist()
    try:
        return _walk(engine, policy, base, gen, pks, columns, full, fields, width, refused, F)
    finally:
        base.unpersist()


def _walk(engine: Any, policy: Any, base: Any, gen: list[str], pks: list[str], columns: list[str],
          full: dict[str, Any], fields: dict[str, Any], width: int, refused: DriverLimit, F: Any) -> NodeJudging:
    import pyarrow as pa

    from .spark_labels import apply_node

    dims = [int(full[c].n_levels) for c in gen]
    classes_by = [*gen, *pks]
    regroup = set(classes_by) != set(columns)
    max_rows = engine.max_driver_cells // max(width, 1)
    schema = pa.schema([fields[c] for c in gen])

    def count(node: tuple[int, ...]) -> tuple[int, int, int]:
        levels = {c: lv for c, lv in zip(gen, node, strict=True) if lv > 0}
        out, _ = apply_node(engine, base, schema, full, levels, [], pd.DataFrame(), np.zeros(0, dtype=np.int64),
                            np.zeros(0, dtype=bool))
        combos = out.groupBy(*[f"`{c}`" for c in columns]).agg(F.sum(COUNT_COLUMN).alias("__rows"))
        if regroup:
            combos = combos.groupBy(*[f"`{c}`" for c in classes_by]).agg(
                F.count(F.lit(1)).alias("__table"), F.sum("__rows").alias("__rows"))
            got = combos.agg(F.count(F.lit(1)), F.sum("__table"), F.sum("__rows")).collect()[0]
        else:
            got = combos.agg(F.count(F.lit(1)), F.count(F.lit(1)), F.sum("__rows")).collect()[0]
        return int(got[0]), int(got[1] or 0), int(got[2] or 0)

    def where(node: tuple[int, ...]) -> str:
        return ", ".join(f"{c}={lv}" for c, lv in zip(gen, node, strict=True))

    bottom = tuple(0 for _ in gen)
    over: set[tuple[int, ...]] = set()
    minimal: list[tuple[int, ...]] = []
    counts, bound, rows = 0, None, 0
    layer = [bottom]
    while layer:
        nxt: set[tuple[int, ...]] = set()
        for node in layer:
            if len(over) >= MAX_NODES_OVER_BUDGET:
                raise DriverLimit(
                    f"{refused}; judged on Spark, {len(over)} nodes of the lattice have tables over the "
                    f"budget and judging stops at {MAX_NODES_OVER_BUDGET} (one Spark count each): declare "
                    "anonymization.min_levels or raise max_driver_cells")
            classes, table, n = count(node)
            counts += 1
            if bound is None:
                rows, bound = n, class_bound(policy, n)
            if table <= max_rows:
                minimal.append(node)
                continue
            if classes <= bound:
                raise DriverLimit(
                    f"{refused}; judged on Spark, the node ({where(node)}) has a table of {table:,} rows x {width} "
                    f"columns = {table * width:,} cells and {classes:,} classes, not more than the "
                    f"{bound:,} a node meeting the policy can have ({rows:,} rows, k={policy.k}, "
                    f"suppression budget {suppression_rows(policy, rows):,} rows), so it may meet it: raise "
                    f"max_driver_cells to at least {table * width:,}, or declare anonymization.min_levels")
            over.add(node)
            for j in range(len(gen)):
                if node[j] + 1 < dims[j]:
                    nxt.add(node[:j] + (node[j] + 1,) + node[j + 1:])
        # a node is judged once every direct specialization is known not to fit: one that fits
        # below it makes it a generalization of a minimal node, not minimal itself
        layer = sorted(up for up in nxt
                       if all(up[:j] + (up[j] - 1,) + up[j + 1:] in over for j in range(len(gen)) if up[j] > 0))
    return NodeJudging(minimal, counts, len(over), int(bound or 0), rows)


def suppression_rows(policy: Any, rows: int) -> int:
    """The suppression budget in rows, as the search computes it."""
    from ..anonymize.criteria import suppression_budget

    return suppression_budget(policy, rows)


def best_of(found: list[tuple[Any, Any, list[int]]], lattice_size: int) -> tuple[int, Any]:
    """Of the searches of the minimal nodes' sub-lattices (each ``(lattice, result, offsets)``,
    the result in the sub-lattice's levels), the one whose node the whole lattice's search
    chooses, and the search as over the whole lattice: least loss, ties (within 1e-12) to the
    node visited first (the search's bound, then the node's height, then its index, which orders
    nodes as their levels do). Unsolved: the closest of the sub-lattices' closest nodes (least
    rows to suppress, then fewest criteria missed, then lowest). The frontier is the union's
    minimal nodes; checks, time and size add up over the whole lattice."""
    whole = [result.above(offsets) for _, result, offsets in found]
    solved = [i for i, s in enumerate(whole) if s.solved]
    if solved:
        least = min(whole[i].loss for i in solved)

        def visit(i: int) -> tuple[float, int, tuple[int, ...]]:
            lattice, result, _ = found[i]
            bound = lattice.bound_at(result.levels)
            levels = tuple(int(v) for v in whole[i].levels)
            return (0.0 if bound is None else bound, sum(levels), levels)

        win = min((i for i in solved if whole[i].loss <= least + _TIE), key=visit)
    else:
        near = [i for i, s in enumerate(whole) if s.closest is not None]
        win = min(near, key=lambda i: (whole[i].closest.suppressed, len(whole[i].closest.missing),
                                       sum(whole[i].closest.levels))) if near else 0
    front: dict[tuple[int, ...], Any] = {}
    for s in whole:
        for info in s.frontier:
            front.setdefault(tuple(info.levels), info)
    minimal = [info for key, info in front.items()
               if not any(other != key and all(a <= b for a, b in zip(other, key, strict=True)) for other in front)]
    minimal.sort(key=lambda i: (math.inf if i.loss is None else i.loss, i.levels))
    chosen = replace(whole[win], nodes_checked=sum(s.nodes_checked for s in whole), lattice_size=lattice_size,
                     frontier=minimal, frontier_complete=all(s.frontier_complete for s in whole),
                     elapsed_s=sum(s.elapsed_s for s in whole), min_levels=None)
    return win, chosen


__all__ = ["MAX_NODES_OVER_BUDGET", "NodeJudging", "best_of", "class_bound", "judge_nodes"]
