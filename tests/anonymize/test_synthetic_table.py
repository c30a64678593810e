"""A synthetic table of another generator per partition: ``{partition}`` in
anonymization.synthetic.table names the table of the window the partition's rows fall in."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from anon_dagster.anonymize import anonymize
from anon_dagster.anonymize.synthetic_method import partition_of_rows
from anon_dagster.errors import DataError
from anon_dagster.release import pipeline
from anon_dagster.spec import load_spec


def _people(n: int, year: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    days = rng.integers(0, 365, n)
    return pd.DataFrame({"age": rng.integers(18, 90, n),
                         "admitted": (pd.Timestamp(f"{year}-01-01") + pd.to_timedelta(days, unit="D")).strftime("%Y-%m-%d"),
                         "diagnosis": rng.choice(["x", "y", "z"], n)})


def _spec(folder: Path, *, cadence: str | None = "yearly", table: str = "made/{partition}.csv") -> Path:
    raw = {"release": "people", "source": {"path": "people.csv"},
           "columns": {"age": {"role": "quasi"}, "admitted": {"role": "insensitive"},
                       "diagnosis": {"role": "sensitive"}},
           "anonymization": {"method": "synthetic", "synthetic": {"table": table}},
           "policy": {"synthetic": {"copy_rate_gap": 1.0, "control": {"fraction": 0.2, "min_rows": 0}}},
           "publication": {"path": "out/{release}-{partition}.csv"}}
    if cadence is not None:
        raw["partitions"] = {"cadence": cadence, "start": "2023-01-01", "column": "admitted"}
    path = folder / "people.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def test_each_partition_publishes_its_own_table(tmp_path):
    pd.concat([_people(200, 2023, 1), _people(200, 2024, 2)]).to_csv(tmp_path / "people.csv", index=False)
    (tmp_path / "made").mkdir()
    made = {"2023": _people(50, 2023, 3), "2024": _people(70, 2024, 4)}
    for key, table in made.items():
        table.to_csv(tmp_path / "made" / f"{key}.csv", index=False)
    spec = load_spec(_spec(tmp_path))
    for key, table in made.items():
        run = pipeline.run_gate(spec, partition=key)
        assert run.anonymized.record.synthetic.table == f"made/{key}.csv"
        published = run.anonymized.data[["age", "admitted", "diagnosis"]].reset_index(drop=True)
        assert published.astype(str).equals(table.astype(str))
        assert run.evaluation.check("synthetic_copy_rate_gap").passed


def test_a_partition_without_its_table_names_the_file(tmp_path):
    _people(100, 2023, 1).to_csv(tmp_path / "people.csv", index=False)
    spec = load_spec(_spec(tmp_path))
    with pytest.raises(DataError, match=r"made/2023\.csv: no such synthetic table"):
        anonymize(pipeline.ingest(spec, "2023").data, spec)


def test_the_partition_is_the_window_of_the_rows(tmp_path):
    spec = load_spec(_spec(tmp_path, cadence="quarterly"))
    rows = pd.DataFrame({"admitted": ["2023-05-02", "2023-06-30", "2023-04-01"]})
    assert partition_of_rows(spec, rows) == "2023-04-01"
    with pytest.raises(DataError, match="span more than one quarterly partition"):
        partition_of_rows(spec, pd.DataFrame({"admitted": ["2023-05-02", "2023-07-01"]}))
    weekly = load_spec(_spec(tmp_path, cadence="weekly"))
    assert partition_of_rows(weekly, pd.DataFrame({"admitted": ["2023-03-09", "2023-03-12"]})) == "2023-03-06"


def test_an_unpartitioned_release_fills_in_all(tmp_path):
    spec = load_spec(_spec(tmp_path, cadence=None))
    assert partition_of_rows(spec, pd.DataFrame({"admitted": ["2023-05-02", "2025-07-01"]})) == "all"
