"""Attribute disclosure inside equivalence classes: l-diversity and t-closeness.

Everything here works on the non-zero cells of the class × sensitive-value count matrix
(:class:`Cells`, singleton classes apart), so memory is proportional to the table however many
classes and values there are. Notation: class ``c`` has ``n_c`` rows, ``n_cv`` of which hold value ``v``;
``q_cv = n_cv / n_c`` is the class's distribution and ``p_v`` the whole table's.

Definitions:

- distinct l-diversity of a class: the number of distinct sensitive values in it; the table's
  ``l_distinct`` is the smallest over classes.
- entropy l-diversity of a class: ``exp(H_c)`` with ``H_c = -sum_v q_cv ln q_cv`` (natural
  log); the table's ``l_entropy`` is ``exp(min_c H_c)``, a float (a class of 99 "none" and one
  "HIV" has ``H = 0.056`` nats, ``l_entropy = 1.058``).
- recursive (c, l)-diversity of a class with value counts sorted descending ``r_1 >= r_2 >= ...``:
  ``r_1 < c * (r_l + r_{l+1} + ... + r_m)``. For a given ``c``, ``l_recursive`` is the largest
  ``l`` every class satisfies (0 when even ``l = 1`` fails, i.e. ``c <= 1``).
- t-closeness of a class: the earth mover's distance between ``q_c`` and ``p``:
  - nominal values (equal ground distance): total variation ``0.5 * sum_v |q_cv - p_v|``;
  - ordinal or numeric values, ``m`` of them in order (ordered distance ``|i - j| / (m - 1)``):
    ``EMD = sum_{i < m-1} |Q_c(i) - P(i)| / (m - 1)`` with ``Q_c``, ``P`` the cumulative
    distributions;
  - values with a generalization hierarchy of height ``H`` (ground distance = height of the
    lowest common ancestor / ``H``, Li, Li and Venkatasubramanian 2007): their EMD equals the
    mean over levels ``0..H-1`` of the total variation between the distributions of the
    values' labels at that level.
  The table's ``t_closeness`` is the largest over classes.

Missing sensitive values form a value of their own (in ordered distances they come last).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import DataError
from ..hierarchies import Hierarchy, _as_label
from .classes import EquivalenceClasses, count_cells

KINDS = ("nominal", "ordinal", "numeric")


@dataclass
class CodedSensitive:
    """A sensitive column coded 0..n_values-1 by position; ``ranks`` orders codes when ordered."""

    name: str
    codes: np.ndarray
    values: np.ndarray  # object array: the value of each code (None for missing)
    kind: str = "nominal"
    ranks: np.ndarray | None = None  # rank of each code in the value order (ordinal/numeric)
    hierarchy: Hierarchy | None = None

    @property
    def n_values(self) -> int:
        return len(self.values)


def code_sensitive(series: pd.Series, name: str, kind: str = "nominal",
                   order: Sequence[object] | None = None,
                   hierarchy: Hierarchy | None = None) -> CodedSensitive:
    """Code a sensitive column; missing values are a value of their own.

    ``kind`` is nominal, ordinal or numeric. Ordinal values follow ``order`` (every non-missing
    value must be listed; labels compare as strings) or, without one, their sorted order;
    numeric values are ordered as numbers (a value that is not a number is a DataError).
    ``hierarchy`` selects the hierarchical distance.
    """
    if kind not in KINDS:
        raise DataError(f"sensitive attribute {name!r}: kind {kind!r} is not one of {', '.join(KINDS)}")
    if isinstance(series.dtype, pd.CategoricalDtype):
        # the categorical's own codes, renumbered in order of appearance as pd.factorize does
        # (its hash over a million rows needs several times the column's memory)
        cat_codes = series.cat.codes.to_numpy()
        used = _first_appearance(cat_codes, len(series.dtype.categories))
        n_used = int((used >= 0).sum())
        narrow = np.min_scalar_type(-(n_used + 1))
        # cat code -1 (missing) reads the last entry: the code after the used values
        remap = np.full(len(series.dtype.categories) + 1, n_used, dtype=narrow)
        remap[used[used >= 0]] = np.arange(n_used)
        codes = remap[cat_codes]
        values = np.asarray(series.dtype.categories.take(used[used >= 0]), dtype=object)
        if n_used < len(used):
            values = np.append(values, None)
        codes = codes if len(codes) else codes.astype(narrow)
    else:
        codes, uniques = pd.factorize(series, use_na_sentinel=True, sort=False)
        values = np.asarray(uniques, dtype=object)
    if len(codes) and codes.min() < 0:  # (categorical codes are already >= 0)
        codes = np.where(codes < 0, len(values), codes)
        values = np.append(values, None)
    # the narrowest integer type: a million rows of a 20-value column take 1 MB, not 8
    codes = codes.astype(np.min_scalar_type(-max(len(values), 1)), copy=False)
    coded = CodedSensitive(name, codes, values, kind, None, hierarchy)
    if hierarchy is not None:
        hierarchy.table(values)  # raises HierarchyError naming a value it does not cover
    if kind in ("ordinal", "numeric") and hierarchy is None:
        coded.ranks = _ranks(values, name, kind, order)
    return coded


def _first_appearance(codes: np.ndarray, n_categories: int, chunk: int = 1 << 16) -> np.ndarray:
    """The distinct values of ``codes`` (in [-1, n_categories)) in order of first appearance.

    Equal to ``pd.unique(codes)``, taken over slices of ``chunk`` rows so the hash table stays
    small (pandas sizes it to the input: 16 bytes per row for a 1-byte code), and stopping
    once every category has been seen.
    """
    seen = np.zeros(n_categories + 1, dtype=bool)  # slot n_categories stands for -1
    order: list[np.ndarray] = []
    for start in range(0, len(codes), chunk):
        distinct = pd.unique(codes[start:start + chunk])
        new = distinct[~seen[distinct]]
        if len(new):
            seen[new] = True
            order.append(new)
            if seen.all():
                break
    return np.concatenate(order) if order else codes[:0]


def _ranks(values: np.ndarray, name: str, kind: str, order: Sequence[object] | None) -> np.ndarray:
    present = np.array([v is not None and not (isinstance(v, float) and np.isnan(v)) for v in values])
    if order is not None:
        position = {str(label): i for i, label in enumerate(order)}
        keys = []
        for v, ok in zip(values, present, strict=True):
            if not ok:
                keys.append(len(position))
                continue
            label = _as_label(v)
            if label not in position:
                raise DataError(
                    f"sensitive attribute {name!r}: value {label!r} is not in its declared order"
                )
            keys.append(position[label])
        sort_key = np.asarray(keys, dtype=float)
    elif kind == "numeric":
        numeric = pd.to_numeric(pd.Series(values[present], dtype=object), errors="coerce").to_numpy(float)
        if np.isnan(numeric).any():
            bad = values[present][np.isnan(numeric)][0]
            raise DataError(f"sensitive attribute {name!r} is numeric but holds {bad!r}")
        sort_key = np.full(len(values), np.inf)
        sort_key[present] = numeric
    else:
        labels = np.array([_as_label(v) for v in values], dtype=object)
        sort_key = np.full(len(values), np.inf)
        order_of = pd.Series(labels[present]).rank(method="dense").to_numpy()
        sort_key[present] = order_of
    # Equal keys (a numeric 1 and 1.0) share a rank; missing values rank last.
    return pd.Series(sort_key).rank(method="dense").to_numpy(np.int64) - 1


@dataclass
class Cells:
    """The class × value count matrix, sparse, with singleton classes kept apart.

    ``cls, val, cnt``: the non-zero cells of the classes of two rows or more (any order).
    ``alone_cls, alone_val``: the class and value of each row that is alone in its class (its
    cell has count 1). Singletons are most rows of a raw table; their figures follow from a
    formula (one value, entropy 0, total variation ``1 - p_v``), so they are never counted.
    ``p``: the table's distribution over the ``n_values`` values.
    """

    cls: np.ndarray
    val: np.ndarray
    cnt: np.ndarray
    alone_cls: np.ndarray
    alone_val: np.ndarray
    n_values: int
    p: np.ndarray

    def coarsen(self, mapping: np.ndarray, m: int) -> Cells:
        """The cells with values mapped through ``mapping`` onto ``0..m-1`` (merged cells summed)."""
        key = self.cls * m + mapping[self.val]
        uniq, inverse = np.unique(key, return_inverse=True)
        cnt = np.bincount(inverse.ravel(), weights=self.cnt).astype(np.int64)
        p = np.bincount(mapping, weights=self.p, minlength=m)
        return Cells(uniq // m, uniq % m, cnt, self.alone_cls, mapping[self.alone_val], m, p)


def class_value_cells(classes: EquivalenceClasses, codes: np.ndarray, n_values: int) -> Cells:
    """Cells of a coded column (one code in [0, n_values) per row, by position)."""
    codes = np.asarray(codes)
    alone = classes.sizes[classes.row_class] == 1
    p = np.bincount(codes, minlength=n_values) / max(classes.n_rows, 1)
    alone_cls = classes.row_class[alone]
    alone_val = codes[alone]  # kept in the codes' (narrow) type: only ever an index
    rest = ~alone
    del alone
    cls, val, cnt = count_cells(classes.row_class, codes, classes.n_classes, n_values, rows=rest)
    return Cells(cls, val, cnt, alone_cls, alone_val, n_values, p)


@dataclass
class Diversity:
    """Per-class l-diversity figures (one entry per class)."""

    l_distinct: np.ndarray  # signed integers, of the class ids' type
    entropy: np.ndarray  # float, natural log


def diversity(classes: EquivalenceClasses, cells: Cells) -> Diversity:
    """Distinct values and Shannon entropy (nats) of each class.

    ``H_c = ln n_c - (1/n_c) sum_v n_cv ln n_cv``; a singleton class has one value and H = 0.
    """
    # int32: a class holds at most as many distinct values as there are rows (< 2**31 here)
    distinct = np.bincount(cells.cls, minlength=classes.n_classes).astype(
        classes.row_class.dtype, copy=False)
    distinct[cells.alone_cls] = 1
    c = cells.cnt.astype(float)
    logc = np.log(c)
    logc *= c
    # (an empty bincount is int64: cast so the in-place float arithmetic below works)
    s = np.bincount(cells.cls, weights=logc, minlength=classes.n_classes).astype(float, copy=False)
    del c, logc
    # in place, without a float copy of the sizes: one class-length temporary at a time
    s /= classes.sizes
    entropy = np.log(classes.sizes, dtype=float)
    entropy -= s
    del s
    # rounding can leave -1e-16 for a class of a single value
    np.maximum(entropy, 0.0, out=entropy)
    return Diversity(distinct, entropy)


def recursive_l(classes: EquivalenceClasses, cells: Cells, c: float) -> np.ndarray:
    """For each class, the largest l with ``r_1 < c * (r_l + ... + r_m)`` (0 if none).

    The tail sum shrinks as l grows, so the condition holds for l = 1..l* and fails after:
    l* is the number of ranks at which it holds. A singleton class has l* = 1 when c > 1.
    """
    cls, cnt = cells.cls, cells.cnt
    out = np.zeros(classes.n_classes, dtype=np.int64)
    if len(cls):
        order = np.lexsort((-cnt, cls))
        cls_s, cnt_s = cls[order], cnt[order]
        starts = np.flatnonzero(np.r_[True, cls_s[1:] != cls_s[:-1]])
        run = np.diff(np.r_[starts, len(cls_s)])
        first = np.repeat(starts, run)
        prefix = np.cumsum(cnt_s) - cnt_s  # sum of counts before this position (all classes)
        before = prefix - prefix[first]  # counts ranked above this one, within its class
        tail = classes.sizes[cls_s] - before  # r_rank + ... + r_m
        holds = cnt_s[first] < c * tail
        out += np.bincount(cls_s, weights=holds, minlength=classes.n_classes).astype(np.int64)
    out[cells.alone_cls] = 1 if c > 1 else 0
    return out


def total_variation(classes: EquivalenceClasses, cells: Cells) -> np.ndarray:
    """Total variation ``0.5 * sum_v |q_cv - p_v|`` of each class.

    Values absent from a class contribute ``p_v`` each, so
    ``TV_c = 0.5 * (1 + sum_{v in c} (|q_cv - p_v| - p_v))``; a singleton class holding ``v``
    has ``TV = 1 - p_v``.
    """
    q = cells.cnt / classes.sizes[cells.cls]
    pv = cells.p[cells.val]
    q -= pv
    np.abs(q, out=q)
    q -= pv
    del pv
    tv = np.bincount(cells.cls, weights=q, minlength=classes.n_classes).astype(float, copy=False)
    del q
    tv += 1.0
    tv *= 0.5
    tv[cells.alone_cls] = (1.0 - cells.p)[cells.alone_val]  # per value, then one gather
    return np.clip(tv, 0.0, 1.0, out=tv)


def ordered_emd(classes: EquivalenceClasses, cells: Cells, ranks: np.ndarray) -> np.ndarray:
    """Ordered-distance EMD of each class: ``sum_{i<m-1} |Q_c(i) - P(i)| / (m - 1)``.

    ``ranks`` gives each value code's position 0..m-1 in the value order (equal values share
    one). A class's cumulative distribution ``Q_c`` is constant between its non-zero ranks, so
    the sum is taken segment by segment with prefix sums of ``P`` and a binary search for where
    ``P`` crosses ``Q_c``: cost proportional to the non-zero cells, not to classes × values. A
    singleton at rank r has ``Q = 0`` below r and 1 from r on.
    """
    m = int(ranks.max()) + 1 if len(ranks) else 1
    if m <= 1:
        return np.zeros(classes.n_classes)
    ranked = cells.coarsen(ranks, m)  # cells sorted by class, then rank
    P = np.cumsum(ranked.p)
    S = np.concatenate([[0.0], np.cumsum(P)])  # S[i] = P(0) + ... + P(i-1)
    total = np.zeros(classes.n_classes)

    cls, rank = ranked.cls, ranked.val
    if len(cls):
        q = ranked.cnt / classes.sizes[cls]
        csum = np.cumsum(q)
        starts = np.flatnonzero(np.r_[True, cls[1:] != cls[:-1]])
        run = np.diff(np.r_[starts, len(cls)])
        first = np.repeat(starts, run)
        Q = csum - (csum[first] - q[first])  # cumulative within the class, up to this rank
        last = np.r_[cls[1:] != cls[:-1], True]
        next_rank = np.where(last, m - 1, np.r_[rank[1:], 0])
        a, b = rank, next_rank - 1  # segment [a, b] where Q_c(i) = Q; may be empty (b = a - 1)
        s = np.clip(np.searchsorted(P, Q, side="right"), a, b + 1)
        seg = (s - a) * Q - (S[s] - S[a]) + (S[b + 1] - S[s]) - (b + 1 - s) * Q
        total += np.bincount(cls, weights=seg, minlength=classes.n_classes)
        # before a class's first non-zero rank Q_c = 0: P(0) + ... + P(r_first - 1)
        total += np.bincount(cls[starts], weights=S[rank[starts]], minlength=classes.n_classes)
    r = ranked.alone_val
    # singleton: sum_{i<r} P(i) + sum_{r<=i<=m-2} (1 - P(i))
    total[ranked.alone_cls] = S[r] + (m - 1 - r) - (S[m - 1] - S[r])
    return np.clip(total / (m - 1), 0.0, 1.0)


def hierarchical_emd(classes: EquivalenceClasses, cells: Cells, sensitive: CodedSensitive) -> np.ndarray:
    """Hierarchical-distance EMD of each class: mean over levels 0..H-1 of the total variation.

    (With Li et al.'s cost ``height(N)/H * min(pos_extra, neg_extra)`` per inner node, the sum
    telescopes to ``sum_{j<H} sum_{N at level j} |Q_c(N) - P(N)| / (2H)``.)
    """
    assert sensitive.hierarchy is not None
    level_codes = sensitive.hierarchy.level_codes(sensitive.values)
    height = len(level_codes) - 1
    total = np.zeros(classes.n_classes)
    for j in range(height):
        codes_j = level_codes[j]
        m_j = int(codes_j.max()) + 1 if len(codes_j) else 1
        total += total_variation(classes, cells if j == 0 else cells.coarsen(codes_j, m_j))
    return total / max(height, 1)


def t_closeness(classes: EquivalenceClasses, sensitive: CodedSensitive, cells: Cells) -> tuple[np.ndarray, str]:
    """Per-class distance to the table's distribution and the name of the distance used."""
    if sensitive.hierarchy is not None:
        return hierarchical_emd(classes, cells, sensitive), "hierarchical_emd"
    if sensitive.ranks is not None:
        return ordered_emd(classes, cells, sensitive.ranks), "ordered_emd"
    return total_variation(classes, cells), "total_variation"
