"""``measure_risk``: every risk and utility figure of a table from one computation of its classes.

The equivalence classes (:class:`~anon_dagster.risk.classes.EquivalenceClasses`) are computed
once; re-identification risk, l-diversity, t-closeness, population figures, utility and subgroup
breakdowns are all derived from them. The result is a :class:`~anon_dagster.risk.result.RiskMeasures`,
whose metric names are a contract (:data:`~anon_dagster.risk.result.CONTRACT_KEYS`); further
keys are listed in docs/risk.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError
from ..hierarchies import Hierarchy
from .breakdown import HISTOGRAM_BINS, class_size_histogram
from .classes import EquivalenceClasses
from .closeness import t_closeness, total_variation
from .coding import FactorizeCache
from .population_figures import as_list as _as_list
from .population_figures import measure_population
from .population_figures import per_attribute as _per_attribute
from .reidentification import (
    check_sampling_fraction,
    prosecutor_figures,
)
from .result import (
    CONTRACT_KEYS,
    DEFAULT_RISK_THRESHOLD,
    RiskMeasures,
    SensitiveResult,
)
from .sensitive import CodedSensitive, class_value_cells, code_sensitive, diversity, recursive_l
from .utility import generalization_utility, generic_utility, utility_query_error

__all__ = [
    "CONTRACT_KEYS", "DEFAULT_RISK_THRESHOLD", "HISTOGRAM_BINS", "RiskMeasures", "SensitiveResult",
    "class_size_histogram", "measure_risk",
]


def summarize_sensitive(measures: RiskMeasures, extras: dict[str, Any], recursive_c: float | None,
                        attribute_disclosure: bool) -> None:
    """The table's l, t and attribute-disclosure figures from its sensitive attributes' results:
    the worst over them (smallest l, largest t and disclosure), each attribute's own figures
    under ``sensitive_attributes`` when there are several. Shared by :func:`measure_risk` and
    the frequency-table measurement, so both state one answer."""
    summaries = {r.name: r.summary(recursive_c) for r in measures.sensitive_results}
    measures.l_distinct = min(s["l_distinct"] for s in summaries.values())
    measures.l_entropy = min(s["l_entropy"] for s in summaries.values())
    worst_t = max(summaries.values(), key=lambda s: s["t_closeness"])
    measures.t_closeness = worst_t["t_closeness"]
    extras["t_closeness_distance"] = worst_t["t_closeness_distance"]
    extras["t_closeness_tv"] = max(s["t_closeness_tv"] for s in summaries.values())
    if recursive_c is not None:
        extras["l_recursive"] = min(s["l_recursive"] for s in summaries.values())
        extras["recursive_c"] = float(recursive_c)
    if attribute_disclosure:
        for key in ("delta_disclosure", "beta_likeness", "beta_likeness_enhanced"):
            values = [s[key] for s in summaries.values() if s.get(key) is not None]
            extras[key] = max(values) if values else None
    if len(summaries) > 1:
        extras["sensitive_attributes"] = summaries


def measure_risk(
    df: pd.DataFrame,
    quasi_identifiers: str | Sequence[str],
    sensitive: str | Sequence[str] | None = None,
    population: pd.DataFrame | str | Path | None = None,
    sampling_fraction: float | None = None,
    count_column: str | None = None,
    *,
    sensitive_kind: str | Mapping[str, str] | None = None,
    sensitive_order: Sequence[object] | Mapping[str, Sequence[object]] | None = None,
    sensitive_hierarchy: Hierarchy | Mapping[str, Hierarchy] | None = None,
    risk_threshold: float | None = None,
    recursive_c: float | None = None,
    subgroup: str | Sequence[str] | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    original: pd.DataFrame | None = None,
    suppressed: int = 0,
    utility_queries: Sequence[Any] | None = None,
    k: int | None = None,
    uniqueness: bool = True,
    bootstrap: int = 200,
    seed: int = 0,
    population_source: str | None = None,
    population_qis: Sequence[str] | None = None,
    strict_population: bool = True,
    attribute_disclosure: bool = True,
    presence: bool = False,
    persons: pd.Series | None = None,
) -> RiskMeasures:
    """Measure the re-identification risk, attribute disclosure and utility of ``df``.

    Args:
        df: the table as it would be published (any index; rows are taken by position).
        quasi_identifiers: QI column names (a list, or one comma-separated string).
        sensitive: sensitive column(s); l-diversity and t-closeness are ``None`` without one.
            With several, the contract figures are the worst over them and
            ``extras["sensitive_attributes"]`` has each one's.
        population: the population the table was drawn from (DataFrame or csv/parquet path),
            microdata or, with ``count_column``, a frequency table; gives journalist/marketer
            risk and k-map.
        sampling_fraction: ``f`` in (0, 1]; without a population, journalist/marketer use the
            estimate ``F_c = n_c / f``; population uniqueness is estimated at ``f`` (or at
            ``rows / population size`` when only a population is given).
        count_column: the population's column of counts.
        sensitive_kind: ``nominal`` (total variation), ``ordinal`` or ``numeric`` (ordered EMD),
            per attribute with a mapping; a ``sensitive_hierarchy`` selects hierarchical EMD.
        sensitive_order: the order of an ordinal attribute's values.
        risk_threshold: records whose risk exceeds it are "at risk" (default 0.2).
        recursive_c: ``c`` of recursive (c, l)-diversity; reports ``l_recursive``.
        subgroup: column(s) to break every per-record figure down by.
        hierarchies, original, suppressed: generalization loss/precision of ``df`` (a published
            table) against ``original``; ``suppressed`` rows count in loss and discernibility.
        utility_queries: ``(name, group_by, target)`` tuples, mappings or spec objects, whose
            error against ``original`` is reported in percentage points.
        k: the anonymization's k, for the normalized AECS.
        uniqueness, bootstrap, seed: population-uniqueness estimation and its class bootstrap
            (``bootstrap`` replicates for the Poisson-Gamma, Zayatz and SNB intervals, 0 for
            none; the default 200 costs about 3 ms on Adult's 12,458 classes, as much as every
            model's point estimate: the cost follows the distinct class sizes, not the rows).
        population_qis: join the population on these QIs only (a subset of the QIs, for a
            population that lacks event attributes such as a date). The journalist figures are
            then those of the coarser classes, which *understate* the risk; reported as
            ``extras["population_qis"]``.
        attribute_disclosure: also report δ-disclosure and β-likeness of each sensitive
            attribute (:mod:`anon_dagster.risk.attribute`).
        presence: also report δ-presence of ``df`` as a subset of ``population``
            (:mod:`anon_dagster.risk.presence`).
        persons: each row's person (by position), when the published rows of one person are
            linked (a published pseudonym): the person-level figures go to
            ``extras["person"]`` (:mod:`anon_dagster.risk.person`).
        strict_population: when False, a class with more rows than people in the population
            gets ``F_c = n_c`` instead of an error (rows that are events of one person).

    Raises DataError (a UserError) naming the column or value for bad input: empty table, no
    QI, a missing column, a column both QI and sensitive, ``f`` outside (0, 1], a population
    lacking some sample class.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"measure_risk needs a pandas DataFrame, got {type(df).__name__}")
    qis = _as_list(quasi_identifiers)
    sens = _as_list(sensitive)
    if not qis:
        raise DataError("no quasi-identifiers given: name at least one QI column")
    if len(df) == 0:
        raise DataError("the table is empty: there are no rows to measure")
    columns = set(df.columns)
    for col in [*qis, *sens]:
        if col not in columns:
            role = "quasi-identifier" if col in qis else "sensitive attribute"
            raise DataError(f"{role} {col!r} is not a column of the data")
    both = [c for c in sens if c in qis]
    if both:
        raise DataError(f"column {both[0]!r} is given both as quasi-identifier and as sensitive attribute")
    if sampling_fraction is not None:
        sampling_fraction = check_sampling_fraction(sampling_fraction)
    if count_column is not None and population is None:
        raise DataError(f"count column {count_column!r} given without a population")
    threshold = DEFAULT_RISK_THRESHOLD if risk_threshold is None else float(risk_threshold)
    if recursive_c is not None and not recursive_c > 0:
        raise DataError(f"recursive (c, l)-diversity needs c > 0, got {recursive_c!r}")

    # Columns coded more than once in this call (QIs joined to a population, generalized
    # columns, query and subgroup columns) keep their factorization; others are not held, so
    # a plain measurement adds no memory.
    groups = _as_list(subgroup)
    keep: set[object] = set(groups)
    if population is not None:
        keep.update(qis)
    if hierarchies and original is not None:
        keep.update(hierarchies)
    for q in utility_queries or ():
        keep.update(_query_columns(q))
    cache = FactorizeCache(keep)
    ec = EquivalenceClasses.from_frame(df, qis, cache=cache)
    sizes = ec.sizes
    n = ec.n_rows
    k_value = int(sizes.min())
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
        rows=n, classes=ec.n_classes, k=k_value,
        uniques_fraction=float(sizes[sizes == 1].sum() / n),
        prosecutor_max=pros["prosecutor_max"], prosecutor_avg=pros["prosecutor_avg"],
        extras=extras, equivalence_classes=ec, risk_threshold=threshold,
    )

    # ----- attribute disclosure ------------------------------------------------------------
    coded_columns: list[tuple[np.ndarray, int]] = []  # shared with the person-level figures
    for name in sens:
        coded = code_sensitive(
            df[name], name,
            kind=_per_attribute(sensitive_kind, name) or "nominal",
            order=_per_attribute(sensitive_order, name),
            hierarchy=_per_attribute(sensitive_hierarchy, name),
        )
        measures.sensitive_results.append(_sensitive(ec, coded, recursive_c, attribute_disclosure))
        coded_columns.append((coded.codes, coded.n_values))
    if sens:
        summarize_sensitive(measures, extras, recursive_c, attribute_disclosure)

    # ----- population: journalist, marketer, k-map, uniqueness -----------------------------
    population_frame = measure_population(
        measures, extras, ec, qis=qis, threshold=threshold, population=population,
        population_qis=population_qis, population_source=population_source, count_column=count_column,
        strict_population=strict_population, sampling_fraction=sampling_fraction, uniqueness=uniqueness,
        bootstrap=bootstrap, seed=seed, cache=cache,
        coarse_classes=lambda pq: EquivalenceClasses.from_frame(df, pq, cache=cache))
    if presence and population_frame is not None:
        from .presence import delta_presence

        extras["delta_presence"] = delta_presence(
            population_frame, df, extras.get("population_qis", qis), count_column).to_dict()

    # ----- utility -------------------------------------------------------------------------
    extras.update(generic_utility(ec, suppressed=suppressed, k=k))
    if hierarchies and original is not None:
        extras.update(generalization_utility(df, original, hierarchies, suppressed=suppressed,
                                             cache=cache))
    if utility_queries:
        if original is None:
            raise DataError("utility queries need the original table to compare with")
        extras["utility_queries"] = _queries(original, df, utility_queries, cache=cache)

    # ----- person level --------------------------------------------------------------------
    if persons is not None:
        from .person import person_figures

        extras["person"] = person_figures(ec, pd.Series(persons).reset_index(drop=True), coded_columns,
                                          population_sizes=measures.population_sizes if population is not None else None)

    # ----- breakdowns ----------------------------------------------------------------------
    if groups:
        extras["subgroups"] = {}
        for g in groups:
            if g not in columns:
                raise DataError(f"subgroup column {g!r} is not a column of the data")
            table = measures.breakdown(df[g], name=g, cache=cache)
            extras["subgroups"][g] = [
                {"value": value, **row} for value, row in zip(table.index, table.to_dict("records"), strict=True)
            ]
    return measures


def _sensitive(ec: EquivalenceClasses, coded: CodedSensitive, recursive_c: float | None,
               attribute_disclosure: bool) -> SensitiveResult:
    return sensitive_result(ec, ec.n_classes, coded, class_value_cells(ec, coded.codes, coded.n_values),
                            recursive_c, attribute_disclosure)


def sensitive_result(classes: Any, n_classes: int, coded: CodedSensitive, cells: Any, recursive_c: float | None,
                     attribute_disclosure: bool) -> SensitiveResult:
    """One sensitive attribute's per-class figures from its (class, value) ``cells``: distinct
    values and entropy, t and the distance it uses, total variation, recursive (c,l) and, with
    ``attribute_disclosure``, delta-disclosure and beta-likeness. ``classes`` gives the class
    sizes (:class:`EquivalenceClasses` or their sizes): the rows' and the frequency table's path
    share this one computation."""
    div = diversity(classes, cells)
    t, distance = t_closeness(classes, coded, cells)
    tv = t if distance == "total_variation" else total_variation(classes, cells)
    rec = recursive_l(classes, cells, recursive_c) if recursive_c is not None else None
    disclosure: dict[str, Any] = {}
    if attribute_disclosure:
        from scipy.sparse import csr_matrix

        from .attribute import beta_likeness, delta_disclosure

        rows = np.concatenate([cells.cls, cells.alone_cls])
        cols = np.concatenate([cells.val, cells.alone_val])
        data = np.concatenate([cells.cnt, np.ones(len(cells.alone_cls), dtype=np.int64)])
        matrix = csr_matrix((data, (rows, cols)), shape=(n_classes, coded.n_values))
        d = delta_disclosure(matrix)
        b = beta_likeness(matrix)
        disclosure = {
            "delta_disclosure": d.delta,
            "beta_likeness": b.basic,
            "beta_likeness_enhanced": b.enhanced if math.isfinite(b.enhanced) else None,
        }
    return SensitiveResult(coded.name, div.l_distinct, div.entropy, t, distance, tv, rec, disclosure)


def _query_fields(q: Any, i: int) -> tuple[str, Any, str, float | None]:
    """``(name, group_by, target, limit)`` of a query given as mapping, tuple or spec object."""
    if isinstance(q, Mapping):
        return q.get("name", f"query_{i}"), q["group_by"], q["target"], q.get("max_error_points")
    if isinstance(q, tuple | list):
        return q[0], q[1], q[2], (q[3] if len(q) > 3 else None)
    return q.name, q.group_by, q.target, getattr(q, "max_error_points", None)


def _query_columns(q: Any) -> list[str]:
    try:
        _, group_by, target, _ = _query_fields(q, 0)
    except (KeyError, IndexError, AttributeError, TypeError):
        return []  # malformed: reported when the query is evaluated
    return [*_as_list(group_by), target]


def _queries(original: pd.DataFrame, anonymized: pd.DataFrame, queries: Sequence[Any],
             cache: FactorizeCache | None = None) -> dict[str, Any]:
    out = {}
    for i, q in enumerate(queries):
        name, group_by, target, limit = _query_fields(q, i)
        result = utility_query_error(original, anonymized, group_by, target, cache=cache)
        worst = result.table.iloc[0].to_dict() if len(result.table) else {}
        out[name] = {
            "group_by": _as_list(group_by), "target": target,
            "max_error_points": result.max_error_points,
            "max_error_points_allowed": limit,
            "worst": worst,
            "groups_missing_in_anonymized": int(
                result.table.drop_duplicates(_as_list(group_by))["missing_in_anonymized"].sum()
            ),
        }
    return out
