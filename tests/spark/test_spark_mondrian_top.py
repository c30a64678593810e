"""Mondrian's first depths on Spark for parts over ``max_worker_cells``: the labels, record
(ranges, boxes, cut tree, figures) and suppression of the pandas engine's one run, whichever
depth the executors take over at, including when no node ever fits a worker (every cut on
Spark) and without partition keys when the table is over the driver's budget."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.engine import spark_mondrian_top
from anon_dagster.spec import load_spec
from tests.support.spark_mondrian import CASES, adult_by_sex, assert_same, both
from tests.support.spark_releases import (
    PARTITION_KEYS,
    TINY_COLUMNS,
    tiny_discharges,
    write_release,
)

pytestmark = pytest.mark.usefixtures("master_key")


@contextmanager
def budgets(engine, *, worker: int, driver: int | None = None):
    """The engine's budgets for one run, and what its top cuts made: per call, the depths cut on
    Spark per part and the units handed to the executors."""
    made: list[tuple[dict[int, int], int]] = []
    real = spark_mondrian_top.top_cuts

    def spy(*args, **kwargs):
        top = real(*args, **kwargs)
        made.append(({p: len(t.tree_dim) for p, t in top.trees.items()},
                     sum(len(units) for units in top.frontier.values())))
        return top

    saved = engine.max_worker_cells, engine.max_driver_cells
    engine.max_worker_cells = worker
    engine.max_driver_cells = driver if driver is not None else saved[1]
    spark_mondrian_top.top_cuts = spy
    try:
        yield made
    finally:
        spark_mondrian_top.top_cuts = real
        engine.max_worker_cells, engine.max_driver_cells = saved


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("worker", [1, 250])
def test_top_depths_on_spark_give_the_one_run(spark_engine, tmp_path, case, worker):
    anonymization, thresholds, columns = CASES[case]
    spec = load_spec(write_release(tmp_path, columns=columns, anonymization={"method": "mondrian", **anonymization},
                                   policy={"thresholds": thresholds}))
    # without partition keys: the table's frequency table over the driver's budget, so the
    # table is cut as one part on the executors, not on the driver
    driver = 1000 if "no partition keys" in case else None
    with budgets(spark_engine, worker=worker, driver=driver) as made:
        pandas, spark, published = both(spark_engine, spec)
    assert pandas.record.mondrian.classes > 5
    assert_same(pandas, spark, published)
    depths, shipped = made[-1]
    assert depths and min(depths.values()) >= 1  # every large part cut on Spark at least once
    if worker == 1:  # no node fits: every depth on Spark, nothing handed over
        assert shipped == 0
    else:  # the first depths on Spark, the rest on the executors
        assert shipped > 0


def test_parts_within_the_budget_are_never_cut_on_spark(spark_engine, tmp_path):
    anonymization, thresholds, columns = CASES["k within partition keys"]
    spec = load_spec(write_release(tmp_path, columns=columns, anonymization={"method": "mondrian", **anonymization},
                                   policy={"thresholds": thresholds}))
    with budgets(spark_engine, worker=10**9) as made:
        pandas, spark, published = both(spark_engine, spec)
    assert_same(pandas, spark, published)
    assert made == []


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(12, 60), seed=st.integers(0, 10**6), k=st.integers(2, 4),
       keys=st.lists(st.sampled_from(PARTITION_KEYS), min_size=1, max_size=3, unique=True),
       t=st.sampled_from([None, 0.45]), worker=st.sampled_from([1, 20, 50]))
def test_tiny_tables_alike(spark_engine, tmp_path_factory, n, seed, k, keys, t, worker):
    """Missing ages and sexes (a node split first between missing and present), empty strings,
    int and float partition keys, categories no row uses, parts of any size."""
    thresholds = {"k": k, **({"t_closeness": t} if t else {})}
    spec = load_spec(write_release(tmp_path_factory.mktemp("tiny"), data=tiny_discharges(n, seed, keys),
                                   columns=TINY_COLUMNS,
                                   anonymization={"method": "mondrian", "k": k, "max_suppression": 0.5},
                                   policy={"thresholds": thresholds}))
    with budgets(spark_engine, worker=worker):
        pandas, spark, published = both(spark_engine, spec)
    assert_same(pandas, spark, published)


def test_adult_by_sex_with_top_depths_on_spark(spark_engine, tmp_path, adult_dir):
    """Hierarchical QIs (education, marital status) and a numeric one, l and t, 3,000 rows."""
    spec = adult_by_sex(tmp_path, adult_dir)
    with budgets(spark_engine, worker=2000) as made:
        pandas, spark, published = both(spark_engine, spec)
    assert pandas.record.mondrian.classes > 50
    assert_same(pandas, spark, published)
    depths, shipped = made[-1]
    assert set(depths) == {0, 1} and min(depths.values()) >= 2 and shipped > 4
