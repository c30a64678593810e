"""Release spec v1, the ``columns`` block: each column's role, pseudonymization and hierarchy.

Unsafe pseudonymization methods (unkeyed or publicly salted hashes) are refused here, with the
reason, before any data is read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict

from ..dates import format_problems
from ..errors import HierarchyError
from ..hierarchies import (
    DateHierarchy,
    Hierarchy,
    IntervalHierarchy,
    MaskHierarchy,
    SuppressionHierarchy,
    TableHierarchy,
    validate_date_levels,
    validate_interval_widths,
    validate_mask_keep,
)

SAFE_PSEUDONYM_METHODS = ("hmac", "aes_siv", "token")
UNSAFE_HASHES = (
    "sha1", "sha224", "sha256", "sha384", "sha512", "sha3_256", "sha3_512", "md5", "blake2b",
    "blake2s", "hash", "salted_hash", "salted_sha256", "crc32", "xxhash",
)
ENUMERATION_WARNING = (
    "an unkeyed or publicly salted hash of an identifier is reversed by enumeration: an 8-digit "
    "national ID with its letter has only 2.6e8 values, hashed in minutes on one core and in under "
    "a second on a GPU, whatever the hash function; use method 'hmac' (keyed, not reversible), "
    "'aes_siv' (keyed, reversible by the custodian) or 'token', with the key kept in the key store"
)


# Numbers of the spec: a boolean is not one (``k: true`` is not k = 1), nor is text ("5")
Integer = Annotated[int, Strict()]
Number = Annotated[float, Strict()]  # an integer is a number too


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IntervalSpec(_Model):
    type: Literal["interval"]
    widths: list[Number]
    origin: Number = 0.0


class MaskSpec(_Model):
    type: Literal["mask"]
    keep: list[Integer]


class DateSpec(_Model):
    type: Literal["date"]
    levels: list[str]
    # strftime format of the column's text dates; unset: the one format reading every value
    format: str | None = None


class TableSpec(_Model):
    type: Literal["table"]
    path: str
    separator: str = ";"


HierarchySpec = IntervalSpec | MaskSpec | DateSpec | TableSpec


class NormalizeSpec(_Model):
    """Identifier normalization applied before pseudonymizing (so ' ab ' and 'AB' agree)."""

    trim: bool = True
    case: Literal["upper", "lower", "keep"] = "keep"
    unicode: Literal["NFC", "NFKC", "none"] = "NFC"


PseudonymScope = Literal["row", "release", "population"]
PSEUDONYM_SCOPES: tuple[str, ...] = ("row", "release", "population")
DEFAULT_PSEUDONYM_SCOPE = "release"


class PseudonymizeSpec(_Model):
    """How an identifier is replaced: hmac (one-way), aes_siv (reversible) or token.

    ``scope`` is how far one person's pseudonym links rows: ``row`` (every row its own random
    pseudonym: nothing links), ``release`` (one person, one pseudonym within one publication —
    one release partition — and another in every other publication) or ``population`` (the same
    pseudonym in every release, as the key alone decides; needs a ``composition`` block, which
    checks that linkage against the earlier publications).
    """

    method: str
    purpose: str = "default"
    normalize: NormalizeSpec = NormalizeSpec()
    prefix_version: bool = True
    # release: analyses within one publication keep working, following a person across
    # publications needs a spec that asks for it (population) and the composition check
    scope: PseudonymScope = DEFAULT_PSEUDONYM_SCOPE


Role = Literal["identifier", "quasi", "sensitive", "insensitive"]


class ColumnSpec(_Model):
    """The role of one source column, and how it is transformed."""

    role: Role
    pseudonymize: PseudonymizeSpec | None = None
    hierarchy: HierarchySpec | None = Field(default=None, discriminator="type")
    partition_key: bool = False
    kind: Literal["nominal", "ordinal", "numeric"] | None = None
    order: list[str] | None = None
    importance: Number = 1.0


def hierarchy_of(column: str, declared: HierarchySpec | None, resolve: Callable[[str], Path],
                 date_format: str | None = None, format_key: str | None = None) -> Hierarchy:
    """The hierarchy object ``declared`` for ``column`` (value → ``*`` when none is declared);
    ``resolve`` turns a table hierarchy's path into a file path. A date hierarchy reads the
    column's dates with ``date_format`` (its own ``format``, else the partitions' when the
    column is the partition column), named ``format_key`` in errors."""
    if declared is None:
        return SuppressionHierarchy(column)
    if isinstance(declared, IntervalSpec):
        return IntervalHierarchy(column, list(declared.widths), declared.origin)
    if isinstance(declared, MaskSpec):
        return MaskHierarchy(column, list(declared.keep))
    if isinstance(declared, DateSpec):
        return DateHierarchy(column, list(declared.levels), format=declared.format or date_format,
                             format_key=format_key or f"columns.{column}.hierarchy.format")
    return TableHierarchy.from_csv(column, resolve(declared.path), declared.separator)


def build_hierarchy(spec: Any, column: str) -> Hierarchy:
    """The hierarchy object declared for ``column`` of ``spec`` (a
    :class:`~anon_dagster.spec.ReleaseSpec`; value → ``*`` when none is declared)."""
    declared = spec.columns[column].hierarchy
    partitions = spec.partitions
    if isinstance(declared, DateSpec) and declared.format is None and partitions is not None \
            and partitions.column == column:
        return hierarchy_of(column, declared, spec.resolve, partitions.format, "partitions.format")
    return hierarchy_of(column, declared, spec.resolve)


def method_spelling(method: str) -> str:
    """A pseudonymization method's name without case or separators: ``SHA-256`` → ``sha256``."""
    return re.sub(r"[^a-z0-9]", "", method.lower())


_UNSAFE = {method_spelling(m) for m in UNSAFE_HASHES}
# hash families however they are numbered: sha2, sha-512/256, sha3-384, md4, ripemd160, ...
_UNSAFE_FAMILY = re.compile(
    r"(?:sha|sha3|shake|md|ripemd|crc|xxh|murmur|fnv|keccak)\d+[a-z0-9]*"
    r"|sha|sha3|md|keccak|blake\d*[bs]?|whirlpool|bcrypt|scrypt|argon2?(?:id|i|d)?|pbkdf2?[a-z0-9]*|siphash\d*"
)


def unsafe_method(method: str) -> bool:
    """Whether ``method`` names an unkeyed or publicly salted hash, however it is spelled."""
    name = method_spelling(method)
    return name in _UNSAFE or "hash" in name or "salt" in name or bool(_UNSAFE_FAMILY.fullmatch(name))


def column_problems(name: str, col: ColumnSpec, resolve: Callable[[str], Path]) -> list[tuple[str, str]]:
    """``(key, message)`` for every problem of column ``name`` alone (its role, method, hierarchy)."""
    problems: list[tuple[str, str]] = []
    add = lambda key, msg: problems.append((key, msg))  # noqa: E731
    key = f"columns.{name}"
    if col.pseudonymize is not None:
        if col.role != "identifier":
            add(f"{key}.pseudonymize", f"only identifier columns are pseudonymized (role is {col.role!r})")
        method = col.pseudonymize.method.lower()
        if method not in SAFE_PSEUDONYM_METHODS and unsafe_method(method):
            add(f"{key}.pseudonymize.method", f"{col.pseudonymize.method!r} is refused: {ENUMERATION_WARNING}")
        elif method not in SAFE_PSEUDONYM_METHODS:
            add(f"{key}.pseudonymize.method", f"unknown method {method!r} (use hmac, aes_siv or token)")
        if col.pseudonymize.scope == "row" and method in ("aes_siv", "token"):
            # a per-row random value cannot be reversed, nor recomputed to reverse it
            add(f"{key}.pseudonymize.scope",
                f"scope 'row' gives every row a random pseudonym, and {method} is reversible, so its "
                "pseudonym must be reproducible: use scope 'release' or 'population', or method hmac")
    if col.hierarchy is not None and col.role not in ("quasi", "sensitive"):
        # a sensitive attribute's hierarchy is used by hierarchical t-closeness only
        add(f"{key}.hierarchy", f"only quasi-identifiers and sensitive attributes take a hierarchy (role is {col.role!r})")
    if col.partition_key and col.role != "quasi":
        add(f"{key}.partition_key", f"a partition key must be a quasi-identifier (role is {col.role!r})")
    if col.partition_key and col.hierarchy is not None:
        add(f"{key}.hierarchy", "a partition key is never generalized: remove its hierarchy")
    h = col.hierarchy
    if isinstance(h, IntervalSpec):
        for msg in validate_interval_widths(h.widths):
            add(f"{key}.hierarchy.widths", msg)
    elif isinstance(h, MaskSpec):
        for msg in validate_mask_keep(h.keep):
            add(f"{key}.hierarchy.keep", msg)
    elif isinstance(h, DateSpec):
        for msg in validate_date_levels(h.levels):
            add(f"{key}.hierarchy.levels", msg)
        if h.format is not None:
            for msg in format_problems(h.format, date_format_needs(h.levels)):
                add(f"{key}.hierarchy.format", msg)
    elif isinstance(h, TableSpec):
        try:
            TableHierarchy.from_csv(name, resolve(h.path), h.separator)
        except HierarchyError as exc:
            add(f"{key}.hierarchy.path", str(exc))
    if col.order is not None and col.role != "sensitive":
        add(f"{key}.order", "an order is only used for a sensitive attribute (t-closeness)")
    return problems


def date_format_needs(levels: list[str]) -> tuple[str, ...]:
    """The units a date format must hold for date hierarchy ``levels``."""
    if "day" in levels:
        return ("year", "month", "day")
    if {"month", "quarter", "half"} & set(levels):
        return ("year", "month")
    return ("year",)
