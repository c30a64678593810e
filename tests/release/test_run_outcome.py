"""What one run did, read from the check results and materializations it recorded."""

from __future__ import annotations

from pathlib import Path

from anon_dagster.release.run_outcome import RecordedCheck, run_outcome


def test_a_published_run_gives_its_rows_files_and_checks():
    checks = [RecordedCheck("anonymized", "k_anonymity", True, "k = 5", {"check": {"name": "k_anonymity"}}),
              RecordedCheck("published", "publication", True),
              RecordedCheck("published", "freshness", False, "too old")]  # no part of the gate
    mats = [("raw", {"rows": 10}), ("anonymized", {"rows": 9}),
            ("published", {"rows": 8, "evaluation": "ev1", "path": "out/2024.parquet", "report": "r/2024.md"})]
    out = run_outcome("visits", "2024", True, [], checks, mats, "publication", kept_report=Path("kept.md"))
    assert (out.outcome, out.rows_in, out.rows_published, out.evaluation) == ("published", 10, 8, "ev1")
    assert (out.published, out.report) == (Path("out/2024.parquet"), Path("r/2024.md"))
    assert out.checks == {"k_anonymity": {"name": "k_anonymity"}} and out.failed_checks == []


def test_a_refused_publication_lists_each_reason_once_and_keeps_the_kept_report():
    checks = [RecordedCheck("anonymized", "k_anonymity", False, "k = 1 < 5"),
              RecordedCheck("published", "publication", False, "k_anonymity: k = 1 < 5\nledger is closed",
                            {"failed_checks": ["k_anonymity"]})]
    mats = [("raw", {"rows": 4}), ("published", {"outcome": "refused", "evaluation": "ev2"})]
    out = run_outcome("visits", None, False, [], checks, mats, "publication", kept_report=Path("kept.md"))
    assert out.outcome == "refused" and out.evaluation == "ev2" and out.published is None
    assert out.failed_checks == ["k_anonymity"]
    assert out.reasons == ["k_anonymity: k = 1 < 5", "publication: ledger is closed"]
    assert out.report == Path("kept.md") and out.rows_in == 4


def test_a_run_that_failed_before_the_gate_is_failed_with_its_steps():
    out = run_outcome("visits", "2023", False, ["visits__raw"], [], [], "publication", kept_report=None)
    assert (out.outcome, out.failed_steps, out.report) == ("failed", ["visits__raw"], None)


def test_a_run_awaiting_approval_refuses_nothing_and_gives_the_approve_command():
    checks = [RecordedCheck("anonymized", "k_anonymity", True, "k = 5"),
              RecordedCheck("published", "publication", False, "awaiting approval",
                            {"outcome": "awaiting_approval"})]
    mats = [("published", {"outcome": "awaiting_approval", "evaluation": "ev3",
                           "approve_command": "anon-dagster approve visits ev3", "report": "r/2024.md"})]
    out = run_outcome("visits", "2024", True, [], checks, mats, "publication", kept_report=Path("kept.md"))
    assert out.awaiting_approval and out.failed_checks == [] and out.reasons == []
    assert (out.approve_command, out.report, out.published) == ("anon-dagster approve visits ev3", Path("r/2024.md"),
                                                                 None)
