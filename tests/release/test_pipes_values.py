"""The plain Pipes form of the values a check shows: each kind as the orchestrator types it, figures
rounded as in process, a table's note as its own entry, an oversized entry cut by the same rules."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from anon_dagster.release.evaluation import EvidenceTable
from anon_dagster.release.metadata_fit import MAX_METADATA_BYTES
from anon_dagster.release.pipes_values import (
    CHECKS_MESSAGE,
    FREQUENCIES_MESSAGE,
    check_descriptions,
    check_message,
    custom_message,
    find_message,
    plain_metadata,
    plain_value,
    step_extras,
)
from anon_dagster.release.shown_outcomes import ShownCheck
from anon_dagster.release.shown_values import Shown


def test_each_kind_of_value_has_its_pipes_type():
    assert plain_value(Shown("md", "**k** = 2")) == {"raw_value": "**k** = 2", "type": "md"}
    assert plain_value(Shown("int", 3)) == {"raw_value": 3, "type": "int"}
    assert plain_value(Path("reports/r.md")) == {"raw_value": "reports/r.md", "type": "path"}
    assert plain_value({"t": 0.123456789, "n": [1, 2.0]}) == {"raw_value": {"t": 0.1235, "n": [1, 2.0]}, "type": "json"}
    assert plain_value(0.987654) == {"raw_value": 0.9877, "type": "float"}
    assert [plain_value(v) for v in ("text", 7, True, None)] == ["text", 7, True, None]


def test_json_shown_as_it_is_stays_unrounded():
    assert plain_value(Shown("json", {"measured": 0.123456789})) == {"raw_value": {"measured": 0.123456789}, "type": "json"}


def test_a_table_is_a_pipes_table_and_its_note_an_entry_of_its_own():
    table = EvidenceTable([("size", "int"), ("share", "float")], [{"size": 2, "share": 1 / 3}], "1 of 4 sizes shown")
    assert plain_metadata({"small_classes": table}) == {
        "small_classes": {"type": "table", "raw_value": {"records": [{"size": 2, "share": 0.3333}],
                                                          "schema": [{"name": "size", "type": "int"},
                                                                     {"name": "share", "type": "float"}]}},
        "small_classes_note": {"raw_value": "1 of 4 sizes shown", "type": "text"}}


def test_an_oversized_entry_is_cut_but_never_the_verdicts_figures():
    rows = [{"size": i, "share": 0.5} for i in range(4000)]
    values = {"measured": Shown("int", 2), "per_group": EvidenceTable([("size", "int"), ("share", "float")], rows)}
    out = plain_metadata(values, whole="reports/r.md")
    assert out["measured"] == {"raw_value": 2, "type": "int"}
    assert 0 < len(out["per_group"]["raw_value"]["records"]) < 4000
    assert "reports/r.md" in out["per_group_note"]["raw_value"]
    assert len(json.dumps(out)) <= MAX_METADATA_BYTES


def test_a_check_message_is_report_asset_checks_arguments():
    shown = ShownCheck(False, "warn", "utility: error 12 points", {"measured": Shown("float", 12.0)})
    assert check_message("utility_q", shown, "tiny/anonymized") == {
        "check_name": "utility_q", "passed": False, "severity": "WARN",
        "metadata": {"measured": {"raw_value": 12.0, "type": "float"}}, "asset_key": "tiny/anonymized"}


def test_the_last_message_of_a_kind_is_found_among_others():
    first, last = custom_message(FREQUENCIES_MESSAGE, rows=1), custom_message(FREQUENCIES_MESSAGE, rows=2)
    assert find_message([{"other": 1}, first, "text", last], FREQUENCIES_MESSAGE)["rows"] == 2
    assert find_message([{"other": 1}], FREQUENCIES_MESSAGE) is None


def test_a_steps_extras_name_the_spec_step_and_partition_and_the_callers_override_them():
    spec = SimpleNamespace(spec_path=Path("specs/visits.yaml"))
    assert step_extras(spec, "checks", "2024", {}) == {"spec": "specs/visits.yaml", "step": "checks",
                                                       "partition": "2024"}
    assert step_extras(spec, "checks", None, {"spec": "/job/visits.yaml", "engine": "spark"}) == {
        "spec": "/job/visits.yaml", "step": "checks", "partition": None, "engine": "spark"}


def test_the_checks_descriptions_are_the_last_checks_message_or_none():
    first = custom_message(CHECKS_MESSAGE, descriptions={"k_anonymity": "old"})
    last = custom_message(CHECKS_MESSAGE, descriptions={"k_anonymity": "k = 3 >= 2"})
    assert check_descriptions([first, custom_message(FREQUENCIES_MESSAGE), last]) == {"k_anonymity": "k = 3 >= 2"}
    assert check_descriptions([custom_message(FREQUENCIES_MESSAGE)]) == {}
