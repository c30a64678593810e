"""Pieces of the transformation record: stable table hashes and suppression breakdowns."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..hierarchies import _as_label
from ..risk.measures import class_size_histogram

MAX_GROUPS = 1000


def table_hash(df: pd.DataFrame) -> str:
    """A stable SHA-256 of a table's content: column names, then pandas' per-row hashes.

    Definition: sha256 over the column names (in order, NUL-separated) followed by the uint64
    row hashes of :func:`pandas.util.hash_pandas_object` (index excluded, fixed default key),
    which hash values, not memory layout: the same table read back from csv or parquet, or held
    as categorical or plain strings, hashes the same provided the values and dtypes' kinds agree.

    Why not :func:`anon_dagster.release.ledger.dataset_hash`: that one includes the dtypes (it
    identifies a published file exactly), while the record's ``output_hash`` must match the
    same anonymized table however it was stored and read back (a categorical may return as text).
    """
    digest = hashlib.sha256()
    digest.update("\0".join(map(str, df.columns)).encode())
    if len(df):
        # hash every column as its labels so categorical and plain string columns agree
        frame = pd.DataFrame({
            c: (df[c].astype(object) if isinstance(df[c].dtype, pd.CategoricalDtype) else df[c])
            for c in df.columns
        })
        digest.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def breakdown(df: pd.DataFrame, mask: np.ndarray, columns: Sequence[str]) -> list[dict]:
    """Count of ``mask`` rows per combination of ``columns`` values (input values), largest first.

    Only groups with at least one such row are listed, at most MAX_GROUPS of them.
    """
    if not columns or not mask.any():
        return []
    sub = df.loc[mask, list(columns)]
    counts = sub.astype(object).groupby(list(columns), dropna=False, observed=True).size()
    totals = df[list(columns)].astype(object).groupby(list(columns), dropna=False, observed=True).size()
    counts = counts.sort_values(ascending=False).head(MAX_GROUPS)
    out = []
    for key, count in counts.items():
        key = key if isinstance(key, tuple) else (key,)
        total = int(totals.get(key if len(key) > 1 else key[0], 0))
        out.append({
            **{c: _as_label(v) for c, v in zip(columns, key, strict=True)},
            "suppressed": int(count),
            "rows": total,
            "share": round(int(count) / total, 6) if total else None,
        })
    return out


def class_histogram(sizes: np.ndarray) -> dict[str, int]:
    """Classes by size band, ``{band: classes}``, over the risk kernel's bands
    (:data:`anon_dagster.risk.measures.HISTOGRAM_BINS`: 1, 2, 3-4, ..., 100-999, 1000+), so the
    record and the risk report bin class sizes alike."""
    return {band["sizes"]: band["classes"] for band in class_size_histogram(np.asarray(sizes))}
