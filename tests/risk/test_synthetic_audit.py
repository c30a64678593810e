"""The synthetic audit (anon_dagster.risk.synthetic_audit): hand-computed tiny cases, the rank
formula, Gower's distance, and row order leaving every figure unchanged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster.errors import DataError
from anon_dagster.risk.synthetic_audit import (
    auc,
    audit,
    content_sample,
    encode_tables,
    nearest_distance,
)

TRAIN = pd.DataFrame({"age": [20, 30, 40, 50], "sex": ["F", "M", "F", "M"], "city": ["a", "b", "c", "d"]})
CONTROL = pd.DataFrame({"age": [25, 35, 45, 55], "sex": ["M", "F", "M", "F"], "city": ["e", "f", "g", "h"]})


def test_a_table_copying_the_training_rows_has_copy_gap_one_and_auc_one():
    result = audit(TRAIN.copy(), TRAIN, CONTROL)
    assert result.copy_rate_train == 1.0 and result.copy_rate_control == 0.0
    assert result.copy_rate_gap == 1.0
    # every synthetic row is at distance 0 of a train record and > 0 of every control record
    assert result.closer_to_train == 1.0 and result.closer_to_train_gap == 0.5
    assert result.mia_auc == 1.0


def test_a_table_independent_of_both_sides_has_every_gap_zero():
    # categories neither side holds: every synthetic row is at distance 1 of every record
    synthetic = pd.DataFrame({"sex": ["X", "Y"], "city": ["p", "q"]})
    result = audit(synthetic, TRAIN, CONTROL, columns=["sex", "city"])
    assert result.copy_rate_gap == 0.0
    assert result.closer_to_train == 0.5 and result.closer_to_train_gap == 0.0  # ties count 1/2
    assert result.mia_auc == 0.5


def test_a_table_drawn_from_the_population_has_gaps_near_zero():
    rng = np.random.default_rng(7)

    def draw(n: int) -> pd.DataFrame:
        return pd.DataFrame({"a": rng.integers(0, 6, n), "b": rng.choice(list("xyz"), n), "c": rng.integers(0, 4, n)})

    result = audit(draw(2000), draw(2000), draw(2000))
    assert abs(result.copy_rate_gap) < 0.03
    assert abs(result.closer_to_train_gap) < 0.04
    assert abs(result.mia_auc - 0.5) < 0.04


def test_copying_one_training_row_of_four():
    synthetic = pd.concat([TRAIN.iloc[[0]], CONTROL.iloc[[1]].assign(city="z")], ignore_index=True)
    result = audit(synthetic, TRAIN, CONTROL)
    assert result.copy_rate_train == 0.25 and result.copy_rate_control == 0.0
    assert result.copy_rate_gap == 0.25


def test_the_rank_formula():
    assert auc(np.array([3.0, 2.0]), np.array([1.0, 0.0])) == 1.0
    assert auc(np.array([0.0]), np.array([1.0])) == 0.0
    assert auc(np.array([1.0]), np.array([1.0])) == 0.5  # a tie at the mean rank
    # members 2 and 0, others 1: one pair of two won -> 0.5
    assert auc(np.array([2.0, 0.0]), np.array([1.0])) == 0.5
    assert np.isnan(auc(np.array([]), np.array([1.0])))


def test_gower_distance_by_hand():
    a = pd.DataFrame({"x": [0.0, 10.0], "k": ["u", "v"]})
    b = pd.DataFrame({"x": [5.0], "k": ["u"]})
    (ma, mb), numeric = encode_tables([a, b], ["x", "k"])
    assert list(numeric) == [True, False]
    # x's range is 10: row 0 differs by 0.5 in x and 0 in k; row 1 by 0.5 and 1
    assert nearest_distance(ma, mb, numeric).tolist() == [0.25, 0.75]


def test_missing_values_equal_each_other():
    a = pd.DataFrame({"x": [np.nan, 1.0], "k": [None, "u"]})
    (ma,), numeric = encode_tables([a], ["x", "k"])
    assert nearest_distance(ma[[0]], ma[[0]], numeric).tolist() == [0.0]
    assert nearest_distance(ma[[0]], ma[[1]], numeric).tolist() == [1.0]


def test_a_missing_column_or_an_empty_side_is_refused():
    with pytest.raises(DataError, match="column 'age' is not in the control records"):
        audit(TRAIN, TRAIN, CONTROL.drop(columns="age"))
    with pytest.raises(DataError, match="needs control records"):
        audit(TRAIN, TRAIN, CONTROL.iloc[0:0])


def test_the_content_sample_keeps_the_multiset_whatever_the_order():
    m = np.array([[1.0], [1.0], [2.0], [3.0], [1.0], [4.0]])
    picked = sorted(m[content_sample(m, 3, "00112233445566aa")].ravel())
    again = sorted(m[::-1][content_sample(m[::-1], 3, "00112233445566aa")].ravel())
    assert picked == again and len(picked) == 3


rows = st.lists(st.tuples(st.integers(0, 4), st.sampled_from("abc")), min_size=3, max_size=25)


@settings(max_examples=30, deadline=None)
@given(rows, rows, rows, st.randoms(use_true_random=False))
def test_row_order_does_not_change_the_figures(syn, train, control, random):
    frames = [pd.DataFrame(r, columns=["n", "c"]) for r in (syn, train, control)]
    shuffled = [f.sample(frac=1.0, random_state=random.randint(0, 2**31)).reset_index(drop=True) for f in frames]
    # max_rows below the sizes: the equal-size samples are taken too
    first, second = audit(*frames, max_rows=4), audit(*shuffled, max_rows=4)
    assert first.figures() == second.figures()
