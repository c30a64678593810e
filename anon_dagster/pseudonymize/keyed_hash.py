"""HMAC-SHA256 pseudonyms of whole columns: one-way, written as 32 lowercase hex digits.

``HMAC-SHA256(K, utf8(value))`` truncated to its first 16 bytes (128 bits), with ``K`` the
per-purpose subkey of the key store (:mod:`anon_dagster.pseudonymize.methods` gives the
derivation and the formats). Nobody, not even the key holder, can compute the identifier back,
only re-compute the pseudonym of a known identifier. Scope ``row`` uses the same format for a
fresh random value per row (:func:`random_hex_column`).
"""

from __future__ import annotations

import hashlib
import importlib
import secrets
import sys
from collections import deque

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .distinct import (
    DEDUPE_MIN_MULTIPLICITY,
    HMAC_DEDUPE_MIN_MULTIPLICITY,
    repeats_enough_to_deduplicate,
)

HMAC_BYTES = 16  # 128-bit pseudonyms: collisions negligible below ~1e18 distinct identifiers


# Loading the compiled kernel costs a process about 1.3 s once (numba and its cached code); it
# saves about 0.5 us per value over the interpreter's HMAC. A call keying fewer values than this,
# in a process that has not loaded it yet, is keyed by the interpreter (the same digests).
COMPILED_FROM = 3_000_000
KERNEL_MODULE = "anon_dagster.pseudonymize.sha256_kernel"


def _plain_sha256():
    """The interpreter's own SHA-256 (no OpenSSL EVP dispatch per call), else hashlib's."""
    for name in ("_sha2", "_sha256"):  # CPython >= 3.12 / 3.11
        try:
            return importlib.import_module(name).sha256
        except (ImportError, AttributeError):
            continue
    return hashlib.sha256


_SHA256 = _plain_sha256()


def interpreted_hmac_concat(key: bytes, values: list[bytes]) -> bytes:
    """The 32-byte HMAC-SHA256 (RFC 2104) of each value, concatenated, by the interpreter.

    HMAC(K, m) = SHA256((K ^ opad) || SHA256((K ^ ipad) || m)). The two keyed hash states are
    computed once and copied per value (the interpreter's own SHA-256, whose state copy is a
    plain memory copy: about 1.4x faster than a copied OpenSSL HMAC context, 2x ``hmac.new``).
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


def compiled_for(n: int) -> bool:
    """Whether ``n`` values are keyed by the compiled kernel: it is loaded in this process
    already, or ``n`` is at least :data:`COMPILED_FROM`."""
    return n >= COMPILED_FROM or KERNEL_MODULE in sys.modules


def hmac_sha256_matrix(key: bytes, values: pa.Array, compiled: bool | None = None) -> np.ndarray:
    """The (n, 32) HMAC-SHA256 digests of an Arrow binary or string column (a null keyed as the
    empty value).

    ``compiled``: by the compiled kernel (:func:`.sha256_kernel.hmac_sha256_matrix`), or by the
    interpreter (:func:`interpreted_hmac_concat`); None chooses the kernel when this process has
    loaded it already or the column has at least :data:`COMPILED_FROM` values. Either way the
    same digests: only the time differs.
    """
    if compiled is None:
        compiled = compiled_for(len(values))
    if compiled:
        from .sha256_kernel import hmac_sha256_matrix as kernel

        return kernel(key, values)
    # a null keyed as the empty value, as the kernel reads it (callers key present values only)
    raw = interpreted_hmac_concat(key, values.cast(pa.large_binary()).fill_null(b"").to_pylist())
    return np.frombuffer(raw, dtype=np.uint8).reshape(len(values), 32)


def hmac_concat(key: bytes, values: list[bytes]) -> bytes:
    """The 32-byte HMAC-SHA256 (RFC 2104) of each value, concatenated (:func:`hmac_sha256_matrix`)."""
    return hmac_sha256_matrix(key, pa.array(values, type=pa.large_binary())).tobytes()


def hmac_digests(key: bytes, values: list[bytes]) -> list[bytes]:
    """The 32-byte HMAC-SHA256 of each value (see :func:`hmac_concat`)."""
    raw = hmac_concat(key, values)
    return [raw[i:i + 32] for i in range(0, len(raw), 32)]


def _hex_rows(digests: np.ndarray, prefix: str) -> np.ndarray:
    """A (n, len(prefix) + 32) uint8 matrix: ``prefix`` + hex of the first 16 bytes of each row
    of the (n, 32) digests."""
    return _hex_matrix(digests[:, :HMAC_BYTES], prefix)


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


def _rows_to_strings(rows: np.ndarray, codes: np.ndarray | None, valid: np.ndarray) -> pa.Array:
    """Arrow strings: row ``codes[i]`` of the fixed-width matrix where ``valid[i]``, else null.

    ``codes`` None: the k-th present row takes row k, so the matrix is the strings' data as it is
    (no gather, no per-row codes).
    """
    n, width = len(valid), rows.shape[1]
    if codes is None:
        data = rows.tobytes()
    else:
        # each row one fixed-size item: a 1-D take copies whole rows, where a 2-D fancy index
        # copies them byte by byte (3.5x slower on 10M rows)
        items = np.ascontiguousarray(rows).view(np.dtype((np.void, width))).reshape(len(rows))
        data = np.take(items, codes[valid]).tobytes()
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
    rows = _hex_rows(hmac_sha256_matrix(key, pa.array(values, type=pa.large_binary())), prefix)
    return _rows_to_strings(rows, None, np.ones(n, dtype=bool))


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
    # the k-th present row takes random value k
    return _rows_to_strings(_hex_matrix(raw, prefix), None, valid), distinct


def hmac_column(key: bytes, normalized: pa.Array, prefix: str = "", dedupe: bool | None = None,
                count: bool = True, compiled: bool | None = None) -> tuple[pa.Array, int | None]:
    """HMAC pseudonyms of a normalized column (null stays null) and its number of distinct values.

    Repeated identifiers are keyed once (``dedupe``; default: decided by
    :func:`repeats_enough_to_deduplicate`); otherwise every row is keyed and the distinct count
    is taken from the digests, unless ``count`` is false (the count is then None: a caller that
    does not read it, such as a Spark executor keying one batch, skips the sort it costs). The
    output is assembled in one fixed-width numpy pass. ``compiled``: see :func:`hmac_sha256_matrix`.
    """
    result, distinct = _hmac_column(key, normalized, prefix, dedupe, count, compiled)
    return result, distinct if count else None


def _hmac_column(key: bytes, normalized: pa.Array, prefix: str, dedupe: bool | None,
                 count: bool, compiled: bool | None) -> tuple[pa.Array, int | None]:
    """:func:`hmac_column`; the count may be None when ``count`` is false."""
    if compiled is None:
        compiled = compiled_for(len(normalized))
    if dedupe is None:  # keying costs the interpreter more than deduplicating, the kernel less
        dedupe = repeats_enough_to_deduplicate(
            normalized, min_multiplicity=HMAC_DEDUPE_MIN_MULTIPLICITY if compiled else DEDUPE_MIN_MULTIPLICITY)
    if dedupe:
        encoded = normalized.dictionary_encode()
        distinct = encoded.dictionary
        if not len(distinct):
            return pa.nulls(len(normalized), type=pa.large_string()), 0
        rows = _hex_rows(hmac_sha256_matrix(key, distinct, compiled), prefix)
        indices = encoded.indices
        valid = indices.is_valid().to_numpy(zero_copy_only=False)
        codes = indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.intp, copy=False)
        return _rows_to_strings(rows, codes, valid), len(distinct)
    present = normalized.drop_null()
    if len(present) == 0:
        return pa.nulls(len(normalized), type=pa.large_string()), 0
    digests = hmac_sha256_matrix(key, present, compiled)
    rows = _hex_rows(digests, prefix)
    valid = normalized.is_valid().to_numpy(zero_copy_only=False)
    if not count:  # the k-th present row takes digest k
        return _rows_to_strings(rows, None, valid), None
    # distinct identifiers = distinct digests; 64 of their bits suffice to count them, and a
    # sort (SIMD) then counting changes is far cheaper than np.unique's hash table
    heads = digests[:, :8].copy().view(np.uint64).ravel()
    heads.sort()
    distinct = 1 + int(np.count_nonzero(heads[1:] != heads[:-1]))
    return _rows_to_strings(rows, None, valid), distinct


__all__ = [
    "COMPILED_FROM", "HMAC_BYTES", "compiled_for", "hmac_column", "hmac_concat", "hmac_digests", "hmac_pseudonyms",
    "hmac_sha256_matrix", "interpreted_hmac_concat", "random_hex_column",
]
