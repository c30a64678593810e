"""A synthetic release (``anonymization.method: synthetic``) on Spark: synthesized and audited on
the driver with the pandas engine's code, the synthetic table handed back to Spark.

The synthesizer learns from the whole table and its audit compares every synthetic row with the
real ones (:mod:`anon_dagster.release.synthetic`): neither is an aggregation. So the Spark
engine brings the rows to the driver in source order (within ``max_driver_cells``, refused over
it in one line naming the size: :func:`~.spark_attacks.driver_rows`):

- :func:`synthesize`: the pseudonymized partition comes to the driver and the pandas pipeline's
  anonymize step runs on it (the control records withheld, the generator trained on the rest or
  a generator's table given by a Dagster asset checked, the record written); the synthetic table
  goes to Spark, each row's position its index in that table;
- :func:`synthetic_run`: the synthetic table and the pseudonymized partition come to the driver,
  and :func:`~anon_dagster.release.synthetic.synthetic_figures` re-derives the control records
  and runs the audit and its attacks.

As for the attacks (:mod:`.spark_attacks`), the record's ``output_hash`` on Spark is Spark's
digest of the table, and the audit is handed the record with the pandas hash of the rows it is
given: the same rows give the same synthetic table, audit and verdicts on both engines.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from .spark_attacks import driver_pair, driver_rows
from .spark_frames import ROW_COLUMN
from .spark_objects import as_spark, object_schema
from .spark_results import SparkAnonymized

SYNTHESIS_READS = "anonymization.method synthetic: the generator and its audit read every row on the driver"


def to_spark(engine: Any, table: pd.DataFrame, what: str) -> Any:
    """A pandas table as a Spark DataFrame, each row's position its index (:data:`ROW_COLUMN`),
    typed as Spark types the same table read from parquet."""
    from pyspark.sql.pandas.types import from_arrow_schema

    arrow = pa.Table.from_pandas(table, preserve_index=False)
    schema = object_schema(arrow.schema, what)
    arrays = [as_spark(arrow.column(f.name), f.type) for f in schema if f.name != ROW_COLUMN]
    arrays.append(pa.array(np.arange(len(table), dtype=np.int64)))
    typed = pa.Table.from_arrays(arrays, schema=schema)
    return engine.spark.createDataFrame(typed, schema=from_arrow_schema(typed.schema))


def synthesize(engine: Any, spec: Any, pseudonymized: Any, *, relax: bool = True,
               synthetic_table: pd.DataFrame | None = None) -> SparkAnonymized:
    """The synthetic release of ``pseudonymized`` (a :class:`~.spark_results.SparkPseudonymized`),
    made on the driver (module docstring)."""
    from ..release import gate
    from ..release.anonymize_step import anonymize

    table, _ = driver_rows(engine, pseudonymized.df, "the pseudonymized partition", SYNTHESIS_READS)
    done = anonymize(spec, table, relax=relax, synthetic_table=synthetic_table)
    df = to_spark(engine, gate.publishable_view(done.data).reset_index(drop=True), "the synthetic table")
    record = replace(done.record, output_hash=engine.digest(df))
    return SparkAnonymized(df, record, int(done.suppressed), done.unreachable)


def synthetic_run(engine: Any, spec: Any, anonymized: SparkAnonymized, original: Any) -> Any:
    """The audit of the synthetic table ``anonymized`` made from the pseudonymized partition
    ``original`` (a Spark DataFrame): a :class:`~anon_dagster.release.synthetic.SyntheticRun`, as on
    pandas. Raises DataError when they do not belong together, DriverLimit when either is over
    ``max_driver_cells``."""
    from ..release import gate
    from ..release.synthetic import synthetic_figures

    released, _, partition, _ = driver_pair(engine, anonymized, original, what="the synthetic table",
                                            needs="the synthetic audit needs", why=SYNTHESIS_READS)
    record = replace(anonymized.record, output_hash=gate.anonymization_hash(released))
    return synthetic_figures(spec, released, record, partition)


__all__ = ["synthesize", "synthetic_run", "to_spark"]
