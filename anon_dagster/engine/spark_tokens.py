"""Tokens on Spark: the vault on the driver, each row's token found by a keyed digest.

A token is random (:mod:`anon_dagster.pseudonymize.tokens`): the vault, a file of the key store
on the driver, is the only place it comes from. So

1. the executors normalize the column as declared (the pandas engine's function) and Spark
   counts its distinct identifiers, which come to the driver in memory, at most
   ``max_driver_cells`` of them (over it, refused naming the count; nothing is minted);
2. the driver's vault gives each its token, minting and saving the new ones under the vault's
   lock, exactly as the pandas engine's step does (:func:`~anon_dagster.pseudonymize.tokens.token_pseudonyms`);
3. the executors replace each identifier by ``HMAC(k, identifier)`` under the internal subkey
   :data:`TOKEN_LOOKUP_PURPOSE` (derived on each executor from its own key store, as every
   pseudonym key is: :class:`~.spark_pseudonyms.KeyRequest`), and a join with the driver's table
   of (digest, token) pairs puts the token in its place.

What Spark holds and may write to its disks or its event log (the pairs' table, under the
engine's scratch folder while the step runs, the join's plan and shuffle) is keyed digests
beside tokens, never an identifier beside its token: the mapping stays in the vault.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .spark_frames import DriverLimit
from .spark_pseudonyms import ColumnStep, normalized

TOKEN_LOOKUP_PURPOSE = "token-lookup"
DIGEST_COLUMN, TOKEN_COLUMN, VALUE_COLUMN = "__token_digest", "__token", "__value"


def normalized_batches(step: ColumnStep):
    """The function ``mapInArrow`` runs: each batch's identifiers normalized as ``step`` declares
    (one column, :data:`VALUE_COLUMN`; missing and empty values as nulls)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            values = normalized(batch.column(0), step.column, step.normalize)
            yield pa.RecordBatch.from_arrays([values.cast(pa.string())], names=[VALUE_COLUMN])
    return run


def distinct_identifiers(engine: Any, df: Any, step: ColumnStep) -> pa.Array:
    """The column's distinct normalized identifiers on the driver (no null), at most
    ``engine.max_driver_cells`` of them; DriverLimit over it."""
    from pyspark.sql import functions as F

    values = (df.select(f"`{step.column}`").mapInArrow(normalized_batches(step), f"{VALUE_COLUMN} string")
              .where(F.col(VALUE_COLUMN).isNotNull()).distinct())
    limit = engine.max_driver_cells
    table = values.limit(limit + 1).toArrow()  # in memory, never a file: these are identifiers
    if table.num_rows > limit:
        raise DriverLimit(
            f"tokens of column {step.column!r}: more than {limit:,} distinct identifiers, more than the Spark "
            f"engine holds on the driver (max_driver_cells={limit:,}), where the token vault is: use hmac "
            "or aes_siv for this column, split the release into partitions, or raise max_driver_cells "
            "(SparkEngine(max_driver_cells=...)) on a driver with the memory for it")
    return table.column(0).combine_chunks().cast(pa.string())


def attach_tokens(engine: Any, source: Any, planned: Any, step: ColumnStep, keystore: Any,
                  publication: str | None) -> tuple[Any, str]:
    """``planned`` (whose ``step.column`` holds each row's lookup digest) with the tokens in its
    place; and the scratch folder holding the pairs' table, to remove once ``planned`` is
    materialized. ``source`` is the table before pseudonymization (its identifiers)."""
    from pyspark.sql import functions as F

    from ..pseudonymize.keyed_hash import hmac_column
    from ..pseudonymize.tokens import token_pseudonyms

    values = distinct_identifiers(engine, source, step)
    tokens = token_pseudonyms(keystore, step.purpose, values.cast(pa.large_binary()).to_pylist(), publication)
    digests, _ = hmac_column(step.key.derive(keystore), values, count=False)
    folder = engine.scratch / f"tokens-{uuid.uuid4().hex}"
    folder.mkdir(mode=0o700)
    pq.write_table(pa.table({DIGEST_COLUMN: digests.cast(pa.string()), TOKEN_COLUMN: tokens.cast(pa.string())}),
                   folder / "pairs.parquet")
    pairs = engine.spark.read.parquet(str(folder))
    joined = planned.join(pairs, on=planned[f"`{step.column}`"] == pairs[DIGEST_COLUMN], how="left")
    return joined.withColumn(step.column, F.col(TOKEN_COLUMN)).drop(DIGEST_COLUMN, TOKEN_COLUMN), str(folder)


__all__ = ["DIGEST_COLUMN", "TOKEN_COLUMN", "TOKEN_LOOKUP_PURPOSE", "attach_tokens", "distinct_identifiers",
           "normalized_batches"]
