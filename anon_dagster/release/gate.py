"""The release gate's verdicts, computed from data: one outcome per declared threshold and query.

Pure functions over DataFrames (no Dagster): the asset checks call them to report, and the
publishing asset calls them again to re-verify the gate itself, independently of whatever the
event log remembers. Each declared threshold of ``policy.thresholds`` gives one outcome, judged
as its entry of the criteria registry (:mod:`anon_dagster.criteria`) says: lower bounds (``k``,
``l_distinct``, ``l_entropy``), upper bounds (every risk and ``t_closeness``), and
``recursive_cl``, which must hold at the declared c.

A measure the kernel cannot provide never passes silently: the outcome fails and says why.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..anonymize.population import generalize_population, matched_qis
from ..anonymize.record import TransformationRecord, table_hash
from ..criteria import declared_thresholds
from ..errors import DataError
from ..io import read_table
from ..pseudonymize import pseudonym_pattern
from ..risk import EquivalenceClasses, RiskMeasures, measure_risk, utility_query_error
from ..spec import ReleaseSpec, build_hierarchy
from .evaluation import CheckResult, as_float, class_size_histogram
from .report import format_value as _fmt

# Columns the pipeline carries next to the data but never publishes: the linkage pseudonym, and
# each anonymized row's position in the pseudonymized partition (with ``policy.attacks``: the
# attacks need each released row's record before anonymization, after the table is stored).
LINKAGE_COLUMN = "__anon_linkage"
SOURCE_ROW_COLUMN = "__anon_source_row"
INTERNAL_COLUMNS = (LINKAGE_COLUMN, SOURCE_ROW_COLUMN)


# The verdict of one check (name, passed, severity, value, threshold, comparison, summary,
# details, spec key): one type for the gate, the pipeline, the CLI and Dagster.
Outcome = CheckResult


def anonymization_hash(table: pd.DataFrame) -> str:
    """The table hash a record's ``output_hash`` describes: the anonymization's own table, without
    :data:`SOURCE_ROW_COLUMN` (which the pipeline adds after it)."""
    return table_hash(table.drop(columns=[SOURCE_ROW_COLUMN]) if SOURCE_ROW_COLUMN in table.columns else table)


def publishable_view(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` without the internal columns and the attached record, which are never published."""
    view = df.drop(columns=[c for c in INTERNAL_COLUMNS if c in df.columns])
    view.attrs = {}
    return view


# The key of ``DataFrame.attrs`` under which the anonymized table carries its own record: stored
# with the table (parquet schema metadata), it is encrypted and authenticated with it at rest.
RECORD_ATTR = "anon_dagster.transformation_record"


def attach_record(table: pd.DataFrame, record: TransformationRecord) -> pd.DataFrame:
    """``table`` carrying ``record`` (a shallow copy; the table's data is not copied)."""
    out = table.copy(deep=False)
    out.attrs = {RECORD_ATTR: record.to_json()}
    return out


def attached_record(table: pd.DataFrame) -> TransformationRecord | None:
    """The record a table carries (:func:`attach_record`), None when it carries none.

    Raises DataError when the record is not of the format this version reads.
    """
    stored = table.attrs.get(RECORD_ATTR)
    return None if stored is None else TransformationRecord.from_json(stored)


RECORD_FILE = "transformations.json"


def load_population(spec: ReleaseSpec) -> pd.DataFrame | None:
    """The population table declared in the policy (raw values), if any.

    Read once per file version: every partition of a release shares it, so a run over many
    partitions does not read it again for each (the cache is keyed by path, size and mtime).
    """
    if spec.policy.population is None:
        return None
    path = spec.resolve(spec.policy.population.path)
    try:
        st = path.stat()
    except OSError:
        return read_table(path)  # read_table raises the clear error for a missing file
    return _read_population(str(path), st.st_size, st.st_mtime_ns).copy()


@functools.lru_cache(maxsize=4)
def _read_population(path: str, size: int, mtime_ns: int) -> pd.DataFrame:
    return read_table(Path(path))


def load_record(folder: Path) -> TransformationRecord | None:
    """The transformation record stored in a partition's report folder, if there is one.

    Raises DataError naming the file when it is not a record of the format this version reads.
    """
    path = Path(folder) / RECORD_FILE
    if not path.exists():
        return None
    return TransformationRecord.read(path)


def population_in_classes(spec: ReleaseSpec, anonymized: pd.DataFrame,
                          record: TransformationRecord | None) -> pd.DataFrame | None:
    """The declared population put into the published classes of ``anonymized``, or None.

    None when the spec declares no population, when the release is empty, or for
    microaggregation (no population row has a group mean: journalist risk then comes from the
    sampling fraction). The record must be the one that produced ``anonymized`` (its
    ``output_hash`` is checked): a population placed with another table's record would give
    wrong class sizes. Raises DataError when the record is missing or does not match.
    """
    if spec.policy.population is None or len(anonymized) == 0:
        return None
    if record is None:
        raise DataError(
            f"{spec.label}: no transformation record for this table: the population cannot be put "
            "into the published classes (materialize the anonymized asset again)")
    if record.output_hash != anonymization_hash(anonymized):
        raise DataError(
            f"{spec.label}: the stored transformation record does not describe this anonymized table "
            "(output hash differs): materialize the anonymized asset again")
    population = load_population(spec)  # not None: the spec declares a population (checked above)
    return generalize_population(population, spec, record, publishable_view(anonymized))


def population_for(spec: ReleaseSpec, table: pd.DataFrame,
                   record: TransformationRecord | None) -> pd.DataFrame | None:
    """The declared population as ``table``'s classes see it: placed into them with ``record``
    when the table is an anonymization's output, the raw population otherwise (None when the
    spec declares none)."""
    population = load_population(spec)
    if population is None or record is None:
        return population
    return generalize_population(population, spec, record, publishable_view(table))


def measure(spec: ReleaseSpec, anonymized: pd.DataFrame, population: pd.DataFrame | None = None,
            record: TransformationRecord | None = None) -> dict[str, Any]:
    """Every risk figure of the release (``RiskMeasures.to_dict()``) over the published view.

    ``population`` is already in the published classes (:func:`population_in_classes`) unless
    ``record`` is given, in which case the raw population is put into them here. An empty
    release (everything suppressed) has no classes: ``{"rows": 0, "classes": 0}``, which fails
    every threshold.
    """
    measured = risk_measures(spec, anonymized, population, record)
    return {"rows": 0, "classes": 0} if measured is None else release_figures(spec, measured, population)


def release_figures(spec: ReleaseSpec, measured: RiskMeasures, population: pd.DataFrame | None) -> dict[str, Any]:
    """``measured.to_dict()`` with the note on how the declared population was matched."""
    out = measured.to_dict()
    pop_spec = spec.policy.population
    if pop_spec is not None and population is None:
        out["population_note"] = ("the population gives no class sizes for this method (group means "
                                  "match no population row): journalist risk from the sampling fraction")
    elif pop_spec is not None and pop_spec.qis:
        out["population_note"] = (f"population matched on {', '.join(matched_qis(spec))} only: its class "
                                  "sizes are upper bounds on F, so journalist risk is understated")
    return out


def linking_columns(spec: ReleaseSpec, published: pd.DataFrame) -> list[str]:
    """The published columns that link the rows of one person: pseudonymized identifiers
    (a keyed pseudonym is the same for every row of a person) whose scope is not ``row``."""
    return [c for c in spec.pseudonymized if c in published.columns
            and spec.columns[c].pseudonymize.scope != "row"]


def person_link(spec: ReleaseSpec, published: pd.DataFrame) -> pd.Series | None:
    """Each published row's person, as far as the published columns link rows (None when
    nothing links them). Rows sharing a value of any linking column are one person: with
    several linking columns, the connected components of rows joined by any shared value."""
    columns = linking_columns(spec, published)
    if not columns:
        return None
    if len(columns) == 1:
        return published[columns[0]].reset_index(drop=True)
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(published)
    rows, nodes, offset = [], [], n
    for c in columns:
        codes, uniques = pd.factorize(published[c])  # missing: -1, links nothing
        keep = codes >= 0
        rows.append(np.flatnonzero(keep))
        nodes.append(codes[keep] + offset)
        offset += len(uniques)
    r, v = np.concatenate(rows), np.concatenate(nodes)
    graph = coo_matrix((np.ones(len(r), dtype=np.int8), (r, v)), shape=(offset, offset))
    _, component = connected_components(graph, directed=False)
    return pd.Series(component[:n])


def risk_options(spec: ReleaseSpec, population: pd.DataFrame | None) -> dict[str, Any]:
    """The options of the release's measurement that the spec decides: the sensitive attributes'
    kind, order and hierarchy, the recursive (c, l) constant, the population's matched QIs and
    source, and the risk threshold of ``records_at_risk``. Every engine measures with these."""
    options: dict[str, Any] = {}
    sensitive = spec.sensitive
    if sensitive:
        options["sensitive_kind"] = {s: spec.columns[s].kind or "nominal" for s in sensitive}
        orders = {s: spec.columns[s].order for s in sensitive if spec.columns[s].order}
        if orders:
            options["sensitive_order"] = orders
        trees = {s: build_hierarchy(spec, s) for s in sensitive if spec.columns[s].hierarchy is not None}
        if trees:
            options["sensitive_hierarchy"] = trees
    cl = spec.policy.thresholds.recursive_cl
    if cl is not None:
        options["recursive_c"] = cl.c
    pop_spec = spec.policy.population
    if population is not None:
        if pop_spec is not None and pop_spec.qis:
            # matched on fewer QIs: F is an upper bound, journalist risk understated (reported)
            options["population_qis"] = matched_qis(spec)
        options["population_source"] = pop_spec.path if pop_spec is not None else None
    if spec.policy.thresholds.prosecutor_max is not None:
        options["risk_threshold"] = spec.policy.thresholds.prosecutor_max
    return options


def risk_measures(spec: ReleaseSpec, anonymized: pd.DataFrame, population: pd.DataFrame | None = None,
                  record: TransformationRecord | None = None) -> RiskMeasures | None:
    """The release's :class:`RiskMeasures` over the published view (None when it has no rows).

    The one measurement of a release table: the spec gives the QIs, the sensitive attributes
    with their kind, order and hierarchy, the population, the sampling fraction, the recursive
    (c, l) constant and the risk threshold of ``records_at_risk`` (``policy.thresholds.
    prosecutor_max`` when declared, else the kernel's default). The measures keep the table's
    equivalence classes (``equivalence_classes``) for every later figure of the same table.
    """
    data = publishable_view(anonymized)
    if len(data) == 0:
        return None
    if population is not None and record is not None:
        population = generalize_population(population, spec, record, data)
    sensitive, pop_spec = spec.sensitive, spec.policy.population
    options = risk_options(spec, population)
    persons = person_link(spec, data)
    if persons is not None:
        options["persons"] = persons
    return measure_risk(
        data, spec.quasi_identifiers, sensitive=sensitive or None, population=population,
        sampling_fraction=spec.policy.sampling_fraction,
        count_column=pop_spec.count_column if pop_spec is not None and population is not None else None,
        **options,
    )


def threshold_outcomes(spec: ReleaseSpec, measures: Mapping[str, Any]) -> list[Outcome]:
    """One outcome per threshold declared in ``spec.policy.thresholds``, in registry order.

    Each criterion of :data:`~anon_dagster.criteria.REGISTRY` reads its figure from
    ``measures`` (``RiskMeasures.to_dict()``), compares it and says so in one sentence.
    """
    outcomes = []
    for criterion, threshold in declared_thresholds(spec.policy.thresholds):
        judged = criterion.judge(measures, threshold, _fmt)
        outcomes.append(Outcome(name=criterion.check_name, passed=judged.passed, value=judged.value,
                                threshold=threshold, comparison=criterion.comparison, summary=judged.summary))
    return outcomes


def utility_outcomes(spec: ReleaseSpec, original: pd.DataFrame, anonymized: pd.DataFrame) -> list[Outcome]:
    """One outcome per utility query: largest prevalence error (points) within its bound."""
    outcomes = []
    data = publishable_view(anonymized)
    for q in spec.utility_queries:
        name = f"utility_{q.name}"
        try:
            error, table = utility_query_error(original, data, q.group_by, q.target)
        except Exception as exc:  # a query that cannot be evaluated fails, never passes
            outcomes.append(Outcome(name=name, passed=False, severity=q.severity,
                                    summary=f"query {q.name!r} could not be evaluated: {exc}"))
            continue
        error = float(error)
        bound = q.max_error_points
        passed = True if bound is None else error <= bound
        summary = (f"query {q.name!r} (prevalence of {q.target} by {', '.join(q.group_by)}): "
                   f"largest error {error:.3g} points"
                   + ("" if bound is None else f", bound {bound:g}"))
        outcomes.append(Outcome(name=name, passed=passed, severity=q.severity, value=error,
                                threshold=bound, comparison="<=", summary=summary,
                                details={"table": table}))
    return outcomes


def published_classes(spec: ReleaseSpec, anonymized: pd.DataFrame) -> EquivalenceClasses | None:
    """The equivalence classes of the published view over the spec's QIs it holds.

    None when the view is empty or holds no QI (there are no classes to describe).
    """
    data = publishable_view(anonymized)
    qis = [q for q in spec.quasi_identifiers if q in data.columns]
    if not qis or data.empty:
        return None
    return EquivalenceClasses.from_frame(data, qis)


def class_sizes(spec: ReleaseSpec, anonymized: pd.DataFrame,
                classes: EquivalenceClasses | None = None) -> list[int]:
    """The size of every published equivalence class (empty when there is none).

    ``classes`` are the published view's classes when already built (not built again).
    """
    ec = classes if classes is not None else published_classes(spec, anonymized)
    return [] if ec is None else ec.sizes.astype(int).tolist()


def raw_identifier_values(spec: ReleaseSpec, raw: pd.DataFrame) -> dict[str, set[str]]:
    """Raw values of each identifier column, as text, that must never appear in a publication."""
    out = {}
    for name in spec.identifiers:
        if name in raw.columns:
            values = raw[name].dropna().astype(str)
            out[name] = set(values.tolist())
    return out


def raw_value_hits(spec: ReleaseSpec, published: pd.DataFrame,
                   raw_values: Mapping[str, set[str]] | None, min_length: int = 5) -> dict[tuple[str, str], Any]:
    """Per (published column, identifier): a boolean array, True where the cell equals a raw
    value of that identifier.

    An identifier's own column is searched for all its raw values; other text columns only for
    values of at least ``min_length`` characters (short ones collide with ordinary codes such
    as ages). Values are compared as text.
    """
    out = {}
    as_text: dict[str, list[str]] = {}  # each column converted once, looked up in Python sets
    for ident, values in (raw_values or {}).items():
        long_values = {v for v in values if len(v) >= min_length}
        for col in published.columns:
            text = pd.api.types.is_string_dtype(published[col]) or published[col].dtype == object
            if col != ident and not text:
                continue
            candidates = values if col == ident else long_values
            if candidates:
                if col not in as_text:
                    as_text[col] = published[col].astype(str).tolist()
                cells = as_text[col]
                out[(col, ident)] = np.fromiter((c in candidates for c in cells), dtype=bool, count=len(cells))
    return out


def contract_problems(spec: ReleaseSpec, published: pd.DataFrame,
                      raw_values: Mapping[str, set[str]] | None = None,
                      min_length: int = 5) -> list[str]:
    """The data contract in plain pandas (the gate's re-verification; the check uses GE).

    Published columns are exactly ``spec.published_columns``; no identifier column without a
    pseudonymization method; pseudonyms match their format; partition keys are never null; no
    raw identifier value appears (counts only: the values themselves are never reported). An
    identifier's own column is searched for all its raw values; other text columns only for
    values of at least ``min_length`` characters, since short ones collide with ordinary codes.
    """
    problems = []
    allowed = set(spec.published_columns)
    present = set(published.columns)
    if present != allowed:
        extra, missing = sorted(present - allowed), sorted(allowed - present)
        problems.append(f"published columns differ from the allowed set: extra {extra}, missing {missing}")
    for name in spec.identifiers:
        if name in published.columns and spec.columns[name].pseudonymize is None:
            problems.append(f"identifier column {name!r} has no pseudonymization and must not be published")
    for name in spec.pseudonymized:
        if name not in published.columns:
            continue
        p = spec.columns[name].pseudonymize
        pattern = pseudonym_pattern(p.method, prefix_version=p.prefix_version)
        values = published[name].dropna().astype(str)
        bad = int((~values.str.fullmatch(pattern)).sum())
        if bad:
            problems.append(f"column {name!r}: {bad} values do not match the {p.method} pseudonym format")
    for name in spec.partition_keys:
        if name in published.columns and published[name].isna().any():
            problems.append(f"partition key {name!r} has {int(published[name].isna().sum())} null values")
    for (col, ident), hits in raw_value_hits(spec, published, raw_values, min_length).items():
        if hits.any():
            problems.append(f"column {col!r}: {int(hits.sum())} values equal a raw value of identifier {ident!r}")
    return problems


def gate_outcomes(spec: ReleaseSpec, anonymized: pd.DataFrame, original: pd.DataFrame | None,
                  population: pd.DataFrame | None = None,
                  record: TransformationRecord | None = None) -> tuple[list[Outcome], dict[str, Any]]:
    """Re-measure ``anonymized`` against every threshold and utility query of the spec.

    ``population`` and ``record`` as in :func:`measure`.
    """
    measures = measure(spec, anonymized, population, record)
    outcomes = threshold_outcomes(spec, measures)
    if original is not None:
        outcomes += utility_outcomes(spec, publishable_view(original), anonymized)
    return outcomes, measures


def summary_markdown(title: str, outcomes: list[Outcome], measures: Mapping[str, Any]) -> str:
    """A short markdown account: verdict per check, then the main figures."""
    lines = [f"### {title}", "", "| check | verdict | measured | threshold |", "|---|---|---|---|"]
    for o in outcomes:
        verdict = "pass" if o.passed else ("FAIL" if o.severity == "error" else "warn")
        thr = "" if o.threshold is None else f"{o.comparison} {_fmt(o.threshold)}"
        lines.append(f"| {o.name} | {verdict} | {_fmt(o.value) if o.value is not None else 'n/a'} | {thr} |")
    lines += ["", "| measure | value |", "|---|---|"]
    for key in ("rows", "classes", "k", "uniques_fraction", "prosecutor_max", "prosecutor_avg",
                "journalist_max", "journalist_avg", "marketer", "l_distinct", "l_entropy", "t_closeness"):
        if key in measures and measures[key] is not None:
            lines.append(f"| {key} | {_fmt(measures[key])} |")
    return "\n".join(lines)


__all__ = [
    "INTERNAL_COLUMNS", "LINKAGE_COLUMN", "SOURCE_ROW_COLUMN", "Outcome", "anonymization_hash", "as_float",
    "class_size_histogram", "class_sizes", "contract_problems", "gate_outcomes",
    "load_population", "load_record", "measure", "population_in_classes", "publishable_view", "published_classes", "raw_identifier_values",
    "summary_markdown", "threshold_outcomes", "utility_outcomes",
]
