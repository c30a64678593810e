"""Equivalence classes of a table over its quasi-identifiers, computed once and vectorized.

Definition. Two rows are in the same equivalence class when they agree on every
quasi-identifier (QI). Every risk and utility figure of :mod:`anon_dagster.risk` derives from
the class of each row (``row_class``) and the size of each class (``sizes``).

Missing values (NaN, None, NA, NaT) in a QI form a value of their own: rows missing the same QI
share a class, and a missing value never merges with a real one (dropping such rows, as some
tools do, overstates k).

Computation: every QI column is coded into dense integers (:mod:`anon_dagster.risk.coding`),
the codes are folded into one key per row and the keys counted (:mod:`anon_dagster.risk.kernel`).
Only positions are used, never index labels, so any index (shuffled, duplicated, non-integer)
gives the same classes. Each build is counted (:mod:`anon_dagster.risk.builds`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..errors import DataError
from .builds import ClassBuildCount, class_builds, count_build, counting_class_builds
from .coding import FactorizeCache, factorize_column, factorize_values
from .kernel import (
    class_id_dtype,
    combine_codes,
    combine_columns,
    count_cells,
    fold_columns,
    group_keys,
)

# the name the risk modules used for factorize_values before coding had a module of its own
_factorize = factorize_values


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
        count_build()

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


__all__ = [
    "ClassBuildCount", "EquivalenceClasses", "FactorizeCache", "class_builds", "class_id_dtype",
    "combine_codes", "combine_columns", "count_cells", "counting_class_builds", "factorize_column",
    "factorize_values", "fold_columns", "group_keys",
]
