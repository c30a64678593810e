"""The data contract of a publication, validated with Great Expectations 1.x (called directly).

Expectations, over the table as it would be published:

- its columns are exactly ``spec.published_columns`` (``ExpectTableColumnsToMatchSet``, exact);
- every pseudonymized identifier matches its method's format (``ExpectColumnValuesToMatchRegex``
  with :func:`anon_dagster.pseudonymize.pseudonym_pattern`);
- no raw identifier value appears: an identifier's own column holds none of its raw values, and
  no text column holds a raw identifier value of ``min_length`` characters or more
  (``ExpectColumnValuesToNotBeInSet``);
- partition keys are never null (``ExpectColumnValuesToNotBeNull``).

Great Expectations is imported only when a contract is validated (it takes seconds to import),
in an ephemeral context that writes nothing to disk. Results report counts only: GE's lists of
unexpected values are dropped, since for the raw-identifier expectation they would be the very
identifiers the contract keeps out.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..spec import ReleaseSpec
from . import core
from .policy import Outcome

MIN_CROSS_COLUMN_LENGTH = 5


def _is_text(series: pd.Series) -> bool:
    return pd.api.types.is_string_dtype(series) or series.dtype == object


def build_expectations(spec: ReleaseSpec, published: pd.DataFrame,
                       raw_values: Mapping[str, set[str]] | None = None) -> list[tuple[str, Any]]:
    """``(description, expectation)`` pairs of the contract for ``published``."""
    import great_expectations as gx

    E = gx.expectations
    out: list[tuple[str, Any]] = [(
        "published columns are exactly the allowed set",
        E.ExpectTableColumnsToMatchSet(column_set=list(spec.published_columns), exact_match=True),
    )]
    for name in spec.pseudonymized:
        if name in published.columns:
            p = spec.columns[name].pseudonymize
            pattern = core.pseudonym_pattern(p.method, prefix_version=p.prefix_version)
            out.append((f"{name}: pseudonyms match the {p.method} format",
                        E.ExpectColumnValuesToMatchRegex(column=name, regex=pattern)))
    for name in spec.partition_keys:
        if name in published.columns:
            out.append((f"partition key {name} is never null", E.ExpectColumnValuesToNotBeNull(column=name)))
    for ident, values in (raw_values or {}).items():
        for col in published.columns:
            if col == ident:
                candidates = values
            elif _is_text(published[col]):
                candidates = {v for v in values if len(v) >= MIN_CROSS_COLUMN_LENGTH}
            else:
                continue
            if candidates:
                out.append((f"{col}: holds no raw value of identifier {ident}",
                            E.ExpectColumnValuesToNotBeInSet(column=col, value_set=sorted(candidates))))
    return out


def validate_contract(spec: ReleaseSpec, published: pd.DataFrame,
                      raw_values: Mapping[str, set[str]] | None = None) -> Outcome:
    """Validate the contract with GE; the outcome lists each failed expectation with counts."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    # values compared as text, as the raw values were collected
    frame = published.copy()
    for ident in raw_values or {}:
        if ident in frame.columns:
            frame[ident] = frame[ident].astype("string")
    batch = (context.data_sources.add_pandas("publication")
             .add_dataframe_asset("candidate").add_batch_definition_whole_dataframe("all"))
    suite = context.suites.add(gx.ExpectationSuite(name=f"{spec.release}_contract"))
    expectations = build_expectations(spec, frame, raw_values)
    for _, expectation in expectations:
        suite.add_expectation(expectation)
    validation = context.validation_definitions.add(
        gx.ValidationDefinition(name=f"{spec.release}_contract", data=batch, suite=suite))
    result = validation.run(batch_parameters={"dataframe": frame})
    failed = []
    for (description, _), r in zip(expectations, result.results, strict=True):
        if not r.success:
            count = (r.result or {}).get("unexpected_count")
            observed = (r.result or {}).get("observed_value")
            if count is not None:
                failed.append(f"{description}: {count} rows violate it")
            elif r.expectation_config.type == "expect_table_columns_to_match_set":
                extra = sorted(set(map(str, observed or [])) - set(spec.published_columns))
                missing = sorted(set(spec.published_columns) - set(map(str, observed or [])))
                failed.append(f"{description}: extra {extra}, missing {missing}")
            else:
                failed.append(f"{description}: violated")
    n = len(expectations)
    summary = (f"{n} expectations (Great Expectations {gx.__version__}): all met" if not failed
               else f"{len(failed)} of {n} expectations failed: " + "; ".join(failed))
    return Outcome(name="data_contract", passed=not failed, value=len(failed), threshold=0,
                   comparison="<=", summary=summary,
                   details={"expectations": [d for d, _ in expectations], "failed": failed})
