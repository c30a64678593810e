"""Nodes judged on Spark: a bottom frequency table over ``max_driver_cells`` without
``anonymization.min_levels`` has the lattice walked on Spark up to the minimal nodes whose tables
fit, the search run over their sub-lattices; the same node, levels, loss, suppressed rows and
published rows as the pandas engine's search over the rows. A node over the budget with no more
classes than the class bound is refused, naming the sizes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.anonymize.criteria import Policy
from anon_dagster.engine.spark_engine import published_columns
from anon_dagster.engine.spark_frames import DriverLimit
from anon_dagster.engine.spark_node_judging import class_bound
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import pipeline
from anon_dagster.release.gate import publishable_view
from anon_dagster.spec import load_spec
from tests.support.spark_releases import (
    PARTITION_KEYS,
    TINY_COLUMNS,
    published_rows,
    tiny_discharges,
    write_release,
)

pytestmark = pytest.mark.usefixtures("master_key")

def bottom_of(spark_engine, spec, pseudo) -> tuple[int, int, int]:
    """The bottom table's rows and columns as the driver would read it, and the class bound."""
    from anon_dagster.engine.spark_frames import ROW_COLUMN

    policy = Policy.from_spec(spec)
    columns = list(dict.fromkeys([*spec.generalized_qis, *spec.partition_keys,
                                  *(policy.sensitive if policy.needs_sensitive else [])]))
    table = pseudo.df.select(*[f"`{c}`" for c in columns]).distinct().count()
    width = len(columns) + 1 + (ROW_COLUMN in pseudo.df.columns)
    return table, width, class_bound(policy, pseudo.df.count())


def both(spark_engine, spec, just_below: bool = False):
    """The pandas engine's anonymization of partition 2024 (over the rows, every node), Spark's
    with ``max_driver_cells`` holding as many table rows as the class bound allows classes (or,
    ``just_below``, one row fewer than the bottom table's), and Spark's published rows."""
    keystore = open_keystore()
    ingested = pipeline.ingest(spec, "2024")
    pandas = pipeline.anonymize(spec, pipeline.pseudonymize(spec, ingested.data, keystore, partition="2024").data)
    pseudo = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, "2024"), keystore, partition="2024")
    table, width, bound = bottom_of(spark_engine, spec, pseudo)
    spark_engine.max_driver_cells = (table - 1 if just_below else min(bound, table - 1)) * width
    spark = spark_engine.anonymize(spec, pseudo)
    published = spark.df.select(*[f"`{c}`" for c in published_columns(spark.df)]).toArrow().to_pandas()
    return pandas, spark, published


def assert_same(pandas, spark, published) -> None:
    """The search's node and loss, the suppression and the rows of the pandas engine's search."""
    assert spark.record.levels == pandas.record.levels
    for key in ("levels", "solved", "metric", "k_per_person"):
        assert spark.record.search.get(key) == pandas.record.search.get(key), key
    assert spark.record.search["loss"] == pytest.approx(pandas.record.search["loss"], rel=1e-12, abs=1e-12)
    assert spark.record.search["lattice_size"] == pandas.record.search["lattice_size"]
    best_s, best_p = spark.record.search["best"], pandas.record.search["best"]
    assert {k: v for k, v in best_s.items() if k != "loss"} == {k: v for k, v in best_p.items() if k != "loss"}
    assert spark.record.utility.value == pytest.approx(pandas.record.utility.value, rel=1e-12, abs=1e-12)
    assert spark.suppressed == pandas.suppressed
    assert spark.record.suppression.rows == pandas.record.suppression.rows
    assert spark.record.classes == pandas.record.classes
    assert published_rows(published) == published_rows(publishable_view(pandas.data))


CASES = {
    "k and suppression, entropy": ({"k": 5, "max_suppression": 0.04, "utility": "entropy"}, {"k": 5}, False),
    "k and suppression, loss": ({"k": 3, "max_suppression": 0.05, "utility": "loss"}, {"k": 3}, False),
    "average risk, discernibility": ({"k": 2, "max_suppression": 0.02, "utility": "discernibility"},
                                     {"k": 2, "prosecutor_avg": 0.3}, False),
    "no suppression, aecs": ({"k": 4, "utility": "aecs"}, {"k": 4}, False),
    # cell suppression expands the failing rows on the driver: a budget just below the bottom's
    "cell suppression": ({"k": 5, "max_suppression": 0.1, "suppression": "cells"}, {"k": 5}, True),
    # the tables hold the sensitive attribute too: more rows than classes
    "l-diversity and t-closeness, loss": ({"k": 3, "max_suppression": 0.05, "utility": "loss"},
                                          {"k": 3, "l_distinct": 2, "t_closeness": 0.4}, True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_same_node_loss_suppression_and_rows_as_the_search_over_the_rows(spark_engine, tmp_path, case):
    anonymization, thresholds, just_below = CASES[case]
    spec = load_spec(write_release(tmp_path, anonymization={"method": "global", **anonymization},
                                   policy={"thresholds": thresholds}))
    pandas, spark, published = both(spark_engine, spec, just_below)
    assert_same(pandas, spark, published)
    judged = spark.record.search["judged_on_spark"]
    assert "judged_on_spark" not in pandas.record.search and "min_levels" not in spark.record.search
    assert judged["minimal_nodes"] and all(any(v > 0 for v in node.values()) for node in judged["minimal_nodes"])
    assert judged["spark_counts"] == judged["nodes_over_budget"] + len(judged["minimal_nodes"])
    assert judged["rows"] == pandas.record.rows_in


def test_a_deeper_walk_has_several_minimal_nodes(spark_engine, tmp_path):
    """k=10: the driver holds as many table rows as the class bound (29 of 207 rows), the walk
    climbs several layers and searches more than one sub-lattice, and still chooses the pandas
    engine's node."""
    spec = load_spec(write_release(tmp_path, anonymization={"method": "global", "k": 10, "max_suppression": 0.05,
                                                            "utility": "entropy"},
                                   policy={"thresholds": {"k": 10}}))
    pandas, spark, published = both(spark_engine, spec)
    assert_same(pandas, spark, published)
    judged = spark.record.search["judged_on_spark"]
    assert len(judged["minimal_nodes"]) >= 2 and judged["nodes_over_budget"] >= 2


def test_a_node_over_the_budget_within_the_bound_is_refused_naming_its_sizes(spark_engine, tmp_path):
    """k=10, 5 %: 29 classes at most (10 + 197 // 10); a driver holding 12 rows of a table leaves
    a node over the budget with fewer classes than that."""
    spec = load_spec(write_release(tmp_path, anonymization={"method": "global", "k": 10, "max_suppression": 0.05},
                                   policy={"thresholds": {"k": 10}}))
    pseudo = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, "2024"), open_keystore(), partition="2024")
    table, width, bound = bottom_of(spark_engine, spec, pseudo)
    assert bound == 29 and pseudo.df.count() == 207
    spark_engine.max_driver_cells = 12 * width
    with pytest.raises(DriverLimit) as caught:
        spark_engine.anonymize(spec, pseudo)
    message = str(caught.value)
    assert "\n" not in message
    assert f"has {table:,} rows x {width} columns = {table * width:,} cells" in message  # the bottom
    assert ("not more than the 29 a node meeting the policy can have (207 rows, k=10, suppression budget "
            "10 rows)") in message
    assert "judged on Spark, the node (" in message
    assert "raise max_driver_cells to at least" in message and "anonymization.min_levels" in message


KEYS = st.sampled_from(PARTITION_KEYS)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(12, 40), seed=st.integers(0, 10**6), k=st.integers(2, 4),
       keys=st.lists(KEYS, min_size=1, max_size=3, unique=True),
       budget=st.sampled_from([0.0, 0.1, 0.3]), utility=st.sampled_from(["entropy", "loss", "discernibility"]))
def test_tiny_tables_alike(spark_engine, tmp_path_factory, n, seed, k, keys, budget, utility):
    """Nulls, empty strings, int and float partition keys: the walk's node is the search's."""
    data = tiny_discharges(n, seed, keys)
    spec = load_spec(write_release(tmp_path_factory.mktemp("tiny"), data=data, columns=TINY_COLUMNS,
                                   anonymization={"method": "global", "k": k, "max_suppression": budget,
                                                  "utility": utility},
                                   policy={"thresholds": {"k": k}}))
    try:
        pandas = None
        pandas, spark, published = both(spark_engine, spec)
    except DriverLimit:
        raise
    except Exception as exc:  # a policy no node reaches: both engines refuse it alike
        if pandas is not None:
            raise
        with pytest.raises(type(exc)):
            keystore = open_keystore()
            pseudo = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, "2024"), keystore, partition="2024")
            table, width, bound = bottom_of(spark_engine, spec, pseudo)
            spark_engine.max_driver_cells = min(bound, table - 1) * width
            spark_engine.anonymize(spec, pseudo)
        return
    assert_same(pandas, spark, published)


def test_every_node_over_the_budget_and_the_bound_has_no_solution_on_both_engines(spark_engine, tmp_path):
    """Each row its own unit (a partition key): every node, the top's too, has 30 classes, more
    than the 15 of k=2 over 30 rows, so no generalization meets k: the step finds no solution as
    the pandas engine does, and both publish no row."""
    from anon_dagster.anonymize.outcome import NoSolution
    from anon_dagster.engine.spark_recoding import anonymize_global

    data = tiny_discharges(30, 7, PARTITION_KEYS[:2])
    data["unit"] = [float(i) for i in range(30)]
    spec = load_spec(write_release(tmp_path, data=data, columns=TINY_COLUMNS,
                                   anonymization={"method": "global", "k": 2}, policy={"thresholds": {"k": 2}}))
    pandas = pipeline.anonymize(spec, pipeline.pseudonymize(spec, pipeline.ingest(spec, "2024").data,
                                                            open_keystore(), partition="2024").data)
    pseudo = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, "2024"), open_keystore(), partition="2024")
    table, width, bound = bottom_of(spark_engine, spec, pseudo)
    assert bound == 15 and table == 30
    spark_engine.max_driver_cells = bound * width
    with pytest.raises(NoSolution, match=r"every node, the top's included, has more than 15 classes") as caught:
        anonymize_global(spark_engine, spec, pseudo, None)
    assert "\n" not in str(caught.value)
    assert caught.value.details["judged_on_spark"]["minimal_nodes"] == []
    spark = spark_engine.anonymize(spec, pseudo)
    assert spark.record.levels == pandas.record.levels is None
    assert spark.suppressed == pandas.suppressed == 30 and spark.record.rows_out == pandas.record.rows_out == 0
