"""Brute-force population counts: F of a published class, by testing every population row's raw
values against the class's labels (independent of the placement code under test).

The labels understood are those of the age/sex/region releases the tests build: ``*``, integer
ranges ``lo-hi``, interval labels ``[lo, hi)``, sets ``{a, b}`` and plain values.
"""

from __future__ import annotations

import re

import pandas as pd


def age_inside(label: str, age: float) -> bool:
    """Whether a raw age lies in a published age label."""
    if label == "*":
        return True
    m = re.fullmatch(r"(-?\d+)-(-?\d+)", label)
    if m:
        return int(m.group(1)) <= age <= int(m.group(2))
    m = re.fullmatch(r"\[(\S+), (\S+)\)", label)  # interval hierarchy labels [lo, hi)
    if m:
        return float(m.group(1)) <= age < float(m.group(2))
    return float(label) == age


def sex_inside(label: str, sex: str) -> bool:
    """Whether a raw sex matches a published sex label."""
    if label == "*":
        return True
    if label.startswith("{"):
        return sex in {x.strip() for x in label[1:-1].split(",")}
    return label == sex


def brute_force_f(published: pd.DataFrame, population: pd.DataFrame) -> dict[tuple, int]:
    """F per published (age, sex, region) class: the population rows whose raw values it covers."""
    out = {}
    for age_l, sex_l, region in published[["age", "sex", "region"]].astype(str).drop_duplicates().itertuples(index=False):
        n = sum(1 for a, s, r in population[["age", "sex", "region"]].itertuples(index=False)
                if str(r) == region and age_inside(age_l, a) and sex_inside(sex_l, s))
        out[(age_l, sex_l, region)] = n
    return out
