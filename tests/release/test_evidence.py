"""The evidence a check shows beside its verdict (:meth:`CheckResult.evidence`): the classes that
decide it, first, with their sizes and sensitive distributions, never their QI values."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from anon_dagster.release.evaluation import EVIDENCE_ROWS, CheckResult, Evaluation, EvidenceTable
from anon_dagster.risk import measure_risk
from anon_dagster.risk.closeness import t_closeness
from anon_dagster.risk.exposure import CLASSES_LISTED, OTHER_VALUES, VALUE_COLUMNS, small_classes
from anon_dagster.risk.sensitive import class_value_cells, code_sensitive

REGIONS = ["Northfield", "Southmoor", "Eastvale", "Westbrook"]


def table(seed: int = 0, values: int = 5, rows: int = 600, kind_numeric: bool = False) -> pd.DataFrame:
    """Classes over (age band, region), diagnoses drawn from ``values`` codes; one class of six
    rows holds only the rarest code, so it is the single most distant one."""
    rng = np.random.default_rng(seed)
    weights = np.linspace(1.0, 2.0, values)
    codes = rng.choice(values, rows, p=weights / weights.sum())
    df = pd.DataFrame({"age": rng.choice(["20-29", "30-39", "40-49", "50-59", "60-69"], rows),
                       "region": rng.choice(REGIONS, rows),
                       "dx": codes if kind_numeric else [f"D{c:03d}" for c in codes]})
    outlier = pd.DataFrame({"age": ["90-99"] * 6, "region": ["Northfield"] * 6,
                            "dx": [0] * 6 if kind_numeric else ["D000"] * 6})
    return pd.concat([df, outlier], ignore_index=True)


def measured(df: pd.DataFrame, kind: str = "nominal"):
    m = measure_risk(df, ["age", "region"], sensitive="dx", sensitive_kind=kind)
    return m, small_classes(m.equivalence_classes, 5, measured=m, table=df)


def evaluation_of(m, sc, checks: list[CheckResult]) -> Evaluation:
    return Evaluation(release="r", partition=None, spec_hash="s", data_hash="d", checks=checks,
                      measures=m.to_dict(), class_sizes=[int(s) for s in m.equivalence_classes.sizes],
                      small_classes=sc.to_dict(), rows=m.rows)


@pytest.mark.parametrize("kind", ["nominal", "numeric"])
def test_the_most_distant_classes_are_the_gates_distances_largest_first(kind):
    df = table(kind_numeric=kind == "numeric")
    m, sc = measured(df, kind)
    [attribute] = sc.sensitive
    distances = [c["distance"] for c in attribute.most_distant]
    # the same function the gate uses, computed again here
    coded = code_sensitive(df["dx"], "dx", kind=kind)
    ec = m.equivalence_classes
    again, name = t_closeness(ec, coded, class_value_cells(ec, coded.codes, coded.n_values))
    assert attribute.distance == name == m.extras["t_closeness_distance"]
    assert len(distances) == min(CLASSES_LISTED, ec.n_classes)
    assert distances == sorted(distances, reverse=True)
    assert distances == sorted(again.tolist(), reverse=True)[:len(distances)]
    assert distances[0] == m.t_closeness == attribute.t_closeness  # the measured t is the worst class's

    # the worst class is the outlier: six rows, all the rarest value; its shares are its own rows'
    worst = attribute.most_distant[0]
    assert worst["size"] == 6
    label = "0" if kind == "numeric" else "D000"
    assert worst["shares"][label] == 1.0 and sum(worst["shares"].values()) == pytest.approx(1.0)
    overall = df["dx"].astype(str).value_counts(normalize=True)
    for value, share in attribute.table_shares.items():
        assert share == pytest.approx(overall.get(value, 0.0))
    # each listed class's shares are its distribution: they sum to 1, and its size is a class size
    sizes = set(ec.sizes.tolist())
    for c in attribute.most_distant:
        assert sum(c["shares"].values()) == pytest.approx(1.0) and c["size"] in sizes


def test_the_t_closeness_evidence_shows_the_distant_classes_beside_the_table_without_qi_values():
    df = table()
    m, sc = measured(df)
    check = CheckResult("t_closeness", False, value=m.t_closeness, threshold=0.2, comparison="<=",
                        spec_key="policy.thresholds.t_closeness")
    evidence = check.evidence(evaluation_of(m, sc, [check]))
    shown = evidence["most_distant_classes"]
    assert isinstance(shown, EvidenceTable)
    names = [n for n, _ in shown.columns]
    assert names[:3] == ["class", "distance", "size"]
    assert set(names[3:]) == set(df["dx"])  # 5 values: each one a column
    whole, *classes = shown.rows
    assert whole["class"] == "whole table" and whole["size"] == len(df) and whole["distance"] is None
    assert [r["class"] for r in classes] == [f"#{i}" for i in range(1, len(classes) + 1)]
    listed = [r["distance"] for r in classes]
    assert listed[0] == check.measured and listed == sorted(listed, reverse=True)
    assert "largest total_variation distance" in shown.note and f"of {m.classes} classes" in shown.note
    text = json.dumps(shown.rows) + shown.note
    assert not any(region in text for region in REGIONS) and "90-99" not in text  # never a QI value
    # the other risk checks do not list them
    other = CheckResult("k_anonymity", True, value=m.k, threshold=2, comparison=">=")
    assert "most_distant_classes" not in other.evidence(evaluation_of(m, sc, [other]))


def test_an_attribute_with_many_values_shows_where_the_classes_differ_most_and_sums_the_rest():
    df = table(values=60, rows=3000)
    m, sc = measured(df)
    [attribute] = sc.sensitive
    assert attribute.n_values == 60
    assert len(attribute.values) == VALUE_COLUMNS and attribute.values[-1] == OTHER_VALUES
    assert "D000" in attribute.values  # the value that makes the worst class distant
    for shares in [attribute.table_shares, *(c["shares"] for c in attribute.most_distant)]:
        assert list(shares) == attribute.values and sum(shares.values()) == pytest.approx(1.0)
    check = CheckResult("t_closeness", False, value=m.t_closeness)
    shown = check.evidence(evaluation_of(m, sc, [check]))["most_distant_classes"]
    assert len(shown.columns) == 3 + VALUE_COLUMNS
    assert f"the {VALUE_COLUMNS - 1} values where they differ most of 60, the others summed" in shown.note


def test_the_l_diversity_evidence_lists_the_classes_with_the_fewest_distinct_values_with_sizes():
    df = table()
    m, sc = measured(df)
    [attribute] = sc.sensitive
    few = [c["distinct_values"] for c in attribute.least_diverse]
    assert few == sorted(few) and few[0] == m.l_distinct == 1  # the outlier: one value
    assert attribute.least_diverse[0] == {"distinct_values": 1, "l_entropy": 1.0, "largest_share": 1.0, "size": 6}
    check = CheckResult("l_diversity_distinct", False, value=m.l_distinct, threshold=2, comparison=">=")
    shown = check.evidence(evaluation_of(m, sc, [check]))["least_diverse_classes"]
    assert [n for n, _ in shown.columns] == ["class", "distinct_values", "l_entropy", "largest_share", "size"]
    assert shown.rows[0] == {"class": "#1", "distinct_values": 1, "l_entropy": 1.0, "largest_share": 1.0, "size": 6}
    assert "fewest distinct values first" in shown.note
    entropy = CheckResult("l_diversity_entropy", False, value=m.l_entropy, threshold=2.0, comparison=">=")
    by_entropy = entropy.evidence(evaluation_of(m, sc, [entropy]))["least_diverse_classes"]
    values = [r["l_entropy"] for r in by_entropy.rows]
    assert values == sorted(values) and values[0] == pytest.approx(m.l_entropy)
    assert "D000" not in json.dumps(shown.rows + by_entropy.rows)  # never which value a class holds


def test_a_utility_query_shows_the_groups_with_the_largest_error_first_and_says_how_many_it_left_out():
    per_group = pd.DataFrame({"group": [f"g{i}" for i in range(45)], "count": list(range(45)),
                              "error_points": [((i * 7) % 45) / 10 for i in range(45)], "missing": [False] * 45})
    check = CheckResult("utility_q", True, value=4.4, threshold=5.0, comparison="<=", details={"table": per_group})
    shown = check.evidence(Evaluation("r", None, "s", "d", [check]))["per_group"]
    assert len(shown.rows) == EVIDENCE_ROWS
    errors = [r["error_points"] for r in shown.rows]
    assert errors == sorted(errors, reverse=True) and errors[0] == 4.4
    assert shown.note == f"{EVIDENCE_ROWS} of 45 groups shown, largest error first"
    assert dict(shown.columns) == {"group": "string", "count": "int", "error_points": "float", "missing": "bool"}
    assert all(isinstance(r["count"], int) and isinstance(r["missing"], bool) for r in shown.rows)


def test_a_table_that_fits_has_no_note():
    shown = EvidenceTable.from_frame(pd.DataFrame({"size": [1, 2], "classes": [3, 4]}))
    assert shown.note == "" and shown.rows == [{"size": 1, "classes": 3}, {"size": 2, "classes": 4}]
