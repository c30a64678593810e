"""Keyed pseudonym methods over whole columns: normalization, HMAC-SHA256 and AES-SIV.

Definitions (the formats are stable; :func:`pseudonym_pattern` gives the matching regex):

* **normalization** — before anything is keyed, an identifier is turned into text and, as the
  column declares, trimmed of surrounding white space, case-mapped (``upper`` / ``lower``) and
  put in a Unicode normal form (``NFC`` / ``NFKC``), so that ``" 1234a"`` and ``"1234A"`` give
  one pseudonym when the column says they are one person. A value that is missing, or empty
  after normalization, stays missing: it never receives a pseudonym (a shared pseudonym for
  every missing value would link unrelated people). The ledger's linkage pseudonyms use the
  same function (:data:`PERSON_NORMALIZATION` when the person column is not pseudonymized,
  with full Unicode case folding, ``fold``).
* **hmac** — ``HMAC-SHA256(K, utf8(value))`` truncated to its first 16 bytes (128 bits) and
  written as 32 lowercase hex digits, where ``K`` is the per-purpose subkey
  ``HKDF-SHA256(master_v, info=["anon_dagster", "pseudonym", "hmac", purpose, v])``. One-way:
  nobody, not even the key holder, can compute the identifier back, only re-compute the
  pseudonym of a known identifier.
* **aes_siv** — deterministic authenticated encryption ``AES-SIV(K, utf8(value), AD=[purpose])``
  (RFC 5297, 512-bit key ``K`` derived like the HMAC key), written in unpadded base64url. The
  custodian holding the key can decrypt it (:mod:`.reversal`); anyone else learns nothing but
  equality.
* **token** — a random 128-bit token per distinct value, ``tk_`` + 26 base32 characters, kept in
  an encrypted mapping table next to the key store (:mod:`.tokens`).

With ``prefix_version`` (the default) the hmac and aes_siv pseudonyms start with ``v<N>:``, the
key version they were made with, so data keeps saying which key it needs after a rotation.
Tokens carry no version: they are random, not derived from a key.

**Scope** — how far one person's pseudonym links rows (``columns.<name>.pseudonymize.scope``):

* ``population`` — the keys above: the same identifier gets the same pseudonym in every release;
* ``release`` — the key is bound to one publication: ``K`` is derived with
  ``info=[..., purpose, "publication", "<release>/<partition>", v]`` (:func:`publication_label`;
  ``<release>/all`` for a release without partitions), and a token comes from that
  publication's own vault. Within one publication a person keeps one pseudonym; two
  publications share none (HMAC and AES-SIV are pseudo-random under independent keys);
* ``row`` (hmac only) — every row gets a fresh random value in the hmac format
  (:func:`random_hex_column`): a function of nothing, it links no two rows.
"""

from __future__ import annotations

import binascii
import hashlib
import importlib
import re
import secrets
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESSIV

from ..errors import DataError

HMAC_BYTES = 16  # 128-bit pseudonyms: collisions negligible below ~1e18 distinct identifiers
SIV_KEY_BYTES = 64  # AES-256-SIV takes a 512-bit key (two AES-256 keys)
TOKEN_PREFIX = "tk_"
VERSION_RE = re.compile(r"^v([1-9][0-9]*):")

_PATTERNS = {
    "hmac": r"[0-9a-f]{32}",
    # 16-byte SIV tag + at least one byte of plaintext = at least 23 base64url characters
    "aes_siv": r"[A-Za-z0-9_-]{23,}",
    "token": r"tk_[a-z2-7]{26}",
}


def pseudonym_pattern(method: str, prefix_version: bool = True) -> str:
    """A full-match regex every pseudonym made by ``method`` satisfies (for data contracts).

    ``prefix_version`` adds the ``v<N>:`` key-version prefix (ignored for tokens, which have
    none).
    """
    if method not in _PATTERNS:
        raise ValueError(f"unknown pseudonym method {method!r} (hmac, aes_siv or token)")
    body = _PATTERNS[method]
    if prefix_version and method != "token":
        return rf"^v[1-9][0-9]*:{body}$"
    return rf"^{body}$"


# A release name (``release`` of the spec) and a partition key (``partitions``): neither holds a
# ``/``, and ``all`` is no partition key of any cadence, so a label names one publication only.
_RELEASE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PARTITION_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")
ALL_PARTITIONS = "all"
PUBLICATION_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*/[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")


def publication_label(release: str, partition: str | None) -> str:
    """The label of one publication a ``release``-scoped pseudonym is bound to:
    ``"<release>/<partition>"``, or ``"<release>/all"`` for a release without partitions.

    One label per publication and one publication per label: a release name has no ``/`` and a
    partition key is a plain key other than ``all`` (anything else raises DataError).
    """
    if not isinstance(release, str) or not _RELEASE_NAME.fullmatch(release):
        raise DataError(f"{str(release)[:40]!r} is not a release name: a pseudonym's scope cannot be bound to it")
    if partition is None:
        return f"{release}/{ALL_PARTITIONS}"
    if not isinstance(partition, str) or not _PARTITION_KEY.fullmatch(partition) or partition == ALL_PARTITIONS:
        raise DataError(f"release {release!r}: {str(partition)[:40]!r} is not a partition key: "
                        "a pseudonym's scope cannot be bound to it")
    return f"{release}/{partition}"


def split_version(pseudonym: str) -> tuple[int | None, str]:
    """``"v3:abc"`` → ``(3, "abc")``; a pseudonym without prefix → ``(None, pseudonym)``."""
    m = VERSION_RE.match(pseudonym)
    if m is None:
        return None, pseudonym
    return int(m.group(1)), pseudonym[m.end():]


# ----- normalization --------------------------------------------------------------------------


def _as_text(values: pd.Series | Sequence, column: str) -> pa.Array:
    """Identifiers as an Arrow string array (nulls kept). Integers print without a decimal point."""
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
    values: pd.Series | Sequence,
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


# ----- keyed kernels over distinct values -----------------------------------------------------


def _plain_sha256():
    """The interpreter's own SHA-256 (no OpenSSL EVP dispatch per call), else hashlib's."""
    for name in ("_sha2", "_sha256"):  # CPython >= 3.12 / 3.11
        try:
            return importlib.import_module(name).sha256
        except (ImportError, AttributeError):
            continue
    return hashlib.sha256


_SHA256 = _plain_sha256()


def hmac_concat(key: bytes, values: list[bytes]) -> bytes:
    """The 32-byte HMAC-SHA256 (RFC 2104) of each value, concatenated; the key schedule once.

    HMAC(K, m) = SHA256((K ^ opad) || SHA256((K ^ ipad) || m)). The two keyed hash states are
    computed once and copied per value: ``hmac.new`` per value redoes the key padding and both
    initializations every time. The interpreter's built-in SHA-256 is used because copying its
    state is a plain memory copy, where an OpenSSL context copy costs more than the hashing of a
    short identifier (about 1.4x faster than a copied OpenSSL HMAC context, 2x ``hmac.new``).
    Digests go straight into one buffer: no per-value list entry to join afterwards.
    """
    block = 64
    if len(key) > block:
        key = hashlib.sha256(key).digest()
    key = key.ljust(block, b"\0")
    inner_copy = _SHA256(bytes(b ^ 0x36 for b in key)).copy
    outer_copy = _SHA256(bytes(b ^ 0x5C for b in key)).copy
    out = bytearray()
    extend = out.extend

    def one(value: bytes) -> None:
        i = inner_copy()
        i.update(value)
        o = outer_copy()
        o.update(i.digest())
        extend(o.digest())

    deque(map(one, values), maxlen=0)
    return bytes(out)


def hmac_digests(key: bytes, values: list[bytes]) -> list[bytes]:
    """The 32-byte HMAC-SHA256 of each value (see :func:`hmac_concat`)."""
    raw = hmac_concat(key, values)
    return [raw[i:i + 32] for i in range(0, len(raw), 32)]


def _hex_rows(digests: bytes, prefix: str) -> np.ndarray:
    """A (n, len(prefix) + 32) uint8 matrix: ``prefix`` + hex of each 32-byte digest's first 16 bytes."""
    n = len(digests) // 32
    return _hex_matrix(np.frombuffer(digests, dtype=np.uint8).reshape(n, 32)[:, :HMAC_BYTES], prefix)


def _hex_matrix(raw: np.ndarray, prefix: str) -> np.ndarray:
    """A (n, len(prefix) + 32) uint8 matrix: ``prefix`` + hex of each row of the (n, 16) bytes ``raw``."""
    n = len(raw)
    p = len(prefix.encode("ascii"))
    rows = np.empty((n, p + 2 * HMAC_BYTES), dtype=np.uint8)
    rows[:, :p] = np.frombuffer(prefix.encode("ascii"), dtype=np.uint8)
    rows[:, p:] = _HEX_PAIRS[raw].view(np.uint8).reshape(n, 2 * HMAC_BYTES)  # byte -> two hex digits
    return rows


# the two ASCII hex digits of each byte value, as one uint16 (a gather of 2-byte items is cheap)
_HEX_PAIRS = np.frombuffer(bytes(range(256)).hex().encode("ascii"), dtype=np.uint16)


def _rows_to_strings(rows: np.ndarray, codes: np.ndarray, valid: np.ndarray) -> pa.Array:
    """Arrow strings: row ``codes[i]`` of the fixed-width matrix where ``valid[i]``, else null."""
    n, width = len(codes), rows.shape[1]
    data = rows[codes[valid]].tobytes()
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(valid * width, out=offsets[1:])
    null_count = int(n - valid.sum())
    bitmap = pa.array(valid).buffers()[1] if null_count else None
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data), bitmap, null_count)


def hmac_pseudonyms(key: bytes, values: list[bytes], prefix: str = "") -> pa.Array:
    """HMAC pseudonyms (``prefix`` + 32 hex digits) of distinct values, as an Arrow array."""
    n = len(values)
    if n == 0:
        return pa.array([], type=pa.large_string())
    rows = _hex_rows(hmac_concat(key, values), prefix)
    return _rows_to_strings(rows, np.arange(n), np.ones(n, dtype=bool))


def random_hex_column(normalized: pa.Array, prefix: str = "") -> tuple[pa.Array, int]:
    """Scope ``row``: a fresh random pseudonym per present row (``prefix`` + 32 hex digits, the
    hmac format), null where the identifier is null; and the number of distinct identifiers.

    128 bits from the operating system's CSPRNG per row: a function of nothing, so no two rows
    share a pseudonym (2^-128 per pair), not even two rows of one person, and no key recomputes
    one. Only the count of distinct identifiers is taken from the values.
    """
    valid = normalized.is_valid().to_numpy(zero_copy_only=False)
    present = int(valid.sum())
    distinct = int(pc.count_distinct(normalized, mode="only_valid").as_py()) if present else 0
    if present == 0:
        return pa.nulls(len(normalized), type=pa.large_string()), 0
    raw = np.frombuffer(secrets.token_bytes(HMAC_BYTES * present), dtype=np.uint8).reshape(present, HMAC_BYTES)
    codes = np.cumsum(valid, dtype=np.intp) - 1  # the k-th present row takes random value k
    return _rows_to_strings(_hex_matrix(raw, prefix), codes, valid), distinct


DEDUPE_SAMPLE = 20_000
DEDUPE_MIN_MULTIPLICITY = 1.5


def repeats_enough_to_deduplicate(normalized: pa.Array, sample: int = DEDUPE_SAMPLE) -> bool:
    """Whether identifiers repeat enough that keying each distinct value once is cheaper.

    Deduplicating (a hash table over the column) costs about a third of keying every row; it
    pays when the mean number of rows per identifier ``r`` exceeds about 1.5. ``r`` is
    estimated from a fixed-seed sample of ``m`` rows out of ``n`` (fraction ``f = m/n``): an
    identifier with ``r`` rows leaves about ``(r-1) f / 2`` duplicates per sampled row, so
    ``r ≈ 1 + 2 d / f`` with ``d`` the sample's duplicate share. Only speed depends on it,
    never the pseudonyms.
    """
    n = len(normalized)
    if n <= sample:
        return True
    idx = np.sort(np.random.default_rng(0).choice(n, size=sample, replace=False))
    values = [v for v in normalized.take(pa.array(idx)).to_pylist() if v is not None]
    if not values:
        return True
    d = 1 - len(set(values)) / len(values)
    return 1 + 2 * d * n / sample >= DEDUPE_MIN_MULTIPLICITY


def hmac_column(key: bytes, normalized: pa.Array, prefix: str = "",
                dedupe: bool | None = None) -> tuple[pa.Array, int]:
    """HMAC pseudonyms of a normalized column (null stays null) and its number of distinct values.

    Repeated identifiers are keyed once (``dedupe``; default: decided by
    :func:`repeats_enough_to_deduplicate`); otherwise every row is keyed and the distinct count
    is taken from the digests. The output is assembled in one fixed-width numpy pass.
    """
    if dedupe is None:
        dedupe = repeats_enough_to_deduplicate(normalized)
    if dedupe:
        encoded = normalized.dictionary_encode()
        distinct = encoded.dictionary.cast(pa.large_binary()).to_pylist()
        if not distinct:
            return pa.nulls(len(normalized), type=pa.large_string()), 0
        rows = _hex_rows(hmac_concat(key, distinct), prefix)
        indices = encoded.indices
        valid = indices.is_valid().to_numpy(zero_copy_only=False)
        codes = indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.intp, copy=False)
        return _rows_to_strings(rows, codes, valid), len(distinct)
    present = normalized.drop_null()
    if len(present) == 0:
        return pa.nulls(len(normalized), type=pa.large_string()), 0
    raw = hmac_concat(key, present.cast(pa.large_binary()).to_pylist())
    rows = _hex_rows(raw, prefix)
    # distinct identifiers = distinct digests; 64 of their bits suffice to count them, and a
    # sort (SIMD) then counting changes is far cheaper than np.unique's hash table
    heads = np.frombuffer(raw, dtype=np.uint64)[::4].copy()
    heads.sort()
    distinct = 1 + int(np.count_nonzero(heads[1:] != heads[:-1]))
    valid = normalized.is_valid().to_numpy(zero_copy_only=False)
    codes = np.cumsum(valid, dtype=np.intp) - 1  # the k-th present row takes digest k
    return _rows_to_strings(rows, codes, valid), distinct


def _b64url_array(raw: list[bytes]) -> pa.Array:
    encode = binascii.b2a_base64
    text = pa.array([encode(x, newline=False) for x in raw], type=pa.large_binary()).cast(pa.large_string())
    text = pc.replace_substring(pc.replace_substring(text, "+", "-"), "/", "_")
    return pc.utf8_rtrim(text, characters="=")


def siv_pseudonyms(key: bytes, purpose: str, values: list[bytes], prefix: str = "") -> pa.Array:
    """AES-SIV pseudonyms (``prefix`` + unpadded base64url) of values; AD = the purpose."""
    if not values:
        return pa.array([], type=pa.large_string())
    encrypt = AESSIV(key).encrypt
    ad = [purpose.encode("utf-8")]
    out = _b64url_array([encrypt(v, ad) for v in values])
    if prefix:
        out = pc.binary_join_element_wise(pa.scalar(prefix, pa.large_string()), out, pa.scalar("", pa.large_string()))
    return out


def _count_distinct_heads(heads: np.ndarray) -> int:
    """Distinct values of a uint64 array (a SIMD sort, then counting changes)."""
    if len(heads) == 0:
        return 0
    heads = np.sort(heads)
    return 1 + int(np.count_nonzero(heads[1:] != heads[:-1]))


def siv_column(key: bytes, purpose: str, normalized: pa.Array, prefix: str = "",
               dedupe: bool | None = None) -> tuple[pa.Array, int]:
    """AES-SIV pseudonyms of a normalized column (null stays null) and its distinct count.

    As :func:`hmac_column`: distinct values are encrypted once when they repeat enough,
    otherwise every row is, and the distinct count comes from the SIV tags (the tag is a
    pseudo-random function of the plaintext, so equal tags mean equal identifiers).
    """
    if dedupe is None:
        dedupe = repeats_enough_to_deduplicate(normalized)
    if dedupe:
        return apply_to_distinct(normalized, lambda values: siv_pseudonyms(key, purpose, values, prefix))
    present = normalized.drop_null()
    if len(present) == 0:
        return pa.nulls(len(normalized), type=pa.large_string()), 0
    encrypt = AESSIV(key).encrypt
    ad = [purpose.encode("utf-8")]
    raw = [encrypt(v, ad) for v in present.cast(pa.large_binary()).to_pylist()]
    heads = np.frombuffer(b"".join(r[:8] for r in raw), dtype=np.uint64)
    out = _b64url_array(raw)
    if prefix:
        out = pc.binary_join_element_wise(pa.scalar(prefix, pa.large_string()), out, pa.scalar("", pa.large_string()))
    valid = normalized.is_valid().to_numpy(zero_copy_only=False)
    if valid.all():
        return out, _count_distinct_heads(heads)
    positions = pa.array(np.cumsum(valid) - 1, mask=~valid)  # the k-th present row takes result k
    return pc.take(out, positions), _count_distinct_heads(heads)


def siv_decrypt(key: bytes, purpose: str, body: str) -> str | None:
    """The identifier inside an AES-SIV pseudonym body, or None if it does not authenticate."""
    try:
        raw = binascii.a2b_base64(body.replace("-", "+").replace("_", "/") + "=" * (-len(body) % 4))
        return AESSIV(key).decrypt(raw, [purpose.encode("utf-8")]).decode("utf-8")
    except (InvalidTag, binascii.Error, ValueError, UnicodeDecodeError):
        return None


def apply_to_distinct(normalized: pa.Array, compute) -> tuple[pa.Array, int]:
    """Run ``compute(list_of_utf8_bytes) -> Arrow array`` once per distinct non-null value.

    Returns the per-row result (null where the input is null) and the number of distinct values.
    Identifiers repeat (one patient, many stays): each distinct value is keyed once.
    """
    encoded = normalized.dictionary_encode()
    distinct = encoded.dictionary.cast(pa.large_binary()).to_pylist()
    results = compute(distinct)
    if len(distinct) == 0:
        return pa.nulls(len(normalized), type=pa.large_string()), 0
    return pc.take(results, encoded.indices), len(distinct)


def to_pandas_strings(arr: pa.Array, index: pd.Index) -> pd.Series:
    """An Arrow string array as a pandas Series of the default string dtype."""
    return pd.Series(pd.array(arr, dtype="str"), index=index)
