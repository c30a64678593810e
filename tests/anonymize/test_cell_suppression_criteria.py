"""Cell suppression and microaggregation judge l and t exactly as the release gate does.

Both judge every criterion with the figures ``measure_risk`` reports for the published table:
t-closeness with the distance of the sensitive attribute's kind (total variation for a nominal
attribute, the ordered EMD for an ordinal one, the hierarchical EMD with a hierarchy) against
the distribution of the rows published, the rows suppressed whole set aside. The ordered and the
hierarchical EMD never exceed the total variation, so judging them by total variation suppresses
classes the gate would publish; judging against every input row publishes classes the gate
refuses once the suppressed rows have left the table. The hand cases below show one of each.
A table that would miss prosecutor_avg is never published either: cell suppression then falls
back to the whole-row suppression the search verified, microaggregation refuses.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.anonymize import NoSolution, anonymize, local_suppression
from anon_dagster.anonymize.criteria import Policy, sensitive_attributes, suppression_budget
from anon_dagster.release import gate, pipeline
from anon_dagster.risk import measure_risk
from tests.support.specs import release_spec

SEVERITY = ["1", "2", "3", "4", "5"]  # an ordinal severity, mild to critical
ORDER = ["3", "1", "0", "2", "5", "4", "7", "6"]  # a declared order unlike the sorted one
KINDS = ("nominal", "ordinal", "hierarchical")


def sensitive_column(kind: str, order=ORDER) -> dict:
    column: dict = {"role": "sensitive"}
    if kind == "ordinal":
        column.update(kind="ordinal", order=list(order))
    elif kind == "hierarchical":
        # values 0..7, then pairs, then quads, then *
        column.update(hierarchy={"type": "interval", "widths": [2, 4]})
    return column


def cells_spec(thresholds: dict, max_suppression: float, sensitive: dict, qis=("ward",)):
    columns = {q: {"role": "quasi"} for q in qis} | {"s": sensitive}
    return release_spec(columns, release="cells", thresholds=thresholds, publication="o.parquet",
                        anonymization={"method": "global", "k": thresholds.get("k", 1),
                                       "max_suppression": max_suppression, "utility": "loss",
                                       "suppression": "cells"})


def micro_spec(thresholds: dict, max_suppression: float, sensitive: dict):
    columns = {"income": {"role": "quasi"}, "sex": {"role": "quasi"}, "s": sensitive}
    return release_spec(columns, release="micro", thresholds=thresholds, publication="o.parquet",
                        anonymization={"method": "microaggregation", "k": thresholds.get("k", 1),
                                       "max_suppression": max_suppression})


def failed_thresholds(spec, table: pd.DataFrame) -> list[str]:
    """The declared thresholds the gate's figures on ``table`` miss."""
    outcomes = gate.threshold_outcomes(spec, gate.measure(spec, table))
    return [o.summary for o in outcomes if not o.passed]


def release_gate(spec, result, original: pd.DataFrame, checks: set[str]):
    """The release gate's verdicts on what the anonymizer published, by check name."""
    evaluation = pipeline.evaluate(spec, result.data, record=result.record, original=original, raw=None,
                                   ledger=None, partition=None, only=checks)
    return {c.name: c for c in evaluation.checks}


# ----- cell suppression, an ordinal severity ----------------------------------------------------

# Wards A {1, 2, 3}, B {3, 4, 5} and C {2, 3, 4}; D and E hold one row each, severity 3.
# Against all eleven rows (P = 1/11, 2/11, 5/11, 2/11, 1/11 over 1..5) A's ordered EMD is
# sum |F_A - F_P| / 4 = (8/33 + 13/33 + 9/33 + 3/33) / 4 = 1/4, B's the same by symmetry, C's
# 5/66, and (*) = D + E {3, 3} gives (1 + 3 + 3 + 1) / 11 / 4 = 2/11: all within t = 0.3.
# Their total variations are 13/33 (A, B) and 6/11 ({3, 3}): beyond it.
SEVERITY_TABLE = pd.DataFrame({
    "ward": ["A"] * 3 + ["B"] * 3 + ["C"] * 3 + ["D", "E"],
    "s": ["1", "2", "3", "3", "4", "5", "2", "3", "4", "3", "3"],
})


def test_local_suppression_judges_an_ordinal_attribute_by_the_ordered_emd():
    spec = cells_spec({"k": 2, "t_closeness": 0.3}, 0.2, sensitive_column("ordinal", SEVERITY))
    policy = Policy.from_spec(spec)
    coded = [a.code(SEVERITY_TABLE[a.name]) for a in sensitive_attributes(spec, policy.sensitive)]
    out, cells, still = local_suppression(SEVERITY_TABLE, ["ward"], [], {}, policy, coded)
    # D and E lose their ward and form (*) {3, 3}; A and B keep theirs (by total variation
    # they would have lost it too)
    assert cells == {"ward": 2} and not still.any()
    assert out["ward"].tolist() == ["A"] * 3 + ["B"] * 3 + ["C"] * 3 + ["*", "*"]
    m = measure_risk(out, ["ward"], sensitive="s", sensitive_kind="ordinal", sensitive_order=SEVERITY)
    assert m.t_closeness == pytest.approx(0.25)
    assert failed_thresholds(spec, out) == []


def test_cell_suppression_keeps_the_classes_the_gate_passes_within_the_budget():
    spec = cells_spec({"k": 2, "t_closeness": 0.3}, 0.2, sensitive_column("ordinal", SEVERITY))
    result = anonymize(SEVERITY_TABLE, spec)
    budget = suppression_budget(Policy.from_spec(spec), len(SEVERITY_TABLE))
    assert budget == 2 and result.record.levels == {"ward": 0}
    # the two rows the search counted lose a cell each; nothing is suppressed whole (judged
    # by total variation, A and B would have gone as well: 8 rows over a budget of 2)
    assert result.suppressed == 0 and result.record.suppression.cells == {"ward": 2}
    checks = release_gate(spec, result, SEVERITY_TABLE, {"k_anonymity", "t_closeness"})
    assert checks["t_closeness"].passed and checks["t_closeness"].value == pytest.approx(0.25)
    assert checks["k_anonymity"].passed


# Ward B {1, 1, 1, 2, 2, 2}, ward D {2, 4}, ward A {4} alone (k = 2), t = 0.35. Against all nine
# rows (P = 3/9, 4/9, 2/9 over the present 1, 2, 4) D's ordered EMD is (1/3 + 5/18) / 2 = 11/36,
# within t; once A is suppressed the published rows give P = 3/8, 4/8, 1/8 and D's distance is
# (3/8 + 3/8) / 2 = 3/8, beyond it. D + A as (*) {2, 4, 4} is 7/18 from all rows: beyond too,
# so A and D go whole (3 rows, the budget) and B alone is published, at distance 0.
REFERENCE_TABLE = pd.DataFrame({"ward": ["B"] * 6 + ["D", "D", "A"],
                                "s": ["1", "1", "1", "2", "2", "2", "2", "4", "4"]})


def test_cell_suppression_judges_t_against_the_published_rows():
    spec = cells_spec({"k": 2, "t_closeness": 0.35}, 0.4, sensitive_column("ordinal", SEVERITY))
    result = anonymize(REFERENCE_TABLE, spec)
    assert result.record.levels == {"ward": 0}
    assert result.suppressed == 3 and result.data["ward"].tolist() == ["B"] * 6
    checks = release_gate(spec, result, REFERENCE_TABLE, {"k_anonymity", "t_closeness"})
    assert checks["t_closeness"].passed, checks["t_closeness"].summary
    assert checks["k_anonymity"].passed


def test_cell_suppression_that_would_miss_prosecutor_avg_suppresses_the_rows_whole():
    # Ward A has four rows, D and E one each (k = 2). Whole-row suppression publishes A alone:
    # 1 class / 4 rows = 0.25. Their cells suppressed, D and E form (*): 2 classes / 6 rows = 1/3,
    # over prosecutor_avg = 0.3, so the two rows the search counted are suppressed whole instead.
    df = pd.DataFrame({"ward": ["A"] * 4 + ["D", "E"], "s": ["1", "2", "3", "4", "2", "3"]})
    spec = cells_spec({"k": 2, "prosecutor_avg": 0.3}, 0.34, sensitive_column("nominal"))
    result = anonymize(df, spec)
    assert result.record.levels == {"ward": 0}
    assert result.suppressed == 2 and result.record.suppression.cells == {}
    assert result.data["ward"].tolist() == ["A"] * 4
    checks = release_gate(spec, result, df, {"k_anonymity", "prosecutor_risk_avg"})
    assert all(c.passed for c in checks.values()), [c.summary for c in checks.values()]


# ----- microaggregation, a hierarchical diagnosis ------------------------------------------------


def test_microaggregation_judges_a_hierarchical_attribute_by_the_hierarchical_emd():
    # MDAV with k = 2 groups incomes {10, 20} and {30, 40}, diagnoses {0, 1} and {2, 3}; the
    # table is uniform over 0..3. Total variation 1/2 each; hierarchical EMD the mean over the
    # levels value, pair, quad: (1/2 + 1/2 + 0) / 3 = 1/3, within t = 0.4.
    df = pd.DataFrame({"income": [10, 20, 30, 40], "sex": ["F"] * 4, "s": [0, 1, 2, 3]})
    spec = micro_spec({"k": 2, "t_closeness": 0.4}, 0.0, sensitive_column("hierarchical"))
    result = anonymize(df, spec)
    assert result.suppressed == 0 and result.data["income"].tolist() == [15, 15, 35, 35]
    checks = release_gate(spec, result, df, {"k_anonymity", "t_closeness"})
    assert checks["t_closeness"].passed and checks["t_closeness"].value == pytest.approx(1 / 3)


def test_microaggregation_judges_t_against_the_published_rows():
    # Five women, incomes 10..50, diagnoses 3, 5, 3, 1, 1; one man (income 50, diagnosis 3) is a
    # block of one row, suppressed. MDAV groups {10, 20} (3, 5) and {30, 40, 50} (3, 1, 1).
    # Against all six rows (1: 2/6, 3: 3/6, 5: 1/6) the first group's hierarchical EMD is
    # (1/3 + 1/3 + 1/3) / 3 = 1/3, within t = 0.35; against the five published rows (1: 2/5,
    # 3: 2/5, 5: 1/5) it is (2/5 + 2/5 + 3/10) / 3 = 11/30, beyond it. So it goes too, and the
    # second group is judged again against itself alone.
    df = pd.DataFrame({"income": [10, 20, 30, 40, 50, 50], "sex": ["F"] * 5 + ["M"],
                       "s": [3, 5, 3, 1, 1, 3]})
    spec = micro_spec({"k": 2, "t_closeness": 0.35}, 0.5, sensitive_column("hierarchical"))
    result = anonymize(df, spec)
    assert result.suppressed == 3 and result.data["s"].tolist() == [3, 1, 1]
    checks = release_gate(spec, result, df, {"k_anonymity", "t_closeness"})
    assert checks["t_closeness"].passed, checks["t_closeness"].summary


def test_microaggregation_refuses_a_prosecutor_avg_its_groups_miss():
    # groups of two rows: 2 classes / 4 rows = 0.5, over prosecutor_avg = 0.4
    df = pd.DataFrame({"income": [10, 20, 30, 40], "sex": ["F"] * 4, "s": [0, 1, 2, 3]})
    spec = micro_spec({"k": 2, "prosecutor_avg": 0.4}, 0.0, sensitive_column("nominal"))
    with pytest.raises(NoSolution, match="prosecutor_avg"):
        anonymize(df, spec)
    assert anonymize(df, micro_spec({"k": 2, "prosecutor_avg": 0.5}, 0.0, sensitive_column("nominal"))).suppressed == 0


# ----- properties ---------------------------------------------------------------------------------


def thresholds_strategy():
    return st.fixed_dictionaries({
        "k": st.sampled_from([2, 3]),
        "t_closeness": st.sampled_from([0.15, 0.25, 0.35, 0.5]),
    }, optional={
        "l_distinct": st.sampled_from([2, 3]),
        "l_entropy": st.sampled_from([1.5, 2.0]),
        "recursive_cl": st.sampled_from([{"c": 2.0, "l": 2}, {"c": 3.0, "l": 2}]),
    })


@st.composite
def small_tables(draw):
    n = draw(st.integers(4, 24))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    # skewed wards and sexes, so some classes (and microaggregation's blocks) are small and need
    # treatment while others are large; the sensitive value follows the ward or not at all
    ward = rng.choice(list("ABCD"), n, p=rng.dirichlet(np.ones(4)))
    sex = rng.choice(["F", "M", "X"], n, p=[0.7, 0.2, 0.1])
    if draw(st.booleans()):
        s = np.clip(np.searchsorted(list("ABCD"), ward) * 2 + rng.integers(-2, 3, n), 0, 7)
    else:
        s = rng.integers(0, 8, n)
    return pd.DataFrame({"ward": ward, "sex": sex, "income": rng.integers(1, 30, n) * 1000, "s": s})


def with_kind(df: pd.DataFrame, kind: str) -> pd.DataFrame:
    return df.assign(s=df["s"].astype(str)) if kind == "ordinal" else df


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=small_tables(), kind=st.sampled_from(KINDS), thresholds=thresholds_strategy())
def test_what_local_suppression_publishes_meets_every_l_and_t(df, kind, thresholds):
    df = with_kind(df, kind)
    spec = cells_spec(thresholds, 0.5, sensitive_column(kind), qis=("ward", "sex"))
    policy = Policy.from_spec(spec)
    coded = [a.code(df[a.name]) for a in sensitive_attributes(spec, policy.sensitive)]
    out, _, still = local_suppression(df, ["ward", "sex"], [], {}, policy, coded)
    published = out[~still]
    if len(published):
        assert failed_thresholds(spec, published) == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=small_tables(), kind=st.sampled_from(KINDS), thresholds=thresholds_strategy(),
       max_suppression=st.sampled_from([0.1, 0.25, 0.5]))
def test_what_cell_suppression_publishes_passes_the_gate_within_the_budget(df, kind, thresholds,
                                                                          max_suppression):
    df = with_kind(df, kind)
    spec = cells_spec(thresholds, max_suppression, sensitive_column(kind), qis=("ward", "sex"))
    try:
        result = anonymize(df, spec)
    except NoSolution:
        return
    assert result.suppressed <= suppression_budget(Policy.from_spec(spec), len(df))
    if len(result.data):
        assert failed_thresholds(spec, result.data) == []


@st.composite
def income_tables(draw):
    """Women with incomes and a sensitive value that drifts with income, and one man: a block
    of one row, suppressed, whose value leaves the published table (and t's reference)."""
    n = draw(st.integers(4, 30))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    income = rng.integers(1, 30, n)
    spread = draw(st.integers(0, 3))
    s = np.clip(income // 4 + rng.integers(-spread, spread + 1, n), 0, 7)
    return pd.DataFrame({"income": np.append(income, draw(st.integers(1, 29))) * 1000,
                         "sex": ["F"] * n + ["M"], "s": np.append(s, draw(st.integers(0, 7)))})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=income_tables(), kind=st.sampled_from(KINDS), thresholds=thresholds_strategy(),
       max_suppression=st.sampled_from([0.1, 0.25, 0.5]))
def test_what_microaggregation_publishes_meets_every_l_and_t(df, kind, thresholds, max_suppression):
    df = with_kind(df, kind)
    spec = micro_spec(thresholds, max_suppression, sensitive_column(kind))
    try:
        result = anonymize(df, spec)
    except NoSolution:
        return
    assert result.suppressed <= suppression_budget(Policy.from_spec(spec), len(df))
    if len(result.data):
        assert failed_thresholds(spec, result.data) == []


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=income_tables(), kind=st.sampled_from(KINDS), k=st.sampled_from([2, 3]),
       declared=st.sets(st.sampled_from(["t_closeness", "l_distinct", "l_entropy"]), min_size=1))
def test_microaggregation_publishes_its_table_at_thresholds_read_off_it(df, kind, k, declared):
    """Thresholds read off the gate's figures on what microaggregation publishes for k alone
    (the man's row suppressed) are met by that very table: with them declared, microaggregation
    publishes it again, refusing nothing."""
    df = with_kind(df, kind)
    probe_spec = micro_spec({"k": k}, 0.5, sensitive_column(kind))
    probe = anonymize(df, probe_spec)
    assert probe.suppressed == 1
    measured = gate.measure(probe_spec, probe.data)
    thresholds = {"k": k, "t_closeness": measured["t_closeness"], "l_distinct": measured["l_distinct"],
                  "l_entropy": max(measured["l_entropy"], 1.0)}
    spec = micro_spec({"k": k} | {c: thresholds[c] for c in declared}, 0.5, sensitive_column(kind))
    result = anonymize(df, spec)
    pd.testing.assert_frame_equal(result.data, probe.data)
    assert failed_thresholds(spec, result.data) == []
