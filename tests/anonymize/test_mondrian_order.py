"""Mondrian's classes do not depend on the order of the rows.

Categorical values are laid out in the hierarchy's order (a table hierarchy: the order its file
lists the values; other hierarchies: sorted label order), never in order of first appearance,
so on tied medians the same table in any row order is cut the same way.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.anonymize import Policy, mondrian
from anon_dagster.hierarchies import MaskHierarchy, SuppressionHierarchy, TableHierarchy

# listed neither in string order nor grouped by first letter
FRUIT = TableHierarchy("fruit", {
    "pear": ["Pome", "Tree", "*"], "apple": ["Pome", "Tree", "*"], "quince": ["Pome", "Tree", "*"],
    "plum": ["Drupe", "Tree", "*"], "cherry": ["Drupe", "Tree", "*"],
    "melon": ["Gourd", "Vine", "*"], "grape": ["Berry", "Vine", "*"], "kiwi": ["Berry", "Vine", "*"],
}, 4)


def classes(result, names) -> Counter:
    """Multiset of (published labels of the QIs, class size) over the classes."""
    cols = [np.asarray(pd.Series(result.columns[c]).astype(str)) for c in names]
    rows = Counter(zip(*cols, strict=True))
    return Counter((labels, size) for labels, size in rows.items())


@st.composite
def tables(draw):
    n = draw(st.integers(min_value=6, max_value=60))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    fruits = rng.choice(list(FRUIT.rows), draw(st.integers(2, 8)), replace=False)
    return pd.DataFrame({
        "fruit": rng.choice(fruits, n),
        "code": [f"{a}{b}" for a, b in zip(rng.choice(list("AB"), n), rng.choice(list("xyz"), n), strict=True)],
        "flag": rng.choice(["no", "yes", "maybe"], n),
        "age": rng.integers(30, 30 + draw(st.integers(1, 5)), n),
    })


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 4), st.integers(0, 2**32 - 1), st.booleans())
def test_shuffled_rows_give_the_same_classes(df, k, seed, with_age):
    names = ["fruit", "code", "flag"] + (["age"] if with_age else [])
    hier = {"fruit": FRUIT, "code": MaskHierarchy("code", [1]), "flag": SuppressionHierarchy("flag"), "age": None}
    shuffled = df.sample(frac=1.0, random_state=np.random.RandomState(seed % 2**32)).reset_index(drop=True)
    a = mondrian([(df[c], hier[c]) for c in names], Policy(k=k))
    b = mondrian([(shuffled[c], hier[c]) for c in names], Policy(k=k))
    assert classes(a, names) == classes(b, names)
    assert a.n_classes == b.n_classes and a.cuts == b.cuts


def test_cut_follows_the_hierarchy_order_whatever_the_row_order():
    """Hand-computed: one node with children listed b, c, a, d, two rows each, k=4.

    Laid out b b c c a a d d, the median row falls in c's group; cutting after it leaves 4 | 4,
    so the classes are {b, c} and {a, d} — for every row order (first appearance would give
    {a, b} | {c, d} for rows a a b b c c d d)."""
    h = TableHierarchy("v", {"b": ["*"], "c": ["*"], "a": ["*"], "d": ["*"]}, 2)
    base = ["a", "a", "b", "b", "c", "c", "d", "d"]
    for order in (base, base[::-1], ["d", "a", "c", "b"] * 2, ["c", "b", "d", "a"] * 2):
        r = mondrian([(pd.Series(order, name="v"), h)], Policy(k=4))
        got = dict(zip(order, pd.Series(r.columns["v"]).astype(str), strict=True))
        assert got == {"b": "{b, c}", "c": "{b, c}", "a": "{a, d}", "d": "{a, d}"}, order


def test_without_a_listed_order_values_are_laid_out_in_sorted_label_order():
    """A suppression-only hierarchy lists no order: sorted labels a b c d, cut {a, b} | {c, d}."""
    base = ["d", "d", "b", "b", "a", "a", "c", "c"]
    for order in (base, base[::-1], ["c", "a", "d", "b"] * 2):
        r = mondrian([(pd.Series(order, name="v"), SuppressionHierarchy("v"))], Policy(k=4))
        got = dict(zip(order, pd.Series(r.columns["v"]).astype(str), strict=True))
        assert got == {"a": "{a, b}", "b": "{a, b}", "c": "{c, d}", "d": "{c, d}"}, order
