"""Identifiers normalized before they are keyed, so one person's spellings give one pseudonym.

An identifier is turned into text and, as the column declares, trimmed of surrounding white
space, case-mapped (``upper`` / ``lower``, or ``fold``: full Unicode case folding) and put in a
Unicode normal form (``NFC`` / ``NFKC``), so that ``" 1234a"`` and ``"1234A"`` give one pseudonym
when the column says they are one person. A value that is missing, or empty after normalization,
stays missing: it never receives a pseudonym (a shared pseudonym for every missing value would
link unrelated people). The ledger's linkage pseudonyms use the same function
(:data:`PERSON_NORMALIZATION` when the person column is not pseudonymized).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import DataError


def _as_text(values: pd.Series | pa.Array | pa.ChunkedArray | Sequence, column: str) -> pa.Array:
    """Identifiers as an Arrow string array (nulls kept). Integers print without a decimal point.

    An Arrow array of text is used as it is (what the Spark engine's executors receive): going
    through pandas and back would copy every value twice for the same strings.
    """
    if isinstance(values, pa.ChunkedArray) and (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        values = values.combine_chunks()
    if isinstance(values, pa.Array) and (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        return values
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = values.to_pandas()
    s = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
    if pd.api.types.is_float_dtype(s.dtype):
        finite = s.dropna()
        if len(finite) and not np.all(np.mod(finite.to_numpy(), 1) == 0):
            raise DataError(
                f"column {column!r}: identifiers are fractional numbers; store them as text or integers"
            )
        # CSV readers turn an integer column with a gap into floats: 1234.0 must hash as 1234
        s = s.astype("Int64")
    if pd.api.types.is_bool_dtype(s.dtype):
        raise DataError(f"column {column!r}: a boolean column is not an identifier")
    try:
        text = s.astype("str")
        try:
            # 32-bit offsets: hashing them for deduplication is about 1.5x faster than large_string
            arr = pa.array(text, type=pa.string(), from_pandas=True)
        except (pa.ArrowCapacityError, OverflowError):
            arr = pa.array(text, type=pa.large_string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
        raise DataError(f"column {column!r}: identifiers cannot be read as text ({type(exc).__name__})") from None
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr


CASES = ("keep", "upper", "lower", "fold")
UNICODE_FORMS = ("NFC", "NFKC", "none")


@dataclass(frozen=True)
class Normalization:
    """The options of :func:`normalize_identifiers` (a spec's ``normalize`` block has the same fields)."""

    trim: bool = True
    case: str = "keep"
    unicode: str = "NFC"


# How the ledger spells a person whose column is not pseudonymized. No opaque pseudonym fixes the
# spelling then: the column is published as text, which a reader can trim, case-map and normalize
# before joining, or not published at all. So the linkage joins every re-encoding of the same text,
# and only those (content such as "PID01" vs "PID1" stays apart): NFKC makes compatibility forms
# (full-width digits, ligatures, non-breaking spaces) one character, surrounding white space never
# tells two people apart, and full case folding makes "straße" and "STRASSE" one. Treating two
# spellings as one person can only make the composition check stricter, never blind it.
PERSON_NORMALIZATION = Normalization(trim=True, case="fold", unicode="NFKC")


def _casefold(arr: pa.Array, unicode: str) -> pa.Array:
    """Full Unicode case folding (``str.casefold``: ``ß`` → ``ss``, ``ς`` → ``σ``), then the
    Unicode form again (folding may leave a string outside it). ASCII text only needs lower case."""
    if pc.all(pc.string_is_ascii(arr)).as_py() is not False:
        return pc.utf8_lower(arr)
    encoded = arr.dictionary_encode()
    folded = [v.casefold() for v in encoded.dictionary.to_pylist()]
    dictionary = pa.array(folded, type=arr.type)
    if unicode in ("NFC", "NFKC"):
        dictionary = pc.utf8_normalize(dictionary, form=unicode)
    return pc.take(dictionary, encoded.indices)


def normalize_identifiers(
    values: pd.Series | pa.Array | Sequence,
    *,
    trim: bool = True,
    case: str = "keep",
    unicode: str = "NFC",
    column: str = "<values>",
) -> pa.Array:
    """Normalized identifiers as an Arrow string array; missing or empty → null.

    ``case``: ``keep``, ``upper`` / ``lower`` (character by character, Arrow's kernels) or
    ``fold`` (full Unicode case folding); ``unicode``: ``NFC``, ``NFKC`` or ``none``. Other
    values are refused rather than silently ignored.
    """
    if case not in CASES:
        raise ValueError(f"unknown case normalization {case!r} ({', '.join(CASES)})")
    if unicode not in UNICODE_FORMS:
        raise ValueError(f"unknown Unicode normalization {unicode!r} ({', '.join(UNICODE_FORMS)})")
    arr = _as_text(values, column)
    if trim:
        arr = pc.utf8_trim_whitespace(arr)
    if unicode in ("NFC", "NFKC") and len(arr):
        # ASCII text is already in every normal form: only normalize what is not
        if pc.all(pc.string_is_ascii(arr)).as_py() is not True:
            arr = pc.utf8_normalize(arr, form=unicode)
            if trim:  # NFKC may turn exotic spaces into plain ones
                arr = pc.utf8_trim_whitespace(arr)
    if case == "upper":
        arr = pc.utf8_upper(arr)
    elif case == "lower":
        arr = pc.utf8_lower(arr)
    elif case == "fold" and len(arr):
        arr = _casefold(arr, unicode)
    empty = pc.equal(pc.utf8_length(arr), 0)
    return pc.if_else(empty, pa.scalar(None, arr.type), arr)


__all__ = ["CASES", "PERSON_NORMALIZATION", "UNICODE_FORMS", "Normalization", "normalize_identifiers"]
