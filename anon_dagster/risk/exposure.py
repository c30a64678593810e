"""Where a table's small classes come from, told without showing anyone.

A reviewer of a refused release needs to know *why* classes are small, but the values of a
class smaller than k are the quasi-identifiers of fewer than k people: showing them (in check
metadata, a log line or an error) would disclose exactly those people. The figures here give
sizes, counts and per-QI contributions instead:

- the *small classes* at threshold k: classes of size s < k, counted by size (``size``,
  ``classes``, ``rows``);
- the *contribution* of a quasi-identifier q: the rows in classes smaller than k once q is
  left out of the key (every other QI as published). A QI whose removal brings the rows below
  k from R to R_q contributes ``R - R_q`` rows; the QI with the largest contribution is the
  one to generalize further.

Both are computed from the table's equivalence classes (one row per class: its QI values and
size), never from the rows again.

For each sensitive attribute, the classes that decide its attribute-disclosure figures, again
without their QI values (:class:`SensitiveClasses`):

- the *most distant* classes: the largest t-closeness distances to the table's distribution, in
  decreasing order (the first is the table's ``t_closeness``), each with its size and its
  sensitive distribution beside the table's, as shares per value. The distances are the
  measurement's own (:func:`~anon_dagster.risk.closeness.t_closeness`, as the gate computes
  them); the shares are those of the values as published. An attribute with more than
  :data:`VALUE_COLUMNS` values shows the values where the listed classes differ most from the
  table (the largest sum of ``|q_cv - p_v|``) and the rest as one share, ``other values``;
- the *least diverse* classes: the fewest distinct values (then the lowest entropy), each with
  its size, its entropy l (``exp H``) and the share of its most frequent value, never which value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..hierarchies import _as_label
from .classes import EquivalenceClasses

# classes listed per attribute; value columns shown (the rest summed as OTHER_VALUES)
CLASSES_LISTED = 10
VALUE_COLUMNS = 20
OTHER_VALUES = "other values"


@dataclass
class SensitiveClasses:
    """The classes deciding one sensitive attribute's figures (see the module docstring).

    ``values`` are the value labels shown, in the order shown (``other values`` last when the
    attribute has more than :data:`VALUE_COLUMNS`); ``table_shares`` the table's share of each;
    ``most_distant`` ``{distance, size, shares}`` per class, decreasing distance;
    ``least_diverse`` ``{distinct_values, l_entropy, largest_share, size}`` per class, fewest
    distinct values first, and ``lowest_entropy`` the same, lowest entropy first. ``t_closeness``,
    ``l_distinct`` and ``l_entropy`` are the table's figures over these (equivalence) classes.
    """

    attribute: str
    distance: str
    classes: int
    n_values: int
    t_closeness: float
    l_distinct: int
    l_entropy: float
    values: list[str] = field(default_factory=list)
    table_shares: dict[str, float] = field(default_factory=dict)
    most_distant: list[dict[str, Any]] = field(default_factory=list)
    least_diverse: list[dict[str, Any]] = field(default_factory=list)
    lowest_entropy: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"attribute": self.attribute, "distance": self.distance, "classes": self.classes,
                "n_values": self.n_values, "t_closeness": self.t_closeness, "l_distinct": self.l_distinct,
                "l_entropy": self.l_entropy, "values": self.values, "table_shares": self.table_shares,
                "most_distant": self.most_distant, "least_diverse": self.least_diverse,
                "lowest_entropy": self.lowest_entropy}


@dataclass
class SmallClasses:
    """The classes below ``k`` and each QI's contribution to them (see the module docstring),
    with the classes deciding each sensitive attribute's figures when they were measured."""

    k: int
    rows: int
    classes_below_k: int
    rows_below_k: int
    by_size: list[dict[str, int]] = field(default_factory=list)  # {size, classes, rows}, s < k
    contributions: list[dict[str, Any]] = field(default_factory=list)  # {qi, rows_below_k_without, contribution}
    sensitive: list[SensitiveClasses] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "rows": self.rows, "classes_below_k": self.classes_below_k,
                "rows_below_k": self.rows_below_k, "by_size": self.by_size, "contributions": self.contributions,
                "sensitive": [s.to_dict() for s in self.sensitive]}


def _rows_below(keys: pd.DataFrame, sizes: np.ndarray, columns: list[str], k: int) -> int:
    """Rows in classes smaller than k when the classes are keyed on ``columns`` only."""
    if not columns:
        total = int(sizes.sum())
        return total if total < k else 0
    merged = pd.Series(sizes).groupby([keys[c] for c in columns], sort=False, dropna=False).sum().to_numpy()
    return int(merged[merged < k].sum())


def _class_counts(classes: EquivalenceClasses, codes: np.ndarray, n_values: int, listed: np.ndarray) -> np.ndarray:
    """The value counts (``len(listed)`` × ``n_values``) of the classes ``listed``."""
    position = np.full(classes.n_classes, -1, dtype=np.int64)
    position[listed] = np.arange(len(listed))
    row = position[classes.row_class]
    keep = row >= 0
    flat = np.bincount(row[keep] * n_values + codes[keep], minlength=len(listed) * n_values)
    return flat.reshape(len(listed), n_values)


def _shown_values(labels: list[str], table: np.ndarray, listed: np.ndarray) -> tuple[list[int], bool]:
    """The value codes shown as columns, in order, and whether the others are summed."""
    n = len(labels)
    chosen, rest = list(range(n)), False
    if n > VALUE_COLUMNS:  # where the listed classes differ most from the table
        gap = np.abs(listed - table).sum(axis=0) if len(listed) else table
        chosen = [int(i) for i in np.lexsort((-table, -gap))[:VALUE_COLUMNS - 1]]
        return chosen, True  # where they differ most first, the others summed
    numeric = pd.to_numeric(pd.Series([labels[i] for i in chosen], dtype=object), errors="coerce")
    if len(chosen) and not numeric.isna().any():  # numbers in their order
        return [chosen[i] for i in np.argsort(numeric.to_numpy(float), kind="stable")], rest
    return [chosen[i] for i in np.argsort(-table[chosen], kind="stable")], rest  # the most frequent first


def _shares(row: np.ndarray, chosen: list[int], labels: list[str], rest: bool) -> dict[str, float]:
    out = {labels[i]: float(row[i]) for i in chosen}
    if rest:
        out[OTHER_VALUES] = float(max(0.0, 1.0 - sum(out.values())))
    return out


def sensitive_classes(classes: EquivalenceClasses, result: Any, values: pd.Series,
                      limit: int = CLASSES_LISTED) -> SensitiveClasses:
    """The most distant and the least diverse classes of one sensitive attribute.

    ``result`` is the attribute's per-class figures as measured
    (:class:`~anon_dagster.risk.result.SensitiveResult`: ``t`` from
    :func:`~anon_dagster.risk.closeness.t_closeness`, ``l_distinct`` and ``entropy``), ``values``
    its column in the measured table (rows by position, as ``classes.row_class``).
    """
    t = np.asarray(result.t, dtype=float)
    distinct = np.asarray(result.l_distinct)
    entropy = np.asarray(result.entropy, dtype=float)
    sizes = classes.sizes.astype(np.int64)
    codes, uniques = pd.factorize(pd.Series(values).reset_index(drop=True), use_na_sentinel=True)
    labels = [_as_label(v) for v in uniques]
    if len(codes) and codes.min() < 0:  # missing values are a value of their own
        codes = np.where(codes < 0, len(labels), codes)
        labels.append(_as_label(None))
    n_values = max(len(labels), 1)
    table = np.bincount(codes, minlength=n_values) / max(len(codes), 1)

    far = np.lexsort((-sizes, -t))[:limit]  # largest distance first; larger classes first on ties
    few = np.lexsort((-sizes, entropy, distinct))[:limit]
    flat = np.lexsort((-sizes, distinct, entropy))[:limit]
    far_counts = _class_counts(classes, codes, n_values, far) / sizes[far, None]
    chosen, rest = _shown_values(labels, table, far_counts)

    def diverse(listed: np.ndarray) -> list[dict[str, Any]]:
        largest = _class_counts(classes, codes, n_values, listed).max(axis=1, initial=0)
        return [{"distinct_values": int(distinct[c]), "l_entropy": float(np.exp(entropy[c])),
                 "largest_share": float(top / sizes[c]), "size": int(sizes[c])}
                for c, top in zip(listed, largest, strict=True)]
    return SensitiveClasses(
        attribute=str(result.name), distance=str(result.t_distance), classes=int(classes.n_classes),
        n_values=len(labels), t_closeness=float(t.max()) if len(t) else 0.0,
        l_distinct=int(distinct.min()) if len(distinct) else 0,
        l_entropy=float(np.exp(entropy.min())) if len(entropy) else 1.0,
        values=[labels[i] for i in chosen] + ([OTHER_VALUES] if rest else []),
        table_shares=_shares(table, chosen, labels, rest),
        most_distant=[{"distance": float(t[c]), "size": int(sizes[c]), "shares": _shares(q, chosen, labels, rest)}
                      for c, q in zip(far, far_counts, strict=True)],
        least_diverse=diverse(few), lowest_entropy=diverse(flat),
    )


def small_classes(classes: EquivalenceClasses, k: int, *, measured: Any = None,
                  table: pd.DataFrame | None = None) -> SmallClasses:
    """The small classes of ``classes`` at threshold ``k`` and each QI's contribution.

    With ``measured`` (the :class:`~anon_dagster.risk.result.RiskMeasures` of ``table``, whose
    equivalence classes ``classes`` are), each sensitive attribute's deciding classes too
    (:func:`sensitive_classes`).
    """
    sizes = classes.sizes.astype(np.int64)
    below = sizes < k
    counts = pd.Series(sizes[below]).value_counts().sort_index()
    by_size = [{"size": int(s), "classes": int(n), "rows": int(s) * int(n)} for s, n in counts.items()]
    rows_below = int(sizes[below].sum())
    contributions = []
    if rows_below and classes.qis:
        keys = classes.keys()
        for q in classes.qis:
            without = _rows_below(keys, sizes, [c for c in classes.qis if c != q], k)
            contributions.append({"qi": q, "rows_below_k_without": without, "contribution": rows_below - without})
        contributions.sort(key=lambda c: -c["contribution"])
    sensitive = []
    if measured is not None and table is not None:
        sensitive = [sensitive_classes(classes, r, table[r.name]) for r in measured.sensitive_results]
    return SmallClasses(int(k), int(sizes.sum()), int(below.sum()), rows_below, by_size, contributions, sensitive)


__all__ = ["SensitiveClasses", "SmallClasses", "sensitive_classes", "small_classes"]
