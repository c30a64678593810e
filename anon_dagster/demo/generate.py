"""Seeded synthetic population and hospital-discharge table for the demo release.

The model is a fictional region publishing hospital discharges on an open-data portal:

* nine provinces of very unequal size (Zipf-like weights), each with a 2-digit code and
  grouped into three regions;
* 5 to 10 municipalities per province; each owns postal codes whose first two digits are the
  province code (the capital owns ``PP001..PP0nn``, the j-th other municipality ``PPj00``,
  ``PPj10``, ...), so masking a postal code to 3 digits groups a municipality's codes;
* an age pyramid over 0..100, sex, a profession with a long tail (Zipf over ~80 professions,
  plus not-in-employment categories that depend on age);
* direct identifiers: ``patient_id`` ("P" + 7 digits), ``national_id`` (8 digits and the
  Spanish DNI control letter) and ``full_name``, unique per person where it must be.

Discharges are drawn from the population: distinct patients are chosen with a probability
rising with age (and for women of child-bearing age), then a few readmissions are added, again
more often for the old. A discharge's quasi-identifiers are exactly its person's population
values, so journalist risk and population uniqueness have a *true* value that can be computed
from ``population.parquet``. Diagnoses (ICD-10 three-character codes) have a prevalence that
depends on age, sex and province; admission dates are uniform over 2024-01-01..2025-12-31.

The lists of :mod:`.vocabularies` (geography, professions, diagnoses) are the single source
of truth for both the generator and the hierarchy files in ``assets_config/hierarchies/``
(:func:`~.hierarchy_files.write_hierarchies`). Everything is vectorized with numpy: the only
Python loops run over the lists (tens of items) or over (age band, sex, province) cells, never
over rows.

Modules: :mod:`.vocabularies` (the region's lists and the tables' columns), :mod:`.people`
(the population), :mod:`.discharges` (the discharges drawn from it), :mod:`.hierarchy_files`
(the ARX hierarchy files); this one seeds the draws and writes the files with their manifest.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..io import write_bytes_atomic, write_table_atomic
from .discharges import FIRST_ADMISSION_SHARE, diagnosis_weights, generate_discharges
from .hierarchy_files import hierarchy_rows, hierarchy_texts, write_hierarchies
from .people import generate_population
from .vocabularies import (
    CHAPTERS,
    DIAGNOSES,
    DIAGNOSIS_CHAPTER,
    DISCHARGE_COLUMNS,
    FIRST_DAY,
    GEOGRAPHY,
    LAST_DAY,
    MAX_AGE,
    MUNICIPALITY_PROVINCE,
    POPULATION_COLUMNS,
    PROFESSION_GROUP,
    PROFESSIONS,
    PROVINCE_CODE,
    PROVINCE_REGION,
    PROVINCES,
    DemoError,
    Geography,
)

#: Bumped whenever the model changes, so cached demo files are regenerated.
GENERATOR_VERSION = 1
DEFAULT_SEED = 20240101
DEFAULT_POPULATION = 1_000_000
DEFAULT_DISCHARGES = 20_000

__all__ = [
    "CHAPTERS", "DEFAULT_DISCHARGES", "DEFAULT_POPULATION", "DEFAULT_SEED", "DIAGNOSES",
    "DIAGNOSIS_CHAPTER", "DISCHARGE_COLUMNS", "FIRST_ADMISSION_SHARE", "FIRST_DAY",
    "GENERATOR_VERSION", "GEOGRAPHY", "LAST_DAY", "MANIFEST", "MAX_AGE", "MUNICIPALITY_PROVINCE",
    "POPULATION_COLUMNS", "PROFESSIONS", "PROFESSION_GROUP", "PROVINCES", "PROVINCE_CODE",
    "PROVINCE_REGION", "REPO_ROOT", "DemoError", "Geography", "default_out_dir",
    "diagnosis_weights", "generate", "generate_discharges", "generate_frames",
    "generate_population", "hierarchy_rows", "hierarchy_texts", "is_current",
    "write_hierarchies",
]


def generate_frames(population: int = DEFAULT_POPULATION, discharges: int = DEFAULT_DISCHARGES,
                    seed: int = DEFAULT_SEED) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The population and discharge tables for ``seed`` (same seed → identical frames)."""
    _check_sizes(population, discharges, seed)
    rng = np.random.default_rng(seed)
    people = generate_population(population, rng)
    return people, generate_discharges(people, discharges, rng)


def _check_sizes(population: int, discharges: int, seed: int) -> None:
    if isinstance(population, bool) or not isinstance(population, (int, np.integer)) or population < 1:
        raise DemoError(f"population must be a positive integer, got {population!r}")
    if population >= 10**7:
        raise DemoError(f"population {population:,} does not fit 7-digit patient ids (max 9,999,999)")
    if isinstance(discharges, bool) or not isinstance(discharges, (int, np.integer)) or discharges < 0:
        raise DemoError(f"discharges must be a non-negative integer, got {discharges!r}")
    if round(discharges * FIRST_ADMISSION_SHARE) > population:
        raise DemoError(
            f"discharges {discharges:,} need about {round(discharges * FIRST_ADMISSION_SHARE):,} "
            f"distinct patients but the population has {population:,}"
        )
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise DemoError(f"seed must be a non-negative integer, got {seed!r}")


# ----- files -----------------------------------------------------------------------------------

REPO_ROOT = Path(__file__).resolve().parents[2]
MANIFEST = "manifest.json"


def default_out_dir() -> Path:
    """``data/demo`` at the repository root (git-ignored), or under the current folder when the
    package is installed outside a checkout."""
    root = REPO_ROOT if (REPO_ROOT / "assets_config").is_dir() else Path.cwd()
    return root / "data" / "demo"


def _parameters(population: int, discharges: int, seed: int) -> dict[str, int]:
    return {
        "population": int(population), "discharges": int(discharges), "seed": int(seed),
        "generator_version": GENERATOR_VERSION,
    }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def is_current(out_dir: str | Path, population: int = DEFAULT_POPULATION,
               discharges: int = DEFAULT_DISCHARGES, seed: int = DEFAULT_SEED) -> bool:
    """True when ``out_dir`` holds files generated with these parameters, unaltered since."""
    out = Path(out_dir)
    try:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if manifest.get("parameters") != _parameters(population, discharges, seed):
        return False
    files = manifest.get("files", {})
    for name in ("population.parquet", "discharges.parquet"):
        path = out / name
        if not path.exists() or files.get(name, {}).get("sha256") != _sha256(path):
            return False
    return True


def generate(out_dir: str | Path | None = None, population: int = DEFAULT_POPULATION,
             discharges: int = DEFAULT_DISCHARGES, seed: int = DEFAULT_SEED,
             force: bool = False) -> dict:
    """Write ``population.parquet``, ``discharges.parquet`` and ``manifest.json`` to ``out_dir``.

    Idempotent: when the folder already holds files made with the same parameters (checked by
    the manifest, including the files' SHA-256), nothing is rewritten unless ``force``. Each
    file is written atomically and the manifest last, so an interrupted run is redone. Returns
    the manifest, with ``"skipped": True`` when the files were already current.
    """
    _check_sizes(population, discharges, seed)
    out = Path(out_dir) if out_dir is not None else default_out_dir()
    if out.exists() and not out.is_dir():
        raise DemoError(f"{out}: exists and is not a folder")
    if not force and is_current(out, population, discharges, seed):
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        return {**manifest, "skipped": True}
    people, stays = generate_frames(population, discharges, seed)
    files = {}
    for name, frame in (("population.parquet", people), ("discharges.parquet", stays)):
        path = write_table_atomic(frame, out / name, mode=0o644)
        files[name] = {"rows": len(frame), "sha256": _sha256(path)}
    manifest = {"parameters": _parameters(population, discharges, seed), "files": files}
    write_bytes_atomic(json.dumps(manifest, indent=2).encode("utf-8") + b"\n", out / MANIFEST, mode=0o644)
    return {**manifest, "skipped": False}
