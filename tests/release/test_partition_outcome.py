"""A partition's outcome from its check results and its publication's refusal."""

from __future__ import annotations

from pathlib import Path

from anon_dagster.release.partition_outcome import PartitionOutcome


def test_each_reason_once_and_the_publications_own_reasons_named_after_it():
    out = PartitionOutcome("visits", "2024", success=False)
    out.add_check("k_anonymity", True, "k=5 >= 5", {"name": "k_anonymity"})
    out.add_check("composition", False, "k=1 across releases", None)
    out.add_refusal("publication", ["composition", "epsilon_budget"],
                    ["composition: k=1 across releases", "epsilon_budget: 1.2 > 1", "the ledger changed"])
    assert out.checks == {"k_anonymity": {"name": "k_anonymity"}}
    assert out.failed_checks == ["composition", "epsilon_budget"]
    assert out.reasons == ["composition: k=1 across releases", "epsilon_budget: 1.2 > 1",
                           "publication: the ledger changed"]
    assert out.finish(Path("kept.md")).outcome == "refused" and out.refused and out.report == Path("kept.md")


def test_a_refusal_with_no_failed_check_is_the_publications():
    out = PartitionOutcome("visits", None, success=False)
    out.add_refusal("publication", [], ["the target holds another release"])
    assert out.failed_checks == ["publication"] and out.reasons == ["publication: the target holds another release"]


def test_a_run_that_failed_before_any_check_stays_failed():
    out = PartitionOutcome("visits", None, success=False, failed_steps=["visits__raw"]).finish(None)
    assert out.outcome == "failed" and not out.refused and out.report is None
