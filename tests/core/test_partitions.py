"""Partition windows: the CLI's windows equal Dagster's, keys are validated, no row is lost."""

from __future__ import annotations

import pandas as pd
import pytest

from anon_dagster.dagster.partitions import partitions_def_for
from anon_dagster.errors import DataError, UserError
from anon_dagster.partitions import partition_window, read_release_data, window_schedule
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


def test_the_schedule_of_the_windows_is_their_first_and_last_key_and_their_cron(tmp_path):
    assert window_schedule(make_spec(tmp_path, "quarterly", start="2024-02-10", end="2025-01-01")) == {
        "start": "2024-02-10", "end": "2025-01-01", "fmt": "%Y-%m-%d", "cron_schedule": "0 0 1 1,4,7,10 *"}
    assert window_schedule(make_spec(tmp_path, "yearly", start="2023-06-01", end=None)) == {
        "start": "2023", "end": None, "fmt": "%Y", "cron_schedule": "0 0 1 1 *"}


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


# ----- one date format for the partition column ------------------------------------------------

def write_days(tmp_path, days: list[str]) -> None:
    (tmp_path / "data.csv").write_text("day,v\n" + "".join(f"{d},{i}\n" for i, d in enumerate(days)))


def test_day_first_dates_land_in_their_month(tmp_path):
    # read cell by cell, 05/01 would be 1 May and 02/03 3 February
    write_days(tmp_path, ["05/01/2024", "13/01/2024", "02/03/2024", "29/02/2024"])
    spec = make_spec(tmp_path)
    months = {key: list(read_release_data(spec, key)[0]["v"]) for key in ("2024-01", "2024-02", "2024-03", "2024-05")}
    assert months == {"2024-01": [0, 1], "2024-02": [3], "2024-03": [2], "2024-05": []}


def test_ambiguous_dates_are_refused_asking_for_partitions_format(tmp_path):
    write_days(tmp_path, ["05/01/2024", "06/02/2024"])
    with pytest.raises(DataError) as info:
        read_release_data(make_spec(tmp_path), "2024-01")
    text = str(info.value)
    assert "data.csv: column 'day'" in text and "ambiguous" in text and "partitions.format" in text


def test_declared_format_reads_the_column(tmp_path):
    write_days(tmp_path, ["05/01/2024", "06/02/2024"])
    raw = make_spec(tmp_path).model_dump(exclude={"spec_path"})
    raw["partitions"]["format"] = "%m/%d/%Y"
    spec = spec_from_dict(raw, tmp_path / "spec.yaml")
    assert list(read_release_data(spec, "2024-05")[0]["v"]) == [0]
    assert list(read_release_data(spec, "2024-06")[0]["v"]) == [1]


def test_two_digit_years_stop_the_ingest_naming_the_row(tmp_path):
    write_days(tmp_path, ["2024-01-05", "2024-01-06", "24-01-07"])
    with pytest.raises(DataError, match=r"data.csv: column 'day', row 3: value '24-01-07' is not a date"):
        read_release_data(make_spec(tmp_path), "2024-01")


def test_compact_dates_are_not_read_as_numbers(tmp_path):
    write_days(tmp_path, ["20240105", "20240201"])
    assert list(read_release_data(make_spec(tmp_path), "2024-02")[0]["v"]) == [1]


def test_parquet_datetimes_are_used_as_they_are(tmp_path):
    pd.DataFrame({"day": pd.to_datetime(["2024-01-31 23:00", "2024-02-01 00:00"]), "v": [1, 2]}).to_parquet(
        tmp_path / "data.parquet")
    spec = make_spec(tmp_path, source="data.parquet")
    assert list(read_release_data(spec, "2024-01")[0]["v"]) == [1]


# ----- partition keys are validated before any path is formed ----------------------------------

@pytest.mark.parametrize("key", ["../../etc/x", "2024/../../x", "2024-01/../../x", "2024-1", " 2024-01", "2024-01\n"])
def test_keys_that_are_paths_are_refused_before_any_file_is_opened(tmp_path, monkeypatch, key):
    import anon_dagster.partitions as partitions

    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "x.csv").write_text("day,v\n2024-01-05,1\n")
    spec = make_spec(tmp_path / "etc", source="../data-{partition}.csv")
    monkeypatch.setattr(partitions, "read_table", lambda *a, **k: pytest.fail("a file was opened"))
    with pytest.raises(UserError, match="is not a monthly partition key") as info:
        read_release_data(spec, key)
    assert "\n" not in str(info.value)
    with pytest.raises(UserError, match="is not a monthly partition key"):
        partitions.source_path(spec, key)


def test_a_partition_that_is_a_path_is_never_formatted_into_one(tmp_path):
    spec = make_spec(tmp_path)
    with pytest.raises(UserError, match="is not a partition key"):
        spec.resolve(spec.publication.path, partition="../../x")
    assert spec.resolve(spec.publication.path, partition="2024-01").name == "2024-01.csv"


def test_keys_outside_start_and_end_are_refused(tmp_path):
    spec = make_spec(tmp_path, "monthly", start="2024-01-01", end="2024-04-01")
    with pytest.raises(UserError, match="before the first partition '2024-01'"):
        partition_window(spec, "2023-12")
    with pytest.raises(UserError, match="does not end by partitions.end"):
        partition_window(spec, "2024-04")
    assert partition_window(spec, "2024-03")[1] == pd.Timestamp("2024-04-01")


def test_an_unpartitioned_spec_refuses_a_partition_before_forming_a_path(tmp_path, monkeypatch):
    import anon_dagster.partitions as partitions

    raw = make_spec(tmp_path).model_dump(exclude={"spec_path"})
    raw["partitions"] = None
    raw["source"]["path"] = "data-{partition}.csv"
    spec = spec_from_dict(raw, tmp_path / "spec.yaml")
    monkeypatch.setattr(partitions, "read_table", lambda *a, **k: pytest.fail("a file was opened"))
    with pytest.raises(UserError, match="declares no partitions"):
        read_release_data(spec, "../../etc/x")


@pytest.mark.parametrize("cadence,start,end", [
    ("daily", "2024-01-30", "2024-02-03"), ("weekly", "2024-01-03", "2024-02-01"),
    ("weekly", "2024-01-01", "2024-01-30"), ("monthly", "2024-01-15", "2024-04-10"),
    ("quarterly", "2024-02-01", "2024-12-01"), ("quarterly", "2024-01-01", "2024-06-01"),
    ("quarterly", "2024-01-01", "2024-03-01"), ("yearly", "2023-06-01", "2026-01-01"),
])
def test_the_keys_accepted_are_dagsters_keys(tmp_path, cadence, start, end):
    from anon_dagster.partitions import KEY_FORMATS

    spec = make_spec(tmp_path, cadence, start=start, end=end)
    dagster_keys = set(partitions_def_for(spec).get_partition_keys())
    candidates = {day.strftime(KEY_FORMATS[cadence]) for day in pd.date_range("2022-06-01", "2027-01-01")}
    accepted = set()
    for key in candidates:
        try:
            partition_window(spec, key)
        except UserError:
            continue
        accepted.add(key)
    assert accepted == dagster_keys
