"""Global recoding on Spark: the lattice search on the driver over the bottom frequency table, the
node applied by Spark (broadcast label maps, an anti-join of the failing classes). Same node, loss,
suppressed rows and published rows (as a multiset) as the pandas engine."""

from __future__ import annotations

import json

import pytest

from anon_dagster.cli import main
from anon_dagster.engine.spark_engine import published_columns
from anon_dagster.engine.spark_frames import DriverLimit
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import pipeline
from anon_dagster.release.gate import publishable_view
from anon_dagster.spec import load_spec
from tests.support.spark_releases import COLUMNS, discharges, published_rows, write_release

pytestmark = pytest.mark.usefixtures("master_key")

CASES = {
    "k and suppression": ({"k": 5, "max_suppression": 0.04, "utility": "entropy"}, {"k": 5}),
    "l-diversity and t-closeness": ({"k": 3, "max_suppression": 0.05, "utility": "loss"},
                                    {"k": 3, "l_distinct": 2, "t_closeness": 0.4}),
    "average risk, discernibility": ({"k": 2, "max_suppression": 0.02, "utility": "discernibility"},
                                     {"k": 2, "prosecutor_avg": 0.3}),
    "no suppression": ({"k": 4, "utility": "aecs"}, {"k": 4}),
}


def both(spark_engine, spec):
    keystore = open_keystore()
    ingested = pipeline.ingest(spec, "2024")
    pandas = pipeline.anonymize(spec, pipeline.pseudonymize(spec, ingested.data, keystore, partition="2024").data)
    pseudo = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, "2024"), keystore, partition="2024")
    spark = spark_engine.anonymize(spec, pseudo)
    published = spark.df.select(*[f"`{c}`" for c in published_columns(spark.df)]).toArrow().to_pandas()
    return pandas, spark, published


@pytest.mark.parametrize("case", list(CASES))
def test_same_node_loss_suppression_and_rows(spark_engine, tmp_path, case):
    anonymization, thresholds = CASES[case]
    spec = load_spec(write_release(tmp_path, anonymization={"method": "global", **anonymization},
                                   policy={"thresholds": thresholds}))
    pandas, spark, published = both(spark_engine, spec)
    assert spark.record.levels == pandas.record.levels
    assert spark.record.search["levels"] == pandas.record.search["levels"]
    assert spark.record.utility.value == pytest.approx(pandas.record.utility.value, rel=1e-12)
    assert spark.suppressed == pandas.suppressed
    assert spark.record.suppression.rows == pandas.record.suppression.rows
    assert spark.record.suppression.by_partition_key == pandas.record.suppression.by_partition_key
    assert spark.record.classes == pandas.record.classes
    assert published_rows(published) == published_rows(publishable_view(pandas.data))
    assert list(published.columns) == list(publishable_view(pandas.data).columns)


def test_a_bottom_table_over_the_driver_limit_names_its_size(spark_engine, tmp_path):
    spec = load_spec(write_release(tmp_path, anonymization={"method": "global", "k": 2}, policy={"thresholds": {"k": 2}}))
    pseudo = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, "2024"), open_keystore(), partition="2024")
    spark_engine.max_driver_cells = 100
    with pytest.raises(DriverLimit, match=r"the bottom frequency table \(the QIs at level 0.*\) has \d+ rows x "
                                          r"\d+ columns = [\d,]+ cells, more than .*max_driver_cells=100"):
        spark_engine.anonymize(spec, pseudo)


@pytest.mark.usefixtures("spark")
def test_anonymize_writes_a_parquet_folder_that_both_engines_measure_alike(tmp_path, capsys):
    population = discharges(2000, seed=4)[["age", "sex", "zip", "region"]]
    (tmp_path / "data").mkdir(parents=True, exist_ok=True)
    population.to_parquet(tmp_path / "data" / "population.parquet", index=False)
    spec = write_release(tmp_path, anonymization={"method": "global", "k": 3, "max_suppression": 0.03},
                         policy={"adversary": "journalist", "population": {"path": "../data/population.parquet"},
                                 "thresholds": {"k": 3, "l_distinct": 2, "journalist_max": 0.5}},
                         columns={**COLUMNS})
    out = tmp_path / "out.parquet"
    assert main(["anonymize", str(spec), "--partition", "2023", "--output", str(out), "--engine", "spark",
                 "--quiet"]) == 0
    assert out.is_dir() and (tmp_path / "out.parquet.transformations.json").is_file()
    record = json.loads((tmp_path / "out.parquet.transformations.json").read_text())
    assert record["source"] == {"rows": record["rows_in"], "partition": "2023"}
    measured = {}
    for engine in ("pandas", "spark"):
        capsys.readouterr()
        code = main(["risk", "--config", str(spec), "--input", str(out), "--generalized", "--json",
                     "--engine", engine])
        measured[engine] = (code, json.loads(capsys.readouterr().out))
    assert measured["spark"] == measured["pandas"]
    assert measured["spark"][1]["journalist_model"] == "population"


QUERIES = {
    # by a partition key: the error is what the suppressed rows change
    "by region": ({"name": "q", "group_by": ["region"], "target": "diagnosis"}, 3, 0.05),
    # and by a column the search does not generalize
    "by region and severity": ({"name": "q", "group_by": ["region", "severity"], "target": "diagnosis"}, 5, 0.1),
}


@pytest.mark.parametrize("case", list(QUERIES))
@pytest.mark.parametrize("min_levels", [None, {"age": 1}])
def test_a_utility_query_as_the_metric_finds_the_pandas_node_and_error(spark_engine, tmp_path, case, min_levels):
    """The search minimizes the query's error counted from the bottom frequency table (its rows
    weighted by their counts): the node, the error, the suppressed rows and the published rows of
    the search over the rows."""
    query, k, suppression = QUERIES[case]
    anonymization = {"method": "global", "k": k, "max_suppression": suppression, "utility": "query:q"}
    if min_levels:
        anonymization["min_levels"] = min_levels
    data = discharges(3000, seed=1)
    data["zip"] = data["zip"].str[:4] + "1"  # few combinations: the frequency rows stand for many rows
    spec = load_spec(write_release(tmp_path, data=data, anonymization=anonymization,
                                   policy={"thresholds": {"k": k}}, utility_queries=[query]))
    pandas, spark, published = both(spark_engine, spec)
    assert spark.record.utility.metric == pandas.record.utility.metric == "query:q"
    assert spark.record.levels == pandas.record.levels
    assert spark.record.search["levels"] == pandas.record.search["levels"]
    assert spark.record.search["nodes_checked"] > 1
    assert spark.record.utility.value == pytest.approx(pandas.record.utility.value, abs=1e-9)
    assert spark.record.utility.queries == pandas.record.utility.queries
    assert spark.suppressed == pandas.suppressed
    assert published_rows(published) == published_rows(publishable_view(pandas.data))
