"""The report reads as intended: the refusal's reasons first, population uniqueness as a table,
Markdown that renders what the core wrote, no local folder, and a small record section."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from anon_dagster.release.report import (
    build_report,
    render_html,
    render_json,
    render_markdown,
    report_inputs,
)
from anon_dagster.release.report.inputs import RANGES_SHOWN, record_for_report
from anon_dagster.release.report.markdown import md_text
from anon_dagster.spec import load_spec

REPO = Path(__file__).resolve().parents[2]
DEMO_SPEC = REPO / "assets_config" / "hospital_discharges.yaml"
WHEN = "2025-02-01T10:00:00Z"

FAILED_COMPOSITION = {"name": "composition", "passed": False, "severity": "error", "value": 1, "threshold": 5,
                      "summary": "effective k after composition = 1 (min_k 5)\nclasses of k1 and k2 persons "
                                 "out of N share about k1*k2/N persons"}
PASSED_K = {"name": "k_anonymity", "passed": True, "severity": "error", "value": 8, "threshold": 5,
            "summary": "smallest equivalence class (k) = 8 meets the threshold >= 5"}
FAILED_WARN = {"name": "utility_prevalence", "passed": False, "severity": "warn", "value": 3.0, "threshold": 1.0,
               "summary": "error 3 points"}

POPULATION_UNIQUENESS = {
    "summary": "population uniqueness at f = 0.02: 1.5% of the sample's records (Pitman)",
    "dankar_model": "pitman", "records": 200, "classes": 40, "sample_uniques": 6, "sampling_fraction": 0.02,
    "dankar": {"model": "pitman", "fraction": 0.015, "population_count": 3.0, "sample_count": 6.0,
               "interval": [0.01, 0.02], "interval_method": "bootstrap", "note": "chosen by Dankar's rule"},
    "estimates": {
        "naive": {"model": "naive", "fraction": 0.03, "population_count": 6.0, "sample_count": 6.0,
                  "interval": None, "interval_method": None, "note": "upper bound"},
        "zayatz": {"model": "zayatz", "fraction": 0.0123456789, "population_count": 2.4691, "sample_count": 6.0,
                   "interval": [0.005, 0.02], "interval_method": "bootstrap", "note": "Zayatz"},
    },
}


def _report(checks, **overrides):
    spec = load_spec(DEMO_SPEC)
    kwargs = dict(partition="2025", data_hash="ab" * 32, measures={"k": 8, "rows": 200}, class_sizes=[8] * 25,
                  checks=checks, evaluated_at=WHEN)
    kwargs.update(overrides)
    return build_report(report_inputs(spec, **kwargs))


def test_a_refused_report_states_each_failed_blocking_check_and_its_reason_before_anything_else():
    report = _report([PASSED_K, FAILED_COMPOSITION, FAILED_WARN])
    assert report["verdict"]["reasons"] == [{"name": "composition", "summary": FAILED_COMPOSITION["summary"]}]
    md = render_markdown(report)
    reasons = md.index("**Refused because**")
    assert reasons < md.index("## 1.")  # before identification, hypotheses and measures
    block = md[reasons:md.index("## 1.")]
    # the failed blocking check with its summary; the passed one and the warning are not reasons
    assert "**composition**: effective k after composition = 1 (min\\_k 5)" not in block  # underscores stay readable
    assert "**composition**: effective k after composition = 1 (min_k 5)  \n" in block
    assert "k1\\*k2/N" in block and "k_anonymity" not in block and "utility_prevalence" not in block


def test_a_publishable_report_has_no_reasons_section():
    report = _report([PASSED_K, FAILED_WARN])
    assert report["verdict"]["publishable"] and report["verdict"]["reasons"] == []
    assert "Refused because" not in render_markdown(report)


def test_population_uniqueness_is_a_table_of_models_with_the_rules_choice_first():
    md = render_markdown(_report([PASSED_K], population_uniqueness=POPULATION_UNIQUENESS))
    section = md[md.index("**Population uniqueness**"):]
    assert "```json" not in md and '"estimates"' not in md
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    assert lines[0].startswith("| model | population uniques (share) |")
    assert lines[1].startswith("| Dankar's rule (pitman) | 0.015 | 3 | 6 | [0.01, 0.02] (bootstrap) |")
    assert lines[2].startswith("| naive | 0.03 | 6 | 6 | — | upper bound |")
    assert lines[3].startswith("| zayatz | 0.01235 | 2.469 | 6 |")  # rounded to 4 significant digits
    assert "sample_uniques 6" in section


def test_no_report_names_a_folder_of_the_publishing_machine():
    local = "/srv/private/alice/portal"
    report = _report([PASSED_K], published_path=f"{local}/hospital_discharges/2025.parquet",
                     report_path=f"{local}/hospital_discharges/2025.report.md")
    ident = report["identification"]
    assert ident["published_file"] == "2025.parquet" and ident["report_file"] == "2025.report.md"
    for text in (render_json(report), render_markdown(report), render_html(report)):
        assert "/srv/private" not in text and "alice" not in text
    # an object-storage location is where readers find the file: it is stated as is
    remote = _report([PASSED_K], published_path="s3://portal/hospital_discharges/2025.parquet")
    assert remote["identification"]["published_file"] == "s3://portal/hospital_discharges/2025.parquet"


def test_markdown_text_escapes_markup_and_keeps_line_breaks():
    assert md_text("k1*k2/N") == "k1\\*k2/N"
    assert md_text("a `b` <e> [0, 1]") == "a \\`b\\` \\<e\\> [0, 1]"
    assert md_text("first line\nsecond line") == "first line  \nsecond line"
    assert md_text("prosecutor_max 0.2") == "prosecutor_max 0.2"


@given(st.text(alphabet="ab*_`<>\\ \n", max_size=30))
def test_escaped_markdown_holds_no_unescaped_emphasis_or_code_mark(text):
    escaped = md_text(text)
    i = 0
    while i < len(escaped):
        if escaped[i] == "\\":
            i += 2  # an escape and what it protects
            continue
        assert escaped[i] not in "*`<>"
        i += 1


def test_a_mondrian_record_is_summarized_in_the_report_and_its_class_detail_left_in_the_record_file():
    ranges = [{"age": f"{a}-{a + 4}", "rows": 8} for a in range(0, 500, 5)]
    record = {"method": "mondrian", "rows_in": 800, "suppression": {"rows": 0, "share": 0.0},
              "mondrian": {"ncp": 0.1, "cuts": 99, "classes": 100, "min_part_size": 8, "parts_suppressed": [],
                           "ranges": ranges, "ranges_truncated": 3,
                           "boxes": {"classes": 100, "columns": {"age": {"boxes": list(range(10_000))}},
                                     "partition_keys": {}}}}
    shown = record_for_report(record)
    assert "suppression" not in shown  # reported in its own section
    assert shown["mondrian"]["ranges"] == ranges[:RANGES_SHOWN]
    assert shown["mondrian"]["ranges_truncated"] == 3 + len(ranges) - RANGES_SHOWN
    assert shown["mondrian"]["boxes"] == "100 class boxes, in the transformation record"
    assert record["mondrian"]["ranges"] == ranges  # the record itself is not changed
    report = _report([PASSED_K], anonymization_record=record)
    assert len(render_json(report)) < 20_000 < len(json.dumps(record))


def test_the_html_page_states_the_reasons_first_and_population_uniqueness_as_a_table():
    page = render_html(_report([PASSED_K, FAILED_COMPOSITION], population_uniqueness=POPULATION_UNIQUENESS))
    assert page.index("Refused because") < page.index("1. Identification")
    assert "effective k after composition = 1 (min_k 5)<br>classes of k1 and k2" in page
    assert "<th>population uniques (share)</th>" in page and "<td>Dankar&#x27;s rule (pitman)</td>" in page
    assert "<pre>" not in page[page.index("Population uniqueness"):page.index("Population uniqueness") + 2000]
