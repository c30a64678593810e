"""Partitions of one population publish in order: runs launched together, in either order, leave
the ledger as running them one after the other does.

The two years hold the same eight persons (tests/support/linkage.py): each year alone passes, the
second one composed with the first does not. Run in order, 2023 is published and 2024 refused;
2024 first would publish 2024 and refuse 2023. Launched at once, the later partition's checks and
publication wait while a run deciding the earlier one is in progress, so the outcome is the
sequential one whichever run starts first.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, TimeWindowPartitionMapping

from anon_dagster.dagster import ordering
from anon_dagster.dagster.partitions import partitions_def_for
from anon_dagster.release import population_order
from anon_dagster.spec import load_spec
from tests.support.ledgers import env_ledger
from tests.support.linkage import composing_release, two_years
from tests.support.releases import check_evaluations, load, run, write_release

pytestmark = pytest.mark.filterwarnings("ignore:.*scrypt n=.*is weak")

PUBLISHED = AssetKey(["yearly", "published"])
NO_COMPUTE_LOGS = {"compute_logs": {"module": "dagster._core.storage.noop_compute_log_manager",
                                    "class": "NoOpComputeLogManager"}}


def ledger_outcomes(env: Path, release: str = "yearly") -> dict[str, str | None]:
    ledger = env_ledger(env / "state" / "ledger.sqlite")
    return {p: (e.status if (e := ledger.latest(release, p)) else None) for p in ("2023", "2024")}


def run_together(defs, instance, partitions: list[str]) -> dict[str, object]:
    """One run per partition, all launched at once in the order given (threads, one instance)."""
    results: dict[str, object] = {}
    start = threading.Barrier(len(partitions))

    def launch(partition: str, delay: float) -> None:
        start.wait()
        time.sleep(delay)  # the first partition given is the first one started
        results[partition] = run(defs, "yearly", partition, instance)

    threads = [threading.Thread(target=launch, args=(p, 0.3 * i)) for i, p in enumerate(partitions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    return results


def test_sequential_runs_publish_the_first_year_and_refuse_the_second(env):
    defs = load(env, composing_release(env, two_years()))
    instance = DagsterInstance.ephemeral()
    assert run(defs, "yearly", "2023", instance).success
    second = run(defs, "yearly", "2024", instance)
    assert not second.success and check_evaluations(second)["composition"].passed is False
    assert ledger_outcomes(env) == {"2023": "published", "2024": "failed"}


@pytest.mark.parametrize("order", [["2023", "2024"], ["2024", "2023"]], ids=["2023 first", "2024 first"])
def test_runs_launched_together_give_the_sequential_outcome_in_either_order(env, tmp_path_factory, order):
    defs = load(env, composing_release(env, two_years()))
    # the runs share this process: Dagster's capture of each run's output (a tail process per
    # stream, over the process's one stdout) is switched off, as separate run processes need none
    with DagsterInstance.local_temp(str(tmp_path_factory.mktemp("dagster_home")), overrides=NO_COMPUTE_LOGS) as instance:
        results = run_together(defs, instance, order)
    assert set(results) == {"2023", "2024"}
    assert ledger_outcomes(env) == {"2023": "published", "2024": "failed"}
    assert (env / "published" / "yearly" / "2023.parquet").exists()
    assert not (env / "published" / "yearly" / "2024.parquet").exists()
    # the later year's checks waited for the earlier one too: composition is what refused it
    later = check_evaluations(results["2024"])
    assert later["composition"].passed is False and later["publication"].passed is False
    assert "composition" in later["publication"].description
    assert check_evaluations(results["2023"])["publication"].passed is True


def test_the_published_asset_depends_on_its_partition_before_only_when_composed(env):
    composed = load(env, composing_release(env, two_years()))
    graph = composed.resolve_asset_graph()
    assert PUBLISHED in graph.get(PUBLISHED).parent_keys
    mapping = composed.resolve_assets_def(PUBLISHED).get_partition_mapping(PUBLISHED)
    assert isinstance(mapping, TimeWindowPartitionMapping)
    assert (mapping.start_offset, mapping.end_offset) == (-1, -1)
    # a release of no population has no order to keep
    plain = load(env, write_release(env, name="plain", composition=False))
    key = AssetKey(["plain", "published"])
    assert key not in plain.resolve_asset_graph().get(key).parent_keys


def test_ordered_releases_and_the_partition_before(env):
    composed = load_spec(composing_release(env, two_years()))
    plain = load_spec(write_release(env, name="plain", composition=False))
    assert population_order.is_ordered(composed) and not population_order.is_ordered(plain)
    pdef = partitions_def_for(composed)
    assert ordering.previous_partition(pdef, "2024") == "2023"
    assert ordering.previous_partition(pdef, "2023") is None
    assert ordering.previous_partition(None, None) is None


def test_two_publications_of_one_population_never_overlap(env):
    spec = load_spec(composing_release(env, two_years()))
    ledger = env / "state" / "ledger.sqlite"
    ledger.parent.mkdir(parents=True, exist_ok=True)
    held, released = threading.Event(), threading.Event()

    def first() -> None:
        with population_order.population_lock(spec, ledger):
            held.set()
            released.wait(10)

    thread = threading.Thread(target=first)
    thread.start()
    assert held.wait(10)
    with pytest.raises(TimeoutError, match="population 'yearly_people'"):
        with population_order.population_lock(spec, ledger, timeout=0.3, poll=0.05):
            pass
    released.set()
    thread.join(10)
    with population_order.population_lock(spec, ledger, timeout=1) as locked:
        assert locked
    lock_files = list(ledger.parent.glob(".ledger.sqlite.*.lock"))
    assert len(lock_files) == 1 and lock_files[0].stat().st_mode & 0o077 == 0
