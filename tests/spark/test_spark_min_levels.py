"""anonymization.min_levels on Spark: the search's frequency table built at the declared levels,
the search over the sub-lattice above them, the same node as the pandas engine on the same
spec; a bottom table over the driver's budget refused before it is read, naming its size and
both ways out."""

from __future__ import annotations

import pandas as pd
import pytest

from anon_dagster.engine.spark_engine import published_columns
from anon_dagster.engine.spark_frames import DriverLimit
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import pipeline
from anon_dagster.release.gate import publishable_view
from anon_dagster.spec import load_spec
from tests.support.spark_releases import published_rows, write_release

pytestmark = pytest.mark.usefixtures("master_key")

# eight people, two ages by four zip codes: every (age, zip) once
SMALL = pd.DataFrame({
    "age": [20, 21] * 4,
    "zip": [z for z in ("1001", "1002", "1003", "1004") for _ in range(2)],
    "admitted": pd.Timestamp("2024-03-01"),
    "diagnosis": ["A10", "B20"] * 4,
})
SMALL_COLUMNS = {
    "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [10, 20]}},
    "zip": {"role": "quasi", "hierarchy": {"type": "mask", "keep": [3]}},
    "admitted": {"role": "insensitive"},
    "diagnosis": {"role": "sensitive"},
}


def both(spark_engine, spec):
    """The pandas engine's anonymization of partition 2024, Spark's and Spark's published rows."""
    keystore = open_keystore()
    ingested = pipeline.ingest(spec, "2024")
    pandas = pipeline.anonymize(spec, pipeline.pseudonymize(spec, ingested.data, keystore, partition="2024").data)
    pseudo = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, "2024"), keystore, partition="2024")
    spark = spark_engine.anonymize(spec, pseudo)
    published = spark.df.select(*[f"`{c}`" for c in published_columns(spark.df)]).toArrow().to_pandas()
    return pandas, spark, published


@pytest.mark.parametrize(("min_levels", "node", "loss"), [
    # the whole lattice: ages to decades keeps the zip codes, 4 classes of 2 (discernibility 16)
    (None, {"age": 1, "zip": 0}, 16.0),
    # zip codes at least masked to 100*: its bottom already has 2 classes of 4 (32)
    ({"zip": 1}, {"age": 0, "zip": 1}, 32.0),
])
def test_min_levels_move_the_node_the_same_way_on_both_engines(spark_engine, tmp_path, min_levels, node, loss):
    anonymization = {"method": "global", "k": 2, "utility": "discernibility"}
    if min_levels:
        anonymization["min_levels"] = min_levels
    spec = load_spec(write_release(tmp_path, data=SMALL, columns=SMALL_COLUMNS, anonymization=anonymization,
                                   policy={"thresholds": {"k": 2}}))
    pandas, spark, published = both(spark_engine, spec)
    assert spark.record.levels == pandas.record.levels == node
    assert spark.record.utility.value == pandas.record.utility.value == loss
    assert spark.record.search == {**pandas.record.search, "elapsed_s": spark.record.search["elapsed_s"]}
    assert spark.record.search.get("min_levels") == (None if min_levels is None else {"age": 0, "zip": 1})
    assert published_rows(published) == published_rows(publishable_view(pandas.data))


def test_discharges_at_min_levels_agree_with_pandas(spark_engine, tmp_path):
    spec = load_spec(write_release(tmp_path, anonymization={"method": "global", "k": 3, "max_suppression": 0.05,
                                                            "utility": "entropy",
                                                            "min_levels": {"age": 1, "zip": 1}},
                                   policy={"thresholds": {"k": 3}}))
    pandas, spark, published = both(spark_engine, spec)
    assert spark.record.levels == pandas.record.levels
    assert spark.record.levels["age"] >= 1 and spark.record.levels["zip"] >= 1
    assert spark.record.search["min_levels"] == {"age": 1, "sex": 0, "zip": 1, "region": 0}
    assert spark.record.utility.value == pytest.approx(pandas.record.utility.value, rel=1e-12)
    assert spark.suppressed == pandas.suppressed
    assert spark.record.classes == pandas.record.classes
    assert published_rows(published) == published_rows(publishable_view(pandas.data))


def _bottom_rows(spark_engine, spec, pseudo) -> int:
    """The rows of the bottom frequency table (QIs at level 0, partition key, nothing sensitive)."""
    return pseudo.df.select("age", "sex", "zip", "region").distinct().count()


def test_a_bottom_table_over_the_budget_is_refused_naming_its_size_and_both_ways_out(spark_engine, tmp_path):
    spec = load_spec(write_release(tmp_path, anonymization={"method": "global", "k": 2},
                                   policy={"thresholds": {"k": 2}}))
    pseudo = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, "2024"), open_keystore(), partition="2024")
    bottom = _bottom_rows(spark_engine, spec, pseudo)
    columns = 4 + 2  # the QIs and the partition key, the count and the first row's position
    # 20 rows of a table: nodes over it with no more classes than k=2 allows (half the rows) are
    # left, so judging the nodes on Spark cannot rule them out either
    spark_engine.max_driver_cells = 20 * columns
    with pytest.raises(DriverLimit) as caught:
        spark_engine.anonymize(spec, pseudo)
    message = str(caught.value)
    assert "\n" not in message
    assert (f"the bottom frequency table (the QIs at level 0, the partition keys and the sensitive attributes) "
            f"has {bottom:,} rows x {columns} columns = {bottom * columns:,} cells, more than the Spark engine "
            f"holds on the driver (max_driver_cells={20 * columns:,})") in message
    assert "raise max_driver_cells" in message and "declare anonymization.min_levels" in message


def test_min_levels_bring_the_table_within_the_budget(spark_engine, tmp_path):
    anonymization = {"method": "global", "k": 2, "min_levels": {"age": 3, "zip": 2}}
    spec = load_spec(write_release(tmp_path, anonymization=anonymization, policy={"thresholds": {"k": 2}}))
    pseudo = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, "2024"), open_keystore(), partition="2024")
    bottom = _bottom_rows(spark_engine, spec, pseudo)
    spark_engine.max_driver_cells = bottom * 6 - 1  # the bottom table would not fit
    done = spark_engine.anonymize(spec, pseudo)
    assert done.record.levels["age"] >= 3 and done.record.levels["zip"] >= 2
    assert done.record.search["min_levels"] == {"age": 3, "sex": 0, "zip": 2, "region": 0}
    spark_engine.max_driver_cells = 40  # the distinct values of each column fit, not the table at min_levels
    with pytest.raises(DriverLimit, match=r"the frequency table at anonymization.min_levels .* cells, more than .*"
                                          r"max_driver_cells=40\): .*declare higher anonymization.min_levels"):
        spark_engine.anonymize(spec, pseudo)
