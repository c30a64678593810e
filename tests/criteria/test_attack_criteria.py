"""The attack criteria of ``policy.attacks``: the spec block, its validation, the checks it
declares and how each is judged (the residual risk's point estimate and its interval)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from anon_dagster.criteria import (
    ATTACK_CRITERIA,
    EVIDENCE_MARGIN,
    attack_criterion_for_check,
    criterion_for_check,
    declared_attacks,
    declared_checks,
)
from anon_dagster.errors import SpecError
from anon_dagster.spec import load_spec, spec_from_dict

COLUMNS = {
    "pid": {"role": "identifier", "pseudonymize": {"method": "hmac"}},
    "name": {"role": "identifier"},
    "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [10, 20]}},
    "sex": {"role": "quasi"},
    "diagnosis": {"role": "sensitive"},
    "stay": {"role": "insensitive"},
}


def raw_spec(attacks: dict | None = None, **sections) -> dict:
    raw = {"release": "visits", "source": {"path": "visits.csv"}, "columns": dict(COLUMNS),
           "publication": {"path": "out.csv"}, **sections}
    if attacks is not None:
        raw["policy"] = {**raw.get("policy", {}), "attacks": attacks}
    return raw


def problems_of(tmp_path: Path, raw: dict) -> list:
    path = tmp_path / "visits.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(SpecError) as exc:
        load_spec(path)
    return exc.value.problems


# ----- the spec block --------------------------------------------------------------------------


def test_the_block_is_optional_and_a_spec_without_it_dumps_and_hashes_as_before():
    plain = spec_from_dict(raw_spec())
    assert plain.policy.attacks is None
    assert "attacks" not in plain.model_dump(mode="json")["policy"]
    with_block = spec_from_dict(raw_spec({"singling_out": 0.05}))
    assert with_block.spec_hash() != plain.spec_hash()
    attacks = with_block.policy.attacks
    assert (attacks.linkability, attacks.inference, attacks.secrets) == (None, None, None)
    assert (attacks.control.fraction, attacks.control.min_rows, attacks.budget_seconds, attacks.severity) == (
        0.1, 1000, None, "error")


def test_an_unknown_secret_column_is_named_with_file_and_key(tmp_path):
    [problem] = problems_of(tmp_path, raw_spec({"inference": 0.1, "secrets": ["diagnosis", "income"]}))
    assert problem.file == str(tmp_path / "visits.yaml")
    assert problem.key == "policy.attacks.secrets.1"
    assert "'income' is not declared under columns" in problem.message


def test_a_control_fraction_of_0_7_is_named_with_file_and_key(tmp_path):
    [problem] = problems_of(tmp_path, raw_spec({"singling_out": 0.05, "control": {"fraction": 0.7}}))
    assert problem.file == str(tmp_path / "visits.yaml")
    assert problem.key == "policy.attacks.control.fraction"
    assert "(0, 0.5]" in problem.message and "withheld from the release" in problem.message
    [zero] = problems_of(tmp_path, raw_spec({"singling_out": 0.05, "control": {"fraction": 0}}))
    assert zero.key == "policy.attacks.control.fraction"
    assert spec_from_dict(raw_spec({"singling_out": 0.05, "control": {"fraction": 0.5}})).policy.attacks.control.fraction == 0.5


def test_every_problem_of_the_block_is_reported_together(tmp_path):
    problems = problems_of(tmp_path, raw_spec({"inference": True, "singling_out": 1.5, "budget": 60,
                                               "severity": "fatal"}))
    by_key = {p.key: p.message for p in problems}
    assert by_key["policy.attacks.inference"] == "must be a fraction in [0, 1], not the boolean true"
    assert by_key["policy.attacks.singling_out"].startswith("must be a fraction in [0, 1]")
    assert "unknown key 'budget'" in by_key["policy.attacks.budget"] and "budget_seconds" in by_key["policy.attacks.budget"]
    assert "policy.attacks.severity" in by_key


@pytest.mark.parametrize(("attacks", "sections", "key", "words"), [
    ({}, {}, "policy.attacks", "declares no attack"),
    ({"inference": 0.1, "secrets": ["name"]}, {}, "policy.attacks.secrets.0", "is an identifier"),
    ({"linkability": 0.05}, {"columns": {"age": {"role": "quasi"}, "d": {"role": "sensitive"}}},
     "policy.attacks.linkability", "at least two quasi-identifiers"),
    ({"inference": 0.1}, {"columns": {"age": {"role": "quasi"}, "sex": {"role": "quasi"}}},
     "policy.attacks.inference", "list policy.attacks.secrets"),
    ({"singling_out": 0.05}, {"publication": {"path": "out.csv", "mode": "aggregates", "epsilon": 1.0}},
     "policy.attacks", "publishes no rows"),
])
def test_an_inconsistent_block_is_refused(tmp_path, attacks, sections, key, words):
    problems = problems_of(tmp_path, raw_spec(attacks, **sections))
    assert any(p.key == key and words in p.message for p in problems), problems


# ----- the checks declared ---------------------------------------------------------------------


def test_each_declared_attack_is_one_check_after_the_thresholds_with_the_blocks_severity():
    spec = spec_from_dict(raw_spec({"inference": 0.1, "singling_out": 0.05, "severity": "warn"},
                                   policy={"thresholds": {"k": 5}}))
    checks = declared_checks(spec)
    assert [c.name for c in checks] == ["k_anonymity", "singling_out_risk", "inference_risk", "data_contract"]
    singling = checks[1]
    assert (singling.spec_key, singling.severity, singling.comparison, singling.threshold) == (
        "policy.attacks.singling_out", "warn", "<=", 0.05)
    assert "declared in policy.attacks.singling_out" in singling.description
    assert [(c.key, t) for c, t in declared_attacks(spec.policy.attacks)] == [("singling_out", 0.05), ("inference", 0.1)]


def test_the_attack_criteria_have_stable_check_names_apart_from_the_thresholds():
    assert {k: c.check_name for k, c in ATTACK_CRITERIA.items()} == {
        "singling_out": "singling_out_risk", "linkability": "linkability_risk", "inference": "inference_risk"}
    for c in ATTACK_CRITERIA.values():
        assert attack_criterion_for_check(c.check_name) is c
        assert criterion_for_check(c.check_name) is None  # no class evidence: the attack's own figures


# ----- judging ---------------------------------------------------------------------------------


def result(attack: str, risk: float | None, low: float, high: float, *, secret: str | None = None,
           main: int = 2000, control: int = 1000, cut: str | None = None) -> dict:
    return {"attack": attack, "secret": secret, "main": {"rate": 0.5}, "control": {"rate": 0.4},
            "baseline": {"rate": 0.3}, "residual": {"risk": risk, "low": low, "high": high, "confidence": 0.95},
            "targets": {"main": main, "control": control}, "complete": cut is None, "cut": cut}


def test_a_residual_at_most_the_threshold_with_a_tight_interval_passes():
    judged = ATTACK_CRITERIA["linkability"].judge([result("linkability", 0.05, 0.02, 0.08)], 0.05)
    assert judged.passed and judged.reason == "passed" and judged.value == 0.05
    assert "meets the threshold <= 0.05" in judged.summary


def test_a_residual_above_the_threshold_fails():
    judged = ATTACK_CRITERIA["linkability"].judge([result("linkability", 0.0501, 0.03, 0.07)], 0.05)
    assert not judged.passed and judged.reason == "risk" and "violates" in judged.summary


def test_a_passing_point_with_an_interval_beyond_threshold_plus_the_margin_is_not_enough_evidence():
    assert EVIDENCE_MARGIN == 0.10
    edge = ATTACK_CRITERIA["inference"].judge([result("inference", 0.0, -0.5, 0.20, secret="d")], 0.10)
    assert edge.passed  # the upper end at threshold + 0.10 exactly still passes
    wide = ATTACK_CRITERIA["inference"].judge([result("inference", 0.0, -0.5, 0.2001, secret="d", control=20)], 0.10)
    assert not wide.passed and wide.reason == "evidence" and wide.value == 0.0
    assert "not enough evidence" in wide.summary and "20 control targets" in wide.summary


def test_singling_out_and_inference_are_judged_on_their_worst_result():
    figures = [result("singling_out_univariate", 0.0, -0.01, 0.01), result("singling_out_multivariate", 0.3, 0.25, 0.35),
               result("linkability", 0.9, 0.8, 1.0), result("inference", 0.02, 0.0, 0.05, secret="a"),
               result("inference", 0.08, 0.05, 0.12, secret="b")]
    singling = ATTACK_CRITERIA["singling_out"].judge(figures, 0.05)
    assert singling.value == 0.3 and not singling.passed and "worst of 2: singling_out_multivariate" in singling.summary
    inference = ATTACK_CRITERIA["inference"].judge(figures, 0.1)
    assert inference.value == 0.08 and inference.passed and "worst of 2: secret b" in inference.summary
    assert not ATTACK_CRITERIA["inference"].judge(figures, 0.07).passed


def test_an_attack_without_targets_or_not_run_never_passes():
    missing = ATTACK_CRITERIA["linkability"].judge([result("inference", 0.0, 0.0, 0.0)], 0.05)
    assert not missing.passed and missing.reason == "unmeasured" and missing.value is None
    empty = ATTACK_CRITERIA["linkability"].judge([result("linkability", None, -1.0, 1.0, main=0)], 0.05)
    assert not empty.passed and "no main or no control target" in empty.summary


def test_a_cut_attack_says_so():
    judged = ATTACK_CRITERIA["linkability"].judge(
        [result("linkability", 0.0, -0.01, 0.02, cut="time budget of 1 s reached: 512 main and 512 control targets attacked")],
        0.05)
    assert judged.passed and "cut by its budget: time budget of 1 s reached" in judged.summary


# ----- the documentation -----------------------------------------------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _attacks_section() -> str:
    return (DOCS / "contracts.md").read_text(encoding="utf-8").split("### Attacks (`policy.attacks`)", 1)[1]


def test_the_contracts_attacks_table_says_what_the_attack_criteria_say():
    lines = [line for line in _attacks_section().split("```", 2)[2].splitlines() if line.startswith("|")][2:]
    rows = [[cell.strip().strip("`") for cell in line.strip().strip("|").split("|")] for line in lines]
    declared = {r[0]: r[1] for r in rows if r[0] in ATTACK_CRITERIA}
    assert declared == {k: c.check_name for k, c in ATTACK_CRITERIA.items()}
    for key in declared:
        assert ATTACK_CRITERIA[key].threshold_type.text in next(r[3] for r in rows if r[0] == key)


def test_the_contracts_attacks_example_validates():
    block = yaml.safe_load(_attacks_section().split("```yaml\n", 1)[1].split("```", 1)[0])
    spec = spec_from_dict(raw_spec(block["policy"]["attacks"]))
    assert [c.name for c in declared_checks(spec)][:3] == ["singling_out_risk", "linkability_risk", "inference_risk"]
    assert spec.policy.attacks.secrets == ["diagnosis"] and spec.policy.attacks.budget_seconds == 60
