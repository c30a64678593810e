"""A release's gate run in an external job through Dagster Pipes (a subprocess here, as a
Databricks or EMR job would run it): the checks Dagster records are the in-process step's, and
the published step's re-verification refuses a frequency table or a verdict it cannot confirm.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from dagster import (
    AssetSpec,
    DagsterInstance,
    MaterializeResult,
    PipesFileMessageReader,
    PipesSubprocessClient,
    asset,
    materialize,
    serialize_value,
)

from anon_dagster.dagster.partitions import partitions_def_for
from anon_dagster.dagster.pipes import (
    pipes_release_checks,
    reverification_result,
    reverify_in_pipes,
)
from anon_dagster.dagster.translator import ReleaseTranslator
from anon_dagster.spec import load_spec
from tests.support.releases import check_evaluations, load, run, write_release

pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning", "ignore::dagster.PreviewWarning",
                                        "ignore:.*scrypt n=.*is weak", "ignore:.*expected_writer_count")

STEP = [sys.executable, "-m", "anon_dagster.engine.pipes_step"]
# 2023 passes every check; 2024's four rows cannot reach two distinct diagnoses per class
THRESHOLDS = {"k": 2, "l_distinct": 2}
PASSING, REFUSED = "2023", "2024"

# an external job that reports the frequency table, then edits it (its counts doubled)
EDITS_AFTER_REPORTING = """
import pandas as pd, sys
from anon_dagster.engine import pipes_step
from anon_dagster.release import pipes_values as pv
written = []
original = pv.custom_message
def keep(kind, **body):
    written.append(body.get("path"))
    return original(kind, **body)
pv.custom_message = keep
pipes_step.main()
table = pd.read_parquet(written[-1])
table["count"] = table["count"] * 2
table.to_parquet(written[-1], index=False)
"""

# an external job that reports every check of the frequency table as passed
REPORTS_A_PASS = """
from anon_dagster.engine import pipes_step
from anon_dagster.release import pipes_values as pv
original = pv.custom_message
def passing(kind, **body):
    if kind == pv.FREQUENCIES_MESSAGE:
        body["checks"] = [{**c, "passed": True} for c in body["checks"]]
    return original(kind, **body)
pv.custom_message = passing
pipes_step.main()
"""


@pytest.fixture
def spark_in_subprocess() -> None:
    """Skips the test when the external step could not start Spark (no pyspark, no Java)."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
    from tests.support.spark import java_problem

    if problem := java_problem():
        pytest.skip(f"Spark needs Java: {problem}")


@pytest.fixture
def release(env: Path) -> Path:
    """A small generated two-year release (no composition), its ledger created."""
    return write_release(env, composition=False, rows_2024=4, thresholds=THRESHOLDS)


def pipes_checks_run(spec_path: Path, partition: str, instance: DagsterInstance, *,
                     client: PipesSubprocessClient | None = None, extras: dict | None = None):
    """The release's checks run in the external step, beside an anonymized asset materialized in
    the same run (the checks are on it)."""
    spec = load_spec(spec_path)
    t = ReleaseTranslator()
    pdef = partitions_def_for(spec)

    @asset(key=t.asset_key(spec, "anonymized"), partitions_def=pdef)
    def anonymized() -> MaterializeResult:
        return MaterializeResult()

    upstream = [AssetSpec(t.asset_key(spec, s), partitions_def=pdef) for s in ("raw", "pseudonymized")]
    checks = pipes_release_checks(spec, run_args={"command": STEP}, extras=extras)
    return materialize([*upstream, anonymized, checks], partition_key=partition, instance=instance,
                       resources={"pipes_client": client or PipesSubprocessClient()}, raise_on_error=False)


def reverify(spec_path: Path, partition: str, location: Path, *, command: list[str] = STEP,
             client: PipesSubprocessClient | None = None, extras: dict | None = None):
    """The published step as a project wires it: re-verify through Pipes, publish only on a pass
    (here: write a marker file), and record the verdict as the ``publication`` check."""
    spec = load_spec(spec_path)
    t = ReleaseTranslator()
    pdef = partitions_def_for(spec)
    marker = location.with_suffix(".published")
    seen = []

    @asset(key=t.asset_key(spec, "published"), partitions_def=pdef, required_resource_keys={"pipes_client"},
           check_specs=[t.publication_check_spec(spec, pdef)])
    def published(context) -> MaterializeResult:
        verification = reverify_in_pipes(context, spec, location=str(location), run_args={"command": command},
                                         extras=extras)
        seen.append(verification)
        if verification.passed:
            marker.write_text("published")
        return MaterializeResult(check_results=[reverification_result(verification, t.publication_check_name(spec))])

    result = materialize([published], partition_key=partition, instance=DagsterInstance.ephemeral(),
                         resources={"pipes_client": client or PipesSubprocessClient()}, raise_on_error=False)
    return seen[0], check_evaluations(result)["publication"], marker.exists()


@pytest.fixture
def reverify_with_job(env: Path, release: Path) -> Callable[[str, str], tuple]:
    """:func:`reverify` of a partition of ``release`` through an external job given as its Python
    source (written to ``env/job.py`` and run by this interpreter), the frequency table at
    ``env/freq/<partition>.parquet``: the verification, the ``publication`` check and whether the
    partition was published."""
    def reverify_through(source: str, partition: str) -> tuple:
        script = env / "job.py"
        script.write_text(source)
        return reverify(release, partition, env / "freq" / f"{partition}.parquet",
                        command=[sys.executable, str(script)])

    return reverify_through


def figures(evaluation) -> tuple:
    """What a check evaluation says: name, verdict, severity, measured and threshold."""
    meta = evaluation.metadata
    return (evaluation.check_name, evaluation.passed, evaluation.severity, meta["measured"].value,
            meta["threshold"].value)


@pytest.mark.parametrize("partition", [PASSING, REFUSED])
def test_the_checks_dagster_records_are_the_in_process_steps(env, release, partition):
    instance = DagsterInstance.ephemeral()
    in_process = check_evaluations(run(load(env, release), "tiny", partition, instance))
    through_pipes = check_evaluations(pipes_checks_run(release, partition, instance))
    declared = [c.name for c in ReleaseTranslator().checks(load_spec(release))]
    assert sorted(through_pipes) == sorted(declared)
    assert [figures(through_pipes[n]) for n in declared] == [figures(in_process[n]) for n in declared]
    for name in declared:  # the same description and metadata, bar the refused evaluation's kept report
        assert through_pipes[name].description == in_process[name].description
        assert through_pipes[name].metadata == {k: v for k, v in in_process[name].metadata.items() if k != "report"}
    assert all(through_pipes[n].passed for n in declared) == (partition == PASSING)
    if partition == REFUSED:
        assert not through_pipes["l_diversity_distinct"].passed and through_pipes["k_anonymity"].passed


def test_the_reverification_publishes_a_partition_the_frequency_table_supports(env, release):
    verification, check, published = reverify(release, PASSING, env / "freq" / "2023.parquet")
    assert verification.passed and check.passed and published
    assert [c.name for c in verification.checks] == ["k_anonymity", "l_diversity_distinct"]
    assert [c.measured for c in verification.checks] == [2, 2]


def test_the_reverification_refuses_a_partition_the_frequency_table_refuses(env, release):
    verification, check, published = reverify(release, REFUSED, env / "freq" / "2024.parquet")
    assert not verification.passed and not check.passed and not published
    assert json.loads(json.dumps(check.metadata["failed_checks"].value)) == ["l_diversity_distinct"]


def test_a_frequency_table_edited_after_it_was_reported_is_refused(reverify_with_job):
    verification, check, published = reverify_with_job(EDITS_AFTER_REPORTING, PASSING)
    assert not published and not check.passed
    assert len(verification.problems) == 1 and "SHA-256" in verification.problems[0]
    assert verification.checks == []  # nothing judged from a file that is not the one reported


def test_a_pass_the_frequency_table_does_not_support_is_refused(reverify_with_job):
    verification, check, published = reverify_with_job(REPORTS_A_PASS, REFUSED)
    assert not published and not check.passed
    differs = [p for p in verification.problems if "reported passed=True" in p]
    assert len(differs) == 1 and differs[0].startswith("l_diversity_distinct:")
    assert "the frequency table gives passed=False, measured 1" in differs[0]


def test_no_secret_of_the_key_store_in_the_pipes_messages(env, release, master_key):
    secrets = [os.environ[v] for v in ("ANON_DAGSTER_MASTER_KEY", "ANON_DAGSTER_KEYSTORE_STATE")]
    assert secrets[0] == master_key
    instance = DagsterInstance.ephemeral()
    sent: list[str] = []
    for step, partition in (("checks", REFUSED), ("frequencies", PASSING)):
        messages = env / f"{step}.messages"
        client = PipesSubprocessClient(message_reader=PipesFileMessageReader(str(messages), cleanup_file=False))
        if step == "checks":
            result = pipes_checks_run(release, partition, instance, client=client)
            sent += [serialize_value(e) for e in result.all_events]
        else:
            verification, _, published = reverify(release, partition, env / "freq" / "2023.parquet", client=client)
            assert verification.passed and published
        sent.append(messages.read_text())
    assert any('"report_asset_check"' in s for s in sent) and any('"frequency_table"' in s for s in sent)
    for secret in secrets:
        assert not any(secret in s for s in sent)
    table = pd.read_parquet(env / "freq" / "2023.parquet")
    assert not any(secret in str(v) for secret in secrets for v in table.to_numpy().ravel())


def test_the_spark_engine_reports_the_in_process_verdicts(env, release, spark_in_subprocess):
    instance = DagsterInstance.ephemeral()
    in_process = check_evaluations(run(load(env, release), "tiny", PASSING, instance))
    data = env / "data" / "tiny.parquet"  # the Spark engine reads parquet, dates as dates: the same rows
    pd.read_csv(env / "data" / "tiny.csv", parse_dates=["visit_date"]).to_parquet(data, index=False)
    extras = {"engine": "spark", "spark_master": "local[1]", "input": str(data)}
    verification, check, published = reverify(release, PASSING, env / "freq" / "spark.parquet", extras=extras)
    assert verification.passed and check.passed and published
    rejudged = {c.name: c for c in verification.checks}
    for name in rejudged:  # the frequency table Spark counted gives the pandas step's figures
        assert (name, rejudged[name].passed, rejudged[name].measured) == \
            (name, in_process[name].passed, in_process[name].metadata["measured"].value)


def test_dagster_reads_the_pipes_form_as_the_in_process_metadata():
    from dagster._core.definitions.metadata import normalize_metadata_value
    from dagster._core.definitions.metadata.external_metadata import metadata_map_from_external

    from anon_dagster.dagster.metadata import as_metadata
    from anon_dagster.release.evaluation import EvidenceTable
    from anon_dagster.release.pipes_values import plain_metadata
    from anon_dagster.release.shown_values import Shown

    values = {"summary": Shown("md", "k = 2 meets"), "measured": Shown("float", 0.28125), "threshold": Shown("text", ">= 2"),
              "check": Shown("json", {"measured": 0.123456789}), "rows": 40, "share": 0.987654, "flag": True,
              "report": Path("reports/r.md"), "composition": {"k": 0.5555555},
              "small_classes": EvidenceTable([("size", "int"), ("share", "float")], [{"size": 2, "share": 1 / 3}], "a note")}
    wrapped = {k: v if isinstance(v, dict) and set(v) == {"raw_value", "type"} else {"raw_value": v, "type": "__infer__"}
               for k, v in plain_metadata(values).items()}
    # in process, Dagster types a raw value when it records it (as it does the Pipes form's)
    assert metadata_map_from_external(wrapped) == {k: normalize_metadata_value(v) for k, v in as_metadata(values).items()}
