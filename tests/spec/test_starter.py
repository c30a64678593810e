"""The starter of a new release project: a spec that validates against the data written beside it."""

from __future__ import annotations

import pandas as pd

from anon_dagster.spec.loading import check_data, load_spec
from anon_dagster.spec.starter import EXAMPLE_ROWS, example_rows, write_starter


def test_the_starter_spec_validates_and_reads_its_data(tmp_path):
    write_starter(tmp_path)
    spec = load_spec(tmp_path / "specs" / "example_release.yaml")
    assert spec.release == "example_release" and spec.anonymization.k == 5
    data = pd.read_csv(spec.resolve(spec.source.path))
    assert len(data) == EXAMPLE_ROWS and set(data.columns) == set(spec.columns)
    check_data(spec, data)


def test_the_example_rows_are_fixed_by_their_seed_and_synthetic():
    rows = example_rows(3)
    assert rows == example_rows(3) and rows != example_rows(3, seed=1)
    assert [r["person_id"] for r in rows] == ["P00000", "P00001", "P00002"]
    assert all(18 <= r["age"] <= 89 and str(r["visit_date"]).startswith("2024") for r in rows)


def test_files_that_exist_are_kept(tmp_path):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "example_release.yaml").write_text("release: mine\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "example.csv").write_text("a\n1\n")
    write_starter(tmp_path)
    assert (tmp_path / "specs" / "example_release.yaml").read_text() == "release: mine\n"
    assert (tmp_path / "data" / "example.csv").read_text() == "a\n1\n"
