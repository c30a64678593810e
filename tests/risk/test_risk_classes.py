"""Equivalence classes: hand-computed cases, encodings, missing values, positional arithmetic."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster.errors import DataError
from anon_dagster.risk.classes import EquivalenceClasses, combine_codes


def canonical(ec: EquivalenceClasses) -> list[tuple[int, ...]]:
    """Partition of row positions, independent of class numbering."""
    groups: dict[int, list[int]] = {}
    for pos, c in enumerate(ec.row_class):
        groups.setdefault(int(c), []).append(pos)
    return sorted(tuple(g) for g in groups.values())


def test_hand_computed_classes():
    df = pd.DataFrame({"age": [30, 30, 40, 30, 40], "sex": ["F", "M", "F", "F", "F"]})
    ec = EquivalenceClasses.from_frame(df, ["age", "sex"])
    assert ec.n_rows == 5
    assert ec.n_classes == 3
    assert canonical(ec) == [(0, 3), (1,), (2, 4)]
    assert sorted(ec.sizes.tolist()) == [1, 2, 2]
    assert ec.row_class.dtype == np.int32 and ec.sizes.dtype == np.int64  # int32: fewer than 2**31 rows
    assert ec.sizes[ec.row_class].tolist() == [2, 1, 2, 2, 2]
    keys = ec.keys()
    assert list(keys.columns) == ["age", "sex"]
    got = {(int(r.age), r.sex): int(ec.sizes[i]) for i, r in enumerate(keys.itertuples())}
    assert got == {(30, "F"): 2, (30, "M"): 1, (40, "F"): 2}


def test_missing_values_are_a_value_of_their_own():
    df = pd.DataFrame(
        {"a": [1.0, np.nan, np.nan, 1.0, 2.0], "b": ["x", None, None, "x", np.nan]}
    )
    ec = EquivalenceClasses.from_frame(df, ["a", "b"])
    # rows 1 and 2 share (missing, missing); row 4 is (2, missing): nothing is dropped
    assert ec.n_rows == 5
    assert canonical(ec) == [(0, 3), (1, 2), (4,)]


def test_missing_never_merges_with_a_real_value():
    df = pd.DataFrame({"a": ["", None, "nan", np.nan]})
    ec = EquivalenceClasses.from_frame(df, ["a"])
    assert canonical(ec) == [(0,), (1, 3), (2,)]


@pytest.mark.parametrize("encoding", ["plain", "category", "arrow_dict", "arrow_str"])
def test_encodings_give_the_same_partition(encoding):
    values = ["b", "a", None, "b", "c", None, "a"]
    other = [1, 1, 2, 1, 1, 2, 2]
    col = pd.Series(values, dtype=object)
    if encoding == "category":
        col = col.astype(pd.CategoricalDtype(["z", "a", "b", "c"]))  # unused category "z"
    elif encoding == "arrow_dict":
        arr = pa.chunked_array(
            [pa.array(values[:3]).dictionary_encode(), pa.array(values[3:]).dictionary_encode()]
        )
        col = pd.Series(pd.arrays.ArrowExtensionArray(arr))
    elif encoding == "arrow_str":
        col = col.astype(pd.ArrowDtype(pa.string()))
    df = pd.DataFrame({"v": col, "o": other})
    ec = EquivalenceClasses.from_frame(df, ["v", "o"])
    assert canonical(ec) == [(0, 3), (1,), (2, 5), (4,), (6,)]


def test_non_range_index_uses_positions():
    df = pd.DataFrame({"a": [1, 1, 2]}, index=[10, 5, 7])
    ec = EquivalenceClasses.from_frame(df, ["a"])
    assert canonical(ec) == [(0, 1), (2,)]
    keys = ec.keys()
    assert keys.index.tolist() == [0, 1]
    assert {int(keys["a"][i]): int(ec.sizes[i]) for i in range(2)} == {1: 2, 2: 1}


def test_missing_qi_column_is_a_data_error():
    with pytest.raises(DataError, match="'zip'"):
        EquivalenceClasses.from_frame(pd.DataFrame({"a": [1]}), ["a", "zip"])


def test_overflow_is_avoided_by_refactorizing():
    # 8 columns of 2**10 distinct values: product 2**80 overflows int64 without re-factorizing
    rng = np.random.default_rng(0)
    n = 3000
    df = pd.DataFrame({f"c{i}": rng.integers(0, 1024, n) for i in range(8)})
    df.iloc[1] = df.iloc[0]
    ec = EquivalenceClasses.from_frame(df, list(df.columns))
    expected = df.groupby(list(df.columns)).size()
    assert ec.n_classes == len(expected)
    assert sorted(ec.sizes.tolist()) == sorted(expected.tolist())
    assert ec.row_class[0] == ec.row_class[1]


def test_from_codes_matches_from_frame():
    df = pd.DataFrame({"a": ["x", "y", "x", "y"], "b": [0, 0, 1, 0]})
    ec1 = EquivalenceClasses.from_frame(df, ["a", "b"])
    ec2 = EquivalenceClasses.from_codes([np.array([0, 1, 0, 1]), np.array([0, 0, 1, 0])], [2, 2], ["a", "b"])
    assert canonical(ec1) == canonical(ec2) == [(0,), (1, 3), (2,)]
    keys = ec2.keys()
    assert sorted(map(tuple, keys[["a", "b"]].to_numpy().tolist())) == [(0, 0), (0, 1), (1, 0)]
    with pytest.raises(ValueError):
        EquivalenceClasses.from_codes([np.array([0, 2])], [2])


def test_counts_by_dense_and_sparse_agree():
    df = pd.DataFrame({"a": [1, 1, 2, 2, 2]})
    ec = EquivalenceClasses.from_frame(df, ["a"])
    s = np.array([0, 1, 1, 1, 0])
    dense = ec.counts_by(s, 2)
    by_class = {int(ec.keys()["a"][i]): dense[i].tolist() for i in range(ec.n_classes)}
    assert by_class == {1: [1, 1], 2: [1, 2]}
    assert (ec.counts_by(s, 2, sparse=True).toarray() == dense).all()


def test_empty_qi_list_is_one_class():
    ec = EquivalenceClasses.from_frame(pd.DataFrame({"a": [1, 2, 3]}), [])
    assert ec.n_classes == 1 and ec.sizes.tolist() == [3]


def test_combine_codes_large_key_space_uses_hashing():
    a = np.array([0, 5_000_000, 0, 7])
    row_class, sizes = combine_codes([a, a], [10_000_000, 10_000_000], 4)
    assert sorted(sizes.tolist()) == [1, 1, 2]
    assert row_class[0] == row_class[2]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["a", "b", None]), st.integers(0, 3), st.sampled_from([1.5, np.nan])),
             min_size=1, max_size=40),
    st.randoms(use_true_random=False),
)
def test_partition_matches_groupby_and_is_permutation_invariant(rows, rnd):
    df = pd.DataFrame(rows, columns=["s", "i", "f"])
    ec = EquivalenceClasses.from_frame(df, ["s", "i", "f"])
    expected = df.groupby(["s", "i", "f"], dropna=False).size()
    assert ec.n_classes == len(expected)
    assert sorted(ec.sizes.tolist()) == sorted(expected.tolist())
    assert ec.sizes.min() == expected.min()
    perm = list(range(len(df)))
    rnd.shuffle(perm)
    shuffled = df.iloc[perm]
    shuffled.index = [f"r{i}" for i in rnd.sample(range(1000), len(df))]
    ec2 = EquivalenceClasses.from_frame(shuffled, ["s", "i", "f"])
    assert sorted(ec2.sizes.tolist()) == sorted(ec.sizes.tolist())
    # each row keeps its class size under the permutation
    assert (ec2.row_sizes() == ec.row_sizes()[perm]).all()
