"""``anon-dagster attack`` on a synthetic release: the gate's attacks and audit, the report's
figures, exit 1 when a declared bound or attack fails."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from anon_dagster.cli import main
from anon_dagster.release import pipeline, publication
from anon_dagster.release import synthetic as gate_synthetic
from anon_dagster.release.report import build_report
from anon_dagster.spec import load_spec


def _write(tmp: Path, *, leaf: int, copy_rate_gap: float = 0.3, inference: float = 0.9) -> Path:
    rng = np.random.default_rng(5)
    n = 1200
    age = rng.integers(18, 90, n)
    pd.DataFrame({"age": age, "sex": rng.choice(["F", "M"], n), "zip": rng.choice([f"Z{i}" for i in range(12)], n),
                  "diagnosis": np.where(age > 60, "x", rng.choice(["y", "z"], n))}).to_csv(tmp / "data.csv",
                                                                                         index=False)
    spec = {"release": f"synth_leaf{leaf}", "source": {"path": "data.csv"},
            "columns": {"age": {"role": "quasi"}, "sex": {"role": "quasi"}, "zip": {"role": "quasi"},
                        "diagnosis": {"role": "sensitive"}},
            "anonymization": {"method": "synthetic", "synthetic": {"min_samples_leaf": leaf}},
            "policy": {"synthetic": {"copy_rate_gap": copy_rate_gap, "mia_auc": 0.8,
                                     "control": {"fraction": 0.3, "min_rows": 0}},
                       "attacks": {"inference": inference, "linkability": 0.9}},
            "publication": {"path": "out/{release}.csv"}}
    path = tmp / f"leaf{leaf}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_figures_are_the_reports_of_the_same_release(tmp_path, capsys):
    path = _write(tmp_path, leaf=100)
    gate_synthetic.clear_cache()
    code, out, err = _cli(capsys, "attack", path, "--json")
    assert code == 0, err + out
    shown = json.loads(out)
    gate_synthetic.clear_cache()  # the gate computes its figures afresh: equal by the same functions, not by a cache
    spec = load_spec(path)
    run = pipeline.run_gate(spec)
    report = build_report(publication.evaluation_report_inputs(spec, run.evaluation))
    assert shown["synthetic"] == json.loads(json.dumps(report["measures"]["synthetic"]))
    assert shown["attacks"] == json.loads(json.dumps(run.evaluation.measures["attacks"]["results"]))
    assert {(r["attack"], r.get("secret")) for r in shown["attacks"]} >= {("linkability", None),
                                                                          ("inference", "diagnosis")}
    verdicts = {c["name"]: c["passed"] for c in shown["checks"]}
    assert verdicts == {c.name: c.passed for c in run.evaluation.checks if c.name in verdicts}
    assert set(verdicts) == {"synthetic_copy_rate_gap", "synthetic_mia_auc", "inference_risk", "linkability_risk"}
    assert shown["passed"] is True and shown["method"] == "synthetic"
    assert shown["synthetic"]["sizes"]["control"] == shown["control"]["rows"] > 0


def test_a_failed_synthetic_bound_exits_1_and_the_text_names_it(tmp_path, capsys):
    # a leaf of one record hands its values on whole: the synthetic rows copy the train records
    path = _write(tmp_path, leaf=1, copy_rate_gap=0.001)
    code, out, err = _cli(capsys, "attack", path)
    assert code == 1, err
    assert "FAIL  synthetic_copy_rate_gap" in out and "exact-copy rate gap" in out
    assert "PASS  linkability_risk" in out
    code, out, _ = _cli(capsys, "attack", path, "--json", "--targets", "50")
    assert code == 1 and json.loads(out)["passed"] is False


def test_a_failed_attack_on_a_synthetic_table_exits_1(tmp_path, capsys):
    path = _write(tmp_path, leaf=100, copy_rate_gap=1.0, inference=0.0)
    code, out, _ = _cli(capsys, "attack", path, "--json")
    failed = [c["name"] for c in json.loads(out)["checks"] if not c["passed"]]
    assert code == 1 and failed == ["inference_risk"]
