"""Invariants of measure_risk (hypothesis) and the EMDs against a linear-programming solver."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from anon_dagster import measure_risk
from anon_dagster.hierarchies import TableHierarchy

QI_VALUES = st.sampled_from(["a", "b", "c", None])
ROWS = st.lists(
    st.tuples(QI_VALUES, st.integers(0, 2), st.sampled_from(["x", "y", "z", "w", None])),
    min_size=1, max_size=30,
)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def frame(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["q1", "q2", "s"])


def figures(df: pd.DataFrame, **kwargs) -> dict:
    d = measure_risk(df, ["q1", "q2"], "s", recursive_c=2, uniqueness=False, **kwargs).to_dict()
    return d


def assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], float):
            assert b[key] == pytest.approx(a[key], rel=1e-9, abs=1e-12), key
        elif key not in ("quasi_identifiers", "sensitive"):
            assert a[key] == b[key], key


@SETTINGS
@given(ROWS, st.randoms(use_true_random=False))
def test_invariant_under_row_permutation_and_index(rows, rnd):
    df = frame(rows)
    base = figures(df)
    perm = list(range(len(df)))
    rnd.shuffle(perm)
    shuffled = df.iloc[perm]  # keeps the old labels in a shuffled order
    assert_same(base, figures(shuffled))
    relabelled = shuffled.copy()
    relabelled.index = [f"id{rnd.randint(0, 5)}" for _ in range(len(df))]  # duplicates too
    assert_same(base, figures(relabelled))


@SETTINGS
@given(ROWS)
def test_invariant_under_renaming_values(rows):
    df = frame(rows)
    renamed = pd.DataFrame({
        "q1": df["q1"].map({"a": "zz", "b": "yy", "c": "xx"}),  # None stays missing
        "q2": df["q2"] * 10 + 7,
        "s": df["s"].map({"x": 1.5, "y": "w", "z": "x", "w": "new"}),
    })
    assert_same(figures(df), figures(renamed))


@SETTINGS
@given(ROWS)
def test_definitions_against_group_by(rows):
    df = frame(rows)
    d = figures(df)
    sizes = df.groupby(["q1", "q2"], dropna=False).size()
    assert d["rows"] == len(df)
    assert d["classes"] == len(sizes)
    assert d["k"] == sizes.min()
    assert d["prosecutor_avg"] == pytest.approx(d["classes"] / d["rows"])
    assert d["prosecutor_max"] == pytest.approx(1 / d["k"])
    assert d["uniques_fraction"] == pytest.approx((sizes == 1).sum() / len(df))
    # l and t by brute force over the groups (missing sensitive value = its own value)
    s = df["s"].fillna("<missing>")
    p = s.value_counts(normalize=True)
    l_min, h_min, t_max, rec_min = math.inf, math.inf, 0.0, math.inf
    positions = df.reset_index(drop=True).groupby(["q1", "q2"], dropna=False).indices
    s = s.reset_index(drop=True)
    for idx in positions.values():
        counts = s.iloc[idx].value_counts()
        q = counts / counts.sum()
        r = np.sort(counts.to_numpy())[::-1]
        rec_min = min(rec_min, sum(r[0] < 2 * r[l - 1:].sum() for l in range(1, len(r) + 1)))  # noqa: E741
        l_min = min(l_min, len(q))
        h_min = min(h_min, float(-(q * np.log(q)).sum()))
        t_max = max(t_max, 0.5 * float((q.reindex(p.index, fill_value=0) - p).abs().sum()))
    assert d["l_distinct"] == l_min
    assert d["l_entropy"] == pytest.approx(math.exp(h_min))
    assert d["t_closeness"] == pytest.approx(t_max, abs=1e-12)
    assert d["l_recursive"] == rec_min


def emd_lp(q: np.ndarray, p: np.ndarray, dist: np.ndarray) -> float:
    """Earth mover's distance by linear programming (the definition, no shortcut)."""
    m = len(p)
    a_eq = []
    for i in range(m):
        row = np.zeros((m, m))
        row[i, :] = 1
        a_eq.append(row.ravel())
    for j in range(m):
        col = np.zeros((m, m))
        col[:, j] = 1
        a_eq.append(col.ravel())
    res = linprog(dist.ravel(), A_eq=np.array(a_eq), b_eq=np.r_[q, p], bounds=(0, None), method="highs")
    return float(res.fun)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("AB"), st.integers(0, 5)), min_size=2, max_size=40))
def test_ordered_emd_equals_linear_program(rows):
    df = pd.DataFrame(rows, columns=["q", "v"])
    m_values = np.sort(df["v"].unique())
    m = len(m_values)
    got = measure_risk(df, ["q"], "v", sensitive_kind="numeric", uniqueness=False)
    if m == 1:
        assert got.t_closeness == 0
        return
    rank = {v: i for i, v in enumerate(m_values)}
    dist = np.abs(np.subtract.outer(np.arange(m), np.arange(m))) / (m - 1)
    p = df["v"].map(rank).value_counts(normalize=True).reindex(range(m), fill_value=0).to_numpy()
    expected = 0.0
    for _, grp in df.groupby("q"):
        q = grp["v"].map(rank).value_counts(normalize=True).reindex(range(m), fill_value=0).to_numpy()
        expected = max(expected, emd_lp(q, p, dist))
    assert got.t_closeness == pytest.approx(expected, abs=1e-7)


LEAVES = ["flu", "pneumonia", "bronchitis", "ulcer", "gastritis", "colitis"]
TREE = {  # leaf -> (level 1, level 2)
    "flu": ("infection", "respiratory"), "pneumonia": ("infection", "respiratory"),
    "bronchitis": ("airway", "respiratory"), "ulcer": ("stomach", "digestive"),
    "gastritis": ("stomach", "digestive"), "colitis": ("colon", "digestive"),
}


@pytest.fixture(scope="module")
def disease_hierarchy(tmp_path_factory):
    path = tmp_path_factory.mktemp("h") / "disease.csv"
    path.write_text("".join(f"{leaf};{a};{b};*\n" for leaf, (a, b) in TREE.items()))
    return TableHierarchy.from_csv("d", path)


def lca_distance(a: str, b: str) -> float:
    if a == b:
        return 0.0
    if TREE[a][0] == TREE[b][0]:
        return 1 / 3
    if TREE[a][1] == TREE[b][1]:
        return 2 / 3
    return 1.0


@settings(max_examples=30, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from("AB"), st.sampled_from(LEAVES)), min_size=2, max_size=30))
def test_hierarchical_emd_equals_linear_program(disease_hierarchy, rows):
    df = pd.DataFrame(rows, columns=["q", "d"])
    got = measure_risk(df, ["q"], "d", sensitive_hierarchy=disease_hierarchy, uniqueness=False)
    dist = np.array([[lca_distance(a, b) for b in LEAVES] for a in LEAVES])
    p = df["d"].value_counts(normalize=True).reindex(LEAVES, fill_value=0).to_numpy()
    expected = max(
        emd_lp(grp["d"].value_counts(normalize=True).reindex(LEAVES, fill_value=0).to_numpy(), p, dist)
        for _, grp in df.groupby("q")
    )
    assert got.t_closeness == pytest.approx(expected, abs=1e-7)
