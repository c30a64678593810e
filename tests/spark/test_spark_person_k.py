"""k per person on Spark: a published pseudonym of scope ``release`` links a person's rows, and
the Spark engine judges k and the risk figures per person from the frequency table of (pseudonym,
QIs, ...), as the pandas engine judges them from the rows. Same figures, same chosen node, same
record and gate outcome."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.engine.spark_anonymize import check_supported
from anon_dagster.engine.spark_engine import published_columns
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import gate, pipeline
from anon_dagster.release.gate import publishable_view
from anon_dagster.spec import load_spec
from tests.support.spark_releases import COLUMNS, check_json, without_id, write_release

pytestmark = pytest.mark.usefixtures("master_key")

LINKED = {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research", "scope": "release"}}


def columns(**extra: dict) -> dict:
    return {"pid": LINKED, "age": COLUMNS["age"], "sex": {"role": "quasi"}, "diagnosis": {"role": "sensitive"},
            "admitted": {"role": "insensitive"}, **extra}


def test_a_person_with_rows_in_two_classes(spark_engine, tmp_path):
    # classes F (3 rows) and M (3 rows): k = 3 per row. Keys: P1 {F, M}, P2 {F}, P3 {M},
    # P4 {F, M}: person classes {P1, P4}, {P2}, {P3}, so k = 1 per person, 3 person classes of
    # 4 persons, half of them alone; l per person: P2's class holds one value (A)
    data = pd.DataFrame({"pid": ["P1", "P1", "P2", "P3", "P4", "P4"], "age": [30.0] * 6,
                         "sex": ["F", "M", "F", "M", "F", "M"], "diagnosis": ["A", "B", "A", "B", "B", "A"],
                         "admitted": pd.Timestamp("2024-03-01")})
    spec = load_spec(write_release(tmp_path, data=data, columns=columns(),
                                   anonymization={"method": "global", "k": 2}, policy={"thresholds": {"k": 2}}))
    measured = spark_engine.measure_release(spec, partition="2024", generalized=True)
    assert measured.figures["k"] == 3
    person = measured.measures.extras["person"]
    assert person["persons"] == 4 and person["person_classes"] == 3 and person["k"] == 1
    assert person["uniques_fraction"] == 0.5 and person["prosecutor_avg"] == 0.75
    assert person["l_distinct"] == 1
    expected = gate.risk_measures(spec, data.drop(columns=["admitted"])).extras["person"]
    assert person == expected


#: the methods after which the persons below k are removed from the published rows (the person
#: pass); global recoding with row suppression targets k per person in its search
PERSON_PASS = (("mondrian", "rows"), ("none", "rows"), ("microaggregation", "rows"), ("global", "cells"))


def test_every_method_runs_with_linked_rows(tmp_path):
    for method, suppression in (*PERSON_PASS, ("global", "rows")):
        check_supported(load_spec(write_release(tmp_path, columns=columns(), policy={"thresholds": {"k": 2}},
                                                anonymization={"method": method, "k": 2, "suppression": suppression})))


def on_pandas(spec, partition: str = "2024"):
    keystore = open_keystore()
    ingested = pipeline.ingest(spec, partition)
    return pipeline.anonymize(spec, pipeline.pseudonymize(spec, ingested.data, keystore, partition=partition).data)


def on_spark(spark_engine, spec, partition: str = "2024"):
    pseudo = spark_engine.pseudonymize(spec, spark_engine.ingest(spec, partition), open_keystore(), partition=partition)
    return spark_engine.anonymize(spec, pseudo)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(6, 30), seed=st.integers(0, 10**6), k=st.integers(2, 3), persons=st.integers(2, 12),
       budget=st.sampled_from([0.0, 0.2, 0.5]), l_div=st.sampled_from([None, 2]))
def test_tiny_tables_alike(spark_engine, tmp_path_factory, n, seed, k, persons, budget, l_div):
    """Repeated persons, rows without a person, nulls and empty strings in the QIs."""
    rng = np.random.default_rng(seed)
    ages = rng.choice([20, 25, 31, 40, 52], n).astype(float)
    ages[rng.random(n) < 0.15] = np.nan
    pid = pd.Series([f"P{i}" for i in rng.integers(0, persons, n)], dtype=object)
    pid[rng.random(n) < 0.15] = None
    data = pd.DataFrame({"pid": pid, "age": ages, "sex": rng.choice(["F", "M", ""], n),
                         "diagnosis": rng.choice(["A", "B", "C"], n), "admitted": pd.Timestamp("2024-05-01")})
    data.loc[rng.random(n) < 0.1, "sex"] = None
    thresholds = {"k": k, **({"l_distinct": l_div} if l_div else {})}
    path = write_release(tmp_path_factory.mktemp("tiny"), data=data, columns=columns(),
                         anonymization={"method": "global", "k": k, "max_suppression": budget},
                         policy={"thresholds": thresholds})
    spec = load_spec(path)
    try:
        pandas = None
        pandas = on_pandas(spec)
        spark = on_spark(spark_engine, spec)
    except Exception as exc:  # a policy no node reaches: both engines refuse it alike
        with pytest.raises(type(exc)):
            on_spark(spark_engine, spec)
        assert pandas is None
        return
    assert spark.record.search == {**pandas.record.search, "elapsed_s": spark.record.search["elapsed_s"]}
    for name in ("levels", "utility", "classes", "suppression", "person_suppression", "rows_in", "rows_out"):
        assert getattr(spark.record, name) == getattr(pandas.record, name), name
    assert spark.suppressed == pandas.suppressed
    code_p, out_p = check_json(path, "--partition", "2024")
    code_s, out_s = check_json(path, "--partition", "2024", "--engine", "spark")
    assert without_id(out_s) == without_id(out_p) and code_s == code_p


def published_rows(frame: pd.DataFrame) -> list[tuple]:
    """The published rows as sorted tuples of text (label order and dtypes aside)."""
    return sorted(tuple("<NA>" if pd.isna(v) else str(v) for v in row) for row in frame.astype(object).itertuples(index=False))


def both_engines(spark_engine, spec):
    pandas = on_pandas(spec)
    spark = on_spark(spark_engine, spec)
    view = publishable_view(pandas.data)
    published = spark.df.select(*[f"`{c}`" for c in published_columns(spark.df)]).toArrow().to_pandas()
    assert published_rows(published[list(view.columns)]) == published_rows(view)
    for name in ("classes", "suppression", "person_suppression", "rows_in", "rows_out", "mondrian", "utility",
                 "policy_unreachable"):
        assert getattr(spark.record, name) == getattr(pandas.record, name), name
    assert spark.suppressed == pandas.suppressed
    return pandas, spark, published


def test_mondrian_removes_a_person_with_rows_in_two_classes(spark_engine, tmp_path):
    # Mondrian at k=2 cannot cut between equal ages: classes A (age 20: P1, P2, P3) and
    # B (age 40: P1, P4, P5). Keys: P1 {A, B} alone; P2, P3 {A}; P4, P5 {B}. P1 is below k per
    # person: their 2 rows are removed (budget floor(0.5 x 6) = 3), leaving classes of 2 and 2
    data = pd.DataFrame({"pid": ["P1", "P2", "P3", "P1", "P4", "P5"], "age": [20.0, 20, 20, 40, 40, 40],
                         "diagnosis": ["A", "B", "C", "A", "B", "C"], "admitted": pd.Timestamp("2024-03-01")})
    cols = {"pid": LINKED, "age": COLUMNS["age"], "diagnosis": {"role": "sensitive"},
            "admitted": {"role": "insensitive"}}
    path = write_release(tmp_path, data=data, columns=cols,
                         anonymization={"method": "mondrian", "k": 2, "max_suppression": 0.5},
                         policy={"thresholds": {"k": 2}})
    spec = load_spec(path)
    pandas, spark, published = both_engines(spark_engine, spec)
    section = spark.record.person_suppression
    assert (section.persons, section.rows, section.budget_rows, section.reached) == (1, 2, 3, True)
    assert spark.record.rows_out == 4 and spark.suppressed == 2 and spark.record.suppression.rows == 2
    assert spark.record.classes.count == 2 and spark.record.classes.k == 2
    assert sorted(published["age"].astype(str)) == ["20", "20", "40", "40"]
    assert len(set(published["pid"])) == 4  # P2..P5, P1 gone
    code_p, out_p = check_json(path, "--partition", "2024")
    code_s, out_s = check_json(path, "--partition", "2024", "--engine", "spark")
    assert without_id(out_s) == without_id(out_p) and code_s == code_p


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), k=st.integers(2, 3), persons=st.integers(3, 14),
       budget=st.sampled_from([0.0, 0.5, 1.0]), method=st.sampled_from(PERSON_PASS))
def test_person_pass_alike(spark_engine, tmp_path_factory, seed, k, persons, budget, method):
    """Mondrian, ``method: none``, microaggregation and cell suppression: persons with rows in one
    or several classes (a few profiles, so that some person classes reach k and others do not),
    rows without a person, nulls."""
    method, suppression = method
    rng = np.random.default_rng(seed)
    # MDAV needs a numeric QI without missing values
    last = 52.0 if method == "microaggregation" else np.nan
    profiles = [(20.0,), (40.0,), (20.0, 40.0), (52.0, 52.0), (20.0, last)]
    pid, ages = [], []
    for p in range(persons):
        for age in profiles[rng.integers(0, len(profiles))]:
            pid.append(f"P{p}")
            ages.append(age)
    unlinked = int(rng.integers(0, 4))
    pid += [None] * unlinked
    ages += list(rng.choice([20.0, 40.0], unlinked))
    n = len(pid)
    data = pd.DataFrame({"pid": pd.Series(pid, dtype=object), "age": ages, "diagnosis": rng.choice(["A", "B", "C"], n),
                         "admitted": pd.Timestamp("2024-05-01")})
    cols = {"pid": LINKED, "age": COLUMNS["age"], "diagnosis": {"role": "sensitive"},
            "admitted": {"role": "insensitive"}}
    path = write_release(tmp_path_factory.mktemp("pass"), data=data, columns=cols,
                         anonymization={"method": method, "k": k, "max_suppression": budget,
                                        "suppression": suppression},
                         policy={"thresholds": {"k": k}})
    spec = load_spec(path)
    try:
        pandas = None
        pandas = on_pandas(spec)
    except Exception as exc:  # a policy the method cannot meet: both engines refuse it alike
        with pytest.raises(type(exc)):
            on_spark(spark_engine, spec)
        return
    both_engines(spark_engine, spec)
    assert pandas.record.person_suppression is not None
    code_p, out_p = check_json(path, "--partition", "2024")
    code_s, out_s = check_json(path, "--partition", "2024", "--engine", "spark")
    assert without_id(out_s) == without_id(out_p) and code_s == code_p


def test_no_node_reaching_k_per_person_leaves_the_persons_to_the_person_pass(spark_engine, tmp_path):
    """Persons of 1, 2 and 3 rows: at every node their multisets of classes differ, so no node
    reaches k = 2 per person; both engines take the row-level optimum, say so in the search and
    let the person pass say what k per person would take (no budget: nothing removed)."""
    data = pd.DataFrame({"pid": ["P1", "P2", "P2", "P3", "P3", "P3"], "age": [30.0] * 6,
                         "sex": ["F", "M", "F", "M", "F", "M"], "diagnosis": ["A", "B", "A", "B", "B", "A"],
                         "admitted": pd.Timestamp("2024-03-01")})
    path = write_release(tmp_path, data=data, columns=columns(), anonymization={"method": "global", "k": 2},
                         policy={"thresholds": {"k": 2}})
    spec = load_spec(path)
    pandas, spark = on_pandas(spec), on_spark(spark_engine, spec)
    assert pandas.record.search["k_per_person"] is False and "k_per_person_closest" in pandas.record.search
    assert spark.record.search == {**pandas.record.search, "elapsed_s": spark.record.search["elapsed_s"]}
    section = pandas.record.person_suppression
    assert section is not None and section.reached is False and section.persons == 3
    for name in ("levels", "classes", "suppression", "person_suppression", "rows_out"):
        assert getattr(spark.record, name) == getattr(pandas.record, name), name
    code_p, out_p = check_json(path, "--partition", "2024")
    code_s, out_s = check_json(path, "--partition", "2024", "--engine", "spark")
    assert without_id(out_s) == without_id(out_p) and code_s == code_p == 1
