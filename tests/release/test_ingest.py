"""Ingest reads identifiers as the exact text of their values: no two people share a pseudonym
because their ids were read as numbers (20 digits, leading zeros, digits past the 16th)."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from anon_dagster.errors import DataError
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import gate, pipeline
from anon_dagster.spec import load_spec

# ids a float or int64 reader would merge, each set in a file of its own (one id with a leading
# zero would make a whole column text and hide the others)
LONG = ["12345678901234567890", "12345678901234567891", "12345678901234567899", "18446744073709551615"]
PAST_FLOATS = ["9007199254740993", "9007199254740992", "1234567890123456789"]  # 2**53 + 1 and 2**53: one float
LEADING_ZEROS = ["00000000000000000042", "42", "0042", "99999999999999999999"]


def write(tmp_path, fmt: str, ids: list[str]) -> object:
    n = len(ids)
    df = pd.DataFrame({"pid": ids, "age": [30 + i % 2 for i in range(n)], "visit": ["2024-03-01"] * n})
    if fmt == "csv":
        (tmp_path / "data.csv").write_text(df.to_csv(index=False))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        # integer ids, as a warehouse exports them (no pandas metadata, a nullable integer type)
        numeric = [int(i) for i in ids]
        kind = pa.uint64() if any(v > 2**63 - 1 for v in numeric) else pa.int64()
        pq.write_table(pa.table({"pid": pa.array(numeric, kind), "age": df["age"], "visit": df["visit"]}),
                       tmp_path / "data.parquet")
    spec = {
        "release": "ids", "source": {"path": f"data.{fmt}"},
        "partitions": {"cadence": "yearly", "start": "2024-01-01", "column": "visit"},
        "columns": {"pid": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research"}},
                    "age": {"role": "quasi"}, "visit": {"role": "insensitive"}},
        "anonymization": {"method": "none"},
        "composition": {"population": "people", "person": "pid", "min_k": 1},
        "publication": {"path": "out/{partition}.parquet"},
    }
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    return load_spec(tmp_path / "spec.yaml")


@pytest.mark.parametrize("fmt,ids", [
    ("csv", LONG), ("csv", PAST_FLOATS), ("csv", LEADING_ZEROS), ("csv", LONG + PAST_FLOATS),
    ("parquet", LONG), ("parquet", PAST_FLOATS), ("parquet", LONG + PAST_FLOATS),
])
def test_every_identifier_gets_its_own_pseudonym(tmp_path, master_key, fmt, ids):
    spec = write(tmp_path, fmt, ids)
    ingested = pipeline.ingest(spec, "2024")
    assert ingested.data["pid"].tolist() == ids  # the exact text, never 1.2345678901234567e19
    out = pipeline.pseudonymize(spec, ingested.data, open_keystore())
    assert out.data["pid"].nunique() == len(ids)
    assert out.data[gate.LINKAGE_COLUMN].nunique() == len(ids)


def test_the_pseudonym_is_that_of_the_text(tmp_path, master_key):
    from anon_dagster.pseudonymize import pseudonymize_values

    spec = write(tmp_path, "parquet", ["12345678901234567890"])
    out = pipeline.pseudonymize(spec, pipeline.ingest(spec, "2024").data, open_keystore(), partition="2024")
    # scope release (the default): the key of publication ids/2024
    expected, _ = pseudonymize_values(pd.Series(["12345678901234567890"]), open_keystore(), method="hmac",
                                      purpose="research", scope="release", publication="ids/2024")
    assert out.data["pid"].tolist() == expected.tolist()


def test_a_float_identifier_column_is_refused(tmp_path, master_key):
    spec = write(tmp_path, "csv", ["1", "2"])
    pd.DataFrame({"pid": [1.0, 2.0], "age": [30, 31], "visit": ["2024-03-01"] * 2}).to_parquet(tmp_path / "f.parquet")
    with pytest.raises(DataError, match="identifier column 'pid' is stored as floating-point"):
        pipeline.ingest(spec, "2024", input_path=str(tmp_path / "f.parquet"))
    (tmp_path / "f.csv").write_text("pid,age,visit\n1.0,30,2024-03-01\n1,31,2024-03-01\n")
    ingested = pipeline.ingest(spec, "2024", input_path=str(tmp_path / "f.csv"))
    assert ingested.data["pid"].tolist() == ["1.0", "1"]  # as written: 1.0 does not silently become 1
