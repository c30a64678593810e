"""The counting kernel of the classes: codes folded into one key per row, equal keys grouped.

Per-column codes are combined into one int64 key by mixed-radix arithmetic (``key = key *
cardinality + code``; the key is re-densified before the product of cardinalities would
overflow), and the keys are counted with ``np.bincount``, or by sorting them when the key space
is much larger than the table, so memory stays proportional to the rows. Nothing loops over rows
or classes in Python. The anonymizer groups its rows with the same functions
(:func:`fold_columns`, :func:`group_keys`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

_INT64_MAX = np.iinfo(np.int64).max

# Above this many possible keys per row the key space is counted by sorting instead of bincount,
# so memory stays proportional to the table, not to the product of cardinalities.
_DENSE_KEYS_PER_ROW = 2


def class_id_dtype(n_rows: int) -> np.dtype:
    """The integer type of class ids for ``n_rows`` rows: int32 when it can number them all.

    There are at most as many classes as rows; int32 halves the per-row ``row_class`` array,
    which is most of the memory a measurement keeps on a table of a few bytes per row.
    """
    return np.dtype(np.int32) if n_rows < np.iinfo(np.int32).max else np.dtype(np.int64)


def _dense(key: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray]:
    """Dense class ids of ``key`` (values in [0, space)) and the size of each class.

    Ids are of :func:`class_id_dtype` and follow the order of the keys.
    """
    n = len(key)
    ids = class_id_dtype(n)
    if space <= max(_DENSE_KEYS_PER_ROW * n, 1 << 16):
        counts = np.bincount(key, minlength=space)
        present = counts > 0
        class_of_key = np.cumsum(present, dtype=ids)
        class_of_key -= 1
        return class_of_key[key], counts[present].astype(np.int64)
    # A sort, not a hash table: a hash of n int64 keys takes some 3-4 times the key's memory,
    # a sort (permutation + sorted keys) twice; class ids follow the key order, as above.
    row_bits = max(n - 1, 1).bit_length()
    if n and (space - 1).bit_length() + row_bits <= 63:
        # each key with its row in the low bits: one sort of int64 values gives the sorted keys
        # and the permutation together (faster than an argsort and a gather of the keys)
        packed = key.astype(np.int64, copy=True)
        packed <<= row_bits
        packed |= np.arange(n, dtype=np.int64)
        packed.sort()
        ordered = packed >> row_bits
        packed &= (1 << row_bits) - 1
        order = packed
        del packed
    else:
        order = np.argsort(key)
        ordered = key[order]
    starts = np.empty(n, dtype=bool)
    starts[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    del ordered
    class_sorted = np.cumsum(starts, dtype=ids)
    class_sorted -= 1
    row_class = np.empty(n, dtype=ids)
    row_class[order] = class_sorted
    del order, class_sorted
    # a class's size: the distance from its first sorted row to the next class's
    sizes = np.diff(np.append(np.flatnonzero(starts), n)).astype(np.int64)
    return row_class, sizes


def fold_columns(columns: Iterable[tuple[np.ndarray, int]]) -> tuple[np.ndarray | None, int]:
    """One int64 key per row from ``(codes, cardinality)`` per column, and its key space.

    ``key = key * cardinality + code``, column after column; before the product of
    cardinalities would overflow int64 the key is re-densified (:func:`_dense`: class ids in
    key order), so any number of columns folds. ``columns`` may be a generator: each column is
    folded in and released before the next one is coded. ``(None, 1)`` for no column.
    """
    key: np.ndarray | None = None
    space = 1
    for col, card in columns:
        card = int(max(card, 1))
        if key is None:
            key = np.asarray(col).astype(np.int64, copy=True)
            space = card
            del col  # release this column's codes before the next one is coded
            continue
        if space > _INT64_MAX // card:
            key, sizes = _dense(key, space)
            key = key.astype(np.int64, copy=False)  # dense ids may be int32: widen to fold on
            space = len(sizes)
        if card > 1:
            key *= card
            key += col
        space *= card
        del col
    return key, space


def group_keys(key: np.ndarray, space: int, weights: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group equal keys (values in [0, space)): the distinct keys in ascending order, each
    input's group (int64) and each group's count, or summed ``weights``.

    The classes' own kernel (:func:`_dense`: a bincount over a small key space, a sort
    otherwise); integer weights give integer sums.
    """
    ids, counts = _dense(key, space)
    uniq = np.empty(len(counts), dtype=np.int64)
    uniq[ids] = key
    ids = ids.astype(np.int64, copy=False)
    if weights is None:
        return uniq, ids, counts
    sums = np.bincount(ids, weights=weights, minlength=len(counts))
    if np.asarray(weights).dtype.kind in "iub":
        sums = np.rint(sums).astype(np.int64)
    return uniq, ids, sums


def combine_columns(columns: Iterable[tuple[np.ndarray, int]], n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Row class ids and class sizes from ``(codes, cardinality)`` per column.

    The codes are folded into one int64 key (:func:`fold_columns`) and counted at the end.
    ``columns`` may be a generator: at most one column's codes are alive besides the key.
    """
    key, space = fold_columns(columns)
    if key is None:
        return (np.zeros(n_rows, dtype=class_id_dtype(n_rows)),
                np.array([n_rows] if n_rows else [], dtype=np.int64))
    return _dense(key, space)


def combine_codes(codes: Sequence[np.ndarray], cardinalities: Sequence[int], n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Row class ids and class sizes from per-column codes (see :func:`combine_columns`)."""
    if len(codes) != len(cardinalities):
        raise ValueError("codes and cardinalities must have the same length")
    return combine_columns(zip(codes, cardinalities, strict=True), n_rows)


def count_cells(row_class: np.ndarray, codes: np.ndarray, n_classes: int, n_values: int,
                rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The non-zero cells of the class × value count matrix over the rows selected.

    ``row_class[i]`` (in [0, n_classes)) and ``codes[i]`` (in [0, n_values)) are row ``i``'s
    class and value; ``rows`` (a boolean mask) selects the rows counted, all by default.
    Returns int64 ``(class_id, value_code, count)``, one entry per (class, value) pair present,
    in no particular order. Pairs are counted by bincount when the ``n_classes × n_values``
    space is small next to the rows, else by hashing, so memory stays proportional to the rows.
    """
    # the selected rows are copied here, not by the caller, so each copy is freed as soon as
    # it is folded into the key
    rc = row_class if rows is None else row_class[rows]
    if len(rc) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    key = rc.astype(np.int64)  # class ids may be int32: widen before the product
    del rc
    key *= n_values
    key += (codes if rows is None else codes[rows]).astype(np.int64, copy=False)
    space = n_classes * n_values
    if space <= max(_DENSE_KEYS_PER_ROW * len(key), 1 << 16):
        flat = np.bincount(key, minlength=space)
        cells = np.flatnonzero(flat)
        counts = flat[cells]
    else:
        ids, cells = pd.factorize(key, sort=False)
        counts = np.bincount(ids)
    return cells // n_values, cells % n_values, counts.astype(np.int64, copy=False)


def distinct_sizes(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct class sizes (ascending) and the number of classes of each:
    ``np.unique(sizes, return_counts=True)``, by a bincount when the largest size is small.

    Figures of the class sizes alone are taken over these: a raw table has about as many classes
    as rows, but few distinct sizes.
    """
    sizes = np.asarray(sizes)
    countable = sizes.dtype.kind == "i" or (sizes.dtype.kind == "u" and sizes.dtype.itemsize < 8)
    if countable and len(sizes) and sizes.min() >= 0 and sizes.max() <= 2 * len(sizes) + 65536:
        per_size = np.bincount(sizes)
        size = np.flatnonzero(per_size)
        return size.astype(sizes.dtype, copy=False), per_size[size]
    return np.unique(sizes, return_counts=True)


__all__ = [
    "class_id_dtype", "combine_codes", "combine_columns", "count_cells", "distinct_sizes", "fold_columns",
    "group_keys",
]
