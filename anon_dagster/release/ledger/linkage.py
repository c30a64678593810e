"""How the ledger identifies people and tables: linkage pseudonyms, data hashes, class assignments.

A *linkage pseudonym* is the HMAC-SHA256 of a person's ``composition.person`` value,
normalized as the published pseudonym normalizes it (:func:`person_normalization`), under a
ledger-only key; pseudonyms are never published nor logged, they exist so that later
releases of the same population can be composed. Two spellings the published pseudonyms
join (``" PID1"`` and ``"PID1"`` with ``trim``) are therefore one person to the ledger too.
The *class assignment* maps each person's pseudonym to the equivalence class(es) holding
that person's rows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...errors import DataError
from ...pseudonymize.methods import (
    PERSON_NORMALIZATION,
    Normalization,
    hmac_column,
    normalize_identifiers,
)


def person_normalization(spec: Any) -> Any:
    """How ``composition.person`` is spelled before it is linked: exactly as it is published.

    The ``normalize`` block of the person column's ``pseudonymize`` block when it has one (the
    published pseudonym is keyed on that spelling, so the linkage joins exactly what a reader of
    the publications can join); otherwise :data:`~anon_dagster.pseudonymize.methods.PERSON_NORMALIZATION`
    (NFKC, trim, full case folding).
    """
    column = spec.columns.get(spec.composition.person)
    how = getattr(column, "pseudonymize", None)
    return how.normalize if how is not None else PERSON_NORMALIZATION


def linkage_pseudonyms(values: pd.Series | Sequence[object], key: bytes, *,
                       normalize: Any = None) -> np.ndarray:
    """HMAC-SHA256 under ``key`` of each value normalized as ``normalize`` says, as 32 hex characters (128 bits).

    ``normalize`` has the fields of a spec's ``normalize`` block (``trim``, ``case``,
    ``unicode``; default: that block's defaults, trim and NFC); the text keyed is
    :func:`~anon_dagster.pseudonymize.methods.normalize_identifiers`' output, the one the
    published pseudonym is keyed on. ``key`` is the ledger-only subkey
    (``keystore.derive_key("ledger-linkage")``). Values missing, or empty after normalization,
    are refused: a row without a person cannot be composed and would silently escape the
    intersection check.
    """
    if not isinstance(key, bytes | bytearray) or len(key) < 16:
        raise DataError("the ledger linkage key must be at least 16 bytes")
    norm = normalize if normalize is not None else Normalization()
    text = normalize_identifiers(pd.Series(values, copy=False), trim=norm.trim, case=norm.case, unicode=norm.unicode,
                                 column="composition.person")
    return keyed_persons(text, bytes(key)).to_numpy(zero_copy_only=False).astype(object, copy=False)


def keyed_persons(text: Any, key: bytes, *, compiled: bool | None = None, count: bool = True) -> Any:
    """The linkage pseudonyms (an Arrow column) of person values already normalized
    (``text``, Arrow); a value missing or empty after normalization is refused
    (:func:`linkage_pseudonyms`). ``compiled`` and ``count``: as
    :func:`~anon_dagster.pseudonymize.keyed_hash.hmac_column`'s."""
    if text.null_count:
        raise DataError(
            f"the person column has {text.null_count} values missing or empty after normalization: "
            "every published row needs a person to be composed with earlier releases"
        )
    out, _ = hmac_column(key, text, count=count, compiled=compiled)
    return out


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
