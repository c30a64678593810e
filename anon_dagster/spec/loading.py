"""Release spec v1: loading YAML relative to the spec's folder, and validation.

Validation reports *every* problem at once, each with file, key and column
(:class:`~anon_dagster.errors.SpecError`): pydantic's structural errors first (an unknown
threshold lists the known ones), then every semantic problem (roles, hierarchies, methods,
policy, queries, publication).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from pydantic import ValidationError

from ..dates import format_problems, parse_dates
from ..errors import DataError, HierarchyError, Problem, SpecError
from ..hierarchies import DateHierarchy
from ..objectstore import location_problem, scheme_of, shown
from .approval import approval_message, approval_problems
from .columns import column_problems
from .levels import min_levels_problems
from .models import ReleaseSpec
from .policy import attacks_message, policy_problems, threshold_message
from .project import source_problems, table_problems
from .retention import retention_message, retention_problems
from .synthetic import synthetic_message


def _pydantic_problems(file: str, exc: ValidationError) -> list[Problem]:
    problems = []
    for err in exc.errors():
        loc = tuple(part for part in err["loc"] if not str(part).startswith("function-"))
        key = ".".join(str(part) for part in loc)
        message = err["msg"]
        special = threshold_message(loc, err)
        if special is None:
            special = attacks_message(loc, err)
        if special is None:
            special = approval_message(loc, err)
        if special is None:
            special = retention_message(loc, err)
        if special is None:
            special = synthetic_message(loc, err)
        if special is not None:
            message = special
        elif err["type"] == "extra_forbidden":
            message = "unknown key (not part of release spec v1)"
        elif err["type"] == "missing":
            message = "required key is missing"
        elif isinstance(err.get("input"), bool) and err["type"] in ("int_type", "float_type"):
            message = f"must be {'an integer' if err['type'] == 'int_type' else 'a number'}, not the boolean " \
                      f"{str(err['input']).lower()}"
        problems.append(Problem(file, key, message))
    return problems


def _semantic_problems(spec: ReleaseSpec, file: str) -> list[Problem]:
    problems: list[Problem] = []
    add = lambda key, msg: problems.append(Problem(file, key, msg))  # noqa: E731
    for key, msg in (*source_problems(spec), *location_problems(spec), *table_problems(spec)):
        add(key, msg)
    for name, col in spec.columns.items():
        for key, msg in column_problems(name, col, _local_only(spec)):
            add(key, msg)
    if not spec.quasi_identifiers and spec.anonymization.method not in ("none",):
        add("columns", "no column has role 'quasi': there is nothing to anonymize")
    if spec.partitions and spec.partitions.column not in spec.columns:
        add("partitions.column", f"column {spec.partitions.column!r} is not declared under columns")
    if spec.partitions:
        bounds = {}
        for key in ("start", "end"):
            value = getattr(spec.partitions, key)
            try:
                if value is not None:
                    bounds[key] = pd.Timestamp(value)
            except (ValueError, TypeError):
                add(f"partitions.{key}", f"{value!r} is not a date (YYYY-MM-DD)")
        if len(bounds) == 2 and bounds["end"] <= bounds["start"]:
            add("partitions.end", f"{spec.partitions.end!r} is not after partitions.start: there is no partition")
        fmt = spec.partitions.format
        if fmt is not None:
            needs = {"yearly": ("year",), "monthly": ("year", "month"), "quarterly": ("year", "month")}
            for msg in format_problems(fmt, needs.get(spec.partitions.cadence, ("year", "month", "day"))):
                add("partitions.format", msg)
            declared = spec.columns.get(spec.partitions.column)
            own = getattr(declared.hierarchy, "format", None) if declared is not None else None
            if own is not None and own != fmt:
                add(f"columns.{spec.partitions.column}.hierarchy.format",
                    f"{own!r} differs from partitions.format {fmt!r}: one column has one date format")
    for key, msg in policy_problems(spec):
        add(key, msg)
    for key, msg in min_levels_problems(spec):
        add(key, msg)
    for key, msg in approval_problems(spec.approval):
        add(key, msg)
    for key, msg in retention_problems(spec.retention):
        add(key, msg)
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
    for name in spec.pseudonymized:
        if spec.columns[name].pseudonymize.scope == "population" and spec.composition is None:
            add(f"columns.{name}.pseudonymize.scope",
                "scope 'population' links a person across releases: declare a composition block "
                "(composition.population, composition.person) so the linkage is checked against the "
                "earlier publications, or use scope 'release'")
    if spec.composition is not None and spec.composition.person not in spec.columns:
        add("composition.person", f"column {spec.composition.person!r} is not declared under columns")
    if spec.publication.mode == "aggregates" and spec.publication.epsilon is None:
        add("publication.epsilon", "aggregates are published with differential privacy: declare epsilon")
    return problems


def location_problems(spec: ReleaseSpec) -> list[tuple[str, str]]:
    """``(key, message)`` for every location of the spec that is not a supported one: the source
    and the publication may be local paths or object-storage URIs (:mod:`anon_dagster.objectstore`);
    the population file and the hierarchy tables are local files."""
    problems = []
    for key, text in (("source.path", spec.source.path), ("publication.path", spec.publication.path)):
        if text is None:  # a source that is a Dagster asset (source.asset)
            continue
        problem = location_problem(text)
        if problem is not None:
            problems.append((key, problem))
    if spec.policy.population is not None and scheme_of(spec.policy.population.path) is not None:
        problems.append(("policy.population.path", _local_message(spec.policy.population.path)))
    return problems


def _local_message(text: str) -> str:
    return (f"{shown(text)!r}: object storage holds a release's source.path and publication.path only; "
            "this file is read from a local path")


def _local_only(spec: ReleaseSpec) -> Callable[[str], Path]:
    """``spec.resolve`` for the files that are read locally: a URI is a problem of the key (a
    HierarchyError, which the column's checks report under its key)."""
    def resolve(path: str) -> Path:
        if scheme_of(path) is not None:
            raise HierarchyError(_local_message(path))
        return spec.resolve(path)

    return resolve


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
        try:
            if isinstance(hierarchy, DateHierarchy):
                # the whole column with one format, so that a bad date is named by its row
                parse_dates(df[name], name, hierarchy.format, format_key=hierarchy.format_key)
            values = pd.unique(df[name])
            hierarchy.table(values)
        except (HierarchyError, DataError) as exc:
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


@dataclass(frozen=True)
class SpecFile:
    """One spec file, loaded on its own: its spec, or the error listing every problem of the file.

    ``release`` is the release name the file declares, when it can be read (also for a broken file).
    """

    path: Path
    spec: ReleaseSpec | None = None
    error: SpecError | None = None
    release: str | None = None


def load_spec_files(where: str | Path | Iterable[str | Path]) -> list[SpecFile]:
    """Every spec of a folder (or the given files), each loaded on its own: a broken file is
    returned with every problem of that file, and never keeps the others from loading.

    A second file declaring a release name already declared is broken: "release X already declared
    in FILE". A folder that does not exist is a SpecError naming it. :func:`load_specs` (the CLI's)
    stays strict: any problem of any file fails it.
    """
    if isinstance(where, (str, Path)):
        folder = Path(where)
        if not folder.is_dir():
            raise SpecError([Problem(str(folder), "", "no such folder of release specs")])
        paths = discover_specs(folder)
    else:
        paths = [Path(p) for p in where]
    out: list[SpecFile] = []
    declared: dict[str, Path] = {}
    for path in paths:
        try:
            spec = load_spec(path)
        except SpecError as exc:
            out.append(SpecFile(path, error=exc, release=_declared_release(path)))
            continue
        if spec.release in declared:
            problem = Problem(str(path), "release", f"release {spec.release!r} already declared in {declared[spec.release]}")
            out.append(SpecFile(path, error=SpecError([problem]), release=spec.release))
            continue
        declared[spec.release] = path
        out.append(SpecFile(path, spec=spec, release=spec.release))
    return out


def _declared_release(path: Path) -> str | None:
    """The ``release`` a spec file declares, if the file reads as YAML and names one."""
    try:
        raw = _load_yaml(_protect_placeholders(path.read_text(encoding="utf-8")), str(path))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, SpecError):
        return None
    release = raw.get("release") if isinstance(raw, dict) else None
    return release if isinstance(release, str) and release else None


def iter_problems(exc: SpecError) -> Iterable[str]:
    return (str(p) for p in exc.problems)
