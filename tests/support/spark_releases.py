"""Small releases on parquet for the engines to agree on: a spec written from its sections and
a few hundred generated discharges, two yearly partitions, identifiers to pseudonymize or drop."""

from __future__ import annotations

import io
import json
from collections import Counter
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from anon_dagster.cli import main
from anon_dagster.hierarchies import _as_label


def discharges(n: int = 400, seed: int = 0) -> pd.DataFrame:
    """Generated discharges: identifiers (``pid``, ``name``), QIs with gaps and empty strings, a
    sensitive diagnosis and an ordinal severity, admissions over 2023 and 2024."""
    rng = np.random.default_rng(seed)
    ages = rng.choice([23, 27, 31, 34, 38, 45, 52, 58, 61, 67], n).astype(float)
    ages[rng.random(n) < 0.03] = np.nan
    sex = rng.choice(["F", "M", ""], n, p=[0.49, 0.49, 0.02]).astype(object)
    days = rng.integers(0, 730, n)
    return pd.DataFrame({
        "pid": [f"P{rng.integers(10**6, 10**7)}" for _ in range(n)],
        "name": [f"Person {i:05d}" for i in range(n)],
        "age": ages,
        "sex": sex,
        "zip": rng.choice(["28001", "28002", "28013", "28014", "46001", "46002"], n),
        "region": rng.choice(["North", "South"], n),
        "admitted": pd.Timestamp("2023-01-01") + pd.to_timedelta(days, unit="D"),
        "diagnosis": rng.choice(["A10", "B20", "C30", "D40"], n, p=[0.4, 0.3, 0.2, 0.1]),
        "severity": rng.choice([1, 2, 3], n),
        "stay": rng.integers(1, 20, n),
    })


COLUMNS: dict[str, Any] = {
    "pid": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research", "scope": "row"}},
    "name": {"role": "identifier"},
    "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [10, 20, 40]}},
    "sex": {"role": "quasi"},
    "zip": {"role": "quasi", "hierarchy": {"type": "mask", "keep": [4, 2]}},
    "region": {"role": "quasi", "partition_key": True},
    "admitted": {"role": "insensitive"},
    "diagnosis": {"role": "sensitive"},
    "severity": {"role": "insensitive"},
    "stay": {"role": "insensitive"},
}


# partition keys as integers and floats, and a missing one
PARTITION_KEYS = [1, 2, 2.0, None]

TINY_COLUMNS: dict[str, Any] = {
    "pid": COLUMNS["pid"], "age": COLUMNS["age"], "zip": COLUMNS["zip"], "sex": {"role": "quasi"},
    "unit": {"role": "quasi", "partition_key": True}, "diagnosis": {"role": "sensitive"},
    "admitted": {"role": "insensitive"},
}


def tiny_discharges(n: int, seed: int, keys: list[object]) -> pd.DataFrame:
    """``n`` discharges of 2024 with missing ages and sexes, empty strings, a zip category no row
    uses and the partition key ``unit`` drawn from ``keys`` (all numbers: a float column); the
    columns :data:`TINY_COLUMNS` declares."""
    rng = np.random.default_rng(seed)
    ages = rng.choice([20, 25, 31, 40, 52], n).astype(float)
    ages[rng.random(n) < 0.15] = np.nan
    zips = pd.Categorical(rng.choice(["28001", "28002", "46001", ""], n),
                          categories=["28001", "28002", "46001", "", "99999"])
    part = pd.Series([keys[i] for i in rng.integers(0, len(keys), n)], dtype=object)
    part = part.astype(float) if all(isinstance(v, (int, float)) or v is None for v in keys) else part
    data = pd.DataFrame({
        "pid": [f"P{i}" for i in range(n)], "age": ages, "zip": zips.astype(str),
        "sex": rng.choice(["F", "M", ""], n), "unit": part,
        "diagnosis": rng.choice(["A", "B", "C"], n), "admitted": pd.Timestamp("2024-05-01"),
    })
    data.loc[rng.random(n) < 0.1, "sex"] = None
    return data


# scope row: a fresh random pseudonym per row on every run, so never compared
RANDOM_COLUMNS = frozenset({"pid"})


def published_rows(df: pd.DataFrame, random: frozenset[str] = RANDOM_COLUMNS) -> Counter:
    """The published rows as a multiset of labels (categoricals and text alike), the columns
    ``random`` left out."""
    view = df[[c for c in df.columns if c not in random]]
    return Counter(tuple(_as_label(v) for v in row) for row in view.astype(object).itertuples(index=False))


def write_release(folder: Path, *, name: str = "tiny", data: pd.DataFrame | None = None,
                  columns: dict[str, Any] | None = None, **sections: Any) -> Path:
    """The spec (``folder/specs/<name>.yaml``) and its data (``folder/data/<name>.parquet``);
    ``sections`` (anonymization, policy, utility_queries, composition, ...) are added verbatim."""
    (folder / "data").mkdir(parents=True, exist_ok=True)
    (folder / "specs").mkdir(parents=True, exist_ok=True)
    (data if data is not None else discharges()).to_parquet(folder / "data" / f"{name}.parquet", index=False)
    spec = {
        "release": name,
        "source": {"path": f"../data/{name}.parquet"},
        "partitions": {"cadence": "yearly", "start": "2023-01-01", "end": "2025-01-01", "column": "admitted"},
        "columns": columns or COLUMNS,
        **sections,
        "publication": {"path": f"../published/{name}/{{partition}}.parquet"},
    }
    path = folder / "specs" / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def aggregates_release(folder: Path, *, total_epsilon: float, seed: int = 0) -> Path:
    """A release ``dp`` of :func:`write_release` (400 discharges drawn with ``seed``, no
    anonymization) published as DP aggregates: counts and stays (bounded to 0..10) per region and
    sex over the declared regions North, South and East, at most 40 rows per severity (the bounded
    'person'), ε 0.5 per partition of a population budget of ``total_epsilon``."""
    path = write_release(folder, name="dp", data=discharges(n=400, seed=seed), anonymization={"method": "none"})
    spec = yaml.safe_load(path.read_text())
    spec["publication"].update({
        "mode": "aggregates", "epsilon": 0.5, "total_epsilon": total_epsilon,
        "aggregates": {"group_by": ["region", "sex"], "sums": [{"column": "stay", "lower": 0, "upper": 10}],
                       "max_contributions": 40, "person": "severity", "domain": {"region": ["North", "South", "East"]}},
    })
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def check_json(spec: Path, *args: str) -> tuple[int, dict]:
    """``anon-dagster check SPEC --json ARGS``: the exit status and the JSON printed."""
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["check", str(spec), "--json", *args])
    return code, json.loads(out.getvalue())


def without_id(evaluation: dict) -> dict:
    """The evaluation's JSON without its id (a digest of the data hash, which each engine
    computes its own way)."""
    return {k: v for k, v in evaluation.items() if k != "evaluation"}
