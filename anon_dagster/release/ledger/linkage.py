"""How the ledger identifies people and tables: linkage pseudonyms, data hashes, class assignments.

A *linkage pseudonym* is the HMAC-SHA256 of a person's ``composition.person`` value under a
ledger-only key; pseudonyms are never published nor logged, they exist so that later
releases of the same population can be composed. The *class assignment* maps each person's
pseudonym to the equivalence class(es) holding that person's rows.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...errors import DataError


def linkage_pseudonyms(values: pd.Series | Sequence[object], key: bytes) -> np.ndarray:
    """HMAC-SHA256 of each value's text under ``key``, as 32 hex characters (128 bits).

    ``key`` is the ledger-only subkey (``keystore.derive_key("ledger-linkage")``). Missing
    values are refused: a row without a person cannot be composed and would silently escape
    the intersection check.
    """
    if not isinstance(key, bytes | bytearray) or len(key) < 16:
        raise DataError("the ledger linkage key must be at least 16 bytes")
    series = pd.Series(values, copy=False)
    if series.isna().any():
        raise DataError(
            f"the person column has {int(series.isna().sum())} missing values: every published "
            "row needs a person to be composed with earlier releases"
        )
    k = bytes(key)
    return np.array(
        [hmac.new(k, str(v).encode("utf-8"), hashlib.sha256).hexdigest()[:32] for v in series],
        dtype=object,
    )


def dataset_hash(df: pd.DataFrame) -> str:
    """SHA-256 of a table's column names, dtypes and row values (row order matters).

    Uses pandas' per-row hash of each column, so equal tables hash equal whatever the file
    format they were read from, provided the dtypes agree.

    This is the report's and the ledger's identification of *what was published*: the dtypes
    are part of it (a categorical and a text column holding the same labels hash differently).
    :func:`anon_dagster.anonymize.record.table_hash` is the other hash, deliberately blind to
    that difference: it ties a transformation record to its table across a storage round trip.
    """
    digest = hashlib.sha256()
    digest.update(json.dumps([str(c) for c in df.columns]).encode())
    digest.update(json.dumps([str(t) for t in df.dtypes]).encode())
    digest.update(str(len(df)).encode())
    for col in df.columns:
        digest.update(pd.util.hash_pandas_object(df[col], index=False).to_numpy().tobytes())
    return digest.hexdigest()


@dataclass
class ClassAssignmentRows:
    """The rows of a class assignment as stored: member pairs and per-class signatures."""

    members: pd.DataFrame  # person (str), class_id (int64): distinct pairs
    signatures: list[str]  # canonical JSON of each class's QI values, indexed by class_id
    rows_per_class: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
