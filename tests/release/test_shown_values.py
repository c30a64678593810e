"""Figures and records as metadata shows them."""

from __future__ import annotations

import math

from anon_dagster.release.shown_values import figure, measured_value, record_summary, rounded


def test_figures_keep_four_significant_digits_and_integers_exact():
    assert figure(0.9794362523823854) == 0.9794 and figure(123456.789) == 123500.0
    assert figure(3.0) == 3.0 and figure(7) == 7 and figure("x") == "x" and math.isinf(figure(math.inf))
    assert rounded({"a": [0.123456, 2], "b": (1 / 3,)}) == {"a": [0.1235, 2], "b": [0.3333]}


def test_a_measured_value_is_an_integer_a_figure_or_text():
    assert [measured_value(v) for v in (None, True, 5, 0.123456, "0.5", "k=3")] == \
        ["n/a", "True", 5, 0.1235, 0.5, "k=3"]


class Record:
    def __init__(self, summary: dict) -> None:
        self._summary = summary

    def summary(self, name: str) -> dict:
        return {**self._summary, "file": name}


def test_a_records_class_ranges_become_a_count():
    record = Record({"mondrian": {"ranges": [["20-30"], ["30-40"]], "ranges_truncated": 3, "classes": 5}})
    assert record_summary(record, "/x/record.json") == {
        "mondrian": {"ranges": "5 class ranges, in record.json", "classes": 5}, "file": "record.json"}
    assert record_summary(Record({"k": 2}), "r.json") == {"k": 2, "file": "r.json"}
