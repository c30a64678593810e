"""What a demo-sized release writes to Dagster's event log: at most 50 KB of metadata per
materialization or check evaluation, and one report per partition.

Both demo specs, on the demo's data at its default size (20,000 discharges), partition 2024
(published; refused by t-closeness), run through their jobs (:func:`materialize_release`); every
metadata value of every materialization and check evaluation is serialized as the event log
stores it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

import pytest
from dagster import DagsterEventType, DagsterInstance, serialize_value

from anon_dagster.dagster import load_release_definitions
from anon_dagster.dagster.metadata import MAX_METADATA_BYTES
from anon_dagster.dagster.runner import materialize_release
from anon_dagster.demo.generate import generate
from anon_dagster.spec import load_spec
from tests.support.keys import MASTER_KEY
from tests.support.ledgers import env_ledger


@dataclass
class Event:
    kind: str  # "materialization" or "check"
    name: str  # the asset key or check name
    release: str
    metadata: dict

    @property
    def size(self) -> int:
        return sum(len(serialize_value(v)) + len(k) for k, v in self.metadata.items())


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory, repo_root):
    root = tmp_path_factory.mktemp("demo")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ANON_DAGSTER_MASTER_KEY", MASTER_KEY)
        mp.setenv("ANON_DAGSTER_KEYSTORE_STATE", str(root / "keystate"))
        mp.setenv("DAGSTER_HOME", str(root / "home"))
        (root / "home").mkdir()
        shutil.copytree(repo_root / "assets_config", root / "assets_config")
        generate(root / "data" / "demo")  # the demo's default size
        ledger = root / "ledger.sqlite"
        env_ledger(ledger, create=True)
        config = root / "assets_config"
        defs = load_release_definitions(config, storage_dir=str(root / "storage"), ledger_path=str(ledger))
        outcomes = {}
        with DagsterInstance.ephemeral() as instance:
            for name in ("hospital_discharges", "hospital_discharges_strict"):
                spec = load_spec(config / f"{name}.yaml")
                [outcomes[name]] = materialize_release(defs, spec, instance, ["2024"])
            events = []
            for run in instance.get_runs():
                for entry in instance.all_logs(run.run_id):
                    event = entry.dagster_event
                    if event is None:
                        continue
                    if event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
                        mat = event.event_specific_data.materialization
                        events.append(Event("materialization", mat.asset_key.to_user_string(),
                                            mat.asset_key.path[0], dict(mat.metadata)))
                    elif event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
                        check = event.event_specific_data
                        events.append(Event("check", check.check_name, check.asset_key.path[0],
                                            dict(check.metadata)))
        yield root, outcomes, events


def test_the_demo_run_materializes_and_checks_both_releases(demo_run):
    _, outcomes, events = demo_run
    assert outcomes["hospital_discharges"].published is not None
    assert outcomes["hospital_discharges_strict"].published is None
    assert "t_closeness" in outcomes["hospital_discharges_strict"].failed_checks
    kinds = {(e.kind, e.release) for e in events}
    assert {("materialization", "hospital_discharges"), ("check", "hospital_discharges"),
            ("materialization", "hospital_discharges_strict"), ("check", "hospital_discharges_strict")} <= kinds


def test_every_check_evaluation_and_the_publication_stay_within_50_kb(demo_run):
    _, _, events = demo_run
    checked = [e for e in events if e.kind == "check" or e.name.endswith("/published")]
    assert len(checked) >= 10
    too_large = {f"{e.kind} {e.release}/{e.name}": e.size for e in checked if e.size > MAX_METADATA_BYTES}
    assert not too_large
    assert MAX_METADATA_BYTES == 50_000


def test_every_materialization_stays_within_50_kb(demo_run):
    _, _, events = demo_run
    too_large = {f"{e.release} {e.name}": e.size for e in events if e.size > MAX_METADATA_BYTES}
    assert not too_large


def test_the_strict_releases_t_closeness_check_lists_the_most_distant_classes(demo_run):
    _, _, events = demo_run
    [check] = [e for e in events if e.kind == "check" and e.name == "t_closeness"]
    table = check.metadata["most_distant_classes"]
    distances = [r.data["distance"] for r in table.records[1:]]
    assert distances == sorted(distances, reverse=True)


def test_each_partition_has_one_report(demo_run):
    root, outcomes, _ = demo_run
    reports = sorted(str(p.relative_to(root)) for p in root.glob("reports/*/*/*report*"))
    published = sorted(str(p.relative_to(root)) for p in root.glob("published/*/*report*"))
    # the published partition's report is its publication's, the refused one's is kept with its record
    assert published == [f"published/hospital_discharges/2024.report.{f}" for f in ("html", "json", "md")]
    assert reports == [f"reports/hospital_discharges_strict/2024/risk_report.{f}" for f in ("html", "json", "md")]
    assert outcomes["hospital_discharges"].report == root / "published" / "hospital_discharges" / "2024.report.md"
    assert outcomes["hospital_discharges_strict"].report == (
        root / "reports" / "hospital_discharges_strict" / "2024" / "risk_report.md")
    assert (root / "reports" / "hospital_discharges" / "2024" / "transformations.json").exists()


def test_no_metadata_shows_the_qi_values_of_a_class(demo_run):
    _, _, events = demo_run
    for e in events:
        for name in ("small_classes", "qi_contributions", "most_distant_classes", "least_diverse_classes"):
            if name in e.metadata:
                columns = {c.name for c in e.metadata[name].schema.columns}
                assert not columns & {"age", "sex", "postal_code", "municipality", "province", "profession",
                                      "admission_date"}, (e.name, name)
