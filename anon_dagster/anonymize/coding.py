"""Integer coding of quasi-identifiers: factorize once, generalize by indexing code maps.

Definitions. A QI column is factorized once into level-0 codes (one dense code per distinct
value; a missing value is a value of its own). Its hierarchy gives, for every level ``l``, a map
``level_maps[l][code0] -> code_l`` (dense codes of that level's labels) and the labels
themselves ``labels[l][code_l]``. Generalizing a column to level ``l`` is one ``take`` on the
rows' codes; rolling a set of classes up from level ``a`` to a coarser level ``b`` is one
``take`` on the classes' codes (``map_between(a, b)``). No algorithm here touches strings per
row.

Partition keys are coded like other QIs but with a single level (they are never generalized).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import DataError, HierarchyError
from ..hierarchies import TOP, Hierarchy, TableHierarchy, _as_label
from ..risk.classes import fold_columns, group_keys

_INT64_MAX = np.iinfo(np.int64).max


@dataclass
class CodedQI:
    """One quasi-identifier, factorized, with its hierarchy's per-level code maps.

    Attributes:
        name: column name.
        codes: int64 level-0 code of each row (positional).
        uniques: object array, the distinct value of each level-0 code.
        level_maps: ``level_maps[l][code0]`` is the dense code at level ``l`` (level 0 = identity).
        labels: ``labels[l][code_l]`` is the published label of a code at level ``l``.
        hierarchy: the hierarchy (None for a partition key, which has one level).
    """

    name: str
    codes: np.ndarray
    uniques: np.ndarray
    level_maps: list[np.ndarray]
    labels: list[np.ndarray]
    hierarchy: Hierarchy | None = None
    _between: dict[tuple[int, int], np.ndarray] = field(default_factory=dict, repr=False)
    _counts: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_levels(self) -> int:
        return len(self.level_maps)

    def cardinality(self, level: int) -> int:
        """Number of distinct codes at ``level``."""
        return len(self.labels[level])

    def map_between(self, a: int, b: int) -> np.ndarray:
        """``m[code_a] = code_b`` for levels ``a <= b`` (b coarsens a, so the map is a function)."""
        key = (a, b)
        if key not in self._between:
            if a == b:
                m = np.arange(self.cardinality(a), dtype=np.int64)
            else:
                # a representative level-0 code for every code of level a
                rep = np.empty(self.cardinality(a), dtype=np.int64)
                rep[self.level_maps[a][::-1]] = np.arange(len(self.level_maps[a]))[::-1]
                m = self.level_maps[b][rep]
            self._between[key] = m
        return self._between[key]

    def row_codes(self, level: int) -> np.ndarray:
        """Each row's code at ``level``."""
        return self.codes if level == 0 else self.level_maps[level][self.codes]

    def value_counts(self) -> np.ndarray:
        """Rows per level-0 code (counted once)."""
        if self._counts is None:
            self._counts = np.bincount(self.codes, minlength=len(self.uniques)).astype(np.int64)
        return self._counts


def factorize(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Dense int64 codes (positional, in order of first appearance) and the distinct values;
    missing is a value of its own (``pd.factorize(..., use_na_sentinel=False)``).

    A column of Arrow strings (pandas' default ``str``, ``string[pyarrow]``, an Arrow string
    dtype) is dictionary-encoded by Arrow itself: the same codes and values as pandas gives
    (missing as the dtype's own missing value), without its round trip through pandas arrays.
    """
    chunked = _arrow_strings(series)
    if chunked is not None:
        arr = chunked.chunk(0) if chunked.num_chunks == 1 else chunked.combine_chunks()
        encoded = arr.dictionary_encode(null_encoding="encode")
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        uniques = np.array(encoded.dictionary.to_numpy(zero_copy_only=False), dtype=object)
        if encoded.dictionary.null_count:
            uniques[np.flatnonzero(encoded.dictionary.is_null().to_numpy(zero_copy_only=False))] = (
                series.dtype.na_value)
        return codes, uniques
    # a numpy integer column (a nullable Int64 one may hold missing values: pandas codes it)
    values = series.to_numpy() if isinstance(series.dtype, np.dtype) and series.dtype.kind in "iu" else None
    if values is not None and len(values):
        low, high = int(values.min()), int(values.max())
        if high - low <= 4 * len(values):
            return _small_ints(values - low, low, high - low + 1)
    codes, uniques = pd.factorize(series, use_na_sentinel=False)
    return codes.astype(np.int64, copy=False), np.asarray(uniques, dtype=object)


def _small_ints(offsets: np.ndarray, low: int, span: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`factorize` of integers ``low + offsets`` within ``span`` values: each value's first
    row found by one reverse scatter, the values present numbered in order of those rows (no
    hash table); the distinct values as Python ints, as pandas gives them."""
    n = len(offsets)
    first = np.full(span, n, dtype=np.int64)
    first[offsets[::-1]] = np.arange(n - 1, -1, -1, dtype=np.int64)
    present = np.flatnonzero(first < n)
    present = present[np.argsort(first[present], kind="stable")]
    code_of = np.empty(span, dtype=np.int64)
    code_of[present] = np.arange(len(present), dtype=np.int64)
    uniques = np.empty(len(present), dtype=object)
    uniques[:] = (present + low).tolist()
    return code_of[offsets], uniques


def _arrow_strings(series: pd.Series) -> pa.ChunkedArray | None:
    """The column's Arrow string data when pandas holds it as Arrow strings, else None."""
    dtype = series.dtype
    if isinstance(dtype, pd.StringDtype):
        if not str(dtype.storage).startswith("pyarrow"):
            return None
    elif not (isinstance(dtype, pd.ArrowDtype)
              and (pa.types.is_string(dtype.pyarrow_dtype) or pa.types.is_large_string(dtype.pyarrow_dtype))):
        return None
    data = series.array.__arrow_array__()
    return data if isinstance(data, pa.ChunkedArray) else pa.chunked_array([data])


def label_codes(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense int64 codes of ``labels`` in order of first appearance, and the distinct labels:
    ``pd.factorize``'s answer. A hierarchy level has few labels, so they are numbered by one
    dictionary pass (a fraction of pd.factorize's fixed cost) when they are all strings."""
    values = labels.tolist()
    if len(values) > 4096 or not all(type(v) is str for v in values):
        codes, uniques = pd.factorize(labels)
        return codes.astype(np.int64, copy=False), np.asarray(uniques, dtype=object)
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in values), dtype=np.int64, count=len(values))
    uniques = np.empty(len(index), dtype=object)
    uniques[:] = list(index)
    return codes, uniques


def code_qi(series: pd.Series, hierarchy: Hierarchy | None, check: bool = True) -> CodedQI:
    """Factorize ``series`` and build its level maps from ``hierarchy``.

    Raises HierarchyError when a value is not covered by the hierarchy (naming the value and the
    column) or when a level does not coarsen the one before over the values present.
    """
    name = str(series.name)
    codes, uniques = factorize(series)
    if hierarchy is None:
        labels0 = np.array([_as_label(v) for v in uniques], dtype=object)
        return CodedQI(name, codes, uniques, [np.arange(len(uniques), dtype=np.int64)], [labels0])
    table = _label_table(hierarchy, uniques)
    level_maps, labels = [], []
    for lvl in range(hierarchy.n_levels):
        if lvl == 0:
            level_maps.append(np.arange(len(uniques), dtype=np.int64))
            labels.append(table[:, 0])
            continue
        c, u = label_codes(table[:, lvl])
        level_maps.append(c)
        labels.append(u)
    if check and len(uniques) and not _coarsens(table, level_maps):
        # the hierarchy's own check names the first problem
        problems = hierarchy.check_coarsening(uniques) or ["a level does not coarsen the one before"]
        raise HierarchyError(
            f"column {name!r}: the hierarchy does not coarsen monotonically: {problems[0]}"
        )
    return CodedQI(name, codes, uniques, level_maps, labels, hierarchy)


def _label_table(hierarchy: Hierarchy, uniques: np.ndarray) -> np.ndarray:
    """``hierarchy.table(uniques)``. For a table hierarchy and distinct strings or integers it
    is built from the hierarchy's rows directly: a value's label is the string itself (an
    integer's, its decimal digits, as ``table`` labels it) and its row holds the others (what
    :meth:`TableHierarchy._labels` looks up), without the per-value checks a general value
    needs; any other value (a float, a date, a missing value, one the table lacks) goes
    through ``table``, which labels or names it."""
    if type(hierarchy) is TableHierarchy:
        values = [v if type(v) is str else str(v) if type(v) is int else None for v in uniques.tolist()]
        rows = hierarchy.rows
        if all(v in rows for v in values):
            out = np.empty((len(values), hierarchy.n_levels), dtype=object)
            out[:, 0] = values
            if values:
                out[:, 1:] = [rows[v] for v in values]
            return out
    return hierarchy.table(uniques)


def _coarsens(table: np.ndarray, level_maps: Sequence[np.ndarray]) -> bool:
    """Whether every label of each level maps to one label of the next and the top is ``*``
    (:meth:`Hierarchy.check_coarsening`'s conditions, on the label codes: a few array passes).

    A level's codes ``codes`` coarsen the codes ``below`` of the level before when ``below``
    determines ``codes``: any one value's code below, mapped through, gives every value's."""
    if not (table[:, -1] == TOP).all():
        return False
    below = label_codes(table[:, 0])[0]  # level 0's labels, not its values
    for codes in level_maps[1:]:
        image = np.empty(int(below.max()) + 1, dtype=np.int64)
        image[below] = codes
        if not np.array_equal(image[below], codes):
            return False
        below = codes
    return True


def combine(columns: Sequence[np.ndarray], cardinalities: Sequence[int]) -> tuple[np.ndarray, int]:
    """Mixed-radix int64 key of several code columns and the size of its key space.

    The risk kernel's fold (:func:`anon_dagster.risk.classes.fold_columns`): when the product
    of cardinalities would overflow int64 the partial key is re-densified first, so any number
    of columns can be combined.
    """
    if not len(columns):
        raise DataError("no column to combine")
    if len(columns) != len(cardinalities):
        raise ValueError("columns and cardinalities must have the same length")
    return fold_columns(zip(columns, cardinalities, strict=True))


def group(key: np.ndarray, space: int, weights: np.ndarray | None = None
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group equal keys: (unique keys sorted, inverse index, summed weights or counts).

    The risk kernel's grouping (:func:`anon_dagster.risk.classes.group_keys`): a bincount over
    the key space when it is small relative to the input, a sort otherwise.
    """
    return group_keys(np.asarray(key), space, weights)


def split_key(key: np.ndarray, cardinalities: Sequence[int]) -> list[np.ndarray]:
    """Inverse of :func:`combine` when no re-densification happened: the per-column codes."""
    out = []
    rest = key.copy()
    for card in reversed(cardinalities):
        card = max(int(card), 1)
        out.append(rest % card)
        rest //= card
    return out[::-1]


def key_fits(cardinalities: Sequence[int]) -> bool:
    """Whether the mixed-radix key of these cardinalities fits in int64 without re-densifying."""
    space = 1
    for c in cardinalities:
        space *= max(int(c), 1)
        if space > _INT64_MAX:
            return False
    return True
