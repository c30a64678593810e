"""The release pipeline: each step builds a table's equivalence classes once and hands them on.

``evaluate`` measures every threshold, the utility queries, the class sizes, the small classes
and the composition from one class build of the published view; the Dagster job builds them
once per step that works on the table (the search in ``anonymized``, the checks, the
publication's re-verification), never once per figure.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from dagster import AssetKey, DagsterInstance

from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import pipeline
from anon_dagster.release.publication import PublicationRefused, publish
from anon_dagster.risk.classes import counting_class_builds
from anon_dagster.spec import load_spec
from tests.support.ledgers import new_ledger
from tests.support.releases import load, run, write_release

THRESHOLDS = {"k": 2, "l_distinct": 2, "t_closeness": 0.9, "prosecutor_avg": 0.6}


@pytest.fixture
def steps(tmp_path, master_key):
    """A tiny release taken through ingest and pseudonymization for 2023."""
    def make(method: str):
        spec = load_spec(write_release(tmp_path, name=f"r_{method}", method=method, thresholds=THRESHOLDS))
        ingested = pipeline.ingest(spec, "2023")
        pseudo = pipeline.pseudonymize(spec, ingested.data, open_keystore())
        return spec, ingested, pseudo
    return make


@pytest.mark.parametrize("method", ["global", "mondrian"])
def test_one_class_build_per_table_per_step(steps, tmp_path, method):
    spec, ingested, pseudo = steps(method)
    with counting_class_builds() as search:
        anonymized = pipeline.anonymize(spec, pseudo.data)
    with counting_class_builds() as gate:
        evaluation = pipeline.evaluate(spec, anonymized.data, record=anonymized.record, original=pseudo.data,
                                       raw=ingested.data, ledger=new_ledger(tmp_path / "ledger.sqlite"), partition="2023")
    # the search's table, then its output (the published pseudonym links a patient's rows: the
    # persons below k are looked for on the output's classes)
    assert search.count == 2
    assert anonymized.record.person_suppression is not None
    assert gate.count == 1
    # every figure of the evaluation was there, from that one build
    assert {c.name for c in evaluation.checks} >= {"k_anonymity", "l_diversity_distinct", "t_closeness", "composition"}
    assert sum(evaluation.class_sizes) == evaluation.rows == len(anonymized.data)
    small = evaluation.small_classes
    assert small is not None and small["rows"] == evaluation.rows
    assert small["rows_below_k"] == sum(s for s in evaluation.class_sizes if s < small["k"])


def test_the_dagster_job_builds_once_per_step(tmp_path, master_key, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    spec_path = write_release(tmp_path, thresholds=THRESHOLDS)
    defs = load(tmp_path, spec_path)
    with counting_class_builds() as builds:
        result = run(defs, "tiny", "2023", DagsterInstance.ephemeral())
    assert result.success
    # anonymized (the search, then the persons on its output), the checks (one evaluation);
    # published verifies that it reads the very tables, spec, population and ledger entries the
    # checks evaluated (digests) and takes up that evaluation rather than building it again
    assert builds.count == 3
    # a run of the publication alone has no evaluation to take up: it evaluates, once
    with counting_class_builds() as builds:
        again = run(defs, "tiny", "2023", DagsterInstance.ephemeral(), selection=[AssetKey(["tiny", "published"])])
    assert again is not None and builds.count == 1


def test_a_check_that_cannot_be_computed_fails_and_says_why(steps, tmp_path):
    spec, ingested, pseudo = steps("global")
    anonymized = pipeline.anonymize(spec, pseudo.data)
    # the linkage pseudonyms are gone: the composition cannot be checked, so it fails
    stripped = anonymized.data.drop(columns=["__anon_linkage"])
    evaluation = pipeline.evaluate(spec, stripped, record=anonymized.record, original=pseudo.data,
                                   raw=ingested.data, ledger=new_ledger(tmp_path / "ledger.sqlite"), partition="2023")
    composition = evaluation.check("composition")
    assert composition is not None and not composition.passed and "could not be checked" in composition.summary
    assert evaluation.verdict == "fail"
    with pytest.raises(PublicationRefused, match="composition"):
        publish(spec, evaluation, stripped, new_ledger(tmp_path / "ledger.sqlite"))
    assert not list((tmp_path / "published").glob("**/*.parquet"))


def test_the_evaluation_id_changes_with_the_data(steps, tmp_path):
    spec, ingested, pseudo = steps("global")
    anonymized = pipeline.anonymize(spec, pseudo.data)
    ledger = new_ledger(tmp_path / "ledger.sqlite")

    def evaluate(table: pd.DataFrame):
        return pipeline.evaluate(spec, table, record=anonymized.record, original=pseudo.data, raw=ingested.data,
                                 ledger=ledger, partition="2023")

    first, again = evaluate(anonymized.data), evaluate(anonymized.data)
    assert first.id == again.id
    edited = anonymized.data.copy()
    edited.loc[edited.index[0], "diagnosis"] = "C30" if edited["diagnosis"].iloc[0] != "C30" else "A10"
    assert evaluate(edited).id != first.id


def test_readmitted_persons_below_k_are_suppressed_and_the_gate_judges_per_person(tmp_path, master_key):
    rng = np.random.default_rng(3)
    n = 60
    # 10 patients stay 3 times each at spread ages: each alone in their person class
    pid = [f"PID{i:06d}" for i in range(40)] + [f"PID9{i // 2:05d}" for i in range(20)]
    df = pd.DataFrame({"pid": pid, "name": [f"N {i}" for i in range(n)], "age": rng.choice([30, 31, 42, 43], n),
                       "sex": rng.choice(["F", "M"], n), "region": rng.choice(["North", "South"], n),
                       "visit_date": ["2023-03-01"] * n, "diagnosis": rng.choice(["A10", "B20", "C30"], n)})
    spec = load_spec(write_release(tmp_path, name="readmit", data=df, rows_2023=n, rows_2024=0,
                                   thresholds={"k": 2}, max_suppression=0.5))
    ingested = pipeline.ingest(spec, "2023")
    pseudo = pipeline.pseudonymize(spec, ingested.data, open_keystore())
    anonymized = pipeline.anonymize(spec, pseudo.data)
    section = anonymized.record.person_suppression
    assert section is not None and section.linked_by == ["pid"] and section.reached
    assert anonymized.suppressed >= section.rows > 0
    assert anonymized.record.rows_out == len(anonymized.data)
    evaluation = pipeline.evaluate(spec, anonymized.data, record=anonymized.record, original=pseudo.data,
                                   raw=ingested.data, ledger=new_ledger(tmp_path / "ledger.sqlite"), partition="2023")
    assert evaluation.measures["person"]["k"] >= 2
    assert evaluation.check("k_anonymity").passed
    assert "per person" in evaluation.check("k_anonymity").summary
