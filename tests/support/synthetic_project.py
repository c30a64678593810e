"""A synthetic release whose table is an asset of the user's Dagster project
(``anonymization.synthetic.table: {asset: key}``): the user's graph (a raw asset, a generator
partitioned as the release) and two generators, one that learnt the population and one that
copies its training rows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from dagster import AssetIn, AssetKey, DagsterInstance, Definitions, FilesystemIOManager, asset

from anon_dagster.dagster.partitions import partitions_def_for
from anon_dagster.release.generator_input import generator_rows
from anon_dagster.spec import load_spec
from tests.support.releases import load, run

SOURCE = AssetKey(["warehouse", "people"])
GENERATOR = AssetKey(["lab", "synthetic_people"])
COLUMNS = ["age", "sex", "visit_date", "diagnosis"]


def people() -> pd.DataFrame:
    """600 people a year in 2023 and 2024: an identifier and three columns of few values each."""
    rng = np.random.default_rng(7)
    frames = []
    for year in (2023, 2024):
        n = 600
        frames.append(pd.DataFrame({"pid": [f"P{year}{i:04d}" for i in range(n)], "age": rng.integers(18, 81, n),
                                    "sex": rng.choice(["F", "M"], n), "visit_date": f"{year}-06-01",
                                    "diagnosis": rng.choice(["A10", "B20", "C30"], n)}))
    return pd.concat(frames, ignore_index=True)


def population_model(train: pd.DataFrame) -> pd.DataFrame:
    """A generator that learnt the population and none of its training records: as many rows as
    it was given, drawn from the distribution :func:`people` draws from."""
    rng = np.random.default_rng(11)
    n = len(train)
    return pd.DataFrame({"age": rng.integers(18, 81, n), "sex": rng.choice(["F", "M"], n),
                         "visit_date": train["visit_date"].to_numpy(), "diagnosis": rng.choice(["A10", "B20", "C30"], n)})


def copier(train: pd.DataFrame) -> pd.DataFrame:
    """A generator that publishes its training records as they are."""
    return train[COLUMNS].copy()


def write_spec(folder: Path) -> Path:
    spec = {
        "release": "synth",
        "source": {"asset": "warehouse/people"},
        "partitions": {"cadence": "yearly", "start": "2023-01-01", "end": "2025-01-01", "column": "visit_date"},
        "columns": {"pid": {"role": "identifier"}, "age": {"role": "quasi"}, "sex": {"role": "quasi"},
                    "visit_date": {"role": "insensitive"}, "diagnosis": {"role": "sensitive"}},
        "anonymization": {"method": "synthetic", "synthetic": {"table": {"asset": "lab/synthetic_people"}}},
        "policy": {"synthetic": {"copy_rate_gap": 0.2, "control": {"fraction": 0.5, "min_rows": 0}}},
        "publication": {"path": "../published/{release}/{partition}.parquet"},
    }
    (folder / "specs").mkdir(exist_ok=True)
    path = folder / "specs" / "synth.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def project(env: Path, generate: Callable[[pd.DataFrame], pd.DataFrame], engine: Any = None) -> Definitions:
    """The release ``synth`` merged with the user's graph: the raw asset ``warehouse/people`` and
    the generator ``lab/synthetic_people`` (partitioned as the release), which learns from the
    records the gate does not hold back as control records (:func:`generator_rows`); the
    release's steps on ``engine`` (an EngineResource; None: pandas)."""
    spec_path = write_spec(env)
    spec = load_spec(spec_path)

    @asset(key=SOURCE, io_manager_key="lab")
    def source() -> pd.DataFrame:
        return people()

    @asset(key=GENERATOR, io_manager_key="lab", partitions_def=partitions_def_for(spec),
           ins={"table": AssetIn(key=SOURCE)})
    def generator(context, table: pd.DataFrame) -> pd.DataFrame:
        return generate(generator_rows(spec, table, context.partition_key))

    own = Definitions(assets=[source, generator], resources={"lab": FilesystemIOManager(base_dir=str(env / "lab"))})
    return Definitions.merge(load(env, spec_path, engine), own)


def run_partition(env: Path, generate: Callable[[pd.DataFrame], pd.DataFrame], engine: Any = None):
    """The source, the generator's 2023 and the release's 2023 materialized: the definitions and the release's run."""
    defs = project(env, generate, engine)
    instance = DagsterInstance.ephemeral()
    job = defs.resolve_implicit_global_asset_job_def()
    assert job.execute_in_process(instance=instance, asset_selection=[SOURCE]).success
    assert job.execute_in_process(instance=instance, asset_selection=[GENERATOR], partition_key="2023").success
    return defs, run(defs, "synth", "2023", instance)
