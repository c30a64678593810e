"""Every risk figure of a table from its weighted frequency table, as ``measure_risk`` computes it.

A *frequency table* of a table over its quasi-identifiers (QIs) and sensitive attributes has one
row per distinct combination of their values and a column of counts: the number of rows of the
table holding that combination (``groupBy(QIs + sensitive).count()`` on an engine that keeps the
rows elsewhere, :mod:`anon_dagster.engine`). Missing values are values of their own, as in the
classes of the rows. :func:`measure_frequencies` returns the same :class:`RiskMeasures` as
:func:`~anon_dagster.risk.measures.measure_risk` on the rows: every contract figure, records at
risk, the class-size histogram, l-diversity, t-closeness, δ-disclosure and β-likeness, the
journalist figures against a population or a sampling fraction, population uniqueness and the
generic utility.

How the figures stay the kernel's:

- the classes: the frequency rows are put into classes by the kernel
  (:meth:`EquivalenceClasses.from_frame` over the frequency rows), and a class's size is the sum of
  its rows' counts (:func:`frequency_classes`);
- the sensitive cells: each (class, value) count is the sum of the counts of the frequency rows
  holding it (several rows when there are several sensitive attributes), handed to the same
  distances and diversities (:class:`~anon_dagster.risk.sensitive.Cells`), which work on counts in
  integers;
- the population join, the prosecutor, journalist and marketer figures, population uniqueness and
  the utility are the kernel's functions of the class sizes.

The order of the classes. A few figures are float sums over classes (the mean prosecutor risk per
class, the marketer risk): their last bit depends on the order the classes are added in.
``measure_risk`` numbers classes in the order of the values' first appearance in the rows (a
categorical's own category order for a categorical column). With ``first_row`` (the position of
each frequency row's first row in the table, ``min`` of a row index) the frequency rows are taken
in that order, which gives every value the same code, so the classes come in the same order and
those sums are the same bits; ``categories`` gives a column the category order a pandas table
holds it in. Without them every figure is still exact but those sums may differ in the last bit.

Not measured from a frequency table (a DataError says so): the person-level figures (they need
each row's person), δ-presence, subgroup breakdowns, generalization loss and utility queries
against an original table (:func:`query_error_frequencies` gives a query's error from two
frequency tables).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError
from ..hierarchies import Hierarchy
from .breakdown import class_size_histogram
from .classes import EquivalenceClasses
from .kernel import group_keys
from .measures import sensitive_result, summarize_sensitive
from .population_figures import as_list as _as_list
from .population_figures import measure_population
from .population_figures import per_attribute as _per_attribute
from .reidentification import (
    check_sampling_fraction,
    prosecutor_figures,
)
from .result import DEFAULT_RISK_THRESHOLD, RiskMeasures, SensitiveResult
from .sensitive import Cells, CodedSensitive, code_sensitive
from .utility import QueryError, generic_utility, utility_query_error

COUNT_COLUMN = "count"

__all__ = [
    "COUNT_COLUMN", "frequency_classes", "frequency_counts", "frequency_table", "measure_frequencies",
    "query_error_frequencies",
]


def frequency_counts(freq: pd.DataFrame, counts: str = COUNT_COLUMN) -> np.ndarray:
    """The counts of a frequency table as int64, refused (DataError) when absent, not whole or < 1."""
    if counts not in freq.columns:
        raise DataError(f"the frequency table has no count column {counts!r} "
                        f"(columns: {', '.join(map(str, freq.columns))})")
    values = pd.to_numeric(freq[counts], errors="coerce").to_numpy(float, na_value=np.nan)
    bad = ~np.isfinite(values) | (values < 1) | (values != np.floor(np.nan_to_num(values)))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataError(f"frequency table: count column {counts!r} must hold whole numbers >= 1; "
                        f"row {row} has {freq[counts].iloc[row]!r}")
    return values.astype(np.int64)


def frequency_table(df: pd.DataFrame, columns: Sequence[str], counts: str = COUNT_COLUMN,
                    first_row: str | None = None) -> pd.DataFrame:
    """The frequency table of ``df`` over ``columns`` (missing values kept as values), computed
    with pandas: what an engine's ``groupBy(columns).count()`` returns, with ``first_row`` (when
    named) the position of each combination's first row. For tests and small tables."""
    columns = list(columns)
    plain = pd.DataFrame({c: (df[c].astype(object) if isinstance(df[c].dtype, pd.CategoricalDtype) else df[c])
                          for c in columns})
    plain = plain.reset_index(drop=True)
    plain["__position"] = np.arange(len(plain), dtype=np.int64)
    grouped = plain.groupby(columns, dropna=False, sort=False)["__position"]
    out = grouped.agg(["size", "min"]).reset_index()
    out = out.rename(columns={"size": counts, "min": first_row or "__first"})
    if first_row is None:
        out = out.drop(columns="__first")
    return out


def frequency_classes(freq: pd.DataFrame, qis: Sequence[str], weights: np.ndarray) -> EquivalenceClasses:
    """The equivalence classes of the table a frequency table counts.

    The frequency rows are put into classes by the kernel; ``row_class`` gives each *frequency
    row*'s class, ``sizes`` each class's size in rows of the table (the sum of its frequency rows'
    ``weights``). ``n_rows`` is the number of frequency rows, not of the table's rows: read the
    table's rows as ``sizes.sum()``. :meth:`~EquivalenceClasses.keys` gives one row per class.
    """
    base = EquivalenceClasses.from_frame(freq, qis)
    sizes = np.bincount(base.row_class, weights=weights, minlength=base.n_classes)
    sizes = np.rint(sizes).astype(np.int64)
    return EquivalenceClasses(base.qis, base.row_class, sizes, frame=base._frame)


def _ordered(freq: pd.DataFrame, columns: Sequence[str], first_row: str | None,
             categories: Mapping[str, Sequence[object]] | None) -> pd.DataFrame:
    """The frequency rows in the order of their first row, with the columns of ``categories`` as
    categoricals of those categories (see the module docstring)."""
    if first_row is not None:
        if first_row not in freq.columns:
            raise DataError(f"the frequency table has no column {first_row!r} (first rows)")
        freq = freq.sort_values(first_row, kind="stable")
    freq = freq.reset_index(drop=True)
    if categories:
        freq = freq.copy()
        for name, cats in categories.items():
            if name in columns:
                freq[name] = pd.Categorical(freq[name], categories=pd.Index(list(cats), dtype=object))
    return freq


def _sensitive(classes: EquivalenceClasses, coded: CodedSensitive, weights: np.ndarray,
               recursive_c: float | None, attribute_disclosure: bool) -> SensitiveResult:
    """One attribute's per-class figures from the frequency rows (``measure_risk``'s, from counts)."""
    n_values = max(coded.n_values, 1)
    sizes = classes.sizes
    key = classes.row_class.astype(np.int64) * n_values + coded.codes.astype(np.int64)
    uniq, _, cnt = group_keys(key, classes.n_classes * n_values, weights)
    total = np.bincount(coded.codes.astype(np.int64), weights=weights, minlength=n_values)
    cells = Cells.from_counts(sizes, uniq // n_values, uniq % n_values, cnt.astype(np.int64), n_values,
                              np.rint(total).astype(np.int64))
    return sensitive_result(sizes, classes.n_classes, coded, cells, recursive_c, attribute_disclosure)


def measure_frequencies(
    freq: pd.DataFrame,
    quasi_identifiers: str | Sequence[str],
    sensitive: str | Sequence[str] | None = None,
    population: pd.DataFrame | str | Any | None = None,
    sampling_fraction: float | None = None,
    count_column: str | None = None,
    *,
    counts: str = COUNT_COLUMN,
    first_row: str | None = None,
    categories: Mapping[str, Sequence[object]] | None = None,
    sensitive_kind: str | Mapping[str, str] | None = None,
    sensitive_order: Sequence[object] | Mapping[str, Sequence[object]] | None = None,
    sensitive_hierarchy: Hierarchy | Mapping[str, Hierarchy] | None = None,
    risk_threshold: float | None = None,
    recursive_c: float | None = None,
    suppressed: int = 0,
    k: int | None = None,
    uniqueness: bool = True,
    bootstrap: int = 200,
    seed: int = 0,
    population_source: str | None = None,
    population_qis: Sequence[str] | None = None,
    strict_population: bool = True,
    attribute_disclosure: bool = True,
    persons: str | None = None,
    **unsupported: Any,
) -> RiskMeasures:
    """:func:`~anon_dagster.risk.measures.measure_risk` of the table ``freq`` counts.

    ``freq`` has the QI and sensitive columns and ``counts`` (the rows holding each combination);
    ``first_row`` and ``categories`` order the classes as ``measure_risk`` orders the rows'
    (module docstring). The other arguments are ``measure_risk``'s, with the same meaning, checks
    and errors. ``persons`` names the column of ``freq`` holding each frequency row's person
    (the table then counts rows per person and combination; a missing person is a person of its
    own for each row the frequency row counts): the person-level figures
    (:func:`~anon_dagster.risk.person.person_figures`) are those of the rows. ``presence``, ``subgroup``, ``hierarchies``/``original`` and
    ``utility_queries`` need the rows: a DataError says so. ``equivalence_classes`` of the result
    is None (the classes' rows are frequency rows: see :func:`frequency_classes`).
    """
    for name, value in unsupported.items():
        if name in ("presence", "subgroup", "hierarchies", "original", "utility_queries"):
            if value is None or value is False or (isinstance(value, Sequence | Mapping) and not value):
                continue
            raise DataError(f"{name} cannot be measured from a frequency table: it needs the table's rows")
        raise TypeError(f"measure_frequencies() got an unexpected keyword argument {name!r}")
    qis = _as_list(quasi_identifiers)
    sens = _as_list(sensitive)
    if not qis:
        raise DataError("no quasi-identifiers given: name at least one QI column")
    columns = set(freq.columns)
    for col in [*qis, *sens]:
        if col not in columns:
            role = "quasi-identifier" if col in qis else "sensitive attribute"
            raise DataError(f"{role} {col!r} is not a column of the data")
    both = [c for c in sens if c in qis]
    if both:
        raise DataError(f"column {both[0]!r} is given both as quasi-identifier and as sensitive attribute")
    weights_all = frequency_counts(freq, counts) if len(freq) else np.zeros(0, dtype=np.int64)
    if len(freq) == 0 or int(weights_all.sum()) == 0:
        raise DataError("the table is empty: there are no rows to measure")
    if sampling_fraction is not None:
        sampling_fraction = check_sampling_fraction(sampling_fraction)
    if count_column is not None and population is None:
        raise DataError(f"count column {count_column!r} given without a population")
    threshold = DEFAULT_RISK_THRESHOLD if risk_threshold is None else float(risk_threshold)
    if recursive_c is not None and not recursive_c > 0:
        raise DataError(f"recursive (c, l)-diversity needs c > 0, got {recursive_c!r}")

    freq = _ordered(freq, [*qis, *sens], first_row, categories)
    weights = frequency_counts(freq, counts)
    fweights = weights.astype(np.float64)
    ec = frequency_classes(freq, qis, fweights)
    sizes = ec.sizes
    n = int(sizes.sum())
    pros = prosecutor_figures(sizes, n, threshold)
    extras: dict[str, Any] = {
        "quasi_identifiers": qis,
        "sensitive": sens or None,
        "uniques": int((sizes == 1).sum()),
        "prosecutor_avg_per_class": pros["prosecutor_avg_per_class"],
        "records_at_risk": pros["records_at_risk"],
        "risk_threshold": threshold,
        "class_size_histogram": class_size_histogram(sizes),
    }
    measures = RiskMeasures(
        rows=n, classes=ec.n_classes, k=int(sizes.min()),
        uniques_fraction=float(sizes[sizes == 1].sum() / n),
        prosecutor_max=pros["prosecutor_max"], prosecutor_avg=pros["prosecutor_avg"],
        extras=extras, equivalence_classes=None, risk_threshold=threshold,
    )

    # ----- attribute disclosure ------------------------------------------------------------
    coded_columns: list[tuple[np.ndarray, int]] = []  # shared with the person-level figures
    for name in sens:
        coded = code_sensitive(
            freq[name], name,
            kind=_per_attribute(sensitive_kind, name) or "nominal",
            order=_per_attribute(sensitive_order, name),
            hierarchy=_per_attribute(sensitive_hierarchy, name),
        )
        measures.sensitive_results.append(_sensitive(ec, coded, fweights, recursive_c, attribute_disclosure))
        coded_columns.append((coded.codes, coded.n_values))
    if sens:
        summarize_sensitive(measures, extras, recursive_c, attribute_disclosure)

    # ----- population: journalist, marketer, k-map, uniqueness -----------------------------
    measure_population(
        measures, extras, ec, qis=qis, threshold=threshold, population=population,
        population_qis=population_qis, population_source=population_source, count_column=count_column,
        strict_population=strict_population, sampling_fraction=sampling_fraction, uniqueness=uniqueness,
        bootstrap=bootstrap, seed=seed, coarse_classes=lambda pq: frequency_classes(freq, pq, fweights))

    # ----- utility -------------------------------------------------------------------------
    extras.update(generic_utility(SimpleNamespace(n_rows=n, sizes=sizes), suppressed=suppressed, k=k))

    # ----- person level --------------------------------------------------------------------
    if persons is not None:
        from .person import person_figures, split_unlinked

        if not isinstance(persons, str):  # each row's person: the rows, which a frequency table is not
            raise DataError("persons cannot be measured from a frequency table: it needs the table's rows "
                            "(name the frequency table's column of persons instead)")
        if persons not in columns:
            raise DataError(f"the frequency table has no column {persons!r} (persons)")
        at, person_weights = split_unlinked(freq[persons], weights)
        rows = EquivalenceClasses(ec.qis, ec.row_class[at], ec.sizes)
        extras["person"] = person_figures(
            rows, freq[persons].iloc[at].reset_index(drop=True), [(c[at], m) for c, m in coded_columns],
            population_sizes=measures.population_sizes if population is not None else None,
            weights=person_weights)
    return measures


def query_error_frequencies(original: pd.DataFrame, anonymized: pd.DataFrame,
                            group_by: Sequence[str] | str, target: str,
                            counts: str = COUNT_COLUMN) -> QueryError:
    """:func:`~anon_dagster.risk.utility.utility_query_error` from two frequency tables.

    ``original`` and ``anonymized`` count the rows of each table per combination of ``group_by``
    and ``target`` (``counts``). The labels, the prevalences (``100 * count / rows of the
    group``, the same integers divided) and the errors are those of the rows; the table has one
    row per (group, target value), largest error first.
    """
    w_o = frequency_counts(original, counts) if len(original) else np.zeros(0, dtype=np.int64)
    w_a = frequency_counts(anonymized, counts) if len(anonymized) else np.zeros(0, dtype=np.int64)
    return utility_query_error(original.reset_index(drop=True), anonymized.reset_index(drop=True),
                               group_by, target, weights=(w_o, w_a))
