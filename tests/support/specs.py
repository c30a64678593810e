"""Release specs v1 built in memory from their sections, for tests that need a small one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anon_dagster.spec import ReleaseSpec, spec_from_dict


def release_spec(columns: dict[str, Any], *, anonymization: dict[str, Any] | None = None,
                 thresholds: dict[str, Any] | None = None, utility_queries: list | None = None,
                 release: str = "t", source: str = "x.csv", publication: str = "out/{release}.parquet",
                 base: Path | None = None, **sections: Any) -> ReleaseSpec:
    """A validated spec: ``release``, ``source.path``, ``columns``, then each section given.

    ``thresholds`` becomes ``policy.thresholds``, ``utility_queries`` is left out when empty,
    ``sections`` (e.g. ``composition``) are added verbatim, ``publication`` is ``publication.path``.
    ``base`` is the folder relative paths resolve against (a ``spec.yaml`` there); without it the
    spec has no file.
    """
    raw: dict[str, Any] = {"release": release, "source": {"path": source}, "columns": columns}
    if anonymization is not None:
        raw["anonymization"] = anonymization
    if thresholds is not None:
        raw["policy"] = {"thresholds": thresholds}
    if utility_queries:
        raw["utility_queries"] = list(utility_queries)
    raw.update(sections)
    raw["publication"] = {"path": publication}
    return spec_from_dict(raw, base / "spec.yaml" if base is not None else None)
