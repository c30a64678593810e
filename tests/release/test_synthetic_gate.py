"""Synthetic releases through the gate (pipeline.run_gate) on Adult: a proper CART synthesis
passes policy.synthetic, one that copies its training records is refused; the report shows the
audit's figures and no row."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from anon_dagster.release import pipeline, publication
from anon_dagster.release import synthetic as gate_synthetic
from anon_dagster.release.report import build_report, render
from anon_dagster.spec import load_spec

QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass"]
SECRETS = ["occupation", "salary-class"]
BOUNDS = {"copy_rate_gap": 0.02, "closer_to_train_gap": 0.05, "mia_auc": 0.55}
CHECKS = ["synthetic_copy_rate_gap", "synthetic_closer_to_train_gap", "synthetic_mia_auc"]


def write_spec(folder: Path, adult: Path, leaf: int, **policy) -> Path:
    columns = {c: {"role": "quasi"} for c in QIS} | {c: {"role": "sensitive"} for c in SECRETS}
    spec = {"release": f"adult_leaf{leaf}", "source": {"path": str(adult / "adult.csv"), "separator": ";"},
            "columns": columns,
            "anonymization": {"method": "synthetic", "synthetic": {"min_samples_leaf": leaf}},
            "policy": {"synthetic": {**BOUNDS, "control": {"fraction": 0.5}}, **policy},
            "publication": {"path": "../published/{release}.csv"}}
    (folder / "specs").mkdir(parents=True, exist_ok=True)
    path = folder / "specs" / f"leaf{leaf}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory, adult_dir):
    gate_synthetic.clear_cache()
    folder = tmp_path_factory.mktemp("synthetic_gate")
    # leaf 1: a leaf of one record hands its values on whole, so most synthetic rows are training records
    copying = load_spec(write_spec(folder, adult_dir, 1))
    proper = load_spec(write_spec(folder, adult_dir, 500, attacks={"inference": 0.5, "secrets": SECRETS}))
    yield {"copying": (copying, pipeline.run_gate(copying)), "proper": (proper, pipeline.run_gate(proper))}
    gate_synthetic.clear_cache()


def test_a_proper_cart_synthesis_of_adult_passes(runs):
    _, run = runs["proper"]
    evaluation = run.evaluation
    assert [c.name for c in evaluation.checks] == ["inference_risk", *CHECKS, "data_contract"]
    assert evaluation.passed, [c.summary for c in evaluation.checks if not c.passed]
    figures = evaluation.measures["synthetic"]
    assert figures["copy_rate_gap"] <= 0.02 and abs(figures["mia_auc"] - 0.5) < 0.05
    # half of Adult withheld as control records, never seen by the synthesis
    assert figures["rows"]["train"] + figures["rows"]["control"] == 30162
    assert run.anonymized.record.attack_control.rows_withheld == figures["rows"]["control"]
    attacks = {(r["attack"], r.get("secret")) for r in evaluation.measures["attacks"]["results"]}
    assert ("inference", "occupation") in attacks and ("linkability", None) in attacks


def test_a_synthesis_copying_its_training_records_is_refused(runs):
    _, run = runs["copying"]
    evaluation = run.evaluation
    assert not evaluation.passed
    copy = evaluation.check("synthetic_copy_rate_gap")
    assert copy.passed is False and copy.measured > 0.1 and "violates the threshold <= 0.02" in copy.summary
    assert copy.spec_key == "policy.synthetic.copy_rate_gap"
    assert evaluation.check("synthetic_mia_auc").measured > 0.55


def test_the_report_shows_the_audit_and_no_row(runs):
    spec, run = runs["copying"]
    report = build_report(publication.evaluation_report_inputs(spec, run.evaluation))
    section = report["measures"]["synthetic"]
    assert [r["key"] for r in section["rows"]] == list(BOUNDS)
    assert {c["name"] for c in section["checks"]} == set(CHECKS)
    text = render(report, "md")
    assert "**Synthetic data**" in text and "exact-copy rate gap" in text
    html = render(report, "html")
    assert "<h3>Synthetic data</h3>" in html
    # no synthetic or real row: no occupation label appears anywhere in the report
    for label in ("Exec-managerial", "Craft-repair", "Never-married"):
        assert label not in text and label not in html
