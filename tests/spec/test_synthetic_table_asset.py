"""``anonymization.synthetic.table: {asset: key}``: a path or an asset key, validated when the
spec loads (file and key named); outside Dagster the table's absence names the asset; a table
handed over as a DataFrame is checked as a file's is."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from anon_dagster.cli import main
from anon_dagster.errors import DataError, SpecError, UserError
from anon_dagster.release import pipeline
from anon_dagster.spec import load_spec


def _people(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({"age": rng.integers(18, 90, n), "diagnosis": rng.choice(["x", "y"], n)})


def _write(folder: Path, table: object) -> Path:
    _people().to_csv(folder / "people.csv", index=False)
    raw = {"release": "people", "source": {"path": "people.csv"},
           "columns": {"age": {"role": "quasi"}, "diagnosis": {"role": "sensitive"}},
           "anonymization": {"method": "synthetic", "synthetic": {"table": table}},
           "policy": {"synthetic": {"copy_rate_gap": 1.0, "control": {"fraction": 0.2, "min_rows": 0}}},
           "publication": {"path": "out/{release}.csv"}}
    path = folder / "people.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _problems(path: Path) -> list[tuple[str, str, str]]:
    with pytest.raises(SpecError) as info:
        load_spec(path)
    return [(p.file, p.key, p.message) for p in info.value.problems]


@pytest.mark.parametrize("asset", ["lab/synthetic_people", ["lab", "synthetic_people"]])
def test_an_asset_key_is_read_as_its_parts(tmp_path, asset):
    table = load_spec(_write(tmp_path, {"asset": asset})).anonymization.synthetic.table
    assert table.asset_key == ("lab", "synthetic_people")
    assert table.described == "the Dagster asset 'lab/synthetic_people'"


@pytest.mark.parametrize("table", [3, ["a.csv"], {"path": "a.csv"}, {"asset": 3}, {"asset": "a", "io": "b"}])
def test_anything_but_a_path_or_an_asset_is_one_problem_naming_the_key(tmp_path, table):
    path = _write(tmp_path, table)
    [(file, key, message)] = _problems(path)
    assert (file, key) == (str(path), "anonymization.synthetic.table")
    assert message.startswith("must be a path (a csv or parquet file) or {asset: <asset key>}")


def test_a_key_dagster_refuses_or_a_step_of_the_release_is_named(tmp_path):
    path = _write(tmp_path, {"asset": "lab/synthetic people"})
    assert _problems(path) == [(str(path), "anonymization.synthetic.table.asset",
                                "'lab/synthetic people' is not an asset key: parts of letters, digits, _ and -, "
                                "written 'a/b' or as a list [a, b]")]
    path = _write(tmp_path, {"asset": "people/raw"})
    assert _problems(path) == [(str(path), "anonymization.synthetic.table.asset",
                                "'people/raw' is one of the release's own steps")]


def test_check_outside_dagster_names_the_asset(tmp_path, capsys):
    path = _write(tmp_path, {"asset": "lab/synthetic_people"})
    code = main(["check", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "anonymization.synthetic.table is the Dagster asset 'lab/synthetic_people', supplied by Dagster" in err


def test_a_handed_over_table_is_checked_and_published_as_a_files_is(tmp_path):
    made = _people(40).assign(age=lambda d: d["age"] + 1)
    made.to_csv(tmp_path / "made.csv", index=False)
    by_asset = load_spec(_write(tmp_path, {"asset": "lab/synthetic_people"}))
    raw = pipeline.ingest(by_asset).data
    handed = pipeline.anonymize(by_asset, raw, synthetic_table=made)
    by_file = pipeline.anonymize(load_spec(_write(tmp_path, "made.csv")), raw)
    assert handed.data.equals(by_file.data) and len(handed.data) == 40
    assert handed.record.synthetic.generator == "table"
    assert handed.record.synthetic.table == "the Dagster asset 'lab/synthetic_people'"
    with pytest.raises(DataError, match="the Dagster asset 'lab/synthetic_people': the synthetic table has no "
                                        "column 'diagnosis'"):
        pipeline.anonymize(by_asset, raw, synthetic_table=made[["age"]], relax=False)
    with pytest.raises(DataError, match="is a builtins.dict, not a pandas DataFrame"):
        pipeline.anonymize(by_asset, raw, synthetic_table={"age": [1]}, relax=False)
    with pytest.raises(UserError, match="names no asset"):
        pipeline.anonymize(load_spec(_write(tmp_path, "made.csv")), raw, synthetic_table=made, relax=False)
