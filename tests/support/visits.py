"""Returning persons: the same twelve persons visit twice in each of two years.

Each person's quasi-identifiers are the same at every visit, and persons come in pairs sharing
them, so every year is 2-anonymous by rows (classes of four visits) and by persons (person
classes of two) without generalizing: what a test of pseudonym scopes sees is the pseudonyms.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .releases import write_release

PERSONS = 12
VISITS = ("2023-03-01", "2023-09-01", "2024-03-01", "2024-09-01")


def returning_persons() -> pd.DataFrame:
    """Four visits (two in 2023, two in 2024) of each of :data:`PERSONS` persons ``PID000000``..."""
    rows = []
    for i in range(PERSONS):
        pair = i // 2
        for v, date in enumerate(VISITS):
            rows.append({
                "pid": f"PID{i:06d}", "name": f"Full Name {i:04d}", "age": 30 if pair % 2 == 0 else 42,
                "sex": "F" if pair % 3 else "M", "region": "North" if pair < 3 else "South",
                "visit_date": date, "diagnosis": ("A10", "B20", "C30")[(i + v) % 3],
            })
    return pd.DataFrame(rows)


def scoped_release(tmp: Path, scope: str | None, *, method: str = "hmac", composition: bool = True,
                   name: str = "visits") -> Path:
    """The two-year release of :func:`returning_persons`, its ``pid`` pseudonymized with ``method``
    (purpose ``research``) and ``scope`` (None: the spec does not say, so the default applies);
    returns the spec path (``tmp/specs/<name>.yaml``)."""
    pid = {"method": method, "purpose": "research", **({"scope": scope} if scope is not None else {})}
    return write_release(tmp, name=name, data=returning_persons(), pid=pid, composition=composition)
