"""Risk figures from a weighted frequency table equal ``measure_risk`` on the rows, bit for bit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster.errors import DataError
from anon_dagster.hierarchies import MISSING_LABEL, TableHierarchy
from anon_dagster.risk import measure_risk, utility_query_error
from anon_dagster.risk.frequencies import (
    frequency_table,
    measure_frequencies,
    query_error_frequencies,
)
from tests.support.frames import QIS, SCORE_ORDER, SENSITIVE, tiny_frames

OPTIONS = {
    "sensitive_kind": {"diagnosis": "nominal", "score": "ordinal"},
    "sensitive_order": {"score": SCORE_ORDER},
    "recursive_c": 2.0,
    "risk_threshold": 0.34,
}


def _frequencies(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    # shuffled: an engine returns the combinations in no particular order
    freq = frequency_table(df, columns, first_row="first")
    return freq.sample(frac=1.0, random_state=len(freq)).reset_index(drop=True)


def _categories(df: pd.DataFrame) -> dict[str, list[object]]:
    return {c: list(df[c].dtype.categories) for c in df.columns if isinstance(df[c].dtype, pd.CategoricalDtype)}


@settings(max_examples=150)
@given(df=tiny_frames(), fraction=st.sampled_from([None, 0.1, 1.0]))
def test_every_figure_equals_measure_risk(df, fraction):
    expected = measure_risk(df, QIS, SENSITIVE, sampling_fraction=fraction, **OPTIONS).to_dict()
    freq = _frequencies(df, QIS + SENSITIVE)
    got = measure_frequencies(freq, QIS, SENSITIVE, sampling_fraction=fraction, first_row="first",
                              categories=_categories(df), **OPTIONS).to_dict()
    assert got == expected


@settings(max_examples=60)
@given(df=tiny_frames())
def test_one_sensitive_attribute_with_a_hierarchy(df):
    rows = {"flu": ["resp", "*"], "hiv": ["infect", "*"], "": ["other", "*"], MISSING_LABEL: ["other", "*"]}
    tree = TableHierarchy(column="diagnosis", rows=rows, n=3)
    options = {"sensitive_hierarchy": {"diagnosis": tree}}
    expected = measure_risk(df, QIS[:2], ["diagnosis"], **options).to_dict()
    got = measure_frequencies(_frequencies(df, QIS[:2] + ["diagnosis"]), QIS[:2], ["diagnosis"],
                              first_row="first", **options).to_dict()
    assert got == expected


@settings(max_examples=60)
@given(df=tiny_frames(min_rows=2))
def test_against_a_population(df):
    qis = ["age", "sex"]
    population = pd.concat([df[qis]] * 3, ignore_index=True)
    expected = measure_risk(df, qis, ["diagnosis"], population=population).to_dict()
    got = measure_frequencies(_frequencies(df, qis + ["diagnosis"]), qis, ["diagnosis"], population=population,
                              first_row="first").to_dict()
    assert got == expected
    counted = frequency_table(population, qis, counts="people")
    expected = measure_risk(df, qis, population=counted, count_column="people", population_qis=["sex"]).to_dict()
    got = measure_frequencies(_frequencies(df, qis), qis, population=counted, count_column="people",
                              population_qis=["sex"], first_row="first").to_dict()
    assert got == expected


def test_without_first_rows_only_the_order_of_classes_can_differ():
    df = pd.DataFrame({"a": [1, 2, 2, 3, 3, 3, 1], "s": list("xyxyzzx")})
    expected = measure_risk(df, ["a"], ["s"], sampling_fraction=0.3).to_dict()
    got = measure_frequencies(frequency_table(df, ["a", "s"]).iloc[::-1], ["a"], ["s"],
                              sampling_fraction=0.3).to_dict()
    for key in ("prosecutor_avg_per_class", "journalist_avg", "marketer"):
        assert got.pop(key) == pytest.approx(expected.pop(key), rel=1e-15)
    assert got == expected


@settings(max_examples=80)
@given(df=tiny_frames(), published=st.lists(st.booleans(), min_size=14, max_size=14))
def test_query_error_equals_the_rows(df, published):
    anonymized = df[np.array(published[:len(df)])]
    original = df.assign(grade=df["grade"].astype(object))
    if len(anonymized) == 0:
        anonymized = df.iloc[:1]
    expected = utility_query_error(original, anonymized, ["sex", "age"], "diagnosis")
    got = query_error_frequencies(frequency_table(original, ["sex", "age", "diagnosis"]),
                                  frequency_table(anonymized, ["sex", "age", "diagnosis"]), ["sex", "age"], "diagnosis")
    assert got.max_error_points == expected.max_error_points
    columns = ["count_original", "rows_original", "count_anonymized", "rows_anonymized", "error_points"]
    key = lambda t: sorted(map(tuple, t[columns].to_numpy().tolist()))  # noqa: E731
    assert key(got.table) == key(expected.table)


def test_frequency_tables_are_checked():
    freq = pd.DataFrame({"a": [1, 2], "count": [2, 0]})
    with pytest.raises(DataError, match="whole numbers >= 1; row 1"):
        measure_frequencies(freq, ["a"])
    with pytest.raises(DataError, match="no count column 'n'"):
        measure_frequencies(freq, ["a"], counts="n")
    with pytest.raises(DataError, match="the table is empty"):
        measure_frequencies(freq.iloc[0:0], ["a"])
    with pytest.raises(DataError, match="persons cannot be measured from a frequency table"):
        measure_frequencies(freq.assign(count=1), ["a"], persons=pd.Series([1, 2]))
    with pytest.raises(DataError, match="quasi-identifier 'b' is not a column"):
        measure_frequencies(freq.assign(count=1), ["b"])
