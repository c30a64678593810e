"""Reaching k per person by suppressing the persons whose person class is below k."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster import measure_risk
from anon_dagster.anonymize.persons import suppress_persons
from anon_dagster.risk import EquivalenceClasses
from anon_dagster.risk.person import person_figures


def classes(df: pd.DataFrame) -> EquivalenceClasses:
    return EquivalenceClasses.from_frame(df, ["age"])


def test_hand_computed_readmissions():
    # a and b stayed twice (ages 1 and 2): a person class of 2; c and d once: alone
    df = pd.DataFrame({"person": ["a", "a", "b", "b", "c", "d"], "age": [1, 2, 1, 2, 1, 2]})
    result = suppress_persons(classes(df), df["person"], k=2, budget_rows=10)
    assert result.reached and (result.persons, result.rows) == (2, 2)
    assert df["person"][result.keep].tolist() == ["a", "a", "b", "b"]


def test_over_the_budget_nothing_is_removed_and_the_need_is_told():
    df = pd.DataFrame({"person": ["a", "a", "b", "b", "c", "d"], "age": [1, 2, 1, 2, 1, 2]})
    result = suppress_persons(classes(df), df["person"], k=2, budget_rows=1)
    assert not result.reached and result.keep.all() and (result.persons, result.rows) == (2, 2)


@settings(max_examples=150)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 3)), min_size=1, max_size=80), st.integers(1, 4))
def test_afterwards_every_person_class_and_every_row_class_holds_k(rows, k):
    df = pd.DataFrame(rows, columns=["person", "age"])
    result = suppress_persons(classes(df), df["person"], k=k, budget_rows=len(df))
    assert result.reached
    kept = df[result.keep].reset_index(drop=True)
    assert len(df) - len(kept) == result.rows
    if len(kept):
        assert person_figures(classes(kept), kept["person"])["k"] >= k
        assert measure_risk(kept, ["age"]).k >= k
    # nobody was removed who was not below k
    before = person_figures(classes(df), df["person"])
    if before["k"] >= k:
        assert result.rows == 0 and np.all(result.keep)
