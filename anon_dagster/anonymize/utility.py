"""Utility (information-loss) measures the anonymizer minimizes, and utility-query error.

Definitions (n rows, q generalized QIs; a suppressed row counts as every QI at ``*``):

- ``loss``: mean over rows and generalized QIs of the generalization loss of the cell, where a
  label g of a hierarchy level has loss (leaves(g) - 1) / (leaves - 1) (leaves = distinct input
  values; see :func:`anon_dagster.hierarchies.generalization_loss`); ``*`` has loss 1. In [0, 1].
- ``entropy``: non-uniform entropy (ARX), in bits: the sum over rows and generalized QIs of
  log2(count(label) / count(value)), counts taken over the input table: the information an
  analyst lacks to tell the original value from the published label.
- ``discernibility``: sum over published classes of |class|², plus n for every suppressed row.
- ``aecs``: average class size, n / (published classes + 1 if any row is suppressed), the
  suppressed rows counting as one class of ``*``.
- ``query:<name>``: the utility query's error, in percentage points (see :func:`query_error`).

``loss`` and ``entropy`` are sums over cells, so their value *without* suppression is separable
per QI and a lower bound of their value with suppression; the lattice search uses it to visit
nodes best-first and stop early.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .coding import CodedQI, combine, group

SEPARABLE = ("loss", "entropy")


def label_loss(qi: CodedQI, level: int) -> np.ndarray:
    """Generalization loss of each code at ``level`` (0 at level 0, 1 at the top)."""
    leaves = len(qi.uniques)
    if level == 0:
        return np.zeros(qi.cardinality(0))
    if level == qi.n_levels - 1 or leaves <= 1:
        return np.ones(qi.cardinality(level))
    per_label = np.bincount(qi.level_maps[level], minlength=qi.cardinality(level))
    return (per_label - 1) / (leaves - 1)


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


def query_error(orig_groups: Sequence[np.ndarray], pub_groups: Sequence[np.ndarray],
                target: np.ndarray, kept: np.ndarray | None = None,
                target_pub: np.ndarray | None = None) -> tuple[float, dict]:
    """Largest error, in percentage points, of the prevalence of each target value per group.

    ``orig_groups`` are the input's group-by codes per row, ``pub_groups`` the published ones
    (a generalized column's label codes; every input group falls in one published group).
    The estimate of prevalence for an input group is the prevalence within its published group
    over the published (kept) rows, as an analyst without the input would compute it; an input
    group whose published group lost every row is estimated at 0. Returns the error and a
    small breakdown (number of input groups, index of the worst). ``target_pub`` is the published
    target when it differs from the input's (PRAM); codes must share one coding with ``target``.
    """
    n = len(target)
    kept = np.ones(n, dtype=bool) if kept is None else kept
    if target_pub is None:
        t_codes, t_n = _dense(target)
        tp_codes = t_codes
    else:
        both, t_n = _dense(np.concatenate([target, target_pub]))
        t_codes, tp_codes = both[:n], both[n:]
    og, og_n = _combine_dense(orig_groups, n)
    pg, pg_n = _combine_dense(pub_groups, n)
    orig_tab = np.bincount(og * t_n + t_codes, minlength=og_n * t_n).reshape(og_n, t_n)
    orig_p = orig_tab / np.maximum(orig_tab.sum(axis=1, keepdims=True), 1)
    pub_tab = np.bincount(pg[kept] * t_n + tp_codes[kept], minlength=pg_n * t_n).reshape(pg_n, t_n)
    pub_p = pub_tab / np.maximum(pub_tab.sum(axis=1, keepdims=True), 1)
    # each input group's published group (any row of it: the map is a function)
    pub_of = np.empty(og_n, dtype=np.int64)
    pub_of[og] = pg
    diff = np.abs(orig_p - pub_p[pub_of]) * 100.0
    per_group = diff.max(axis=1) if t_n else np.zeros(og_n)
    worst = int(per_group.argmax()) if og_n else -1
    return (float(per_group.max()) if og_n else 0.0), {"groups": int(og_n), "worst_group": worst}


def _dense(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense codes of any values (missing values, mixed types: one code each, no sorting)."""
    codes, uniques = pd.factorize(pd.Series(values, dtype=object) if np.asarray(values).dtype == object
                                  else values, use_na_sentinel=False)
    return codes.astype(np.int64), len(uniques)


def _combine_dense(cols: Sequence[np.ndarray], n: int) -> tuple[np.ndarray, int]:
    if not cols:
        return np.zeros(n, dtype=np.int64), 1
    dense = [_dense(c) for c in cols]
    key, space = combine([d[0] for d in dense], [d[1] for d in dense])
    _, inverse, sizes = group(key, space)
    return inverse, len(sizes)
