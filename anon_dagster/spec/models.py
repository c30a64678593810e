"""Release spec v1: the typed models of a spec (source, partitions, columns, anonymization,
policy, utility queries, composition, publication) and the views derived from them.

A release spec declares one periodic publication: its source, partitions, the role of every
column, the anonymization, the risk policy (thresholds declared before measuring), utility
queries, composition with earlier releases and the publication target.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, SerializerFunctionWrapHandler, model_serializer
from pydantic_core import PydanticCustomError

from ..errors import UserError
from ..hierarchies import Hierarchy
from ..objectstore import ObjectPath, is_remote
from .approval import ApprovalSpec
from .columns import ColumnSpec, Integer, Number, TableSpec, _Model, build_hierarchy
from .policy import PolicySpec
from .retention import RetentionSpec
from .synthetic import SyntheticSpec


class SourceSpec(_Model):
    """Where the raw data comes from: a csv or parquet file (``path``, relative to the spec; may
    hold {partition}), a Delta table's folder (``path`` with ``format: delta``, read by the Spark
    engine), an asset of the Dagster project the release is part of (``asset``: its key, as ``a/b``
    or as the list of its parts), or a table of the Spark session's catalog (``table``: ``name``,
    ``db.name`` or ``catalog.db.name``, read by the Spark engine). Exactly one of ``path``,
    ``asset`` and ``table`` is given (spec validation)."""

    path: str | None = None
    asset: str | list[str] | None = None
    table: str | None = None
    separator: str | None = None
    format: Literal["csv", "parquet", "delta"] | None = None

    @model_serializer(mode="wrap")
    def _without_absent_keys(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # source.asset and source.table are optional in release spec v1: a file source dumps
        # (and hashes) as before
        return _drop_unset(handler(self), ("asset", "path", "table"))

    @property
    def asset_key(self) -> tuple[str, ...] | None:
        """The parts of the upstream asset's key (``"warehouse/discharges"`` → ``("warehouse",
        "discharges")``), or None for a file source."""
        if self.asset is None:
            return None
        return tuple(self.asset.split("/")) if isinstance(self.asset, str) else tuple(self.asset)

    @property
    def spark_only(self) -> str | None:
        """The spec key of a source only the Spark engine reads (``source.table``, or
        ``source.format`` for a Delta table), else None."""
        if self.table is not None:
            return "source.table"
        return "source.format" if self.format == "delta" else None

    @property
    def described(self) -> str:
        """The source in words: ``the Dagster asset 'a/b'``, ``the catalog table 'db.t'`` or its path."""
        key = self.asset_key
        if key is not None:
            return f"the Dagster asset {'/'.join(key)!r}"
        if self.table is not None:
            return f"the catalog table {self.table!r}"
        return str(self.path)


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")

Cadence = Literal["daily", "weekly", "monthly", "quarterly", "yearly"]

# Who answers for a release and the labels it is found by (Dagster's rules for asset owners and tags)
_OWNER = re.compile(r"team:[A-Za-z0-9_.-]+|[^@\s]+@[^@\s]+\.[^@\s]+")
_TAG_KEY = re.compile(r"([A-Za-z0-9_.-]{1,63}/)?[A-Za-z0-9_.-]{1,63}")
_TAG_VALUE = re.compile(r"[A-Za-z0-9_.-]{0,63}")


def _matching(pattern: re.Pattern[str], what: str) -> AfterValidator:
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise PydanticCustomError("spec_text", f"{value[:70]!r} is not {what}")
        return value
    return AfterValidator(check)


Owner = Annotated[str, _matching(_OWNER, "an e-mail address or team:<name>")]
TagKey = Annotated[str, _matching(_TAG_KEY, "a tag key: letters, digits, _ . - (at most 63), with an optional prefix/")]
TagValue = Annotated[str, _matching(_TAG_VALUE, "a tag value: letters, digits, _ . - (at most 63)")]


class PartitionsSpec(_Model):
    """Time-window partitions over a date column: a partition's rows fall in its window."""

    cadence: Cadence
    start: str
    end: str | None = None
    column: str
    # strftime format of the column's text dates ("%d/%m/%Y"); unset: the one format that reads
    # every value, refused when two read them differently (see anon_dagster.dates)
    format: str | None = None


class AnonymizationSpec(_Model):
    """What the anonymizer does; ``k`` and the policy's monotone thresholds are its targets."""

    method: Literal["global", "mondrian", "microaggregation", "synthetic", "none"] = "global"
    k: Integer = Field(default=5, ge=1)
    max_suppression: Number = Field(default=0.0, ge=0.0, le=1.0)
    utility: str = "entropy"
    suppression: Literal["rows", "cells"] = "rows"
    seed: Integer = 0
    pram: dict[str, Any] | None = None
    # global recoding's risk-utility frontier: "complete" resolves every lattice node, "partial"
    # lists the minimal nodes the search already settled; unset = complete without suppression
    # (cheap), partial with it (completing can cost seconds on large lattices)
    frontier: Literal["complete", "partial"] | None = None
    # global recoding: the level each listed QI's search starts from (the sub-lattice above
    # them is searched); lets the Spark engine build the search's frequency table at those levels
    min_levels: dict[str, Integer] | None = None
    # method "synthetic": how the synthetic table is made (see anon_dagster.spec.synthetic)
    synthetic: SyntheticSpec | None = None

    @model_serializer(mode="wrap")
    def _without_absent_synthetic(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # an optional block of release spec v1: a spec without it dumps (and hashes) as before
        out = handler(self)
        if isinstance(out, dict) and out.get("synthetic") is None:
            out.pop("synthetic", None)
        if isinstance(out, dict) and out.get("min_levels") is None:
            out.pop("min_levels", None)
        return out


class UtilityQuerySpec(_Model):
    """A question the release must answer: prevalence of ``target`` per ``group_by``."""

    name: str
    group_by: list[str]
    target: str
    max_error_points: Number | None = Field(default=None, ge=0)
    severity: Literal["error", "warn"] = "error"


class CompositionSpec(_Model):
    """Which earlier publications this one is composed with, and the linkage identifier."""

    population: str
    person: str
    min_k: Integer = Field(default=5, ge=1)


class PublicationSpec(_Model):
    """Where and how the release is published; the path may hold {release} and {partition}."""

    path: str
    mode: Literal["rows", "aggregates"] = "rows"
    epsilon: Number | None = Field(default=None, gt=0)
    total_epsilon: Number | None = Field(default=None, gt=0)
    aggregates: dict[str, Any] | None = None
    # how the population's epsilon budget composes across releases (see docs/release.md)
    budget_composition: Literal["basic", "advanced"] = "basic"
    delta: Number | None = Field(default=None, gt=0, lt=1)
    # a copy of the publication handed to a Dagster IO manager of the project (its resource key)
    # as a table: given together; the file at ``path`` stays the publication of record (ledger
    # entry, report); see docs/dagster.md
    io_manager: str | None = None
    table: str | None = None
    # the column the table's rows carry their partition's start in (a partitioned release only):
    # what a database IO manager replaces one partition by
    table_partition_column: str = "partition_start"

    @model_serializer(mode="wrap")
    def _without_absent_table(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # the table keys are optional in release spec v1: a spec without them dumps (and hashes) as before
        out = _drop_unset(handler(self), ("io_manager", "table"))
        if isinstance(out, dict) and "table" not in out:
            out.pop("table_partition_column", None)
        return out


def _drop_unset(out: Any, keys: tuple[str, ...]) -> Any:
    """A model's dump without the optional ``keys`` it leaves unset (None)."""
    if isinstance(out, dict):
        for key in keys:
            if out.get(key) is None:
                out.pop(key, None)
    return out


class ReleaseSpec(_Model):
    """Release spec v1 (see the README and docs/release.md)."""

    release: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    description: str = ""
    owners: list[Owner] = []  # shown on the release's assets in Dagster
    tags: dict[TagKey, TagValue] = {}
    source: SourceSpec
    partitions: PartitionsSpec | None = None
    columns: dict[str, ColumnSpec]
    anonymization: AnonymizationSpec = AnonymizationSpec()
    policy: PolicySpec = PolicySpec()
    utility_queries: list[UtilityQuerySpec] = []
    composition: CompositionSpec | None = None
    publication: PublicationSpec
    approval: ApprovalSpec | None = None  # who approves a passing evaluation before it is published
    retention: RetentionSpec | None = None  # how long stored intermediate tables are kept

    # set by load_spec: the file and folder paths resolve against
    spec_path: Path | None = Field(default=None, exclude=True)

    @model_serializer(mode="wrap")
    def _without_absent_approval(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # an optional block of release spec v1: a spec without it dumps (and hashes) as before
        out = handler(self)
        if isinstance(out, dict) and out.get("approval") is None:
            out.pop("approval", None)
        if isinstance(out, dict) and out.get("retention") is None:
            out.pop("retention", None)
        return out

    # ----- derived views -------------------------------------------------------------------
    @property
    def base_dir(self) -> Path:
        return self.spec_path.parent if self.spec_path else Path.cwd()

    def resolve(self, path: str, **fmt: str) -> Path:
        """A path of the spec, formatted with ``fmt`` and resolved against the spec's folder.

        An object-storage URI (``s3://bucket/key``) is returned as its
        :class:`~anon_dagster.objectstore.ObjectPath` (spec validation allows one in
        ``source.path`` and ``publication.path`` only).

        A ``partition`` must be a plain key (letters, digits, ``-``, ``_``): never a path of
        its own (``../x``, ``2024/../../x``). The keys themselves are checked against the
        spec's partitions by :func:`anon_dagster.partitions.partition_window`.
        """
        partition = fmt.get("partition")
        if partition is not None and not _PLAIN_KEY.fullmatch(str(partition)):
            raise UserError(f"{self.label}: partition {str(partition)[:40]!r} is not a partition key")
        text = path.format(release=self.release, **fmt) if fmt or "{release}" in path else path
        if is_remote(text):  # an object-storage location (source and publication only, see loading)
            return ObjectPath.parse(text)  # type: ignore[return-value]
        p = Path(text).expanduser()
        return p if p.is_absolute() else (self.base_dir / p).resolve()

    def data_folders(self) -> list[Path]:
        """The folders dedicated to this release's data: a key store must never sit inside one.

        Source, publication and population folders (a path's part before its first
        placeholder). The spec's own folder and its ancestors are left out: a file given beside
        the spec makes that folder a place of specs, not a data folder.
        """
        paths = [p for p in (self.source.path, self.publication.path) if p is not None]
        if self.policy.population is not None:
            paths.append(self.policy.population.path)
        folders = []
        for text in paths:
            if is_remote(text):  # a bucket is no folder of this machine: no key store sits in it
                continue
            fixed = text.split("{", 1)[0]
            folder = self.resolve(fixed) if fixed.endswith(("/", "\\")) else self.resolve(fixed).parent
            if folder not in folders and folder != self.base_dir.resolve() and folder not in self.base_dir.resolve().parents:
                folders.append(folder)
        return folders

    def columns_with_role(self, role: str) -> list[str]:
        return [name for name, col in self.columns.items() if col.role == role]

    @property
    def identifiers(self) -> list[str]:
        return self.columns_with_role("identifier")

    @property
    def quasi_identifiers(self) -> list[str]:
        """All QIs, partition keys included (they are QIs an adversary knows too)."""
        return self.columns_with_role("quasi")

    @property
    def partition_keys(self) -> list[str]:
        return [n for n, c in self.columns.items() if c.partition_key]

    @property
    def generalized_qis(self) -> list[str]:
        """QIs the anonymizer may generalize: every QI except partition keys."""
        return [n for n in self.quasi_identifiers if not self.columns[n].partition_key]

    @property
    def sensitive(self) -> list[str]:
        return self.columns_with_role("sensitive")

    @property
    def pseudonymized(self) -> list[str]:
        return [n for n in self.identifiers if self.columns[n].pseudonymize is not None]

    @property
    def published_columns(self) -> list[str]:
        """Columns a publication holds: pseudonymized identifiers and every non-identifier."""
        return [
            n for n, c in self.columns.items()
            if c.role != "identifier" or c.pseudonymize is not None
        ]

    @cached_property
    def hierarchies(self) -> dict[str, Hierarchy]:
        """One hierarchy per generalizable QI (a QI without one gets value → ``*``)."""
        return {name: build_hierarchy(self, name) for name in self.generalized_qis}

    def spec_hash(self) -> str:
        """SHA-256 of the spec's content (keys sorted), plus the content of its table hierarchies.

        ``owners`` and ``tags`` are left out: they say who answers for a release, not what it publishes;
        so is ``retention``: how long intermediates are kept changes nothing published (nor voids an approval)."""
        payload = self.model_dump(mode="json", exclude={"spec_path", "owners", "tags", "retention"})
        digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode())
        for name in sorted(self.columns):
            h = self.columns[name].hierarchy
            if isinstance(h, TableSpec):
                try:
                    digest.update(self.resolve(h.path).read_bytes())
                except OSError:
                    pass
        return digest.hexdigest()

    @property
    def label(self) -> str:
        return str(self.spec_path) if self.spec_path else self.release
