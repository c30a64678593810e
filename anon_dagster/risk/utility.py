"""Utility of a (generalized) table: generic measures and the error of a task's query.

Each measure has one definition here; the anonymizer's search minimizes the same functions
(:mod:`anon_dagster.anonymize.utility`). Definitions (``n`` published rows in classes of sizes
``n_c``; ``s`` suppressed rows, so the input had ``n + s``):

- ``qi_entropy_bits``: Shannon entropy of the joint QI distribution, ``-sum_c (n_c/n) log2(n_c/n)``
  (bits); the information the QIs still carry (0 when every row looks alike).
- ``discernibility`` (:func:`discernibility`): ``sum_c n_c**2 + s * (n + s)`` (Bayardo and
  Agrawal; a suppressed row is indistinguishable from the whole input).
- ``aecs`` (:func:`aecs`): average equivalence-class size, ``(n + s) / (classes + 1)`` when rows
  are suppressed (they form one class of ``*``, as ARX counts them), ``n / classes`` otherwise;
  divided by ``k`` it is LeFevre's normalized AECS.
- ``generalization_loss`` (:func:`label_loss`): per cell, ``(leaves(g) - 1) / (leaves - 1)`` for
  a published label ``g`` of a hierarchy, where ``leaves(g)`` counts the original distinct values
  that share the label and ``leaves`` all of them (0 for an original value, 1 for ``*``); the mean
  over cells and QIs, suppressed rows counting 1. ``precision`` is Sweeney's: 1 minus the mean of
  ``level / height`` over the same cells.
- query error (:func:`utility_query_error`): for a question "prevalence of ``target`` by
  ``group_by``", the question is asked of both tables: in each, every group (the rows sharing
  their ``group_by`` labels) has a prevalence per target value (the share of its rows holding it,
  in %). For every group and target value present in either table, the error is the absolute
  difference of the two prevalences, in percentage points; a group the other table does not
  hold has prevalence 0 there (a group generalized away cannot be answered). The query error is
  the largest. Suppressed rows are lost rows: the published shares are over the rows that
  remain. It needs nothing but the two tables, so the release gate recomputes it from the data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..errors import DataError, HierarchyError
from ..hierarchies import MISSING_LABEL, Hierarchy, _as_label
from .classes import EquivalenceClasses
from .coding import FactorizeCache, factorize_values
from .kernel import combine_codes, distinct_sizes


def discernibility(sizes: np.ndarray, suppressed: int = 0) -> float:
    """``sum_c n_c**2 + s * (n + s)`` over the published class sizes, ``s`` rows suppressed."""
    size, count = distinct_sizes(sizes)
    return _discernibility(size, count, int(sizes.sum()), suppressed)


def _discernibility(size: np.ndarray, count: np.ndarray, n: int, suppressed: int) -> float:
    """:func:`discernibility` from the distinct class sizes and their numbers of classes."""
    return float((count * size.astype(float) ** 2).sum() + suppressed * (n + suppressed))


def aecs(sizes: np.ndarray, suppressed: int = 0) -> float:
    """Average class size: ``(n + s) / (classes + 1)`` when ``s > 0`` rows are suppressed (one
    class of ``*``), else ``n / classes``; 0 for no row."""
    return _aecs(int(sizes.sum()), len(sizes), suppressed)


def _aecs(n: int, n_classes: int, suppressed: int) -> float:
    """:func:`aecs` of ``n_classes`` classes of ``n`` rows in all."""
    classes = n_classes + (1 if suppressed else 0)
    return float((n + suppressed) / classes) if classes else 0.0


def generic_utility(classes: EquivalenceClasses, suppressed: int = 0, k: int | None = None) -> dict[str, float]:
    """Joint QI entropy (bits), discernibility and AECS of the classes (see module docstring)."""
    n = classes.n_rows
    # Over the distinct class sizes s (with c_s classes each), not over the classes: a raw
    # table has about as many classes as rows but only a few distinct sizes.
    size, count = distinct_sizes(classes.sizes)
    total = int(classes.sizes.sum())  # the rows in the classes
    p = size / n
    out = {
        "qi_entropy_bits": float(max(-(count * p * np.log2(p)).sum(), 0.0)),
        "discernibility": _discernibility(size, count, total, suppressed),
        "aecs": _aecs(total, len(classes.sizes), suppressed),
    }
    if k:
        out["aecs_normalized"] = out["aecs"] / k
    return out


def label_loss(leaves: np.ndarray, n_leaves: int, top: bool) -> np.ndarray:
    """Generalization loss of labels of one hierarchy level: ``(leaves(g) - 1) / (leaves - 1)``.

    ``leaves[g]`` is the number of original distinct values label ``g`` stands for, ``n_leaves``
    all of them; the top level (``*``) has loss 1, and a domain of one value loses nothing.
    """
    leaves = np.asarray(leaves, dtype=float)
    if top:
        return np.ones(len(leaves))
    if n_leaves <= 1:
        return np.zeros(len(leaves))
    return (leaves - 1) / (n_leaves - 1)


def generalization_utility(published: pd.DataFrame, original: pd.DataFrame,
                           hierarchies: Mapping[str, Hierarchy], suppressed: int = 0,
                           cache: FactorizeCache | None = None) -> dict[str, object]:
    """Generalization loss and precision of ``published`` against ``original``'s domains.

    Each published cell's label is located in its column's hierarchy built over the original
    distinct values (the lowest level holding it). Raises HierarchyError naming a published value
    that is no label of the hierarchy.
    """
    per_column: dict[str, dict[str, float]] = {}
    n = len(published)
    total_loss = 0.0
    total_level = 0.0
    cols = [c for c in hierarchies if c in published.columns]
    for col in cols:
        h = hierarchies[col]
        if col not in original.columns:
            raise DataError(f"column {col!r} is in the published table but not in the original")
        o_codes, o_uniques = factorize_values(original[col], cache)
        domain = np.asarray(o_uniques, dtype=object)
        if len(o_codes) and o_codes.min() < 0:  # missing values are a value of the domain
            domain = np.append(domain, np.array([None], dtype=object))
        table = h.table(domain)
        height = table.shape[1] - 1
        n_leaves = len(domain)
        loss_of_label: dict[str, float] = {}
        label_level: dict[str, float] = {}
        for j in range(table.shape[1]):
            labels, uniq = pd.factorize(table[:, j])
            losses = label_loss(np.bincount(labels), n_leaves, top=j == height)
            for idx, label in enumerate(uniq):
                if label in label_level:
                    continue
                loss_of_label[label] = float(losses[idx])
                label_level[label] = j / height if height else 1.0
        codes, uniq = factorize_values(published[col], cache)
        names = [_as_label(v) for v in uniq] + [MISSING_LABEL]
        unknown = [s for s in names[:-1] if s not in loss_of_label]
        if unknown:
            raise HierarchyError(
                f"column {col!r}: published value {unknown[0]!r} is no label of its hierarchy"
            )
        loss_of = np.array([loss_of_label.get(s, 1.0) for s in names])
        level_of = np.array([label_level.get(s, 1.0) for s in names])
        loss_c = float(loss_of[codes].sum() + suppressed)
        level_c = float(level_of[codes].sum() + suppressed)
        rows = n + suppressed
        per_column[col] = {"loss": loss_c / rows if rows else 0.0,
                           "precision": 1.0 - level_c / rows if rows else 1.0}
        total_loss += loss_c
        total_level += level_c
    cells = (n + suppressed) * len(cols)
    return {
        "generalization_loss": total_loss / cells if cells else 0.0,
        "precision": 1.0 - total_level / cells if cells else 1.0,
        "generalization_by_column": per_column,
    }


class Prevalences(NamedTuple):
    """Both tables' prevalences per (group, target value) present in either (see
    :func:`prevalence_errors`); ``group``/``value`` are the cells' codes, the per-group arrays are
    indexed by group code."""

    group: np.ndarray
    value: np.ndarray
    count_original: np.ndarray
    count_published: np.ndarray
    rows_original: np.ndarray
    rows_published: np.ndarray
    prevalence_original: np.ndarray
    prevalence_published: np.ndarray
    error: np.ndarray
    n_groups: int

    @property
    def max_error(self) -> float:
        """The query error: the largest difference, in percentage points (0 for no cell)."""
        return float(self.error.max()) if len(self.error) else 0.0


def prevalence_errors(group: np.ndarray, value: np.ndarray, n_original: int,
                      n_values: int, weights: np.ndarray | None = None) -> Prevalences:
    """The query error's figures from coded rows: the original's rows, then the published ones.

    ``group[i]`` and ``value[i]`` are row ``i``'s group and target value, coded alike in both
    tables (a label has one code whichever table holds it): rows ``0..n_original-1`` are the
    original's, the rest the published table's. For every (group, value) present in either
    table, each table's prevalence is ``100 * count / rows of the group`` (0 when the table holds
    no row of the group) and the error their absolute difference (module docstring). With
    ``weights`` (whole numbers ≥ 1, one per row) a row stands for that many rows: the rows of two
    frequency tables.
    """
    group = np.asarray(group).astype(np.int64, copy=False)  # int32 ids: widen before the product
    value = np.asarray(value).astype(np.int64, copy=False)
    n_groups = int(group.max()) + 1 if len(group) else 0
    cell = group * n_values + value
    space = n_groups * n_values

    def count(ids: np.ndarray, part: slice, length: int) -> np.ndarray:
        if weights is None:
            return np.bincount(ids[part], minlength=length)
        return np.rint(np.bincount(ids[part], weights=weights[part], minlength=length)).astype(np.int64)

    original, published = slice(None, n_original), slice(n_original, None)
    if space <= 2 * len(cell) + 65536:
        # a small (group, value) space: count directly, the cells present in ascending order
        flat_o = count(cell, original, space)
        flat_a = count(cell, published, space)
        cells = np.flatnonzero(flat_o + flat_a)
        count_o, count_a = flat_o[cells], flat_a[cells]
    else:
        cells, inverse = np.unique(cell, return_inverse=True)
        inverse = inverse.ravel()
        count_o = count(inverse, original, len(cells))
        count_a = count(inverse, published, len(cells))
    rows_o = count(group, original, n_groups)
    rows_a = count(group, published, n_groups)
    g, v = cells // n_values, cells % n_values
    with np.errstate(invalid="ignore", divide="ignore"):
        prev_o = np.where(rows_o[g] > 0, 100.0 * count_o / rows_o[g], 0.0)
        prev_a = np.where(rows_a[g] > 0, 100.0 * count_a / rows_a[g], 0.0)
    return Prevalences(g, v, count_o, count_a, rows_o, rows_a, prev_o, prev_a,
                       np.abs(prev_o - prev_a), n_groups)


class QueryError(NamedTuple):
    """Result of :func:`utility_query_error`: the largest error and the per-group table."""

    max_error_points: float
    table: pd.DataFrame


def utility_query_error(original: pd.DataFrame, anonymized: pd.DataFrame,
                        group_by: Sequence[str] | str, target: str,
                        cache: FactorizeCache | None = None,
                        weights: tuple[np.ndarray, np.ndarray] | None = None) -> QueryError:
    """Largest absolute difference (percentage points) of ``target`` prevalence per group.

    For every group of ``group_by`` and every value of ``target`` present in either table, the
    prevalence is the share (in %) of the group's rows holding that value. A group that is absent
    from the anonymized table (suppressed, or its labels generalized away) has prevalence 0 there
    and is flagged ``missing_in_anonymized``. Missing values are a group/value of their own.
    The table has one row per (group, target value) with both counts, rows, prevalences and the
    error, sorted by error (largest first). ``weights`` (the original's, the anonymized table's)
    make each row stand for that many rows (two frequency tables).
    """
    group_by = [group_by] if isinstance(group_by, str) else list(group_by)
    for frame, label in ((original, "original"), (anonymized, "anonymized")):
        for col in [*group_by, target]:
            if col not in frame.columns:
                raise DataError(f"utility query: column {col!r} is not in the {label} table")
    if target in group_by:
        raise DataError(f"utility query: target {target!r} is also a group_by column")
    if len(original) == 0 or (weights is not None and int(np.sum(weights[0])) == 0):
        raise DataError("utility query: the original table is empty")

    n_o = len(original)
    cols = [*group_by, target]
    # Label both tables alike, then code each column over the two tables at once.
    codes, cards, labels = [], [], []
    for c in cols:
        col_codes, uniques = joint_label_codes(original[c], anonymized[c], cache)
        codes.append(col_codes)
        cards.append(max(len(uniques), 1))
        labels.append(uniques)
    group, _ = combine_codes(codes[:-1], cards[:-1], len(codes[0]))
    row_weights = None if weights is None else np.concatenate(
        [np.asarray(weights[0], dtype=np.float64), np.asarray(weights[1], dtype=np.float64)])
    prev = prevalence_errors(group, codes[-1], n_o, cards[-1], row_weights)
    g, v = prev.group, prev.value
    order = np.argsort(-prev.error, kind="stable")
    first = np.full(prev.n_groups, len(group), dtype=np.int64)
    np.minimum.at(first, group, np.arange(len(group), dtype=np.int64))
    table = {c: labels[i][codes[i][first[g[order]]]] for i, c in enumerate(group_by)}
    table[target] = labels[-1][v[order]]
    rows_a = prev.rows_published[g[order]]
    table.update({
        "count_original": prev.count_original[order], "rows_original": prev.rows_original[g[order]],
        "prevalence_original": prev.prevalence_original[order],
        "count_anonymized": prev.count_published[order], "rows_anonymized": rows_a,
        "prevalence_anonymized": prev.prevalence_published[order],
        "error_points": prev.error[order], "missing_in_anonymized": rows_a == 0,
    })
    return QueryError(prev.max_error, pd.DataFrame(table))


def joint_label_codes(first: pd.Series, second: pd.Series,
                       cache: FactorizeCache | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Codes of ``first`` then ``second`` (concatenated) by label, and the labels (object array).

    Values are compared by their label (categoricals decoded, 30 and 30.0 both "30", missing
    one label), as :func:`_labels` would label them, and the codes number the labels in order of
    first appearance over the concatenated rows. Only the distinct values are labelled: each
    table is factorized once, so the per-row work is integer arithmetic.
    """
    sides = []
    offset = 0
    for series in (first, second):
        codes, uniq = factorize_values(series, cache)
        n_u = len(uniq)
        codes = np.where(codes < 0, n_u, codes) if len(codes) and codes.min() < 0 else codes
        # first row of each code: codes count up in order of appearance, except the missing one
        first_row = np.full(n_u + 1, np.iinfo(np.int64).max, dtype=np.int64)
        is_missing = codes == n_u
        pos = np.flatnonzero(~is_missing)
        real = codes[pos]
        if len(real):
            new_code = np.r_[True, real[1:] > np.maximum.accumulate(real)[:-1]]
            first_row[:n_u] = pos[new_code] + offset
        if is_missing.any():
            first_row[n_u] = int(np.argmax(is_missing)) + offset
        names = np.array([_as_label(v) for v in uniq] + [MISSING_LABEL], dtype=object)
        sides.append((codes, names, first_row))
        offset += len(series)
    names = np.concatenate([side[1] for side in sides])
    rows = np.concatenate([side[2] for side in sides])
    label_id, distinct = pd.factorize(names)
    # number the labels by the first row holding any of their values
    first_of_label = np.full(len(distinct), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_of_label, label_id, rows)
    seen = first_of_label < np.iinfo(np.int64).max
    order = np.argsort(np.where(seen, first_of_label, np.iinfo(np.int64).max), kind="stable")
    order = order[seen[order]]
    rank = np.full(len(distinct), -1, dtype=np.int64)
    rank[order] = np.arange(len(order))
    code_of = rank[label_id]
    n_first = len(sides[0][1])
    joint = np.concatenate([code_of[:n_first][sides[0][0]], code_of[n_first:][sides[1][0]]])
    return joint, np.asarray(distinct, dtype=object)[order]


def _labels(series: pd.Series) -> np.ndarray:
    """A column as comparable labels (object array): categoricals decoded, missing one label."""
    codes, uniq = pd.factorize(series, use_na_sentinel=True)
    labels = np.array([_as_label(v) for v in uniq] + [MISSING_LABEL], dtype=object)
    return labels[codes]  # code -1 (missing) picks the last label


