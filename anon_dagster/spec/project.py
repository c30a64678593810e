"""The spec keys that tie a release to the Dagster project it is part of, and their validation.

- ``source.asset``: the key of an asset of the project whose value (a pandas DataFrame) is the
  release's source, instead of a file at ``source.path`` or a catalog table at ``source.table``
  (:mod:`.catalog`): exactly one of the three is given.
- ``anonymization.synthetic.table: {asset: key}``: the key of an asset of the project whose
  value (a pandas DataFrame) is a synthetic release's table, the output of the user's generator.
- ``publication.io_manager`` and ``publication.table``: a copy of each publication handed, as a
  table, to an IO manager of the project (its resource key); given together. The file at
  ``publication.path`` stays the publication of record.

Each function takes the release spec (a :class:`~.models.ReleaseSpec`; not imported, since the
models validate through these functions). Nothing here imports Dagster: the names are checked as text, by the rules Dagster applies to
asset keys and resource keys, so that a bad one is a spec problem naming its key rather than a
Dagster error at load time.
"""

from __future__ import annotations

import re
from typing import Any

# Dagster's rule for the parts of an asset key and for resource keys (letters, digits, underscores;
# a dash is allowed in key parts too)
_KEY_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# the release's own steps: a table asset of the same name would take their asset key
STEPS = ("raw", "pseudonymized", "anonymized", "published")
# the resource keys the releases define themselves: the IO manager of personal-data steps, and keys
OWN_RESOURCES = ("io_manager", "keystore", "ledger")


def source_problems(spec: Any) -> list[tuple[str, str]]:
    """``(key, message)`` for a source that is not exactly one file, one asset or one catalog
    table, an asset key that Dagster would refuse, or a table name that is not one
    (:func:`~.catalog.catalog_problems`)."""
    from .catalog import catalog_problems

    source = spec.source
    given = [key for key in ("path", "asset", "table") if getattr(source, key) is not None]
    if len(given) > 1:
        extra = "not both" if len(given) == 2 else "not all three"
        return [(f"source.{given[-1]}", "give one of source.path (a file), source.asset (a Dagster asset) or "
                                        f"source.table (a catalog table), {extra}")]
    if not given:
        return [("source", "give source.path (a csv or parquet file) or source.asset (the key of a Dagster asset), "
                           "or source.table (a table of the Spark catalog)")]
    if source.asset is None:
        return catalog_problems(source)
    problems = asset_key_problems(spec, "source.asset", source.asset, source.asset_key or ())
    for key in ("separator", "format"):
        if getattr(source, key) is not None:
            problems.append((f"source.{key}", "applies to a file source only: the asset's IO manager reads the asset"))
    return problems


def asset_key_problems(spec: Any, key: str, value: object, parts: tuple[str, ...]) -> list[tuple[str, str]]:
    """``(key, message)`` for an asset key (``value`` as written, ``parts`` its parts) that Dagster
    would refuse, or that is one of the release's own steps."""
    if not parts or any(not isinstance(p, str) or not _KEY_PART.fullmatch(p) for p in parts):
        return [(key, f"{_shown(value)} is not an asset key: parts of letters, digits, _ and -, written 'a/b' "
                      "or as a list [a, b]")]
    if parts[0] == spec.release and len(parts) == 2 and parts[1] in STEPS:
        return [(key, f"{'/'.join(parts)!r} is one of the release's own steps")]
    return []


def synthetic_asset_problems(spec: Any) -> list[tuple[str, str]]:
    """``(key, message)`` for an ``anonymization.synthetic.table: {asset: key}`` whose key Dagster
    would refuse, or that names the release's own source asset (the generator's output is
    another asset than the data it learns from)."""
    settings = getattr(spec.anonymization, "synthetic", None)
    table = settings.table if settings is not None else None
    if table is None or isinstance(table, str):
        return []
    key = "anonymization.synthetic.table.asset"
    problems = asset_key_problems(spec, key, table.asset, table.asset_key)
    if not problems and table.asset_key == spec.source.asset_key:
        problems.append((key, f"{'/'.join(table.asset_key)!r} is the release's source (source.asset): name the "
                              "asset of the generator's synthetic table"))
    return problems


def table_problems(spec: Any) -> list[tuple[str, str]]:
    """``(key, message)`` for a table publication that names no IO manager or no table, names
    one of the releases' own resources, or a table that would take a step's asset key."""
    pub = spec.publication
    if pub.io_manager is None and pub.table is None:
        return []
    if pub.io_manager is None or pub.table is None:
        missing = "publication.io_manager" if pub.io_manager is None else "publication.table"
        return [(missing, "a table publication names both publication.io_manager (a resource key of the "
                          "project) and publication.table")]
    problems = []
    if not _NAME.fullmatch(pub.io_manager):
        problems.append(("publication.io_manager", f"{_shown(pub.io_manager)} is not a resource key "
                                                   "(letters, digits and _)"))
    elif pub.io_manager in OWN_RESOURCES:
        problems.append(("publication.io_manager", f"{pub.io_manager!r} is a resource of the releases themselves "
                                                   "(it keeps personal data): name the IO manager of the tables the "
                                                   "project publishes"))
    schema, _, name = pub.table.rpartition(".")
    if not _NAME.fullmatch(name) or (schema and not _NAME.fullmatch(schema)):
        problems.append(("publication.table", f"{_shown(pub.table)} is not a table name (letters, digits and _, "
                                              "with an optional schema.)"))
    elif name in STEPS:
        problems.append(("publication.table", f"{name!r} is the name of a step of the release: its asset key "
                                              f"{spec.release}/{name} is taken"))
    if spec.partitions is not None:
        column = pub.table_partition_column
        if not _NAME.fullmatch(column):
            problems.append(("publication.table_partition_column", f"{_shown(column)} is not a column name"))
        elif column in spec.columns:
            problems.append(("publication.table_partition_column", f"{column!r} is a column of the release: "
                                                                   "name another column for the partition's start"))
    return problems


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = ["OWN_RESOURCES", "STEPS", "asset_key_problems", "source_problems", "synthetic_asset_problems",
           "table_problems"]
