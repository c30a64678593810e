"""Metadata cut to fit the event log: largest entry first, the verdict never."""

from __future__ import annotations

import json

from anon_dagster.release.evaluation import EvidenceTable
from anon_dagster.release.metadata_fit import (
    cut_rows_note,
    cut_text,
    fit_entries,
    fit_values,
    split_notes,
    too_large,
    where_text,
)
from anon_dagster.release.shown_values import Shown


def test_the_largest_entry_not_kept_whole_is_cut_first_until_it_fits():
    entries = {"summary": "s" * 50, "big": "b" * 40, "small": "m" * 20}  # 4+50 + 3+40 + 5+20 = 122

    def cut(name, value, out):
        if len(value) <= 1:
            return False
        out[name] = value[: len(value) // 2]
        return True

    out = fit_entries(entries, len, cut, limit=100)
    # 122 bytes; big cut to 20 (102), then the larger of two equals by name, small, to 10 (92)
    assert out == {"summary": "s" * 50, "big": "b" * 20, "small": "m" * 10}
    # nothing but what is kept whole left to cut: returned as it is, over the limit
    assert fit_entries({"summary": "s" * 200}, len, cut, limit=100) == {"summary": "s" * 200}


def test_the_notes_say_what_was_cut_and_where_the_whole_is():
    where = where_text("reports/r.md")
    assert where == "; the whole is in reports/r.md" and where_text(None) == ""
    first = cut_rows_note("sorted by risk", 50, where)
    assert first == "sorted by risk; cut to its first 50 rows to fit the event log; the whole is in reports/r.md"
    assert cut_rows_note(first, 25, "") == "sorted by risk; cut to its first 25 rows to fit the event log"
    assert cut_text("x" * 2000, "") is None
    assert cut_text("x" * 2001, "") == "x" * 1000 + " … (cut to fit the event log)"
    assert too_large(123456, where) == "123,456 bytes, too large for the event log; the whole is in reports/r.md"


def _size(value) -> int:  # a stand-in for an orchestrator's serialized size
    if isinstance(value, EvidenceTable):
        return 10 * len(value.rows)
    return len(json.dumps(value.value if isinstance(value, Shown) else value, default=str))


def test_plain_values_are_cut_a_table_by_half_a_long_text_to_its_start_a_json_value_to_a_line():
    table = EvidenceTable([("n", "int")], [{"n": i} for i in range(40)], note="40 of 90 rows")
    notes = split_notes({"t": table})
    assert notes == {"t": EvidenceTable([("n", "int")], table.rows), "t_note": Shown("text", "40 of 90 rows")}
    # 400 + 1 and 15 + 6 bytes; cut once, to 20 rows: 200 + 1 and 83 + 6 (the longer note) fit in 300
    out = fit_values({"t": table}, _size, limit=300, whole="r.md")
    assert out["t"].rows == table.rows[:20]
    assert out["t_note"] == Shown("text", "40 of 90 rows; cut to its first 20 rows to fit the event log; "
                                          "the whole is in r.md")
    prose, blob = Shown("md", "x" * 3000), {"v": list(range(500))}
    out = fit_values({"summary": Shown("md", "s"), "prose": prose, "blob": blob, "n": 3}, _size, limit=1200)
    assert out["prose"] == Shown("md", "x" * 1000 + " … (cut to fit the event log)")
    assert out["blob"] == Shown("text", f"{_size(blob):,} bytes, too large for the event log")
    assert out["summary"] == Shown("md", "s") and out["n"] == 3  # kept whole, and what cannot be cut
