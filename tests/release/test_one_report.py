"""One report per evaluation: a refused one's in the partition's report folder, a passing one's
beside its publication (:mod:`anon_dagster.release.publication`)."""

from __future__ import annotations

import json

from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import pipeline, publication
from anon_dagster.spec import load_spec
from tests.support.ledgers import env_ledger
from tests.support.releases import write_release


def _reports(root) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*report*.*") if p.is_file())


def test_a_published_partition_has_one_report_beside_its_publication(tmp_path, master_key):
    ledger = env_ledger(tmp_path / "ledger.sqlite", create=True)
    keystore = open_keystore()
    spec = load_spec(write_release(tmp_path, thresholds={"k": 2}))
    folder = publication.reports_folder(spec, None, "2023")
    # a report left by an earlier evaluation of the partition (a refusal, or an older passing one)
    folder.mkdir(parents=True)
    for fmt in ("md", "html", "json"):
        (folder / f"risk_report.{fmt}").write_text("stale")
    run = pipeline.run_gate(spec, partition="2023", keystore=keystore, ledger=ledger)
    assert run.evaluation.passed
    kept = publication.keep_evaluation(spec, run.evaluation, ledger, folder)
    assert kept == publication.Kept(None, refused=False)
    assert publication.kept_report(spec, None, "2023") is None
    assert _reports(tmp_path / "reports") == []

    done = publication.publish_release(spec, run.evaluation, anonymized=run.anonymized.data,
                                       pseudonymized=run.pseudonymized.data, ledger=ledger)
    assert _reports(tmp_path / "published") == [f"tiny/2023.report.{fmt}" for fmt in ("html", "json", "md")]
    assert done.published.report_path == tmp_path / "published" / "tiny" / "2023.report.md"
    report = json.loads(done.published.report_path.with_suffix(".json").read_text())
    assert report["verdict"]["publishable"] is True
    assert _reports(tmp_path / "reports") == []


def test_publishing_removes_the_report_a_refusal_left_in_the_report_folder(tmp_path, master_key):
    """A run that selects only the publication (no check evaluation in between) still leaves one report."""
    ledger = env_ledger(tmp_path / "ledger.sqlite", create=True)
    keystore = open_keystore()
    spec = load_spec(write_release(tmp_path, thresholds={"k": 2}))
    folder = publication.reports_folder(spec, None, "2023")
    refused_spec = load_spec(write_release(tmp_path, method="none", k=5, thresholds={"k": 5}))
    refused = pipeline.run_gate(refused_spec, partition="2023", keystore=keystore, ledger=ledger).evaluation
    kept = publication.keep_evaluation(refused_spec, refused, ledger, folder)
    assert kept.refused and kept.report == folder / "risk_report.md" and kept.report.exists()

    spec = load_spec(write_release(tmp_path, thresholds={"k": 2}))  # the spec fixed: it passes now
    run = pipeline.run_gate(spec, partition="2023", keystore=keystore, ledger=ledger)
    publication.publish_release(spec, run.evaluation, anonymized=run.anonymized.data,
                                pseudonymized=run.pseudonymized.data, ledger=ledger, reports=folder)
    assert publication.kept_report(spec, None, "2023") is None
    assert _reports(tmp_path / "reports") == []
    assert _reports(tmp_path / "published") == [f"tiny/2023.report.{fmt}" for fmt in ("html", "json", "md")]
    # the refusal stays in the ledger, with the inputs of its report
    statuses = [e.status for e in ledger.entries(release="tiny", partition="2023", include_failed=True)]
    assert statuses == ["failed", "published"]


def test_a_refused_partition_keeps_one_report_in_its_report_folder(tmp_path, master_key):
    ledger = env_ledger(tmp_path / "ledger.sqlite", create=True)
    spec = load_spec(write_release(tmp_path, method="none", k=5, thresholds={"k": 5}))
    run = pipeline.run_gate(spec, partition="2023", keystore=open_keystore(), ledger=ledger)
    folder = publication.reports_folder(spec, None, "2023")
    kept = publication.keep_evaluation(spec, run.evaluation, ledger, folder)
    assert kept.report == publication.kept_report(spec, None, "2023") == folder / "risk_report.md"
    assert _reports(tmp_path / "reports") == [f"tiny/2023/risk_report.{fmt}" for fmt in ("html", "json", "md")]
    assert not (tmp_path / "published").exists()
