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
The t-closeness distances are computed in :mod:`anon_dagster.risk.closeness`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import DataError
from ..hierarchies import Hierarchy, _as_label
from .classes import EquivalenceClasses
from .kernel import class_id_dtype, count_cells

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
    largest = int(sizes.max()) if n_classes else 0
    if sizes.dtype.kind in "iu" and largest <= _TABLE_PER_ITEM * (len(cells.cls) + n_classes):
        # ln n, n ln n and the class's scale for every n up to the largest class, computed once
        # and read by index: the same values as computing them per cell and per class below
        log, nlogn, scale = _entropy_tables(largest)
        entropy = log.take(sizes)
        term_of, scale_of_size = nlogn.take, scale.take
    else:
        entropy = np.log(sizes, dtype=float)
        term_of, scale_of_size = _nlogn, _scale_of

    def terms(part: slice) -> np.ndarray:
        term = term_of(cells.cnt[part])
        np.ldexp(term, scale_of_size(sizes.take(cells.cls[part])), out=term)
        return np.rint(term, out=term)

    # integer-valued terms below 2**53 in every class: the float sums are exact
    s = _sum_by_class(cells.cls, n_classes, terms)
    # singletons (most classes of a raw table) have no term: H = ln n_c
    held = np.flatnonzero(s != 0)
    held_sizes = sizes.take(held)
    entropy[held] -= np.ldexp(s.take(held), -scale_of_size(held_sizes)) / held_sizes
    del s, held, held_sizes
    # rounding can leave -1e-16 for a class of a single value
    np.maximum(entropy, 0.0, out=entropy)
    return Diversity(distinct, entropy)


# The tables of diversity() are used while the largest class is at most this many times the
# cells and classes counted (beyond, one huge class would make the tables the main cost).
_TABLE_PER_ITEM = 2


def _nlogn(n: np.ndarray) -> np.ndarray:
    """``n ln n`` (float) of integer counts (0 for n = 1)."""
    term = n.astype(float)
    log = np.log(term)
    term *= log
    return term


def _scale_of(size: np.ndarray) -> np.ndarray:
    """``k_c`` of classes of ``size`` rows: ``n_c ln n_c * 2**k_c < 2**52``, the largest possible
    sum of a class's terms (see :func:`diversity`)."""
    return (52 - np.frexp(_nlogn(size))[1]).astype(np.int32)


def _entropy_tables(largest: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``ln n``, ``n ln n`` and :func:`_scale_of` of every ``n`` in ``0..largest`` (0 gives 0)."""
    n = np.arange(1, largest + 1)
    log = np.zeros(largest + 1)
    log[1:] = np.log(n, dtype=float)
    nlogn = np.zeros(largest + 1)
    nlogn[1:] = _nlogn(n)
    scale = np.zeros(largest + 1, dtype=np.int32)
    scale[1:] = _scale_of(n)
    return log, nlogn, scale


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

