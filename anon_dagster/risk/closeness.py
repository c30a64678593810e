"""t-closeness: the distance between each class's sensitive distribution and the table's.

Definitions (:mod:`anon_dagster.risk.sensitive` for the notation and the class cells):

- nominal values (equal ground distance): total variation ``0.5 * sum_v |q_cv - p_v|``;
- ordinal or numeric values, ``m`` of them in order (ordered distance ``|i - j| / (m - 1)``):
  ``EMD = sum_{i < m-1} |Q_c(i) - P(i)| / (m - 1)`` with ``Q_c``, ``P`` the cumulative distributions;
- values with a generalization hierarchy of height ``H`` (ground distance = height of the lowest
  common ancestor / ``H``): the mean over levels ``0..H-1`` of the total variation between the
  distributions of the values' labels at that level.

The table's ``t_closeness`` is the largest over classes. Figures are computed from integer counts
where the cells hold integers, so the search and the gate get the same bits.
"""

from __future__ import annotations

import numpy as np

from .sensitive import Cells, ClassSizes, CodedSensitive, _sizes, _sum_by_class


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
