"""Small classes told by sizes and per-QI contributions (never their values)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from anon_dagster.risk import EquivalenceClasses
from anon_dagster.risk.exposure import small_classes


def test_hand_computed_contributions():
    # classes over (age, sex): (30,F) x3, (30,M) x1, (40,F) x1, (40,M) x2; k = 2
    df = pd.DataFrame({"age": [30, 30, 30, 30, 40, 40, 40], "sex": ["F", "F", "F", "M", "F", "M", "M"]})
    small = small_classes(EquivalenceClasses.from_frame(df, ["age", "sex"]), 2)
    assert (small.classes_below_k, small.rows_below_k) == (2, 2)
    assert small.by_size == [{"size": 1, "classes": 2, "rows": 2}]
    by_qi = {c["qi"]: c for c in small.contributions}
    # without age: F x4, M x3 -> nobody below 2; without sex: 30 x4, 40 x3 -> nobody either
    assert by_qi["age"]["rows_below_k_without"] == 0 and by_qi["age"]["contribution"] == 2
    assert by_qi["sex"]["rows_below_k_without"] == 0
    text = repr(small.to_dict())
    assert "30" not in text.replace("'size': 1", "") or "F" not in text  # no class value is reported
    assert "'F'" not in text and "'M'" not in text


def test_a_qi_that_does_not_matter_contributes_nothing():
    # sex is constant: leaving it out changes no class
    df = pd.DataFrame({"age": [1, 2, 2, 3, 3, 3], "sex": ["F"] * 6})
    small = small_classes(EquivalenceClasses.from_frame(df, ["age", "sex"]), 3)
    by_qi = {c["qi"]: c["contribution"] for c in small.contributions}
    assert by_qi["sex"] == 0 and by_qi["age"] == 3
    assert small.contributions[0]["qi"] == "age"  # largest contribution first


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 1)), min_size=1, max_size=60),
       st.integers(1, 6))
def test_contributions_match_a_brute_force_regrouping(rows, k):
    df = pd.DataFrame(rows, columns=["a", "b", "c"])
    small = small_classes(EquivalenceClasses.from_frame(df, ["a", "b", "c"]), k)
    sizes = df.value_counts().to_numpy()
    assert small.rows_below_k == int(sizes[sizes < k].sum())
    for c in small.contributions:
        rest = [q for q in "abc" if q != c["qi"]]
        merged = df.value_counts(rest).to_numpy()
        assert c["rows_below_k_without"] == int(merged[merged < k].sum())
        assert c["contribution"] == small.rows_below_k - c["rows_below_k_without"]
    assert sum(s["rows"] for s in small.by_size) == small.rows_below_k
    assert np.all(np.diff([c["contribution"] for c in small.contributions]) <= 0)
