"""Ingest of a table given as a DataFrame (a Dagster asset's value, ``source.asset``): the same
rows, the same identifier text and the same refusals as the same table read from a file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from anon_dagster.errors import DataError, SpecError, UserError
from anon_dagster.release import pipeline
from anon_dagster.spec import load_spec

SOURCE = "the Dagster asset 'warehouse/visits'"


def table() -> pd.DataFrame:
    return pd.DataFrame({
        "pid": np.array([12345678901234567890, 42, 7, 8], dtype=np.uint64),
        "age": [30, 31, 30, 31],
        "visit": ["2024-03-01", "2024-11-30", "2025-01-01", "2023-12-31"],
    })


def spec_in(tmp_path, source: dict) -> object:
    spec = {
        "release": "visits", "source": source,
        "partitions": {"cadence": "yearly", "start": "2023-01-01", "column": "visit"},
        "columns": {"pid": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research"}},
                    "age": {"role": "quasi"}, "visit": {"role": "insensitive"}},
        "anonymization": {"method": "none"},
        "publication": {"path": "out/{partition}.parquet"},
    }
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    return load_spec(tmp_path / "spec.yaml")


def test_a_frame_gives_the_rows_a_file_gives(tmp_path):
    table().to_parquet(tmp_path / "visits.parquet", index=False)
    from_file = pipeline.ingest(spec_in(tmp_path, {"path": "visits.parquet"}), "2024").data
    spec = spec_in(tmp_path, {"asset": "warehouse/visits"})
    from_frame = pipeline.ingest_frame(spec, table(), "2024", source=SOURCE)
    assert from_frame.source == SOURCE
    # the two 2024 rows, ids as the exact text of the integers (never a float's 1.2345678901234567e19)
    assert from_frame.data["pid"].tolist() == ["12345678901234567890", "42"]
    pd.testing.assert_frame_equal(from_frame.data, from_file, check_dtype=False)


def test_the_whole_frame_without_a_partition(tmp_path):
    spec = spec_in(tmp_path, {"asset": ["warehouse", "visits"]})
    assert len(pipeline.ingest_frame(spec, table(), None, source=SOURCE).data) == 4


def test_a_frame_of_one_partition_with_rows_outside_it_is_refused(tmp_path):
    spec = spec_in(tmp_path, {"asset": "warehouse/visits"})
    with pytest.raises(DataError, match=r"the Dagster asset 'warehouse/visits': 2 rows fall outside partition "
                                        r"'2024'.*fix the asset or the spec"):
        pipeline.ingest_frame(spec, table(), "2024", source=SOURCE, one_partition=True)


def test_a_value_that_is_not_a_dataframe_is_named(tmp_path):
    spec = spec_in(tmp_path, {"asset": "warehouse/visits"})
    with pytest.raises(UserError, match=r"the Dagster asset 'warehouse/visits' gave a builtins.dict, not a pandas "
                                        "DataFrame"):
        pipeline.ingest_frame(spec, {"pid": [1]}, "2024", source=SOURCE)


@pytest.mark.parametrize("ids,kind", [([1.0, 2.0, 3.0, 4.0], "floating-point"), ([True, False, True, True], "type bool")])
def test_identifiers_that_are_not_text_or_integers_are_refused(tmp_path, ids, kind):
    spec = spec_in(tmp_path, {"asset": "warehouse/visits"})
    bad = table().assign(pid=ids)
    with pytest.raises(DataError, match=f"identifier column 'pid' .*{kind}"):
        pipeline.ingest_frame(spec, bad, "2024", source=SOURCE)


def test_an_undeclared_column_is_refused_naming_the_asset(tmp_path):
    spec = spec_in(tmp_path, {"asset": "warehouse/visits"})
    with pytest.raises(SpecError, match=r"the Dagster asset 'warehouse/visits'.*column 'extra'.*not declared"):
        pipeline.ingest_frame(spec, table().assign(extra=1), "2024", source=SOURCE)


def test_outside_dagster_the_asset_source_needs_an_input(tmp_path):
    spec = spec_in(tmp_path, {"asset": "warehouse/visits"})
    with pytest.raises(UserError, match=r"the source is the Dagster asset 'warehouse/visits', read by Dagster: give "
                                        "the table to read instead with --input DATA"):
        pipeline.ingest(spec, "2024")
    table().to_csv(tmp_path / "given.csv", index=False)
    assert pipeline.ingest(spec, "2024", str(tmp_path / "given.csv")).data["pid"].tolist() == [
        "12345678901234567890", "42"]


def test_the_source_is_the_file_or_the_asset_value_the_asset_partitioned_or_not(tmp_path):
    table().to_parquet(tmp_path / "visits.parquet", index=False)
    from_file = pipeline.ingest_source(spec_in(tmp_path, {"path": "visits.parquet"}), "2024", table_partitioned=None)
    assert len(from_file.data) == 2  # the file's 2024 rows; the (absent) asset never asked about
    spec = spec_in(tmp_path, {"asset": "warehouse/visits"})
    assert len(pipeline.ingest_source(spec, "2024", table(), table_partitioned=lambda: False).data) == 2
    with pytest.raises(DataError, match="2 rows fall outside partition '2024'"):
        pipeline.ingest_source(spec, "2024", table(), table_partitioned=lambda: True)
    asked = []  # a whole release (no partition) never asks whether the asset is partitioned
    assert len(pipeline.ingest_source(spec, None, table(), table_partitioned=lambda: asked.append(1) or True).data) == 4
    assert asked == []
