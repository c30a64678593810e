"""The release gate on Spark: every declared check judged from frequency tables Spark counts.

The checks and their verdicts are the pandas pipeline's (:func:`anon_dagster.release.pipeline.evaluate`):
the same criteria registry judges the same figures, which the existing code computes from the
published table's frequency table over its QIs and sensitive attributes
(:func:`~anon_dagster.risk.frequencies.measure_frequencies`). Per check:

- a threshold of ``policy.thresholds``: the figures of the published frequency table, the
  declared population placed into the published classes with the run's record;
- a utility query: the error of two frequency tables over its ``group_by`` and target (the
  pseudonymized input and the published rows, :func:`~anon_dagster.risk.frequencies.query_error_frequencies`);
- the composition: the class assignment from the frequency table of (linkage pseudonym, QIs), the
  persons' distinct classes, checked against the ledger as on pandas;
- the data contract: the same expectations computed by Spark SQL (the published columns, the
  pseudonym formats, partition keys never null, no raw identifier value in a published cell:
  :mod:`~.spark_raw_hits`); Great Expectations is not called.

The evaluation's data hash is a Spark digest of the published rows (:func:`~.spark_frames.table_digest`),
so its id differs from the pandas engine's for the same rows; every check's outcome is the same.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError, UserError
from ..risk.frequencies import frequency_classes, measure_frequencies, query_error_frequencies
from .spark_attacks import attack_run
from .spark_frames import (
    COUNT_COLUMN,
    FIRST_COLUMN,
    DriverLimit,
    as_categoricals,
    published_columns,
)
from .spark_raw_hits import raw_value_hits
from .spark_synthetic import synthetic_run


def _passthrough(exc: BaseException) -> bool:
    """Errors of the engine itself, which stop the command rather than fail a check."""
    from .base import UnsupportedOnEngine

    return isinstance(exc, DriverLimit | UnsupportedOnEngine)


def measure(engine: Any, spec: Any, df: Any, population: pd.DataFrame | None, *,
            categories: dict[str, list[object]], empty_message: str | None = None) -> Any:
    """The release's :class:`~anon_dagster.risk.RiskMeasures` of the Spark table ``df`` (None when
    it has no rows, or a DataError ``empty_message``)."""
    from ..release.gate import risk_options
    from .spark_persons import PERSON_COLUMN, linked_by, with_persons

    # with published columns linking a person's rows, the table counts rows per person too
    linked = linked_by(spec, df)
    columns = list(dict.fromkeys([*spec.quasi_identifiers, *spec.sensitive, *linked]))
    what = "the published frequency table (QIs, sensitive attributes and the columns linking a person's rows)"
    freq, _ = engine.frequencies(df, columns, what=what)
    if not len(freq):
        if empty_message:
            raise DataError(empty_message)
        return None
    if linked:
        freq = with_persons(engine, spec, freq, linked, what=what)
    pop_spec = spec.policy.population
    return measure_frequencies(
        freq, spec.quasi_identifiers, spec.sensitive or None, population=population,
        sampling_fraction=spec.policy.sampling_fraction,
        count_column=pop_spec.count_column if pop_spec is not None and population is not None else None,
        counts=COUNT_COLUMN, first_row=FIRST_COLUMN, categories=categories,
        persons=PERSON_COLUMN if linked else None, **risk_options(spec, population))


def query_error(engine: Any, original: Any, published: Any, group_by: list[str], target: str) -> Any:
    """A utility query's error from the frequency tables of the two Spark tables."""
    columns = [*group_by, target]
    for frame, label in ((original, "original"), (published, "anonymized")):
        for col in columns:
            if col not in frame.columns:
                raise DataError(f"utility query: column {col!r} is not in the {label} table")
    if target in group_by:
        raise DataError(f"utility query: target {target!r} is also a group_by column")
    first, _ = engine.frequencies(original, columns, first_row=False, what=f"the original's counts of {columns}")
    second, _ = engine.frequencies(published, columns, first_row=False, what=f"the published counts of {columns}")
    if not len(second):
        second = pd.DataFrame({**{c: first[c].iloc[:0] for c in columns}, COUNT_COLUMN: np.zeros(0, dtype=np.int64)})
    return query_error_frequencies(first, second, group_by, target, counts=COUNT_COLUMN)


def utility_outcomes(engine: Any, spec: Any, original: Any, published: Any) -> list[Any]:
    """:func:`anon_dagster.release.gate.utility_outcomes` from frequency tables."""
    from ..release.gate import Outcome

    outcomes = []
    for q in spec.utility_queries:
        name = f"utility_{q.name}"
        try:
            error, table = query_error(engine, original, published, list(q.group_by), q.target)
        except Exception as exc:
            if _passthrough(exc):
                raise
            outcomes.append(Outcome(name=name, passed=False, severity=q.severity,
                                    summary=f"query {q.name!r} could not be evaluated: {exc}"))
            continue
        error = float(error)
        bound = q.max_error_points
        passed = True if bound is None else error <= bound
        summary = (f"query {q.name!r} (prevalence of {q.target} by {', '.join(q.group_by)}): "
                   f"largest error {error:.3g} points" + ("" if bound is None else f", bound {bound:g}"))
        outcomes.append(Outcome(name=name, passed=passed, severity=q.severity, value=error, threshold=bound,
                                comparison="<=", summary=summary, details={"table": table}))
    return outcomes


def contract_outcome(spec: Any, published: Any, raw: Any | None,
                     categorical: set[str], min_length: int = 5) -> Any:
    """The data contract of the publication (:mod:`anon_dagster.release.contract`), by Spark SQL."""
    from pyspark.sql import functions as F

    from ..pseudonymize import pseudonym_pattern
    from ..release.gate import Outcome

    columns = published_columns(published)
    types = dict(published.dtypes)
    described: list[str] = []
    failed: list[str] = []
    description = "published columns are exactly the allowed set"
    described.append(description)
    allowed = set(spec.published_columns)
    if set(columns) != allowed:
        failed.append(f"{description}: extra {sorted(set(columns) - allowed)}, missing {sorted(allowed - set(columns))}")
    counts: list[tuple[str, Any, str | None]] = []  # (expectation, rows violating it, pseudonym column)
    patterns: dict[str, str] = {}
    for name in spec.pseudonymized:
        if name in columns:
            p = spec.columns[name].pseudonymize
            pattern = patterns[name] = pseudonym_pattern(p.method, prefix_version=p.prefix_version)
            col = F.col(f"`{name}`").cast("string")
            counts.append((f"{name}: pseudonyms match the {p.method} format",
                           F.sum((col.isNotNull() & ~col.rlike(pattern)).cast("long")), name))
    for name in spec.partition_keys:
        if name in columns:
            counts.append((f"partition key {name} is never null", F.sum(F.col(f"`{name}`").isNull().cast("long")),
                           None))
    formats: dict[str, tuple[str, int]] = {}  # per pseudonym column: its pattern, the cells off it
    if counts:
        got = published.agg(*[c.alias(f"c{i}") for i, (_, c, _) in enumerate(counts)]).collect()[0]
        for i, (text, _, pseudonyms) in enumerate(counts):
            described.append(text)
            violating = int(got[f"c{i}"] or 0)
            if pseudonyms is not None:
                formats[pseudonyms] = (patterns[pseudonyms], violating)
            if violating:
                failed.append(f"{text}: {violating} rows violate it")
    for (col, ident), hits in raw_value_hits(spec, published, raw, columns, types, categorical, min_length,
                                             formats).items():
        text = f"{col}: holds no raw value of identifier {ident}"
        described.append(text)
        if hits:
            failed.append(f"{text}: {hits} rows violate it")
    n = len(described)
    summary = (f"{n} expectations (Spark SQL): all met" if not failed
               else f"{len(failed)} of {n} expectations failed: " + "; ".join(failed))
    return Outcome(name="data_contract", passed=not failed, value=len(failed), threshold=0, comparison="<=",
                   summary=summary, details={"expectations": described, "failed": failed})


def composition_outcome(engine: Any, spec: Any, published: Any, ledger: Any, partition: str | None
                        ) -> tuple[Any, dict[str, Any] | None, Any]:
    """The composition check (:func:`anon_dagster.release.pipeline._composition`) from the
    frequency table of (linkage pseudonym, QIs): the persons' classes, never their rows."""
    from ..release.composition import check_composition, class_assignment
    from ..release.gate import LINKAGE_COLUMN, Outcome
    from ..release.pipeline import describe_error

    comp = spec.composition
    try:
        if ledger is None:
            raise UserError("no ledger to compose with")
        if LINKAGE_COLUMN not in published.columns:
            raise UserError(f"{spec.label}: the table carries no linkage pseudonyms: pseudonymize it with the "
                            "release's composition block first")
        qis = list(spec.quasi_identifiers)
        freq, _ = engine.frequencies(published, [LINKAGE_COLUMN, *qis],
                                     what="the persons' classes (linkage pseudonyms by published QIs)")
        if len(freq):
            classes = frequency_classes(freq, qis, freq[COUNT_COLUMN].to_numpy(np.float64))
            assignment = class_assignment(freq[qis], qis, freq[LINKAGE_COLUMN], classes=classes)
        else:
            assignment = class_assignment(pd.DataFrame({q: [] for q in qis}), qis, pd.Series([], dtype=object))
        result = check_composition(assignment, ledger, population=comp.population, release=spec.release,
                                   partition=partition, min_k=comp.min_k)
    except Exception as exc:
        if _passthrough(exc):
            raise
        return Outcome("composition", False, summary=f"could not be checked: {describe_error(exc)}"), None, None
    summary = (f"effective k = {result.effective_k} against {len(result.compared)} earlier "
               f"publication(s) of population {comp.population!r} (minimum {comp.min_k}); "
               f"{result.exposed_persons} persons exposed. {result.text}")
    details = result.to_dict(class_values=False)
    return Outcome("composition", bool(result.passed), value=int(result.effective_k), threshold=comp.min_k,
                   comparison=">=", summary=summary, details={"composition": details}), details, assignment


def evaluate(engine: Any, spec: Any, anonymized: Any, *, original: Any, raw: Any | None, ledger: Any,
             partition: str | None, only: set[str] | None = None, mitigations: list[str] | None = None) -> Any:
    """Judge the published rows on Spark against every check the spec declares (or those in ``only``)."""
    from ..anonymize.criteria import Policy
    from ..anonymize.population import generalize_population
    from ..release import gate
    from ..release.evaluate_step import AUDIT_CHECKS, audit_checks
    from ..release.evaluation import CheckResult, Evaluation
    from ..release.pipeline import declared_checks, describe_error
    from ..risk.exposure import small_classes
    from .base import UnsupportedOnEngine

    published = anonymized.df
    record = anonymized.record
    declared = declared_checks(spec)
    wanted = [d for d in declared if only is None or d.name in only]
    names = {d.name for d in wanted}
    results: dict[str, CheckResult] = {}
    measures: dict[str, Any] = {}

    def result(outcome: Any) -> CheckResult:
        spec_key = next((d.spec_key for d in declared if d.name == outcome.name), "")
        return replace(outcome, passed=bool(outcome.passed), spec_key=spec_key)

    risk_names = {d.name for d in wanted if d.name not in ("composition", "epsilon_budget", "data_contract",
                                                           *AUDIT_CHECKS)}
    if risk_names:
        try:
            population = None
            if spec.policy.population is not None and record is not None and record.rows_out:
                population = generalize_population(gate.load_population(spec), spec, record, None)
            measured = measure(engine, spec, published, population, categories=anonymized.categories)
            measures = gate.release_figures(spec, measured, population) if measured is not None else {"rows": 0, "classes": 0}
            outcomes = gate.threshold_outcomes(spec, measures)
            if original is not None:
                outcomes += utility_outcomes(engine, spec, original, published)
            for o in outcomes:
                results[o.name] = result(o)
        except Exception as exc:
            if _passthrough(exc):
                raise
            for d in wanted:
                if d.name in risk_names:
                    results[d.name] = CheckResult(d.name, False, d.severity, spec_key=d.spec_key,
                                                  summary=f"could not be measured: {describe_error(exc)}")
    composition = assignment = None
    if "composition" in names:
        outcome, composition, assignment = composition_outcome(engine, spec, published, ledger, partition)
        results["composition"] = result(outcome)
    if "epsilon_budget" in names:
        from ..release.evaluate_step import _budget as budget_outcome

        results["epsilon_budget"] = result(budget_outcome(spec, ledger))
    # on the driver, with the pandas engine's code (.spark_synthetic, .spark_attacks)
    audited, outcomes = audit_checks(spec, wanted, synthetic=lambda: synthetic_run(engine, spec, anonymized, original),
                                     attacks=lambda: attack_run(engine, spec, anonymized, original),
                                     passthrough=(DriverLimit, UnsupportedOnEngine))
    measures = {**measures, **audited}
    for o in outcomes:
        results[o.name] = result(o)
    if "data_contract" in names:
        try:
            outcome = contract_outcome(spec, published, raw, set(anonymized.categories))
        except Exception as exc:
            if _passthrough(exc):
                raise
            outcome = gate.Outcome("data_contract", False, summary=f"could not be validated: {describe_error(exc)}")
        results["data_contract"] = result(outcome)
    checks = [results.get(d.name) or CheckResult(d.name, False, d.severity, spec_key=d.spec_key,
                                                 summary="no result was computed") for d in wanted]
    qis = [q for q in spec.quasi_identifiers if q in published.columns]
    classes = None
    rows = 0
    if qis:
        freq, _ = engine.frequencies(published, qis, what="the published classes")
        if len(freq):
            freq = as_categoricals(freq, anonymized.categories)
            classes = frequency_classes(freq, qis, freq[COUNT_COLUMN].to_numpy(np.float64))
            rows = int(freq[COUNT_COLUMN].sum())
    else:
        rows = int(published.count())
    notes = list(mitigations or [])
    if record is not None and record.policy_unreachable and record.policy_unreachable not in notes:
        notes.append(record.policy_unreachable)
    return Evaluation(
        release=spec.release, partition=partition, spec_hash=spec.spec_hash(),
        data_hash=engine.digest(published),
        checks=checks, measures=measures, record=record.to_json() if record is not None else None,
        composition=composition,
        class_sizes=classes.sizes.astype(int).tolist() if classes is not None else [],
        small_classes=small_classes(classes, Policy.from_spec(spec).k).to_dict() if classes is not None else None,
        mitigations=notes, rows=rows, assignment=assignment,
    )


__all__ = ["composition_outcome", "contract_outcome", "evaluate", "measure", "query_error",
           "utility_outcomes"]
