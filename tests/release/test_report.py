"""The risk report: four sections, verdicts, byte-identical rebuild from the ledger, HTML."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster.cli import main
from anon_dagster.criteria import REGISTRY, RecursiveCL
from anon_dagster.demo.generate import generate_frames
from anon_dagster.release.ledger import dataset_hash
from anon_dagster.release.publish import compose, record_evaluation, spec_assignment
from anon_dagster.release.report import (
    build_report,
    canonical,
    class_size_distribution,
    render_html,
    render_json,
    render_markdown,
    report_inputs,
    risk_distribution,
    threshold_checks,
)
from anon_dagster.spec import load_spec
from tests.support.ledgers import env_ledger, new_ledger

REPO = Path(__file__).resolve().parents[2]
DEMO_SPEC = REPO / "assets_config" / "hospital_discharges.yaml"
KEY = b"ledger-linkage-test-key-32-bytes"
WHEN = "2025-02-01T10:00:00Z"


def _generalize(df: pd.DataFrame, k: int = 5) -> tuple[pd.DataFrame, int]:
    """A simple k-anonymous view of the demo discharges: 20-year ages, years, sex, province."""
    out = df.copy()
    lower = (out["age"] // 20) * 20
    out["age"] = lower.astype(str) + "-" + (lower + 19).astype(str)
    for col in ("postal_code", "municipality", "profession"):
        out[col] = "*"
    out["admission_date"] = out["admission_date"].dt.year.astype(str)
    qis = ["age", "sex", "postal_code", "municipality", "province", "profession", "admission_date"]
    size = out.groupby(qis)["diagnosis"].transform("size")
    return out[size >= k], int((size < k).sum())


def _measures(published: pd.DataFrame, qis: list[str]) -> tuple[dict, np.ndarray]:
    sizes = published.groupby(qis).size().to_numpy()
    n = int(sizes.sum())
    l_distinct = int(published.groupby(qis)["diagnosis"].nunique().min())
    return {
        "rows": n, "classes": len(sizes), "k": int(sizes.min()),
        "uniques_fraction": float((sizes == 1).sum() / n), "prosecutor_max": float(1 / sizes.min()),
        "prosecutor_avg": float(len(sizes) / n), "l_distinct": l_distinct,
    }, sizes


@pytest.fixture(scope="module")
def demo():
    spec = load_spec(DEMO_SPEC)
    _, discharges = generate_frames(population=20000, discharges=4000, seed=3)
    raw = discharges[discharges["admission_date"].dt.year == 2024].reset_index(drop=True)
    published, suppressed = _generalize(raw)
    return spec, raw, published, suppressed


def _inputs(spec, raw, published, suppressed, ledger, **overrides):
    measures, sizes = _measures(published, spec.quasi_identifiers)
    assignment = spec_assignment(spec, published, raw.loc[published.index, "patient_id"].reset_index(drop=True), linkage_key=KEY)
    by_group = (raw.loc[~raw.index.isin(published.index)].groupby("province").size())
    kwargs = dict(
        partition="2024", data_hash=dataset_hash(published), measures=measures, class_sizes=sizes,
        utility={"generic": {"qi_entropy_bits": 3.5}, "queries": [
            {"name": "prevalence_by_province", "error_points": 0.4, "max_error_points": 1.0, "passed": True}]},
        suppression={"rows": suppressed, "share": suppressed / len(raw), "by_group": by_group.to_dict()},
        composition=compose(spec, assignment, ledger, partition="2024"),
        evaluated_at=WHEN, published_path="published/hospital_discharges/2024.parquet",
        mitigations=["age generalized to 20-year bands", f"{suppressed} rows in classes below k suppressed"],
    )
    kwargs.update(overrides)
    return report_inputs(spec, **kwargs), assignment


def test_demo_report_has_four_sections_and_rebuilds_byte_identically(demo, tmp_path, master_key):
    spec, raw, published, suppressed = demo
    ledger = env_ledger(tmp_path / "ledger.sqlite", create=True)  # `report` opens it with the environment's keys
    inputs, assignment = _inputs(spec, raw, published, suppressed, ledger)
    outcome, report = record_evaluation(ledger, spec, inputs, assignment=assignment)
    assert outcome.action == "inserted"

    ident, hyp, meas, verdict = (report[s] for s in ("identification", "hypotheses", "measures", "verdict"))
    assert ident["dataset_hash"] == dataset_hash(published) and ident["spec_hash"] == spec.spec_hash()
    assert ident["partition"] == "2024" and ident["date"] == WHEN and ident["seed"] == spec.anonymization.seed
    assert ident["package_version"] == "0.1.0"
    assert set(hyp["quasi_identifiers"]) == set(spec.quasi_identifiers)
    assert hyp["quasi_identifiers"]["province"].startswith("partition key")
    assert hyp["sensitive_attributes"] == ["diagnosis"]
    # thresholds exactly as declared in the spec (the demo spec may be tuned: read it)
    declared = {k: v for k, v in spec.policy.thresholds.model_dump().items() if v is not None}
    assert hyp["thresholds"] == declared and "k" in declared
    assert hyp["population"]["sampling_fraction"] == spec.policy.sampling_fraction
    assert hyp["adversary"] == spec.policy.adversary
    assert hyp["published"]["dropped_identifiers"] == ["national_id", "full_name"]
    assert any("later" in b.lower() for b in hyp["what_the_method_cannot_see"])
    assert meas["metrics"]["k"] >= 5
    assert sum(c["rows"] for c in meas["class_size_distribution"]) == len(published)
    assert abs(sum(r["share"] for r in meas["risk_distribution"]) - 1) < 1e-9
    assert meas["composition"]["passed"] and meas["suppression"]["rows"] == suppressed
    if spec.policy.review_after_days == 180:
        assert verdict["review_date"] == "2025-07-31"  # 2025-02-01 + 180 days, by hand
    assert verdict["review_date"] == (date(2025, 2, 1) + timedelta(days=spec.policy.review_after_days)).isoformat()
    names = {c["name"] for c in verdict["checks"]}
    # every declared threshold is checked, under its gate check name
    assert {REGISTRY[k].check_name for k in declared} | {"composition"} <= names
    expected_ok = all(c["passed"] for c in verdict["checks"])
    assert verdict["publishable"] is expected_ok
    assert ledger.get(outcome.publication_id).status == ("published" if expected_ok else "failed")

    # the report written at evaluation time ...
    written = {fmt: tmp_path / f"report.{fmt}" for fmt in ("json", "md", "html")}
    written["json"].write_text(render_json(report), encoding="utf-8")
    written["md"].write_text(render_markdown(report), encoding="utf-8")
    written["html"].write_text(render_html(report), encoding="utf-8")
    # ... is rebuilt from the ledger alone, byte for byte
    stored = ledger.get(outcome.publication_id).report_json
    assert stored == written["json"].read_text(encoding="utf-8")
    for fmt, path in written.items():
        out = tmp_path / f"rebuilt.{fmt}"
        code = main(["report", str(DEMO_SPEC), "--partition", "2024", "--format", fmt,
                     "--output", str(out), "--ledger", str(ledger.path)])
        assert code == 0
        assert out.read_bytes() == path.read_bytes(), fmt
    # no linkage pseudonym and no person identifier leaks into the report
    text = written["json"].read_text()
    assert not any(p in text for p in assignment.members["person"].head(50))
    assert not any(p in text for p in raw["patient_id"].head(50))


def test_failed_release_gets_a_report_and_does_not_count(demo, tmp_path, master_key):
    spec, raw, published, suppressed = demo
    ledger = env_ledger(tmp_path / "ledger.sqlite", create=True)
    inputs, assignment = _inputs(spec, raw, published, suppressed, ledger,
                                 measures={"rows": 10, "classes": 10, "k": 1, "prosecutor_max": 1.0,
                                           "prosecutor_avg": 1.0, "l_distinct": 1})
    outcome, report = record_evaluation(ledger, spec, inputs, assignment=assignment)
    assert report["verdict"]["verdict"] == "not publishable"
    # every declared threshold fails: k=1 and risk 1 break any of them, the rest are unmeasured
    declared = {REGISTRY[k].check_name for k, v in spec.policy.thresholds.model_dump().items() if v is not None}
    assert declared and declared <= set(report["verdict"]["failed_checks"])
    entry = ledger.get(outcome.publication_id)
    assert entry.status == "failed"
    assert ledger.entries(population="patients") == []  # not a publication for composition
    assert ledger.assignment(outcome.publication_id).members.empty
    md = tmp_path / "r.md"
    assert main(["report", str(DEMO_SPEC), "--partition", "2024", "--output", str(md), "--ledger", str(ledger.path)]) == 0
    assert "not publishable" in md.read_text()


def test_report_cli_errors_are_user_errors(tmp_path, capsys, master_key):
    env_ledger(tmp_path / "l.sqlite", create=True)
    code = main(["report", str(DEMO_SPEC), "--partition", "1999", "--ledger", str(tmp_path / "l.sqlite")])
    assert code == 2
    assert "no ledger entry for hospital_discharges/1999" in capsys.readouterr().err


def test_threshold_checks_by_hand():
    checks = {c["name"]: c for c in threshold_checks(
        {"k": 5, "prosecutor_max": 0.2, "l_entropy": 2.0, "t_closeness": None},
        {"rows": 20, "k": 5, "prosecutor_max": 0.25})}
    assert set(checks) == {"k_anonymity", "prosecutor_risk_max", "l_diversity_entropy"}
    assert checks["k_anonymity"]["passed"] and not checks["prosecutor_risk_max"]["passed"]
    assert not checks["l_diversity_entropy"]["passed"] and "not measured" in checks["l_diversity_entropy"]["summary"]
    assert checks["prosecutor_risk_max"]["summary"] == "highest prosecutor risk = 0.25 violates the threshold <= 0.2"


def test_fallback_verdict_judges_recursive_cl():
    """recursive (c, l): l_recursive 2 measured at the declared c = 3 meets l = 2, misses l = 3."""
    measures = {"rows": 12, "l_recursive": 2, "recursive_c": 3.0}
    [met] = threshold_checks({"recursive_cl": {"c": 3, "l": 2}}, measures)
    [missed] = threshold_checks({"recursive_cl": {"c": 3, "l": 3}}, measures)
    assert (met["name"], met["passed"], met["value"], met["comparison"]) == ("l_diversity_recursive_cl", True, 2, "holds")
    assert not missed["passed"]
    spec = load_spec(DEMO_SPEC)
    spec = spec.model_copy(update={"policy": spec.policy.model_copy(update={
        "thresholds": spec.policy.thresholds.model_copy(update={"recursive_cl": RecursiveCL(c=3, l=3)})})})
    report = build_report(report_inputs(spec, partition="", data_hash="d" * 64, measures={**measures, "k": 5},
                                        evaluated_at=WHEN))
    assert "l_diversity_recursive_cl" in report["verdict"]["failed_checks"]


def test_fallback_verdict_judges_population_uniqueness_on_its_most_pessimistic_estimator():
    """Estimators between 0.01 and 0.04: the threshold 0.03 fails on the largest, 0.05 passes."""
    pu = {"min": 0.01, "max": 0.04, "estimates": {"pitman": {"fraction": 0.01}, "zayatz": {"fraction": 0.04}}}
    [fails] = threshold_checks({"population_uniqueness": 0.03}, {"rows": 100, "population_uniqueness": pu})
    [passes] = threshold_checks({"population_uniqueness": 0.05}, {"rows": 100, "population_uniqueness": pu})
    assert (fails["name"], fails["passed"], fails["value"]) == ("population_uniqueness", False, 0.04)
    assert passes["passed"]


def test_distributions_by_hand():
    sizes = [1, 2, 2, 5, 10]
    assert class_size_distribution(sizes) == [
        {"size": 1, "classes": 1, "rows": 1}, {"size": 2, "classes": 2, "rows": 4},
        {"size": 5, "classes": 1, "rows": 5}, {"size": 10, "classes": 1, "rows": 10}]
    bins = {r["to"]: r["rows"] for r in risk_distribution(sizes)}
    # risks: 1 (1 row), 0.5 (4 rows), 0.2 (5 rows), 0.1 (10 rows)
    assert bins == {0.01: 0, 0.02: 0, 0.05: 0, 0.1: 10, 0.2: 5, 0.334: 0, 0.5: 4, 1.0: 1}


def test_canonical_json_is_stable():
    value = {"b": np.float64(0.1) + np.float64(0.2), "a": [np.int64(3), float("nan"), (1, 2)], "c": np.bool_(True)}
    assert canonical(value) == {"b": 0.3, "a": [3, None, [1, 2]], "c": True}
    text = render_json(value)
    assert text.index('"a"') < text.index('"b"') and text.endswith("\n")


@settings(max_examples=25, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8),
                       st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**9, 10**9),
                                 st.text(max_size=10), st.none()), max_size=8))
def test_report_survives_a_json_round_trip(extra):
    """What the ledger stores (JSON) rebuilds the same bytes as the live inputs."""
    spec = load_spec(DEMO_SPEC)
    inputs = report_inputs(spec, partition="2024", data_hash="d" * 64, measures={"k": 5, **extra},
                           class_sizes=[5, 6, 6], evaluated_at=WHEN)
    again = json.loads(json.dumps(inputs))
    assert render_json(build_report(again)) == render_json(build_report(inputs))


@pytest.mark.browser
def test_html_report_renders_in_headless_chromium(demo, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (make browser installs Debian's package)")
    spec, raw, published, suppressed = demo
    inputs, _ = _inputs(spec, raw, published, suppressed, new_ledger(tmp_path / "l.sqlite"))
    page = render_html(build_report(inputs))
    assert "<script" not in page.lower()
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page and page.count("<svg") == 2
    out_dir = REPO / "test-output"
    out_dir.mkdir(exist_ok=True)
    html_path = out_dir / "risk_report.html"
    html_path.write_text(page, encoding="utf-8")
    shot = out_dir / "risk_report.png"
    shot.unlink(missing_ok=True)
    proc = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--window-size=1100,2600", f"--screenshot={shot}", html_path.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert shot.exists() and shot.stat().st_size > 20_000
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_format_value_one_rule_for_figures():
    from anon_dagster.release.report import format_value

    assert format_value(1 / 3) == "0.3333"
    assert format_value(12345.678) == "1.235e+04"
    assert format_value(7) == "7"
    assert format_value(None) == "—" and format_value(None, missing="-") == "-"
    assert format_value({"l": 3, "c": 2}) == '{"c": 2, "l": 3}'


# ----- the risk-utility frontier (section 3) ------------------------------------------------------

def _two_qi_spec(method="global", max_sup=0.0, frontier=None):
    from anon_dagster.spec import spec_from_dict

    an = {"method": method, "k": 3, "max_suppression": max_sup, "utility": "loss"}
    if frontier:
        an["frontier"] = frontier
    return spec_from_dict({
        "release": "frontier", "source": {"path": "x.csv"},
        "columns": {"sex": {"role": "quasi"},
                    "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [10]}},
                    "dx": {"role": "sensitive"}},
        "anonymization": an, "policy": {"thresholds": {"k": 3}}, "publication": {"path": "o.parquet"},
    })


TWO_QI = pd.DataFrame({"sex": ["M", "F", "M", "F", "M", "F"], "age": [20, 21, 22, 30, 31, 32],
                       "dx": list("aabbab")})


def test_frontier_table_and_plot_from_a_global_record():
    """Hand-computed: k=3 without suppression, two minimal nodes.

    (age 10-year bins, sex *) → classes 20s / 30s of 3: loss (age 2/5 + sex 1) / 2 = 0.7;
    (age *, sex kept) → classes M / F of 3: loss (1 + 0) / 2 = 0.5, the chosen one.
    Every other node either fails k or generalizes one of these.
    """
    from anon_dagster.anonymize import anonymize

    spec = _two_qi_spec()
    result = anonymize(TWO_QI, spec)
    inputs = report_inputs(spec, partition="", data_hash="d" * 64, measures={"k": 3},
                           class_sizes=[3, 3], anonymization_record=result.record.to_json(), evaluated_at=WHEN)
    report = build_report(inputs)
    fr = report["measures"]["frontier"]
    assert fr["available"] and fr["complete"] is True and fr["metric"] == "loss"
    got = {(n["levels"]["sex"], n["levels"]["age"]): (n["loss"], n["chosen"], n["minimal"]) for n in fr["nodes"]}
    assert got == {(1, 1): (pytest.approx(0.7), False, True), (0, 2): (pytest.approx(0.5), True, True)}
    assert all(n["suppressed_rows"] == 0 and n["suppression_share"] == 0 for n in fr["nodes"])

    md = render_markdown(report)
    assert "**Risk-utility frontier**" in md and "Frontier complete" in md
    assert "| sex | age | loss (loss) | suppressed rows | suppression share | meets policy | chosen |" in md
    assert "| 0 | 2 | 0.5 | 0 | 0 | yes | ◀ chosen |" in md
    assert "| 1 | 1 | 0.7 | 0 | 0 | yes |  |" in md
    page = render_html(report)
    assert page.count("<svg") == 3  # class sizes, risk, frontier
    svg = page[page.index("Risk-utility frontier: loss"):]
    svg = svg[: svg.index("</svg>")]
    assert svg.count("<circle") == 2 and svg.count('class="chosen"') == 1
    assert "chosen: sex=0, age=2: loss 0.5" in svg
    # the stored (JSON) inputs rebuild the same bytes
    again = json.loads(json.dumps(inputs))
    for render_ in (render_json, render_markdown, render_html):
        assert render_(build_report(again)) == render_(report)


def test_frontier_completeness_is_printed():
    from anon_dagster.anonymize import anonymize

    spec = _two_qi_spec(max_sup=0.2, frontier="complete")
    record = anonymize(TWO_QI, spec).record.to_json()  # report inputs hold the record's JSON
    assert record["search"]["frontier_complete"] is True
    md = render_markdown(build_report(report_inputs(spec, partition="", data_hash="d" * 64, measures={"k": 3},
                                                    anonymization_record=record, evaluated_at=WHEN)))
    assert "Frontier complete: every minimal node" in md and "Frontier partial" not in md
    # the same record saying the search left nodes unsettled
    record["search"]["frontier_complete"] = False
    md = render_markdown(build_report(report_inputs(spec, partition="", data_hash="d" * 64, measures={"k": 3},
                                                    anonymization_record=record, evaluated_at=WHEN)))
    assert "Frontier partial: only the minimal nodes the search settled" in md
    assert "anonymization.frontier: complete" in md


def test_chosen_node_off_the_frontier_is_appended_and_marked():
    """With suppression a generalization can lose less than a minimal node: shown, not minimal."""
    from anon_dagster.release.report import risk_utility_frontier

    record = {
        "method": "global", "quasi_identifiers": ["a", "b"], "partition_keys": ["p"], "rows_in": 200,
        "levels": {"a": 1, "b": 1},
        "search": {
            "metric": "loss", "frontier_complete": False, "nodes_checked": 4, "lattice_size": 9,
            "frontier": [
                {"levels": {"a": 1, "b": 0, "p": 0}, "loss": 0.4, "suppressed_rows": 10, "classes": 7,
                 "satisfied": True, "missing": []},
                {"levels": {"a": 0, "b": 1, "p": 0}, "loss": None, "suppressed_rows": 4, "classes": 9,
                 "satisfied": False, "missing": ["t_closeness: 4 rows"]},
            ],
            "best": {"levels": {"a": 1, "b": 1, "p": 0}, "loss": 0.3, "suppressed_rows": 0, "classes": 3,
                     "satisfied": True, "missing": []},
        },
    }
    fr = risk_utility_frontier(record)
    assert fr["complete"] is False and fr["chosen"] == {"a": 1, "b": 1}
    assert [(n["levels"], n["minimal"], n["chosen"]) for n in fr["nodes"]] == [
        ({"a": 1, "b": 0}, True, False), ({"a": 0, "b": 1}, True, False), ({"a": 1, "b": 1}, False, True)]
    assert fr["nodes"][0]["suppression_share"] == 0.05  # 10 of 200
    page = render_html(build_report(report_inputs(
        load_spec(DEMO_SPEC), partition="", data_hash="d" * 64, measures={"k": 5},
        anonymization_record=record, evaluated_at=WHEN)))
    svg = page[page.index("Risk-utility frontier: loss"):]
    svg = svg[: svg.index("</svg>")]
    assert svg.count("<circle") == 2  # the node without a loss (misses t) is not plotted
    assert "◀ chosen (not minimal)" in page and "no: t_closeness: 4 rows" in page


def test_mondrian_report_says_there_is_no_frontier():
    from anon_dagster.anonymize import anonymize

    spec = _two_qi_spec(method="mondrian")
    result = anonymize(TWO_QI, spec)
    report = build_report(report_inputs(spec, partition="", data_hash="d" * 64, measures={"k": 3},
                                        anonymization_record=result.record.to_json(), evaluated_at=WHEN))
    fr = report["measures"]["frontier"]
    assert fr["available"] is False
    md = render_markdown(report)
    assert "No risk-utility frontier: Mondrian" in md
    assert render_html(report).count("<svg") == 0  # no class sizes given, no frontier plot
