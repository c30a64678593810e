"""The lattice search's statuses against brute force: every node it settles (the pair nodes
counted from the pairs' joint counts before the search, and every node tagged from a check)
has the status its classes give, and the node it returns is the optimum.

The brute force generalizes the rows with the hierarchies' own ``generalize``, counts classes
with pandas and applies the monotone part of the policy as documented: a node passes when the
rows of its classes smaller than k fit the suppression budget (and, without suppression,
published classes / rows <= prosecutor_avg).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.anonymize.coding import code_qi
from anon_dagster.anonymize.criteria import Policy
from anon_dagster.anonymize.lattice import FAIL, PASS, UNKNOWN, Lattice
from anon_dagster.hierarchies import IntervalHierarchy, MaskHierarchy, SuppressionHierarchy


@st.composite
def tables(draw):
    """A table of 3 or 4 QIs with small hierarchies, and sometimes a pinned column (a QI of one
    level, as a partition key is coded)."""
    n = draw(st.integers(min_value=8, max_value=120))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    columns, hierarchies = {}, {}
    for i in range(draw(st.integers(3, 4))):
        kind = draw(st.sampled_from(["interval", "mask", "flat"]))
        name = f"q{i}"
        if kind == "interval":
            columns[name] = rng.integers(0, draw(st.integers(2, 30)), n)
            hierarchies[name] = IntervalHierarchy(name, sorted(draw(st.sets(st.sampled_from([2, 4, 8]), min_size=1, max_size=2))))
        elif kind == "mask":
            columns[name] = [f"{a}{b}" for a, b in zip(rng.choice(list("ABC"), n), rng.choice(list("xyz"), n),
                                                        strict=True)]
            hierarchies[name] = MaskHierarchy(name, [1])
        else:
            columns[name] = rng.choice(["F", "M", "X"][:draw(st.integers(2, 3))], n)
            hierarchies[name] = SuppressionHierarchy(name)
    if draw(st.booleans()):
        columns["pk"] = rng.choice(["2023", "2024"], n)
        hierarchies["pk"] = None
    return pd.DataFrame(columns), hierarchies


def brute_status(df, hierarchies, policy: Policy, budget: int, node) -> bool:
    """The monotone verdict of one node from the rows (module docstring)."""
    labels = {c: (df[c] if h is None else h.generalize(df[c], lv)).astype(str)
              for (c, h), lv in zip(hierarchies.items(), node, strict=True)}
    sizes = pd.DataFrame(labels).groupby(list(labels), sort=False).size().to_numpy()
    small = sizes < policy.k
    rows = int(sizes[small].sum())
    ok = rows <= budget
    if ok and budget == 0 and policy.prosecutor_avg is not None:
        ok = len(sizes) / len(df) <= policy.prosecutor_avg + 1e-9
    return ok


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(2, 6), st.sampled_from([0.0, 0.0, 0.05, 0.2]),
       st.sampled_from([None, None, 0.3, 0.6]), st.sampled_from(["loss", "entropy"]))
def test_every_settled_node_has_the_status_its_classes_give(table, k, max_sup, prosecutor_avg, metric):
    df, hierarchies = table
    qis = [code_qi(df[c], h) for c, h in hierarchies.items()]
    policy = Policy(k=k, max_suppression=max_sup, prosecutor_avg=prosecutor_avg)
    lat = Lattice(qis, policy, metric=metric)
    res = lat.search(frontier=False)
    budget = math.floor(max_sup * len(df) + 1e-9)
    mono = policy.monotone(budget > 0)
    truth = {node: brute_status(df, hierarchies, mono, budget, node)
             for node in itertools.product(*(range(q.n_levels) for q in qis))}
    settled = 0
    for node, ok in truth.items():
        status = lat.status[lat.index(node)]
        if status != UNKNOWN:
            settled += 1
            assert status == (PASS if ok else FAIL), (node, ok, status)
    assert settled >= 1
    # the optimum: the least loss over every node that passes the whole policy
    full = Lattice(qis, policy, metric=metric)
    losses = [info.loss for idx in range(full.size) if (info := full.evaluate(idx)).satisfied]
    if not losses:
        assert not res.solved
    else:
        assert res.solved and res.loss == pytest.approx(min(losses), rel=1e-12, abs=1e-12)


def test_pair_nodes_are_settled_before_any_check():
    # 3 QIs: the pair nodes (two QIs below the top, one at it) settle from the pairs' counts;
    # here the pair (a, b) at its finest fails (a lone row), so every node below it does too
    df = pd.DataFrame({"a": [1, 1, 1, 1, 2, 2, 2, 3], "b": list("xxxxyyyy"), "c": list("PPQQPPQQ")})
    qis = [code_qi(df["a"], IntervalHierarchy("a", [2])), code_qi(df["b"], SuppressionHierarchy("b")),
           code_qi(df["c"], SuppressionHierarchy("c"))]
    lat = Lattice(qis, Policy(k=2), metric="loss")
    lat._settle_pairs()
    assert lat.status[lat.index([0, 0, 1])] == FAIL  # a=3 is alone whatever b is
    assert lat.status[lat.index([0, 0, 0])] == FAIL  # a specialization of it
    assert lat.status[lat.index([1, 0, 1])] == PASS  # a in 0-1 / 2-3, b kept: classes of 4
    assert lat.status[lat.index([1, 1, 1])] == PASS  # a generalization of a passing pair node
    res = lat.search(frontier=False)
    assert res.levels is not None and lat.status[lat.index(res.levels)] == PASS
