"""The demo's hierarchy files: ARX tables (``value;level1;...;*``) written from the vocabularies."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..hierarchies import IntervalHierarchy, MaskHierarchy
from ..io import write_bytes_atomic
from .vocabularies import (
    DIAGNOSES,
    DIAGNOSIS_CHAPTER,
    GEOGRAPHY,
    MAX_AGE,
    MUNICIPALITY_PROVINCE,
    PROFESSION_GROUP,
    PROVINCE_REGION,
)


def hierarchy_rows() -> dict[str, list[list[str]]]:
    """The ARX hierarchy tables the demo data needs, by file stem (``value;level1;...;*``).

    ``municipality`` (municipality → province → region → ``*``), ``profession`` (profession →
    group → ``*``) and ``icd10`` (code → chapter → ``*``) are the table hierarchies of the
    release spec. ``postal_code`` and ``age`` are the same mask (keep 4, 3, 2) and interval
    (5, 10, 20 years) hierarchies the spec declares inline, written out for ARX users.
    """
    muni_rows = [
        [m, p, PROVINCE_REGION[p], "*"] for m, p in MUNICIPALITY_PROVINCE.items()
    ]
    prof_rows = [[p, g, "*"] for p, g in PROFESSION_GROUP.items()]
    icd_rows = [[code, DIAGNOSIS_CHAPTER[code], "*"] for code, _c, _w, _p in DIAGNOSES]
    postal = MaskHierarchy("postal_code", [4, 3, 2]).table(GEOGRAPHY.postal_code)
    ages = IntervalHierarchy("age", [5, 10, 20]).table(np.arange(MAX_AGE + 1))
    return {
        "municipality": muni_rows,
        "profession": prof_rows,
        "icd10": icd_rows,
        "postal_code": [list(map(str, r)) for r in postal],
        "age": [list(map(str, r)) for r in ages],
    }


def hierarchy_texts() -> dict[str, str]:
    """File name → content of every demo hierarchy file (``;``-separated, LF, no header)."""
    return {
        f"{stem}.csv": "".join(";".join(row) + "\n" for row in rows)
        for stem, rows in hierarchy_rows().items()
    }


def write_hierarchies(folder: str | Path) -> list[Path]:
    """Write the demo hierarchy files into ``folder`` (atomically); returns the paths."""
    folder = Path(folder)
    return [
        write_bytes_atomic(text.encode("utf-8"), folder / name, mode=0o644)
        for name, text in hierarchy_texts().items()
    ]
