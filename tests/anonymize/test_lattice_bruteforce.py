"""Optimal global recoding checked from outside against an independent brute force.

Specs and tables that are not the repository's: a QI with only its two-level hierarchy
(value → ``*``), recursive (c,l)-diversity and t-closeness together with suppression, and the
``discernibility`` and ``query:<name>`` utilities. The brute force below re-implements the
documented semantics with plain pandas (generalize with ``apply_levels``, group, suppress every
row of a class that misses a per-class criterion, accept the node when the suppressed rows fit
the budget) and compares the optimum value with what ``anonymize`` returns.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.anonymize import NoSolution, anonymize, apply_levels
from anon_dagster.spec import spec_from_dict
from tests.support.specs import release_spec

QIS = ["age", "sex", "code"]
LEVELS = {"age": 3, "sex": 1, "code": 2}  # highest level of each QI (the `*` level)


def make_spec(k, max_sup, utility, thresholds, queries=()):
    columns = {
        "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [2, 4]}},
        "sex": {"role": "quasi"},  # no hierarchy: value, then *
        "code": {"role": "quasi", "hierarchy": {"type": "mask", "keep": [1]}},
        "dx": {"role": "sensitive"},
    }
    return release_spec(columns, release="ext2", thresholds={"k": k, **thresholds}, utility_queries=list(queries),
                        anonymization={"method": "global", "k": k, "max_suppression": max_sup, "utility": utility})


def class_fails(dx: pd.Series, thresholds: dict, k: int, overall: pd.Series) -> bool:
    """Whether one class misses a per-class criterion (the definitions of docs/contracts.md and docs/risk.md)."""
    counts = dx.value_counts().sort_values(ascending=False).to_numpy()
    if len(dx) < k:
        return True
    if "l_distinct" in thresholds and len(counts) < thresholds["l_distinct"]:
        return True
    if "recursive_cl" in thresholds:
        c, l_ = thresholds["recursive_cl"]["c"], thresholds["recursive_cl"]["l"]
        tail = counts[l_ - 1:].sum() if len(counts) >= l_ else 0
        if not counts[0] < c * tail:
            return True
    if "t_closeness" in thresholds:
        dist = dx.value_counts(normalize=True).reindex(overall.index, fill_value=0.0)
        if 0.5 * float((dist - overall).abs().sum()) > thresholds["t_closeness"] + 1e-9:
            return True
    return False


def brute_force(df, spec, thresholds, k, max_sup, value_of):
    """Every node of the lattice: (levels, value) for the nodes that satisfy the policy."""
    budget = math.floor(max_sup * len(df) + 1e-9)
    overall = df["dx"].value_counts(normalize=True)
    found = []
    for node in itertools.product(*(range(LEVELS[q] + 1) for q in QIS)):
        levels = dict(zip(QIS, node, strict=True))
        gen = apply_levels(df, spec.hierarchies, levels)
        keys = gen[QIS].astype(str)
        groups = keys.groupby(QIS, sort=False).ngroup()
        failing = pd.Series(False, index=df.index)
        for _, idx in groups.groupby(groups).groups.items():
            if class_fails(df.loc[idx, "dx"], thresholds, k, overall):
                failing.loc[idx] = True
        if failing.sum() > budget:
            continue
        kept = ~failing
        found.append((levels, value_of(gen[kept], groups[kept], int(failing.sum()), df, kept)))
    return found


def discernibility(_gen, groups, suppressed, df, _kept):
    sizes = groups.value_counts()
    return float((sizes.astype(float) ** 2).sum() + suppressed * len(df))


def sex_query_error(gen, _groups, _suppressed, df, kept):
    """Prevalence of each dx value by sex, asked of the input and of the published rows: groups
    matched by label (the published "*" is no input group), a group one table lacks at 0 %."""
    published = gen.assign(dx=df.loc[kept, "dx"])
    orig = pd.crosstab(df["sex"].astype(str), df["dx"], normalize="index") * 100
    pub = pd.crosstab(published["sex"].astype(str), published["dx"], normalize="index") * 100
    rows = orig.index.union(pub.index)
    cols = orig.columns.union(pub.columns)
    orig = orig.reindex(index=rows, columns=cols, fill_value=0.0)
    pub = pub.reindex(index=rows, columns=cols, fill_value=0.0)
    return float((orig - pub).abs().to_numpy().max())


@st.composite
def tables(draw):
    n = draw(st.integers(min_value=4, max_value=40))
    seed = draw(st.integers(min_value=0, max_value=2**32 - 1))
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.integers(20, 20 + draw(st.integers(1, 16)), n),
        "sex": rng.choice(["F", "M"], n),
        "code": [f"{a}{b}" for a, b in zip(rng.choice(list("AB"), n), rng.choice(list("xyz"), n), strict=True)],
        "dx": rng.choice(["d1", "d2", "d3"], n, p=[0.5, 0.3, 0.2]),
    }, index=pd.Index(rng.permutation(n) + 100))


POLICIES = [
    {"recursive_cl": {"c": 2.0, "l": 2}},
    {"t_closeness": 0.35},
    {"l_distinct": 2, "t_closeness": 0.5},
    {"recursive_cl": {"c": 3.0, "l": 2}, "t_closeness": 0.4},
]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.sampled_from(POLICIES), st.integers(1, 4), st.sampled_from([0.0, 0.1, 0.3]))
def test_discernibility_optimum_equals_brute_force(df, thresholds, k, max_sup):
    spec = make_spec(k, max_sup, "discernibility", thresholds)
    feasible = brute_force(df, spec, thresholds, k, max_sup, discernibility)
    if not feasible:
        with pytest.raises(NoSolution):
            anonymize(df, spec)
        return
    result = anonymize(df, spec)
    best = min(v for _, v in feasible)
    chosen = result.record.levels
    assert chosen in [lv for lv, _ in feasible], "the chosen node must satisfy the policy"
    assert math.isclose([v for lv, v in feasible if lv == chosen][0], best)
    assert result.suppressed + len(result.data) == len(df)
    assert result.suppressed <= math.floor(max_sup * len(df) + 1e-9)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 4), st.sampled_from([0.0, 0.2]))
def test_query_utility_optimum_equals_brute_force(df, k, max_sup):
    query = {"name": "dx_by_sex", "group_by": ["sex"], "target": "dx"}
    thresholds = {"l_distinct": 1}
    spec = make_spec(k, max_sup, "query:dx_by_sex", thresholds, [query])
    feasible = brute_force(df, spec, thresholds, k, max_sup, sex_query_error)
    if not feasible:
        with pytest.raises(NoSolution):
            anonymize(df, spec)
        return
    result = anonymize(df, spec)
    best = min(v for _, v in feasible)
    chosen = result.record.levels
    got = [v for lv, v in feasible if lv == chosen]
    assert got, f"chosen node {chosen} does not satisfy the policy"
    assert got[0] == pytest.approx(best, abs=1e-6)
    assert result.record.utility.queries["dx_by_sex"] == pytest.approx(got[0], abs=1e-6)
    assert result.record.utility.value == pytest.approx(got[0], abs=1e-6)


def test_two_level_qi_hand_computed_loss():
    """sex has only value → *; age 10-year bins. With loss the optimum keeps sex and drops age.

    (sex=0, age=*): sex cells cost 0, age cells 1 → 6/12 = 0.5.
    (sex=*, age=10-bin): 6 sex cells cost 1, each age bin covers 3 of 6 ages (2/5) → 8.4/12 = 0.7.
    """
    df = pd.DataFrame({"sex": ["M", "F", "M", "F", "M", "F"], "age": [20, 21, 22, 30, 31, 32],
                       "dx": list("aabbab")})
    spec = spec_from_dict({
        "release": "two", "source": {"path": "x.csv"},
        "columns": {"sex": {"role": "quasi"},
                    "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [10]}},
                    "dx": {"role": "sensitive"}},
        "anonymization": {"method": "global", "k": 3, "max_suppression": 0, "utility": "loss"},
        "policy": {"thresholds": {"k": 3}}, "publication": {"path": "o.parquet"},
    })
    result = anonymize(df, spec)
    assert result.record.levels == {"sex": 0, "age": 2}
    assert result.record.utility.value == pytest.approx(0.5)
    assert set(result.data["age"].astype(str)) == {"*"}
    assert list(result.data["sex"]) == list(df["sex"])
    frontier = {tuple(sorted(n["levels"].items())): n["loss"] for n in result.record.search["frontier"]}
    assert frontier[(("age", 1), ("sex", 1))] == pytest.approx(0.7)


def test_no_solution_names_closest_node_and_the_missed_criterion():
    """Only two diagnoses exist: l_distinct=3 is out of reach at every node, even the top."""
    df = pd.DataFrame({"sex": ["M", "F"] * 4, "age": [20, 21, 22, 23, 30, 31, 32, 33], "dx": list("abab" * 2)})
    spec = spec_from_dict({
        "release": "nosol", "source": {"path": "x.csv"},
        "columns": {"sex": {"role": "quasi"},
                    "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [10]}},
                    "dx": {"role": "sensitive"}},
        "anonymization": {"method": "global", "k": 2, "max_suppression": 0.25},
        "policy": {"thresholds": {"k": 2, "l_distinct": 3}}, "publication": {"path": "o.parquet"},
    })
    with pytest.raises(NoSolution) as exc:
        anonymize(df, spec)
    text = str(exc.value)
    assert "l_distinct" in text and "closest node" in text
    closest = exc.value.details["closest"]
    assert closest is not None and not closest["satisfied"]
    assert any("l_distinct" in m for m in closest["missing"])
