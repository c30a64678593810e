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

The normalization is in :mod:`.normalization`, the HMAC pseudonyms in :mod:`.keyed_hash`, the
AES-SIV ones in :mod:`.siv`, the keying of distinct values once in :mod:`.distinct`; this
module keeps the formats and the publication labels, and offers every name of those modules.
"""

from __future__ import annotations

import re

from ..errors import DataError
from .distinct import (
    DEDUPE_MIN_MULTIPLICITY,
    DEDUPE_SAMPLE,
    apply_to_distinct,
    repeats_enough_to_deduplicate,
    to_pandas_strings,
)
from .keyed_hash import (
    HMAC_BYTES,
    hmac_column,
    hmac_concat,
    hmac_digests,
    hmac_pseudonyms,
    random_hex_column,
)
from .normalization import (
    CASES,
    PERSON_NORMALIZATION,
    UNICODE_FORMS,
    Normalization,
    normalize_identifiers,
)
from .siv import SIV_KEY_BYTES, siv_column, siv_decrypt, siv_pseudonyms

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


__all__ = [
    "ALL_PARTITIONS", "CASES", "DEDUPE_MIN_MULTIPLICITY", "DEDUPE_SAMPLE", "HMAC_BYTES",
    "PERSON_NORMALIZATION", "PUBLICATION_LABEL", "SIV_KEY_BYTES", "TOKEN_PREFIX", "UNICODE_FORMS",
    "VERSION_RE", "Normalization", "apply_to_distinct", "hmac_column", "hmac_concat", "hmac_digests",
    "hmac_pseudonyms", "normalize_identifiers", "pseudonym_pattern", "publication_label",
    "random_hex_column", "repeats_enough_to_deduplicate", "siv_column", "siv_decrypt",
    "siv_pseudonyms", "split_version", "to_pandas_strings",
]
