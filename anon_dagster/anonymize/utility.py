"""Utility (information-loss) measures the anonymizer minimizes, and the utility-query error.

Definitions (n rows, q generalized QIs; a suppressed row counts as every QI at ``*``):

- ``loss``: mean over rows and generalized QIs of the generalization loss of the cell, where a
  label g of a hierarchy level has loss (leaves(g) - 1) / (leaves - 1) (leaves = distinct input
  values; see :func:`anon_dagster.hierarchies.generalization_loss`); ``*`` has loss 1. In [0, 1].
- ``entropy``: non-uniform entropy (ARX), in bits: the sum over rows and generalized QIs of
  log2(count(label) / count(value)), counts taken over the input table: the information an
  analyst lacks to tell the original value from the published label.
- ``discernibility``: sum over published classes of |class|², plus n for every suppressed row
  (:func:`anon_dagster.risk.utility.discernibility`, the risk report's figure).
- ``aecs``: average class size, n / (published classes + 1 if any row is suppressed), the
  suppressed rows counting as one class of ``*`` (:func:`anon_dagster.risk.utility.aecs`).
- ``query:<name>``: the utility query's error, in percentage points, as the release gate
  computes it from the original and the published table (:class:`QueryCodes`).

``loss`` is the risk report's ``generalization_loss`` of the published table (the same
per-label loss, :func:`anon_dagster.risk.utility.label_loss`).

``loss`` and ``entropy`` are sums over cells, so their value *without* suppression is separable
per QI and a lower bound of their value with suppression; the lattice search uses it to visit
nodes best-first and stop early.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..risk import utility as risk_utility
from ..risk.classes import combine_codes
from ..risk.utility import prevalence_errors
from .coding import CodedQI

SEPARABLE = ("loss", "entropy")


def label_loss(qi: CodedQI, level: int) -> np.ndarray:
    """Generalization loss of each code at ``level`` (:func:`anon_dagster.risk.utility.label_loss`:
    0 at level 0, 1 at the top)."""
    if level == 0:
        return np.zeros(qi.cardinality(0))
    per_label = np.bincount(qi.level_maps[level], minlength=qi.cardinality(level))
    return risk_utility.label_loss(per_label, len(qi.uniques), top=level == qi.n_levels - 1)


def label_log_counts(qi: CodedQI, level: int, value_counts: np.ndarray) -> np.ndarray:
    """log2 of the number of input rows under each code at ``level``."""
    per_label = np.bincount(qi.level_maps[level], weights=value_counts,
                            minlength=qi.cardinality(level))
    with np.errstate(divide="ignore"):
        return np.where(per_label > 0, np.log2(np.maximum(per_label, 1)), 0.0)


def separable_bounds(qis: Sequence[CodedQI], metric: str, n_rows: int) -> list[np.ndarray]:
    """Per QI, per level: the metric's total over all rows with nothing suppressed."""
    out = []
    for qi in qis:
        vc = qi.value_counts()
        per_level = np.zeros(qi.n_levels)
        for lvl in range(qi.n_levels):
            codes = qi.level_maps[lvl]
            if metric == "loss":
                per_level[lvl] = float(vc @ label_loss(qi, lvl)[codes])
            else:
                logs_label = label_log_counts(qi, lvl, vc)[codes]
                logs_value = np.log2(np.maximum(vc, 1))
                per_level[lvl] = float(vc @ (logs_label - logs_value))
        out.append(per_level)
    return out


class QueryCodes:
    """A utility query, "prevalence of target by group_by", on the search's coded rows.

    The error is :func:`anon_dagster.risk.utility.prevalence_errors`, the gate's definition
    (module docstring of :mod:`anon_dagster.risk.utility`): the question asked of the original
    and of the published table, groups matched by their labels. So every column is coded by
    label over both tables at once: a generalized QI's codes of every level map into one
    dictionary of its labels (level 0's labels are the values' own), so a published label equal
    to an original value is the same group. ``group_fixed`` and ``target`` are the codes of
    columns the search does not generalize, over the original's rows then the published
    table's (``2 n`` codes: one coding for both, as ``risk.utility.joint_label_codes`` gives),
    with their number of codes; ``target_qi`` names a target that is itself a generalized QI.
    ``weights``: the coded rows are a frequency table's, row ``i`` standing for ``weights[i]``
    rows of the table (both tables' prevalences count those rows, so the error is the rows').
    """

    def __init__(self, qis: Sequence[CodedQI], group_qi: Sequence[int],
                 group_fixed: Sequence[tuple[np.ndarray, int]] = (),
                 target: tuple[np.ndarray, int] | None = None, target_qi: int | None = None,
                 weights: np.ndarray | None = None):
        if (target is None) == (target_qi is None):
            raise ValueError("a query has one target: codes or a QI")
        self.qis = list(qis)
        self.n = len(self.qis[0].codes) if self.qis else (len(target[0]) // 2 if target else 0)
        self.group_qi = list(group_qi)
        self.group_fixed = list(group_fixed)
        self.target = target
        self.target_qi = target_qi
        self.weights = weights  # a frequency table's rows: row i stands for weights[i] rows
        self._maps: dict[int, tuple[list[np.ndarray], int]] = {}

    def qi_maps(self, j: int) -> tuple[list[np.ndarray], int]:
        """Per level, QI ``j``'s codes in the dictionary of all its labels; its size."""
        if j not in self._maps:
            qi = self.qis[j]
            codes, uniques = pd.factorize(np.concatenate(qi.labels))
            bounds = np.cumsum([0] + [len(lab) for lab in qi.labels])
            self._maps[j] = ([codes[a:b].astype(np.int64) for a, b in zip(bounds[:-1], bounds[1:], strict=True)],
                             max(len(uniques), 1))
        return self._maps[j]

    def levels_used(self, levels: Sequence[int]) -> tuple[int, ...]:
        """The levels the error depends on (of the group-by QIs, then of a QI target)."""
        used = [int(levels[j]) for j in self.group_qi]
        return tuple(used + ([int(levels[self.target_qi])] if self.target_qi is not None else []))

    def _qi_column(self, j: int, level: int, kept: np.ndarray | None) -> tuple[np.ndarray, int]:
        maps, size = self.qi_maps(j)
        qi = self.qis[j]
        published = maps[level][qi.row_codes(level)]
        return np.concatenate([maps[0][qi.codes], published if kept is None else published[kept]]), size

    def _fixed_column(self, codes: np.ndarray, kept: np.ndarray | None) -> np.ndarray:
        published = codes[self.n:]
        return np.concatenate([codes[:self.n], published if kept is None else published[kept]])

    def error(self, levels: Sequence[int], kept: np.ndarray | None = None) -> float:
        """The query error, in percentage points, of the node ``levels`` keeping rows ``kept``."""
        cols, cards = [], []
        for j in self.group_qi:
            col, size = self._qi_column(j, int(levels[j]), kept)
            cols.append(col)
            cards.append(size)
        for codes, size in self.group_fixed:
            cols.append(self._fixed_column(codes, kept))
            cards.append(size)
        if self.target_qi is not None:
            value, n_values = self._qi_column(self.target_qi, int(levels[self.target_qi]), kept)
        else:
            value, n_values = self._fixed_column(self.target[0], kept), self.target[1]
        rows = len(value)
        groups, _ = combine_codes(cols, cards, rows)
        weights = None
        if self.weights is not None:
            weights = np.concatenate([self.weights, self.weights if kept is None else self.weights[kept]])
        return prevalence_errors(groups, value, self.n, n_values, weights).max_error
