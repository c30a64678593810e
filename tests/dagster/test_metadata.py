"""Converting the core's results to Dagster metadata (:mod:`anon_dagster.dagster.metadata`):
prose as written, figures rounded (the contract form exact), every entry within the budget."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from dagster import MetadataValue

from anon_dagster.dagster.metadata import MAX_METADATA_BYTES, as_metadata, metadata_bytes
from anon_dagster.release.evaluation import CheckResult, Evaluation, EvidenceTable
from anon_dagster.release.report.markdown import md_text
from anon_dagster.release.shown_outcomes import anonymized_entries, check_entries
from anon_dagster.release.shown_values import figure, record_summary

COMPOSITION_SUMMARY = (
    "120 persons in the new release; effective k = 1.\n"
    "Against r/2024: two independent classes of k1 and k2 persons out of N share about k1*k2/N persons.\n"
    "FAILED: effective k 1 < min_k 2"
)


def evaluation(*checks: CheckResult) -> Evaluation:
    return Evaluation("r", "2025", "spec", "data", list(checks), measures={"rows": 10, "classes": 2})


def check_metadata(result: CheckResult, evaluation: Evaluation, report: Path | None = None) -> dict:
    """One gate check's metadata, as the checks step writes it."""
    return as_metadata(check_entries(result, evaluation, report), whole=report)


def test_a_summary_reads_as_written_line_breaks_kept_and_no_italics():
    result = CheckResult("composition", False, value=1, threshold=2, comparison=">=", summary=COMPOSITION_SUMMARY)
    summary = check_metadata(result, evaluation(result))["summary"]
    assert summary == MetadataValue.md(md_text(COMPOSITION_SUMMARY))
    assert r"k1\*k2/N" in summary.value and "*k2" not in summary.value.replace(r"\*", "")
    assert summary.value.count("  \n") == 2  # each line break a hard break


def test_figures_are_rounded_to_four_significant_digits_and_the_contract_keeps_them_exact():
    t = 0.9794362523823854
    result = CheckResult("t_closeness", False, value=t, threshold=0.15, comparison="<=", summary="t = 0.9794")
    meta = check_metadata(result, evaluation(result))
    assert meta["measured"] == MetadataValue.float(0.9794)
    assert meta["check"].value["measured"] == t  # as `anon-dagster check --json` prints it
    assert figure(12) == 12 and figure(10031.0) == 10031.0 and figure(True) is True and figure("x") == "x"
    assert figure(123456.7) == 123500.0 and figure(float("nan")) != figure(float("nan"))
    table = EvidenceTable([("class", "string"), ("distance", "float"), ("size", "int")],
                          [{"class": "#1", "distance": t, "size": 6}], note="1 of 9 classes")
    out = as_metadata({"most_distant_classes": table, "composition": {"effective_k": 1, "expected": 0.123456789},
                       "epsilon": 0.333333333, "report": Path("/reports/r/risk_report.md")})
    assert out["most_distant_classes"].records[0].data == {"class": "#1", "distance": 0.9794, "size": 6}
    assert out["most_distant_classes_note"] == MetadataValue.text("1 of 9 classes")
    assert out["composition"].value == {"effective_k": 1, "expected": 0.1235}
    assert out["epsilon"] == MetadataValue.float(0.3333)
    assert out["report"] == MetadataValue.path("/reports/r/risk_report.md")


def test_a_refused_checks_metadata_links_its_report():
    result = CheckResult("k_anonymity", False, value=1, threshold=5, comparison=">=")
    meta = check_metadata(result, evaluation(result), report=Path("/reports/r/2025/risk_report.md"))
    assert meta["report"] == MetadataValue.path("/reports/r/2025/risk_report.md")
    assert "report" not in check_metadata(result, evaluation(result))


def test_metadata_too_large_for_the_event_log_is_cut_with_a_note_and_the_verdict_kept_whole():
    rows = [{"group": f"group {i:05d}", "error_points": i / 7, "count": i} for i in range(5000)]
    big = EvidenceTable([("group", "string"), ("error_points", "float"), ("count", "int")], rows,
                        note="5000 of 5000 groups")
    result = CheckResult("utility_q", True, value=0.5, threshold=1.0, comparison="<=", summary="fine",
                         details={"table": pd.DataFrame(rows)})
    whole = "/reports/r/risk_report.md"
    meta = as_metadata({**check_entries(result, evaluation(result)), "huge": big, "blob": {"x": list(range(20000))}},
                       whole=whole)
    assert metadata_bytes(meta) <= MAX_METADATA_BYTES
    kept = len(meta["huge"].records)
    assert 0 < kept < 5000
    assert meta["huge_note"].value == (f"5000 of 5000 groups; cut to its first {kept} rows to fit the event log; "
                                       f"the whole is in {whole}")
    assert "too large for the event log" in meta["blob"].value
    assert meta["check"] == MetadataValue.json(result.to_json()) and meta["summary"] == MetadataValue.md("fine")


class _Record:
    def summary(self, boxes_in: str) -> dict:
        return {"method": "mondrian", "mondrian": {"classes": 3, "boxes": f"3 class boxes, in {boxes_in}",
                                                   "ranges": [{"age": "20-29"}, {"age": "30-39"}],
                                                   "ranges_truncated": 1, "ncp": 0.123456}}


class _Anonymized:
    data = pd.DataFrame({"age": ["20-29"] * 4})
    suppressed = 2
    record = _Record()
    unreachable = "k = 5 with t <= 0.1 is unreachable:\nprovince is a partition key"


def test_the_transformation_record_is_shown_without_the_values_of_its_classes():
    summary = record_summary(_Record(), Path("/reports/r/2025/transformations.json"))
    assert summary["mondrian"]["ranges"] == "3 class ranges, in transformations.json"
    assert "ranges_truncated" not in summary["mondrian"]
    record_file = Path("/reports/r/2025/transformations.json")
    meta = as_metadata(anonymized_entries(_Anonymized(), record_file), whole=record_file)
    assert "20-29" not in str(meta["transformation_record"].value)
    assert meta["transformation_record"].value["mondrian"]["ncp"] == 0.1235
    assert meta["transformation_record_file"] == MetadataValue.path("/reports/r/2025/transformations.json")
    assert meta["policy_unreachable"] == MetadataValue.md(md_text(_Anonymized.unreachable))
    assert meta["rows"] == 4 and meta["suppressed"] == 2
