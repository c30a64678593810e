"""Mondrian: hand-computed cuts, cuts along the hierarchy (never string order), labels,
l-diversity blocking a cut, partition keys, dates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from anon_dagster.anonymize import Policy, mondrian
from anon_dagster.hierarchies import MaskHierarchy, SuppressionHierarchy, TableHierarchy


def _labels(result, name):
    return pd.Series(result.columns[name]).astype(str).tolist()


def test_numeric_median_cuts_hand_computed():
    s = pd.Series([5, 1, 8, 3, 2, 7, 4, 6], name="x")
    r = mondrian([(s, None)], Policy(k=2))
    # 1..8 -> cut at median 4 -> {1..4},{5..8} -> {1,2},{3,4},{5,6},{7,8}; 4 rows < 2k stop
    assert r.n_classes == 4 and sorted(r.class_sizes.tolist()) == [2, 2, 2, 2]
    assert _labels(r, "x") == ["5-6", "1-2", "7-8", "3-4", "1-2", "7-8", "3-4", "5-6"]
    assert not r.suppressed.any()


def test_categorical_cut_follows_the_hierarchy_not_string_order():
    h = TableHierarchy("fruit", {
        "apple": ["G1", "*"], "zebra": ["G1", "*"], "banana": ["G2", "*"], "yak": ["G2", "*"],
    }, 3)
    s = pd.Series(["apple", "banana", "yak", "zebra"] * 2, name="fruit")
    r = mondrian([(s, h)], Policy(k=3))
    got = dict(zip(s, _labels(r, "fruit"), strict=True))
    # string order would have grouped apple+banana / yak+zebra
    assert got == {"apple": "G1", "zebra": "G1", "banana": "G2", "yak": "G2"}


def test_flat_hierarchy_splits_children_in_hierarchy_order_with_set_labels():
    s = pd.Series(["d", "c", "b", "a"] * 3, name="v")
    r = mondrian([(s, SuppressionHierarchy("v"))], Policy(k=4))
    got = dict(zip(s, _labels(r, "v"), strict=True))
    # no listed order: children laid out in sorted label order (a b | c d); set labels sorted
    assert got == {"d": "{c, d}", "c": "{c, d}", "b": "{a, b}", "a": "{a, b}"}


def test_l_diversity_blocks_a_cut():
    x = pd.Series(range(1, 9), name="x")
    sens = pd.factorize(pd.Series(list("xxxxyyyy")))[0].astype(np.int64)
    policy = Policy(k=2, l_distinct=2, sensitive=("s",))
    r = mondrian([(x, None)], policy, sensitive=[sens])
    assert r.n_classes == 1 and set(_labels(r, "x")) == {"1-8"}
    # with interleaved sensitive values every cut keeps both values on each side
    sens2 = pd.factorize(pd.Series(list("xyxyxyxy")))[0].astype(np.int64)
    r2 = mondrian([(x, None)], policy, sensitive=[sens2])
    assert r2.n_classes == 4


def test_partition_keys_split_first_and_classes_never_span_parts():
    rng = np.random.default_rng(1)
    n = 400
    age = pd.Series(rng.integers(0, 100, n), name="age")
    part = rng.integers(0, 3, n)
    r = mondrian([(age, None)], Policy(k=5), partition_codes=[part])
    classes = pd.DataFrame({"c": r.row_class, "p": part})
    assert (classes.groupby("c")["p"].nunique() == 1).all()
    assert r.class_sizes.min() >= 5


def test_part_too_small_is_suppressed_within_budget_else_refused():
    from anon_dagster.anonymize.mondrian import MondrianNoSolution

    age = pd.Series([1, 2, 3, 4, 5, 6, 7], name="age")
    part = np.array([0, 0, 0, 0, 0, 0, 1])
    with pytest.raises(MondrianNoSolution, match="part 1"):
        mondrian([(age, None)], Policy(k=3), partition_codes=[part])
    r = mondrian([(age, None)], Policy(k=3, max_suppression=0.2), partition_codes=[part])
    assert r.suppressed.tolist() == [False] * 6 + [True]
    assert r.too_small_parts == [{"partition": "part 1", "rows": 1}]
    assert r.row_class[6] == -1


def test_dates_are_published_as_date_ranges():
    d = pd.Series(pd.to_datetime(["2024-01-01", "2024-01-03", "2024-02-01", "2024-02-05"]), name="d")
    r = mondrian([(d, None)], Policy(k=2))
    assert _labels(r, "d") == ["[2024-01-01, 2024-01-03]"] * 2 + ["[2024-02-01, 2024-02-05]"] * 2


def test_every_class_meets_k_on_many_dimensions():
    rng = np.random.default_rng(7)
    n = 5000
    df = pd.DataFrame({
        "a": rng.integers(0, 80, n), "b": rng.normal(size=n).round(2),
        "c": rng.choice(list("pqrstu"), n), "d": rng.integers(0, 3, n),
    })
    r = mondrian([(df[c], SuppressionHierarchy(c) if c == "c" else None) for c in df.columns], Policy(k=7))
    out = pd.DataFrame({c: r.columns[c] for c in df.columns}).astype(str)
    assert out.groupby(list(out.columns)).size().min() >= 7
    assert r.class_sizes.sum() == n and r.class_sizes.min() >= 7
    assert r.n_classes > n / 30  # it does cut: classes stay small


def test_adult_labels_cover_each_rows_value_along_the_hierarchy(adult_dir):
    df = pd.read_csv(adult_dir / "adult.csv", sep=";")
    qis = ["age", "education", "marital-status", "occupation", "native-country"]
    hier = {c: TableHierarchy.from_csv(c, adult_dir / f"adult_hierarchy_{c}.csv") for c in qis}
    r = mondrian([(df[c], hier[c]) for c in qis], Policy(k=5))
    out = pd.DataFrame({c: pd.Series(r.columns[c]).astype(str) for c in qis})
    assert out.groupby(qis).size().min() >= 5 and r.class_sizes.sum() == len(df)
    for c in qis[1:]:
        table = hier[c].table(pd.unique(df[c]))
        ancestors = {row[0]: set(row) for row in table}
        for value, label in set(zip(df[c], out[c], strict=True)):
            members = label[1:-1].split(", ") if label.startswith("{") else [label]
            assert any(m in ancestors[value] for m in members), (c, value, label)
    lo = out["age"].str.split("-").str[0].astype(int)
    hi = out["age"].str.split("-").str[-1].astype(int)
    assert ((lo <= df["age"]) & (df["age"] <= hi)).all()


def test_numeric_qi_with_missing_values_keeps_intervals_and_a_missing_class():
    age = pd.Series([20, 21, 22, 23, 24, 25, np.nan, np.nan, np.nan], name="age")
    r = mondrian([(age, None)], Policy(k=3))
    labels = _labels(r, "age")
    assert labels[6:] == ["<missing>"] * 3  # split from the present values first
    assert set(labels[:6]) == {"20-22", "23-25"}
    # two missing values cannot form a class of 3: they join the highest values, and say so
    r = mondrian([(age.iloc[2:8], None)], Policy(k=3))
    assert _labels(r, "age") == ["22-24"] * 3 + ["25|<missing>"] * 3


def test_missing_values_in_a_date_qi():
    d = pd.Series(pd.to_datetime(["2024-01-01", "2024-01-02", None, None]), name="d")
    r = mondrian([(d, None)], Policy(k=2))
    assert _labels(r, "d") == ["[2024-01-01, 2024-01-02]"] * 2 + ["<missing>"] * 2


@pytest.mark.parametrize("reverse", [False, True])
def test_set_labels_list_children_sorted_whatever_the_row_order(reverse):
    # partition p1 holds 28091, 28021, 28041 (k=3: one class, no cut) and p2 the 2801* codes,
    # so p1's class spans three of 280**'s four children: a set label. Children are ranked by
    # first appearance, which reversing the rows changes; the label must not.
    codes = ["28091", "28021", "28041", "28011", "28012", "28013"]
    parts = [0, 0, 0, 1, 1, 1]
    if reverse:
        codes, parts = codes[::-1], parts[::-1]
    s = pd.Series(codes, name="zip")
    r = mondrian([(s, MaskHierarchy("zip", keep=[4, 3]))], Policy(k=3),
                 partition_codes=[np.array(parts)])
    labels = dict(zip(codes, pd.Series(r.columns["zip"]).astype(str), strict=True))
    assert labels["28091"] == labels["28021"] == labels["28041"] == "{2802*, 2804*, 2809*}"
    assert labels["28011"] == "2801*"
    box = r.boxes["zip"]
    members = box["members"][box["class_box"][r.row_class[codes.index("28021")]]]
    assert members == ["2802*", "2804*", "2809*"]
