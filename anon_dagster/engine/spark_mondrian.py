"""Mondrian on Spark: Spark aggregates, the project's Mondrian decides, Spark applies.

Mondrian cuts each partition-key part on its own, so the parts run apart give what one run over
the table gives, provided each is judged as in that run: with the *whole table's* layout of every
QI (its distinct values, their ranks and normalizing range, :func:`~anon_dagster.anonymize.mondrian.qi_dim`),
its sensitive values coded over the whole table, and the whole table's t-closeness reference and
parts set aside (:func:`~anon_dagster.anonymize.mondrian.part_evaluation`). The driver builds
those from frequency tables; then

- a cut depends on the rows only through their QI and sensitive values (rows equal in them fall
  on the same side), so every part is cut from its frequency cells over the QIs and sensitive
  attributes, each weighted by its rows (:func:`~anon_dagster.anonymize.mondrian_cuts.cut_parts`
  with ``weights``): the cuts of the rows, from as many cells as the part has distinct values;
- with partition keys, each part's cells are cut on an executor (``groupBy(part).applyInPandas``
  over the cells Spark counted), which sends back the part's distinct QI values with their labels
  and the part's cuts; the rows are labelled by a join on the part and the QI values;
- a part of more cells than ``max_worker_cells`` is first cut on Spark, depth by depth and with
  the same rule, until each of its nodes fits one executor (:mod:`.spark_mondrian_top`);
- without partition keys, the table is one part, cut on the driver from its frequency table when
  that fits the driver's budget (``max_driver_cells``), else on the executors as above; the
  driver's labels are applied with a broadcast join on the QI values (rows of equal QI values
  share a class).

The driver concatenates the parts' cuts depth by depth (:meth:`~anon_dagster.anonymize.mondrian_cuts.MondrianCuts.concat`)
and builds the labels, boxes, cut tree and figures with the pandas engine's code
(:func:`~anon_dagster.anonymize.mondrian_labels.finish`, :func:`~anon_dagster.anonymize.mondrian_method.mondrian_info`).
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import DataError
from .spark_frames import (
    COUNT_COLUMN,
    DriverLimit,
    arrow_values,
    lookup_frame,
    method_columns,
    null_safe,
)
from .spark_record import record_only, spark_record
from .spark_results import SparkAnonymized, SparkPseudonymized
from .spark_session import SparkDriver

PART_COLUMN = "__part"
CUTS_COLUMN = "__mondrian"


def domain_codes(domain: pd.Series, values: pd.Series) -> np.ndarray:
    """Each of ``values``' position in ``domain`` (a column's distinct values), coded as the
    project codes a column (:func:`~anon_dagster.anonymize.coding.factorize`: missing is a value)."""
    from ..anonymize.coding import factorize

    both = pd.concat([domain.reset_index(drop=True), values.reset_index(drop=True)], ignore_index=True)
    return factorize(both)[0][len(domain):]


@dataclass
class Layout:
    """What every part is judged with: the whole table's QI dimensions (with the distinct values
    they are built from), the sensitive attributes coded over the whole table (with their
    distinct values and each one's code), the policy and the t-closeness reference."""

    gen: list[str]
    domains: list[pd.Series]
    dims: list[Any]
    sens: list[str]
    sens_domains: list[pd.Series]
    sens_codes: list[np.ndarray]
    attributes: list[Any]
    policy: Any
    reference: list[np.ndarray]

    def cut(self, frame: pd.DataFrame, weights: np.ndarray | None = None) -> tuple[Any, np.ndarray]:
        """The cuts of ``frame`` as one part, and each row's class in them; with ``weights`` each
        row of ``frame`` is a frequency cell standing for that many rows."""
        from ..anonymize.mondrian_cuts import cut_parts

        m = len(frame)
        w_rank, w_sens = self.coded(frame)
        row_class = np.full(m, -1, dtype=np.int64)
        cuts = cut_parts(self.dims, self.policy, self.attributes, self.reference, np.arange(m, dtype=np.int64),
                         w_rank, w_sens, np.array([m], dtype=np.int64), row_class, weights=weights)
        return cuts, row_class

    def coded(self, frame: pd.DataFrame) -> tuple[np.ndarray, list[np.ndarray]]:
        """Each row's rank per QI (QIs × rows) and code per sensitive attribute, in the whole
        table's layout."""
        ranks = [d.rank[domain_codes(dom, frame[c])] for c, dom, d in zip(self.gen, self.domains, self.dims,
                                                                            strict=True)]
        w_rank = np.stack(ranks).astype(np.int64) if ranks else np.zeros((0, len(frame)), np.int64)
        w_sens = [codes[domain_codes(dom, frame[s])].astype(np.int64)
                  for s, dom, codes in zip(self.sens, self.sens_domains, self.sens_codes, strict=True)]
        return w_rank, w_sens

    def labels(self, cuts: Any, row_class: np.ndarray) -> dict[str, np.ndarray]:
        """Each row's published label per QI (:func:`~anon_dagster.anonymize.mondrian_labels.class_labels`)."""
        from ..anonymize.mondrian_labels import class_labels

        out = {}
        D = len(self.dims)
        lo, hi, hp = (np.concatenate(a) if a else np.zeros((0, D), np.int64) for a in (cuts.lo, cuts.hi, cuts.hp))
        for j, (c, d) in enumerate(zip(self.gen, self.dims, strict=True)):
            _, _, _, inv, labels = class_labels(d, lo[:, j], hi[:, j], hp[:, j])
            out[c] = np.asarray([str(v) for v in labels], dtype=object)[inv][row_class]
        return out


def part_function(layout: Layout, keys: list[str]) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """What each executor runs on one part's frequency cells (the QIs, the sensitive attributes
    and the rows of each): the part's distinct QI values with each one's label per QI (columns
    ``__label<i>``), and the part's cuts (pickled, on its first row)."""

    def run(frame: pd.DataFrame) -> pd.DataFrame:
        frame = frame.reset_index(drop=True)
        cuts, cell_class = layout.cut(frame, frame[COUNT_COLUMN].to_numpy(np.int64))
        labels = layout.labels(cuts, cell_class)
        out = frame[keys].copy()
        for i, c in enumerate(layout.gen):
            out[f"__label{i}"] = pd.Series(labels[c], dtype=object)
        out = out.drop_duplicates(subset=[k for k in keys if k != PART_COLUMN]).reset_index(drop=True)
        out[CUTS_COLUMN] = pd.Series([pickle.dumps(cuts, protocol=pickle.HIGHEST_PROTOCOL)]
                                     + [None] * (len(out) - 1), dtype=object)
        return out

    return run


def anonymize_mondrian(engine: SparkDriver, spec: Any, pseudonymized: SparkPseudonymized,
                       progress: Any) -> SparkAnonymized:
    """Mondrian on Spark (see the module docstring): the labels, record and suppression the
    pandas engine's :func:`~anon_dagster.anonymize.mondrian_method.run_mondrian` gives."""
    from ..anonymize.criteria import sensitive_attributes
    from ..anonymize.mondrian_method import check_coverage, mondrian_info, reach_prosecutor_avg
    from ..risk.frequencies import frequency_classes

    t0 = time.perf_counter()
    df = pseudonymized.df
    original = pseudonymized.original  # before PRAM: what the record compares with and hashes
    policy, gen, pks, sens, by_query = method_columns(spec, df)
    parts_columns = list(dict.fromkeys(pks + sens + by_query))
    freq, schema = engine.frequencies(df, parts_columns, first_row=False,
                                      what="the rows per partition key, sensitive value and query group")
    counts = freq[COUNT_COLUMN].to_numpy(np.int64) if len(freq) else np.zeros(0, dtype=np.int64)
    n = int(counts.sum())
    input_hash = engine.digest(original)
    if n == 0:
        return record_only(engine, spec, policy, df, freq, counts, input_hash, t0, "mondrian",
                           original=original)
    if policy.k > n:
        raise DataError(f"{spec.label}: k={policy.k} is larger than the table ({n} rows): no class can reach it")

    def distinct(c: str) -> pd.Series:
        # in the order the values first appear, as the pandas engine codes them
        values, _ = engine.frequencies(df, [c], what=f"the distinct values of column {c!r}")
        return values[c].rename(c).reset_index(drop=True)

    domains = [distinct(c) for c in gen]
    check_coverage(dict(zip(gen, domains, strict=True)), spec, gen)
    sens_domains = [distinct(s) for s in sens]
    coded = [a.code(dom) for a, dom in zip(sensitive_attributes(spec, sens), sens_domains, strict=True)]
    sens_codes = [np.asarray(a.codes, dtype=np.int64) for a in coded]
    freq_sens = [codes[domain_codes(dom, freq[s])] for s, dom, codes in zip(sens, sens_domains, sens_codes,
                                                                              strict=True)]
    part_of, n_parts = _parts(freq, pks, [distinct(c) for c in pks])
    part_sizes = np.bincount(part_of, weights=counts, minlength=n_parts).astype(np.int64)
    from ..anonymize.mondrian import qi_dim

    dims = [qi_dim(dom, spec.hierarchies[c]) for c, dom in zip(gen, domains, strict=True)]
    reps = _first_rows(part_of, n_parts)
    runs: dict[int, tuple[Any, Any]] = {}

    def run(pol: Any) -> Any:
        from ..anonymize.mondrian import MondrianNoSolution, check_parts_budget, part_evaluation
        from ..anonymize.mondrian_cuts import MondrianCuts
        from ..anonymize.mondrian_labels import finish
        from ..anonymize.outcome import NoSolution

        pairs = [_weighted_pairs(part_of, n_parts, c, a, counts) for c, a in zip(freq_sens, coded, strict=True)]
        failing, reference = part_evaluation(pol, part_sizes, pairs)
        too_small = [{"partition": _part_label(freq, pks, int(reps[p])), "rows": int(part_sizes[p])}
                     for p in np.flatnonzero(failing)]
        try:
            check_parts_budget(pol, n, too_small)
        except MondrianNoSolution as exc:
            raise NoSolution(f"{spec.label}: {exc}") from None
        layout = Layout(gen, domains, dims, sens, sens_domains, sens_codes, coded, pol, reference)
        done = None if pks else _on_driver(engine, df, gen, sens, layout)
        if done is None:
            done = _on_executors(engine, df, freq, schema, pks, reps, failing, part_sizes, layout)
        published, cuts = done
        m = finish(dims, MondrianCuts.concat([cuts[p] for p in sorted(cuts)], len(dims)), None,
                   np.zeros(0, dtype=bool), too_small)
        runs[pol.k] = (published, failing, cuts)
        return m

    min_part, m = reach_prosecutor_avg(spec, policy, run)
    published, failing, cuts = runs.pop(min_part)
    for other, *_ in runs.values():
        other.unpersist()
    # each class's part: classes are numbered depth by depth, the parts in order within a depth
    depth = max((len(c.sizes) for c in cuts.values()), default=0)
    class_part = np.concatenate([np.zeros(0, np.int64)] + [
        np.full(len(cuts[p].sizes[i]), p, dtype=np.int64)
        for i in range(depth) for p in sorted(cuts) if i < len(cuts[p].sizes)])
    info = mondrian_info(m, min_part, {c: freq[c].iloc[reps[class_part]].tolist() for c in pks})
    fail_rows = failing[part_of]
    qis = [c for c in spec.quasi_identifiers if c in published.columns]
    pub_freq, _ = engine.frequencies(published, qis, first_row=False, what="the published classes")
    sizes = (frequency_classes(pub_freq, qis, pub_freq[COUNT_COLUMN].to_numpy(np.float64)).sizes
             if len(pub_freq) and qis else np.zeros(0, dtype=np.int64))
    record = spark_record(engine, spec, policy, freq, counts, fail_rows, sizes, info["mondrian"]["ncp"],
                          input_hash, published, t0, original=original, method="mondrian", mondrian=info["mondrian"])
    categories = {c: [str(v) for v in m.columns[c].categories] for c in gen}
    return SparkAnonymized(published, record, int(counts[fail_rows].sum()), categories=categories)


def _parts(freq: pd.DataFrame, pks: list[str], domains: list[pd.Series]) -> tuple[np.ndarray, int]:
    """Each frequency-table row's partition-key part, the parts numbered as
    :func:`~anon_dagster.anonymize.mondrian.mondrian` numbers them (the keys' codes combined)."""
    from ..anonymize.coding import combine, group

    if not pks:
        return np.zeros(len(freq), dtype=np.int64), 1
    cols = [domain_codes(dom, freq[c]).astype(np.int64) for c, dom in zip(pks, domains, strict=True)]
    key, space = combine(cols, [max(len(dom), 1) for dom in domains])
    uniq, part, _ = group(key, space)
    return np.asarray(part, dtype=np.int64), len(uniq)


def _first_rows(part_of: np.ndarray, n_parts: int) -> np.ndarray:
    """A frequency-table row of each part (its first)."""
    first = np.full(n_parts, -1, dtype=np.int64)
    first[part_of[::-1]] = np.arange(len(part_of) - 1, -1, -1)
    return first


def _part_label(freq: pd.DataFrame, pks: list[str], row: int) -> str:
    """The part's name in an error and in the record (as the pandas engine names it)."""
    return ", ".join(f"{c}={freq[c].iloc[row]}" for c in pks) or "whole table"


def _weighted_pairs(part_of: np.ndarray, n_parts: int, codes: np.ndarray, attribute: Any,
                    counts: np.ndarray) -> Any:
    """Parts × sensitive-code row counts from a frequency table (what
    :func:`~anon_dagster.anonymize.criteria.pairs_from_rows` counts from rows)."""
    from ..anonymize.coding import group
    from ..anonymize.criteria import SensitivePairs

    nv = attribute.n_values
    uniq, _, summed = group(part_of * nv + codes, n_parts * nv, counts)
    total = np.bincount(codes, weights=counts, minlength=nv).astype(np.int64)
    return SensitivePairs(uniq // nv, uniq % nv, np.asarray(summed).astype(np.int64), nv, total, attribute)


def _on_executors(engine: SparkDriver, df: Any, freq: pd.DataFrame, schema: pa.Schema, pks: list[str],
                  reps: np.ndarray, failing: np.ndarray, part_sizes: np.ndarray,
                  layout: Layout) -> tuple[Any, dict[int, Any]]:
    """Each part kept cut on an executor from its frequency cells over the QIs and sensitive
    attributes (a part of any number of rows needs its distinct cells only), a part of more
    cells than ``max_worker_cells`` first cut on Spark until its nodes fit
    (:mod:`.spark_mondrian_top`): the rows labelled by a join on the part and the QI values
    (persisted), and the parts' cuts. Without partition keys the table is one part."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from ..anonymize.mondrian_cuts import MondrianCuts
    from .spark_mondrian_top import UNIT_COLUMN, top_cuts

    kept = np.flatnonzero(~failing)
    spark_types = {f.name: f.dataType for f in df.schema.fields}
    if pks:
        keys = {f"__pk{i}": arrow_values(freq[c].to_numpy(dtype=object)[reps[kept]], schema.field(c).type)
                for i, c in enumerate(pks)}
        keys[PART_COLUMN] = pa.array(kept, type=pa.int64())
        lookup = lookup_frame(engine.spark, keys, {f"__pk{i}": spark_types[c] for i, c in enumerate(pks)})
        pairs = [(c, f"__pk{i}") for i, c in enumerate(pks)]
        tagged = (df.join(F.broadcast(lookup), on=null_safe(df, lookup, pairs), how="inner")
                  .drop(*[f"__pk{i}" for i in range(len(pks))]))
    else:
        tagged = df.withColumn(PART_COLUMN, F.lit(0).cast(T.LongType()))
    columns = list(dict.fromkeys(layout.gen + layout.sens))
    cells = tagged.groupBy(PART_COLUMN, *[f"`{c}`" for c in columns]).agg(F.count(F.lit(1)).alias(COUNT_COLUMN))
    values = [f"__value{i}" for i in range(len(layout.gen))]
    cells = cells.select(F.col(PART_COLUMN), *[F.col(f"`{c}`") for c in columns], F.col(COUNT_COLUMN),
                         *[F.col(f"`{c}`").alias(v) for c, v in zip(layout.gen, values, strict=True)])
    width = len(columns) + 1  # what a worker holds of each cell: its values and rows
    # a part's cells are at most its rows: only parts of more rows than a worker's cells are counted
    maybe = [int(p) for p in kept if int(part_sizes[p]) * width > engine.max_worker_cells]
    big: list[int] = []
    if maybe:
        cells = cells.persist()
        counted = cells.filter(F.col(PART_COLUMN).isin(maybe)).groupBy(PART_COLUMN).count().collect()
        big = sorted(int(r[PART_COLUMN]) for r in counted if int(r["count"]) * width > engine.max_worker_cells)
    shipped = cells.withColumn(UNIT_COLUMN, F.col(PART_COLUMN))
    top = None
    if big:
        top = top_cuts(engine, cells, layout, PART_COLUMN, big, width, unit_base=int(part_sizes.size))
        shipped = shipped.filter(~F.col(PART_COLUMN).isin(big)).unionByName(top.shipped)
    out_schema = T.StructType([T.StructField(UNIT_COLUMN, T.LongType(), False),
                               T.StructField(PART_COLUMN, T.LongType(), False),
                               *[T.StructField(v, spark_types[c], True) for c, v in zip(layout.gen, values,
                                                                                        strict=True)],
                               *[T.StructField(f"__label{i}", T.StringType(), True) for i in range(len(layout.gen))],
                               T.StructField(CUTS_COLUMN, T.BinaryType(), True)])
    labelled = shipped.groupBy(UNIT_COLUMN).applyInPandas(
        part_function(layout, [UNIT_COLUMN, PART_COLUMN, *values]), out_schema).persist()
    unit_cuts = {int(r[UNIT_COLUMN]): pickle.loads(r[CUTS_COLUMN])
                 for r in labelled.filter(F.col(CUTS_COLUMN).isNotNull()).select(UNIT_COLUMN, CUTS_COLUMN).collect()}
    cuts = {p: c for p, c in unit_cuts.items() if p < part_sizes.size}  # the frontier's units come after
    for p in big:
        below = MondrianCuts.concat([unit_cuts[u] for u in top.frontier[p]], len(layout.dims))
        cuts[p] = MondrianCuts.stacked(top.trees[p], below)
    labels = labelled.drop(CUTS_COLUMN, UNIT_COLUMN)
    if top is not None and top.labels is not None:
        labels = labels.unionByName(top.labels)
    labels = labels.withColumnRenamed(PART_COLUMN, "__label_part")
    on = null_safe(tagged, labels, [(PART_COLUMN, "__label_part"),
                                    *[(c, v) for c, v in zip(layout.gen, values, strict=True)]])
    out = tagged.join(labels, on=on, how="inner")
    for i, c in enumerate(layout.gen):
        out = out.withColumn(c, F.col(f"__label{i}"))
    out = out.drop("__label_part", PART_COLUMN, *values, *[f"__label{i}" for i in range(len(layout.gen))])
    out = out.persist()
    out.count()  # materialized while the labels are held, then they are let go
    labelled.unpersist()
    if maybe:
        cells.unpersist()
    return out, cuts


def _on_driver(engine: SparkDriver, df: Any, gen: list[str], sens: list[str],
               layout: Layout) -> tuple[Any, dict[int, Any]] | None:
    """The whole table as one part on the driver, cut from its frequency table over the QIs and
    sensitive attributes (each cell weighted by its rows: the cuts of the rows, whatever their
    number), the labels applied by a broadcast join on the QI values; ``None`` when that table
    is over ``max_driver_cells`` (the table is then cut as one part on the executors)."""
    from pyspark.sql import functions as F

    columns = list(dict.fromkeys(gen + sens))
    try:
        freq, schema = engine.frequencies(df, columns, first_row=False,
                                          what="the frequency table of the QIs and sensitive attributes")
    except DriverLimit:
        return None
    counts = freq[COUNT_COLUMN].to_numpy(np.int64)
    cuts, cell_class = layout.cut(freq[columns].reset_index(drop=True), counts)
    labels = layout.labels(cuts, cell_class)
    values = freq[gen].drop_duplicates()
    at = values.index.to_numpy()
    spark_types = {f.name: f.dataType for f in df.schema.fields}
    keys = {f"__value{i}": arrow_values(values[c].to_numpy(dtype=object), schema.field(c).type)
            for i, c in enumerate(gen)}
    keys.update({f"__label{i}": pa.array(labels[c][at].tolist(), type=pa.string()) for i, c in enumerate(gen)})
    lookup = lookup_frame(engine.spark, keys, {f"__value{i}": spark_types[c] for i, c in enumerate(gen)})
    out = df.join(F.broadcast(lookup), on=null_safe(df, lookup, [(c, f"__value{i}") for i, c in enumerate(gen)]),
                  how="left")
    for i, c in enumerate(gen):
        out = out.withColumn(c, F.col(f"__label{i}"))
    out = out.drop(*[f"__value{i}" for i in range(len(gen))], *[f"__label{i}" for i in range(len(gen))])
    return out.persist(), {0: cuts}


__all__ = ["Layout", "anonymize_mondrian", "domain_codes"]
