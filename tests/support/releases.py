"""Small two-year releases written to a folder, and running them through their Dagster job.

The spec and data are generated (few ages, two sexes and regions, so k=2 is reachable by
generalizing); runs go through the release's job as the UI or the scheduler would launch them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from dagster import AssetKey, Definitions, ExecuteInProcessResult

from anon_dagster.dagster import AnonReleaseComponent
from anon_dagster.errors import SecretError

from .ledgers import env_ledger


def write_release(tmp: Path, *, name: str = "tiny", thresholds: dict | None = None,
                  method: str = "global", k: int = 2, rows_2023: int = 40, rows_2024: int = 40,
                  max_suppression: float = 0.5, composition: bool = True, seed: int = 0,
                  data: pd.DataFrame | None = None, pid: dict | None = None) -> Path:
    """A two-year release spec and its data (random unless ``data`` is given); returns the spec path.

    ``pid`` is the ``pid`` column's ``pseudonymize`` block (default: hmac, purpose ``research``,
    so scope ``release``).

    The data goes to ``tmp/data/<name>.csv``, the spec to ``tmp/specs/<name>.yaml``, publications
    to ``tmp/published/<name>/<partition>.parquet``.
    """
    rng = np.random.default_rng(seed)
    n = rows_2023 + rows_2024
    ages = rng.choice([30, 31, 42, 43], n)  # few values: k=2 is reachable by generalizing
    df = data if data is not None else pd.DataFrame({
        "pid": [f"PID{i:06d}" for i in range(n)],
        "name": [f"Full Name {i:04d}" for i in range(n)],
        "age": ages,
        "sex": rng.choice(["F", "M"], n),
        "region": rng.choice(["North", "South"], n),
        "visit_date": ["2023-03-01"] * rows_2023 + ["2024-07-15"] * rows_2024,
        "diagnosis": rng.choice(["A10", "B20", "C30"], n),
    })
    (tmp / "data").mkdir(exist_ok=True)
    df.to_csv(tmp / "data" / f"{name}.csv", index=False)
    spec = {
        "release": name,
        "source": {"path": f"../data/{name}.csv"},
        "partitions": {"cadence": "yearly", "start": "2023-01-01", "end": "2025-01-01", "column": "visit_date"},
        "columns": {
            "pid": {"role": "identifier", "pseudonymize": pid or {"method": "hmac", "purpose": "research"}},
            "name": {"role": "identifier"},
            "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [10, 20]}},
            "sex": {"role": "quasi"},
            "region": {"role": "quasi", "partition_key": True},
            "visit_date": {"role": "insensitive"},
            "diagnosis": {"role": "sensitive"},
        },
        "anonymization": {"method": method, "k": k, "max_suppression": max_suppression},
        "policy": {"thresholds": thresholds or {"k": 2}},
        "publication": {"path": "../published/{release}/{partition}.parquet"},
    }
    if composition:
        spec["composition"] = {"population": f"{name}_people", "person": "pid", "min_k": 1}
    (tmp / "specs").mkdir(exist_ok=True)
    path = tmp / "specs" / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def load(tmp: Path, spec: Path, engine: Any = None) -> Definitions:
    """The Dagster definitions of one spec, with storage and ledger under ``tmp/state``; the
    ledger is created first (keys from the environment), as ``anon-dagster ledger init`` does,
    unless the environment's key store cannot be opened (then the run fails on it first). The
    steps run on ``engine`` (an EngineResource; None: pandas)."""
    try:
        env_ledger(tmp / "state" / "ledger.sqlite", create=True)
    except SecretError:
        pass
    return AnonReleaseComponent(specs=[str(spec)], storage_dir=str(tmp / "state" / "storage"),
                                ledger_path=str(tmp / "state" / "ledger.sqlite")).build_definitions(tmp, engine=engine)


def run(defs: Definitions, release: str, partition: str, instance,
        selection: list[AssetKey] | None = None) -> ExecuteInProcessResult:
    """One run of the release's job for one partition; failures are returned, not raised."""
    job = defs.resolve_job_def(f"{release}_release")
    return job.execute_in_process(partition_key=partition, instance=instance, raise_on_error=False,
                                  asset_selection=selection)


def check_evaluations(result: ExecuteInProcessResult) -> dict[str, object]:
    """The asset-check evaluations of a run, by check name."""
    return {e.event_specific_data.check_name: e.event_specific_data
            for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"}


def materialized(result: ExecuteInProcessResult) -> set[str]:
    """The asset keys a run materialized, as ``release/stage`` strings; a refused publication
    (materialized with ``outcome: refused``: it wrote nothing) is left out."""
    return {e.asset_key.to_user_string() for e in result.all_events if e.event_type_value == "ASSET_MATERIALIZATION"
            and not refused(e.event_specific_data.materialization)}


def refused(materialization) -> bool:
    """Whether a materialization is a refused publication's outcome."""
    outcome = materialization.metadata.get("outcome")
    return outcome is not None and outcome.value == "refused"


def visits(*, timestamps: bool = False) -> pd.DataFrame:
    """A project's visits table: classes of 4 over (age, sex, region) in both years; two diagnoses
    per class in 2023 (l = 2), one in 2024 (l = 1): with l_distinct 2, 2023 is published and 2024
    refused, whatever is generalized. ``timestamps``: visit dates as timestamps, not text."""
    rows = []
    for year, diagnoses in ((2023, ["A10", "B20"]), (2024, ["A10"])):
        for age in (30, 42):
            for sex in ("F", "M"):
                for region in ("North", "South"):
                    for j in range(4):
                        date = f"{year}-06-01"
                        rows.append({"pid": f"PID{year}{len(rows):04d}", "name": f"Name {len(rows)}", "age": age,
                                     "sex": sex, "region": region,
                                     "visit_date": pd.Timestamp(date) if timestamps else date,
                                     "diagnosis": diagnoses[j % len(diagnoses)]})
    return pd.DataFrame(rows)
