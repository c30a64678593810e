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
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import DataError
from ..hierarchies import Hierarchy, _as_label
from .classes import EquivalenceClasses, class_id_dtype, count_cells

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
    _level_codes: list[np.ndarray] | None = field(default=None, repr=False)

    @property
    def n_values(self) -> int:
        return len(self.values)

    def level_codes(self) -> list[np.ndarray]:
        """The hierarchy's code of each value code at every level (computed once)."""
        if self.hierarchy is None:
            raise ValueError(f"sensitive attribute {self.name!r} has no hierarchy")
        if self._level_codes is None:
            self._level_codes = self.hierarchy.level_codes(self.values)
        return self._level_codes


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


ClassSizes = EquivalenceClasses | np.ndarray


def _sizes(classes: ClassSizes) -> np.ndarray:
    """The class sizes of ``classes`` (an :class:`EquivalenceClasses` or the sizes themselves)."""
    return classes.sizes if isinstance(classes, EquivalenceClasses) else np.asarray(classes)


@dataclass
class Cells:
    """The class × value count matrix, sparse, with singleton classes kept apart.

    ``cls, val, cnt``: the non-zero cells of the classes of two rows or more (any order).
    ``alone_cls, alone_val``: the class and value of each row that is alone in its class (its
    cell has count 1). Singletons are most rows of a raw table; their figures follow from a
    formula (one value, entropy 0, total variation ``1 - p_v``), so they are never counted.
    ``total``: the table's rows per value (int64), so ``p = total / total.sum()``; the distances
    are computed from these counts in integers, so a class's figure does not depend on how
    classes or values are numbered or ordered. Weights proportional to a distribution (floats)
    are accepted too; the same formulas then run in floating point.
    """

    cls: np.ndarray
    val: np.ndarray
    cnt: np.ndarray
    alone_cls: np.ndarray
    alone_val: np.ndarray
    n_values: int
    total: np.ndarray

    @property
    def n(self) -> int | float:
        """The table's rows (the sum of ``total``)."""
        n = self.total.sum()
        return int(n) if self.total.dtype.kind in "iub" else float(n)

    @property
    def p(self) -> np.ndarray:
        """The table's distribution over the values."""
        return self.total / max(self.n, 1)

    @classmethod
    def from_counts(cls, sizes: np.ndarray, cls_: np.ndarray, val: np.ndarray, cnt: np.ndarray,
                    n_values: int, total: np.ndarray) -> Cells:
        """Cells from every non-zero ``(class, value, count)``, singleton classes set apart."""
        alone = sizes[cls_] == 1
        if not alone.any():
            empty = cls_[:0]
            return cls(cls_, val, cnt, empty, val[:0], n_values, total)
        rest = ~alone
        return cls(cls_[rest], val[rest], cnt[rest], cls_[alone], val[alone], n_values, total)

    def coarsen(self, mapping: np.ndarray, m: int) -> Cells:
        """The cells with values mapped through ``mapping`` onto ``0..m-1`` (merged cells summed).

        The result's cells are sorted by class, then by new value.
        """
        key = self.cls.astype(np.int64) * m + mapping[self.val]
        uniq, inverse = np.unique(key, return_inverse=True)
        cnt = np.bincount(inverse.ravel(), weights=self.cnt, minlength=len(uniq)).astype(np.int64)
        total = np.bincount(mapping, weights=self.total, minlength=m)
        if self.total.dtype.kind in "iub":
            total = total.astype(np.int64)
        return Cells(uniq // m, uniq % m, cnt, self.alone_cls, mapping[self.alone_val], m, total)


def class_value_cells(classes: EquivalenceClasses, codes: np.ndarray, n_values: int) -> Cells:
    """Cells of a coded column (one code in [0, n_values) per row, by position)."""
    codes = np.asarray(codes)
    alone = classes.sizes[classes.row_class] == 1
    total = np.bincount(codes, minlength=n_values).astype(np.int64, copy=False)
    alone_cls = classes.row_class[alone]
    alone_val = codes[alone]  # kept in the codes' (narrow) type: only ever an index
    rest = ~alone
    del alone
    cls, val, cnt = count_cells(classes.row_class, codes, classes.n_classes, n_values, rows=rest)
    return Cells(cls, val, cnt, alone_cls, alone_val, n_values, total)


@dataclass
class Diversity:
    """Per-class l-diversity figures (one entry per class)."""

    l_distinct: np.ndarray  # signed integers, of the class ids' type
    entropy: np.ndarray  # float, natural log


def diversity(classes: ClassSizes, cells: Cells) -> Diversity:
    """Distinct values and Shannon entropy (nats) of each class.

    ``H_c = ln n_c - (1/n_c) sum_v n_cv ln n_cv``; a singleton class has one value and H = 0.
    The sum is taken in fixed point: each term ``n_cv ln n_cv`` is rounded to a multiple of
    ``2**-k_c`` with ``k_c`` the largest exponent keeping the class's sum below ``2**52``, and
    the integers are added exactly. So ``H_c`` depends only on the class's counts, not on the
    order of its cells (two codings of one table give bit-identical entropies), and the rounding
    is that of ordinary float addition.
    """
    sizes = _sizes(classes)
    n_classes = len(sizes)
    # a class holds at most as many distinct values as there are rows
    distinct = np.bincount(cells.cls, minlength=n_classes).astype(
        class_id_dtype(int(sizes.sum())), copy=False)
    distinct[cells.alone_cls] = 1
    entropy = np.log(sizes, dtype=float)

    def scale_of(size: np.ndarray) -> np.ndarray:
        # 2**k_c with n_c ln n_c * 2**k_c < 2**52, the largest possible sum of a class's terms
        size = size.astype(float)
        bound = np.log(size)
        bound *= size
        return (52 - np.frexp(bound)[1]).astype(np.int32)

    def terms(part: slice) -> np.ndarray:
        term = cells.cnt[part].astype(float)
        log = np.log(term)
        term *= log
        del log
        np.ldexp(term, scale_of(sizes[cells.cls[part]]), out=term)
        return np.rint(term, out=term)

    # integer-valued terms below 2**53 in every class: the float sums are exact
    s = _sum_by_class(cells.cls, n_classes, terms)
    held = np.flatnonzero(s)  # singletons (most classes of a raw table) have no term: H = 0
    entropy[held] -= np.ldexp(s[held], -scale_of(sizes[held])) / sizes[held]
    del s, held
    # rounding can leave -1e-16 for a class of a single value
    np.maximum(entropy, 0.0, out=entropy)
    return Diversity(distinct, entropy)


# Cells are summed per class in slices of this many, so temporaries stay a few MB whatever the
# table (the sums of integer-valued terms are exact in any order, so slicing changes nothing).
_SLICE = 1 << 18


def _sum_by_class(cls: np.ndarray, n_classes: int, values) -> np.ndarray:
    """``sum over cells i of class c of values(slice)[i]``, computed slice by slice."""
    if len(cls) <= _SLICE:
        return np.bincount(cls, weights=values(slice(None)), minlength=n_classes).astype(float, copy=False)
    out = np.zeros(n_classes)
    for start in range(0, len(cls), _SLICE):
        part = slice(start, start + _SLICE)
        out += np.bincount(cls[part], weights=values(part), minlength=n_classes)
    return out


def recursive_l(classes: ClassSizes, cells: Cells, c: float) -> np.ndarray:
    """For each class, the largest l with ``r_1 < c * (r_l + ... + r_m)`` (0 if none).

    The tail sum shrinks as l grows, so the condition holds for l = 1..l* and fails after:
    l* is the number of ranks at which it holds. A singleton class has l* = 1 when c > 1.
    """
    sizes = _sizes(classes)
    n_classes = len(sizes)
    cls, cnt = cells.cls, cells.cnt
    out = np.zeros(n_classes, dtype=np.int64)
    if len(cls):
        order = np.lexsort((-cnt, cls))
        cls_s, cnt_s = cls[order], cnt[order]
        starts = np.flatnonzero(np.r_[True, cls_s[1:] != cls_s[:-1]])
        run = np.diff(np.r_[starts, len(cls_s)])
        first = np.repeat(starts, run)
        prefix = np.cumsum(cnt_s) - cnt_s  # sum of counts before this position (all classes)
        before = prefix - prefix[first]  # counts ranked above this one, within its class
        tail = sizes[cls_s] - before  # r_rank + ... + r_m
        holds = cnt_s[first] < c * tail
        out += np.bincount(cls_s, weights=holds, minlength=n_classes).astype(np.int64)
    out[cells.alone_cls] = 1 if c > 1 else 0
    return out


def _exact(cells: Cells) -> bool:
    return cells.total.dtype.kind in "iub"


def _tv_numerator(sizes: np.ndarray, cells: Cells) -> np.ndarray:
    """``n_c * N * TV_c`` of each class (``N`` the table's rows): an integer when ``total`` is.

    ``TV_c = sum_v max(0, q_cv - p_v)`` (the mass the class holds in excess of the table, which
    equals half the L1 distance as both sum to 1), so only the values present in a class count:
    ``n_c N TV_c = sum_{v in c} max(0, n_cv N - N_v n_c)``. A singleton holding ``v`` has
    ``N - N_v``. The float sums of bincount are exact while ``n_c N < 2**53`` (tables below
    about 9·10^7 rows); beyond, they are rounded as any float sum.
    """
    n = cells.n
    total = cells.total

    def excess(part: slice) -> np.ndarray:
        out = cells.cnt[part] * n
        size = sizes[cells.cls[part]].astype(total.dtype, copy=False)
        size *= total[cells.val[part]]
        out -= size
        del size
        return np.maximum(out, 0, out=out)

    num = _sum_by_class(cells.cls, len(sizes), excess)
    num[cells.alone_cls] = (n - total)[cells.alone_val]  # per value, then one gather
    return num


def total_variation(classes: ClassSizes, cells: Cells) -> np.ndarray:
    """Total variation ``0.5 * sum_v |q_cv - p_v|`` of each class.

    Computed as ``sum_{v in c} max(0, n_cv N - N_v n_c) / (n_c N)`` (see :func:`_tv_numerator`):
    with integer counts the division is the only rounding, so the figure is the correctly
    rounded value of the exact fraction (a class at exactly t = 0.2 measures 0.2).
    """
    sizes = _sizes(classes)
    tv = _tv_numerator(sizes, cells)
    tv /= sizes * float(cells.n)
    return np.clip(tv, 0.0, 1.0, out=tv)


def present_ranks(ranks: np.ndarray, total: np.ndarray) -> tuple[np.ndarray, int]:
    """Ranks renumbered over the values present (``total > 0``) and their number ``m``.

    The ordered distance ``|i - j| / (m - 1)`` is over the distinct values of the table
    measured; when rows are set aside (suppressed), a value they alone held leaves the order,
    as it is absent from the published table the gate measures.
    """
    present = np.unique(ranks[total > 0])
    if len(ranks) == 0 or len(present) == int(ranks.max()) + 1:
        return ranks, len(present)  # every position is held: nothing to renumber
    # a value no row holds takes the next position held (the last one past the end); only
    # classes set aside can hold it, and their figures are not read
    return np.minimum(np.searchsorted(present, ranks), max(len(present) - 1, 0)), len(present)


def ordered_emd(classes: ClassSizes, cells: Cells, ranks: np.ndarray) -> np.ndarray:
    """Ordered-distance EMD of each class: ``sum_{i<m-1} |Q_c(i) - P(i)| / (m - 1)``.

    ``ranks`` gives each value code's position in the value order (equal values share one);
    ``m`` is the number of positions held by values present in the table. In counts, with
    ``C_c(i)`` and ``N(i)`` the class's and the table's cumulative counts up to position ``i``:
    ``EMD_c = sum_{i<m-1} |N C_c(i) - n_c N(i)| / (n_c N (m - 1))``, a sum of integers when the
    counts are integers (exact while ``N^2 m < 2**53``; int64 beyond, rounded as floats).
    ``C_c`` is constant between the class's non-zero positions, so the sum is taken segment by
    segment with prefix sums of ``N(i)`` and a binary search for where ``n_c N(i)`` crosses
    ``N C_c``: cost proportional to the non-zero cells, not to classes × values. A singleton at
    position r has ``C = 0`` below r and 1 from r on.
    """
    sizes = _sizes(classes)
    n_classes = len(sizes)
    ranks, m = present_ranks(np.asarray(ranks), cells.total)
    if m <= 1:
        return np.zeros(n_classes)
    if _exact(cells) and float(cells.n) ** 2 * m >= 2.0 ** 62:
        # int64 would overflow: the same formulas in floating point
        cells = Cells(cells.cls, cells.val, cells.cnt, cells.alone_cls, cells.alone_val,
                      cells.n_values, cells.total.astype(float))
    ranked = cells.coarsen(ranks, m)  # cells sorted by class, then position
    cum = np.cumsum(ranked.total)  # N(i)
    n = cum[-1]
    prefix = np.concatenate([cum[:0], [0], np.cumsum(cum)])  # prefix[i] = N(0) + ... + N(i-1)
    out = np.zeros(n_classes)

    cls, rank = ranked.cls, ranked.val
    if len(cls):
        size = sizes[cls]
        csum = np.cumsum(ranked.cnt)
        starts = np.flatnonzero(np.r_[True, cls[1:] != cls[:-1]])
        run = np.diff(np.r_[starts, len(cls)])
        first = np.repeat(starts, run)
        level = n * (csum - (csum[first] - ranked.cnt[first]))  # N C_c, up to this position
        last = np.r_[cls[1:] != cls[:-1], True]
        next_rank = np.where(last, m - 1, np.r_[rank[1:], 0])
        a, b = rank, next_rank - 1  # segment [a, b] where C_c is constant; may be empty
        # first position of the segment where n_c N(i) > N C_c (N(i) is non-decreasing)
        crossing = level // size if _exact(ranked) else level / size
        s = np.clip(np.searchsorted(cum, crossing, side="right"), a, b + 1)
        seg = ((s - a) * level - size * (prefix[s] - prefix[a])
               + size * (prefix[b + 1] - prefix[s]) - (b + 1 - s) * level)
        out += np.bincount(cls, weights=seg, minlength=n_classes)
        # before a class's first non-zero position C_c = 0: n_c (N(0) + ... + N(r_first - 1))
        out += np.bincount(cls[starts], weights=size[starts] * prefix[rank[starts]],
                           minlength=n_classes)
    r = ranked.alone_val
    # singleton: sum_{i<r} N(i) + sum_{r<=i<=m-2} (N - N(i))
    out[ranked.alone_cls] = prefix[r] + (m - 1 - r) * n - (prefix[m - 1] - prefix[r])
    out /= sizes * (float(n) * (m - 1))
    return np.clip(out, 0.0, 1.0, out=out)


def hierarchical_emd(classes: ClassSizes, cells: Cells, sensitive: CodedSensitive) -> np.ndarray:
    """Hierarchical-distance EMD of each class: mean over levels 0..H-1 of the total variation.

    (With Li et al.'s cost ``height(N)/H * min(pos_extra, neg_extra)`` per inner node, the sum
    telescopes to ``sum_{j<H} sum_{N at level j} |Q_c(N) - P(N)| / (2H)``.) The levels' total
    variations are added as integer numerators (:func:`_tv_numerator`), divided once.
    """
    sizes = _sizes(classes)
    level_codes = sensitive.level_codes()
    height = len(level_codes) - 1
    num = np.zeros(len(sizes))
    for j in range(height):
        codes_j = level_codes[j]
        m_j = int(codes_j.max()) + 1 if len(codes_j) else 1
        num += _tv_numerator(sizes, cells if j == 0 else cells.coarsen(codes_j, m_j))
    num /= sizes * (float(cells.n) * max(height, 1))
    return np.clip(num, 0.0, 1.0, out=num)


def t_closeness(classes: ClassSizes, sensitive: CodedSensitive, cells: Cells) -> tuple[np.ndarray, str]:
    """Per-class distance to the table's distribution and the name of the distance used."""
    if sensitive.hierarchy is not None:
        return hierarchical_emd(classes, cells, sensitive), "hierarchical_emd"
    if sensitive.ranks is not None:
        return ordered_emd(classes, cells, sensitive.ranks), "ordered_emd"
    return total_variation(classes, cells), "total_variation"
