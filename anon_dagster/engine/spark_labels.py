"""A lattice node applied to rows on Spark: each generalized column's values replaced by their
labels at the node's level (a broadcast join with the column's label map), the failing classes
removed (an anti-join with their keys). Used by global recoding (:mod:`.spark_recoding`) and by
the nodes judged on Spark (:mod:`.spark_node_judging`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from .spark_frames import arrow_values, lookup_frame, null_safe
from .spark_session import SparkDriver


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


__all__ = ["apply_node"]
