"""Metadata cut to fit the event log: largest entry first, the verdict never."""

from __future__ import annotations

from anon_dagster.release.metadata_fit import (
    cut_rows_note,
    cut_text,
    fit_entries,
    too_large,
    where_text,
)


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
