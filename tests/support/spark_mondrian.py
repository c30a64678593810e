"""Mondrian run on both engines and compared (the Spark Mondrian tests')."""

from __future__ import annotations

import pandas as pd

from anon_dagster.engine.spark_engine import published_columns
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import pipeline
from anon_dagster.release.gate import publishable_view
from anon_dagster.spec import load_spec
from tests.support.spark_releases import COLUMNS, published_rows, write_release


def both(spark_engine, spec, partition: str = "2024", relax: bool = True):
    """The release anonymized by each engine from the same keys: (pandas' result, Spark's, Spark's
    published columns read to pandas)."""
    keystore = open_keystore()
    ingested = pipeline.ingest(spec, partition)
    pandas = pipeline.anonymize(spec, pipeline.pseudonymize(spec, ingested.data, keystore, partition=partition).data,
                                relax=relax)
    pseudo = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, partition), keystore, partition=partition)
    spark = spark_engine.anonymize(spec, pseudo, relax=relax)
    published = spark.df.select(*[f"`{c}`" for c in published_columns(spark.df)]).toArrow().to_pandas()
    return pandas, spark, published


def assert_same(pandas, spark, published) -> None:
    """Equal labels, record and suppression (the record's hashes and timing aside)."""
    assert spark.record.mondrian == pandas.record.mondrian
    assert spark.record.utility == pandas.record.utility
    assert spark.record.classes == pandas.record.classes
    assert spark.record.suppression == pandas.record.suppression
    assert (spark.record.rows_in, spark.record.rows_out) == (pandas.record.rows_in, pandas.record.rows_out)
    assert spark.record.policy_unreachable == pandas.record.policy_unreachable
    assert spark.suppressed == pandas.suppressed
    assert published_rows(published) == published_rows(publishable_view(pandas.data))
    gen = pandas.record.quasi_identifiers
    for c in gen:
        if c in spark.categories:
            assert spark.categories[c] == [str(v) for v in pandas.data[c].cat.categories]


CASES = {
    "k within partition keys": ({"k": 4, "max_suppression": 0.05}, {"k": 4}, COLUMNS),
    "l and t against the whole table": ({"k": 3, "max_suppression": 0.1},
                                        {"k": 3, "l_distinct": 2, "t_closeness": 0.3}, COLUMNS),
    "prosecutor_avg raises the part size": ({"k": 2, "max_suppression": 0.05}, {"k": 2, "prosecutor_avg": 0.15},
                                            COLUMNS),
    "no partition keys (on the driver)": ({"k": 5}, {"k": 5, "l_distinct": 2},
                                          {**COLUMNS, "region": {"role": "quasi"}}),
}


def adult_by_sex(tmp_path, adult_dir):
    """An Adult release of 3,000 rows by sex (the partition key): age numeric, education and
    marital status categorical QIs, occupation sensitive; Mondrian at k=5 with l and t."""
    adult = pd.read_csv(adult_dir / "adult.csv", sep=";", skipinitialspace=True).head(3000)
    data = pd.DataFrame({
        "pid": [f"P{i}" for i in range(len(adult))],
        "age": pd.to_numeric(adult["age"], errors="coerce"),
        "education": adult["education"].astype(str),
        "marital": adult["marital-status"].astype(str),
        "sex": adult["sex"].astype(str),
        "occupation": adult["occupation"].astype(str),
        "admitted": pd.Timestamp("2024-06-01"),
    })
    columns = {
        "pid": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research", "scope": "row"}},
        "age": {"role": "quasi"}, "education": {"role": "quasi"}, "marital": {"role": "quasi"},
        "sex": {"role": "quasi", "partition_key": True}, "occupation": {"role": "sensitive"},
        "admitted": {"role": "insensitive"},
    }
    return load_spec(write_release(tmp_path, data=data, columns=columns,
                                   anonymization={"method": "mondrian", "k": 5, "max_suppression": 0.02},
                                   policy={"thresholds": {"k": 5, "l_distinct": 2, "t_closeness": 0.4}}))
