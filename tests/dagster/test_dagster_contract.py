"""The Dagster contract, from outside: a folder of our own specs through ANON_DAGSTER_CONFIG.

The root ``definitions.py`` is loaded as ``dagster`` would load it; group = release name, asset
keys ``<release>/raw|pseudonymized|anonymized|published``, one blocking check per declared
threshold plus the data contract; a release that cannot meet its k never publishes, in the run
or in a later run that selects only the publication. Neither release pseudonymizes a column; the
keys from the environment are there for the ledger alone (its entries are MACed), which is
created first, as ``anon-dagster ledger init`` does.
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dagster import AssetKey, DagsterInstance

from anon_dagster import measure_risk
from anon_dagster.cli import main
from tests.support.ledgers import env_ledger

REPO = Path(__file__).resolve().parents[2]
STEPS = ("raw", "pseudonymized", "anonymized", "published")

SURVEY = """\
release: panel_survey
source: {path: ../raw/survey_{partition}.csv}
partitions: {cadence: monthly, start: "2025-01-01", end: "2025-03-01", column: interview_date}
columns:
  resp_id: {role: identifier}
  interview_date: {role: quasi, hierarchy: {type: date, levels: [month, year]}}
  age: {role: quasi, hierarchy: {type: interval, widths: [10, 20, 40]}}
  region: {role: quasi, partition_key: true}
  smoker: {role: sensitive}
anonymization: {method: global, k: 4, max_suppression: 0.05}
policy:
  thresholds: {k: 4, prosecutor_max: 0.25, l_distinct: 2}
publication: {path: ../published/{release}/{partition}.parquet}
"""

# method none: nothing is generalized, ages stay exact and classes of one remain
BLOCKED = """\
release: blocked_survey
source: {path: ../raw/survey_2025-01.csv}
columns:
  resp_id: {role: identifier}
  interview_date: {role: insensitive}
  age: {role: quasi}
  region: {role: quasi}
  smoker: {role: sensitive}
anonymization: {method: none}
policy:
  thresholds: {k: 5}
publication: {path: ../published/{release}/{partition}.parquet}
"""


def write_data(root: Path) -> None:
    rng = np.random.default_rng(3)
    (root / "raw").mkdir()
    for month in ("2025-01", "2025-02"):
        n = 200
        df = pd.DataFrame({
            "resp_id": [f"R{month}{i:04d}" for i in range(n)],
            "interview_date": (pd.Timestamp(f"{month}-01")
                               + pd.to_timedelta(rng.integers(0, 28, n), unit="D")).strftime("%Y-%m-%d"),
            "age": rng.integers(18, 90, n).astype(float),
            "region": rng.choice(["N", "S"], n),
            "smoker": rng.choice(["yes", "no"], n).astype(object),
        })
        df.loc[rng.choice(n, 10, replace=False), "age"] = np.nan
        df.loc[rng.choice(n, 10, replace=False), "smoker"] = None
        df.to_csv(root / "raw" / f"survey_{month}.csv", index=False)


@pytest.fixture
def config(tmp_path, monkeypatch, master_key):
    write_data(tmp_path)
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "panel_survey.yaml").write_text(SURVEY)
    (cfg / "blocked_survey.yaml").write_text(BLOCKED)
    monkeypatch.setenv("ANON_DAGSTER_CONFIG", str(cfg))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ANON_DAGSTER_LEDGER", str(tmp_path / "home" / "ledger.sqlite"))
    (tmp_path / "home").mkdir()
    env_ledger(tmp_path / "home" / "ledger.sqlite", create=True)
    return tmp_path


def load_defs():
    return runpy.run_path(str(REPO / "definitions.py"))["defs"]


def events(result, kind: str) -> list:
    return [e for e in result.all_events if e.event_type_value == kind]


def materialized(result) -> set[str]:
    """The assets a run materialized; a refused publication (``outcome: refused``) is left out."""
    return {e.asset_key.to_user_string() for e in events(result, "ASSET_MATERIALIZATION")
            if "outcome" not in e.event_specific_data.materialization.metadata
            or e.event_specific_data.materialization.metadata["outcome"].value != "refused"}


def test_groups_asset_keys_and_check_names_follow_the_contract(config):
    defs = load_defs()
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    for release in ("panel_survey", "blocked_survey"):
        for step in STEPS:
            key = AssetKey([release, step])
            assert key.to_user_string() in keys
            assert graph.get(key).group_name == release
    checks = {(c.asset_key.to_user_string(), c.name) for c in graph.asset_check_keys}
    anonymized = "panel_survey/anonymized"
    names = {n for a, n in checks if a == anonymized}
    # one per declared threshold, plus the data contract; no utility/composition declared
    assert len(names) == 4 and "data_contract" in names
    assert any("k_anonymity" in n for n in names)
    assert {n for a, n in checks if a == "blocked_survey/anonymized"} >= {"data_contract"}
    # besides, the published asset's outcome and the age of the latest publication
    assert {(a, n) for a, n in checks if not a.endswith("/anonymized")} == {
        (f"{r}/published", n) for r in ("panel_survey", "blocked_survey") for n in ("publication", "freshness")}
    job = defs.resolve_job_def("panel_survey_release")
    assert job.partitions_def.get_partition_keys() == ["2025-01", "2025-02"]


@pytest.mark.slow
def test_monthly_partition_publishes_what_meets_the_policy(config):
    defs = load_defs()
    job = defs.resolve_job_def("panel_survey_release")
    instance = DagsterInstance.ephemeral()
    result = job.execute_in_process(partition_key="2025-02", instance=instance, raise_on_error=False)
    failures = [e.message for e in events(result, "STEP_FAILURE")]
    assert result.success, failures
    evaluations = [e for e in events(result, "ASSET_CHECK_EVALUATION")
                   if e.event_specific_data.asset_key.path[-1] == "anonymized"]
    assert len(evaluations) == 4
    assert all(e.event_specific_data.passed for e in evaluations)
    assert {f"panel_survey/{s}" for s in STEPS} <= materialized(result)
    publication = config / "published" / "panel_survey" / "2025-02.parquet"
    assert publication.exists()
    assert not (config / "published" / "panel_survey" / "2025-01.parquet").exists()
    published = pd.read_parquet(publication)
    # exactly the allowed columns: the identifier without a method is dropped
    assert sorted(published.columns) == sorted(["interview_date", "age", "region", "smoker"])
    source = pd.read_csv(config / "raw" / "survey_2025-02.csv")
    assert 0.95 * len(source) <= len(published) <= len(source)
    measured = measure_risk(published, ["interview_date", "age", "region"], sensitive="smoker").to_dict()
    assert measured["k"] >= 4
    assert measured["prosecutor_max"] <= 0.25
    assert measured["l_distinct"] >= 2
    assert set(published["region"]) <= {"N", "S"}  # partition key untouched
    # the risk report written beside the publication is rebuilt byte for byte from the ledger
    beside = publication.with_name("2025-02.report.json")
    assert beside.exists()
    rebuilt = config / "rebuilt.json"
    code = main(["report", str(config / "cfg" / "panel_survey.yaml"), "--partition", "2025-02",
                 "--format", "json", "--output", str(rebuilt)])
    assert code == 0
    assert rebuilt.read_bytes() == beside.read_bytes()
    report = json.loads(beside.read_text())
    assert "publishable" in json.dumps(report).lower()


@pytest.mark.slow
def test_unreachable_k_never_publishes(config):
    defs = load_defs()
    job = defs.resolve_job_def("blocked_survey_release")
    instance = DagsterInstance.ephemeral()
    result = job.execute_in_process(instance=instance, raise_on_error=False)
    assert not result.success
    evaluations = {e.event_specific_data.check_name: e.event_specific_data
                   for e in events(result, "ASSET_CHECK_EVALUATION")}
    k_checks = [v for n, v in evaluations.items() if "k_anonymity" in n]
    assert k_checks and k_checks[0].passed is False
    assert k_checks[0].severity.value == "ERROR"
    assert "blocked_survey/published" not in materialized(result)
    folder = config / "published" / "blocked_survey"
    assert not folder.exists() or not any(folder.iterdir())
    later = job.execute_in_process(instance=instance, raise_on_error=False,
                                   asset_selection=[AssetKey(["blocked_survey", "published"])])
    assert not later.success
    assert "blocked_survey/published" not in materialized(later)
    assert not folder.exists() or not any(folder.iterdir())


@pytest.mark.slow
def test_dagster_definitions_validate_on_our_folder(config, tmp_path):
    env = {**os.environ}
    dagster = Path(sys.executable).with_name("dagster")
    proc = subprocess.run([str(dagster), "definitions", "validate", "-f", "definitions.py"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    # a broken spec does not keep the others from loading: it is named, with its key, in a warning
    # (and shown in the UI as a failing spec_valid check; `anon-dagster validate` stays strict)
    (config / "cfg" / "broken.yaml").write_text(SURVEY.replace("release: panel_survey", "release: other")
                                                .replace("cadence: monthly", "cadence: fortnightly"))
    proc = subprocess.run([str(dagster), "definitions", "validate", "-f", "definitions.py"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-2000:]
    assert "broken.yaml" in output and "partitions.cadence" in output
