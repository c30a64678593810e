"""k-map and δ-presence: hand-computed tables, the Adult research subset, bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster.errors import DataError
from anon_dagster.risk.presence import (
    delta_presence,
    delta_presence_from_counts,
    k_map,
    match_population,
)

POPULATION = pd.DataFrame(
    {
        "age": ["20-29"] * 5 + ["30-39"] * 3 + ["40-49"] * 2 + [None] * 2,
        "sex": ["F", "F", "F", "M", "M", "F", "M", "M", "F", "F", "M", "M"],
    }
)
# Population classes: (20-29,F)=3, (20-29,M)=2, (30-39,F)=1, (30-39,M)=2, (40-49,F)=2,
# (missing,M)=2.
SAMPLE = pd.DataFrame(
    {"age": ["20-29", "20-29", "30-39", None, "20-29"], "sex": ["F", "F", "F", "M", "M"]},
    index=[10, 3, 7, 99, 5],  # a non-default index: only positions count
)


def test_match_population_by_hand():
    m = match_population(SAMPLE, POPULATION, ["age", "sex"])
    by_key = {
        (row.age if isinstance(row.age, str) else None, row.sex): (int(f), int(F))
        for row, f, F in zip(m.keys.itertuples(), m.sample_sizes, m.population_sizes, strict=True)
    }
    assert by_key == {
        ("20-29", "F"): (2, 3),
        ("30-39", "F"): (1, 1),
        (None, "M"): (1, 2),
        ("20-29", "M"): (1, 2),
    }
    # Per row, by position: 20-29/F, 20-29/F, 30-39/F, missing/M, 20-29/M.
    assert m.row_population_size.tolist() == [3, 3, 1, 2, 2]
    assert m.population_records == 12 and m.population_classes == 6


def test_k_map_by_hand():
    m = match_population(SAMPLE, POPULATION, ["age", "sex"])
    km = k_map(m.population_sizes, m.sample_sizes, k=2)
    assert km.k_map == 1
    assert km.classes == 4 and km.records == 5
    assert km.classes_below_k == 1 and km.records_below_k == 1
    assert km.satisfied is False
    assert km.population_size_histogram == {1: 1, 2: 2, 3: 1}
    assert k_map([3, 4, 7], k=3).satisfied is True
    assert json.loads(json.dumps(km.to_dict()))["k_map"] == 1


def test_frequency_table_equals_microdata():
    freq = (
        POPULATION.fillna({"age": "?"})
        .groupby(["age", "sex"]).size().rename("n").reset_index()
        .replace({"age": {"?": None}})
    )
    a = match_population(SAMPLE, POPULATION, ["age", "sex"])
    b = match_population(SAMPLE, freq, ["age", "sex"], count_column="n")
    assert a.row_population_size.tolist() == b.row_population_size.tolist()
    assert b.population_records == 12


def test_missing_class_is_an_error_naming_it():
    sample = pd.DataFrame({"age": ["50-59", "20-29"], "sex": ["F", "F"]})
    with pytest.raises(DataError, match=r"lacks sample class \(age='50-59', sex='F'\)"):
        match_population(sample, POPULATION, ["age", "sex"])
    # a missing value is named as such
    sample = pd.DataFrame({"age": [None], "sex": ["F"]})
    with pytest.raises(DataError, match=r"lacks sample class \(age=<missing>, sex='F'\)"):
        match_population(sample, POPULATION, ["age", "sex"])


def test_non_strict_counts_the_sample_as_population():
    sample = pd.DataFrame({"age": ["50-59", "30-39", "30-39"], "sex": ["F", "F", "F"]})
    m = match_population(sample, POPULATION, ["age", "sex"], strict=False)
    # (50-59,F): 0 in the population -> 1 (itself); (30-39,F): 1 in the population, 2 sampled -> 2.
    assert m.row_population_size.tolist() == [1, 2, 2]


def test_numeric_and_text_columns_are_compared_as_text():
    pop = pd.DataFrame({"zip": [28014, 28014, 28015]})
    sample = pd.DataFrame({"zip": ["28014"]})
    assert match_population(sample, pop, ["zip"]).population_sizes.tolist() == [2]
    # whole floats read as their integer label, as in measure_risk's journalist join
    floats = pd.DataFrame({"zip": [28014.0, 28014.0, 28015.0]})
    assert match_population(sample, floats, ["zip"]).population_sizes.tolist() == [2]
    d = delta_presence(floats, sample, ["zip"])
    assert sorted(d.delta.tolist()) == [0.0, 0.5]


def test_categorical_columns_with_different_categories():
    pop = pd.DataFrame({"a": pd.Categorical(["x", "y", "y", "z"])})
    sample = pd.DataFrame({"a": pd.Categorical(["y"], categories=["y", "q"])})
    assert match_population(sample, pop, ["a"]).population_sizes.tolist() == [2]


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"quasi_identifiers": ["age", "height"]}, "lacks quasi-identifier column 'height'"),
        ({"quasi_identifiers": []}, "at least one quasi-identifier"),
        ({"count_column": "n"}, "no count column 'n'"),
    ],
)
def test_bad_input(kwargs, message):
    args = {"quasi_identifiers": ["age", "sex"], **kwargs}
    with pytest.raises(DataError, match=message):
        match_population(SAMPLE, POPULATION, **args)


def test_bad_count_column():
    freq = pd.DataFrame({"a": ["x", "y"], "n": [3, -1]})
    with pytest.raises(DataError, match="row 1 has -1"):
        match_population(pd.DataFrame({"a": ["x"]}), freq, ["a"], count_column="n")
    freq = pd.DataFrame({"a": ["x", "y"], "n": [3, 1.5]})
    with pytest.raises(DataError, match="non-negative integers"):
        delta_presence(freq, pd.DataFrame({"a": ["x"]}), ["a"], count_column="n")


def test_empty_tables():
    with pytest.raises(DataError, match="sample is empty"):
        match_population(SAMPLE.iloc[:0], POPULATION, ["age", "sex"])
    with pytest.raises(DataError, match="population is empty"):
        match_population(SAMPLE, POPULATION.iloc[:0], ["age", "sex"])
    with pytest.raises(DataError, match="at least one class"):
        k_map([])


# ---------------------------------------------------------------------------------------------
# δ-presence


def test_delta_presence_by_hand():
    subset = pd.DataFrame({"age": ["20-29", "30-39", None, "20-29"], "sex": ["F", "F", "M", "M"]})
    d = delta_presence(POPULATION, subset, ["age", "sex"])
    # δ per published class: (20-29,F) 1/3, (30-39,F) 1/1, (missing,M) 1/2, (20-29,M) 1/2.
    assert d.delta_min == pytest.approx(1 / 3)
    assert d.delta_max == pytest.approx(1.0)
    assert d.classes == 6 and d.published_classes == 4
    # (30-39,M) and (40-49,F) hold no subset record: 4 people shown not to be in the subset.
    assert d.absent_classes == 2 and d.absent_records == 4
    assert sorted(d.delta.tolist()) == pytest.approx([0, 0, 1 / 3, 0.5, 0.5, 1])
    assert d.satisfies(0.3, 1.0) and not d.satisfies(0.4, 1.0) and not d.satisfies(0.3, 0.9)


def test_delta_presence_from_counts_by_hand():
    d = delta_presence_from_counts([1, 0, 2, 0], [4, 5, 2, 0])
    # The class with no people is ignored; 1/4 and 2/2 are published, 0/5 is absent.
    assert (d.delta_min, d.delta_max) == (0.25, 1.0)
    assert d.classes == 3 and d.absent_records == 5


def test_delta_presence_subset_not_in_population():
    subset = pd.DataFrame({"age": ["30-39", "30-39"], "sex": ["F", "F"]})
    with pytest.raises(DataError, match=r"lacks subset class \(age='30-39', sex='F'\): 2 subset"):
        delta_presence(POPULATION, subset, ["age", "sex"])
    with pytest.raises(DataError, match="not part of the population"):
        delta_presence_from_counts([3], [2])
    with pytest.raises(DataError, match="non-empty subset"):
        delta_presence_from_counts([0, 0], [2, 2])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["a", "b", None])), min_size=1,
                max_size=40),
       st.data())
def test_delta_presence_invariant_to_row_order(rows, data):
    population = pd.DataFrame(rows, columns=["x", "y"])
    chosen = data.draw(st.lists(st.sampled_from(range(len(rows))), min_size=1, unique=True))
    subset = population.iloc[chosen]
    perm = data.draw(st.permutations(range(len(rows))))
    a = delta_presence(population, subset, ["x", "y"])
    b = delta_presence(population.iloc[perm], subset.iloc[::-1], ["x", "y"])
    assert a.to_dict() == b.to_dict()
    assert sorted(a.delta.tolist()) == pytest.approx(sorted(b.delta.tolist()))
    assert 0 < a.delta_min <= a.delta_max <= 1


# ---------------------------------------------------------------------------------------------
# The Adult research subset


@pytest.fixture(scope="module")
def adult(adult_dir):
    population = pd.read_csv(adult_dir / "adult.csv", sep=";")
    subset = pd.read_csv(adult_dir / "adult_subset.csv", sep=";")
    return population, subset


def _pandas_counts(df, qis):
    return df.groupby(qis, dropna=False).size()


@pytest.mark.parametrize("qis", [["sex", "age", "race"], None])
def test_adult_delta_presence_matches_pandas(adult, qis):
    population, subset = adult
    qis = qis or list(population.columns)
    d = delta_presence(population, subset, qis)
    pop = _pandas_counts(population, qis)
    sub = _pandas_counts(subset, qis)
    joined = pd.concat([pop.rename("p"), sub.rename("s")], axis=1).fillna(0)
    assert (joined["s"] <= joined["p"]).all()  # the subset is part of the population
    ratios = joined["s"] / joined["p"]
    published = ratios[joined["s"] > 0]
    assert d.delta_min == pytest.approx(published.min())
    assert d.delta_max == pytest.approx(published.max())
    assert d.classes == len(joined)
    assert d.absent_records == int(joined.loc[joined["s"] == 0, "p"].sum())
    assert int(d.subset_counts.sum()) == len(subset) == 3016


def test_adult_generalized_delta_presence_and_k_map(adult, adult_dir):
    population, subset = adult
    # Generalize age with ARX's own hierarchy (level 2: 20-year bands) in both tables.
    hier = pd.read_csv(adult_dir / "adult_hierarchy_age.csv", sep=";", header=None)
    band = dict(zip(hier[0], hier[2], strict=True))
    qis = ["age", "sex", "race"]
    pop_g = population.assign(age=population["age"].map(band))
    sub_g = subset.assign(age=subset["age"].map(band))
    d = delta_presence(pop_g, sub_g, qis)
    joined = pd.concat(
        [_pandas_counts(pop_g, qis).rename("p"), _pandas_counts(sub_g, qis).rename("s")], axis=1
    ).fillna(0)
    published = (joined["s"] / joined["p"])[joined["s"] > 0]
    assert (d.delta_min, d.delta_max) == pytest.approx((published.min(), published.max()))
    # Coarser classes pull every δ towards the subset's overall share (3016 / 30162 ≈ 0.1).
    raw = delta_presence(population, subset, qis)
    assert d.delta_max <= raw.delta_max and d.published_classes < raw.published_classes

    m = match_population(sub_g, pop_g, qis)
    expected = _pandas_counts(pop_g, qis)
    keys = list(m.keys.itertuples(index=False, name=None))
    assert m.population_sizes.tolist() == [int(expected[k]) for k in keys]
    km = k_map(m.population_sizes, m.sample_sizes, k=5)
    assert km.k_map == int(min(expected[k] for k in keys))
    assert km.records == 3016


def test_adult_frequency_table_population(adult):
    population, subset = adult
    qis = ["sex", "race", "workclass"]
    freq = population.groupby(qis, dropna=False).size().rename("count").reset_index()
    a = match_population(subset, population, qis)
    b = match_population(subset, freq, qis, count_column="count")
    np.testing.assert_array_equal(a.row_population_size, b.row_population_size)
    da = delta_presence(population, subset, qis)
    db = delta_presence(freq, subset, qis, count_column="count")
    assert da.to_dict() == db.to_dict()


def test_delta_presence_table_names_each_class():
    subset = pd.DataFrame({"age": ["20-29", "30-39", None, "20-29"], "sex": ["F", "F", "M", "M"]})
    table = delta_presence(POPULATION, subset, ["age", "sex"]).table()
    assert len(table) == 6
    row = table[(table["age"] == "20-29") & (table["sex"] == "F")].iloc[0]
    assert (row["subset"], row["population"], row["delta"]) == (1, 3, pytest.approx(1 / 3))
    missing = table[table["age"].isna()].iloc[0]
    assert (missing["sex"], missing["delta"]) == ("M", 0.5)
    assert delta_presence_from_counts([1], [2]).table()["delta"].tolist() == [0.5]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["a", "b", None])), min_size=1,
                max_size=40),
       st.data())
def test_match_population_properties(rows, data):
    population = pd.DataFrame(rows, columns=["x", "y"])
    chosen = data.draw(st.lists(st.sampled_from(range(len(rows))), min_size=1, unique=True))
    sample = population.iloc[chosen]
    perm = data.draw(st.permutations(range(len(rows))))
    m = match_population(sample, population, ["x", "y"])
    # Every sampled record is part of the population: F >= f >= 1.
    assert np.all(m.population_sizes >= m.sample_sizes) and m.sample_sizes.min() >= 1
    assert m.sample_sizes.sum() == len(sample)
    # Row order of either table does not change any row's population class size.
    shuffled = match_population(sample, population.iloc[perm], ["x", "y"])
    np.testing.assert_array_equal(m.row_population_size, shuffled.row_population_size)
    reversed_rows = match_population(sample.iloc[::-1], population, ["x", "y"])
    np.testing.assert_array_equal(m.row_population_size[::-1], reversed_rows.row_population_size)
    assert k_map(m.population_sizes).k_map == m.row_population_size.min()
