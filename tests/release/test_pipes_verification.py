"""The published frequency table an external job writes, and the orchestrator's re-judging of it:
hand-counted tables, the rows' own figures, and each reason to refuse."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pytest

from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import gate, pipeline
from anon_dagster.release.pipes_verification import (
    FIRST_ROW,
    frequency_checks,
    frequency_columns,
    measure_frequency_file,
    published_frequencies,
    read_and_rejudge,
    rejudge,
    write_frequencies,
)
from anon_dagster.spec import load_spec
from tests.support.releases import write_release

pytestmark = pytest.mark.filterwarnings("ignore:.*scrypt n=.*is weak")

ROW_SCOPE = {"method": "hmac", "purpose": "research", "scope": "row"}  # links no rows: not a frequency column
THRESHOLDS = {"k": 2, "l_distinct": 2, "l_entropy": 1.2, "t_closeness": 0.9, "prosecutor_avg": 0.6,
              "uniques_fraction": 0.5}


def hand_table() -> pd.DataFrame:
    """Five published rows, age generalized to two bands (a categorical, the later band first)."""
    bands = pd.CategoricalDtype(["[40, 50)", "[30, 40)"])
    return pd.DataFrame({
        "age": pd.Series(["[30, 40)", "[30, 40)", "[40, 50)", "[30, 40)", "[40, 50)"], dtype=bands),
        "sex": ["F", "F", "M", "F", "M"], "region": ["North"] * 3 + ["North", "South"],
        "diagnosis": ["A10", "B20", "A10", "A10", "C30"], "pid": [f"p{i}" for i in range(5)],
        "visit_date": ["2023-03-01"] * 5})


def test_the_frequency_table_counts_each_combination_once_with_its_first_row(tmp_path):
    spec = load_spec(write_release(tmp_path, pid=ROW_SCOPE))
    freq = published_frequencies(spec, hand_table())
    assert list(freq.columns) == ["age", "sex", "region", "diagnosis", "count", FIRST_ROW]
    assert freq.drop(columns="age").to_dict("records") == [
        {"sex": "F", "region": "North", "diagnosis": "A10", "count": 2, FIRST_ROW: 0},
        {"sex": "F", "region": "North", "diagnosis": "B20", "count": 1, FIRST_ROW: 1},
        {"sex": "M", "region": "North", "diagnosis": "A10", "count": 1, FIRST_ROW: 2},
        {"sex": "M", "region": "South", "diagnosis": "C30", "count": 1, FIRST_ROW: 4}]
    assert list(freq["age"].cat.categories) == ["[40, 50)", "[30, 40)"]  # the table's own order, kept


def test_a_column_linking_a_persons_rows_is_counted_too(tmp_path):
    spec = load_spec(write_release(tmp_path))  # pid pseudonymized per release: it links a person's rows
    assert frequency_columns(spec, hand_table()) == ["age", "sex", "region", "diagnosis", "pid"]
    assert frequency_checks(spec) == ["k_anonymity"]  # data_contract is not frequency-derived


def test_the_parquet_file_keeps_the_figures_of_the_table(tmp_path):
    spec = load_spec(write_release(tmp_path, pid=ROW_SCOPE, thresholds=THRESHOLDS))
    written = write_frequencies(published_frequencies(spec, hand_table()), tmp_path / "f" / "2023.parquet")
    assert written.rows == 4 and written.sha256 == hashlib.sha256(written.path.read_bytes()).hexdigest()
    measures = measure_frequency_file(spec, pd.read_parquet(written.path))
    # classes: (30-40, F, North) of 3 rows, (40-50, M, North) and (40-50, M, South) of one each
    assert (measures["rows"], measures["classes"], measures["k"], measures["l_distinct"]) == (5, 3, 1, 1)
    assert measures["uniques_fraction"] == pytest.approx(2 / 5)


@pytest.fixture
def gate_run(tmp_path: Path, master_key: str):
    """A generated partition taken through the pandas gate (pid linking each person's rows)."""
    spec = load_spec(write_release(tmp_path, composition=False, thresholds=THRESHOLDS))
    return spec, pipeline.run_gate(spec, partition="2023", keystore=open_keystore())


def test_the_frequency_table_gives_the_gates_own_figures(gate_run):
    spec, run = gate_run
    measures = measure_frequency_file(spec, published_frequencies(spec, run.anonymized.data))
    wanted = frequency_checks(spec)
    assert wanted == ["k_anonymity", "prosecutor_risk_avg", "l_diversity_distinct", "l_diversity_entropy",
                      "t_closeness", "uniques_fraction"]
    judged = {o.name: (o.passed, o.value) for o in gate.threshold_outcomes(spec, measures)}
    for name in wanted:  # the same bits: the classes come in the rows' order
        check = run.evaluation.check(name)
        assert judged[name] == (check.passed, check.measured)


@pytest.fixture
def reported(gate_run, tmp_path: Path):
    """The partition's frequency table written, with the checks as the gate reported them."""
    spec, run = gate_run
    written = write_frequencies(published_frequencies(spec, run.anonymized.data), tmp_path / "freq.parquet")
    return spec, written, [c.to_json() for c in run.evaluation.checks]


def test_the_reported_verdicts_pass_when_the_table_supports_them(reported):
    spec, written, checks = reported
    verification = read_and_rejudge(spec, {"path": str(written.path), "sha256": written.sha256, "checks": checks})
    assert verification.passed and verification.sha256 == written.sha256
    assert [c.name for c in verification.checks] == frequency_checks(spec)
    assert verification.shown().passed


def test_another_digest_refuses_without_judging(reported):
    spec, written, checks = reported
    data = written.path.read_bytes()
    verification = rejudge(spec, data, sha256=hashlib.sha256(data + b"x").hexdigest(), reported=checks)
    assert not verification.passed and verification.checks == []
    assert "SHA-256" in verification.problems[0] and not verification.shown().passed


def test_a_verdict_or_figure_other_than_the_tables_refuses(reported):
    spec, written, checks = reported
    data = written.path.read_bytes()
    other = [{**c, "measured": c["measured"] + 1} if c["name"] == "k_anonymity" else c for c in checks]
    verification = rejudge(spec, data, sha256=written.sha256, reported=other)
    assert [p.split(":")[0] for p in verification.problems] == ["k_anonymity"]
    missing = rejudge(spec, data, sha256=written.sha256, reported=[c for c in checks if c["name"] != "t_closeness"])
    assert missing.problems == ["t_closeness: the external job reported no verdict for it"]


def test_a_blocking_check_refuses_even_when_reported_as_failed(gate_run, tmp_path):
    spec, run = gate_run
    freq = published_frequencies(spec, run.anonymized.data)
    single = freq.iloc[:1].assign(count=1)  # one row alone in its class: k = 1
    written = write_frequencies(single, tmp_path / "one.parquet")
    measured = rejudge(spec, written.path.read_bytes(), sha256=written.sha256, reported=[])
    k = next(c for c in measured.checks if c.name == "k_anonymity")
    assert (k.passed, k.measured) == (False, 1)
    verification = rejudge(spec, written.path.read_bytes(), sha256=written.sha256,
                           reported=[c.to_json() for c in measured.checks])
    assert verification.problems and all("re-judged from the frequency table" in p for p in verification.problems)
    assert verification.shown().metadata["failed_checks"].value == sorted(c.name for c in measured.checks if c.blocks)


def test_no_message_or_no_file_refuses(gate_run, tmp_path):
    spec, _ = gate_run
    assert read_and_rejudge(spec, None).problems == ["the external job reported no frequency table"]
    gone = read_and_rejudge(spec, {"path": str(tmp_path / "none.parquet"), "sha256": "0" * 64, "checks": []})
    assert not gone.passed and "could not be read" in gone.problems[0]


def test_a_file_that_is_not_a_frequency_table_refuses_in_one_line(gate_run):
    spec, _ = gate_run
    data = b"not parquet"
    verification = rejudge(spec, data, sha256=hashlib.sha256(data).hexdigest(), reported=[])
    assert not verification.passed and verification.checks == []
    assert len(verification.problems) == 1 and "\n" not in verification.problems[0]
    assert verification.problems[0].startswith("the frequency table could not be measured: ")


def test_a_frequency_table_on_object_storage_is_written_and_re_judged(reported, s3_bucket):
    spec, local, checks = reported
    written = write_frequencies(pd.read_parquet(local.path), s3_bucket.uri("frequencies/2023.parquet"))
    assert written.sha256 == hashlib.sha256(s3_bucket.get("frequencies/2023.parquet")).hexdigest()
    message = {"path": str(written.path), "sha256": written.sha256, "checks": checks}
    assert read_and_rejudge(spec, message).passed
    s3_bucket.put("frequencies/2023.parquet", local.path.read_bytes() + b"\0")  # replaced after it was reported
    replaced = read_and_rejudge(spec, message)
    assert not replaced.passed and "SHA-256" in replaced.problems[0]
    gone = read_and_rejudge(spec, {**message, "path": s3_bucket.uri("frequencies/none.parquet")})
    assert gone.problems == [f"{s3_bucket.uri('frequencies/none.parquet')}: the frequency table could not be read: "
                             "there is no such file"]
