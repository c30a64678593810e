"""The release lifecycle in Dagster: blocking checks gate the publication, per partition.

Small releases are generated in tmp dirs (``tests.support.releases``); runs go through the
release's job with an ephemeral Dagster instance, as the UI or the scheduler would launch them.
"""

from __future__ import annotations

import base64
import json
import os
import stat

import pandas as pd
import yaml
from dagster import AssetKey, DagsterInstance

from anon_dagster.dagster import AnonReleaseComponent
from tests.support.keys import MASTER_KEY
from tests.support.ledgers import env_ledger
from tests.support.releases import check_evaluations, load, materialized, run, write_release


def test_unreachable_k_blocks_publication_in_the_run_and_in_a_later_run(env):
    # method none: nothing is generalized, so classes of 1 remain and k >= 5 cannot hold
    spec = write_release(env, method="none", k=5, thresholds={"k": 5, "prosecutor_max": 0.2})
    defs = load(env, spec)
    instance = DagsterInstance.ephemeral()
    result = run(defs, "tiny", "2023", instance)
    assert not result.success
    evals = check_evaluations(result)
    assert evals["k_anonymity"].passed is False
    assert evals["prosecutor_risk_max"].passed is False
    meta = evals["k_anonymity"].metadata
    assert {"measured", "threshold", "summary", "class_size_histogram", "small_classes", "qi_contributions"} <= set(meta)
    assert "worst_classes" not in meta
    assert meta["measured"].value < 5
    # small classes are told by their sizes and each QI's contribution, never by their values
    assert {c.name for c in meta["small_classes"].schema.columns} == {"size", "classes", "rows"}
    assert {c.name for c in meta["qi_contributions"].schema.columns} == {"qi", "rows_below_k_without", "contribution"}
    shown = json.dumps([r.data for r in meta["small_classes"].records + meta["qi_contributions"].records])
    assert not any(region in shown for region in ("North", "South"))
    assert "tiny/anonymized" in materialized(result)
    assert "tiny/published" not in materialized(result)
    publication = env / "published" / "tiny" / "2023.parquet"
    assert not publication.exists()
    # the refused release keeps its report, and the ledger remembers the failed evaluation
    report = json.loads((env / "reports" / "tiny" / "2023" / "risk_report.json").read_text())
    assert report["verdict"]["publishable"] is False
    entry = env_ledger(env / "state" / "ledger.sqlite").latest("tiny", "2023")
    assert entry is not None and entry.status == "failed"

    # a later run selecting only the publication re-verifies the gate and refuses
    later = run(defs, "tiny", "2023", instance, selection=[AssetKey(["tiny", "published"])])
    assert not later.success
    assert "tiny/published" not in materialized(later)
    assert not publication.exists()
    # the refusal is the published asset's outcome, with the failed check as its reason
    assert "k_anonymity" in check_evaluations(later)["publication"].description


def test_reachable_thresholds_publish_exactly_the_allowed_columns(env):
    thresholds = {"k": 2, "prosecutor_max": 0.5, "l_distinct": 1}
    spec_path = write_release(env, thresholds=thresholds)
    defs = load(env, spec_path)
    instance = DagsterInstance.ephemeral()
    result = run(defs, "tiny", "2023", instance)
    assert result.success, [e.message for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert all(e.passed for e in check_evaluations(result).values())
    publication = env / "published" / "tiny" / "2023.parquet"
    published = pd.read_parquet(publication)
    # exactly the allowed columns: pseudonymized identifier and every non-identifier
    assert list(published.columns) == ["pid", "age", "sex", "region", "visit_date", "diagnosis"]
    # re-measured independently of the library: smallest class over the QIs, prosecutor risk
    sizes = published.groupby(["age", "sex", "region"], dropna=False).size()
    assert sizes.min() >= 2 and 1 / sizes.min() <= 0.5
    assert len(published) >= 20 * 0.5  # suppression within the budget
    # no raw identifier survives
    raw = pd.read_csv(env / "data" / "tiny.csv")
    assert not set(published["pid"].astype(str)) & set(raw["pid"])
    assert "__anon_linkage" not in published.columns
    # only 2023 rows were taken
    assert set(published["visit_date"].astype(str)) == {"2023-03-01"}
    # the report sits beside the publication and the ledger holds the publication
    report = json.loads((env / "published" / "tiny" / "2023.report.json").read_text())
    assert report["verdict"]["publishable"] is True
    assert (env / "published" / "tiny" / "2023.report.html").exists()
    entry = env_ledger(env / "state" / "ledger.sqlite").latest("tiny", "2023")
    assert entry.status == "published" and entry.rows == len(published)
    assert not list(publication.parent.glob(".*pending*"))


def balanced_rows(year: int, diagnoses: list[str]) -> pd.DataFrame:
    """4 rows per (age, sex, region) combination, cycling through ``diagnoses``."""
    rows = []
    for age in (30, 42):
        for sex in ("F", "M"):
            for region in ("North", "South"):
                for j in range(4):
                    rows.append({"age": age, "sex": sex, "region": region,
                                 "diagnosis": diagnoses[j % len(diagnoses)]})
    df = pd.DataFrame(rows)
    df.insert(0, "pid", [f"PID{year}{i:04d}" for i in range(len(df))])
    df.insert(1, "name", [f"Full Name {year} {i:04d}" for i in range(len(df))])
    df["visit_date"] = f"{year}-06-01"
    return df[["pid", "name", "age", "sex", "region", "visit_date", "diagnosis"]]


def test_a_failing_partition_blocks_only_itself(env):
    # classes of 4 in both years; 2023 has two diagnoses per class (l = 2), 2024 only one
    # (l = 1): no generalization or suppression can raise l, so only 2024 fails
    data = pd.concat([balanced_rows(2023, ["A10", "B20"]), balanced_rows(2024, ["A10"])], ignore_index=True)
    spec_path = write_release(env, thresholds={"k": 2, "l_distinct": 2}, max_suppression=0.0, data=data)
    defs = load(env, spec_path)
    instance = DagsterInstance.ephemeral()
    bad = run(defs, "tiny", "2024", instance)
    good = run(defs, "tiny", "2023", instance)
    assert not bad.success and check_evaluations(bad)["l_diversity_distinct"].passed is False
    assert good.success and check_evaluations(good)["l_diversity_distinct"].passed is True
    assert (env / "published" / "tiny" / "2023.parquet").exists()
    assert not (env / "published" / "tiny" / "2024.parquet").exists()
    # the evaluations are recorded per partition
    assert check_evaluations(bad)["l_diversity_distinct"].partition == "2024"
    assert check_evaluations(good)["l_diversity_distinct"].partition == "2023"


def test_a_key_store_that_cannot_be_opened_fails_before_anything_is_written(env, monkeypatch):
    spec_path = write_release(env)
    monkeypatch.delenv("ANON_DAGSTER_MASTER_KEY")
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE", str(env / "no-such-keystore" / "keystore.json"))
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_PASSPHRASE", "wrong horse battery")
    defs = load(env, spec_path)
    result = run(defs, "tiny", "2023", DagsterInstance.ephemeral())
    assert not result.success
    failures = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failures[0].step_key == "tiny__raw"
    described = failures[0].step_failure_data.user_failure_data.description  # the key store's one line
    assert failures[0].event_specific_data.error.cls_name == "Failure"
    keystore = env / "no-such-keystore" / "keystore.json"
    assert described == f"{keystore}: no key store here; create one with 'anon-dagster keys init'"
    assert "wrong horse battery" not in described
    assert materialized(result) == set()
    storage = env / "state" / "storage"
    assert not storage.exists() or not any(p.is_file() for p in storage.rglob("*"))
    assert not (env / "published").exists()


def test_personal_data_is_encrypted_at_rest_and_owner_only(env):
    spec_path = write_release(env)
    defs = load(env, spec_path)
    assert run(defs, "tiny", "2023", DagsterInstance.ephemeral()).success
    storage = env / "state" / "storage" / "tiny"
    raw_file = storage / "raw" / "2023.parquet.enc"
    anon_file = storage / "anonymized" / "2023.parquet.enc"  # encrypted too: the gate reads it
    assert not (storage / "anonymized" / "2023.parquet").exists()
    assert raw_file.exists() and (storage / "pseudonymized" / "2023.parquet.enc").exists()
    assert not (storage / "raw" / "2023.parquet").exists()
    blob = raw_file.read_bytes()
    assert blob.startswith(b"ANONENC2") and b"PID000001" not in blob and b"PAR1" not in blob[:16]
    for f in (raw_file, anon_file):
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
    assert stat.S_IMODE(storage.stat().st_mode) == 0o700


def test_secrets_never_reach_the_event_log(env, monkeypatch):
    passphrase = "correct-horse-battery-staple-7731"
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_PASSPHRASE", passphrase)
    spec_path = write_release(env, method="none", k=5, thresholds={"k": 5})
    defs = load(env, spec_path)
    instance = DagsterInstance.ephemeral()
    run(defs, "tiny", "2023", instance)
    run(defs, "tiny", "2023", instance, selection=[AssetKey(["tiny", "published"])])
    key_bytes = base64.b64decode(MASTER_KEY)
    dump = []
    for record in instance.all_logs(instance.get_runs()[0].run_id) + instance.all_logs(instance.get_runs()[1].run_id):
        dump.append(repr(record))
    for r in instance.get_runs():
        dump.append(repr(r.run_config))
        dump.append(repr(r.tags))
    text = "\n".join(dump)
    assert passphrase not in text
    assert MASTER_KEY not in text
    from anon_dagster.pseudonymize import open_keystore

    store = open_keystore()
    derived = [store.derive_key(p) for p in ("data-at-rest", "ledger-linkage")]
    for secret in (key_bytes, *derived):
        for form in (secret.hex(), repr(secret), base64.b64encode(secret).decode()):
            assert form not in text
    # nor in the stored metadata of any materialization
    for key in ("raw", "pseudonymized", "anonymized"):
        record = instance.get_latest_materialization_event(AssetKey(["tiny", key]))
        meta = repr(record.asset_materialization.metadata) if record else ""
        assert passphrase not in meta and all(d.hex() not in meta for d in derived)


def test_definitions_group_keys_checks_job_and_schedule(env):
    spec_path = write_release(env, thresholds={"k": 2, "t_closeness": 0.5})
    defs = load(env, spec_path)
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert keys == {"tiny/raw", "tiny/pseudonymized", "tiny/anonymized", "tiny/published"}
    for key in graph.get_all_asset_keys():
        assert graph.get(key).group_name == "tiny"
    checks = {(k.asset_key.path[-1], k.name) for k in graph.asset_check_keys}
    assert {n for a, n in checks if a == "anonymized"} == {"k_anonymity", "t_closeness", "composition", "data_contract"}
    assert {n for a, n in checks if a == "published"} == {"publication", "freshness"}
    job = defs.resolve_job_def("tiny_release")
    assert job.partitions_def.get_partition_keys() == ["2023", "2024"]
    schedule = defs.resolve_schedule_def("tiny_schedule")
    assert schedule.cron_schedule == "0 0 1 1 *"
    published = graph.get(AssetKey(["tiny", "published"]))
    assert published.automation_condition is None
    automated = AnonReleaseComponent(specs=[str(spec_path)], automate=True).build_definitions(env)
    condition = automated.resolve_asset_graph().get(AssetKey(["tiny", "published"])).automation_condition
    assert [c.get_label() for c in condition.children] == ["eager", "all_deps_blocking_checks_passed"]


def test_repo_definitions_load(repo_root, monkeypatch):
    monkeypatch.delenv("ANON_DAGSTER_CONFIG", raising=False)
    import runpy

    defs = runpy.run_path(str(repo_root / "definitions.py"))["defs"]
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert "hospital_discharges/published" in keys
    assert os.fspath(repo_root) not in repr(sorted(keys))


def test_dp_aggregates_release_stops_at_the_population_budget(env):
    spec_path = write_release(env, name="dp", method="none", k=1, thresholds={"k": 1})
    spec = yaml.safe_load(spec_path.read_text())
    spec["publication"] = {
        "path": "../published/{release}/{partition}.csv", "mode": "aggregates",
        "epsilon": 1.0, "total_epsilon": 1.5,
        "aggregates": {"group_by": ["region"], "count": True, "max_contributions": 1,
                       "person": "pid", "domain": {"region": ["North", "South"]}},
    }
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    defs = load(env, spec_path)
    checks = {k.name for k in defs.resolve_asset_graph().asset_check_keys if k.asset_key.path[-1] == "anonymized"}
    assert checks == {"epsilon_budget"}
    instance = DagsterInstance.ephemeral()
    first = run(defs, "dp", "2023", instance)
    assert first.success, [e.message for e in first.all_events if e.event_type_value == "STEP_FAILURE"]
    table = pd.read_csv(env / "published" / "dp" / "2023.csv")
    assert sorted(table["region"]) == ["North", "South"] and "count" in table.columns
    assert set(table.columns) == {"region", "count"}  # no row-level column is published
    # the second year would spend 2.0 of a 1.5 budget: its check fails and nothing is written
    second = run(defs, "dp", "2024", instance)
    assert not second.success
    assert check_evaluations(second)["epsilon_budget"].passed is False
    assert not (env / "published" / "dp" / "2024.csv").exists()
    later = run(defs, "dp", "2024", instance, selection=[AssetKey(["dp", "published"])])
    assert not later.success and not (env / "published" / "dp" / "2024.csv").exists()


def test_a_second_release_of_the_same_people_is_refused_by_composition(env):
    # one person alone in (age 30, F, North); each release alone has classes of >= 4 persons
    data = balanced_rows(2023, ["A10", "B20"])
    lone = data.index[(data["age"] == 30) & (data["sex"] == "F") & (data["region"] == "North")]
    data = data.drop(lone[1:]).reset_index(drop=True)
    by_age = write_release(env, name="by_age", thresholds={"k": 2}, max_suppression=0.0, data=data)
    by_region = write_release(env, name="by_region", thresholds={"k": 2}, max_suppression=0.0, data=data)
    for path, other in ((by_age, "region"), (by_region, "age")):  # the QI the other release has
        spec = yaml.safe_load(path.read_text())
        spec["columns"][other] = {"role": "insensitive"}
        spec["composition"] = {"population": "same_people", "person": "pid", "min_k": 2}
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
    instance = DagsterInstance.ephemeral()
    first = run(load(env, by_age), "by_age", "2023", instance)
    assert first.success, [e.message for e in first.all_events if e.event_type_value == "STEP_FAILURE"]
    second = run(load(env, by_region), "by_region", "2023", instance)
    evaluation = check_evaluations(second)["composition"]
    assert not second.success and evaluation.passed is False
    assert evaluation.metadata["measured"].value == 1  # the lone person is singled out
    assert evaluation.metadata["composition"].value["exposed_persons"] >= 1
    assert not (env / "published" / "by_region" / "2023.parquet").exists()
    # with min_k 1 the same release is published
    spec = yaml.safe_load(by_region.read_text())
    spec["composition"]["min_k"] = 1
    by_region.write_text(yaml.safe_dump(spec, sort_keys=False))
    assert run(load(env, by_region), "by_region", "2023", instance).success
    assert (env / "published" / "by_region" / "2023.parquet").exists()
