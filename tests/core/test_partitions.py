"""Partition windows: the CLI's windows equal Dagster's, keys are validated, no row is lost."""

from __future__ import annotations

import pandas as pd
import pytest

from anon_dagster.dagster.partitions import partitions_def_for
from anon_dagster.errors import DataError, UserError
from anon_dagster.partitions import partition_window, read_release_data
from anon_dagster.spec import spec_from_dict


def make_spec(tmp_path, cadence="monthly", start="2024-01-01", end="2025-01-01", source="data.csv"):
    return spec_from_dict({
        "release": "r", "source": {"path": source},
        "partitions": {"cadence": cadence, "start": start, "end": end, "column": "day"},
        "columns": {"day": {"role": "quasi", "hierarchy": {"type": "date", "levels": ["month", "year"]}},
                    "v": {"role": "insensitive"}},
        "anonymization": {"method": "none"},
        "publication": {"path": "out/{partition}.csv"},
    }, tmp_path / "spec.yaml")


@pytest.mark.parametrize("cadence", ["daily", "weekly", "monthly", "quarterly", "yearly"])
def test_windows_equal_dagster_windows(tmp_path, cadence):
    spec = make_spec(tmp_path, cadence, start="2024-01-01", end="2024-03-01" if cadence != "yearly" else "2026-01-01")
    pdef = partitions_def_for(spec)
    keys = pdef.get_partition_keys()
    assert keys
    for key in keys:
        window = pdef.time_window_for_partition_key(key)
        start, end = partition_window(spec, key)
        assert (start, end) == (pd.Timestamp(window.start.replace(tzinfo=None)),
                                pd.Timestamp(window.end.replace(tzinfo=None)))


def test_keys_that_start_no_window_are_refused(tmp_path):
    with pytest.raises(UserError, match="not a monthly partition key"):
        partition_window(make_spec(tmp_path, "monthly"), "March")
    with pytest.raises(UserError, match="does not start a quarterly window"):
        partition_window(make_spec(tmp_path, "quarterly"), "2024-02-01")
    with pytest.raises(UserError, match="does not start a weekly window"):
        partition_window(make_spec(tmp_path, "weekly"), "2024-01-03")  # a Wednesday


def test_rows_of_a_partition_and_every_row_accounted_for(tmp_path):
    pd.DataFrame({"day": ["2024-01-31", "2024-02-01", "2024-02-29", "2024-03-01"], "v": [1, 2, 3, 4]}).to_csv(
        tmp_path / "data.csv", index=False)
    spec = make_spec(tmp_path)
    months = [read_release_data(spec, key)[0] for key in ("2024-01", "2024-02", "2024-03")]
    assert [list(m["v"]) for m in months] == [[1], [2, 3], [4]]
    assert all(list(m.index) == list(range(len(m))) for m in months)


def test_per_partition_file_with_rows_outside_its_window_is_refused(tmp_path):
    pd.DataFrame({"day": ["2024-02-10", "2024-03-02"], "v": [1, 2]}).to_csv(tmp_path / "data-2024-02.csv", index=False)
    spec = make_spec(tmp_path, source="data-{partition}.csv")
    with pytest.raises(DataError, match="1 rows fall outside partition '2024-02'"):
        read_release_data(spec, "2024-02")
    with pytest.raises(UserError, match="give a partition"):
        read_release_data(spec, None)
