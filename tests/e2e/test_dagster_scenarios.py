"""The Dagster lifecycle from outside, with a spec folder of our own (ANON_DAGSTER_CONFIG).

Two yearly releases of the same population, keys from ``ANON_DAGSTER_MASTER_KEY``:

* ``clinic_visits`` pseudonymizes its person id (HMAC) and declares a utility query with
  ``severity: warn`` that its generalization cannot meet: the query's check fails as a WARN
  and the partition is published all the same; raw and pseudonymized are stored encrypted
  (no identifier, no pseudonym readable in the stored files); no secret in the run config or
  in any event of the run;
* ``clinic_labs`` has a partition whose sensitive column is entirely null: every declared check
  still yields a result (l-diversity fails, blocking), nothing is published, and the report kept
  beside it says "not publishable";
* ``dg list components`` lists AnonReleaseComponent; each partitioned release has a schedule.
"""

from __future__ import annotations

import base64
import json
import os
import runpy
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dagster import DagsterInstance

from anon_dagster.cli import main
from tests.support.ledgers import env_ledger

REPO = Path(__file__).resolve().parents[2]
MASTER = base64.b64encode(bytes(range(50, 82))).decode()

VISITS = """\
release: clinic_visits
source: {path: ../raw/visits.csv}
partitions: {cadence: yearly, start: "2022-01-01", end: "2024-01-01", column: visit_date}
columns:
  pid: {role: identifier, pseudonymize: {method: hmac, purpose: research}}
  visit_date: {role: quasi, hierarchy: {type: date, levels: [month, year]}}
  age: {role: quasi, hierarchy: {type: interval, widths: [10, 20, 40]}}
  town: {role: quasi, partition_key: true}
  outcome: {role: sensitive}
anonymization: {method: global, k: 5, max_suppression: 0.02}
policy:
  thresholds: {k: 5}
  review_after_days: 30
utility_queries:
  - {name: outcome_by_age, group_by: [age], target: outcome, max_error_points: 0.0, severity: warn}
publication: {path: ../published/{release}/{partition}.parquet}
"""

LABS = """\
release: clinic_labs
source: {path: ../raw/labs.csv}
partitions: {cadence: yearly, start: "2022-01-01", end: "2024-01-01", column: visit_date}
columns:
  pid: {role: identifier}
  visit_date: {role: quasi, hierarchy: {type: date, levels: [month, year]}}
  sex: {role: quasi}
  result: {role: sensitive}
anonymization: {method: global, k: 3, max_suppression: 0.0}
policy:
  thresholds: {k: 3, l_distinct: 2, l_entropy: 1.5, t_closeness: 0.5, prosecutor_max: 0.34}
publication: {path: ../published/{release}/{partition}.parquet}
"""


def write_data(root: Path) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 300
    dates = pd.Timestamp("2022-01-01") + pd.to_timedelta(rng.integers(0, 730, n), unit="D")
    visits = pd.DataFrame({
        "pid": [f"ID-{i:06d}" for i in rng.permutation(n)],
        "visit_date": dates.strftime("%Y-%m-%d"),
        "age": rng.integers(18, 95, n),
        "town": rng.choice(["Avila", "Soria"], n),
        "outcome": rng.choice(["home", "transfer", "death"], n, p=[0.7, 0.2, 0.1]),
    })
    (root / "raw").mkdir()
    visits.to_csv(root / "raw" / "visits.csv", index=False)
    labs = pd.DataFrame({
        "pid": visits["pid"],
        "visit_date": visits["visit_date"],
        "sex": rng.choice(["F", "M"], n),
        "result": np.where(dates.year == 2022, "", rng.choice(["low", "normal", "high"], n)),
    })
    labs.to_csv(root / "raw" / "labs.csv", index=False)
    return visits


@pytest.fixture
def config(tmp_path, monkeypatch):
    visits = write_data(tmp_path)
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "visits.yaml").write_text(VISITS)
    (cfg / "labs.yaml").write_text(LABS)
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", MASTER)
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_STATE", str(tmp_path / "keystate"))
    monkeypatch.setenv("ANON_DAGSTER_CONFIG", str(cfg))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ANON_DAGSTER_LEDGER", str(tmp_path / "home" / "ledger.sqlite"))
    (tmp_path / "home").mkdir()
    env_ledger(tmp_path / "home" / "ledger.sqlite", create=True)  # as `anon-dagster ledger init` does
    return tmp_path, visits


def load_defs():
    return runpy.run_path(str(REPO / "definitions.py"))["defs"]


def events(result, kind: str) -> list:
    return [e for e in result.all_events if e.event_type_value == kind]


def evaluations(result) -> dict:
    return {e.event_specific_data.check_name: e.event_specific_data for e in events(result, "ASSET_CHECK_EVALUATION")}


def materialized(result) -> set[str]:
    """The assets a run materialized; a refused publication (``outcome: refused``) is left out."""
    return {e.asset_key.to_user_string() for e in events(result, "ASSET_MATERIALIZATION")
            if "outcome" not in e.event_specific_data.materialization.metadata
            or e.event_specific_data.materialization.metadata["outcome"].value != "refused"}


@pytest.mark.slow
def test_two_releases_warn_query_broken_sensitive_encryption_and_secrets(config):
    root, visits = config
    defs = load_defs()
    instance = DagsterInstance.ephemeral()
    for release in ("clinic_visits", "clinic_labs"):
        assert defs.resolve_job_def(f"{release}_release") is not None
        schedule = defs.resolve_schedule_def(f"{release}_schedule")
        assert schedule.job_name == f"{release}_release"

    # --- a WARN utility query that fails does not block the publication
    result = defs.resolve_job_def("clinic_visits_release").execute_in_process(
        instance=instance, partition_key="2022", raise_on_error=False)
    evals = evaluations(result)
    query = [v for n, v in evals.items() if "outcome_by_age" in n]
    assert query and query[0].passed is False and query[0].severity.value == "WARN"
    assert all(v.passed for n, v in evals.items() if "outcome_by_age" not in n), \
        {n: v.passed for n, v in evals.items()}
    assert "clinic_visits/published" in materialized(result)
    files = list((root / "published" / "clinic_visits").glob("*"))
    assert files, "the partition must be published"
    published = pd.read_parquet(files[0])
    assert "pid" in published.columns  # pseudonymized, not raw
    assert not set(published["pid"]) & set(visits["pid"])

    # --- raw and pseudonymized are encrypted at rest: no identifier, no pseudonym, no parquet magic
    storage = root / "home" / "anon_dagster" / "storage" / "clinic_visits"
    for step in ("raw", "pseudonymized"):
        stored = [p for p in (storage / step).rglob("*") if p.is_file()]
        assert stored, f"nothing stored for {step}"
        for path in stored:
            blob = path.read_bytes()
            assert oct(path.stat().st_mode & 0o777) == "0o600"
            assert b"PAR1" not in blob[:8]
            assert b"ID-000" not in blob and b"Avila" not in blob
            assert published["pid"].iloc[0].encode() not in blob

    # --- no secret in the run config or in any event of the run
    run = instance.get_run_by_id(result.run_id)
    assert MASTER not in json.dumps(run.run_config, default=str)
    for record in instance.all_logs(result.run_id):
        assert MASTER not in str(record)

    # --- a partition whose sensitive column is all null: every check yields a result, blocking
    labs = defs.resolve_job_def("clinic_labs_release")
    broken = labs.execute_in_process(instance=instance, partition_key="2022", raise_on_error=False)
    evals = evaluations(broken)
    declared = {"k_anonymity", "l_diversity", "t_closeness", "prosecutor"}
    for word in declared:
        assert any(word in n for n in evals), (word, sorted(evals))
    assert any("contract" in n for n in evals), sorted(evals)
    assert any(not v.passed and v.severity.value == "ERROR" for n, v in evals.items() if "l_" in n or "diversity" in n)
    assert "clinic_labs/published" not in materialized(broken)
    assert not (root / "published" / "clinic_labs").exists() or not any((root / "published" / "clinic_labs").iterdir())
    reports = [p for p in root.rglob("*.json") if "clinic_labs" in str(p) and "report" in p.name]
    assert reports, "a failed release keeps its report"
    text = json.dumps(json.loads(reports[0].read_text())).lower()
    assert "not publishable" in text

    # the healthy partition of the same release publishes: the failure blocked only its own
    healthy = labs.execute_in_process(instance=instance, partition_key="2023", raise_on_error=False)
    assert "clinic_labs/published" in materialized(healthy), {n: v.passed for n, v in evaluations(healthy).items()}


@pytest.mark.slow
def test_dg_lists_the_release_component():
    dg = Path(os.environ.get("VIRTUAL_ENV", REPO / ".venv")) / "bin" / "dg"
    if not dg.exists():
        dg = REPO / ".venv" / "bin" / "dg"
    proc = subprocess.run([str(dg), "list", "components"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "AnonReleaseComponent" in proc.stdout


DP = """\
release: clinic_counts
source: {path: ../raw/visits.csv}
partitions: {cadence: yearly, start: "2022-01-01", end: "2024-01-01", column: visit_date}
columns:
  pid: {role: identifier, pseudonymize: {method: hmac, purpose: research}}
  visit_date: {role: quasi, hierarchy: {type: date, levels: [month, year]}}
  age: {role: quasi, hierarchy: {type: interval, widths: [10, 20, 40]}}
  town: {role: quasi, partition_key: true}
  outcome: {role: sensitive}
anonymization: {method: global, k: 5, max_suppression: 0.05}
policy:
  thresholds: {k: 5}
  review_after_days: 45
composition: {population: clinic_patients, person: pid, min_k: 1}
publication:
  path: ../published/{release}/{partition}.csv
  mode: aggregates
  epsilon: 1.0
  total_epsilon: 1.5
  aggregates:
    group_by: [town]
    count: true
    max_contributions: 1
    domain: {town: [Avila, Soria]}
"""


@pytest.mark.slow
def test_dp_aggregates_release_stops_at_the_population_budget(config):
    root, visits = config
    (root / "cfg" / "labs.yaml").unlink()
    (root / "cfg" / "visits.yaml").unlink()
    (root / "cfg" / "counts.yaml").write_text(DP)
    defs = load_defs()
    instance = DagsterInstance.ephemeral()
    job = defs.resolve_job_def("clinic_counts_release")
    first = job.execute_in_process(instance=instance, partition_key="2022", raise_on_error=False)
    assert "clinic_counts/published" in materialized(first), {n: v.passed for n, v in evaluations(first).items()}
    out = root / "published" / "clinic_counts"
    published = sorted(p for p in out.iterdir() if p.suffix == ".csv")
    assert len(published) == 1
    counts = pd.read_csv(published[0])
    assert set(counts["town"]) == {"Avila", "Soria"}
    assert "pid" not in counts.columns and "outcome" not in counts.columns
    # the second year would spend 2.0 > 1.5: refused, nothing more published
    second = job.execute_in_process(instance=instance, partition_key="2023", raise_on_error=False)
    assert not second.success
    assert "clinic_counts/published" not in materialized(second)
    assert sorted(p for p in out.iterdir() if p.suffix == ".csv") == published
    # the report of the first year: four sections, review date = date + 45 days
    reports = [p for p in root.rglob("*.json") if "clinic_counts" in str(p) and "report" in p.name
               and "2022" in str(p)]
    assert reports
    report = json.loads(reports[0].read_text())
    for section in ("identification", "hypotheses", "measures", "verdict"):
        assert section in report
    date = pd.Timestamp(report["identification"]["date"]).date()
    review = pd.Timestamp(report["verdict"]["review_date"]).date()
    assert (review - date).days == 45
    # rebuilt from the ledger entry: byte-identical JSON
    rebuilt = root / "rebuilt.json"
    code = main(["report", str(root / "cfg" / "counts.yaml"), "--partition", "2022", "--format", "json",
                 "--output", str(rebuilt)])
    assert code == 0
    assert rebuilt.read_bytes() == reports[0].read_bytes()
