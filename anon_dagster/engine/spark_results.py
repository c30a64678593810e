"""What each step of the Spark engine hands to the next: the rows on Spark and what the step
knows about them (the pandas pipeline's step outputs, with a Spark DataFrame in place of a
pandas one)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from .spark_pseudonyms import DISTINCT_PREFIX


@dataclass
class SparkIngested:
    """A partition's rows on Spark, checked against the spec, and where they came from."""

    df: Any
    source: str

    @property
    def data(self) -> Any:
        return self.df


@dataclass
class SparkPseudonymized:
    """The table with identifiers pseudonymized (or dropped), materialized once on the executors
    (a scope-row pseudonym is random: the table must not be computed twice)."""

    df: Any
    columns: list[Any] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    backend: str | None = None
    planned: Any = None  # the mapInArrow query, before it was materialized (what explain() shows)
    unperturbed: Any = None  # after PRAM, the table before it (:attr:`original`)

    @property
    def data(self) -> Any:
        return self.df

    @property
    def original(self) -> Any:
        """The table the anonymization's record compares with and hashes: before PRAM, when
        PRAM changed :attr:`df` (the pandas engine's record reads the table it was given)."""
        return self.unperturbed if self.unperturbed is not None else self.df

    @cached_property
    def summary(self) -> dict[str, Any]:
        """The pandas engine's pseudonymization summary: rows, nulls and distinct identifiers per
        column, counted by Spark (one pass)."""
        from pyspark.sql import functions as F

        from ..io import plain_json
        from ..pseudonymize.table import PseudonymizationSummary

        summary = PseudonymizationSummary(dropped=list(self.dropped), backend=self.backend)
        if self.columns:
            aggs = [F.count(F.lit(1)).alias("__rows")]
            for c in self.columns:
                aggs.append(F.count(F.col(f"`{c.column}`")).alias(f"p_{c.column}"))
                counted = DISTINCT_PREFIX + c.column if c.scope == "row" else c.column
                aggs.append(F.countDistinct(F.col(f"`{counted}`")).alias(f"d_{c.column}"))
            got = self.df.agg(*aggs).collect()[0]
            for c in self.columns:
                rows = int(got["__rows"])
                summary.columns.append(replace(c, rows=rows, nulls_kept=rows - int(got[f"p_{c.column}"]),
                                               distinct=int(got[f"d_{c.column}"])))
        return plain_json(summary.to_dict())


@dataclass
class SparkAnonymized:
    """The published rows on Spark (internal columns included), their record and what was given up.

    ``categories`` gives each column generalized above level 0 its labels in the order the
    pandas engine's categorical holds them (it numbers the classes: :mod:`anon_dagster.risk.frequencies`).
    """

    df: Any
    record: Any
    suppressed: int
    unreachable: str | None = None
    categories: dict[str, list[object]] = field(default_factory=dict)

    @property
    def data(self) -> Any:
        return self.df


@dataclass
class SparkGateRun:
    """A partition taken through the whole gate on Spark: every step's output and the evaluation."""

    ingested: SparkIngested
    pseudonymized: SparkPseudonymized
    anonymized: SparkAnonymized
    evaluation: Any


__all__ = ["SparkAnonymized", "SparkGateRun", "SparkIngested", "SparkPseudonymized"]
