"""Hierarchies: hand-computed labels, coarsening checks, ARX CSV format, coverage errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from anon_dagster.errors import HierarchyError
from anon_dagster.hierarchies import (
    MISSING_LABEL,
    TOP,
    DateHierarchy,
    IntervalHierarchy,
    MaskHierarchy,
    SuppressionHierarchy,
    TableHierarchy,
    generalization_loss,
)


def test_interval_labels_integer_data():
    h = IntervalHierarchy("age", [5, 10, 20])
    table = h.table([23, 7, 40])
    assert table.shape == (3, 5)
    assert list(table[0]) == ["23", "20-24", "20-29", "20-39", TOP]
    assert list(table[1]) == ["7", "5-9", "0-9", "0-19", TOP]
    assert list(table[2]) == ["40", "40-44", "40-49", "40-59", TOP]


def test_interval_labels_float_data():
    h = IntervalHierarchy("bmi", [2.5])
    assert list(h.table([21.3])[0]) == ["21.3", "[20, 22.5)", TOP]


def test_interval_rejects_non_nesting_widths():
    with pytest.raises(HierarchyError, match="multiple"):
        IntervalHierarchy("age", [5, 7])


def test_interval_rejects_non_numeric_value_naming_it():
    h = IntervalHierarchy("age", [5])
    with pytest.raises(HierarchyError, match="'forty'"):
        h.table([30, "forty"])


def test_mask_levels():
    h = MaskHierarchy("postal_code", [4, 3, 2])
    assert list(h.table(["28014"])[0]) == ["28014", "2801*", "280**", "28***", TOP]


def test_mask_rejects_non_decreasing_keep():
    with pytest.raises(HierarchyError, match="does not mask more"):
        MaskHierarchy("postal_code", [3, 3])


def test_date_levels():
    h = DateHierarchy("admission_date", ["month", "quarter", "year"])
    row = h.table([pd.Timestamp("2024-05-17")])[0]
    assert list(row) == ["2024-05-17", "2024-05", "2024-Q2", "2024", TOP]


def test_date_rejects_unordered_levels():
    with pytest.raises(HierarchyError, match="not strictly coarser"):
        DateHierarchy("d", ["year", "month"])


def test_missing_values_stay_their_own_value_until_top():
    h = MaskHierarchy("postal_code", [2])
    table = h.table(["28014", None])
    assert list(table[1]) == [MISSING_LABEL, MISSING_LABEL, TOP]


def test_suppression_hierarchy_has_two_levels():
    h = SuppressionHierarchy("sex")
    assert h.n_levels == 2
    assert list(h.table(["F"])[0]) == ["F", TOP]


def test_table_hierarchy_reads_arx_format(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("Nurse;Health;*\nDoctor;Health;*\nBaker;Food;*\n")
    h = TableHierarchy.from_csv("profession", path)
    assert h.n_levels == 3
    assert list(h.table(["Baker"])[0]) == ["Baker", "Food", TOP]
    with pytest.raises(HierarchyError, match="'Pilot' is not covered"):
        h.table(["Pilot"])


def test_table_hierarchy_rejects_non_coarsening(tmp_path):
    path = tmp_path / "h.csv"
    # level 1 'A' maps to two different level-2 labels: not a coarsening
    path.write_text("x;A;G1;*\ny;A;G2;*\n")
    with pytest.raises(HierarchyError, match="does not coarsen"):
        TableHierarchy.from_csv("c", path)


def test_table_hierarchy_rejects_top_other_than_star(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("x;A;ALL\ny;B;ALL\n")
    with pytest.raises(HierarchyError, match="top level"):
        TableHierarchy.from_csv("c", path)


def test_table_hierarchy_ragged_rows_name_line(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("x;A;*\ny;*\n")
    with pytest.raises(HierarchyError, match="line 2"):
        TableHierarchy.from_csv("c", path)


def test_adult_hierarchies_load(adult_dir):
    for column in ["age", "education", "marital-status", "native-country", "occupation",
                   "race", "salary-class", "sex", "workclass"]:
        h = TableHierarchy.from_csv(column, adult_dir / f"adult_hierarchy_{column}.csv")
        assert h.n_levels >= 2
    age = TableHierarchy.from_csv("age", adult_dir / "adult_hierarchy_age.csv")
    assert list(age.table([39])[0]) == ["39", "35-39", "30-39", "20-39", TOP]


def test_generalize_series_keeps_index_and_handles_missing():
    h = MaskHierarchy("pc", [3])
    s = pd.Series(["28014", None, "08001"], index=[10, 20, 30])
    out = h.generalize(s, 1)
    assert list(out.index) == [10, 20, 30]
    assert list(out) == ["280**", MISSING_LABEL, "080**"]


def test_generalization_loss_hand_computed():
    h = MaskHierarchy("pc", [1])
    # 4 distinct values; level 1 groups {11,12,13} and {21}
    loss = generalization_loss(h, ["11", "12", "13", "21"])
    assert np.allclose(loss[:, 0], 0)
    assert np.allclose(loss[:, 1], [2 / 3, 2 / 3, 2 / 3, 0])
    assert np.allclose(loss[:, 2], 1)


@given(st.lists(st.integers(min_value=0, max_value=120), min_size=1, max_size=50),
       st.sampled_from([[1, 2, 4], [5, 10, 20], [3, 6], [10]]))
def test_interval_levels_always_coarsen(values, widths):
    h = IntervalHierarchy("x", widths)
    assert h.check_coarsening(values) == []


@given(st.lists(st.text(alphabet="0123456789", min_size=5, max_size=5), min_size=1, max_size=40))
def test_mask_levels_always_coarsen(values):
    h = MaskHierarchy("pc", [4, 2, 1])
    assert h.check_coarsening(values) == []
    codes = h.level_codes(sorted(set(values)))
    # number of distinct labels never grows with the level
    sizes = [len(set(c)) for c in codes]
    assert sizes == sorted(sizes, reverse=True)
    assert sizes[-1] == 1


def test_an_infinity_has_no_interval_bin():
    with pytest.raises(HierarchyError, match=r"column 'age': interval hierarchy needs finite numbers, got inf"):
        IntervalHierarchy("age", [5, 10]).table([30.0, float("inf")])
    with pytest.raises(HierarchyError, match=r"got -inf"):
        IntervalHierarchy("age", [5, 10]).generalize(pd.Series([30.0, float("-inf")]), 1)


def test_date_hierarchy_reads_one_format_for_the_column():
    day_first = DateHierarchy("day", ["month", "year"])
    assert day_first.generalize(pd.Series(["05/01/2024", "13/02/2024"]), 1).tolist() == ["2024-01", "2024-02"]
    with pytest.raises(HierarchyError, match="ambiguous.*declare columns.day.hierarchy.format"):
        DateHierarchy("day", ["month"], format_key="columns.day.hierarchy.format").table(["05/01/2024", "06/02/2024"])
    declared = DateHierarchy("day", ["month"], format="%m/%d/%Y")
    assert declared.table(["05/01/2024"])[:, 1].tolist() == ["2024-05"]


def test_date_hierarchy_over_datetime_values():
    values = pd.unique(pd.Series(pd.to_datetime(["2024-01-05", "2024-01-05 10:00", "2025-06-22"], format="ISO8601")))
    table = DateHierarchy("day", ["month", "year"]).table(values)
    assert table[:, 0].tolist() == ["2024-01-05", "2024-01-05T10:00:00", "2025-06-22"]  # one label per value
    assert table[:, 1].tolist() == ["2024-01", "2024-01", "2025-06"]
