"""The risk-utility frontier of the lattice search: complete vs partial, against brute force.

The frontier is the set of minimal nodes satisfying the monotone part of the policy (here k
with a suppression budget): a node whose classes below k hold at most the budget's rows, and no
node one level lower on a single QI does. The brute force enumerates every node with plain
pandas (``apply_levels`` then a groupby).
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.anonymize import NoSolution, anonymize, apply_levels
from anon_dagster.anonymize.coding import code_qi
from anon_dagster.anonymize.criteria import Policy
from anon_dagster.anonymize.lattice import Lattice
from anon_dagster.errors import SpecError, UserError
from anon_dagster.hierarchies import TableHierarchy
from tests.support.specs import release_spec

QIS = ["age", "sex", "code"]
TOP = {"age": 3, "sex": 1, "code": 2}


def make_spec(k, max_sup, frontier):
    columns = {
        "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [2, 4]}},
        "sex": {"role": "quasi"},
        "code": {"role": "quasi", "hierarchy": {"type": "mask", "keep": [1]}},
    }
    return release_spec(columns, release="frontier", thresholds={"k": k}, publication="o.parquet",
                        anonymization={"method": "global", "k": k, "max_suppression": max_sup, "utility": "loss",
                                       "frontier": frontier})


def brute_minimal(df, spec, k, max_sup) -> dict[tuple, int]:
    """Minimal satisfying nodes (as (age, sex, code) levels) -> rows suppressed there."""
    budget = math.floor(max_sup * len(df) + 1e-9)
    ok: dict[tuple, int] = {}
    for node in itertools.product(*(range(TOP[q] + 1) for q in QIS)):
        gen = apply_levels(df, spec.hierarchies, dict(zip(QIS, node, strict=True)))
        sizes = gen[QIS].astype(str).groupby(QIS).size()
        suppressed = int(sizes[sizes < k].sum())
        if suppressed <= budget:
            ok[node] = suppressed
    return {n: s for n, s in ok.items()
            if not any(tuple(v - (i == j) for i, v in enumerate(n)) in ok for j in range(3) if n[j] > 0)}


@st.composite
def tables(draw):
    n = draw(st.integers(min_value=5, max_value=40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return pd.DataFrame({
        "age": rng.integers(20, 20 + draw(st.integers(1, 16)), n),
        "sex": rng.choice(["F", "M"], n),
        "code": [f"{a}{b}" for a, b in zip(rng.choice(list("AB"), n), rng.choice(list("xyz"), n), strict=True)],
    })


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 5), st.sampled_from([0.0, 0.1, 0.3]))
def test_complete_frontier_equals_brute_force_and_partial_is_a_subset(df, k, max_sup):
    spec = make_spec(k, max_sup, "complete")
    truth = brute_minimal(df, spec, k, max_sup)
    if not truth:
        with pytest.raises(NoSolution):
            anonymize(df, spec)
        return
    search = anonymize(df, spec).record.search
    assert search["frontier_complete"] is True
    got = {tuple(n["levels"][q] for q in QIS): n["suppressed_rows"] for n in search["frontier"]}
    assert got == truth
    assert all(n["loss"] is not None for n in search["frontier"])  # k alone: every one satisfies
    partial = anonymize(df, make_spec(k, max_sup, "partial")).record.search
    got_p = {tuple(n["levels"][q] for q in QIS): n["suppressed_rows"] for n in partial["frontier"]}
    assert got_p.items() <= truth.items()
    if partial["frontier_complete"]:
        assert got_p == truth
    else:
        assert len(got_p) < len(truth) or partial["nodes_checked"] < search["nodes_checked"]


def test_frontier_option_is_validated():
    with pytest.raises(SpecError):
        make_spec(2, 0.0, "everything")
    df = pd.DataFrame({"a": ["x", "y"] * 4})
    lat = Lattice([code_qi(df["a"], None)], Policy(k=2))
    with pytest.raises(UserError, match="complete"):
        lat.search(frontier="everything")


@pytest.fixture(scope="module")
def adult8(adult_dir: Path):
    qis = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
    df = pd.read_csv(adult_dir / "adult.csv", sep=";")
    return [code_qi(df[c], TableHierarchy.from_csv(c, adult_dir / f"adult_hierarchy_{c}.csv")) for c in qis]


def test_adult_with_suppression_partial_by_default_complete_on_request(adult8):
    """Adult, 8 QIs (6,480 nodes), k=5, 5 % suppression: the default lists the settled minimal
    nodes only and says so; ``complete`` lists them all, a superset with the same figures."""
    policy = Policy(k=5, max_suppression=0.05)
    default = Lattice(adult8, policy, metric="loss").search(frontier=None)
    full_lat = Lattice(adult8, policy, metric="loss")
    full = full_lat.search(frontier="complete")
    assert default.frontier_complete is False and full.frontier_complete is True
    assert default.levels == full.levels  # the optimum does not depend on the frontier
    by_levels = {f.levels: (f.suppressed, f.loss) for f in full.frontier}
    assert len(default.frontier) < len(full.frontier)
    for f in default.frontier:
        assert by_levels[f.levels] == (f.suppressed, pytest.approx(f.loss))
    # complete: every passing node generalizes some frontier node, and no frontier node has a
    # passing direct specialization (status tags are the monotone verdicts)
    passing = full_lat.status == 1
    radix = full_lat._radix
    for f in full.frontier:
        idx = full_lat.index(f.levels)
        assert passing[idx]
        assert not any(passing[idx - int(radix[j])] for j in range(len(f.levels)) if f.levels[j] > 0)
    front = np.array([f.levels for f in full.frontier])
    nodes = full_lat.nodes[passing]
    covered = (nodes[:, None, :] >= front[None, :, :]).all(axis=2).any(axis=1)
    assert covered.all()
