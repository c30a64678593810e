"""PRAM on Spark, drawing for each row the very number the pandas engine draws for it.

The pandas engine (:func:`~anon_dagster.anonymize.pram.apply_pram`) gives the table's i-th row
the i-th uniform of ``numpy.random.default_rng(seed)``: PCG64, one 64-bit output per draw, so the
i-th draw is the generator's output after ``i`` steps. The Spark engine computes the same:

1. the column's distinct values with their first position (one frequency table, on the driver):
   a value without a row in the matrix is refused as the pandas engine refuses it, and each
   label is published as the first value holding it, in table order (``apply_pram``'s rule);
2. each row's rank in table order (:func:`ranked`): the rows per bucket of positions counted
   (one aggregation, a row per bucket to the driver), each bucket's offset the running sum of the
   buckets before it, each row's rank within its bucket numbered by a window ordered by position
   (one shuffle by bucket: no global sort, no bucket larger than about a million rows on an even
   spread of positions);
3. each executor (:func:`pram_batches`) takes a batch's ranks in runs of consecutive ranks,
   advances a PCG64 seeded as the pandas engine's to each run's first rank (``advance``: a jump,
   logarithmic in its length) and draws the run at once; the new value is chosen by the same
   search over the same cumulative rows of the matrix.

So every row gets the pandas engine's value, and the record's ``rows_changed`` is the same count.
What PRAM changes is materialized once (``localCheckpoint``) before the anonymization reads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..anonymize.pram import cumulative_rows, parse_pram, published_values, redrawn, refuse_unknown
from ..errors import DataError
from .spark_frames import ROW_COLUMN

RANK_COLUMN = "__rank"
CHANGED_COLUMN = "__pram_changed"
BUCKET_COLUMN = "__bucket"
OFFSET_COLUMN = "__offset"
ROWS_PER_BUCKET = 1_000_000
MAX_BUCKETS = 100_000


@dataclass(frozen=True)
class PramDraw:
    """What the executors need to apply PRAM to a batch (no data of the table but its values'
    codes): ``keys`` the column's distinct values, ``key_codes`` each one's row of the matrix,
    ``outputs`` the published value of each row of the matrix, ``cumulative`` the matrix's
    cumulative rows as the pandas engine computes them, ``seed`` the generator's seed."""

    column: str
    keys: pa.Array
    key_codes: np.ndarray
    outputs: pa.Array
    cumulative: np.ndarray
    seed: int

    def codes(self, values: pa.Array) -> np.ndarray:
        """Each value's row of the matrix; -1 for a missing value (left as it is)."""
        found = pc.index_in(values, value_set=self.keys.cast(values.type))
        if pa.types.is_floating(values.type):  # a NaN is missing, as pandas reads it
            found = pc.if_else(pc.is_nan(values), pa.scalar(None, found.type), found)
        position = found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        return np.where(position >= 0, self.key_codes[np.maximum(position, 0)], -1)

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The batch with the column's values drawn anew and :data:`CHANGED_COLUMN`, ranks dropped."""
        index = batch.schema.get_field_index(self.column)
        values = batch.column(index)
        codes = self.codes(values)
        ranks = batch.column(batch.schema.get_field_index(RANK_COLUMN)).to_numpy(zero_copy_only=False)
        new = redrawn(codes, self.cumulative, draws_at(self.seed, ranks.astype(np.int64)))
        present = codes >= 0
        drawn = pc.take(self.outputs.cast(values.type), pa.array(np.maximum(new, 0)))
        out = pc.if_else(pa.array(present), drawn, values)
        names = [n for n in batch.schema.names if n != RANK_COLUMN]
        arrays = [out if n == self.column else batch.column(batch.schema.get_field_index(n)) for n in names]
        return pa.RecordBatch.from_arrays([*arrays, pa.array(new != codes)], names=[*names, CHANGED_COLUMN])


def draws_at(seed: int, ranks: np.ndarray) -> np.ndarray:
    """``numpy.random.default_rng(seed).random(n)[ranks]`` without drawing the ``n``: the
    generator jumped to the start of each run of consecutive ranks, the run drawn at once."""
    order = np.argsort(ranks, kind="stable")
    sorted_ranks = ranks[order]
    u = np.empty(len(ranks))
    if not len(ranks):
        return u
    starts = np.concatenate([[0], np.flatnonzero(np.diff(sorted_ranks) != 1) + 1])
    ends = np.concatenate([starts[1:], [len(ranks)]])
    seeded = np.random.PCG64(seed).state
    drawn = np.empty(len(ranks))
    for start, end in zip(starts, ends, strict=True):
        generator = np.random.PCG64()
        generator.state = seeded
        generator.advance(int(sorted_ranks[start]))
        drawn[start:end] = np.random.Generator(generator).random(end - start)
    u[order] = drawn
    return u


def pram_batches(draw: PramDraw):
    """The function ``mapInArrow`` runs: ``draw`` applied to each batch."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield draw.apply(batch)
    return run


def ranked(engine: Any, df: Any) -> Any:
    """``df`` with :data:`RANK_COLUMN`: each row's 0-based rank in table order (by position)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from .spark_frames import lookup_frame

    low, high, rows = df.agg(F.min(ROW_COLUMN), F.max(ROW_COLUMN), F.count(F.lit(1))).collect()[0]
    if not rows:
        return df.withColumn(RANK_COLUMN, F.lit(0).cast("long"))
    buckets = max(1, min(MAX_BUCKETS, rows // ROWS_PER_BUCKET))
    width = (int(high) - int(low)) // buckets + 1
    # integer division of longs: a row's bucket grows with its position, so buckets keep table order
    bucketed = df.withColumn(BUCKET_COLUMN, F.expr(f"({ROW_COLUMN} - {int(low)}) div {width}"))
    counted = sorted((int(r[0]), int(r[1])) for r in bucketed.groupBy(BUCKET_COLUMN).count().collect())
    offsets = np.concatenate([[0], np.cumsum([c for _, c in counted])[:-1]]).astype(np.int64)
    lookup = lookup_frame(engine.spark, {BUCKET_COLUMN: pa.array([b for b, _ in counted], pa.int64()),
                                         OFFSET_COLUMN: pa.array(offsets, pa.int64())}, {})
    within = F.row_number().over(Window.partitionBy(BUCKET_COLUMN).orderBy(ROW_COLUMN)) - 1
    return (bucketed.join(F.broadcast(lookup), on=BUCKET_COLUMN)
            .withColumn(RANK_COLUMN, (F.col(OFFSET_COLUMN) + within).cast("long"))
            .drop(BUCKET_COLUMN, OFFSET_COLUMN))


def apply_pram(engine: Any, spec: Any, df: Any) -> tuple[Any, dict[str, Any]]:
    """``df`` with ``anonymization.pram`` applied, materialized, and the record's ``pram`` entry
    (the pandas engine's: the matrix, ``rows_changed``, ``seed``)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from ..hierarchies import _as_label
    from .base import UnsupportedOnEngine
    from .spark_frames import FIRST_COLUMN
    from .spark_session import executor_errors

    an = spec.anonymization
    pram = parse_pram(an.pram, spec.label)
    if pram.column not in df.columns:
        raise DataError(f"{spec.label}: PRAM column {pram.column!r} is missing from the data")
    freq, schema = engine.frequencies(df, [pram.column], first_row=True,
                                      what=f"the distinct values of PRAM column {pram.column!r}")
    kind = schema.field(pram.column).type
    # the distinct values in table order, as the pandas engine meets them
    raw = [v for v in freq.sort_values(FIRST_COLUMN, kind="stable")[pram.column].tolist() if not pd.isna(v)]
    labels = [_as_label(v) for v in raw]
    refuse_unknown(pram, labels)
    index = {v: i for i, v in enumerate(pram.values)}
    try:
        outputs = pa.array(published_values(pram, raw, labels), type=kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        raise UnsupportedOnEngine(f"anonymization.pram of column {pram.column!r} ({kind}) with an output value "
                                  "the column never holds", hint="the value would change the column's type: "
                                  "store the column as text, or use --engine pandas") from None
    draw = PramDraw(pram.column, pa.array(raw, type=kind), np.array([index[v] for v in labels], dtype=np.int64),
                    outputs, cumulative_rows(pram), int(an.seed))
    positioned = ranked(engine, df)
    fields = [f for f in positioned.schema.fields if f.name != RANK_COLUMN]
    out = positioned.mapInArrow(pram_batches(draw), T.StructType([*fields, T.StructField(
        CHANGED_COLUMN, T.BooleanType(), False)]))
    out = executor_errors(lambda: out.localCheckpoint(eager=True))
    changed = out.agg(F.sum(F.col(CHANGED_COLUMN).cast("long"))).collect()[0][0] or 0
    return out.drop(CHANGED_COLUMN), {**pram.to_dict(), "rows_changed": int(changed), "seed": an.seed}


__all__ = ["CHANGED_COLUMN", "RANK_COLUMN", "PramDraw", "apply_pram", "draws_at", "pram_batches", "ranked"]
