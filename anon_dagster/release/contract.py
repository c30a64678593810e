"""The data contract of a publication, validated with Great Expectations 1.x (called directly).

Expectations, over the table as it would be published:

- its columns are exactly ``spec.published_columns`` (``ExpectTableColumnsToMatchSet``, exact);
- every pseudonymized identifier matches its method's format (``ExpectColumnValuesToMatchRegex``
  with :func:`anon_dagster.pseudonymize.pseudonym_pattern`);
- no raw identifier value appears: an identifier's own column holds none of its raw values, and
  no text column holds a raw identifier value of 5 characters or more. The membership is
  computed with pandas (:func:`~anon_dagster.release.gate.raw_value_hits`) into an exposure
  table (one boolean column per published column and identifier) that GE validates
  (``ExpectColumnValuesToBeInSet([False])``): GE's own ``ExpectColumnValuesToNotBeInSet`` costs
  seconds per expectation with value sets of ten thousand identifiers;
- partition keys are never null (``ExpectColumnValuesToNotBeNull``).

Great Expectations is imported only when a contract is validated (it takes seconds to import),
in an ephemeral context that writes nothing to disk. Results report counts only: GE's lists of
unexpected values are dropped, since for the raw-identifier expectation they would be the very
identifiers the contract keeps out.
"""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..pseudonymize import pseudonym_pattern
from ..spec import ReleaseSpec
from . import gate
from .gate import Outcome


def _great_expectations() -> Any:
    """Great Expectations, imported on first use (it is heavy).

    It imports pyspark when that is installed, for its Spark data sources, which this step never
    uses (it validates pandas frames): importing pyspark took about a second of CPU of every
    process validating a contract (a run worker, the CLI). pyspark is kept out of that import
    unless it is loaded already (a process of the Spark engine), and importable again right
    after; had it been imported, it would warn about the pandas version, which is not shown.
    """
    blocked = "pyspark" not in sys.modules
    if blocked:
        sys.modules["pyspark"] = None  # type: ignore[assignment]  # ``import pyspark`` raises ImportError
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas",
                                    category=FutureWarning)
            import great_expectations
    finally:
        if blocked and sys.modules.get("pyspark", False) is None:
            del sys.modules["pyspark"]
    return great_expectations


def build_expectations(spec: ReleaseSpec, published: pd.DataFrame) -> list[tuple[str, Any]]:
    """``(description, expectation)`` pairs of the contract on the publication itself."""
    gx = _great_expectations()

    E = gx.expectations
    out: list[tuple[str, Any]] = [(
        "published columns are exactly the allowed set",
        E.ExpectTableColumnsToMatchSet(column_set=list(spec.published_columns), exact_match=True),
    )]
    for name in spec.pseudonymized:
        if name in published.columns:
            p = spec.columns[name].pseudonymize
            pattern = pseudonym_pattern(p.method, prefix_version=p.prefix_version)
            out.append((f"{name}: pseudonyms match the {p.method} format",
                        E.ExpectColumnValuesToMatchRegex(column=name, regex=pattern)))
    for name in spec.partition_keys:
        if name in published.columns:
            out.append((f"partition key {name} is never null", E.ExpectColumnValuesToNotBeNull(column=name)))
    return out


def exposure_table(spec: ReleaseSpec, published: pd.DataFrame,
                   raw_values: Mapping[str, set[str]] | None) -> tuple[pd.DataFrame, list[tuple[str, Any]]]:
    """The exposure table and its expectations: no published cell equals a raw identifier value."""
    gx = _great_expectations()

    hits = gate.raw_value_hits(spec, published, raw_values)
    table = pd.DataFrame({f"{col}__holds_raw_{ident}": flags for (col, ident), flags in hits.items()})
    expectations = [
        (f"{col}: holds no raw value of identifier {ident}",
         gx.expectations.ExpectColumnValuesToBeInSet(column=f"{col}__holds_raw_{ident}", value_set=[False]))
        for (col, ident) in hits
    ]
    return table, expectations


def validate_contract(spec: ReleaseSpec, published: pd.DataFrame,
                      raw_values: Mapping[str, set[str]] | None = None) -> Outcome:
    """Validate the contract with GE; the outcome lists each failed expectation with counts."""
    gx = _great_expectations()
    from great_expectations.data_context.types.base import ProgressBarsConfig

    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = context.data_sources.add_pandas("publication")
    runs = [("candidate", published, build_expectations(spec, published))]
    exposure, exposure_expectations = exposure_table(spec, published, raw_values)
    if exposure_expectations:
        runs.append(("identifier_exposure", exposure, exposure_expectations))
    failed: list[str] = []
    described: list[str] = []
    for name, frame, expectations in runs:
        batch = source.add_dataframe_asset(name).add_batch_definition_whole_dataframe("all")
        suite = context.suites.add(gx.ExpectationSuite(name=f"{spec.release}_{name}"))
        for _, expectation in expectations:
            suite.add_expectation(expectation)
        validation = context.validation_definitions.add(
            gx.ValidationDefinition(name=f"{spec.release}_{name}", data=batch, suite=suite))
        result = validation.run(batch_parameters={"dataframe": frame})
        # results come back in the suite's order
        for (description, _), r in zip(expectations, result.results, strict=True):
            described.append(description)
            if r.success:
                continue
            count = (r.result or {}).get("unexpected_count")
            observed = (r.result or {}).get("observed_value")
            if r.expectation_config.type == "expect_table_columns_to_match_set":
                extra = sorted(set(map(str, observed or [])) - set(spec.published_columns))
                missing = sorted(set(spec.published_columns) - set(map(str, observed or [])))
                failed.append(f"{description}: extra {extra}, missing {missing}")
            elif count is not None:
                failed.append(f"{description}: {count} rows violate it")
            else:
                failed.append(f"{description}: violated")
    n = len(described)
    summary = (f"{n} expectations (Great Expectations {gx.__version__}): all met" if not failed
               else f"{len(failed)} of {n} expectations failed: " + "; ".join(failed))
    return Outcome(name="data_contract", passed=not failed, value=len(failed), threshold=0,
                   comparison="<=", summary=summary, details={"expectations": described, "failed": failed})
