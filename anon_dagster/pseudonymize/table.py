"""Pseudonymizing a table as its release spec declares.

Each identifier column with a ``pseudonymize`` block is replaced by its pseudonyms; each
identifier column without one is dropped; every other column passes through untouched. The
result is **still personal data**: a keyed pseudonym links every row of one person, and the
key holder can re-link it to the person (for AES-SIV and tokens, directly). The summary says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa

from ..errors import DataError
from ..spec import SAFE_PSEUDONYM_METHODS, NormalizeSpec, PseudonymizeSpec, ReleaseSpec
from .keystore import KeyStore, open_keystore
from .methods import (
    apply_to_distinct,
    hmac_column,
    normalize_identifiers,
    pseudonym_pattern,
    siv_column,
    to_pandas_strings,
)
from .tokens import token_pseudonyms

PERSONAL_DATA_NOTICE = (
    "Pseudonymized data is still personal data: the pseudonyms link all rows of a person and the "
    "key holder can re-identify them. Protect it as personal data; only the anonymized release "
    "may be published."
)


@dataclass(frozen=True)
class ColumnSummary:
    """What was done to one identifier column (counts and names only, never keys)."""

    column: str
    method: str
    purpose: str
    key_version: int | None
    rows: int
    nulls_kept: int
    distinct: int
    reversible: bool
    prefix_version: bool
    pattern: str


@dataclass
class PseudonymizationSummary:
    """Summary of :func:`pseudonymize`; :meth:`to_dict` is safe to log, show and store."""

    columns: list[ColumnSummary] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    backend: str | None = None
    personal_data: bool = True
    notice: str = PERSONAL_DATA_NOTICE

    def to_dict(self) -> dict[str, Any]:
        return {
            "personal_data": self.personal_data,
            "notice": self.notice,
            "key_backend": self.backend,
            "columns": [asdict(c) for c in self.columns],
            "dropped": list(self.dropped),
        }


def pseudonymize_values(
    values: pd.Series | Sequence,
    keystore: KeyStore,
    *,
    method: str,
    purpose: str = "default",
    normalize: NormalizeSpec | None = None,
    prefix_version: bool = True,
    key_version: int | None = None,
    column: str = "<values>",
) -> tuple[pd.Series, int]:
    """Pseudonyms of one column (nulls stay null) and its number of distinct identifiers.

    The result is a Series of the default string dtype with the input's index.
    """
    if method not in SAFE_PSEUDONYM_METHODS:
        raise DataError(f"column {column!r}: method {method!r} is not one of {', '.join(SAFE_PSEUDONYM_METHODS)}")
    norm = normalize or NormalizeSpec()
    index = values.index if isinstance(values, pd.Series) else pd.RangeIndex(len(values))
    arr = normalize_identifiers(values, trim=norm.trim, case=norm.case, unicode=norm.unicode, column=column)
    version = keystore.current_version if key_version is None else key_version
    prefix = f"v{version}:" if prefix_version else ""
    if method == "hmac":
        result, distinct = hmac_column(keystore.pseudonym_key("hmac", purpose, version), arr, prefix)
    elif method == "aes_siv":
        result, distinct = siv_column(keystore.pseudonym_key("aes_siv", purpose, version), purpose, arr, prefix)
    else:  # the vault maps each distinct value once
        result, distinct = apply_to_distinct(arr, lambda values: token_pseudonyms(keystore, purpose, values))
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    return to_pandas_strings(result, index), distinct


def pseudonymize(
    df: pd.DataFrame,
    spec: ReleaseSpec,
    keystore: KeyStore | None = None,
    *,
    key_version: int | None = None,
) -> tuple[pd.DataFrame, PseudonymizationSummary]:
    """Replace identifier columns that have a method, drop those without; return table and summary.

    Columns the spec does not declare as identifiers pass through unchanged (in order). The key
    store is opened from the environment only when a column needs it and none was given.
    ``key_version`` (default: the current one) is for re-creating data of an older version.
    """
    summary = PseudonymizationSummary()
    out = df.copy(deep=False)
    for name in spec.identifiers:
        if name not in df.columns:
            raise DataError(f"{spec.label}: identifier column {name!r} is declared but missing from the data")
        how: PseudonymizeSpec | None = spec.columns[name].pseudonymize
        if how is None:
            out = out.drop(columns=[name])
            summary.dropped.append(name)
            continue
        if keystore is None:
            keystore = open_keystore()
        method = how.method.lower()
        version = keystore.current_version if key_version is None else key_version
        values, distinct = pseudonymize_values(
            df[name], keystore, method=method, purpose=how.purpose, normalize=how.normalize,
            prefix_version=how.prefix_version, key_version=version, column=name,
        )
        out[name] = values
        summary.columns.append(ColumnSummary(
            column=name, method=method, purpose=how.purpose,
            key_version=None if method == "token" else version,
            rows=len(values), nulls_kept=int(values.isna().sum()), distinct=distinct,
            reversible=method != "hmac", prefix_version=how.prefix_version and method != "token",
            pattern=pseudonym_pattern(method, how.prefix_version),
        ))
    if keystore is not None:
        summary.backend = keystore.backend.kind
    return out, summary
