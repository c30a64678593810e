"""MDAV microaggregation on Spark: each block runs the project's MDAV, the driver judges the table.

The pandas engine (:func:`~anon_dagster.anonymize.microaggregation_method.run_microaggregation`)
runs MDAV within each block of equal partition keys and categorical QIs (the QIs that are not
numeric without missing values), each block's rows in table order, then judges l and t over the
whole table. A block's groups and means depend only on its own rows in that order, so on Spark:

- the driver finds the blocks and their sizes from the frequency table over the block columns;
  the blocks below k are suppressed (refused, as in the pandas engine, over the budget);
- with block columns, each block kept runs on an executor (``groupBy(block).applyInPandas``):
  its rows sorted by their position in the source, :func:`~anon_dagster.anonymize.microaggregation.mdav`
  and :func:`~anon_dagster.anonymize.microaggregation.aggregate` as the pandas engine calls them;
- without, the table is one block and runs on the driver: its numeric QIs and each row's position,
  when those cells fit ``max_driver_cells`` (else refused naming the size), the means joined back
  by position;
- l and t are judged on the driver from the frequency table of the published classes and their
  sensitive values (:func:`~anon_dagster.anonymize.criteria.published_evaluation`), the failing
  classes removed by an anti-join; the average prosecutor risk and the budget refused as the
  pandas engine refuses them.

The SSE share is the pandas figure's sum split by block: per block on the executors against the
whole table's mean and standard deviation, summed on the driver (equal to the pandas figure up to
the order of floating-point additions; on one block, computed as the pandas engine computes it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import DataError, UserError
from .spark_frames import (
    COUNT_COLUMN,
    ROW_COLUMN,
    DriverLimit,
    arrow_values,
    lookup_frame,
    method_columns,
    null_safe,
)
from .spark_record import record_only, spark_record
from .spark_results import SparkAnonymized, SparkPseudonymized
from .spark_session import SparkDriver

BLOCK_COLUMN = "__block"
STATS = ("__mdav_groups", "__mdav_sst", "__mdav_sse")
KEPT_COLUMN = "__kept"
_NUMERIC = ("ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType")


def numeric_columns(df: Any, gen: list[str]) -> list[str]:
    """The QIs MDAV aggregates, as the pandas engine picks them: a numeric column (not boolean,
    not decimal: pandas holds those as objects) without a missing value (null or NaN)."""
    from pyspark.sql import functions as F

    typed = [f.name for f in df.schema.fields if f.name in gen and type(f.dataType).__name__ in _NUMERIC]
    if not typed:
        return []
    kinds = {f.name: type(f.dataType).__name__ for f in df.schema.fields}
    aggs = [F.sum((F.col(f"`{c}`").isNull() | (F.isnan(F.col(f"`{c}`")) if kinds[c] in ("FloatType", "DoubleType")
                                              else F.lit(False))).cast("long")).alias(f"m{i}")
            for i, c in enumerate(typed)]
    got = df.agg(*aggs).collect()[0]
    return [c for c in gen if c in typed and not int(got[f"m{typed.index(c)}"] or 0)]


def block_function(numeric: list[str], k: int, mean: np.ndarray, scale: np.ndarray,
                   columns: list[str]) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """What runs on one block's rows: sorted by position, MDAV and the group means as the pandas
    engine computes them; the block's groups and its SST and SSE (standardized by the whole
    table's ``mean`` and ``scale``) on its first row."""

    def run(frame: pd.DataFrame) -> pd.DataFrame:
        from ..anonymize.microaggregation import aggregate, mdav

        frame = frame.sort_values(ROW_COLUMN, kind="stable").reset_index(drop=True)
        x = frame[numeric].to_numpy(dtype=float)
        groups = mdav(x, k)
        agg = aggregate(frame[numeric], numeric, groups)
        out = frame[columns].copy()
        for c in numeric:
            out[c] = agg[c].to_numpy()
        xs = (x - mean) / scale
        xa = (out[numeric].to_numpy(dtype=float) - mean) / scale
        stats = [int(groups.max()) + 1 if len(groups) else 0, float((xs ** 2).sum()), float(((xs - xa) ** 2).sum())]
        for name, value in zip(STATS, stats, strict=True):
            out[name] = pd.Series([value] + [None] * (len(out) - 1), dtype=object)
        return out

    return run


def anonymize_microaggregation(engine: SparkDriver, spec: Any, pseudonymized: SparkPseudonymized,
                               progress: Any) -> SparkAnonymized:
    """MDAV on Spark (module docstring): the rows, record and refusals the pandas engine's
    :func:`~anon_dagster.anonymize.microaggregation_method.run_microaggregation` gives."""
    from ..anonymize.criteria import avg_risk_ok, suppression_budget
    from ..anonymize.mondrian_method import check_coverage
    from ..anonymize.outcome import NoSolution

    t0 = time.perf_counter()
    df = pseudonymized.df
    original = pseudonymized.original  # before PRAM: what the record compares with and hashes
    policy, gen, pks, sens, by_query = method_columns(spec, df)
    parts_columns = list(dict.fromkeys(pks + by_query))
    freq, _ = engine.frequencies(df, parts_columns, first_row=False, what="the rows per partition key and query group")
    counts = freq[COUNT_COLUMN].to_numpy(np.int64) if len(freq) else np.zeros(0, dtype=np.int64)
    n = int(counts.sum())
    input_hash = engine.digest(original)
    if n == 0:
        return record_only(engine, spec, policy, df, freq, counts, input_hash, t0, "microaggregation",
                           original=original)
    if policy.k > n:
        raise DataError(f"{spec.label}: k={policy.k} is larger than the table ({n} rows): no class can reach it")
    domains = {}
    for c in gen:
        values, _ = engine.frequencies(df, [c], first_row=False, what=f"the distinct values of column {c!r}")
        domains[c] = values[c]
    check_coverage(domains, spec, gen)
    numeric = numeric_columns(df, gen)
    if not numeric:
        raise UserError(f"{spec.label}: microaggregation needs at least one numeric quasi-identifier without missing values")
    k = policy.k
    block_cols = pks + [c for c in gen if c not in numeric]
    budget = suppression_budget(policy, n)
    blocks, block_schema = engine.frequencies(df, block_cols, first_row=False, what="the rows per block")
    bsizes = blocks[COUNT_COLUMN].to_numpy(np.int64)
    small = bsizes < k
    if int(bsizes[small].sum()) > budget:
        raise NoSolution(
            f"{spec.label}: {int(small.sum())} group(s) of equal {', '.join(block_cols)} have fewer "
            f"than k={k} rows ({int(bsizes[small].sum())} rows, over the suppression budget of {budget})")
    if block_cols:
        aggregated, groups, sst, sse = _on_executors(engine, df, numeric, k, blocks, block_schema, block_cols, small)
    else:
        aggregated, groups, sst, sse = _on_driver(engine, df, numeric, k, n)
    published, kept_classes, failing_rows = _judge(engine, spec, policy, df, aggregated, sens)
    n_sup = int(bsizes[small].sum()) + failing_rows
    if n_sup > budget:
        raise NoSolution(f"{spec.label}: after microaggregation {n_sup} rows miss "
                         f"{', '.join(policy.names())}, over the suppression budget of {budget}")
    if not avg_risk_ok(policy, kept_classes, n - n_sup):
        raise NoSolution(f"{spec.label}: after microaggregation prosecutor_avg is "
                         f"{kept_classes / max(n - n_sup, 1):.4g} > {policy.prosecutor_avg:g} "
                         f"(groups of k={k} to {2 * k - 1} rows)")
    info = {"algorithm": "MDAV", "columns": numeric, "blocks_by": block_cols, "groups": groups,
            "sse_share": round(sse / sst, 6) if sst else 0.0}
    return _finish(engine, spec, policy, original, published, parts_columns, input_hash, info, t0)


def _on_executors(engine: SparkDriver, df: Any, numeric: list[str], k: int, blocks: pd.DataFrame,
                  schema: pa.Schema, block_cols: list[str], small: np.ndarray) -> tuple[Any, int, float, float]:
    """Each block of at least k rows aggregated on an executor: the rows (persisted), the groups
    formed, and the table's SST and SSE summed over the blocks."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    stats = df.agg(*[F.avg(F.col(f"`{c}`")).alias(f"a{i}") for i, c in enumerate(numeric)],
                   *[F.stddev_pop(F.col(f"`{c}`")).alias(f"s{i}") for i, c in enumerate(numeric)]).collect()[0]
    mean = np.array([float(stats[f"a{i}"]) for i in range(len(numeric))])
    std = np.array([float(stats[f"s{i}"] or 0.0) for i in range(len(numeric))])
    kept = np.flatnonzero(~small)
    spark_types = {f.name: f.dataType for f in df.schema.fields}
    keys = {f"__bk{i}": arrow_values(blocks[c].to_numpy(dtype=object)[kept], schema.field(c).type)
            for i, c in enumerate(block_cols)}
    keys[BLOCK_COLUMN] = pa.array(kept, type=pa.int64())
    lookup = lookup_frame(engine.spark, keys, {f"__bk{i}": spark_types[c] for i, c in enumerate(block_cols)})
    tagged = (df.join(F.broadcast(lookup), on=null_safe(df, lookup, [(c, f"__bk{i}") for i, c in
                                                                      enumerate(block_cols)]), how="inner")
              .drop(*[f"__bk{i}" for i in range(len(block_cols))]))
    columns = [*df.columns, BLOCK_COLUMN]
    out_schema = T.StructType([*df.schema.fields, T.StructField(BLOCK_COLUMN, T.LongType(), False),
                               T.StructField(STATS[0], T.LongType(), True),
                               *[T.StructField(s, T.DoubleType(), True) for s in STATS[1:]]])
    out = tagged.groupBy(BLOCK_COLUMN).applyInPandas(
        block_function(numeric, k, mean, np.where(std > 0, std, 1.0), columns), out_schema).persist()
    got = sorted((int(r[BLOCK_COLUMN]), int(r[STATS[0]]), float(r[STATS[1]]), float(r[STATS[2]]))
                 for r in out.filter(F.col(STATS[0]).isNotNull()).select(BLOCK_COLUMN, *STATS).collect())
    return (out.drop(BLOCK_COLUMN, *STATS), sum(g[1] for g in got), float(sum(g[2] for g in got)),
            float(sum(g[3] for g in got)))


def _on_driver(engine: SparkDriver, df: Any, numeric: list[str], k: int, n: int) -> tuple[Any, int, float, float]:
    """The table as one block on the driver: its numeric QIs and positions, within
    ``max_driver_cells``; the means joined back by position."""
    cells = n * (len(numeric) + 1)
    if cells > engine.max_driver_cells:
        raise DriverLimit(
            f"microaggregation without partition keys or categorical quasi-identifiers runs MDAV on the driver: "
            f"the table has {n} rows x {len(numeric) + 1} columns = {cells} cells, over the driver's budget of "
            f"{engine.max_driver_cells} (max_driver_cells): declare partition keys or a categorical "
            "quasi-identifier (each block then runs on an executor) or raise the budget")
    rows, schema = engine.frequencies(df, [ROW_COLUMN, *numeric], first_row=False,
                                      what="the numeric quasi-identifiers and each row's position")
    x = rows.sort_values(ROW_COLUMN, kind="stable").reset_index(drop=True)[numeric].to_numpy(dtype=float)
    std = x.std(axis=0)
    out = block_function(numeric, k, x.mean(axis=0), np.where(std > 0, std, 1.0), [ROW_COLUMN, *numeric])(
        rows[[ROW_COLUMN, *numeric]])
    spark_types = {f.name: f.dataType for f in df.schema.fields}
    keys = {ROW_COLUMN: pa.array(out[ROW_COLUMN].to_numpy(np.int64), type=pa.int64())}
    keys.update({f"__mean{i}": pa.array(out[c].to_numpy(), type=schema.field(c).type) for i, c in enumerate(numeric)})
    lookup = lookup_frame(engine.spark, keys, {f"__mean{i}": spark_types[c] for i, c in enumerate(numeric)})
    joined = df.join(lookup, on=ROW_COLUMN, how="inner")
    joined = joined.select(*[(f"__mean{numeric.index(c)}" if c in numeric else f"`{c}`") for c in df.columns])
    aggregated = joined.toDF(*df.columns).persist()
    first = out.iloc[0]
    return aggregated, int(first[STATS[0]]), float(first[STATS[1]]), float(first[STATS[2]])


def _judge(engine: SparkDriver, spec: Any, policy: Any, df: Any, aggregated: Any,
           sens: list[str]) -> tuple[Any, int, int]:
    """l and t over the aggregated rows (:func:`~anon_dagster.anonymize.criteria.published_evaluation`,
    the classes numbered as the pandas engine numbers them): the rows published, the classes kept
    and the rows of the failing classes."""
    from pyspark.sql import functions as F

    from ..anonymize.coding import combine, factorize, group
    from ..anonymize.criteria import published_evaluation, sensitive_attributes
    from .spark_mondrian import _weighted_pairs, domain_codes

    keys = list(dict.fromkeys([*spec.generalized_qis, *spec.partition_keys]))
    freq, schema = engine.frequencies(aggregated, list(dict.fromkeys(keys + sens)),
                                      what="the aggregated classes and their sensitive values")
    counts = freq[COUNT_COLUMN].to_numpy(np.int64)
    codes = [factorize(freq[c])[0] for c in keys]
    key, space = combine(codes, [int(c.max()) + 1 for c in codes])
    _, row_class, sizes = group(key, space, counts)
    row_class, sizes = np.asarray(row_class, np.int64), np.asarray(sizes).astype(np.int64)
    pairs = []
    for attribute in (sensitive_attributes(spec, sens) if sens else []):
        domain, _ = engine.frequencies(df, [attribute.name], what=f"the distinct values of column {attribute.name!r}")
        coded = attribute.code(domain[attribute.name].reset_index(drop=True))
        value = np.asarray(coded.codes, np.int64)[domain_codes(domain[attribute.name], freq[attribute.name])]
        pairs.append(_weighted_pairs(row_class, len(sizes), value, coded, counts))
    ev = published_evaluation(policy, sizes, pairs)
    failing = np.asarray(ev.failing, dtype=bool)
    kept_classes = len(sizes) - int(failing.sum())
    fail_rows = failing[row_class]
    if not fail_rows.any():
        return aggregated, kept_classes, 0
    bad = freq.loc[fail_rows, keys].drop_duplicates()
    spark_types = {f.name: f.dataType for f in aggregated.schema.fields}
    lookup = lookup_frame(engine.spark, {f"__fk{i}": arrow_values(bad[c].to_numpy(dtype=object), schema.field(c).type)
                                         for i, c in enumerate(keys)},
                          {f"__fk{i}": spark_types[c] for i, c in enumerate(keys)})
    published = aggregated.join(F.broadcast(lookup), on=null_safe(aggregated, lookup, [
        (c, f"__fk{i}") for i, c in enumerate(keys)]), how="left_anti")
    return published, kept_classes, int(counts[fail_rows].sum())


def _finish(engine: SparkDriver, spec: Any, policy: Any, df: Any, published: Any, parts_columns: list[str],
            input_hash: str, info: dict[str, Any], t0: float) -> SparkAnonymized:
    """The record: the rows suppressed per partition key and query group counted on the original
    rows (a row is suppressed when its position is not published), the published classes."""
    from pyspark.sql import functions as F

    from ..anonymize.record import MicroaggregationInfo
    from ..risk.frequencies import frequency_classes

    published = published.persist()
    kept = published.select(ROW_COLUMN).withColumn(KEPT_COLUMN, F.lit(True))
    flagged = df.join(kept, on=ROW_COLUMN, how="left")
    freq, _ = engine.frequencies(flagged, [*parts_columns, KEPT_COLUMN], first_row=False,
                                 what="the rows suppressed per partition key and query group")
    counts = freq[COUNT_COLUMN].to_numpy(np.int64)
    fail_rows = freq[KEPT_COLUMN].isna().to_numpy()
    qis = [c for c in spec.quasi_identifiers if c in published.columns]
    pub_freq, _ = engine.frequencies(published, qis, first_row=False, what="the published classes")
    sizes = (frequency_classes(pub_freq, qis, pub_freq[COUNT_COLUMN].to_numpy(np.float64)).sizes
             if len(pub_freq) and qis else np.zeros(0, dtype=np.int64))
    record = spark_record(engine, spec, policy, freq, counts, fail_rows, sizes, info["sse_share"], input_hash,
                          published, t0, original=df, method="microaggregation")
    record = replace(record, microaggregation=MicroaggregationInfo.from_json(info, prefix="microaggregation."))
    return SparkAnonymized(published, record, int(counts[fail_rows].sum()))


__all__ = ["anonymize_microaggregation", "block_function", "numeric_columns"]
