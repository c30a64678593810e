"""Reading tables: csv codes keep their leading zeros, numbers stay numbers; atomic writes."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from anon_dagster.errors import DataError
from anon_dagster.io import read_table, write_table_atomic


def test_csv_codes_keep_leading_zeros_and_numbers_are_numbers(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("province;postal_code;age;los;bmi;note\n08;08012;41;3;22.5;a\n28;28014;;10;19;\n")
    df = read_table(path)
    assert list(df["province"]) == ["08", "28"]
    assert list(df["postal_code"]) == ["08012", "28014"]
    assert df["age"].dtype == "Int64" and df["age"].isna().sum() == 1
    assert df["los"].dtype == "int64"
    assert list(df["bmi"]) == [22.5, 19.0]
    assert df["note"].isna().sum() == 1


def test_unreadable_and_missing_files_name_the_path(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        read_table(tmp_path / "none.csv")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(DataError, match="bad.parquet"):
        read_table(bad)


def test_atomic_write_is_owner_only_and_leaves_no_temporary(tmp_path):
    out = tmp_path / "pub" / "x.parquet"
    write_table_atomic(pd.DataFrame({"a": [1, 2]}), out)
    assert (os.stat(out).st_mode & 0o777) == 0o600
    assert [p.name for p in out.parent.iterdir()] == ["x.parquet"]
    assert list(read_table(out)["a"]) == [1, 2]
