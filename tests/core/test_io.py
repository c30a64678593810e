"""Reading tables: csv codes keep their leading zeros, numbers stay numbers; atomic writes; plain JSON values."""

from __future__ import annotations

import os
from pathlib import Path

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


def test_plain_json_unwraps_numpy_and_rounds_only_when_asked():
    import dataclasses
    import json

    import numpy as np

    from anon_dagster.io import plain_json

    @dataclasses.dataclass
    class Point:
        x: int
        y: float

    value = {1: np.int32(3), "f": np.float64(1 / 3), "nan": float("nan"), "inf": np.inf,
             "arr": np.array([1, 2]), "set": {"b", "a"}, "tup": (np.bool_(True), None),
             "p": Point(1, 0.5), "path": Path("a/b")}
    out = plain_json(value)
    assert out == {"1": 3, "f": 1 / 3, "nan": None, "inf": None, "arr": [1, 2], "set": ["a", "b"],
                   "tup": [True, None], "p": {"x": 1, "y": 0.5}, "path": str(Path("a/b"))}
    assert type(out["1"]) is int and type(out["tup"][0]) is bool
    assert plain_json(np.float64(1 / 3), digits=3) == 0.333
    json.dumps(out, allow_nan=False)  # strict JSON: no NaN left


# ----- identifiers as the exact text of their values -------------------------------------------

def test_csv_identifiers_are_their_text(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("pid,name,age\n12345678901234567890,NA,41\n00012,null,\n1.0,Null,7\n,x,8\n")
    df = read_table(path, text_columns=["pid", "name"])
    assert df["pid"].tolist()[:3] == ["12345678901234567890", "00012", "1.0"]
    assert pd.isna(df["pid"].iloc[3])  # only an empty cell is missing
    assert df["name"].tolist() == ["NA", "null", "Null", "x"]  # "NA" may be someone's code
    assert df["age"].dtype == "Int64"


def test_numbers_that_do_not_fit_stay_text(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("big,huge,long_float,exact,gap\n"
                    "12345678901234567890,123456789012345678901,0.12345678901234567,9007199254740993,9007199254740993\n"
                    "1,2,0.5,1,\n")
    df = read_table(path)
    assert df["big"].tolist() == ["12345678901234567890", "1"]  # past int64: text, not an overflow
    assert df["huge"].tolist() == ["123456789012345678901", "2"]
    assert df["long_float"].tolist() == ["0.12345678901234567", "0.5"]  # more digits than a float holds
    assert df["exact"].dtype == "int64" and df["exact"].iloc[0] == 9007199254740993
    assert df["gap"].dtype == "Int64" and df["gap"].iloc[0] == 9007199254740993  # not through a float


def test_parquet_integer_identifiers_are_their_digits(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({  # written without pandas: nullable integers, no pandas metadata
        "pid": pa.array([12345678901234567890, 12345678901234567891, None], pa.uint64()),
        "n": pa.array([12345678901234567, None, 3], pa.int64()),
        "age": pa.array([41, 42, 43], pa.int64()),
    }), path)
    df = read_table(path, text_columns=["pid", "n"])
    assert df["pid"].tolist()[:2] == ["12345678901234567890", "12345678901234567891"]
    assert df["n"].tolist()[0] == "12345678901234567" and pd.isna(df["n"].iloc[1])
    assert df["age"].tolist() == [41, 42, 43]
    pandas_written = tmp_path / "p.parquet"
    pd.DataFrame({"pid": pd.array([12345678901234567, None], dtype="Int64")}).to_parquet(pandas_written)
    assert read_table(pandas_written, text_columns=["pid"])["pid"].iloc[0] == "12345678901234567"


def test_parquet_float_identifiers_are_refused(tmp_path):
    path = tmp_path / "t.parquet"
    pd.DataFrame({"pid": [1.0, 2.0]}).to_parquet(path)
    with pytest.raises(DataError, match=r"t.parquet: identifier column 'pid' is stored as floating-point"):
        read_table(path, text_columns=["pid"])
    assert read_table(path)["pid"].tolist() == [1.0, 2.0]  # not an identifier: read as typed


def test_csv_date_columns_keep_their_text(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("day,n\n20240105,1\n20240106,2\n")
    df = read_table(path, raw_columns=["day"])
    assert df["day"].tolist() == ["20240105", "20240106"] and df["n"].dtype == "int64"
