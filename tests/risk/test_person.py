"""Person-level risk: persons keyed by the multiset of their rows' classes."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster import measure_risk
from anon_dagster.risk import EquivalenceClasses
from anon_dagster.risk.person import PersonClasses, person_figures

rows = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 2), st.integers(0, 1), st.sampled_from("xyz")),
                min_size=1, max_size=80)


def frame(data) -> pd.DataFrame:
    return pd.DataFrame(data, columns=["person", "a", "b", "dx"]).assign(person=lambda d: "p" + d["person"].astype(str))


def brute_force(df: pd.DataFrame) -> dict:
    """The definitions, person by person, in plain Python."""
    keys = {p: frozenset(Counter(zip(g["a"], g["b"], strict=True)).items()) for p, g in df.groupby("person")}
    members: dict = {}
    for p, key in keys.items():
        members.setdefault(key, []).append(p)
    sizes = {p: len(members[k]) for p, k in keys.items()}
    values = {p: set(g["dx"]) for p, g in df.groupby("person")}
    n = len(keys)
    table = Counter()
    for v in values.values():
        for x in v:
            table[x] += 1 / len(v)
    l_d, l_e, t = math.inf, math.inf, 0.0
    for group in members.values():
        dist = Counter()
        for p in group:
            for x in values[p]:
                dist[x] += 1 / len(values[p]) / len(group)
        l_d = min(l_d, len(dist))
        l_e = min(l_e, math.exp(-sum(q * math.log(q) for q in dist.values())))
        t = max(t, 0.5 * sum(abs(dist.get(x, 0) - table[x] / n) for x in table))
    return {"persons": n, "person_classes": len(members), "k": min(sizes.values()),
            "prosecutor_avg": len(members) / n, "uniques_fraction": sum(s == 1 for s in sizes.values()) / n,
            "l_distinct": l_d, "l_entropy": l_e, "t_closeness": t}


def figures(df: pd.DataFrame) -> dict:
    return person_figures(EquivalenceClasses.from_frame(df, ["a", "b"]), df["person"], df[["dx"]])


def test_hand_computed_readmissions():
    # a and b were admitted twice, at ages 1 and 2: together they form a person class of 2;
    # c and d, admitted once, are alone although every row class holds 3 rows
    df = pd.DataFrame({"person": ["a", "a", "b", "b", "c", "d"], "a": [1, 2, 1, 2, 1, 2], "b": [0] * 6,
                       "dx": ["x", "y", "x", "x", "y", "y"]})
    out = figures(df)
    assert (out["persons"], out["person_classes"], out["k"]) == (4, 3, 1)
    assert out["prosecutor_avg"] == pytest.approx(3 / 4) and out["uniques_fraction"] == pytest.approx(1 / 2)
    assert out["l_distinct"] == 1 and out["t_closeness"] == pytest.approx(0.375)
    assert measure_risk(df, ["a", "b"]).k == 3  # per row, everybody looks 3-anonymous


@settings(max_examples=150)
@given(rows)
def test_person_figures_follow_the_definition(data):
    df = frame(data)
    out, expected = figures(df), brute_force(df)
    for key, value in expected.items():
        assert out[key] == pytest.approx(value), key


@settings(max_examples=100)
@given(rows, st.randoms(use_true_random=False))
def test_person_figures_do_not_depend_on_row_order(data, rnd):
    df = frame(data)
    shuffled = df.sample(frac=1.0, random_state=rnd.randint(0, 10_000)).reset_index(drop=True)
    assert figures(df) == pytest.approx(figures(shuffled))


@settings(max_examples=100)
@given(rows)
def test_one_row_per_person_gives_the_row_level_figures(data):
    df = frame(data).assign(person=lambda d: [f"q{i}" for i in range(len(d))])
    out = figures(df)
    row = measure_risk(df, ["a", "b"], sensitive="dx").to_dict()
    for key in ("k", "prosecutor_max", "prosecutor_avg", "uniques_fraction", "l_distinct", "l_entropy", "t_closeness"):
        assert out[key] == pytest.approx(row[key]), key


def test_an_unlinked_row_is_a_person_of_its_own():
    df = pd.DataFrame({"person": ["a", None, None], "a": [1, 1, 1], "b": [0, 0, 0], "dx": ["x"] * 3})
    pc = PersonClasses.build(EquivalenceClasses.from_frame(df, ["a", "b"]), df["person"])
    assert pc.n_persons == 3 and pc.sizes.tolist() == [3]


def test_journalist_risk_per_person_uses_the_smallest_population_class():
    df = pd.DataFrame({"person": ["a", "a", "b"], "a": [1, 2, 1], "b": [0, 0, 0], "dx": ["x"] * 3})
    ec = EquivalenceClasses.from_frame(df, ["a", "b"])
    f = np.array([10.0, 4.0])  # F of class (1,0) and (2,0), in class-id order
    f = f[np.argsort(ec.keys()["a"].to_numpy())]
    out = person_figures(ec, df["person"], population_sizes=f)
    assert out["journalist_max"] == pytest.approx(1 / 4)  # a is in the class of 4
    assert out["journalist_avg"] == pytest.approx((1 / 4 + 1 / 10) / 2)
