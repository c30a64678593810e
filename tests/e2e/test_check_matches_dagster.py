"""`anon-dagster check` and Dagster give the same outcome and figure for every check.

The same specs go through the CLI's gate and through the release's Dagster job, partition by
partition on one ledger: both demo specs (Mondrian inside provinces, composition across years,
t-closeness refusals), an Adult spec with every threshold type and a utility query (optimal
global recoding, journalist adversary with a population), an Adult Mondrian spec placing the
population through the cut tree, and a microaggregation spec. For each check the CLI's JSON
entry (name, spec key, verdict, severity, measured, threshold) must equal the one the Dagster
check reported, and the risk report kept for the partition must state the same figures.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from dagster import DagsterInstance

from anon_dagster.cli import main
from anon_dagster.dagster import load_release_definitions
from anon_dagster.dagster.runner import materialize_release, release_partitions
from anon_dagster.demo.generate import generate
from anon_dagster.spec import load_spec
from tests.support.ledgers import env_ledger, new_ledger

ADULT_QIS = ["sex", "age", "race", "marital-status", "education"]
EVERY_THRESHOLD = {
    "k": 5, "l_distinct": 2, "l_entropy": 1.5, "recursive_cl": {"c": 3, "l": 2}, "t_closeness": 0.6,
    "prosecutor_max": 0.2, "prosecutor_avg": 0.1, "journalist_max": 0.2, "journalist_avg": 0.1,
    "marketer": 0.1, "uniques_fraction": 0.01, "population_uniqueness": 0.05,
}


def _adult_columns(adult_dir: Path, *, hierarchies: bool = True) -> dict:
    columns: dict = {}
    for name in ["sex", "age", "race", "marital-status", "education", "native-country", "workclass",
                 "occupation", "salary-class"]:
        if name in ADULT_QIS:
            path = adult_dir / f"adult_hierarchy_{name}.csv"
            columns[name] = {"role": "quasi", **({"hierarchy": {"type": "table", "path": str(path)}} if hierarchies else {})}
        elif name == "occupation":
            columns[name] = {"role": "sensitive"}
        else:
            columns[name] = {"role": "insensitive"}
    return columns


def _adult_sample(adult_dir: Path, folder: Path) -> Path:
    """Half of Adult drawn at random (seeded): a sample of the population with f = 0.5."""
    df = pd.read_csv(adult_dir / "adult.csv", sep=";")
    sample = df.sample(frac=0.5, random_state=7).reset_index(drop=True)
    path = folder / "adult_half.csv"
    sample.to_csv(path, sep=";", index=False)
    return path


def _write(folder: Path, spec: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{spec['release']}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))


def adult_specs(adult_dir: Path, config: Path, data: Path) -> None:
    """The Adult specs: global with every threshold, Mondrian with a population, microaggregation."""
    sample = _adult_sample(adult_dir, data)
    population = {"path": str(adult_dir / "adult.csv")}
    common = {"source": {"path": str(sample), "separator": ";"},
              "publication": {"path": str(data.parent / "published" / "{release}.csv")}}
    _write(config, {
        "release": "adult_every_threshold", **common, "columns": _adult_columns(adult_dir),
        "anonymization": {"method": "global", "k": 5, "max_suppression": 0.05, "utility": "loss"},
        "policy": {"adversary": "journalist", "population": population, "sampling_fraction": 0.5,
                   "thresholds": EVERY_THRESHOLD},
        "utility_queries": [{"name": "occupation_by_sex", "group_by": ["sex"], "target": "occupation",
                             "max_error_points": 2.0}],
    })
    _write(config, {
        "release": "adult_mondrian", **common, "columns": _adult_columns(adult_dir),
        "anonymization": {"method": "mondrian", "k": 5},
        "policy": {"adversary": "journalist", "population": population, "sampling_fraction": 0.5,
                   "thresholds": {"k": 5, "journalist_max": 0.2, "l_distinct": 2}},
    })
    micro = _adult_columns(adult_dir, hierarchies=False)
    micro = {n: (c if n in ("age", "sex") else ({"role": "insensitive"} if c["role"] == "quasi" else c))
             for n, c in micro.items()}
    _write(config, {
        "release": "adult_microaggregation", **common, "columns": micro,
        "anonymization": {"method": "microaggregation", "k": 5},
        "policy": {"thresholds": {"k": 5, "prosecutor_max": 0.2, "uniques_fraction": 0.0}},
    })


def demo_specs(repo_root: Path, root: Path) -> None:
    """Both demo specs, with the demo data (smaller) beside a copy of their folder."""
    shutil.copytree(repo_root / "assets_config", root / "assets_config")
    generate(root / "data" / "demo", population=200_000, discharges=6_000, seed=5)


def cli_check(capsys: pytest.CaptureFixture, spec: Path, partition: str | None, ledger: Path) -> tuple[int, dict]:
    args = ["check", str(spec), "--json", "--ledger", str(ledger)]
    if partition:
        args += ["--partition", partition]
    capsys.readouterr()
    code = main(args)
    out = capsys.readouterr().out
    return code, json.loads(out)


def report_checks(outcome) -> dict[str, dict]:
    """The checks the partition's risk report states, by name."""
    path = Path(outcome.report).with_suffix(".json")
    report = json.loads(path.read_text())
    return {c["name"]: c for c in report["verdict"]["checks"]}


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-9, abs=1e-12)
    return a == b


def run_both(capsys, root: Path, config: Path, monkeypatch) -> list[tuple[str, str | None, dict, dict]]:
    """Every partition of every spec in ``config``: the CLI's evaluation, then Dagster's run."""
    monkeypatch.setenv("DAGSTER_HOME", str(root / "home"))
    (root / "home").mkdir(exist_ok=True)
    ledger = root / "ledger.sqlite"
    env_ledger(ledger, create=True)  # as `anon-dagster ledger init` does
    defs = load_release_definitions(config, storage_dir=str(root / "storage"), ledger_path=str(ledger))
    instance = DagsterInstance.ephemeral()
    compared = []
    for spec_path in sorted(config.glob("*.yaml")):
        spec = load_spec(spec_path)
        for partition in release_partitions(spec):
            code, cli = cli_check(capsys, spec_path, partition, ledger)
            [outcome] = materialize_release(defs, spec, instance, [partition])
            assert code == (0 if cli["verdict"] == "pass" else 1)
            if spec.approval is not None and spec.approval.required:  # a passing evaluation waits for its approver
                assert outcome.awaiting_approval == (cli["verdict"] == "pass") and outcome.published is None
            else:
                assert (outcome.published is not None) == (cli["verdict"] == "pass"), (spec.release, partition, outcome)
            compared.append((spec.release, partition, cli, outcome))
    return compared


def assert_identical(compared) -> None:
    for release, partition, cli, outcome in compared:
        where = f"{release} {partition}"
        assert [c["name"] for c in cli["checks"]] == list(outcome.checks), where
        for entry in cli["checks"]:
            dagster = outcome.checks[entry["name"]]
            assert set(entry) == set(dagster), where
            for field_name, value in entry.items():
                assert _same(value, dagster[field_name]), f"{where} {entry['name']}.{field_name}: {value!r} vs {dagster[field_name]!r}"
        stated = report_checks(outcome)
        for entry in cli["checks"]:
            assert stated[entry["name"]]["passed"] == entry["passed"], where
            assert _same(stated[entry["name"]]["value"], entry["measured"]), where


@pytest.mark.usefixtures("master_key")
def test_demo_specs_give_the_same_outcomes_in_check_and_dagster(capsys, tmp_path, repo_root, monkeypatch):
    demo_specs(repo_root, tmp_path)
    compared = run_both(capsys, tmp_path, tmp_path / "assets_config", monkeypatch)
    assert_identical(compared)
    verdicts = {(r, p): c["verdict"] for r, p, c, _ in compared}
    # the demo's story: the first year goes out (its pseudonym links no stays), the second is
    # refused by the composition with the first, the strict release by t-closeness
    assert verdicts[("hospital_discharges", "2024")] == "pass"
    failed = {(r, p): [c["name"] for c in cli["checks"] if not c["passed"]] for r, p, cli, _ in compared}
    assert failed[("hospital_discharges", "2025")] == ["composition"]
    assert all("t_closeness" in f for (r, _), f in failed.items() if r == "hospital_discharges_strict")


@pytest.mark.usefixtures("master_key")
def test_adult_specs_give_the_same_outcomes_in_check_and_dagster(capsys, tmp_path, adult_dir, monkeypatch):
    config, data = tmp_path / "config", tmp_path / "data"
    data.mkdir()
    adult_specs(adult_dir, config, data)
    compared = run_both(capsys, tmp_path, config, monkeypatch)
    assert_identical(compared)
    by_release = {r: c for r, _, c, _ in compared}
    every = {c["name"] for c in by_release["adult_every_threshold"]["checks"]}
    assert len(every) == len(EVERY_THRESHOLD) + 2  # every threshold, the query, the contract
    # the figures are real measurements, not placeholders
    k = next(c for c in by_release["adult_every_threshold"]["checks"] if c["name"] == "k_anonymity")
    assert isinstance(k["measured"], int) and k["measured"] >= 1
    assert np.isfinite([c["measured"] for c in by_release["adult_mondrian"]["checks"]
                        if isinstance(c["measured"], float)]).all()


@pytest.mark.usefixtures("master_key")
def test_the_demo_with_a_linking_pseudonym_is_refused_per_patient(capsys, tmp_path, repo_root, monkeypatch):
    """The demo's first year, its patient pseudonym linking stays (the default scope): every
    class holds 5 discharges or more, yet readmitted patients are singled out."""
    demo_specs(repo_root, tmp_path)
    config = tmp_path / "assets_config"
    spec_path = config / "hospital_discharges.yaml"
    spec = yaml.safe_load(spec_path.read_text())
    spec["columns"]["patient_id"]["pseudonymize"].pop("scope")
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    (config / "hospital_discharges_strict.yaml").unlink()
    ledger = tmp_path / "ledger.sqlite"
    new_ledger(ledger)
    code, cli = cli_check(capsys, spec_path, "2024", ledger)
    assert code == 1 and cli["verdict"] == "fail"
    k = next(c for c in cli["checks"] if c["name"] == "k_anonymity")
    assert not k["passed"] and k["measured"] < 5
