"""A source that is a table of the Spark catalog (``source.table``) or a Delta table
(``source.format: delta``) on the Spark engine.

A catalog table gives ``check --engine spark`` exactly the outcome of the same rows in a parquet
file (every check's name, measured, threshold, verdict); its partitions are filtered on Spark by
the same window; its rows' positions are a function of the rows alone; an unknown table is named;
the pandas engine refuses the source in one line naming the spec, the key and the ways out; a
session without Delta Lake refuses a Delta source saying so.
"""

from __future__ import annotations

from collections import Counter

import pytest
import yaml

from anon_dagster.cli import main
from anon_dagster.engine.spark_sources import RANK_BITS, content_positions
from anon_dagster.errors import DataError, UserError
from anon_dagster.spec import load_spec
from tests.support.spark_releases import COLUMNS, check_json, discharges, without_id, write_release

pytestmark = pytest.mark.usefixtures("master_key", "spark")


def as_table(spec_path, table: str) -> None:
    """The spec at ``spec_path`` rewritten to read ``source.table: table`` instead of its file."""
    spec = yaml.safe_load(spec_path.read_text())
    spec["source"] = {"table": table}
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))


@pytest.fixture
def release(tmp_path, spark):
    """A release over generated discharges, as a parquet file and as the view ``discharges_v``
    (the spec files ``file.yaml`` and ``table.yaml``)."""
    data = discharges(400, seed=3)
    sections = {"anonymization": {"method": "global", "k": 4, "max_suppression": 0.05, "utility": "loss"},
                "policy": {"thresholds": {"k": 4, "l_distinct": 2, "t_closeness": 0.45, "prosecutor_avg": 0.2}},
                "utility_queries": [{"name": "by_region", "group_by": ["region"], "target": "diagnosis"}]}
    by_file = write_release(tmp_path / "file", data=data, **sections)
    by_table = write_release(tmp_path / "table", data=data, **sections)
    as_table(by_table, "discharges_v")
    spark.createDataFrame(data).createOrReplaceTempView("discharges_v")
    yield by_file, by_table
    spark.catalog.dropTempView("discharges_v")


def test_a_catalog_table_gives_the_outcome_of_the_same_rows_in_a_file(release):
    by_file, by_table = release
    for partition in ("2023", "2024"):
        code_f, from_file = check_json(by_file, "--partition", partition, "--engine", "spark")
        code_t, from_table = check_json(by_table, "--partition", partition, "--engine", "spark")
        assert code_t == code_f
        assert [(c["name"], c["measured"], c["threshold"], c["passed"]) for c in from_table["checks"]] == \
               [(c["name"], c["measured"], c["threshold"], c["passed"]) for c in from_file["checks"]]
        assert without_id(from_table) == without_id(from_file)
        assert {c["name"] for c in from_table["checks"]} >= {"k_anonymity", "t_closeness", "utility_by_region"}


def test_a_partition_of_a_table_is_its_window_filtered_on_spark(release, spark_engine):
    _, by_table = release
    spec = load_spec(by_table)
    frame = discharges(400, seed=3)
    for partition, year in (("2023", 2023), ("2024", 2024)):
        ingested = spark_engine.ingest(spec, partition)
        assert ingested.source == "the catalog table 'discharges_v'"
        assert ingested.df.count() == int((frame["admitted"].dt.year == year).sum())
        years = {r[0] for r in ingested.df.selectExpr("year(admitted)").distinct().collect()}
        assert years == {year}


def positioned(df) -> Counter:
    """Each row with its position, as a multiset."""
    return Counter(tuple(r) for r in content_positions(df).collect())


def test_positions_are_a_function_of_the_rows_alone(spark):
    rows = [("a", 1), ("a", 1), ("a", 1), ("b", None), (None, 2), ("c", 3)]
    df = spark.createDataFrame(rows, "k string, v int")
    first = positioned(df)
    assert positioned(spark.createDataFrame(rows[::-1], "k string, v int").repartition(3)) == first
    positions = [p for *_, p in first]
    assert len(set(positions)) == len(rows)  # unique: a row is found again by its position
    repeated = sorted(p for k, v, p in first if (k, v) == ("a", 1))
    assert [p - repeated[0] for p in repeated] == [0, 1, 2]  # equal rows: one bucket, ranks 0, 1, 2
    assert repeated[0] % (1 << RANK_BITS) == 0
    assert all(0 <= p < 1 << 63 for p in positions)


def test_odd_names_are_read_as_spark_reads_them(spark, spark_engine, tmp_path):
    frame = discharges(60, seed=5)
    data = spark.createDataFrame(frame)
    folder = tmp_path / "clinic.db"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS clinic_t LOCATION '{folder}'")
    data.createOrReplaceTempView("`odd name`")
    data.createOrReplaceTempView("`visits.2023`")
    data.createOrReplaceGlobalTempView("discharges_g")
    data.write.mode("overwrite").saveAsTable("clinic_t.visits_2023")
    try:
        for name in ("`odd name`", "`visits.2023`", "global_temp.discharges_g",
                     "spark_catalog.clinic_t.`visits_2023`"):
            spec_path = write_release(tmp_path / name.replace("`", "").replace(" ", "_"), data=frame)
            as_table(spec_path, name)
            ingested = spark_engine.ingest(load_spec(spec_path), "2023")
            assert ingested.df.count() == int((frame["admitted"].dt.year == 2023).sum()), name
    finally:
        spark.catalog.dropTempView("odd name")
        spark.catalog.dropTempView("visits.2023")
        spark.catalog.dropGlobalTempView("discharges_g")
        spark.sql("DROP DATABASE IF EXISTS clinic_t CASCADE")


def test_an_unknown_table_is_named_in_one_line(tmp_path, spark_engine, capsys):
    spec_path = write_release(tmp_path)
    as_table(spec_path, "nowhere.discharges")
    with pytest.raises(DataError, match=r"source.table 'nowhere.discharges': no such table or view") as info:
        spark_engine.ingest(load_spec(spec_path), "2023")
    assert str(info.value).startswith(str(spec_path)) and "\n" not in str(info.value)
    assert main(["check", str(spec_path), "--partition", "2023", "--engine", "spark"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no such table or view" in err and "nowhere.discharges" in err


def test_the_same_rows_in_another_order_give_the_same_microaggregation(tmp_path, spark, spark_engine):
    """MDAV takes rows in position order (its ties, its first rows): a table stored in another
    order and partitioning publishes the same rows, and the gate says the same."""
    from anon_dagster.engine.spark_frames import published_columns
    from anon_dagster.pseudonymize import open_keystore

    names = ["pid", "age", "region", "diagnosis", "admitted"]
    frame = discharges(200, seed=11)[names].assign(age=lambda d: d["age"].fillna(40).astype(int))
    spec_path = write_release(tmp_path, data=frame, columns={c: COLUMNS[c] for c in names},
                              anonymization={"method": "microaggregation", "k": 3, "max_suppression": 0.0},
                              policy={"thresholds": {"k": 3}})
    as_table(spec_path, "mdav_v")
    spec = load_spec(spec_path)
    published, verdicts = [], []
    for stored in (frame, frame.iloc[::-1]):
        spark.createDataFrame(stored).repartition(3).createOrReplaceTempView("mdav_v")
        run = spark_engine.run_gate(spec, partition="2024", keystore=open_keystore())
        kept = [c for c in published_columns(run.anonymized.df) if c != "pid"]  # pid: random per row
        published.append(Counter(tuple(r) for r in run.anonymized.df.select(*kept).collect()))
        verdicts.append([(c.name, c.measured, c.threshold, c.passed) for c in run.evaluation.checks])
    spark.catalog.dropTempView("mdav_v")
    assert published[0] == published[1] and sum(published[0].values()) > 0
    assert verdicts[0] == verdicts[1]
    assert ("k_anonymity", 3, 3, True) in verdicts[0]


def test_a_session_without_delta_lake_refuses_a_delta_source(tmp_path, spark_engine):
    spec_path = write_release(tmp_path)
    spec = yaml.safe_load(spec_path.read_text())
    (tmp_path / "data" / "delta_table").mkdir()
    spec["source"] = {"path": "../data/delta_table", "format": "delta"}
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    with pytest.raises(UserError, match=r"needs a Spark session with Delta Lake \(delta-spark\) configured") as info:
        spark_engine.ingest(load_spec(spec_path), "2023")
    assert "delta_table" in str(info.value) and "\n" not in str(info.value)
