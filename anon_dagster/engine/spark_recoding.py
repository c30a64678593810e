"""Global recoding on Spark: Spark aggregates the bottom frequency table, the project's lattice
search decides on the driver, Spark applies the node (broadcast label maps, the failing classes
removed by an anti-join)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import DataError
from .spark_frames import COUNT_COLUMN, arrow_values, lookup_frame, null_safe
from .spark_record import record_only, spark_record
from .spark_results import SparkAnonymized, SparkPseudonymized
from .spark_session import SparkDriver


def anonymize_global(engine: SparkDriver, spec: Any, pseudonymized: SparkPseudonymized,
                     progress: Any) -> SparkAnonymized:
    """Optimal global recoding on Spark (method ``global``, or ``none``): the lattice search on
    the driver over the bottom frequency table
    (:meth:`~anon_dagster.anonymize.lattice.Lattice.from_frequencies`), the chosen node applied by
    Spark (:func:`apply_node`)."""
    from ..anonymize.coding import code_qi
    from ..anonymize.criteria import Policy, sensitive_attributes
    from ..anonymize.global_method import check_solved
    from ..anonymize.lattice import Lattice

    t0 = time.perf_counter()
    df = pseudonymized.df
    an = spec.anonymization
    policy = Policy.from_spec(spec)
    gen, pks = list(spec.generalized_qis), list(spec.partition_keys)
    sens = list(policy.sensitive) if policy.needs_sensitive else []
    needed = gen + pks + sens
    absent = [c for c in needed if c not in df.columns]
    if absent:
        raise DataError(f"{spec.label}: column {absent[0]!r} is declared but missing from the data")
    by_query = [c for q in spec.utility_queries for c in q.group_by if c in df.columns]
    bottom_columns = list(dict.fromkeys(needed + by_query))
    freq, schema = engine.frequencies(df, bottom_columns, what="the bottom frequency table (the QIs at "
                                      "level 0, the partition keys and the sensitive attributes)")
    counts = freq[COUNT_COLUMN].to_numpy(np.int64) if len(freq) else np.zeros(0, dtype=np.int64)
    n = int(counts.sum())
    input_hash = engine.digest(df)
    if an.method == "none" or n == 0:
        return record_only(engine, spec, policy, df, freq, counts, input_hash, t0, an.method)
    if policy.k > n:
        raise DataError(f"{spec.label}: k={policy.k} is larger than the table ({n} rows): no class can reach it")
    coded = {c: code_qi(freq[c], spec.hierarchies[c]) for c in gen}
    qis = [coded[c] for c in gen] + [code_qi(freq[c], None) for c in pks]
    sens_coded = [a.code(freq[a.name]) for a in sensitive_attributes(spec, policy.sensitive)] if sens else []
    lattice = Lattice.from_frequencies(qis, counts, policy, sens_coded, an.utility,
                                       generalized=[True] * len(gen) + [False] * len(pks))
    search = lattice.search(frontier=an.frontier, progress=progress)
    check_solved(spec, policy, search)
    levels = dict(zip(gen, (int(v) for v in search.levels[: len(gen)]), strict=True))
    row_class, sizes, failing = lattice.failing_classes(search.levels)
    fail_rows = failing[row_class]
    published, categories = apply_node(engine, df, schema, coded, levels, pks, freq, row_class, failing)
    published = published.persist()  # read by the record, then by every check of the gate
    kept = sizes[~failing]
    record = spark_record(engine, spec, policy, freq, counts, fail_rows, kept, search.loss, input_hash, published,
                          t0, original=df, levels=levels, search=search.to_dict())
    return SparkAnonymized(published, record, int(counts[fail_rows].sum()), categories=categories)


def apply_node(engine: SparkDriver, df: Any, schema: pa.Schema, coded: dict[str, Any], levels: dict[str, int],
               pks: list[str], freq: pd.DataFrame, row_class: np.ndarray,
               failing: np.ndarray) -> tuple[Any, dict[str, list[object]]]:
    """The node applied on Spark: each column generalized above level 0 replaced by its label
    (a broadcast join with the column's label map), the failing classes removed (an anti-join
    with their keys)."""
    from pyspark.sql import functions as F

    spark_types = {f.name: f.dataType for f in df.schema.fields}
    out = df
    categories: dict[str, list[object]] = {}
    for c, level in levels.items():
        if level == 0:
            continue
        qi = coded[c]
        labels = qi.labels[level][qi.level_maps[level]]
        lookup = lookup_frame(engine.spark, {"__value": arrow_values(qi.uniques, schema.field(c).type),
                                             "__label": pa.array([str(v) for v in labels], type=pa.string())},
                              {"__value": spark_types[c]})
        out = (out.join(F.broadcast(lookup), on=null_safe(out, lookup, [(c, "__value")]), how="left")
               .withColumn(c, F.col("__label")).drop("__value", "__label"))
        categories[c] = [str(v) for v in qi.labels[level]]
    if failing.any():
        first = np.full(len(failing), -1, dtype=np.int64)
        first[row_class[::-1]] = np.arange(len(row_class) - 1, -1, -1)
        reps = first[np.flatnonzero(failing)]
        keys: dict[str, pa.Array] = {}
        casts: dict[str, Any] = {}
        pairs = []
        for i, c in enumerate([*levels, *pks]):
            name = f"__key{i}"
            level = levels.get(c, 0)
            if level > 0:
                qi = coded[c]
                codes0 = qi.codes[reps]
                keys[name] = pa.array([str(v) for v in qi.labels[level][qi.level_maps[level][codes0]]],
                                      type=pa.string())
            else:
                keys[name] = arrow_values(freq[c].to_numpy(dtype=object)[reps], schema.field(c).type)
                casts[name] = spark_types[c]
            pairs.append((c, name))
        failing_keys = lookup_frame(engine.spark, keys, casts)
        out = out.join(F.broadcast(failing_keys), on=null_safe(out, failing_keys, pairs), how="left_anti")
    return out, categories


__all__ = ["anonymize_global", "apply_node"]
