"""Equivalence classes of a table over its quasi-identifiers, computed once and vectorized.

Definition. Two rows are in the same equivalence class when they agree on every
quasi-identifier (QI). Every risk and utility figure of :mod:`anon_dagster.risk` derives from
the class of each row (``row_class``) and the size of each class (``sizes``).

Missing values (NaN, None, NA, NaT) in a QI form a value of their own: rows missing the same QI
share a class, and a missing value never merges with a real one (dropping such rows, as some
tools do, overstates k).

Computation: every QI column is factorized into dense integer codes (the codes of a pandas
categorical or of an Arrow dictionary column are used as they are), the codes are combined
into one int64 key by mixed-radix arithmetic (``key = key * cardinality + code``; the key is
re-factorized to dense codes before the product of cardinalities would overflow), and classes
are counted with ``np.bincount`` (or by sorting the keys when the key space is much larger
than the table). Nothing loops over rows or classes in Python. Only positions are used, never
index labels, so any index (shuffled, duplicated, non-integer) gives the same classes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import DataError

_INT64_MAX = np.iinfo(np.int64).max

# Above this many possible keys per row the key space is counted by sorting instead of bincount,
# so memory stays proportional to the table, not to the product of cardinalities.
_DENSE_KEYS_PER_ROW = 2


# How many EquivalenceClasses this process has built (see class_builds); a lock because
# Dagster may run several measurements in threads of one process.
_builds = 0
_builds_lock = threading.Lock()


def class_builds() -> int:
    """The number of :class:`EquivalenceClasses` built in this process so far."""
    return _builds


def _count_build() -> None:
    global _builds
    with _builds_lock:
        _builds += 1


class ClassBuildCount:
    """The class builds of one :func:`counting_class_builds` block.

    ``count`` is the number of :class:`EquivalenceClasses` built since the block began; once the
    block has ended it stays at the number built inside it.
    """

    def __init__(self) -> None:
        self._start = class_builds()
        self._end: int | None = None

    @property
    def count(self) -> int:
        return (self._end if self._end is not None else class_builds()) - self._start

    def __repr__(self) -> str:
        return f"ClassBuildCount(count={self.count})"


@contextmanager
def counting_class_builds() -> Iterator[ClassBuildCount]:
    """Count the :class:`EquivalenceClasses` built inside a ``with`` block.

    The counter is process-wide: builds by other threads during the block are counted too.
    """
    counter = ClassBuildCount()
    try:
        yield counter
    finally:
        counter._end = class_builds()


class FactorizeCache:
    """``pd.factorize`` of columns, memoized by the data they hold, for one measurement.

    ``measure_risk`` codes the same column several times: as a QI, in the population join,
    against a hierarchy, in a utility query, as a subgroup; and the table is often its own
    "original" or population. Entries are keyed by the identity of the column's data (the
    numpy buffer, or the Arrow buffers), not by the Series object, so ``df[q]``,
    ``df[qis][q]`` and ``original[q]`` of the same frame share one factorization. The cached
    Series is held, so its buffers stay alive and a key cannot be reused by other data.

    Only columns whose name is in ``keep`` are stored (a column coded once would only cost
    memory: ``n`` int64 codes); other columns are factorized as usual. Returned codes are
    read-only: callers copy before changing them.
    """

    def __init__(self, keep: Iterable[object] = ()):
        self.keep = set(keep)
        self._entries: dict[tuple, tuple[pd.Series, np.ndarray, pd.Index]] = {}
        self.hits = 0

    @staticmethod
    def _key(series: pd.Series) -> tuple | None:
        array = series.array
        dtype = series.dtype
        if isinstance(dtype, np.dtype):
            data = series.to_numpy(copy=False)
            if not isinstance(data, np.ndarray) or data.dtype != dtype:
                return None
            return ("numpy", data.__array_interface__["data"][0], data.strides, len(data), dtype.str)
        if isinstance(array, pd.arrays.ArrowExtensionArray):
            arrow = array.__arrow_array__()  # the array's own Arrow data, no conversion
            chunks = arrow.chunks if isinstance(arrow, pa.ChunkedArray) else [arrow]
            buffers = tuple(
                (chunk.offset, len(chunk), tuple(b.address if b is not None else 0 for b in chunk.buffers()))
                for chunk in chunks
            )
            return ("arrow", str(dtype), str(arrow.type), buffers)
        return None

    def factorize(self, series: pd.Series) -> tuple[np.ndarray, pd.Index]:
        """``pd.factorize(series, use_na_sentinel=True)``: codes (-1 for missing) and uniques."""
        store = series.name in self.keep
        key = self._key(series) if store or self._entries else None
        if key is not None:
            hit = self._entries.get(key)
            if hit is not None:
                self.hits += 1
                return hit[1], hit[2]
        codes, uniques = pd.factorize(series, use_na_sentinel=True, sort=False)
        if key is not None and store:
            codes.flags.writeable = False
            self._entries[key] = (series, codes, uniques)
        return codes, uniques


def _factorize(series: pd.Series, cache: FactorizeCache | None) -> tuple[np.ndarray, pd.Index]:
    if cache is None:
        return pd.factorize(series, use_na_sentinel=True, sort=False)
    return cache.factorize(series)


def factorize_column(series: pd.Series, cache: FactorizeCache | None = None) -> tuple[np.ndarray, int]:
    """Dense codes of one column and its cardinality; missing values get a code of their own.

    Returns ``(codes, cardinality)`` with ``codes`` an integer array (0 <= code < cardinality,
    positional). Categorical columns use their category codes and Arrow dictionary columns their
    dictionary indices without re-hashing the values (unused categories leave gaps, which the
    class counting removes). Missing values get code ``cardinality - 1``.
    """
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        codes = series.cat.codes.to_numpy()
        n = len(dtype.categories)
        return _missing_last(codes, n)
    if isinstance(dtype, pd.ArrowDtype) and pa.types.is_dictionary(dtype.pyarrow_dtype):
        return _factorize_arrow_dictionary(series)
    codes, uniques = _factorize(series, cache)
    return _missing_last(codes, len(uniques))


def _missing_last(codes: np.ndarray, n: int) -> tuple[np.ndarray, int]:
    """Replace the missing sentinel -1 by ``n`` (a value of its own)."""
    if len(codes) and codes.min() < 0:
        codes = codes.astype(np.int64, copy=True)
        codes[codes < 0] = n
        return codes, n + 1
    return codes, max(n, 1)


def _factorize_arrow_dictionary(series: pd.Series) -> tuple[np.ndarray, int]:
    chunked = series.array.__arrow_array__()
    if isinstance(chunked, pa.Array):
        chunked = pa.chunked_array([chunked])
    chunked = chunked.unify_dictionaries()
    if chunked.num_chunks == 0:
        return np.zeros(0, dtype=np.int64), 1
    dictionary = chunked.chunk(0).dictionary
    # A dictionary may itself hold nulls or repeated values: map its entries to dense codes so
    # equal values (and every null) share one code.
    dict_codes, uniques = pd.factorize(
        pd.Series(dictionary.to_pandas(types_mapper=None)), use_na_sentinel=True
    )
    n = len(uniques)
    remap = np.where(dict_codes < 0, n, dict_codes).astype(np.int64)
    null_code = len(dictionary)
    remap = np.append(remap, n)  # index null_code: a null index is a missing value too
    indices = np.concatenate(
        [
            chunk.indices.fill_null(null_code).to_numpy(zero_copy_only=False).astype(np.int64)
            for chunk in chunked.chunks
        ]
    )
    codes = remap[indices]
    if len(codes) and codes.max() == n:
        return codes, n + 1
    return codes, max(n, 1)


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


class EquivalenceClasses:
    """The equivalence classes of a table over its quasi-identifiers.

    Attributes:
        qis: the quasi-identifier column names, in the order given.
        row_class: signed integer array (int32 below 2**31 - 1 rows, else int64), the class
            id (0..n_classes-1) of each row, by position. Widen it before arithmetic that can
            exceed int32 (``row_class.astype(np.int64) * n_values``).
        sizes: int64 array, the number of rows of each class.
        n_rows, n_classes: table rows and number of classes.

    Class ids are dense and deterministic for a given input, but carry no meaning of their own;
    use :meth:`keys` for each class's QI values.
    """

    def __init__(self, qis: Sequence[str], row_class: np.ndarray, sizes: np.ndarray,
                 frame: pd.DataFrame | None = None, codes: Sequence[np.ndarray] | None = None):
        self.qis = list(qis)
        self.row_class = row_class
        self.sizes = sizes
        self.n_rows = int(len(row_class))
        self.n_classes = int(len(sizes))
        self._frame = frame
        self._codes = codes
        self._first: np.ndarray | None = None
        _count_build()

    # ----- construction ---------------------------------------------------------------------
    @classmethod
    def from_frame(cls, df: pd.DataFrame, qis: Sequence[str],
                   cache: FactorizeCache | None = None) -> EquivalenceClasses:
        """Classes of ``df`` over the columns ``qis`` (missing values are a value of their own).

        Raises DataError naming a QI that is not a column of ``df``. An empty QI list puts every
        row in one class. ``cache`` shares the columns' factorizations with later figures.
        """
        qis = list(qis)
        absent = [q for q in qis if q not in df.columns]
        if absent:
            raise DataError(
                f"quasi-identifier {absent[0]!r} is not a column of the data "
                f"(columns: {', '.join(map(str, df.columns))})"
            )
        if len(set(qis)) != len(qis):
            dup = next(q for q in qis if qis.count(q) > 1)
            raise DataError(f"quasi-identifier {dup!r} is listed twice")
        # a generator: one column's codes alive at a time (see combine_columns)
        row_class, sizes = combine_columns((factorize_column(df[q], cache) for q in qis), len(df))
        return cls(qis, row_class, sizes, frame=df[qis] if qis else None)

    @classmethod
    def from_codes(cls, codes: Sequence[np.ndarray], cardinalities: Sequence[int],
                   qis: Sequence[str] | None = None, check: bool = True) -> EquivalenceClasses:
        """Classes from already-coded columns: ``codes[i]`` holds values in [0, cardinalities[i]).

        This is how a lattice search rolls a node up without touching the data again: map each
        column's level-0 codes through the hierarchy's ``level_codes`` and call this. ``qis``
        names the columns (default ``q0, q1, ...``); ``check=False`` skips the range check.
        """
        codes = [np.asarray(c) for c in codes]
        if len(codes) != len(cardinalities):
            raise ValueError("codes and cardinalities must have the same length")
        names = list(qis) if qis is not None else [f"q{i}" for i in range(len(codes))]
        if len(names) != len(codes):
            raise ValueError("qis and codes must have the same length")
        n_rows = len(codes[0]) if codes else 0
        for name, c, card in zip(names, codes, cardinalities, strict=True):
            if len(c) != n_rows:
                raise ValueError(f"codes of {name!r} have {len(c)} rows, expected {n_rows}")
            if check and len(c) and (c.min() < 0 or c.max() >= card):
                raise ValueError(f"codes of {name!r} fall outside [0, {card})")
        row_class, sizes = combine_codes(codes, cardinalities, n_rows)
        return cls(names, row_class, sizes, codes=codes)

    # ----- views ---------------------------------------------------------------------------
    @property
    def first_rows(self) -> np.ndarray:
        """Position of the first row of each class (int64, one per class)."""
        if self._first is None:
            # written in reverse row order, so the last write to a class is its first row
            first = np.empty(self.n_classes, dtype=np.int64)
            first[self.row_class[::-1]] = np.arange(self.n_rows - 1, -1, -1, dtype=np.int64)
            self._first = first
        return self._first

    def keys(self) -> pd.DataFrame:
        """One row per class (in class-id order) with the class's QI values.

        For classes built from codes, the values are the codes.
        """
        first = self.first_rows
        if self._frame is not None:
            return self._frame.iloc[first].reset_index(drop=True)
        if self._codes is not None:
            return pd.DataFrame({q: c[first] for q, c in zip(self.qis, self._codes, strict=True)})
        return pd.DataFrame(index=range(self.n_classes))

    def row_sizes(self) -> np.ndarray:
        """The size of each row's class (int64, one per row)."""
        return self.sizes[self.row_class]

    def counts_by(self, codes: np.ndarray, n_values: int, sparse: bool = False):
        """Per-class counts of a coded column: matrix ``n_classes × n_values``.

        ``codes`` holds one code in [0, n_values) per row (by position). Dense int64 array by
        default; ``sparse=True`` returns a ``scipy.sparse.csr_matrix`` (for many classes times
        many values).
        """
        codes = np.asarray(codes)
        if len(codes) != self.n_rows:
            raise ValueError(f"codes have {len(codes)} rows, the classes {self.n_rows}")
        if sparse:
            from scipy.sparse import csr_matrix

            cls_, val, cnt = self.pair_counts(codes, n_values)
            return csr_matrix((cnt, (cls_, val)), shape=(self.n_classes, n_values))
        flat = np.bincount(self.row_class.astype(np.int64) * n_values + codes,
                           minlength=self.n_classes * n_values)
        return flat.reshape(self.n_classes, n_values).astype(np.int64, copy=False)

    def pair_counts(self, codes: np.ndarray, n_values: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The non-zero cells of the class × value count matrix, in no particular order.

        Returns ``(class_id, value_code, count)`` arrays, one entry per (class, value) present.
        Memory is proportional to the table, whatever ``n_classes × n_values`` is: a row alone
        in its class is a cell of count 1 as it is, and only the rows of larger classes are
        counted (by bincount when their key space is small, else by hashing).
        """
        codes = np.asarray(codes)
        if len(codes) != self.n_rows:
            raise ValueError(f"codes have {len(codes)} rows, the classes {self.n_rows}")
        alone = self.sizes[self.row_class] == 1
        n_alone = int(alone.sum())
        cls, val, counts = count_cells(self.row_class, codes, self.n_classes, n_values,
                                       rows=~alone if n_alone else None)
        if n_alone:
            cls = np.concatenate([cls, self.row_class[alone]])
            val = np.concatenate([val, codes[alone].astype(np.int64, copy=False)])
            counts = np.concatenate([counts, np.ones(n_alone, dtype=np.int64)])
        return cls, val, counts

    def __repr__(self) -> str:
        return f"EquivalenceClasses(qis={self.qis}, n_rows={self.n_rows}, n_classes={self.n_classes})"
