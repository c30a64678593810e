"""The narrow types and low-memory paths of the risk kernel give the figures of the wide ones."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster import measure_risk
from anon_dagster.risk.classes import EquivalenceClasses, class_id_dtype, combine_codes
from anon_dagster.risk.sensitive import _first_appearance, class_value_cells, code_sensitive
from anon_dagster.risk.utility import generic_utility


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two labelings group the rows alike (ids may differ)."""
    pairs = pd.DataFrame({"a": a, "b": b}).drop_duplicates()
    return pairs["a"].is_unique and pairs["b"].is_unique


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=60))
def test_sorted_densification_groups_like_the_bincount_one(rows):
    codes = [np.array(c) for c in zip(*rows, strict=True)]
    small, small_sizes = combine_codes(codes, [6, 6, 6], len(rows))
    # the same codes in a key space far larger than the table: densified by sorting
    big, big_sizes = combine_codes(codes, [6, 6, 10**9], len(rows))
    assert _same_partition(small, big)
    assert sorted(small_sizes) == sorted(big_sizes)
    assert big.dtype == np.int32
    assert np.array_equal(big_sizes[big], small_sizes[small])


def test_class_ids_are_int32_and_widened_before_products():
    assert class_id_dtype(10) == np.int32 and class_id_dtype(2**31) == np.int64
    # 60,000 classes of two rows, 60,000 values: class * n_values exceeds int32
    n_classes, n_values = 60_000, 60_000
    cls = np.repeat(np.arange(n_classes), 2)
    ec = EquivalenceClasses.from_codes([cls], [n_classes])
    assert ec.row_class.dtype == np.int32
    values = np.tile([n_values - 1, 7], n_classes)
    got_cls, got_val, got_cnt = ec.pair_counts(values, n_values)
    cells = pd.DataFrame({"c": got_cls, "v": got_val, "n": got_cnt}).sort_values(["c", "v"])
    assert len(cells) == 2 * n_classes
    assert cells["v"].tolist()[:4] == [7, n_values - 1, 7, n_values - 1]
    assert (cells["n"] == 1).all()
    assert cells["c"].max() == n_classes - 1
    sensitive_cells = class_value_cells(ec, values, n_values)
    assert sorted(set(sensitive_cells.val.tolist())) == [7, n_values - 1]
    assert sensitive_cells.cls.max() == n_classes - 1


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=0, max_size=50), st.booleans())
def test_categorical_sensitive_codes_like_its_values(values, extra_category):
    categories = ["z", "c", "a", "b"] if extra_category else ["a", "b", "c"]
    series = pd.Series(values, dtype=pd.CategoricalDtype(categories))
    coded = code_sensitive(series, "s")
    reference = code_sensitive(series.astype(object), "s")
    assert coded.codes.tolist() == reference.codes.tolist()
    assert coded.values.tolist() == reference.values.tolist()
    assert coded.codes.dtype == np.int8  # a few values: one byte per row


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-1, 6), max_size=80), st.integers(1, 9))
def test_first_appearance_is_pd_unique(codes, chunk):
    codes = np.array(codes, dtype=np.int8)
    assert _first_appearance(codes, 7, chunk=chunk).tolist() == pd.unique(codes).tolist()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=1, max_size=40), st.integers(0, 5))
def test_generic_utility_over_distinct_sizes_is_the_per_class_sum(sizes, suppressed):
    sizes = np.array(sizes)
    ec = EquivalenceClasses.from_codes([np.repeat(np.arange(len(sizes)), sizes)], [len(sizes)])
    n = sizes.sum()
    p = sizes / n
    got = generic_utility(ec, suppressed=suppressed, k=2)
    assert got["qi_entropy_bits"] == pytest.approx(max(-(p * np.log2(p)).sum(), 0.0), abs=1e-12)
    assert got["discernibility"] == float((sizes**2).sum() + suppressed * (n + suppressed))
    classes = len(sizes) + (1 if suppressed else 0)  # the suppressed rows: one class of *
    assert got["aecs"] == (n + suppressed) / classes
    assert got["aecs_normalized"] == got["aecs"] / 2


def test_encodings_measure_alike_with_narrow_types():
    rng = np.random.default_rng(5)
    n = 5000
    df = pd.DataFrame({
        "a": rng.integers(0, 40, n).astype(str),
        "b": rng.integers(0, 30, n).astype(str),
        "s": rng.choice(["x", "y", "z", None], n),
    })
    plain = measure_risk(df, ["a", "b"], "s", recursive_c=2).to_dict()
    cat = measure_risk(df.astype("category"), ["a", "b"], "s", recursive_c=2).to_dict()
    assert cat == plain


def test_breakdown_counts_the_classes_each_group_touches():
    # classes {0,1}, {2}, {3,4,5}; groups g = x x y y y x (small space: marked pairs) or one
    # group per row of 70,000 (large space: sorted pairs)
    df = pd.DataFrame({"q": ["a", "a", "b", "c", "c", "c"], "g": list("xxyyyx")})
    m = measure_risk(df, ["q"])
    table = m.breakdown(df["g"], name="g")
    assert table.loc["x", "classes"] == 2 and table.loc["y", "classes"] == 2
    big = pd.DataFrame({"q": np.arange(70_000) // 2})
    per_row = measure_risk(big, ["q"]).breakdown(np.arange(70_000), name="row")
    assert (per_row["classes"] == 1).all() and len(per_row) == 70_000
    per_pair = measure_risk(big, ["q"]).breakdown(np.arange(70_000) // 4, name="pair")
    assert (per_pair["classes"] == 2).all() and len(per_pair) == 17_500
