"""Differentially private aggregates on Spark: Spark bounds and counts, the driver adds the noise.

The pandas engine's aggregates (:func:`~anon_dagster.release.dp.dp_aggregates`) are computed
from a *groups table* (:func:`~anon_dagster.release.dp.bounded_groups`): one row per combination
of the ``group_by`` values, with its rows, each sum's clamped total and its unsummable values.
Here Spark builds that table where the rows are:

- **contribution bounding**: each person's rows numbered by ``row_number()`` over a window
  partitioned by the person column and ordered by the row's position in the source
  (:data:`~.spark_frames.ROW_COLUMN`), the rows numbered above ``max_contributions`` dropped: the
  person's first rows in table order, the rows the pandas engine keeps;
- **clamping**: each summed value clamped to ``[lower, upper]`` (integer columns as integers,
  the others as doubles rounded half to even, as ``numpy.rint``), a missing or NaN value counted
  as unsummable;
- **the groups**: ``groupBy(group_by)`` with the rows, the clamped sums and the unsummable
  counts, read by the driver within ``max_driver_cells``.

The driver then runs the pandas engine's own code on that table
(:func:`~anon_dagster.release.dp.aggregates_from_groups`): the cells, the exact values and the
exact discrete Laplace noise, drawn in the same order. With the same random source (a seeded
``random.Random``) both engines publish the same table; the driver holds the groups table and the
cells, never the rows. A sum over a text or boolean column (which pandas converts with
``pandas.to_numeric``) is refused on Spark in one line.

The Dagster release's publication step on the Spark engine
(:func:`anon_dagster.release.engine_steps.published_step`) publishes with :func:`dp_release`
over the stored pseudonymized rows, through the pandas engine's publication protocol.
"""

from __future__ import annotations

from typing import Any

from ..errors import DataError
from ..release.dp import (
    ROWS,
    AggregatesConfig,
    DPAggregates,
    IntegerSource,
    aggregates_config,
    aggregates_from_groups,
    bad_column,
    budget_population,
    check_columns,
    epsilon_spend,
    person_missing,
    sum_column,
)
from .base import UnsupportedOnEngine
from .spark_frames import ROW_COLUMN, collect, published_columns, to_pandas
from .spark_session import SparkDriver

BOUND_RANK = "__contribution"


def bounded(df: Any, config: AggregatesConfig) -> tuple[Any, int]:
    """``df`` with each person's first ``max_contributions`` rows in table order (all rows
    without a person column), and the number of rows dropped."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if not config.person:
        return df, 0
    person = F.col(f"`{config.person}`")
    missing = person.isNull()
    if isinstance(df.schema[config.person].dataType, T.FloatType | T.DoubleType):
        missing = missing | F.isnan(person)
    if df.filter(missing).limit(1).count():
        raise person_missing(config.person)
    if ROW_COLUMN not in df.columns:
        raise DataError(f"the rows carry no position ({ROW_COLUMN}): contributions cannot be bounded in table order")
    window = Window.partitionBy(person).orderBy(F.col(ROW_COLUMN))
    ranked = df.withColumn(BOUND_RANK, F.row_number().over(window))
    kept = ranked.filter(F.col(BOUND_RANK) <= config.max_contributions).drop(BOUND_RANK)
    dropped = ranked.filter(F.col(BOUND_RANK) > config.max_contributions).count()
    return kept, int(dropped)


def _clamped(df: Any, column: str, lower: int, upper: int) -> tuple[Any, Any]:
    """The clamped value of ``column`` (0 where unsummable) and whether it is unsummable."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    kind = df.schema[column].dataType
    value = F.col(f"`{column}`")
    if isinstance(kind, T.ByteType | T.ShortType | T.IntegerType | T.LongType):
        bad = value.isNull()
        clamped = F.least(F.greatest(value.cast("long"), F.lit(lower).cast("long")), F.lit(upper).cast("long"))
    elif isinstance(kind, T.FloatType | T.DoubleType | T.DecimalType):
        as_double = value.cast("double")
        bad = value.isNull() | F.isnan(as_double)
        clamped = F.rint(F.least(F.greatest(as_double, F.lit(float(lower))), F.lit(float(upper)))).cast("long")
    else:
        raise UnsupportedOnEngine(f"publication.aggregates.sums: column {column!r} of type {kind.simpleString()} "
                                  "(a sum over a non-numeric column)",
                                  hint="store the column as numbers, or --engine pandas")
    return F.when(bad, F.lit(0).cast("long")).otherwise(clamped), bad


def spark_groups(engine: SparkDriver, df: Any, config: AggregatesConfig) -> tuple[Any, int]:
    """The groups table (:func:`~anon_dagster.release.dp.bounded_groups`) counted on Spark and
    read by the driver, and the rows the bound dropped."""
    from pyspark.sql import functions as F

    data, dropped = bounded(df, config)
    aggs = [F.count(F.lit(1)).cast("long").alias(ROWS)]
    for s in config.sums:
        clamped, bad = _clamped(data, s.column, s.lower, s.upper)
        aggs.append(F.coalesce(F.sum(clamped), F.lit(0)).cast("long").alias(sum_column(s.column)))
        aggs.append(F.coalesce(F.sum(F.when(bad, 1).otherwise(0)), F.lit(0)).cast("long").alias(bad_column(s.column)))
    grouped = (data.groupBy(*[f"`{c}`" for c in config.group_by]).agg(*aggs) if config.group_by
               else data.agg(*aggs))
    table = collect(grouped, scratch=engine.scratch, max_cells=engine.max_driver_cells,
                    what="the groups of publication.aggregates")
    groups = to_pandas(table)
    if not config.group_by and not len(groups):
        groups = groups.reindex([0]).fillna(0)
    for c in [ROWS, *[f(s.column) for s in config.sums for f in (sum_column, bad_column)]]:
        groups[c] = groups[c].astype("int64")
    return groups, dropped


def dp_aggregates(engine: SparkDriver, df: Any, config: AggregatesConfig, epsilon: Any,
                  rng: IntegerSource | None = None) -> DPAggregates:
    """The pandas engine's :func:`~anon_dagster.release.dp.dp_aggregates` of the Spark DataFrame
    ``df`` (module docstring): the same table for the same random source."""
    check_columns(list(df.columns), config, epsilon)
    groups, dropped = spark_groups(engine, df, config)
    return aggregates_from_groups(groups, dropped, config, epsilon, rng)


def dp_release(engine: SparkDriver, spec: Any, df: Any, ledger: Any, *,
               rng: IntegerSource | None = None) -> tuple[DPAggregates, dict[str, Any]]:
    """:func:`~anon_dagster.release.publish.dp_release` on Spark: the population's budget
    checked before anything is counted or drawn, then the aggregates of ``df``'s published
    columns; returns the aggregates and the report's ``dp`` entry."""
    config = aggregates_config(spec)
    eps, total, method, delta = epsilon_spend(spec)
    state = ledger.budget(budget_population(spec), epsilon=eps, total=total, composition=method, delta=delta)
    if not state.allowed:
        raise state.refusal(spec.release)
    view = df.select(*[f"`{c}`" for c in published_columns(df)], *([ROW_COLUMN] if ROW_COLUMN in df.columns else []))
    result = dp_aggregates(engine, view, config, spec.publication.epsilon, rng)
    return result, {**result.to_dict(), "budget": state.to_dict()}


__all__ = ["bounded", "dp_aggregates", "dp_release", "spark_groups"]
