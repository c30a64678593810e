"""A backfill of every partition, launched from the UI's API and run by Dagster's own daemon,
publishes in partition order and is not held back by a refusal.

``dagster dev`` (webserver and daemon, own process group, stopped at the end) on a fresh ledger
and Dagster home, with the release definitions on the in-process executor (a backfill's runs go
through Dagster's asset job, so the definitions' executor is theirs); one asset backfill of the
three years of a composed release, as the UI's "Materialize all partitions" launches it. 2023 and 2024 hold the same persons (each year alone
passes, the second composed with the first does not), 2025 other persons: run one after the
other they give 2023 published, 2024 refused, 2025 published, and so must the backfill, whose
runs the daemon launches as the partitions' dependencies allow.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.support.dagster_dev import dagster_dev, graphql
from tests.support.ledgers import open_test_ledger
from tests.support.linkage import composing_release, two_years

pytestmark = pytest.mark.slow

YEARS = ("2023", "2024", "2025")

BACKFILL = """
mutation Backfill($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
  }
}"""
DEFINITIONS = """
import os
import sys

from dagster import Definitions, in_process_executor

# Dagster starts run workers as spawned processes, whose __main__ has no file: pyspark, when it is
# installed (Great Expectations imports it then), takes such a process for its own doctests and
# exits it. Naming a file keeps this environment's workers alive; the releases are unchanged.
if getattr(sys.modules["__main__"], "__spec__", None) is None and not hasattr(sys.modules["__main__"], "__file__"):
    sys.modules["__main__"].__file__ = __file__

from anon_dagster.dagster import load_release_definitions

defs = Definitions.merge(load_release_definitions(os.environ["ANON_DAGSTER_CONFIG"]),
                         Definitions(executor=in_process_executor))
"""
STATUS = "query Status($id: String!) { partitionBackfillOrError(backfillId: $id) { ... on PartitionBackfill { status } } }"


def three_years(tmp: Path) -> Path:
    """2023 and 2024 of the same eight persons, 2025 of eight others."""
    data = two_years()
    later = two_years(other_people=True)
    later = later[later["visit_date"].str.startswith("2024")].assign(
        visit_date="2025-05-02", pid=lambda d: d["pid"].str.replace("PID", "NEW"))
    spec = composing_release(tmp, pd.concat([data, later], ignore_index=True))
    text = yaml.safe_load(spec.read_text())
    text["partitions"]["end"] = "2026-01-01"
    spec.write_text(yaml.safe_dump(text, sort_keys=False))
    return spec


def test_a_backfill_of_every_partition_publishes_in_order(tmp_path):
    spec = three_years(tmp_path)
    definitions = tmp_path / "definitions.py"
    definitions.write_text(DEFINITIONS)
    with dagster_dev(tmp_path, spec.parent, definitions=definitions) as server:
        assets = [{"path": ["yearly", step]} for step in ("raw", "pseudonymized", "anonymized", "published")]
        launched = graphql(server.port, BACKFILL, {"params": {"partitionNames": list(YEARS), "assetSelection": assets,
                                                              "fromFailure": False}})["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        deadline, status = time.monotonic() + 600, None
        while time.monotonic() < deadline:
            status = graphql(server.port, STATUS, {"id": launched["backfillId"]})["partitionBackfillOrError"].get("status")
            if status not in ("REQUESTED", "CANCELING", "FAILING", None):
                break
            time.sleep(3)
        assert status in ("COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED"), (status, server.log_tail())
    book = open_test_ledger(server.ledger, server.keystate)
    outcomes = {year: (e.status if (e := book.latest("yearly", year)) else None) for year in YEARS}
    assert outcomes == {"2023": "published", "2024": "failed", "2025": "published"}
    published = sorted(p.name for p in (tmp_path / "published" / "yearly").glob("*.parquet"))
    assert published == ["2023.parquet", "2025.parquet"]
