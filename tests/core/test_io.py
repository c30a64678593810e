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
