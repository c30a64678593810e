"""Figures per group of records: the class-size histogram and subgroup breakdowns.

Both are read off the equivalence classes of the whole table: a subgroup's figures are the
risks of its own rows in those classes, not of classes formed within the subgroup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError
from .classes import EquivalenceClasses
from .coding import FactorizeCache, factorize_values

# Class-size bins of the histogram: (label, smallest size, largest size or None)
HISTOGRAM_BINS = (
    ("1", 1, 1), ("2", 2, 2), ("3-4", 3, 4), ("5-9", 5, 9), ("10-19", 10, 19),
    ("20-49", 20, 49), ("50-99", 50, 99), ("100-999", 100, 999), ("1000+", 1000, None),
)


def class_size_histogram(sizes: np.ndarray) -> list[dict[str, Any]]:
    """Classes and rows per class-size bin (bins of :data:`HISTOGRAM_BINS`, empty ones too)."""
    out = []
    for label, low, high in HISTOGRAM_BINS:
        mask = (sizes >= low) & (sizes <= (high if high is not None else np.iinfo(np.int64).max))
        out.append({"sizes": label, "classes": int(mask.sum()), "rows": int(sizes[mask].sum())})
    return out


def subgroup_breakdown(ec: EquivalenceClasses, groups: pd.Series | np.ndarray | Sequence[object],
                       name: str = "group", cache: FactorizeCache | None = None, *,
                       risk_threshold: float, population_sizes: np.ndarray | None = None,
                       sensitive_results: Sequence[Any] = ()) -> pd.DataFrame:
    """Every per-record figure aggregated per subgroup (one group value per row, by position).

    ``ec`` are the classes of the whole table, ``population_sizes`` their ``F_c`` when known,
    ``sensitive_results`` the per-class ``l_distinct``, ``entropy`` and ``t`` of each sensitive
    attribute (:class:`~anon_dagster.risk.result.SensitiveResult`). The figures are those of
    :meth:`~anon_dagster.risk.result.RiskMeasures.breakdown`.
    """
    if not isinstance(groups, pd.Series):
        groups = pd.Series(np.asarray(groups, dtype=object))
    if len(groups) != ec.n_rows:
        raise DataError(f"breakdown: {len(groups)} group values for {ec.n_rows} rows")
    codes, uniques = factorize_values(groups, cache)
    labels = [*list(uniques), None]
    codes = np.where(codes < 0, len(uniques), codes).astype(np.int64)
    n_groups = len(labels)
    rc = ec.row_class
    size = ec.sizes[rc]
    risk = 1.0 / size
    rows = np.bincount(codes, minlength=n_groups)

    def worst(values: np.ndarray, fn: np.ufunc, start: float) -> np.ndarray:
        out = np.full(n_groups, start, dtype=float)
        fn.at(out, codes, values)
        return out

    def mean(values: np.ndarray) -> np.ndarray:
        return np.bincount(codes, weights=values, minlength=n_groups) / np.maximum(rows, 1)

    pair = codes * ec.n_classes + rc
    if n_groups * ec.n_classes <= 2 * len(pair) + 65536:
        # small (group, class) space: mark the pairs present instead of sorting them
        seen = np.zeros(n_groups * ec.n_classes, dtype=bool)
        seen[pair] = True
        classes_touched = seen.reshape(n_groups, ec.n_classes).sum(axis=1)
    else:
        classes_touched = np.bincount(np.unique(pair) // ec.n_classes, minlength=n_groups)
    table = {
        "rows": rows,
        "classes": classes_touched,
        "k": worst(size.astype(float), np.minimum, np.inf),
        "uniques_fraction": mean((size == 1).astype(float)),
        "prosecutor_max": worst(risk, np.maximum, 0.0),
        "prosecutor_avg": mean(risk),
        "records_at_risk": mean((risk > risk_threshold).astype(float)),
    }
    if population_sizes is not None:
        jrisk = 1.0 / population_sizes[rc]
        table["journalist_max"] = worst(jrisk, np.maximum, 0.0)
        table["marketer"] = mean(jrisk)
    if sensitive_results:
        lvals = np.min([r.l_distinct for r in sensitive_results], axis=0)[rc]
        hvals = np.min([r.entropy for r in sensitive_results], axis=0)[rc]
        tvals = np.max([r.t for r in sensitive_results], axis=0)[rc]
        table["l_distinct"] = worst(lvals.astype(float), np.minimum, np.inf)
        table["l_entropy"] = np.exp(worst(hvals, np.minimum, np.inf))
        table["t_closeness"] = worst(tvals, np.maximum, 0.0)
    out = pd.DataFrame(table, index=pd.Index(labels, name=name))
    out = out[out["rows"] > 0]
    for col in ("k", "l_distinct"):
        if col in out:
            out[col] = out[col].astype(np.int64)
    return out.sort_values(["k", "rows"], kind="stable")
