"""Shared factorizations inside one measurement change no figure, only the work done."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster import measure_risk
from anon_dagster.hierarchies import IntervalHierarchy
from anon_dagster.risk.classes import FactorizeCache
from anon_dagster.risk.utility import _labels, joint_label_codes


def _frame() -> pd.DataFrame:
    return pd.DataFrame({
        "age": [30, 30, 41, 41, 41, 52, 30],
        "sex": ["F", "F", "M", None, "M", "F", "F"],
        "zip": ["280", "280", "281", "281", "281", "282", "280"],
        "dx": ["a", "b", "a", "a", "c", "b", "a"],
    })


def test_same_data_is_factorized_once_whatever_the_series_object():
    df = _frame()
    cache = FactorizeCache(["sex", "age"])
    codes, uniques = cache.factorize(df["sex"])
    assert list(codes) == [0, 0, 1, -1, 1, 0, 0] and list(uniques) == ["F", "M"]
    again, _ = cache.factorize(df[["sex", "zip"]]["sex"])  # another Series over the same data
    assert again is codes and cache.hits == 1
    cache.factorize(df["age"])
    cache.factorize(df[["age"]]["age"])
    assert cache.hits == 2
    with pytest.raises(ValueError):
        codes[0] = 5  # shared codes are read-only


def test_different_data_is_not_confused():
    df = _frame()
    cache = FactorizeCache(["sex", "age"])
    cache.factorize(df["sex"])
    cache.factorize(df["age"])
    changed = df.copy()
    changed.loc[0, "sex"] = "M"
    codes, uniques = cache.factorize(changed["sex"])
    assert list(codes) == [0, 1, 0, -1, 0, 1, 1] and list(uniques) == ["M", "F"]
    tail, _ = cache.factorize(df["age"].iloc[2:])  # a slice starts elsewhere in the buffer
    assert list(tail) == [0, 0, 0, 1, 2]
    assert cache.hits == 0


def test_columns_outside_keep_are_not_held():
    df = _frame()
    cache = FactorizeCache(["sex"])
    cache.factorize(df["zip"])
    cache.factorize(df["zip"])
    assert cache.hits == 0 and len(cache._entries) == 0


def testjoint_label_codes_match_labelling_every_row():
    cases = [
        (pd.Series([3, 1, None, 3, 2.0]), pd.Series(["1", "x", None, "3"])),
        (pd.Series(["a", None, "b"], dtype="category"), pd.Series([None, None])),
        (pd.Series([None, "b", "a"]), pd.Series(["a", "c"])),
        (pd.Series([30.0, 30, 1.5]), pd.Series([30, "30"], dtype=object)),
        (pd.Series([], dtype=float), pd.Series(["a"])),
    ]
    for first, second in cases:
        reference_codes, reference = pd.factorize(np.concatenate([_labels(first), _labels(second)]))
        codes, labels = joint_label_codes(first, second)
        assert list(codes) == list(reference_codes)
        assert list(labels) == list(reference)


values = st.one_of(st.none(), st.sampled_from(["a", "b", "c"]))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), values, values, st.sampled_from(["x", "y"])),
             min_size=1, max_size=40),
    st.booleans(),
)
def test_a_table_that_is_its_own_population_and_original_measures_as_a_copy(rows, categorical):
    df = pd.DataFrame(rows, columns=["age", "sex", "zip", "dx"])
    if categorical:
        df["zip"] = df["zip"].astype("category")
    options = dict(
        sampling_fraction=0.5, bootstrap=0, subgroup="sex",
        hierarchies={"age": IntervalHierarchy("age", [2, 4])},
        utility_queries=[("dx_by_sex", ["sex"], "dx")],
    )
    shared = measure_risk(df, ["age", "sex", "zip"], "dx", population=df, original=df, **options)
    apart = measure_risk(df, ["age", "sex", "zip"], "dx", population=df.copy(deep=True),
                         original=df.copy(deep=True), **options)
    assert shared.to_dict() == apart.to_dict()
