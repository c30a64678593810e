"""MDAV microaggregation of numeric quasi-identifiers (Domingo-Ferrer & Torra 2005).

Definition. Rows are grouped into groups of at least k rows (at most 2k - 1) of close values,
and each numeric QI of a row is replaced by its group's mean: every group is then a class of
at least k rows on those QIs. MDAV (Maximum Distance to Average Vector), on the QIs standardized
to zero mean and unit variance: while at least 3k rows remain, take the row r farthest from the
centroid of the remaining rows and group it with its k - 1 nearest neighbours, then the row s
farthest from r and group it with its k - 1 nearest neighbours; with 2k..3k-1 rows left make one
group around the farthest row and one of the rest; with fewer than 2k, one group.

Types are kept: an integer column's means are rounded back to integers.
Cost is O(n² / k) distance evaluations (vectorized): fine for tens of thousands of rows per
block, slow beyond a few hundred thousand.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def mdav(x: np.ndarray, k: int) -> np.ndarray:
    """Group id of each row of ``x`` (n × p, float) by MDAV with minimum group size ``k``."""
    n = len(x)
    groups = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return groups
    if n < 2 * k:
        groups[:] = 0
        return groups
    std = x.std(axis=0)
    z = (x - x.mean(axis=0)) / np.where(std > 0, std, 1.0)
    alive = np.arange(n)
    gid = 0

    def take_group(center: np.ndarray, pool: np.ndarray) -> np.ndarray:
        d = ((z[pool] - center) ** 2).sum(axis=1)
        near = np.argpartition(d, k - 1)[:k] if len(pool) > k else np.arange(len(pool))
        return near

    def peel(far_from: np.ndarray) -> int:
        """Group the alive record farthest from ``far_from`` with its nearest; return that record."""
        nonlocal alive, gid
        r = alive[np.argmax(((z[alive] - far_from) ** 2).sum(axis=1))]
        near = take_group(z[r], alive)
        groups[alive[near]] = gid
        gid += 1
        alive = np.delete(alive, near)
        return r

    while len(alive) >= 3 * k:
        r = peel(z[alive].mean(axis=0))
        peel(z[r])  # then the record farthest from r
    if len(alive) >= 2 * k:
        peel(z[alive].mean(axis=0))
    groups[alive] = gid
    return groups


def aggregate(df: pd.DataFrame, columns: list[str], groups: np.ndarray) -> pd.DataFrame:
    """``df`` with ``columns`` replaced by their group means (integers rounded back)."""
    out = df.copy()
    for col in columns:
        values = df[col].to_numpy(dtype=float)
        sums = np.bincount(groups, weights=values)
        counts = np.bincount(groups)
        means = (sums / np.maximum(counts, 1))[groups]
        if pd.api.types.is_integer_dtype(df[col].dtype):
            out[col] = pd.Series(np.rint(means), index=df.index).astype(df[col].dtype)
        else:
            out[col] = pd.Series(means, index=df.index).astype(df[col].dtype)
    return out
