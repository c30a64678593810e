"""The demo release once on Spark: the same gate outcomes as on pandas, partition by partition.

The demo's specs anonymize with Mondrian: the shipped main spec runs as it is on both engines;
then both specs run with optimal global recoding instead, everything else as shipped:
the scope-row patient pseudonym, the dropped identifiers, the date, mask, interval and table
hierarchies, the hierarchical t-closeness of the diagnosis, the utility query, the composition
with the ledger, the strict release's refusal. Every spec gets the main release's scope-row
patient pseudonym (k per person on Spark has tests of its own, tests/spark/test_spark_person_k.py).
The data is the generated demo data, smaller.
"""

from __future__ import annotations

import shutil

import pytest
import yaml

from anon_dagster.dagster.runner import release_partitions
from anon_dagster.demo.generate import generate
from anon_dagster.spec import load_spec
from tests.support.ledgers import env_ledger
from tests.support.spark_releases import check_json, without_id

pytestmark = pytest.mark.usefixtures("master_key", "spark")


@pytest.fixture
def demo(repo_root, tmp_path, monkeypatch):
    shutil.copytree(repo_root / "assets_config", tmp_path / "assets_config")
    generate(tmp_path / "data" / "demo", population=100_000, discharges=4_000, seed=5)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    ledger = tmp_path / "ledger.sqlite"
    env_ledger(ledger, create=True)
    specs = {}
    for path in sorted((tmp_path / "assets_config").glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        spec["anonymization"]["method"] = "global"
        spec["columns"]["patient_id"]["pseudonymize"]["scope"] = "row"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        specs[spec["release"]] = path
    return specs, ledger


def test_the_demo_gives_the_same_outcomes_on_spark(demo):
    specs, ledger = demo
    verdicts = {}
    for release, spec in specs.items():
        for partition in release_partitions(load_spec(spec)):
            args = ("--partition", partition, "--ledger", str(ledger))
            code_p, pandas = check_json(spec, *args)
            code_s, spark = check_json(spec, *args, "--engine", "spark")
            assert without_id(spark) == without_id(pandas), (release, partition)
            assert code_s == code_p
            assert all(c["measured"] is not None for c in pandas["checks"]), pandas["checks"]
            verdicts[(release, partition)] = [c["name"] for c in pandas["checks"] if not c["passed"]]
    # the strict release is refused by t-closeness on both engines
    assert all("t_closeness" in failed for (release, _), failed in verdicts.items()
               if release == "hospital_discharges_strict")


def test_the_shipped_demo_spec_with_mondrian_gives_the_same_outcome_on_spark(repo_root, demo):
    specs, ledger = demo
    # the shipped spec as it is, beside the fixture's copies (its data and hierarchies are theirs)
    spec = specs["hospital_discharges"].parent / "hospital_discharges_mondrian.yaml"
    spec.write_text((repo_root / "assets_config" / "hospital_discharges.yaml").read_text())
    args = ("--partition", "2024", "--ledger", str(ledger))
    code_p, pandas = check_json(spec, *args)
    code_s, spark = check_json(spec, *args, "--engine", "spark")
    assert without_id(spark) == without_id(pandas)
    assert code_s == code_p == 0
