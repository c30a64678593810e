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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .classes import EquivalenceClasses


@dataclass
class SmallClasses:
    """The classes below ``k`` and each QI's contribution to them (see the module docstring)."""

    k: int
    rows: int
    classes_below_k: int
    rows_below_k: int
    by_size: list[dict[str, int]] = field(default_factory=list)  # {size, classes, rows}, s < k
    contributions: list[dict[str, Any]] = field(default_factory=list)  # {qi, rows_below_k_without, contribution}

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "rows": self.rows, "classes_below_k": self.classes_below_k,
                "rows_below_k": self.rows_below_k, "by_size": self.by_size, "contributions": self.contributions}


def _rows_below(keys: pd.DataFrame, sizes: np.ndarray, columns: list[str], k: int) -> int:
    """Rows in classes smaller than k when the classes are keyed on ``columns`` only."""
    if not columns:
        total = int(sizes.sum())
        return total if total < k else 0
    merged = pd.Series(sizes).groupby([keys[c] for c in columns], sort=False, dropna=False).sum().to_numpy()
    return int(merged[merged < k].sum())


def small_classes(classes: EquivalenceClasses, k: int) -> SmallClasses:
    """The small classes of ``classes`` at threshold ``k`` and each QI's contribution."""
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
    return SmallClasses(int(k), int(sizes.sum()), int(below.sum()), rows_below, by_size, contributions)


__all__ = ["SmallClasses", "small_classes"]
