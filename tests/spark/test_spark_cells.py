"""Cell suppression on Spark: the pandas engine's local suppression decided on the driver from the
bottom frequency table, applied by Spark (a broadcast of the failing combinations and the columns
each blanks). Same published rows, record and gate outcome as the pandas engine."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.engine.spark_engine import published_columns
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import pipeline
from anon_dagster.release.gate import publishable_view
from anon_dagster.spec import load_spec
from tests.support.spark_releases import (
    PARTITION_KEYS,
    TINY_COLUMNS,
    check_json,
    published_rows,
    tiny_discharges,
    without_id,
    write_release,
)

pytestmark = pytest.mark.usefixtures("master_key")

def both(spark_engine, spec, partition: str = "2024"):
    keystore = open_keystore()
    ingested = pipeline.ingest(spec, partition)
    pandas = pipeline.anonymize(spec, pipeline.pseudonymize(spec, ingested.data, keystore, partition=partition).data)
    pseudo = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, partition), keystore, partition=partition)
    spark = spark_engine.anonymize(spec, pseudo)
    published = spark.df.select(*[f"`{c}`" for c in published_columns(spark.df)]).toArrow().to_pandas()
    return pandas, spark, published


def assert_same(pandas, spark, published) -> None:
    """Equal rows, record (its hashes and timing aside), suppression and categories."""
    for name in ("levels", "utility", "classes", "suppression", "cell_suppression", "rows_in", "rows_out"):
        assert getattr(spark.record, name) == getattr(pandas.record, name), name
    assert (spark.record.search is None) == (pandas.record.search is None)  # none: every row suppressed
    assert (spark.record.search or {}).get("levels") == (pandas.record.search or {}).get("levels")
    assert spark.suppressed == pandas.suppressed
    assert published_rows(published) == published_rows(publishable_view(pandas.data))
    for c, labels in spark.categories.items():
        if isinstance(pandas.data[c].dtype, pd.CategoricalDtype):
            assert labels == [str(v) for v in pandas.data[c].cat.categories]


CASES = {
    "k": ({"k": 5, "max_suppression": 0.1}, {"k": 5}),
    "k, no row suppressed whole": ({"k": 8, "max_suppression": 0.15}, {"k": 8}),
    "l, a numeric column at level 0": ({"k": 3, "max_suppression": 0.1}, {"k": 3, "l_distinct": 2}),
    "l and t": ({"k": 3, "max_suppression": 0.1}, {"k": 3, "l_distinct": 2, "t_closeness": 0.4}),
    "average risk": ({"k": 2, "max_suppression": 0.1}, {"k": 2, "prosecutor_avg": 0.3}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_same_cells_rows_and_record(spark_engine, tmp_path, case):
    anonymization, thresholds = CASES[case]
    spec = load_spec(write_release(tmp_path, anonymization={"method": "global", "suppression": "cells",
                                                            **anonymization},
                                   policy={"thresholds": thresholds},
                                   utility_queries=[{"name": "by_region", "group_by": ["region"],
                                                     "target": "diagnosis"}]))
    pandas, spark, published = both(spark_engine, spec)
    assert_same(pandas, spark, published)


def test_cells_are_suppressed_and_the_gate_outcome_is_the_pandas_engines(spark_engine, tmp_path):
    path = write_release(tmp_path, anonymization={"method": "global", "suppression": "cells", "k": 3,
                                                  "max_suppression": 0.1},
                         policy={"thresholds": {"k": 3, "l_distinct": 2}})
    pandas, spark, published = both(spark_engine, load_spec(path))
    assert pandas.record.cell_suppression is not None and pandas.record.suppression.cells_total > 0
    assert spark.record.suppression.cells == pandas.record.suppression.cells
    assert pandas.record.suppression.cells["age"] > 0 and pandas.record.levels["age"] == 0  # text on both
    assert int((published["age"] == "*").sum()) == pandas.record.suppression.cells["age"]
    code_p, out_p = check_json(path, "--partition", "2024")
    code_s, out_s = check_json(path, "--partition", "2024", "--engine", "spark")
    assert without_id(out_s) == without_id(out_p) and code_s == code_p


KEYS = st.sampled_from(PARTITION_KEYS)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(8, 40), seed=st.integers(0, 10**6), k=st.integers(2, 4),
       keys=st.lists(KEYS, min_size=2, max_size=3, unique=True), l_div=st.sampled_from([None, 2]),
       budget=st.sampled_from([0.0, 0.1]))
def test_tiny_tables_alike(spark_engine, tmp_path_factory, n, seed, k, keys, l_div, budget):
    """Nulls, empty strings, int and float partition keys, categories no row uses."""
    data, columns = tiny_discharges(n, seed, keys), TINY_COLUMNS
    thresholds = {"k": k, **({"l_distinct": l_div} if l_div else {})}
    spec = load_spec(write_release(tmp_path_factory.mktemp("tiny"), data=data, columns=columns,
                                   anonymization={"method": "global", "suppression": "cells", "k": k,
                                                  "max_suppression": budget},
                                   policy={"thresholds": thresholds}))
    try:
        pandas = None
        pandas, spark, published = both(spark_engine, spec)
    except Exception as exc:  # a policy no node reaches: both engines refuse it alike
        with pytest.raises(type(exc), match=None):
            keystore = open_keystore()
            pseudo = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, "2024"), keystore, partition="2024")
            spark_engine.anonymize(spec, pseudo)
        assert pandas is None
        return
    assert_same(pandas, spark, published)


def test_cell_suppression_over_the_driver_budget_is_refused_naming_its_size(spark_engine, tmp_path, monkeypatch):
    """The rows cell suppression expands on the driver count against ``max_driver_cells``: one
    cell under what they need and the step is refused with the measured size. Each row is there
    four times, so the expanded rows outgrow the frequency table, which is read first."""
    from anon_dagster.engine import spark_cells
    from anon_dagster.engine.spark_frames import DriverLimit
    from tests.support.spark_releases import discharges

    data = pd.concat([discharges()] * 4, ignore_index=True)
    spec = load_spec(write_release(tmp_path, data=data, anonymization={"method": "global", "suppression": "cells", "k": 5,
                                                            "max_suppression": 0.1},
                                   policy={"thresholds": {"k": 5}}))
    seen: list[int] = []
    real = spark_cells.expanded_rows

    def measured(freq, counts, columns, max_cells):
        seen.append(int(counts.sum()) * max(len(columns), 1))
        return real(freq, counts, columns, max_cells)

    monkeypatch.setattr(spark_cells, "expanded_rows", measured)
    keystore = open_keystore()
    pseudo = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, "2024"), keystore, partition="2024")
    spark_engine.anonymize(spec, pseudo)
    assert len(seen) == 1 and seen[0] > 0  # the case does suppress cells, within the default budget
    spark_engine.max_driver_cells = seen[0] - 1
    with pytest.raises(DriverLimit, match=rf"= {seen[0]:,} cells, more than .*max_driver_cells={seen[0] - 1:,}"):
        spark_engine.anonymize(spec, pseudo)
    spark_engine.max_driver_cells = seen[0]
    assert spark_engine.anonymize(spec, pseudo).record.suppression.cells_total > 0
