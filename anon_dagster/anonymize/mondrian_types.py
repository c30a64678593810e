"""The values Mondrian's phases hand each other: a QI laid out in rank space, and the result.

Their own module so that the phases (:mod:`.mondrian` lays out and drives, :mod:`.mondrian_cuts`
cuts, :mod:`.mondrian_labels` labels) import them without importing one another.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .cut_tree import CutTree


@dataclass
class _Dim:
    """One generalized QI in rank space (a :class:`~anon_dagster.anonymize.cut_tree.RankedQI`)."""

    name: str
    rank: np.ndarray           # per row, int64 rank (numeric: value order; categorical: DFS order)
    n_ranks: int
    numeric: bool
    values: np.ndarray | None = None      # numeric: sorted distinct values (rank -> value)
    anc: list[np.ndarray] = field(default_factory=list)    # categorical: anc[l][rank] -> code
    first: list[np.ndarray] = field(default_factory=list)  # categorical: first[l][code] -> rank
    last: list[np.ndarray] = field(default_factory=list)
    labels: list[np.ndarray] = field(default_factory=list)
    span: float = 1.0
    is_date: bool = False
    missing_rank: int = -1  # numeric with missing values: their rank (above every value)

    def width(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Normalized range of [lo, hi] (``hi`` the highest *present* value's rank, or -1)."""
        if self.numeric:
            assert self.values is not None
            hi = np.where(hi < 0, lo, hi)
            return (self.values[hi] - self.values[lo]).astype(float) / self.span
        return (hi - lo).astype(float) / self.span


@dataclass
class MondrianResult:
    """Mondrian's output for one table.

    ``columns`` holds each generalized QI's published labels (categorical, by position),
    ``row_class`` each row's class (-1 for a suppressed row), ``suppressed`` the suppressed rows'
    mask, ``ranges`` a per-class summary of the generalized ranges, ``ncp`` the normalized
    certainty penalty (mean over rows and QIs of the published range's share of the QI's domain),
    ``boxes`` each QI's class boxes (:func:`_boxes`), ``tree`` the cut tree
    (:class:`~anon_dagster.anonymize.cut_tree.CutTree`).
    """

    columns: dict[str, pd.Categorical]
    row_class: np.ndarray
    n_classes: int
    class_sizes: np.ndarray
    suppressed: np.ndarray
    ncp: float
    ranges: list[dict]
    too_small_parts: list[dict]
    cuts: int
    elapsed_s: float
    boxes: dict[str, dict] = field(default_factory=dict)
    tree: CutTree | None = None


__all__ = ["MondrianResult", "_Dim"]
