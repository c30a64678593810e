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
from .kernel import distinct_sizes

# Class-size bins of the histogram: (label, smallest size, largest size or None)
HISTOGRAM_BINS = (
    ("1", 1, 1), ("2", 2, 2), ("3-4", 3, 4), ("5-9", 5, 9), ("10-19", 10, 19),
    ("20-49", 20, 49), ("50-99", 50, 99), ("100-999", 100, 999), ("1000+", 1000, None),
)


def class_size_histogram(sizes: np.ndarray) -> list[dict[str, Any]]:
    """Classes and rows per class-size bin (bins of :data:`HISTOGRAM_BINS`, empty ones too)."""
    sizes = np.asarray(sizes)
    if sizes.dtype.kind not in "iu":  # sizes that are not integers: bin by bin
        out = []
        for label, low, high in HISTOGRAM_BINS:
            mask = (sizes >= low) & (sizes <= (high if high is not None else np.iinfo(np.int64).max))
            out.append({"sizes": label, "classes": int(mask.sum()), "rows": int(sizes[mask].sum())})
        return out
    # over the distinct sizes, ascending: a bin is a run of them (each bin starts after the
    # largest size of the one before), its classes and rows differences of running sums
    size, count = distinct_sizes(sizes)
    size = size.astype(np.int64, copy=False)
    classes = np.concatenate([[0], np.cumsum(count)])
    rows = np.concatenate([[0], np.cumsum(size * count)])
    starts = np.searchsorted(size, [low for _, low, _ in HISTOGRAM_BINS], side="left")
    ends = [*starts[1:], len(size)]
    return [{"sizes": label, "classes": int(classes[b] - classes[a]), "rows": int(rows[b] - rows[a])}
            for (label, _, _), a, b in zip(HISTOGRAM_BINS, starts, ends, strict=True)]


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
    n_classes = ec.n_classes
    rc = ec.row_class
    class_risk = 1.0 / ec.sizes
    pair = codes * n_classes + rc
    if n_groups * n_classes <= 2 * len(pair) + 65536:
        # a small (group, class) space: each group's rows per class, counted directly. A
        # group's worst figure is the worst over the classes it touches, and its share of rows
        # in some classes an integer count: both read off the counts, not off the rows.
        counts = np.bincount(pair, minlength=n_groups * n_classes).reshape(n_groups, n_classes)
        touched = counts > 0
        rows = counts.sum(axis=1)
        classes_touched = touched.sum(axis=1)

        def worst(per_class: np.ndarray, fn: np.ufunc, start: float) -> np.ndarray:
            return fn.reduce(np.broadcast_to(np.asarray(per_class, dtype=float), touched.shape),
                             axis=1, where=touched, initial=start)

        def share(in_class: np.ndarray) -> np.ndarray:
            return (counts @ in_class.astype(np.int64)) / np.maximum(rows, 1)
    else:
        rows = np.bincount(codes, minlength=n_groups)
        classes_touched = np.bincount(np.unique(pair) // n_classes, minlength=n_groups)

        def worst(per_class: np.ndarray, fn: np.ufunc, start: float) -> np.ndarray:
            out = np.full(n_groups, start, dtype=float)
            fn.at(out, codes, np.asarray(per_class, dtype=float)[rc])
            return out

        def share(in_class: np.ndarray) -> np.ndarray:
            return mean(in_class.astype(float))
    del pair

    def mean(per_class: np.ndarray) -> np.ndarray:
        """The mean over each group's rows of a per-class figure (summed row by row)."""
        return np.bincount(codes, weights=per_class[rc], minlength=n_groups) / np.maximum(rows, 1)

    table = {
        "rows": rows,
        "classes": classes_touched,
        "k": worst(ec.sizes, np.minimum, np.inf),
        "uniques_fraction": share(ec.sizes == 1),
        "prosecutor_max": worst(class_risk, np.maximum, 0.0),
        "prosecutor_avg": mean(class_risk),
        "records_at_risk": share(class_risk > risk_threshold),
    }
    if population_sizes is not None:
        class_jrisk = 1.0 / population_sizes
        table["journalist_max"] = worst(class_jrisk, np.maximum, 0.0)
        table["marketer"] = mean(class_jrisk)
    if sensitive_results:
        table["l_distinct"] = worst(np.min([r.l_distinct for r in sensitive_results], axis=0),
                                    np.minimum, np.inf)
        table["l_entropy"] = np.exp(worst(np.min([r.entropy for r in sensitive_results], axis=0),
                                          np.minimum, np.inf))
        table["t_closeness"] = worst(np.max([r.t for r in sensitive_results], axis=0), np.maximum, 0.0)
    # the groups holding rows, by k then rows (a stable sort: ties keep the order of the labels)
    held = np.flatnonzero(rows > 0)
    out = {col: values[held].astype(np.int64) if col in ("k", "l_distinct") else values[held]
           for col, values in table.items()}
    order = np.lexsort((out["rows"], out["k"]))
    return pd.DataFrame({col: values[order] for col, values in out.items()},
                        index=pd.Index(labels, name=name)[held[order]])
