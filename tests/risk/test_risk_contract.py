"""The risk kernel seen from outside: hand-computed figures on frames shaped as users hand them in.

Missing values in quasi-identifiers and in the sensitive column, non-RangeIndex frames,
categorical and Arrow-backed columns: the contract (docs/contracts.md, metric names) says missing values
form a value of their own and every column type is accepted as it is.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster import measure_risk
from anon_dagster.errors import UserError
from anon_dagster.risk import utility_query_error
from anon_dagster.risk.classes import EquivalenceClasses
from anon_dagster.risk.measures import CONTRACT_KEYS

FIGURES = ("rows", "classes", "k", "uniques_fraction", "prosecutor_max", "prosecutor_avg",
           "l_distinct", "l_entropy", "t_closeness")


def frame() -> pd.DataFrame:
    """Five rows, three classes once missing values count as values.

    classes: (x, 1) rows 0-1, s = p, <missing>; (<missing>, 2) rows 2-3, s = p, q;
    (y, <missing>) row 4, s = p.
    """
    return pd.DataFrame({
        "a": ["x", "x", None, None, "y"],
        "b": [1.0, 1.0, 2.0, 2.0, np.nan],
        "s": ["p", None, "p", "q", "p"],
    })


# Hand computation for frame():
#   k = 1, uniques = 1/5, prosecutor_max = 1, prosecutor_avg = 3 classes / 5 rows = 0.6
#   l_distinct = 1 (the singleton class), l_entropy = exp(0) = 1
#   overall s: p 3/5, <missing> 1/5, q 1/5
#   TV(singleton p) = (|1 - .6| + .2 + .2) / 2 = 0.4; TV of the two pairs = 0.3 -> t = 0.4
EXPECTED = {"rows": 5, "classes": 3, "k": 1, "uniques_fraction": 0.2, "prosecutor_max": 1.0,
            "prosecutor_avg": 0.6, "l_distinct": 1, "l_entropy": 1.0, "t_closeness": 0.4}


def figures(df: pd.DataFrame, **kw) -> dict:
    out = measure_risk(df, ["a", "b"], sensitive="s", **kw).to_dict()
    return {k: out[k] for k in FIGURES}


def assert_expected(got: dict) -> None:
    for key, value in EXPECTED.items():
        assert got[key] == pytest.approx(value), key


def test_missing_values_in_qis_and_sensitive_are_values_of_their_own():
    out = measure_risk(frame(), ["a", "b"], sensitive="s").to_dict()
    assert set(CONTRACT_KEYS) <= set(out)
    assert_expected(out)


def test_none_and_nan_in_one_object_column_are_the_same_missing_value():
    df = frame().astype({"a": object})
    df.loc[2, "a"] = None
    df.loc[3, "a"] = np.nan  # same class as row 2: both are missing
    assert_expected(figures(df))


@pytest.mark.parametrize("index", [
    [10, 3, 7, 7, 1],                              # duplicated, unsorted labels
    ["e", "d", "c", "b", "a"],
    pd.MultiIndex.from_tuples([(1, "a"), (1, "b"), (0, "a"), (0, "b"), (2, "z")]),
])
def test_non_range_index_gives_the_same_figures(index):
    df = frame()
    df.index = index
    assert_expected(figures(df))


def test_categorical_columns_as_they_are():
    df = frame().astype({"a": "category", "s": "category"})
    # unused categories must not form classes or sensitive values
    df["a"] = df["a"].cat.add_categories(["never"])
    df["s"] = df["s"].cat.add_categories(["unused"])
    assert_expected(figures(df))


def test_arrow_backed_columns_as_they_are():
    df = frame().astype({
        "a": pd.ArrowDtype(pa.string()),
        "b": pd.ArrowDtype(pa.float64()),
        "s": pd.ArrowDtype(pa.string()),
    })
    assert_expected(figures(df))


def test_nullable_integer_and_sorted_frame():
    df = frame().astype({"b": "Int64"}).sort_values("s", na_position="first")
    assert_expected(figures(df))


def test_equivalence_classes_positional_on_shuffled_index():
    df = frame()
    df.index = [40, 30, 20, 10, 0]
    ec = EquivalenceClasses.from_frame(df, ["a", "b"])
    assert ec.n_rows == 5 and ec.n_classes == 3
    # rows 0 and 1 share a class, rows 2 and 3 another, row 4 is alone (positions, not labels)
    rc = np.asarray(ec.row_class)
    assert rc[0] == rc[1] and rc[2] == rc[3]
    assert len({rc[0], rc[2], rc[4]}) == 3
    assert sorted(np.asarray(ec.sizes).tolist()) == [1, 2, 2]


def test_population_frequency_table_with_missing_qi_values():
    # F: (x, 1) = 10, (<missing>, 2) = 5, (y, <missing>) = 4
    pop = pd.DataFrame({"a": ["x", None, "y"], "b": [1.0, 2.0, np.nan], "n": [10, 5, 4]})
    out = measure_risk(frame(), ["a", "b"], population=pop, count_column="n").to_dict()
    assert out["journalist_max"] == pytest.approx(1 / 4)
    # mean over rows of 1/F: (2/10 + 2/5 + 1/4) / 5
    assert out["marketer"] == pytest.approx((0.2 + 0.4 + 0.25) / 5)
    assert out["journalist_avg"] == pytest.approx((0.2 + 0.4 + 0.25) / 5)


def test_population_lacking_a_sample_class_is_a_clear_error():
    pop = pd.DataFrame({"a": ["x"], "b": [1.0], "n": [10]})
    with pytest.raises(UserError) as info:
        measure_risk(frame(), ["a", "b"], population=pop, count_column="n")
    text = str(info.value)
    assert "\n" not in text and "population" in text


def test_entropy_l_of_99_to_1_is_a_float_below_2():
    df = pd.DataFrame({"q": ["c"] * 100, "s": ["none"] * 99 + ["HIV"]})
    out = measure_risk(df, ["q"], sensitive="s").to_dict()
    entropy = -(0.99 * math.log(0.99) + 0.01 * math.log(0.01))
    assert out["l_distinct"] == 2
    assert isinstance(out["l_entropy"], float)
    assert out["l_entropy"] == pytest.approx(math.exp(entropy))


def test_utility_query_error_with_missing_target_values():
    original = pd.DataFrame({"g": ["a", "a", "a", "b", "b"], "t": ["y", None, "y", "n", "y"]})
    anonymized = original.iloc[[0, 1, 3, 4]]  # one 'y' of group a suppressed
    result = utility_query_error(original, anonymized, ["g"], "t")
    # group a: y 2/3 -> 1/2 and <missing> 1/3 -> 1/2: 16.67 points; group b unchanged
    assert result.max_error_points == pytest.approx(100 / 6)


values = st.sampled_from(["u", "v", "w", None])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(values, values, st.sampled_from(["p", "q", None])), min_size=1, max_size=40),
       st.randoms(use_true_random=False))
def test_dtype_and_index_invariance(rows, rnd):
    """object, category, Arrow and a shuffled non-range index: identical figures."""
    base = pd.DataFrame(rows, columns=["a", "b", "s"], dtype=object)
    reference = figures(base)
    # the definition: prosecutor_avg = classes / rows, with missing values as a value
    keyed = base.fillna("<NA>")
    assert reference["classes"] == len(keyed.drop_duplicates(["a", "b"]))
    assert reference["prosecutor_avg"] == pytest.approx(reference["classes"] / len(base))
    assert reference["k"] == keyed.groupby(["a", "b"]).size().min()
    variants = [
        base.astype("category"),
        base.astype(pd.ArrowDtype(pa.string())),
    ]
    order = list(range(len(base)))
    rnd.shuffle(order)
    shuffled = base.iloc[order].copy()
    shuffled.index = [f"r{i}" for i in order]
    variants.append(shuffled)
    for variant in variants:
        got = figures(variant)
        for key in FIGURES:
            assert got[key] == pytest.approx(reference[key]), key
