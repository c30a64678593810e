"""Mondrian's first depths on Spark, for the partition-key parts too large for one worker.

A part is cut on one executor from its frequency cells (:mod:`.spark_mondrian`); a part whose
cells exceed ``max_worker_cells`` (cells × the columns a worker holds of each) is cut on Spark,
depth by depth, until each of its nodes fits a worker, and the nodes are then cut on the
executors as parts of their own. The cuts are exact, not approximate medians: each depth is
decided by the pandas engine's own rule (:func:`~anon_dagster.anonymize.mondrian_cuts.decide_depth`
and :func:`~anon_dagster.anonymize.mondrian_cuts._try_cut`), from what Spark aggregates:

- per node, its rows and cells and, per QI, its lowest, highest and highest present rank (one
  ``groupBy(node)``);
- per QI tried, each node's histogram over that QI's rank and the sensitive codes (rows
  summed): a cut of a node along one QI depends only on them (its median, both halves' sizes
  and sensitive counts), so ``_try_cut`` on the histogram's cells decides what it decides on the
  node's cells.

The nodes' cells then move to their children in one broadcast join (the node's QI and cut). A
node of a depth cut on Spark that is final is a class: its cells take its labels from its box.
Since a node is cut from its own cells only, the frontier's nodes cut apart give the tree below
the top depths, and the part's tree is the top depths stacked on them
(:meth:`~anon_dagster.anonymize.mondrian_cuts.MondrianCuts.stacked`): the labels, cuts and record
of one run over the part. The driver holds, per depth, the nodes' figures and one histogram per
QI tried (each read within ``max_driver_cells``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from .spark_frames import COUNT_COLUMN, collect, lookup_frame, to_pandas
from .spark_session import SparkDriver

NODE_COLUMN = "__node"
TOP_CLASS_COLUMN = "__top_class"
UNIT_COLUMN = "__unit"

log = logging.getLogger(__name__)


@dataclass
class TopCuts:
    """The first depths of the large parts: per part its tree so far (``trees``) and the units its
    nodes at the next depth are cut as, in order (``frontier``); ``shipped`` those nodes' cells
    (the cells' columns and :data:`UNIT_COLUMN`); ``labels`` the distinct part and QI values of the
    cells in the top depths' classes with their labels (``__label<i>``), or ``None``."""

    trees: dict[int, Any]
    frontier: dict[int, list[int]]
    shipped: Any
    labels: Any


def rank_columns(n_gen: int, n_sens: int) -> tuple[list[str], list[str]]:
    """The names of the cells' QI ranks and sensitive codes."""
    return [f"__rank{j}" for j in range(n_gen)], [f"__code{i}" for i in range(n_sens)]


def top_cuts(engine: SparkDriver, cells: Any, layout: Any, part_column: str, big: list[int],
             width: int, unit_base: int) -> TopCuts:
    """Cut the parts ``big`` of ``cells`` (frequency cells of the part, QIs and sensitive
    attributes, with their rows in :data:`~.spark_frames.COUNT_COLUMN`) on Spark until each node
    holds at most ``engine.max_worker_cells`` cells of ``width`` columns (module docstring); the
    frontier's nodes become units ``unit_base``, ``unit_base + 1``, ..."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from ..anonymize.mondrian_cuts import MondrianCuts, decide_depth, halves_judge

    dims = layout.dims
    D = len(dims)
    ranks, codes = rank_columns(D, len(layout.sens))
    coded_schema = T.StructType(list(cells.schema.fields)
                                + [T.StructField(c, T.LongType(), False) for c in ranks + codes])
    columns = list(dict.fromkeys(layout.gen + layout.sens))

    def code(batches):
        for frame in batches:
            w_rank, w_sens = layout.coded(frame[columns])
            for c, values in zip(ranks + codes, [*w_rank, *w_sens], strict=True):
                frame[c] = values
            yield frame

    roots = lookup_frame(engine.spark, {"__root_part": pa.array(big, pa.int64()),
                                        NODE_COLUMN: pa.array(np.arange(len(big)), pa.int64())}, {})
    work = (cells.filter(F.col(part_column).isin(big)).mapInPandas(code, coded_schema)
            .join(F.broadcast(roots), F.col(part_column) == F.col("__root_part"), "inner").drop("__root_part")
            .withColumn(TOP_CLASS_COLUMN, F.lit(None).cast(T.LongType())))
    work = work.localCheckpoint(eager=True)
    judge = halves_judge(layout.policy, layout.attributes, layout.reference)
    node_root = np.arange(len(big), dtype=np.int64)
    levels: list[tuple[np.ndarray, Any, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    n_classes = 0
    largest = 0
    while len(node_root):
        stats = _node_figures(engine, work, dims, ranks, len(node_root))
        sizes = stats["rows"].to_numpy(np.int64)
        node_cells = stats["cells"].to_numpy(np.int64)
        largest = largest or int(node_cells.max())
        if (node_cells * width <= engine.max_worker_cells).all():
            break
        lo, hi, hp = (np.stack([stats[f"{x}{j}"].to_numpy(np.int64) for j in range(D)], axis=1)
                      if D else np.zeros((len(sizes), 0), np.int64) for x in ("lo", "hi", "hp"))
        histograms = _Histograms(engine, work, ranks, codes)

        def try_dim(j: int, segs: np.ndarray, sizes=sizes, lo=lo, hi=hi, histograms=histograms):
            from ..anonymize.mondrian_cuts import _try_cut

            node, rank, sens, weight = histograms.of(j, segs)
            cells_of = np.bincount(node, minlength=len(sizes)).astype(np.int64)
            w_rank = np.zeros((D, len(node)), dtype=np.int64)
            w_rank[j] = rank
            return _try_cut(dims[j], j, segs, sizes, cells_of, np.arange(len(node), dtype=np.int64), w_rank,
                            sens, weight, lo[:, j], hi[:, j], judge)

        depth = decide_depth(dims, layout.policy.k, sizes, lo, hi, hp, try_dim)
        final = depth.final
        f = np.flatnonzero(final)
        classes = np.full(len(sizes), -1, dtype=np.int64)
        classes[f] = np.arange(n_classes, n_classes + len(f))
        n_classes += len(f)
        levels.append((node_root, depth, lo, hi, hp, sizes, final))
        cut = np.flatnonzero(~final)
        left = np.full(len(sizes), -1, dtype=np.int64)
        left[cut] = 2 * np.arange(len(cut), dtype=np.int64)
        work = _to_children(engine, work, ranks, depth, left, classes)
        node_root = np.repeat(node_root[cut], 2)

    trees = {}
    for b, part in enumerate(big):
        top = MondrianCuts(1, 0, [], [], [], [], [], [])
        for roots_of, depth, lo, hi, hp, sizes, final in levels:
            mine = roots_of == b
            fin = np.flatnonzero(mine & final)
            top.tree_dim.append(depth.dim[mine])
            top.tree_cut.append(depth.cut[mine & ~final])
            top.lo.append(lo[fin])
            top.hi.append(hi[fin])
            top.hp.append(hp[fin])
            top.sizes.append(sizes[fin])
            top.cuts += int((mine & ~final).sum())
        while top.tree_dim and not len(top.tree_dim[-1]):  # depths after the part's last node
            for name in ("tree_dim", "tree_cut", "lo", "hi", "hp", "sizes"):
                getattr(top, name).pop()
        trees[part] = top
    frontier = {part: [unit_base + int(i) for i in np.flatnonzero(node_root == b)] for b, part in enumerate(big)}
    shipped = (work.filter(F.col(NODE_COLUMN).isNotNull())
               .withColumn(UNIT_COLUMN, F.col(NODE_COLUMN) + F.lit(unit_base))
               .select(*[f"`{c}`" for c in cells.columns], UNIT_COLUMN))
    # counts only: nothing of the parts' values
    log.info("Mondrian: %d part(s) over max_worker_cells=%d (the largest %d cells x %d columns): %d depth(s) "
             "cut on Spark, %d node(s) then cut on the executors", len(big), engine.max_worker_cells, largest,
             width, len(levels), len(node_root))
    boxes = [(lo[final], hi[final], hp[final]) for _, _, lo, hi, hp, _, final in levels]
    return TopCuts(trees, frontier, shipped, _class_labels(engine, work, layout, part_column, boxes))


def _node_figures(engine: SparkDriver, work: Any, dims: list[Any], ranks: list[str], n_nodes: int) -> pd.DataFrame:
    """Per node of the current depth (in node order): its rows, cells and, per QI, lowest,
    highest and highest present rank (``lo<j>``, ``hi<j>``, ``hp<j>``)."""
    from pyspark.sql import functions as F

    aggregates = [F.sum(COUNT_COLUMN).alias("rows"), F.count(F.lit(1)).alias("cells")]
    for j, (d, r) in enumerate(zip(dims, ranks, strict=True)):
        aggregates += [F.min(r).alias(f"lo{j}"), F.max(r).alias(f"hi{j}")]
        present = F.when(F.col(r) != F.lit(int(d.missing_rank)), F.col(r)).otherwise(F.lit(-1))
        aggregates.append((F.max(present) if d.missing_rank >= 0 else F.max(r)).alias(f"hp{j}"))
    figures = work.filter(F.col(NODE_COLUMN).isNotNull()).groupBy(NODE_COLUMN).agg(*aggregates)
    table = to_pandas(collect(figures, scratch=engine.scratch, max_cells=engine.max_driver_cells,
                              what="Mondrian's nodes cut on Spark"))
    table = table.sort_values(NODE_COLUMN, kind="stable").reset_index(drop=True)
    if len(table) != n_nodes or (table[NODE_COLUMN].to_numpy(np.int64) != np.arange(n_nodes)).any():
        raise RuntimeError(f"Mondrian on Spark: {len(table)} nodes counted, {n_nodes} expected")
    return table


class _Histograms:
    """Per QI, the nodes' histograms over its rank and the sensitive codes (rows summed), read
    from Spark for the nodes asked, each node once."""

    def __init__(self, engine: SparkDriver, work: Any, ranks: list[str], codes: list[str]):
        self.engine, self.work, self.ranks, self.codes = engine, work, ranks, codes
        self.read: dict[int, list[pd.DataFrame]] = {}
        self.nodes: dict[int, set[int]] = {}

    def of(self, j: int, segs: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], np.ndarray]:
        """The cells of nodes ``segs``' histograms over QI ``j``, node by node: each cell's node,
        rank, sensitive codes and rows."""
        from pyspark.sql import functions as F

        known = self.nodes.setdefault(j, set())
        wanted = [int(s) for s in segs if int(s) not in known]
        if wanted:
            hist = (self.work.filter(F.col(NODE_COLUMN).isin(wanted))
                    .groupBy(NODE_COLUMN, self.ranks[j], *self.codes).agg(F.sum(COUNT_COLUMN).alias(COUNT_COLUMN)))
            self.read.setdefault(j, []).append(to_pandas(collect(
                hist, scratch=self.engine.scratch, max_cells=self.engine.max_driver_cells,
                what=f"the histogram of Mondrian's nodes over quasi-identifier {j + 1}")))
            known.update(wanted)
        table = pd.concat(self.read[j], ignore_index=True)
        table = table[table[NODE_COLUMN].isin(segs)].sort_values(NODE_COLUMN, kind="stable")
        # writable copies: the cut reorders them in place
        return (table[NODE_COLUMN].to_numpy(np.int64, copy=True), table[self.ranks[j]].to_numpy(np.int64, copy=True),
                [table[c].to_numpy(np.int64, copy=True) for c in self.codes],
                table[COUNT_COLUMN].to_numpy(np.int64, copy=True))


def _to_children(engine: SparkDriver, work: Any, ranks: list[str], depth: Any, left: np.ndarray,
                 classes: np.ndarray) -> Any:
    """The cells moved to the next depth's nodes (the left child of a cut node takes the ranks up
    to its cut), those of a final node given its class (materialized)."""
    from pyspark.sql import functions as F

    n = len(classes)
    mapping = lookup_frame(engine.spark, {
        "__from": pa.array(np.arange(n), pa.int64()), "__dim": pa.array(depth.dim.astype(np.int64), pa.int64()),
        "__cut": pa.array(depth.cut, pa.int64()), "__left": pa.array(left, pa.int64()),
        "__class": pa.array(classes, pa.int64())}, {})
    moved = work.join(F.broadcast(mapping), F.col(NODE_COLUMN) == F.col("__from"), "left")
    rank = F.lit(None).cast("long")
    for j, r in enumerate(ranks):
        rank = F.when(F.col("__dim") == j, F.col(r)).otherwise(rank)
    child = F.when(F.col("__dim") >= 0, F.when(rank <= F.col("__cut"), F.col("__left"))
                   .otherwise(F.col("__left") + 1))
    top = F.coalesce(F.col(TOP_CLASS_COLUMN), F.when(F.col("__dim") < 0, F.col("__class")))
    moved = (moved.withColumn(NODE_COLUMN, child).withColumn(TOP_CLASS_COLUMN, top)
             .drop("__from", "__dim", "__cut", "__left", "__class"))
    return moved.localCheckpoint(eager=True)


def _class_labels(engine: SparkDriver, work: Any, layout: Any, part_column: str,
                  boxes: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> Any:
    """The distinct part and QI values (``__value<i>``) of the cells in the top depths' classes,
    with each class's labels from its box, or ``None`` when no class was made there."""
    from pyspark.sql import functions as F

    from ..anonymize.mondrian_cuts import MondrianCuts

    if not boxes or sum(len(b[0]) for b in boxes) == 0:
        return None
    made = MondrianCuts(0, 0, [], [], [b[0] for b in boxes], [b[1] for b in boxes], [b[2] for b in boxes], [])
    n = sum(len(b[0]) for b in boxes)
    labels = layout.labels(made, np.arange(n, dtype=np.int64))
    table = {"__class_id": pa.array(np.arange(n), pa.int64())}
    table.update({f"__label{i}": pa.array(labels[c].tolist(), pa.string()) for i, c in enumerate(layout.gen)})
    values = [f"__value{i}" for i in range(len(layout.gen))]
    done = (work.filter(F.col(TOP_CLASS_COLUMN).isNotNull()).select(part_column, *values, TOP_CLASS_COLUMN)
            .dropDuplicates([part_column, *values]))
    return (done.join(F.broadcast(lookup_frame(engine.spark, table, {})),
                      F.col(TOP_CLASS_COLUMN) == F.col("__class_id"), "inner")
            .drop(TOP_CLASS_COLUMN, "__class_id"))


__all__ = ["NODE_COLUMN", "UNIT_COLUMN", "TopCuts", "rank_columns", "top_cuts"]
