"""Columns coded as dense integers, the first step of every class build and of the joins after it.

A column is factorized into one code per distinct value, by position (index labels are never
read); a missing value (NaN, None, NA, NaT) is a value of its own. The codes of a pandas
categorical or of an Arrow dictionary column are used as they are, without hashing the values
again. :class:`FactorizeCache` shares one column's factorization between the figures of one
measurement that code it again (a QI joined to the population, a generalized column, a query or
subgroup column).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa


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


def factorize_values(series: pd.Series, cache: FactorizeCache | None) -> tuple[np.ndarray, pd.Index]:
    """``pd.factorize(series, use_na_sentinel=True)``, through ``cache`` when one is given."""
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
    codes, uniques = factorize_values(series, cache)
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


__all__ = ["FactorizeCache", "factorize_column", "factorize_values"]
