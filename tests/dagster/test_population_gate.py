"""A population in the policy, through Dagster's checks and gate.

The journalist-risk check places the population in the published classes with the record the
stored anonymized table carries; its figure must be the brute-force 1 / min F, and a later run of
the publication alone reads that record again (the table and its record are encrypted and
authenticated at rest: an edited file refuses the publication; the report folder's copy of the
record is for reading and changes nothing).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from dagster import AssetKey, DagsterInstance

from tests.support.population import brute_force_f
from tests.support.releases import check_evaluations, load, materialized, run, write_release


def dagster_release(tmp: Path, journalist_max: float, method: str = "mondrian") -> Path:
    """The two-year release with a population of its people and 4 times as many others like them."""
    spec_path = write_release(tmp, name="popjr", method=method, k=2, thresholds={"k": 2, "journalist_max": journalist_max},
                              composition=False, rows_2023=40, rows_2024=40)
    data = pd.read_csv(tmp / "data" / "popjr.csv")
    # the population: the sample's people and 4 times as many others like them
    rng = np.random.default_rng(1)
    others = pd.DataFrame({"age": rng.choice([30, 31, 42, 43], 320), "sex": rng.choice(["F", "M"], 320),
                           "region": rng.choice(["North", "South"], 320)})
    pd.concat([data[["age", "sex", "region"]], others]).to_csv(tmp / "data" / "people.csv", index=False)
    spec = yaml.safe_load(spec_path.read_text())
    spec["policy"]["population"] = {"path": "../data/people.csv"}
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return spec_path


def _brute_journalist_max(env: Path, partition: str) -> float:
    published = pd.read_parquet(env / "published" / "popjr" / f"{partition}.parquet")
    people = pd.read_csv(env / "data" / "people.csv")
    f = brute_force_f(published, people)
    return 1 / min(f.values())


def test_dagster_journalist_threshold_passes_with_the_population_and_gate_reverifies(env):
    spec = dagster_release(env, journalist_max=0.4)
    defs = load(env, spec)
    instance = DagsterInstance.ephemeral()
    result = run(defs, "popjr", "2023", instance)
    assert result.success
    evals = check_evaluations(result)
    assert evals["journalist_risk_max"].passed is True
    measured = evals["journalist_risk_max"].metadata["check"].value["measured"]  # unrounded
    assert "popjr/published" in materialized(result)
    # the check's figure is the brute-force 1 / min F over the published classes
    assert measured == pytest.approx(_brute_journalist_max(env, "2023"))
    # the stored record holds the boxes; Dagster's metadata only a summary of them
    stored = json.loads((env / "reports" / "popjr" / "2023" / "transformations.json").read_text())
    assert stored["mondrian"]["boxes"]["classes"] >= 1

    # re-running only the publication reads the record the stored table carries: still publishable
    later = run(defs, "popjr", "2023", instance, selection=[AssetKey(["popjr", "published"])])
    assert later.success
    target = env / "published" / "popjr" / "2023.parquet"
    before = target.read_bytes()
    # the report folder's copy of the record is for reading: editing it changes nothing the gate reads
    stored["output_hash"] = "0" * 64
    stored["mondrian"]["boxes"] = {}
    (env / "reports" / "popjr" / "2023" / "transformations.json").write_text(json.dumps(stored))
    again = run(defs, "popjr", "2023", instance, selection=[AssetKey(["popjr", "published"])])
    assert again.success
    assert pd.read_parquet(target).equals(pd.read_parquet(io.BytesIO(before)))
    # the stored anonymized table (with its record) is encrypted and authenticated: an edited
    # byte, or a clear-text table put in its place, refuses the publication, nothing overwritten
    stored_table = env / "state" / "storage" / "popjr" / "anonymized" / "2023.parquet.enc"
    assert stored_table.exists()
    blob = bytearray(stored_table.read_bytes())
    blob[-20] ^= 1
    stored_table.write_bytes(bytes(blob))
    refused = run(defs, "popjr", "2023", instance, selection=[AssetKey(["popjr", "published"])])
    assert not refused.success
    failures = [e for e in refused.all_events if e.event_type_value == "STEP_FAILURE"]
    error, messages = failures[0].event_specific_data.error, []
    while error is not None:  # the storage's refusal is the cause of Dagster's input error
        messages.append(error.message)
        error = error.cause
    assert any("cannot be decrypted" in m for m in messages), messages
    stored_table.unlink()
    pd.read_parquet(target).to_parquet(stored_table.with_suffix(""))  # a clear table instead
    refused = run(defs, "popjr", "2023", instance, selection=[AssetKey(["popjr", "published"])])
    assert not refused.success
    assert pd.read_parquet(target).equals(pd.read_parquet(io.BytesIO(before)))


def test_dagster_journalist_threshold_fails_and_blocks_publication(env):
    spec = dagster_release(env, journalist_max=0.01)
    defs = load(env, spec)
    result = run(defs, "popjr", "2023", DagsterInstance.ephemeral())
    assert not result.success
    evals = check_evaluations(result)
    jr = evals["journalist_risk_max"]
    assert jr.passed is False
    assert 0.01 < jr.metadata["measured"].value <= 0.5  # F >= 2 for every class (k=2 from the people)
    assert "popjr/published" not in materialized(result)
    assert not (env / "published" / "popjr" / "2023.parquet").exists()
    # the refused evaluation's report states the figures the check refused (population placed)
    report = json.loads((env / "reports" / "popjr" / "2023" / "risk_report.json").read_text())
    assert report["verdict"]["publishable"] is False
    risk = report["measures"]["metrics"]
    assert risk["journalist_max"] == pytest.approx(jr.metadata["check"].value["measured"])
    assert risk["journalist_max"] < risk["prosecutor_max"]  # F > f: the population was used
    assert risk["marketer"] is not None
