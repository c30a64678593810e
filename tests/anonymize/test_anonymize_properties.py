"""Property tests (hypothesis) of anonymize: random tables, hierarchies and policies.

For global recoding + suppression and for Mondrian: every published class has at least k rows
(classes over all QIs, partition keys included), published + suppressed = input, suppression
stays within budget, partition-key columns and untouched columns are unchanged row for row.
When the method reports "no solution", the policy is indeed unreachable.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.anonymize import NoSolution, anonymize
from anon_dagster.spec import spec_from_dict
from tests.support.specs import release_spec

REPO = Path(__file__).resolve().parents[2]


@st.composite
def cases(draw):
    n = draw(st.integers(min_value=1, max_value=120))
    seed = draw(st.integers(min_value=0, max_value=2**31 - 1))
    rng = np.random.default_rng(seed)
    age_hi = draw(st.integers(min_value=1, max_value=90))
    widths = draw(st.sampled_from([[2], [5, 10], [3, 6, 12], [10, 20, 40]]))
    zips = draw(st.integers(min_value=1, max_value=30))
    n_parts = draw(st.integers(min_value=0, max_value=4))
    cat_n = draw(st.integers(min_value=1, max_value=6))
    df = pd.DataFrame({
        "age": rng.integers(0, age_hi + 1, n),
        "zip": [f"{28000 + int(z):05d}" for z in rng.integers(0, zips * 37, n)],
        "cat": rng.choice([f"c{i}" for i in range(cat_n)], n),
        "other": rng.normal(size=n),
    })
    columns = {
        "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": widths}},
        "zip": {"role": "quasi", "hierarchy": {"type": "mask", "keep": [4, 2]}},
        "cat": {"role": "quasi"},
        "other": {"role": "insensitive"},
    }
    if n_parts:
        df["part"] = rng.choice([f"p{i}" for i in range(n_parts)], n)
        columns["part"] = {"role": "quasi", "partition_key": True}
    df.index = pd.Index(rng.permutation(np.arange(1000, 1000 + n)))  # arbitrary labels
    k = draw(st.integers(min_value=1, max_value=8))
    max_sup = draw(st.sampled_from([0.0, 0.05, 0.2, 0.5]))
    return df, columns, k, max_sup


def _spec(columns, method, k, max_sup, utility="loss"):
    return release_spec(columns, release="prop", publication="p.csv", base=REPO,
                        anonymization={"method": method, "k": k, "max_suppression": max_sup, "utility": utility})


def _check(df, spec, result):
    k, qis, n = spec.anonymization.k, spec.quasi_identifiers, len(df)
    data = result.data
    assert len(data) + result.suppressed == n
    assert result.suppressed <= math.floor(spec.anonymization.max_suppression * n + 1e-9)
    assert data.index.isin(df.index).all() and data.index.is_unique
    if len(data):
        sizes = data.groupby(qis, observed=True, dropna=False).size()
        assert sizes.min() >= k
        assert result.record.classes.k >= k
    for col in spec.partition_keys + ["other"]:
        assert data[col].equals(df.loc[data.index, col])
    assert result.record.rows_in == n and result.record.rows_out == len(data)


def _unreachable(df, spec) -> bool:
    """Even the fully generalized table misses k beyond the budget (classes = partition-key groups)."""
    k, n = spec.anonymization.k, len(df)
    if k > n:
        return True
    pks = spec.partition_keys
    sizes = df.groupby(pks).size() if pks else pd.Series([n])
    return int(sizes[sizes < k].sum()) > math.floor(spec.anonymization.max_suppression * n + 1e-9)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from(["loss", "entropy", "discernibility", "aecs"]))
def test_global_recoding_with_suppression_properties(case, utility):
    df, columns, k, max_sup = case
    spec = _spec(columns, "global", k, max_sup, utility)
    try:
        result = anonymize(df, spec)
    except NoSolution:
        assert _unreachable(df, spec)
        return
    except Exception as exc:  # k > rows is a DataError: only acceptable then
        assert k > len(df), exc
        return
    assert not _unreachable(df, spec)
    _check(df, spec, result)
    assert set(result.record.levels) == set(spec.generalized_qis)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_mondrian_properties(case):
    df, columns, k, max_sup = case
    spec = _spec(columns, "mondrian", k, max_sup)
    try:
        result = anonymize(df, spec)
    except NoSolution:
        assert _unreachable(df, spec)
        return
    except Exception as exc:
        assert k > len(df), exc
        return
    assert not _unreachable(df, spec)
    _check(df, spec, result)
    # Mondrian suppresses only whole partition-key parts that are too small
    if result.suppressed:
        gone = df.loc[~df.index.isin(result.data.index)]
        sizes = df.groupby("part").size()
        assert (sizes[gone["part"].unique()] < k).all()
    # numeric QIs are published as intervals containing the original value
    for idx, label in result.data["age"].astype(str).items():
        lo, _, hi = label.partition("-")
        assert int(lo) <= df.at[idx, "age"] <= int(hi or lo)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from(["global", "mondrian"]), st.integers(min_value=1, max_value=3))
def test_l_diversity_holds_in_every_published_class(case, method, l_value):
    df, columns, k, max_sup = case
    df = df.assign(dx=np.random.default_rng(len(df)).choice(["a", "b", "c", "d"], len(df)))
    columns = {**columns, "dx": {"role": "sensitive"}}
    raw = {
        "release": "prop", "source": {"path": "x.csv"}, "columns": columns,
        "anonymization": {"method": method, "k": k, "max_suppression": max_sup},
        "policy": {"thresholds": {"l_distinct": l_value}},
        "publication": {"path": "p.csv"},
    }
    spec = spec_from_dict(raw, REPO / "spec.yaml")
    try:
        result = anonymize(df, spec)
    except NoSolution:
        return
    except Exception as exc:
        assert k > len(df), exc
        return
    _check(df, spec, result)
    if len(result.data):
        distinct = result.data.groupby(spec.quasi_identifiers, observed=True, dropna=False)["dx"].nunique()
        assert distinct.min() >= l_value


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_cell_suppression_properties(case):
    df, columns, k, max_sup = case
    raw = {
        "release": "prop", "source": {"path": "x.csv"}, "columns": columns,
        "anonymization": {"method": "global", "k": k, "max_suppression": max_sup, "suppression": "cells"},
        "publication": {"path": "p.csv"},
    }
    spec = spec_from_dict(raw, REPO / "spec.yaml")
    try:
        result = anonymize(df, spec)
    except NoSolution:
        assert _unreachable(df, spec)
        return
    except Exception as exc:
        assert k > len(df), exc
        return
    _check(df, spec, result)
    stars = sum(int((result.data[c].astype(str) == "*").sum()) for c in spec.generalized_qis)
    assert stars >= result.record.suppression.cells_total  # every counted cell is a published '*'


def test_empty_table_gives_an_empty_result():
    df = pd.DataFrame({"age": pd.Series([], dtype="int64"), "zip": pd.Series([], dtype="str"),
                       "cat": pd.Series([], dtype="str"), "other": pd.Series([], dtype="float64")})
    columns = {
        "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [5]}},
        "zip": {"role": "quasi", "hierarchy": {"type": "mask", "keep": [2]}},
        "cat": {"role": "quasi"}, "other": {"role": "insensitive"},
    }
    r = anonymize(df, _spec(columns, "global", 5, 0.0))
    assert len(r.data) == 0 and r.suppressed == 0 and r.record.rows_in == 0
