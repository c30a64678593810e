"""Mondrian's cuts from a frequency table: each cell weighted by the rows it stands for gives the
cuts of the rows themselves (the same tree, boxes and class sizes, each row in its cell's class),
which is what lets the Spark engine cut a part of any number of rows from its distinct values."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster.anonymize.criteria import Policy, as_coded, pairs_from_rows
from anon_dagster.anonymize.mondrian import part_evaluation, qi_dim
from anon_dagster.anonymize.mondrian_cuts import cut_parts


def rows_and_cells(rows: pd.DataFrame):
    """The rows' QI dimensions, ranks and sensitive codes, and the same as frequency cells."""
    dims = [qi_dim(rows[c], None) for c in ("age", "unit")]
    rank = np.stack([d.rank for d in dims]).astype(np.int64)
    codes = rows["diagnosis"].to_numpy(np.int64)
    key = pd.DataFrame({"a": rank[0], "u": rank[1], "s": codes})
    cell_of_row = key.groupby(["a", "u", "s"], sort=False).ngroup().to_numpy()
    first = pd.Series(np.arange(len(rows))).groupby(cell_of_row).first().to_numpy()
    weights = np.bincount(cell_of_row)
    return dims, rank, codes, cell_of_row, rank[:, first].copy(), codes[first].copy(), weights


def cut(dims, policy, rank, codes, weights=None):
    attribute = as_coded(codes, "diagnosis")
    n = int(weights.sum()) if weights is not None else len(codes)
    pairs = [pairs_from_rows(np.zeros(len(codes), np.int64), 1, codes, attribute.n_values, None, attribute,
                             weights=weights)]
    _, reference = part_evaluation(policy, np.array([n]), pairs)
    cls = np.full(len(codes), -1, dtype=np.int64)
    cuts = cut_parts(dims, policy, [attribute] if policy.needs_sensitive else [], reference,
                     np.arange(len(codes), dtype=np.int64), rank.copy(), [codes.copy()],
                     np.array([len(codes)], dtype=np.int64), cls, weights=weights)
    return cuts, cls


def assert_same(a, b):
    assert (a.roots, a.cuts, a.n_classes) == (b.roots, b.cuts, b.n_classes)
    for name in ("tree_dim", "tree_cut", "lo", "hi", "hp", "sizes"):
        got, want = getattr(a, name), getattr(b, name)
        assert len(got) == len(want), name
        assert all(np.array_equal(x, y) for x, y in zip(got, want, strict=True)), name


def table(ages, units, diagnoses) -> pd.DataFrame:
    return pd.DataFrame({"age": pd.Series(ages, dtype="float64"), "unit": pd.Series(units, dtype=object),
                         "diagnosis": diagnoses})


def test_a_hand_computed_table_cuts_at_the_row_median():
    # ages 20 x4, 30 x1, 40 x3: the row median is 20 (row 4 of 8), the cell median would be 30
    rows = table([20, 20, 20, 20, 30, 40, 40, 40], ["a"] * 8, [0, 1, 0, 1, 0, 1, 0, 1])
    dims, rank, codes, cell_of_row, c_rank, c_codes, weights = rows_and_cells(rows)
    policy = Policy(k=3)
    by_rows, row_class = cut(dims, policy, rank, codes)
    by_cells, cell_class = cut(dims, policy, c_rank, c_codes, weights)
    assert_same(by_cells, by_rows)
    assert list(np.concatenate(by_rows.sizes)) == [4, 4]  # {20 x4} and {30, 40 x3}
    assert np.array_equal(cell_class[cell_of_row], row_class)


AGES = st.one_of(st.sampled_from([18, 25, 31, 40, 52, 67]), st.just(float("nan")))
UNITS = st.sampled_from(["a", "b", "c", None])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(AGES, UNITS, st.integers(0, 2)), min_size=1, max_size=80),
       st.integers(1, 6), st.sampled_from([None, 2]), st.sampled_from([None, 0.4]))
def test_hypothesis_weighted_cells_cut_as_their_rows(records, k, l_distinct, t_closeness):
    rows = table(*zip(*records, strict=True))
    dims, rank, codes, cell_of_row, c_rank, c_codes, weights = rows_and_cells(rows)
    policy = Policy(k=k, l_distinct=l_distinct, t_closeness=t_closeness, sensitive=("diagnosis",))
    by_rows, row_class = cut(dims, policy, rank, codes)
    by_cells, cell_class = cut(dims, policy, c_rank, c_codes, weights)
    assert_same(by_cells, by_rows)
    assert np.array_equal(cell_class[cell_of_row], row_class)
