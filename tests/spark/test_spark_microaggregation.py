"""MDAV microaggregation on Spark: each block of equal partition keys and categorical QIs runs the
project's MDAV on an executor (its rows in source order), one block on the driver, l and t judged
on the driver. Same published rows, record and gate outcome as the pandas engine."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.engine.spark_engine import SparkEngine, published_columns
from anon_dagster.engine.spark_frames import DriverLimit
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import pipeline
from anon_dagster.release.gate import publishable_view
from anon_dagster.spec import load_spec
from tests.support.spark_releases import (
    COLUMNS,
    check_json,
    published_rows,
    without_id,
    write_release,
)

pytestmark = pytest.mark.usefixtures("master_key")

RECORD = ("utility", "classes", "suppression", "microaggregation", "rows_in", "rows_out", "method")


def run_pandas(spec, partition: str):
    keystore = open_keystore()
    ingested = pipeline.ingest(spec, partition)
    return pipeline.anonymize(spec, pipeline.pseudonymize(spec, ingested.data, keystore, partition=partition).data)


def run_spark(engine, spec, partition: str):
    pseudo = engine.pseudonymize(spec, engine.ingest(spec, partition), open_keystore(), partition=partition)
    spark = engine.anonymize(spec, pseudo)
    return spark, spark.df.select(*[f"`{c}`" for c in published_columns(spark.df)]).toArrow().to_pandas()


def assert_same(pandas, spark, published) -> None:
    """Equal rows, record (its hashes and timing aside) and suppression."""
    for name in RECORD:
        assert getattr(spark.record, name) == getattr(pandas.record, name), name
    assert spark.suppressed == pandas.suppressed
    assert published_rows(published) == published_rows(publishable_view(pandas.data))


def hand_table() -> pd.DataFrame:
    """North: ages 20, 22, 40, 44 (k=2: two groups, {40, 44} around the age farthest from the
    mean 31.5, then {20, 22}); South: 30, 31, 50 (fewer than 2k rows: one group, mean 37)."""
    ages = [20, 22, 40, 44, 30, 31, 50]
    return pd.DataFrame({
        "pid": [f"P{i}" for i in range(7)], "age": ages,
        "region": ["North"] * 4 + ["South"] * 3,
        "diagnosis": ["A", "B", "A", "B", "A", "B", "C"], "admitted": pd.Timestamp("2024-03-01"),
    })


HAND_COLUMNS = {"pid": COLUMNS["pid"], "age": COLUMNS["age"], "region": COLUMNS["region"],
                "diagnosis": {"role": "sensitive"}, "admitted": {"role": "insensitive"}}


def test_hand_computed_blocks_and_gate_outcome(spark_engine, tmp_path):
    path = write_release(tmp_path, data=hand_table(), columns=HAND_COLUMNS,
                         anonymization={"method": "microaggregation", "k": 2, "max_suppression": 0.0},
                         policy={"thresholds": {"k": 2}})
    spec = load_spec(path)
    pandas = run_pandas(spec, "2024")
    spark, published = run_spark(spark_engine, spec, "2024")
    assert sorted(published["age"].tolist()) == [21, 21, 37, 37, 37, 42, 42]
    assert published["age"].dtype == np.int64  # integer means rounded back, as the pandas engine does
    assert spark.record.microaggregation.groups == 3
    assert spark.record.microaggregation.blocks_by == ["region"]
    assert_same(pandas, spark, published)
    code_p, out_p = check_json(path, "--partition", "2024")
    code_s, out_s = check_json(path, "--partition", "2024", "--engine", "spark")
    assert without_id(out_s) == without_id(out_p) and code_s == code_p


def test_one_block_over_the_driver_budget_is_refused(spark, tmp_path):
    """Twenty rows of three ages: the distinct values fit a budget of 12 cells, the block's 40 do not."""
    data = pd.concat([hand_table().drop(columns="region").iloc[:4]] * 5, ignore_index=True)
    data["age"] = [20, 30, 40, 40] * 5
    spec = load_spec(write_release(tmp_path, data=data,
                                   columns={c: v for c, v in HAND_COLUMNS.items() if c != "region"},
                                   anonymization={"method": "microaggregation", "k": 2}))
    engine = SparkEngine(spark, scratch_dir=tmp_path / "scratch", max_driver_cells=12)
    try:
        with pytest.raises(DriverLimit, match=r"runs MDAV on the driver: the table has 20 rows x 2 columns = 40 "
                                              r"cells.*declare partition keys or a categorical quasi-identifier"):
            run_spark(engine, spec, "2024")
    finally:
        engine.close()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(6, 30), seed=st.integers(0, 10**6), k=st.integers(2, 3),
       blocks=st.sampled_from(["none", "key", "key and category"]), l_div=st.sampled_from([None, 2]),
       t=st.sampled_from([None, 0.5]), avg=st.sampled_from([None, 0.4]), budget=st.sampled_from([0.0, 0.2]))
def test_tiny_tables_alike(spark_engine, tmp_path_factory, n, seed, k, blocks, l_div, t, avg, budget):
    """Nulls and empty strings in a categorical QI, categories no row uses, float and integer
    numeric QIs with ties: the same rows, record and gate outcome, or the same refusal."""
    rng = np.random.default_rng(seed)
    zips = pd.Categorical(rng.choice(["28001", "28002", ""], n), categories=["28001", "28002", "", "99999"])
    data = pd.DataFrame({
        "pid": [f"P{i}" for i in range(n)], "age": rng.choice([20, 25, 31, 40, 52], n),
        "stay": rng.choice([1.5, 2.0, 7.25], n), "zip": zips.astype(object),
        "unit": rng.choice(["a", "b"], n), "diagnosis": rng.choice(["A", "B", "C"], n),
        "admitted": pd.Timestamp("2024-05-01"),
    })
    data.loc[rng.random(n) < 0.15, "zip"] = None
    columns = {"pid": COLUMNS["pid"], "age": COLUMNS["age"],
               "stay": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [5, 10]}},
               "diagnosis": {"role": "sensitive"}, "admitted": {"role": "insensitive"},
               "zip": {"role": "quasi"} if blocks == "key and category" else {"role": "insensitive"},
               "unit": ({"role": "quasi", "partition_key": True} if blocks != "none" else {"role": "insensitive"})}
    thresholds = {"k": k, **({"l_distinct": l_div} if l_div else {}), **({"t_closeness": t} if t else {}),
                  **({"prosecutor_avg": avg} if avg else {})}
    path = write_release(tmp_path_factory.mktemp("tiny"), data=data, columns=columns,
                         anonymization={"method": "microaggregation", "k": k, "max_suppression": budget},
                         policy={"thresholds": thresholds})
    spec = load_spec(path)
    try:
        pandas = run_pandas(spec, "2024")
    except Exception as exc:  # a policy MDAV does not reach: both engines refuse it alike
        with pytest.raises(type(exc)) as got:
            run_spark(spark_engine, spec, "2024")
        assert str(got.value) == str(exc)
        return
    spark, published = run_spark(spark_engine, spec, "2024")
    assert_same(pandas, spark, published)
    code_p, out_p = check_json(path, "--partition", "2024")
    code_s, out_s = check_json(path, "--partition", "2024", "--engine", "spark")
    assert without_id(out_s) == without_id(out_p) and code_s == code_p
