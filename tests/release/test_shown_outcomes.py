"""What a step's event shows, decided in the core (:mod:`anon_dagster.release.shown_outcomes`),
and the small decisions the Dagster layer hands to the core (the run deciding a partition, the
project inputs of a step, the table of record, the scaffolded files)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from anon_dagster.release.evaluation import CheckResult, Evaluation
from anon_dagster.release.freshness import Freshness
from anon_dagster.release.population_order import decides
from anon_dagster.release.published_table import TableRefused, table_of_record
from anon_dagster.release.release_names import SOURCE_INPUT, project_inputs
from anon_dagster.release.shown_outcomes import check_shown, freshness_shown, undelivered_alert
from anon_dagster.release.shown_values import Shown, measured
from anon_dagster.spec.starter import scaffold


def evaluation(*checks: CheckResult) -> Evaluation:
    return Evaluation("r", "2025", "spec", "data", list(checks), measures={"rows": 10, "classes": 2})


def test_a_failed_check_links_the_report_and_a_passed_one_does_not():
    failed = CheckResult("k_anonymity", False, value=1, threshold=5, comparison=">=", summary="k = 1")
    passed = CheckResult("uniques_fraction", True, value=0.0, threshold=0.1, comparison="<=", severity="warn")
    report = Path("reports/r/2025/risk_report.md")
    shown = check_shown(failed, evaluation(failed, passed), report)
    assert (shown.passed, shown.severity, shown.description) == (False, "error", "k = 1")
    assert shown.metadata["report"] == report and shown.metadata["measured"] == Shown("int", 1)
    assert list(shown.metadata)[:6] == ["summary", "measured", "spec_key", "check", "threshold", "report"]
    quiet = check_shown(passed, evaluation(failed, passed), report)
    assert quiet.severity == "warn" and "report" not in quiet.metadata


def test_measured_values_keep_their_kind_and_figures_are_rounded():
    assert measured(None) == Shown("text", "n/a")
    assert measured(True) == Shown("text", "True")
    assert measured(7) == Shown("int", 7)
    assert measured(0.97943625) == Shown("float", 0.9794)


def test_freshness_shows_its_age_as_the_float_the_core_rounded():
    shown = freshness_shown(Freshness(False, "old", {"age_days": 123.45, "review_after_days": 90}))
    # 123.45 stays 123.45: not cut to 4 significant digits (123.5) as an evidence figure would be
    assert shown.metadata == {"age_days": Shown("float", 123.45), "review_after_days": 90}
    assert (shown.passed, shown.severity) == (False, "error")


def test_a_run_decides_a_partition_by_its_selection_else_by_its_job():
    assert decides(["r/raw", "r/published"], "__ASSET_JOB", "r/published", "r_release")
    assert not decides(["r/raw"], "r_release", "r/published", "r_release")  # a selection without it
    assert decides(None, "r_release", "r/published", "r_release")  # the whole release job
    assert not decides([], "other_job", "r/published", "r_release")


def test_project_inputs_name_the_source_asset_of_the_raw_step_only():
    spec = SimpleNamespace(source=SimpleNamespace(asset_key=("warehouse", "visits")),
                           anonymization=SimpleNamespace(synthetic=None))
    assert project_inputs(spec, "raw") == {SOURCE_INPUT: ["warehouse", "visits"]}
    assert project_inputs(spec, "anonymized") == {} and project_inputs(spec, "published") == {}


def test_the_table_of_record_refuses_an_outcome_that_is_not_published_before_opening_the_ledger():
    spec = SimpleNamespace(release="r", publication=SimpleNamespace(table="open.visits"))

    def no_ledger():
        raise AssertionError("the ledger is not read for a refused outcome")

    with pytest.raises(TableRefused, match=r"^r 2025: the publication was refused \(r/published\): nothing written "
                                           r"to open.visits$"):
        table_of_record(spec, no_ledger, "2025", {"outcome": "refused"}, "r/published")
    with pytest.raises(TableRefused, match="has no outcome yet"):
        table_of_record(spec, no_ledger, None, {}, "r/published")


def test_the_scaffold_writes_a_component_py_or_a_defs_yaml_and_the_starter(tmp_path):
    scaffold(tmp_path / "py", "pkg.mod.Component", python=True)
    assert "from pkg.mod import Component" in (tmp_path / "py" / "component.py").read_text()
    assert not (tmp_path / "py" / "defs.yaml").exists()
    scaffold(tmp_path / "yaml", "pkg.Component")
    assert "type: pkg.Component" in (tmp_path / "yaml" / "defs.yaml").read_text()
    assert (tmp_path / "yaml" / "specs" / "example_release.yaml").exists()
    defs = tmp_path / "more" / "defs.yaml"
    defs.parent.mkdir()
    defs.write_text("type: other\n")
    scaffold(defs, "pkg.Component", append=True)
    assert defs.read_text().startswith("type: other\n---\n") and (defs.parent / "data" / "example.csv").exists()


def test_an_undelivered_alert_is_one_line_with_why():
    assert undelivered_alert("HTTP 503") == "the refusal alert was not delivered: HTTP 503"
