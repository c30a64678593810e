"""AES-SIV pseudonyms of whole columns: reversible by the key's custodian, written in base64url.

Deterministic authenticated encryption ``AES-SIV(K, utf8(value), AD=[purpose])`` (RFC 5297,
512-bit key ``K`` derived like the HMAC key, :mod:`anon_dagster.pseudonymize.methods`), written in
unpadded base64url. The custodian holding the key can decrypt it (:func:`siv_decrypt`,
:mod:`anon_dagster.pseudonymize.reversal`); anyone else learns nothing but equality.
"""

from __future__ import annotations

import binascii

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESSIV

from .distinct import apply_to_distinct, repeats_enough_to_deduplicate

SIV_KEY_BYTES = 64  # AES-256-SIV takes a 512-bit key (two AES-256 keys)


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


__all__ = ["SIV_KEY_BYTES", "siv_column", "siv_decrypt", "siv_pseudonyms"]
