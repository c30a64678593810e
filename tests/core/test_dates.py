"""Dates read with one format per column: declared, or the one that reads every value; ambiguity refused."""

from __future__ import annotations

import datetime

import pandas as pd
import pytest

from anon_dagster.dates import format_problems, parse_dates
from anon_dagster.errors import DataError


def days(*texts: str) -> list[pd.Timestamp]:
    return [pd.Timestamp(t) for t in texts]


def test_day_first_column_is_read_day_first_for_every_row():
    # 05/01 and 06/01 alone could be either; 13/01 tells the column is DD/MM
    dates = parse_dates(pd.Series(["05/01/2024", "06/01/2024", "13/01/2024", None]), "d")
    assert dates.tolist()[:3] == days("2024-01-05", "2024-01-06", "2024-01-13")
    assert pd.isna(dates.iloc[3])


def test_month_first_column_is_read_month_first():
    dates = parse_dates(pd.Series(["01/05/2024", "01/13/2024"]), "d")
    assert dates.tolist() == days("2024-01-05", "2024-01-13")


def test_ambiguous_column_is_refused_asking_for_the_format():
    with pytest.raises(DataError) as info:
        parse_dates(pd.Series(["05/01/2024", "06/02/2024"]), "admission", source="f.csv",
                    format_key="partitions.format")
    text = str(info.value)
    assert text.startswith("f.csv: column 'admission'")
    assert "ambiguous" in text and "'%d/%m/%Y'" in text and "'%m/%d/%Y'" in text
    assert "declare partitions.format" in text


def test_same_reading_in_two_formats_is_not_ambiguous():
    assert parse_dates(pd.Series(["01/01/2024", "02/02/2024"]), "d").tolist() == days("2024-01-01", "2024-02-02")


def test_declared_format_decides():
    assert parse_dates(pd.Series(["05/01/2024"]), "d", "%m/%d/%Y").tolist() == days("2024-05-01")
    assert parse_dates(pd.Series(["24-01-05"]), "d", "%y-%m-%d").tolist() == days("2024-01-05")


def test_a_value_the_format_does_not_read_names_column_and_row():
    with pytest.raises(DataError, match=r"column 'd', row 3: value '24-01-05' is not a date .*'%Y-%m-%d'"):
        parse_dates(pd.Series(["2024-01-05", "2024-01-06 10:00", "24-01-05"]), "d")
    with pytest.raises(DataError, match=r"row 2: value '31/02/2024' is not a date in the declared format"):
        parse_dates(pd.Series(["05/01/2024", "31/02/2024"]), "d", "%d/%m/%Y")
    with pytest.raises(DataError, match=r"row 1: value 'soon' is not a date in any format tried"):
        parse_dates(pd.Series(["soon", "later"]), "d")


def test_the_value_is_left_out_when_asked():
    with pytest.raises(DataError) as info:
        parse_dates(pd.Series(["2024-01-05", "12345678901"]), "pid", show_value=False)
    assert "row 2" in str(info.value) and "12345678901" not in str(info.value)
    with pytest.raises(DataError) as info:
        parse_dates(pd.Series(["05/01/2024", "06/02/2024"]), "pid", show_value=False)
    assert "ambiguous" in str(info.value) and "2024" not in str(info.value).split("differently")[1]


def test_iso_dates_with_and_without_time_mix():
    dates = parse_dates(pd.Series(["2024-01-05", "2024-01-05 10:30", "2024-01-06T08:00:00Z"]), "d")
    assert dates.tolist() == [pd.Timestamp("2024-01-05"), pd.Timestamp("2024-01-05 10:30"),
                              pd.Timestamp("2024-01-06 08:00")]


def test_compact_and_integer_dates():
    assert parse_dates(pd.Series(["20240105", "20241231"]), "d").tolist() == days("2024-01-05", "2024-12-31")
    assert parse_dates(pd.Series([20240105, None], dtype="Int64"), "d").tolist()[:1] == days("2024-01-05")
    with pytest.raises(DataError):
        parse_dates(pd.Series(["2024015"]), "d")  # 7 digits: no format


def test_date_and_datetime_values_are_used_as_they_are():
    typed = pd.Series(pd.to_datetime(["2024-01-05 10:00", None]))
    assert parse_dates(typed, "d").iloc[0] == pd.Timestamp("2024-01-05 10:00")
    aware = pd.Series(pd.to_datetime(["2024-01-05 23:30"]).tz_localize("Europe/Madrid"))
    assert parse_dates(aware, "d").iloc[0] == pd.Timestamp("2024-01-05 22:30")  # in UTC
    objects = pd.Series([datetime.date(2024, 1, 5), None], dtype=object)
    assert parse_dates(objects, "d").iloc[0] == pd.Timestamp("2024-01-05")


def test_declared_formats_are_checked():
    assert format_problems("%d/%m/%Y", ("year", "month", "day")) == []
    assert format_problems("%Y", ("year",)) == []
    assert "no month" in format_problems("%Y", ("year", "month"))[0]
    assert "no year" in format_problems("%d/%m", ("year",))[0]
    assert format_problems("mixed", ("year",))  # cell by cell is what a format rules out
