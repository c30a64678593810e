"""Pseudonymizing a table as its release spec declares.

Each identifier column with a ``pseudonymize`` block is replaced by its pseudonyms; each
identifier column without one is dropped; every other column passes through untouched. The
result is **still personal data**: a keyed pseudonym links every row of one person (within
one publication for scope ``release``, the default; across releases for ``population``), and
the key holder can re-link it to the person (for AES-SIV and tokens, directly). The summary
says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa

from ..errors import DataError, UserError
from ..spec import (
    PSEUDONYM_SCOPES,
    SAFE_PSEUDONYM_METHODS,
    NormalizeSpec,
    PseudonymizeSpec,
    ReleaseSpec,
)
from .keystore import KeyStore, open_keystore
from .methods import (
    PUBLICATION_LABEL,
    apply_to_distinct,
    hmac_column,
    normalize_identifiers,
    pseudonym_pattern,
    publication_label,
    random_hex_column,
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
    # row, release or population; the publication a release-scoped pseudonym is bound to
    scope: str = "population"
    publication: str | None = None


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
    scope: str = "population",
    publication: str | None = None,
) -> tuple[pd.Series, int]:
    """Pseudonyms of one column (nulls stay null) and its number of distinct identifiers.

    ``scope``: ``population`` (the default of this one-column call, which knows no release:
    the purpose's key), ``release`` (bound to ``publication``, a
    :func:`~.methods.publication_label`, which it then requires) or ``row`` (hmac only: a
    random pseudonym per row). The result is a Series of the default string dtype with the
    input's index.
    """
    if method not in SAFE_PSEUDONYM_METHODS:
        raise DataError(f"column {column!r}: method {method!r} is not one of {', '.join(SAFE_PSEUDONYM_METHODS)}")
    if scope not in PSEUDONYM_SCOPES:
        raise DataError(f"column {column!r}: scope {scope!r} is not one of {', '.join(PSEUDONYM_SCOPES)}")
    if scope == "row" and method != "hmac":
        raise DataError(f"column {column!r}: scope 'row' is for hmac only ({method} must be reproducible to be reversed)")
    if scope == "release" and publication is None:
        raise DataError(f"column {column!r}: scope 'release' binds the pseudonyms to one publication: give its label")
    if scope != "release" and publication is not None:  # a label ignored would be a silent promise
        raise DataError(f"column {column!r}: only scope 'release' is bound to a publication (scope is {scope!r})")
    if publication is not None and not PUBLICATION_LABEL.fullmatch(publication):
        raise DataError(f"column {column!r}: {publication[:80]!r} is not a publication label (<release>/<partition>)")
    bound = publication
    norm = normalize or NormalizeSpec()
    index = values.index if isinstance(values, pd.Series) else pd.RangeIndex(len(values))
    arr = normalize_identifiers(values, trim=norm.trim, case=norm.case, unicode=norm.unicode, column=column)
    version = keystore.current_version if key_version is None else key_version
    prefix = f"v{version}:" if prefix_version else ""
    if scope == "row":
        result, distinct = random_hex_column(arr, prefix)
    elif method == "hmac":
        result, distinct = hmac_column(keystore.pseudonym_key("hmac", purpose, version, bound), arr, prefix)
    elif method == "aes_siv":
        result, distinct = siv_column(keystore.pseudonym_key("aes_siv", purpose, version, bound), purpose, arr, prefix)
    else:  # the vault (of the publication, when bound to one) maps each distinct value once
        result, distinct = apply_to_distinct(arr, lambda values: token_pseudonyms(keystore, purpose, values, bound))
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    return to_pandas_strings(result, index), distinct


def column_publication(spec: ReleaseSpec, column: str, partition: str | None) -> str | None:
    """The publication label pseudonyms of ``column`` are bound to, for reversing, bridging or
    re-keying them: ``<release>/<partition>`` for scope ``release``, None for ``population``.

    Refused (UserError naming the spec and key): scope ``row`` (random values, nothing reverses
    or carries them over); ``release`` without ``partition`` when the spec declares partitions
    (the pseudonyms of one partition open only with it), or with a key that is not one of the
    spec's partitions; ``population`` with a partition (its pseudonyms are bound to none).
    """
    from ..partitions import partition_window

    declared = spec.columns.get(column)
    how = declared.pseudonymize if declared is not None else None
    key = f"columns.{column}.pseudonymize.scope"
    if how is None:
        raise UserError(f"{spec.label}: column {column!r} is not a pseudonymized identifier")
    if how.scope == "row":
        raise UserError(f"{spec.label}: {key} is 'row': every row has a random pseudonym, which no key "
                        "reverses, bridges or re-keys")
    if how.scope == "population":
        if partition is not None:
            raise UserError(f"{spec.label}: {key} is 'population': the pseudonyms are the same in every "
                            "partition; give no partition")
        return None
    if partition is None and spec.partitions is not None:
        raise UserError(f"{spec.label}: {key} is 'release': the pseudonyms are bound to one partition; "
                        "give the partition they were published in")
    if partition is not None:
        partition_window(spec, partition)  # one of the spec's partitions, or a one-line refusal
    return publication_label(spec.release, partition)


def pseudonymize(
    df: pd.DataFrame,
    spec: ReleaseSpec,
    keystore: KeyStore | None = None,
    *,
    key_version: int | None = None,
    partition: str | None = None,
) -> tuple[pd.DataFrame, PseudonymizationSummary]:
    """Replace identifier columns that have a method, drop those without; return table and summary.

    Columns the spec does not declare as identifiers pass through unchanged (in order). The key
    store is opened from the environment only when a column needs it and none was given.
    ``key_version`` (default: the current one) is for re-creating data of an older version.
    ``partition`` is the release partition the table is (None: the whole release): a column of
    scope ``release`` is bound to the publication ``<release>/<partition>``.
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
        publication = publication_label(spec.release, partition) if how.scope == "release" else None
        values, distinct = pseudonymize_values(
            df[name], keystore, method=method, purpose=how.purpose, normalize=how.normalize,
            prefix_version=how.prefix_version, key_version=version, column=name,
            scope=how.scope, publication=publication,
        )
        out[name] = values
        summary.columns.append(ColumnSummary(
            column=name, method=method, purpose=how.purpose,
            key_version=None if method == "token" or how.scope == "row" else version,  # row: no key
            rows=len(values), nulls_kept=int(values.isna().sum()), distinct=distinct,
            reversible=method != "hmac", prefix_version=how.prefix_version and method != "token",
            pattern=pseudonym_pattern(method, how.prefix_version), scope=how.scope, publication=publication,
        ))
    if keystore is not None:
        summary.backend = keystore.backend.kind
    return out, summary
