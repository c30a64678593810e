"""The lattice search judges every criterion as the release gate measures it.

For random tables, every sensitive kind (nominal, ordinal with a declared order, numeric,
hierarchical) and every node of a small lattice, the search's per-class figures (rolled up from
its bottom classes) equal, bit for bit, the figures ``measure_risk`` reports on the node's
published table; its verdict on the node equals the gate's verdict on the declared thresholds;
and with suppression allowed, the table ``anonymize`` publishes passes the gate's thresholds
whenever the search accepted a node.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.anonymize import NoSolution, anonymize, apply_levels
from anon_dagster.anonymize.coding import code_qi
from anon_dagster.anonymize.criteria import Policy, sensitive_attributes
from anon_dagster.anonymize.lattice import Lattice
from anon_dagster.release import gate
from anon_dagster.risk import measure_risk
from anon_dagster.risk.closeness import t_closeness
from anon_dagster.risk.sensitive import diversity, recursive_l
from tests.support.specs import release_spec

KINDS = ("nominal", "ordinal", "numeric", "hierarchical")
ORDER = ["3", "1", "0", "2", "5", "4", "7", "6"]  # a declared order unlike the sorted one


def spec_for(kind: str, thresholds: dict, max_suppression: float = 0.0):
    sensitive: dict = {"role": "sensitive"}
    if kind == "ordinal":
        sensitive.update(kind="ordinal", order=ORDER)
    elif kind == "numeric":
        sensitive.update(kind="numeric")
    elif kind == "hierarchical":
        sensitive.update(hierarchy={"type": "interval", "widths": [2, 4]})
    columns = {
        "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [2, 4]}},
        "sex": {"role": "quasi"},
        "s": sensitive,
    }
    return release_spec(columns, release="match", thresholds=thresholds, publication="o.parquet",
                        anonymization={"method": "global", "k": thresholds.get("k", 1),
                                       "max_suppression": max_suppression, "utility": "loss"})


@st.composite
def tables(draw):
    n = draw(st.integers(4, 40))
    ints = st.lists(st.integers(0, 7), min_size=n, max_size=n)
    return pd.DataFrame({
        "age": draw(ints),
        "sex": draw(st.lists(st.sampled_from(["F", "M", "X"]), min_size=n, max_size=n)),
        "s": draw(ints),
    })


def lattice_for(spec, df: pd.DataFrame, policy: Policy) -> Lattice:
    qis = [code_qi(df[c], spec.hierarchies[c]) for c in spec.generalized_qis]
    sens = [a.code(df[a.name]) for a in sensitive_attributes(spec, ["s"])]
    return Lattice(qis, policy, sens, metric="loss")


def published(spec, df: pd.DataFrame, levels) -> pd.DataFrame:
    return apply_levels(df, spec.hierarchies, dict(zip(spec.generalized_qis, levels, strict=True)))


def gate_figures(spec, table: pd.DataFrame, recursive_c: float):
    """Per-class t, entropy, distinct and recursive l of ``table``, keyed by the class's labels."""
    options = gate_options(spec)
    m = measure_risk(table, spec.quasi_identifiers, sensitive=["s"], recursive_c=recursive_c,
                     attribute_disclosure=False, **options)
    keys = m.equivalence_classes.keys()
    labels = [tuple(str(v) for v in row) for row in keys.itertuples(index=False)]
    res = m.sensitive_results[0]
    return {lab: (res.t[i], res.entropy[i], int(res.l_distinct[i]), int(res.l_recursive[i]))
            for i, lab in enumerate(labels)}, m


def gate_options(spec) -> dict:
    attr = sensitive_attributes(spec, ["s"])[0]
    options = {"sensitive_kind": attr.kind}
    if attr.order:
        options["sensitive_order"] = list(attr.order)
    if attr.hierarchy is not None:
        options["sensitive_hierarchy"] = attr.hierarchy
    return options


def search_figures(lat: Lattice, idx: int, recursive_c: float):
    """The same figures from the search's rolled-up classes, keyed by the class's labels."""
    st_ = lat.state(idx)
    pairs = st_.pairs[0]
    cells = pairs.cells(st_.sizes)
    t, _ = t_closeness(st_.sizes, pairs.coded, cells)
    div = diversity(st_.sizes, cells)
    rec = recursive_l(st_.sizes, cells, recursive_c)
    out = {}
    for i in range(len(st_.sizes)):
        label = tuple(str(q.labels[int(lv)][int(k[i])])
                      for q, lv, k in zip(lat.qis, st_.levels, st_.keys, strict=True))
        out[label] = (t[i], div.entropy[i], int(div.l_distinct[i]), int(rec[i]))
    return out


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(df=tables(), kind=st.sampled_from(KINDS), pick=st.integers(0, 10**6))
def test_per_class_figures_and_verdicts_equal_the_gates(df, kind, pick):
    # thresholds read off one node's own figures, so some nodes sit exactly on them
    probe = spec_for(kind, {"k": 1})
    lat = Lattice([code_qi(df[c], probe.hierarchies[c]) for c in probe.generalized_qis], Policy())
    node = lat.nodes[pick % lat.size]
    table = published(probe, df, node)
    measured = gate.measure(probe, table)
    thresholds = {"k": 2, "t_closeness": measured["t_closeness"], "l_distinct": 2,
                  "l_entropy": max(measured["l_entropy"], 1.0), "recursive_cl": {"c": 2.0, "l": 2}}
    spec = spec_for(kind, thresholds)
    policy = Policy.from_spec(spec)
    lat = lattice_for(spec, df, policy)
    for idx in range(lat.size):
        levels = tuple(int(v) for v in lat.nodes[idx])
        table = published(spec, df, levels)
        truth, _ = gate_figures(spec, table, 2.0)
        assert search_figures(lat, idx, 2.0) == truth  # identical floats, class by class
        outcomes = gate.threshold_outcomes(spec, gate.measure(spec, table))
        assert lat.evaluate(idx).satisfied == all(o.passed for o in outcomes), (levels, outcomes)


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(df=tables(), kind=st.sampled_from(KINDS), t=st.sampled_from([0.15, 0.3, 0.5]))
def test_published_table_passes_the_gate_with_suppression(df, kind, t):
    """With a suppression budget the gate measures t against the published rows: the search
    suppresses until every published class meets it, so what it accepts the gate passes."""
    spec = spec_for(kind, {"k": 2, "t_closeness": t, "l_distinct": 2}, max_suppression=0.3)
    try:
        result = anonymize(df, spec)
    except NoSolution:
        return
    if len(result.data) == 0:
        return
    outcomes = gate.threshold_outcomes(spec, gate.measure(spec, result.data))
    assert all(o.passed for o in outcomes), [o.summary for o in outcomes if not o.passed]


# Three classes over s in 0..7 (uniform in the table): {0, 1}, {6, 7} and {2, 3, 4, 5}.
# nominal: TV = sum of the excess over p = 1/8: 2 (1/2 - 1/8) = 3/4, and 4 (1/4 - 1/8) = 1/2.
# numeric (8 ordered values): sum_{i<7} |Q(i) - P(i)| / 7 = 3/7, 3/7 and 1/7.
# ordinal with ORDER, the classes hold positions {1, 2}, {6, 7}, {0, 3, 4, 5}: 9/28, 3/7, 3/28.
# hierarchical (value, pairs, quads, *): the mean TV over three levels, (3/4 + 3/4 + 1/2) / 3
# for the outer classes and (1/2 + 1/2 + 0) / 3 for the middle one.
HAND = {"nominal": ("total_variation", [3 / 4, 3 / 4, 1 / 2]),
        "numeric": ("ordered_emd", [3 / 7, 3 / 7, 1 / 7]),
        "ordinal": ("ordered_emd", [9 / 28, 3 / 7, 3 / 28]),
        "hierarchical": ("hierarchical_emd", [2 / 3, 2 / 3, 1 / 3])}


@pytest.mark.parametrize("kind", KINDS)
def test_the_search_measures_the_distance_of_the_kind(kind):
    df = pd.DataFrame({"age": [0, 0, 7, 7, 3, 3, 3, 3], "sex": ["F"] * 4 + ["M"] * 4,
                       "s": [0, 1, 6, 7, 2, 3, 4, 5]})
    spec = spec_for(kind, {"k": 2, "t_closeness": 0.45})
    lat = lattice_for(spec, df, Policy.from_spec(spec))
    st_ = lat.state(0)
    t, name = t_closeness(st_.sizes, st_.pairs[0].coded, st_.pairs[0].cells(st_.sizes))
    by_age = dict(zip(st_.keys[0].tolist(), t.tolist(), strict=True))
    labels = lat.qis[0].labels[0]
    got = [by_age[int(np.flatnonzero(labels == a)[0])] for a in ("0", "7", "3")]
    want_name, want = HAND[kind]
    assert name == want_name
    assert got == pytest.approx(want)
    # at t = 0.45 the bottom node passes exactly when every class is within it
    assert lat.evaluate(0).satisfied == (max(want) <= 0.45)
