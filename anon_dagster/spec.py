"""Release spec v1: typed models, YAML loading relative to the spec's folder, validation.

A release spec declares one periodic publication: its source, partitions, the role of every
column, the anonymization, the risk policy (thresholds declared before measuring), utility
queries, composition with earlier releases and the publication target. Validation reports
*every* problem at once, each with file, key and column (:class:`~anon_dagster.errors.SpecError`).

Unsafe pseudonymization methods (unkeyed or publicly salted hashes) are refused here, with the
reason, before any data is read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import HierarchyError, Problem, SpecError
from .hierarchies import (
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


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceSpec(_Model):
    """Where the raw data comes from: csv or parquet, relative to the spec; may hold {partition}."""

    path: str
    separator: str | None = None
    format: Literal["csv", "parquet"] | None = None


Cadence = Literal["daily", "weekly", "monthly", "quarterly", "yearly"]


class PartitionsSpec(_Model):
    """Time-window partitions over a date column: a partition's rows fall in its window."""

    cadence: Cadence
    start: str
    end: str | None = None
    column: str


class IntervalSpec(_Model):
    type: Literal["interval"]
    widths: list[float]
    origin: float = 0.0


class MaskSpec(_Model):
    type: Literal["mask"]
    keep: list[int]


class DateSpec(_Model):
    type: Literal["date"]
    levels: list[str]


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


class PseudonymizeSpec(_Model):
    """How an identifier is replaced: hmac (one-way), aes_siv (reversible) or token."""

    method: str
    purpose: str = "default"
    normalize: NormalizeSpec = NormalizeSpec()
    prefix_version: bool = True


Role = Literal["identifier", "quasi", "sensitive", "insensitive"]


class ColumnSpec(_Model):
    """The role of one source column, and how it is transformed."""

    role: Role
    pseudonymize: PseudonymizeSpec | None = None
    hierarchy: HierarchySpec | None = Field(default=None, discriminator="type")
    partition_key: bool = False
    kind: Literal["nominal", "ordinal", "numeric"] | None = None
    order: list[str] | None = None
    importance: float = 1.0


class AnonymizationSpec(_Model):
    """What the anonymizer does; ``k`` and the policy's monotone thresholds are its targets."""

    method: Literal["global", "mondrian", "microaggregation", "none"] = "global"
    k: int = Field(default=5, ge=1)
    max_suppression: float = Field(default=0.0, ge=0.0, le=1.0)
    utility: str = "entropy"
    suppression: Literal["rows", "cells"] = "rows"
    seed: int = 0
    pram: dict[str, Any] | None = None
    # global recoding's risk-utility frontier: "complete" resolves every lattice node, "partial"
    # lists the minimal nodes the search already settled; unset = complete without suppression
    # (cheap), partial with it (completing can cost seconds on large lattices)
    frontier: Literal["complete", "partial"] | None = None


class PopulationSpec(_Model):
    """The population the published rows are drawn from: microdata or a frequency table."""

    path: str
    count_column: str | None = None
    # The population is matched on these QIs only (it lacks the others, e.g. an event date):
    # its class sizes are then an upper bound on F, so journalist risk is understated.
    qis: list[str] | None = None


class RecursiveCL(_Model):
    c: float = Field(gt=0)
    l: int = Field(ge=1)  # noqa: E741 - the criterion's own name


class ThresholdsSpec(_Model):
    """Declared limits; each one present becomes a blocking check."""

    k: int | None = Field(default=None, ge=1)
    prosecutor_avg: float | None = Field(default=None, gt=0, le=1)
    prosecutor_max: float | None = Field(default=None, gt=0, le=1)
    journalist_avg: float | None = Field(default=None, gt=0, le=1)
    journalist_max: float | None = Field(default=None, gt=0, le=1)
    marketer: float | None = Field(default=None, gt=0, le=1)
    population_uniqueness: float | None = Field(default=None, ge=0, le=1)
    l_distinct: int | None = Field(default=None, ge=1)
    l_entropy: float | None = Field(default=None, ge=1)
    recursive_cl: RecursiveCL | None = None
    t_closeness: float | None = Field(default=None, ge=0, le=1)
    uniques_fraction: float | None = Field(default=None, ge=0, le=1)


class PolicySpec(_Model):
    """The risk policy, declared before anyone measures."""

    adversary: Literal["prosecutor", "journalist", "marketer"] = "prosecutor"
    population: PopulationSpec | None = None
    sampling_fraction: float | None = Field(default=None, gt=0, le=1)
    thresholds: ThresholdsSpec = ThresholdsSpec()
    severity: Literal["low", "medium", "high", "very_high"] = "high"
    review_after_days: int = Field(default=365, ge=1)


class UtilityQuerySpec(_Model):
    """A question the release must answer: prevalence of ``target`` per ``group_by``."""

    name: str
    group_by: list[str]
    target: str
    max_error_points: float | None = Field(default=None, ge=0)
    severity: Literal["error", "warn"] = "error"


class CompositionSpec(_Model):
    """Which earlier publications this one is composed with, and the linkage identifier."""

    population: str
    person: str
    min_k: int = Field(default=5, ge=1)


class PublicationSpec(_Model):
    """Where and how the release is published; the path may hold {release} and {partition}."""

    path: str
    mode: Literal["rows", "aggregates"] = "rows"
    epsilon: float | None = Field(default=None, gt=0)
    total_epsilon: float | None = Field(default=None, gt=0)
    aggregates: dict[str, Any] | None = None
    # how the population's epsilon budget composes across releases (see docs/release.md)
    budget_composition: Literal["basic", "advanced"] = "basic"
    delta: float | None = Field(default=None, gt=0, lt=1)


class ReleaseSpec(_Model):
    """Release spec v1 (see the README and DESIGN contract)."""

    release: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    description: str = ""
    source: SourceSpec
    partitions: PartitionsSpec | None = None
    columns: dict[str, ColumnSpec]
    anonymization: AnonymizationSpec = AnonymizationSpec()
    policy: PolicySpec = PolicySpec()
    utility_queries: list[UtilityQuerySpec] = []
    composition: CompositionSpec | None = None
    publication: PublicationSpec

    # set by load_spec: the file and folder paths resolve against
    spec_path: Path | None = Field(default=None, exclude=True)

    # ----- derived views -------------------------------------------------------------------
    @property
    def base_dir(self) -> Path:
        return self.spec_path.parent if self.spec_path else Path.cwd()

    def resolve(self, path: str, **fmt: str) -> Path:
        """A path of the spec, formatted with ``fmt`` and resolved against the spec's folder."""
        text = path.format(release=self.release, **fmt) if fmt or "{release}" in path else path
        p = Path(text).expanduser()
        return p if p.is_absolute() else (self.base_dir / p).resolve()

    def data_folders(self) -> list[Path]:
        """The folders dedicated to this release's data: a key store must never sit inside one.

        Source, publication and population folders (a path's part before its first
        placeholder). The spec's own folder and its ancestors are left out: a file given beside
        the spec makes that folder a place of specs, not a data folder.
        """
        paths = [self.source.path, self.publication.path]
        if self.policy.population is not None:
            paths.append(self.policy.population.path)
        folders = []
        for text in paths:
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
        """SHA-256 of the spec's content (keys sorted), plus the content of its table hierarchies."""
        payload = self.model_dump(mode="json", exclude={"spec_path"})
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


def build_hierarchy(spec: ReleaseSpec, column: str) -> Hierarchy:
    """The hierarchy object declared for ``column`` (value → ``*`` when none is declared)."""
    declared = spec.columns[column].hierarchy
    if declared is None:
        return SuppressionHierarchy(column)
    if isinstance(declared, IntervalSpec):
        return IntervalHierarchy(column, list(declared.widths), declared.origin)
    if isinstance(declared, MaskSpec):
        return MaskHierarchy(column, list(declared.keep))
    if isinstance(declared, DateSpec):
        return DateHierarchy(column, list(declared.levels))
    return TableHierarchy.from_csv(column, spec.resolve(declared.path), declared.separator)


# ----- loading and validation -----------------------------------------------------------------


def _pydantic_problems(file: str, exc: ValidationError) -> list[Problem]:
    problems = []
    for err in exc.errors():
        key = ".".join(str(part) for part in err["loc"] if not str(part).startswith("function-"))
        message = err["msg"]
        if err["type"] == "extra_forbidden":
            message = "unknown key (not part of release spec v1)"
        elif err["type"] == "missing":
            message = "required key is missing"
        problems.append(Problem(file, key, message))
    return problems


def _semantic_problems(spec: ReleaseSpec, file: str) -> list[Problem]:
    problems: list[Problem] = []
    add = lambda key, msg: problems.append(Problem(file, key, msg))  # noqa: E731
    for name, col in spec.columns.items():
        key = f"columns.{name}"
        if col.pseudonymize is not None:
            if col.role != "identifier":
                add(f"{key}.pseudonymize", f"only identifier columns are pseudonymized (role is {col.role!r})")
            method = col.pseudonymize.method.lower()
            if method in UNSAFE_HASHES or "hash" in method or "salt" in method:
                add(f"{key}.pseudonymize.method", f"{method!r} is refused: {ENUMERATION_WARNING}")
            elif method not in SAFE_PSEUDONYM_METHODS:
                add(f"{key}.pseudonymize.method", f"unknown method {method!r} (use hmac, aes_siv or token)")
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
        elif isinstance(h, TableSpec):
            try:
                TableHierarchy.from_csv(name, spec.resolve(h.path), h.separator)
            except HierarchyError as exc:
                add(f"{key}.hierarchy.path", str(exc))
        if col.order is not None and col.role != "sensitive":
            add(f"{key}.order", "an order is only used for a sensitive attribute (t-closeness)")
    if not spec.quasi_identifiers and spec.anonymization.method not in ("none",):
        add("columns", "no column has role 'quasi': there is nothing to anonymize")
    if spec.partitions and spec.partitions.column not in spec.columns:
        add("partitions.column", f"column {spec.partitions.column!r} is not declared under columns")
    if spec.partitions:
        try:
            pd.Timestamp(spec.partitions.start)
        except (ValueError, TypeError):
            add("partitions.start", f"{spec.partitions.start!r} is not a date (YYYY-MM-DD)")
    t = spec.policy.thresholds
    needs_population = any(v is not None for v in (t.journalist_avg, t.journalist_max, t.marketer))
    if needs_population and spec.policy.population is None and spec.policy.sampling_fraction is None:
        add("policy.population", "journalist and marketer thresholds need a population or a sampling_fraction")
    if spec.policy.adversary in ("journalist", "marketer") and spec.policy.population is None and spec.policy.sampling_fraction is None:
        add("policy.adversary", f"the {spec.policy.adversary} model needs policy.population or policy.sampling_fraction")
    pop = spec.policy.population
    if pop is not None and pop.qis is not None:
        if not pop.qis:
            add("policy.population.qis", "an empty list matches nothing: name the QIs the population holds")
        for q in pop.qis:
            if q not in spec.quasi_identifiers:
                add("policy.population.qis", f"{q!r} is not a quasi-identifier of the spec")
    if t.k is not None and spec.anonymization.method != "none" and spec.anonymization.k < t.k:
        add("anonymization.k", f"k={spec.anonymization.k} is below the policy threshold k={t.k}: the release could never pass")
    if (t.l_distinct or t.l_entropy or t.recursive_cl or t.t_closeness is not None) and not spec.sensitive:
        add("policy.thresholds", "l-diversity and t-closeness thresholds need a column with role 'sensitive'")
    names = set()
    for i, q in enumerate(spec.utility_queries):
        if q.name in names:
            add(f"utility_queries.{i}.name", f"query name {q.name!r} is used twice")
        names.add(q.name)
        for g in q.group_by:
            if g not in spec.columns:
                add(f"utility_queries.{i}.group_by", f"column {g!r} is not declared under columns")
            elif spec.columns[g].role == "identifier":
                add(f"utility_queries.{i}.group_by", f"column {g!r} is an identifier and is not published")
        if q.target not in spec.columns:
            add(f"utility_queries.{i}.target", f"column {q.target!r} is not declared under columns")
    utility = spec.anonymization.utility
    if utility not in ("entropy", "loss", "discernibility", "aecs") and not (
        utility.startswith("query:") and utility[6:] in names
    ):
        add("anonymization.utility", f"{utility!r} is not entropy, loss, discernibility, aecs or query:<name of a utility query>")
    if spec.composition is not None and spec.composition.person not in spec.columns:
        add("composition.person", f"column {spec.composition.person!r} is not declared under columns")
    if spec.publication.mode == "aggregates" and spec.publication.epsilon is None:
        add("publication.epsilon", "aggregates are published with differential privacy: declare epsilon")
    return problems


# Path templates such as ``{path: ../published/{release}/{partition}.parquet}`` are not valid
# YAML inside a flow mapping (a plain scalar cannot hold ``{``); the documented placeholders are
# swapped for tokens before parsing and restored after, so the spec reads as documented.
_TOKENS = {"{release}": "__anon_dagster_release__", "{partition}": "__anon_dagster_partition__"}


def _protect_placeholders(text: str) -> str:
    for placeholder, token in _TOKENS.items():
        text = text.replace(placeholder, token)
    return text


def _restore_placeholders(value: Any) -> Any:
    if isinstance(value, str):
        for placeholder, token in _TOKENS.items():
            value = value.replace(token, placeholder)
        return value
    if isinstance(value, dict):
        return {_restore_placeholders(k): _restore_placeholders(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore_placeholders(v) for v in value]
    return value


class _DuplicateKeyLoader(yaml.SafeLoader):
    """A safe YAML loader that records keys given twice in one mapping instead of keeping the last.

    A column declared twice (say once as quasi, once as sensitive) would otherwise silently take
    the second role.
    """

    def __init__(self, stream: str):
        super().__init__(stream)
        self.duplicates: list[tuple[int, str]] = []

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                self.duplicates.append((key_node.start_mark.line + 1, str(key)))
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _load_yaml(text: str, file: str) -> Any:
    loader = _DuplicateKeyLoader(text)
    try:
        data = loader.get_single_data()
    finally:
        loader.dispose()
    if loader.duplicates:
        raise SpecError([
            Problem(file, f"line {line}", f"key {_restore_placeholders(key)!r} is given twice in the same mapping (one declaration per key)")
            for line, key in loader.duplicates
        ])
    return data


def load_spec(path: str | Path) -> ReleaseSpec:
    """Load and validate a release spec; raise SpecError listing every problem found."""
    path = Path(path)
    file = str(path)
    try:
        text = _protect_placeholders(path.read_text(encoding="utf-8"))
        raw = _restore_placeholders(_load_yaml(text, file))
    except OSError as exc:
        raise SpecError([Problem(file, "", f"cannot read the spec: {exc.strerror}")]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        raise SpecError([Problem(file, where, f"not valid YAML: {getattr(exc, 'problem', exc)}")]) from None
    return spec_from_dict(raw, path)


def spec_from_dict(raw: Any, path: Path | None = None) -> ReleaseSpec:
    """Validate a spec given as a mapping (``path`` anchors its relative paths)."""
    file = str(path) if path else "<spec>"
    if not isinstance(raw, dict):
        raise SpecError([Problem(file, "", "a release spec must be a YAML mapping")])
    try:
        spec = ReleaseSpec.model_validate({**raw, "spec_path": path.resolve() if path else None})
    except ValidationError as exc:
        raise SpecError(_pydantic_problems(file, exc)) from None
    problems = _semantic_problems(spec, file)
    if problems:
        raise SpecError(problems)
    return spec


def check_data(spec: ReleaseSpec, df: pd.DataFrame, source: str | None = None) -> None:
    """Check a table against the spec; raise SpecError with every problem found.

    Every source column must be declared (no silent pass-through), every declared column must
    be present, and every QI value must be covered by its hierarchy.
    """
    file = source or spec.label
    problems: list[Problem] = []
    undeclared = [c for c in df.columns if c not in spec.columns]
    for c in undeclared:
        problems.append(Problem(file, f"column {c!r}", "present in the data but not declared in the spec (no silent pass-through)"))
    for c in spec.columns:
        if c not in df.columns:
            problems.append(Problem(file, f"column {c!r}", "declared in the spec but missing from the data"))
    for name, hierarchy in spec.hierarchies.items():
        if name not in df.columns:
            continue
        values = pd.unique(df[name])
        try:
            hierarchy.table(values)
        except HierarchyError as exc:
            problems.append(Problem(file, f"columns.{name}.hierarchy", str(exc)))
    if problems:
        raise SpecError(problems)


def discover_specs(folder: str | Path) -> list[Path]:
    """Release spec files in ``folder`` (``*.yaml`` / ``*.yml``, not in sub-folders), sorted."""
    folder = Path(folder)
    return sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())


def load_specs(folder: str | Path) -> list[ReleaseSpec]:
    """Every spec in ``folder``; problems of all files are reported together."""
    specs, problems = [], []
    for path in discover_specs(folder):
        try:
            specs.append(load_spec(path))
        except SpecError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SpecError(problems)
    seen: dict[str, Path] = {}
    for s in specs:
        if s.release in seen:
            problems.append(Problem(str(s.spec_path), "release", f"name {s.release!r} is also used by {seen[s.release]}"))
        seen[s.release] = s.spec_path  # type: ignore[assignment]
    if problems:
        raise SpecError(problems)
    return specs


def iter_problems(exc: SpecError) -> Iterable[str]:
    return (str(p) for p in exc.problems)
