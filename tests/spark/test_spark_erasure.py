"""Erasure on Spark: the rows of a person on the release's suppression list dropped on the
executors (linkage pseudonym, anti-join with the broadcast list), exactly the rows the pandas
pipeline drops."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest

from anon_dagster.engine.spark_engine import published_columns
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import gate, pipeline
from anon_dagster.release.governance.suppression import add_suppressed, person_pseudonyms
from anon_dagster.spec import load_spec
from tests.support.spark_releases import COLUMNS, discharges, write_release

pytestmark = pytest.mark.usefixtures("master_key")

KEPT = ["age", "sex", "zip", "region", "admitted", "diagnosis", "severity", "stay"]


def rows(df: pd.DataFrame) -> Counter:
    return Counter(tuple(None if pd.isna(v) else v for v in r) for r in df[KEPT].astype(object).itertuples(index=False))


def release(tmp_path, *, composition: bool):
    """A release of the discharges whose 2024 rows include the same person spelled with spaces
    (and, without composition, a row without a person and a blank one); person column ``pid`` (the only identifier, or
    ``composition.person``)."""
    data = discharges(200, seed=3)
    in_2024 = data.index[data["admitted"] >= pd.Timestamp("2024-01-01")]
    erased = [str(data.at[in_2024[0], "pid"]), str(data.at[in_2024[1], "pid"])]
    data.at[in_2024[2], "pid"] = f"  {erased[0]} "  # the same person once trimmed
    if not composition:  # (a composed release refuses a row without a person, on both engines)
        data.at[in_2024[3], "pid"] = None
        data.at[in_2024[4], "pid"] = "   "
    columns = {c: v for c, v in COLUMNS.items() if c != "name"}
    sections = {}
    if composition:
        columns = {**columns, "name": {"role": "identifier"}}
        sections["composition"] = {"population": "tiny_people", "person": "pid", "min_k": 1}
    else:
        data = data.drop(columns="name")
    spec = load_spec(write_release(tmp_path, data=data, columns=columns,
                                   anonymization={"method": "global", "k": 2}, policy={"thresholds": {"k": 2}},
                                   **sections))
    return spec, data, erased


@pytest.mark.parametrize("composition", [False, True])
def test_both_engines_drop_exactly_the_erased_persons_rows(spark_engine, tmp_path, composition):
    spec, data, erased = release(tmp_path, composition=composition)
    keystore = open_keystore()
    add_suppressed(keystore, spec.release, {str(p) for p in person_pseudonyms(spec, pd.Series(erased), keystore)})
    ingested = pipeline.ingest(spec, "2024")
    pandas = pipeline.pseudonymize(spec, ingested.data, keystore, partition="2024", linkage=composition).data
    spark = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, "2024"), keystore, partition="2024",
                                      linkage=composition).df
    got = spark.select(*[f"`{c}`" for c in published_columns(spark)]).toArrow().to_pandas()
    year = data[data["admitted"] >= pd.Timestamp("2024-01-01")]
    gone = year["pid"].astype(str).str.strip().isin(erased)
    assert int(gone.sum()) >= 3  # two persons, one of them spelled twice
    assert len(got) == len(pandas) == len(year) - int(gone.sum())
    assert rows(got) == rows(pandas) == rows(year[~gone])
    if composition:
        listed = set(person_pseudonyms(spec, pd.Series(erased), keystore))
        links = {r[0] for r in spark.select(gate.LINKAGE_COLUMN).collect()}
        assert links == set(pandas[gate.LINKAGE_COLUMN]) and not links & listed


def test_nobody_erased_leaves_the_table_as_it_is(spark_engine, tmp_path):
    spec, data, _ = release(tmp_path, composition=False)
    spark = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, "2024"), open_keystore(), partition="2024").df
    assert spark.count() == int((data["admitted"] >= pd.Timestamp("2024-01-01")).sum())
