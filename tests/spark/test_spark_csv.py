"""CSV sources on the Spark engine: the rows, types and values the pandas engine reads."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.engine.spark_frames import ROW_COLUMN
from anon_dagster.release import pipeline
from anon_dagster.spec import spec_from_dict

pytestmark = pytest.mark.usefixtures("master_key")

COLUMNS = {
    "pid": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research"}},
    "age": {"role": "quasi"},
    "zip": {"role": "quasi"},
    "code": {"role": "quasi"},
    "height": {"role": "insensitive"},
    "note": {"role": "sensitive"},
}


def spec_over(tmp_path, name="rows.csv", **source):
    return spec_from_dict({"release": "csv", "source": {"path": name, **source}, "columns": COLUMNS,
                           "publication": {"path": "out/{release}.parquet"}}, tmp_path / "spec.yaml")


def plain(value):
    """One cell as comparable Python: missing as None, numbers as int or float."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def both_engines(spark_engine, spec):
    pandas = pipeline.ingest(spec).data.reset_index(drop=True)
    spark = spark_engine.ingest(spec).df.toArrow().to_pandas().sort_values(ROW_COLUMN).reset_index(drop=True)
    return pandas, spark


def assert_same_table(pandas: pd.DataFrame, spark: pd.DataFrame) -> None:
    assert list(spark.columns) == [*pandas.columns, ROW_COLUMN]
    assert spark[ROW_COLUMN].tolist() == list(range(len(pandas)))  # the file's order
    for column in pandas.columns:
        left = [plain(v) for v in pandas[column].tolist()]
        right = [plain(v) for v in spark[column].tolist()]
        assert left == right, column
        numeric = pd.api.types.is_numeric_dtype(pandas[column].dtype)
        assert numeric == pd.api.types.is_numeric_dtype(spark[column].dtype), column


TRICKY = (
    "\ufeffpid;age;zip;code;height;note\n"
    "NA;34;08012;7;1.75;\"plain\"\n"
    ";NA;08013;A7;1e2;\"with ; a separator\"\n"
    "P3;;28001;12345678901234567890;;\"two\nlines and \"\"quotes\"\"\"\n"
    "P4;51;28002;9;2.5;null\n"
    "\"\";60;28003;10;0.1;\"\"\n"
)


def test_a_tricky_file_is_read_as_pandas_reads_it(spark_engine, tmp_path):
    """A byte order mark, semicolons, identifiers spelled NA or empty, leading zeros, a missing
    age, an integer too long for int64, a field over two lines with doubled quotes."""
    (tmp_path / "rows.csv").write_text(TRICKY, encoding="utf-8")
    pandas, spark = both_engines(spark_engine, spec_over(tmp_path))
    assert_same_table(pandas, spark)
    assert pandas["zip"].tolist()[0] == "08012" and pandas["pid"].tolist()[0] == "NA"  # what the case is about
    assert pd.api.types.is_integer_dtype(spark["age"].dtype) or spark["age"].dtype == float  # long, nulls kept
    assert spark["note"].tolist()[2] == 'two\nlines and "quotes"'


def test_a_short_row_has_missing_cells_and_a_long_row_is_refused_in_one_line(spark_engine, tmp_path):
    from anon_dagster.errors import DataError

    header = ",".join(COLUMNS)
    (tmp_path / "rows.csv").write_text(f'{header}\nP1,30,08012,1,1.5,a\nP2,31\nP3,32,08013,2,2.5,"b\nc"\n')
    pandas, spark = both_engines(spark_engine, spec_over(tmp_path))
    assert_same_table(pandas, spark)
    assert plain(spark["zip"].tolist()[1]) is None and plain(pandas["zip"].tolist()[1]) is None
    (tmp_path / "rows.csv").write_text(f'{header}\nP1,30,08012,1,1.5,a\nP2,31\nP3,32,08013,2,2.5,b,extra\n')
    spec = spec_over(tmp_path)
    with pytest.raises(DataError, match="Expected 6 fields"):
        pipeline.ingest(spec)
    with pytest.raises(DataError) as err:
        spark_engine.ingest(spec)
    assert str(err.value) == f"{tmp_path / 'rows.csv'}: cannot read as csv: expected 6 fields in data row 3, saw 7"


CELLS = st.sampled_from(["", "NA", "null", "0", "07", "12", "-3", "4.5", "1e3", "x", "A 1", "99999999999999999999",
                         "0.12345678901234567", " 5", "N/A"])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(CELLS, CELLS, CELLS, CELLS, CELLS, CELLS), min_size=1, max_size=12),
       separator=st.sampled_from([",", ";", "\t"]))
def test_any_cells_are_typed_as_pandas_types_them(spark_engine, tmp_path, rows, separator):
    lines = [separator.join(COLUMNS)] + [separator.join(f'"{cell}"' if " " in cell else cell for cell in row)
                                         for row in rows]
    (tmp_path / "rows.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    pandas, spark = both_engines(spark_engine, spec_over(tmp_path))
    assert_same_table(pandas, spark)


def test_check_over_a_csv_source_gives_the_pandas_engines_outcome(tmp_path, spark):
    from tests.support.spark_releases import check_json, discharges, without_id, write_release

    data = discharges(300, seed=4)
    spec = write_release(tmp_path, data=data, anonymization={"method": "global", "k": 3, "max_suppression": 0.05},
                         policy={"thresholds": {"k": 3, "l_distinct": 2}})
    data.to_csv(tmp_path / "data" / "tiny.csv", index=False)
    spec.write_text(spec.read_text().replace("tiny.parquet", "tiny.csv"))
    for partition in ("2023", "2024"):
        code_pandas, on_pandas = check_json(spec, "--partition", partition)
        code_spark, on_spark = check_json(spec, "--partition", partition, "--engine", "spark")
        assert code_spark == code_pandas
        assert without_id(on_spark) == without_id(on_pandas)
