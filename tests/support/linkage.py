"""Two yearly partitions of the same eight persons, and a release composing them.

Each year alone is 2-anonymous (classes of four persons); composed, the two years single out
persons: person 1 is the only one in (age 30 in 2023, age 31 in 2024) and person 8 the only
one in (age 40, age 41). A composition check that links the years therefore refuses 2024 with
effective k = 1; one that does not see the persons in common passes it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from tests.support.releases import write_release

PERSONS = 8
# the 2024 age of each person: {1, 5, 6, 7} and {2, 3, 4, 8} cut across 2023's {1-4} and {5-8}
AGE_2024 = {1: 31, 5: 31, 6: 31, 7: 31, 2: 41, 3: 41, 4: 41, 8: 41}


def person_id(i: int) -> str:
    """Person ``i``'s identifier as spelled in 2023."""
    return f"PID{i:06d}"


def two_years(spell_2024: Callable[[str], str] = lambda pid: pid, *, base: Callable[[int], str] = person_id,
              other_people: bool = False) -> pd.DataFrame:
    """The eight persons in 2023 (ids ``base(i)``) and in 2024 (ids ``spell_2024(base(i))``).

    ``other_people`` gives 2024 eight new persons instead (same classes): the control case in
    which no person is in common.
    """
    rows = []
    for i in range(1, PERSONS + 1):
        rows.append({"pid": base(i), "age": 30 if i <= 4 else 40, "year": 2023})
        later = base(i + PERSONS) if other_people else spell_2024(base(i))
        rows.append({"pid": later, "age": AGE_2024[i], "year": 2024})
    df = pd.DataFrame(rows)
    return pd.DataFrame({
        "pid": df["pid"],
        "name": [f"Full Name {i:04d}" for i in range(len(df))],
        "age": df["age"],
        "sex": "F",
        "region": "North",
        "visit_date": df["year"].map({2023: "2023-03-01", 2024: "2024-07-15"}),
        "diagnosis": ["A10", "B20"] * (len(df) // 2),
    })


def composing_release(tmp: Path, data: pd.DataFrame, *, name: str = "yearly",
                      normalize: dict[str, Any] | None = None, pseudonymized: bool = True,
                      scope: str = "population") -> Path:
    """A release of ``data`` (no generalization, k = 2) composing its years with ``min_k`` 2.

    ``normalize`` is the person column's ``pseudonymize.normalize`` block; ``pseudonymized=False``
    drops the person column instead (it is still the composition's person). ``scope`` is the
    person column's pseudonym scope: ``population`` by default, so the two years' files join on
    the published pseudonym, the linkage the composition check must see.
    """
    path = write_release(tmp, name=name, method="none", k=2, thresholds={"k": 2}, max_suppression=0.0, data=data)
    spec = yaml.safe_load(path.read_text())
    spec["columns"]["age"] = {"role": "quasi"}
    if not pseudonymized:
        spec["columns"]["pid"] = {"role": "identifier"}
    else:
        spec["columns"]["pid"]["pseudonymize"]["scope"] = scope
        if normalize is not None:
            spec["columns"]["pid"]["pseudonymize"]["normalize"] = normalize
    spec["composition"] = {"population": f"{name}_people", "person": "pid", "min_k": 2}
    path.write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True))
    return path
