"""Dates stored as text or integers on the Spark engine, read as the pandas engine reads them:
the same format chosen for a date hierarchy and for the partition column, the same partition
rows, and the same one-line errors (the column, the row, the count) for a value no format reads
or for dates two formats read differently."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.engine.base import UnsupportedOnEngine
from anon_dagster.engine.spark_frames import ROW_COLUMN
from anon_dagster.errors import DataError, UserError
from anon_dagster.hierarchies import _as_label
from anon_dagster.release import pipeline
from anon_dagster.spec import load_spec
from tests.support.spark_releases import COLUMNS, check_json, discharges, without_id, write_release

pytestmark = pytest.mark.usefixtures("master_key", "spark")

BORN = {"role": "quasi", "hierarchy": {"type": "date", "levels": ["year", "decade"]}}


def release(folder, admitted: list[object], born: list[object], *, born_format: str | None = None):
    """A spec over len(admitted) discharges whose partition column ``admitted`` and date
    hierarchy ``born`` hold the values given (as stored: text, integers, None)."""
    data = discharges(len(admitted), seed=len(admitted)).assign(admitted=admitted, born=born)
    columns = {**COLUMNS, "born": {**BORN, "hierarchy": {**BORN["hierarchy"],
                                                           **({"format": born_format} if born_format else {})}}}
    return write_release(folder, data=data, columns=columns, anonymization={"method": "global", "k": 2,
                                                                              "max_suppression": 0.5})


def outcome(run):
    """What an ingest gave: the rows, as labels in table order, or the error's one line."""
    try:
        return "rows", run()
    except UserError as exc:  # a DataError, or a SpecError of the hierarchy
        return "error", str(exc)


def pandas_rows(spec, partition):
    data = pipeline.ingest(spec, partition).data
    return [tuple(_as_label(v) for v in row) for row in data.astype(object).itertuples(index=False)]


def spark_rows(engine, spec, partition):
    df = engine.ingest(spec, partition).df
    data = df.toPandas().sort_values(ROW_COLUMN, kind="stable").drop(columns=[ROW_COLUMN])
    return [tuple(_as_label(v) for v in row) for row in data.astype(object).itertuples(index=False)]


def both(engine, spec_path, partition="2023"):
    spec = load_spec(spec_path)
    return outcome(lambda: pandas_rows(spec, partition)), outcome(lambda: spark_rows(engine, spec, partition))


def dates(days: list[int], fmt: str) -> list[str]:
    return [(pd.Timestamp("2023-01-01") + pd.Timedelta(days=d)).strftime(fmt) for d in days]


def test_text_dates_give_the_pandas_rows_and_outcome(tmp_path, spark_engine):
    days = [3, 40, 200, 370, 500, 12, 400, 64, 90, 700] * 4
    admitted = dates(days, "%Y-%m-%d")
    admitted[5] = f"  {admitted[5]} "  # stripped, as on pandas
    admitted[7] = None  # in no partition
    born = dates([d * 30 for d in days], "%d/%m/%Y")  # days past the 12th: one format reads them
    born[3] = None
    spec = release(tmp_path, admitted, born)
    for partition in ("2023", "2024"):
        from_pandas, from_spark = both(spark_engine, spec, partition)
        assert from_pandas[0] == "rows" and from_spark == from_pandas
        assert 0 < len(from_pandas[1]) < len(days)
    code_p, on_pandas = check_json(spec, "--partition", "2024")
    code_s, on_spark = check_json(spec, "--partition", "2024", "--engine", "spark")
    assert code_s == code_p
    assert without_id(on_spark) == without_id(on_pandas)


def test_integer_dates_are_read_as_their_digits(tmp_path, spark_engine):
    days = [3, 40, 200, 370, 500, 12, 400, 64] * 3
    admitted = [int(d) for d in dates(days, "%Y%m%d")]
    spec = release(tmp_path, admitted, dates(days, "%Y-%m-%d"))
    from_pandas, from_spark = both(spark_engine, spec, "2024")
    assert from_pandas[0] == "rows" and from_spark == from_pandas and len(from_pandas[1]) == 9


@pytest.mark.parametrize("case", ["bad born", "bad admitted", "ambiguous born", "declared format"])
def test_a_date_no_format_reads_is_the_same_one_line_error(tmp_path, spark_engine, case):
    days = [3, 40, 200, 370, 500, 12, 400, 64] * 3
    admitted, born, fmt = dates(days, "%Y-%m-%d"), dates([d * 30 for d in days], "%d/%m/%Y"), None
    if case == "bad born":
        born[9] = born[17] = "31/02/1990"
    elif case == "bad admitted":
        admitted[13] = "2023-13-01"
    elif case == "ambiguous born":
        born = dates([d % 12 for d in days], "%d/%m/%Y")  # every day <= 12: May 1 or January 5
    else:
        fmt = "%Y-%m-%d"  # declared, and the column is %d/%m/%Y
    from_pandas, from_spark = both(spark_engine, release(tmp_path, admitted, born, born_format=fmt))
    assert from_pandas[0] == "error" and from_spark == from_pandas
    expected = {"bad born": "row 10", "bad admitted": "row 14", "ambiguous born": "ambiguous",
                "declared format": "row 1:"}[case]
    assert expected in from_pandas[1]


def test_a_table_without_an_order_names_a_row_holding_the_bad_date(tmp_path, spark, spark_engine):
    days = [3, 40, 200, 370, 500, 12] * 3
    born = dates(days, "%Y-%m-%d")
    born[4] = "yesterday"
    spec_path = release(tmp_path, dates(days, "%Y-%m-%d"), born)
    data = pd.read_parquet(tmp_path / "data" / "tiny.parquet")
    spark.createDataFrame(data).createOrReplaceTempView("text_dates_v")
    spec = yaml.safe_load(spec_path.read_text())
    spec["source"] = {"table": "text_dates_v"}
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    try:
        with pytest.raises(DataError, match=r"column 'born', row \d+: value 'yesterday' is not a date .*\(1 such rows\)"):
            spark_engine.ingest(load_spec(spec_path), "2023")
    finally:
        spark.catalog.dropTempView("text_dates_v")


def test_dates_stored_as_other_types_are_refused_naming_the_type(tmp_path, spark_engine):
    days = [3, 40, 200, 370]
    spec = release(tmp_path, dates(days, "%Y-%m-%d"), [1990.5, 1991.0, None, 1992.0])
    with pytest.raises(UnsupportedOnEngine, match=r"dates stored as double \(column 'born'\)"):
        spark_engine.ingest(load_spec(spec), "2023")


VALUE = st.one_of(
    st.integers(0, 900).map(lambda d: ("date", d)),
    st.sampled_from([("raw", None), ("raw", ""), ("raw", "  "), ("raw", "not a date"), ("raw", "2023-02-30")]),
)
FORMATS = ["%Y-%m-%d", "%d/%m/%Y", "%m/%d/%Y", "%Y%m%d", "%d.%m.%Y"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(VALUE, VALUE, st.booleans()), min_size=4, max_size=24),
       st.sampled_from(FORMATS), st.sampled_from(FORMATS))
def test_hypothesis_any_text_dates_give_what_pandas_gives(tmp_path_factory, spark_engine, rows, admitted_fmt,
                                                          born_fmt):
    def text(value, fmt, padded):
        kind, v = value
        if kind == "raw":
            return v
        shown = (pd.Timestamp("2022-12-01") + pd.Timedelta(days=v)).strftime(fmt)
        return f" {shown}  " if padded else shown

    admitted = [text(a, admitted_fmt, p) for a, _, p in rows]
    born = [text(b, born_fmt, not p) for _, b, p in rows]
    spec = release(tmp_path_factory.mktemp("text-dates"), admitted, born)
    from_pandas, from_spark = both(spark_engine, spec)
    assert from_spark == from_pandas
