"""Release specs v1 for tests that need a small one: built in memory from their sections, or
written to a ``spec.yaml`` to load and to read the problems its validation names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from anon_dagster.errors import SpecError
from anon_dagster.spec import ReleaseSpec, load_spec, spec_from_dict


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


def visits_spec_file(folder: Path, source: dict[str, Any] | None = None, *,
                     publication: dict[str, Any] | None = None, partitioned: bool = True) -> Path:
    """``folder/spec.yaml``: the release ``visits`` with ``source`` (by default the asset
    ``warehouse/visits``), an identifier ``pid``, a quasi-identifier ``age``, the insensitive
    ``visit``, ``publication.path`` ``out/{partition}.parquet`` with the keys of ``publication``
    added, and, when ``partitioned``, yearly partitions from 2024 on ``visit``."""
    spec: dict[str, Any] = {
        "release": "visits", "source": source if source is not None else {"asset": "warehouse/visits"},
        "columns": {"pid": {"role": "identifier"}, "age": {"role": "quasi"}, "visit": {"role": "insensitive"}},
        "publication": {"path": "out/{partition}.parquet", **(publication or {})},
    }
    if partitioned:
        spec["partitions"] = {"cadence": "yearly", "start": "2024-01-01", "column": "visit"}
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def spec_problems(path: Path) -> list[tuple[str, str]]:
    """The ``(key, message)`` of each problem that loading the spec at ``path`` raises, in the
    order named (the test fails when the spec loads)."""
    with pytest.raises(SpecError) as info:
        load_spec(path)
    return [(p.key, p.message) for p in info.value.problems]
