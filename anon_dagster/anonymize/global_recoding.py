"""Global recoding: one hierarchy level per QI for the whole table, then suppression.

``apply_levels`` generalizes every row of a column to the same level (a *level vector*); the
classes that still miss the policy are then suppressed, whole rows (``suppression: rows``) or
cells (``suppression: cells``, see :mod:`anon_dagster.anonymize.local_suppression`), within the
budget ``floor(max_suppression × rows)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import HierarchyError
from ..hierarchies import Hierarchy
from ..risk.sensitive import CodedSensitive
from .coding import CodedQI, code_qi, combine, group
from .criteria import Evaluation, Policy, as_coded, pairs_from_rows, published_evaluation


def generalized_column(qi: CodedQI, level: int, index: pd.Index) -> pd.Series:
    """The column at ``level`` as a categorical of labels (level 0: the original values)."""
    if not 0 <= level < qi.n_levels:
        raise HierarchyError(f"column {qi.name!r}: level {level} out of range 0..{qi.n_levels - 1}")
    codes = qi.level_maps[level][qi.codes]
    cat = pd.Categorical.from_codes(codes, categories=pd.Index(qi.labels[level], dtype=object))
    return pd.Series(cat, index=index, name=qi.name)


def apply_levels(df: pd.DataFrame, hierarchies: Mapping[str, Hierarchy], levels: Mapping[str, int],
                 coded: Mapping[str, CodedQI] | None = None) -> pd.DataFrame:
    """``df`` with each column of ``levels`` generalized to its level (others untouched).

    Level 0 leaves a column as it is; other levels publish the hierarchy's labels (a pandas
    categorical of strings). Every row of a column gets the same level. The index is kept.
    Raises HierarchyError for a value the hierarchy does not cover or a level out of range.
    """
    out = df.copy()
    for name, level in levels.items():
        if level == 0:
            continue
        qi = coded[name] if coded and name in coded else code_qi(df[name], hierarchies[name], check=False)
        out[name] = generalized_column(qi, int(level), df.index)
    return out


def classes_at(qis: list[CodedQI], levels: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's class id and the class sizes when QI j is at ``levels[j]``."""
    n = len(qis[0].codes) if qis else 0
    if not qis:
        return np.zeros(n, dtype=np.int64), np.array([n], dtype=np.int64)
    cols = [q.row_codes(lv) for q, lv in zip(qis, levels, strict=True)]
    key, space = combine(cols, [q.cardinality(lv) for q, lv in zip(qis, levels, strict=True)])
    _, row_class, sizes = group(key, space)
    return row_class, sizes


def failing_rows(policy: Policy, row_class: np.ndarray, sizes: np.ndarray,
                 sensitive: Sequence[CodedSensitive | np.ndarray]) -> tuple[np.ndarray, Evaluation]:
    """Rows to suppress: those of classes missing a per-class criterion of ``policy`` as the
    gate measures the published table (:func:`~anon_dagster.anonymize.criteria.published_evaluation`),
    and the evaluation."""
    pairs = []
    if policy.needs_sensitive:
        pairs = [pairs_from_rows(row_class, len(sizes), as_coded(s)) for s in sensitive]
    ev = published_evaluation(policy, sizes, pairs)
    return ev.failing[row_class], ev
