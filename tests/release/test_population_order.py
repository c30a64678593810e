"""Publications of one population one after the other: the order, the wait and the lock."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from anon_dagster.release.population_order import (
    earlier_partition,
    is_ordered,
    population_lock,
    previous_key,
    wait_while_deciding,
)


def release(*, partitioned: bool = True, population: str | None = "residents") -> SimpleNamespace:
    """A stand-in spec, composed with ``population`` (None: not composed, rows published)."""
    return SimpleNamespace(release="visits", partitions=object() if partitioned else None,
                           composition=SimpleNamespace(population=population) if population else None,
                           publication=SimpleNamespace(mode="rows"))


def test_only_a_partitioned_release_of_a_population_is_ordered():
    assert is_ordered(release())
    assert not is_ordered(release(partitioned=False))
    assert not is_ordered(release(population=None))


def test_the_key_before():
    keys = ["2022", "2023", "2024"]
    assert [previous_key(keys, k) for k in (*keys, "2030", None)] == [None, "2022", "2023", None, None]


def test_only_an_ordered_release_waits_for_its_partition_before():
    keys = ["2022", "2023", "2024"]
    assert earlier_partition(release(), "2024", lambda: keys) == "2023"
    assert earlier_partition(release(), "2022", lambda: keys) is None  # the first one waits for none

    def unasked() -> list[str]:
        raise AssertionError("the keys of a release that waits for nothing are not asked for")

    assert earlier_partition(release(population=None), "2024", unasked) is None
    assert earlier_partition(release(), None, unasked) is None


def test_the_wait_ends_when_no_run_decides_the_earlier_partition():
    answers = [["run-a"], ["run-a"], []]
    told: list[str] = []
    assert wait_while_deciding(release(), "2024", "2023", lambda: answers.pop(0), on_wait=told.append,
                               poll=0) is None
    assert answers == [] and told == ["visits 2024: waiting for 2023 to be decided first (run run-a): "
                                      "partitions of population 'residents' are published in order"]


def test_a_wait_in_vain_says_what_it_waited_for():
    line = wait_while_deciding(release(), "2024", "2023", lambda: ["run-b"], timeout=0, poll=0)
    assert line == ("visits 2024: the run deciding 2023 (run-b) was still in progress after 0 s; "
                    "partitions of population 'residents' are published in order")


def test_no_population_no_lock(tmp_path):
    with population_lock(release(population=None), tmp_path / "ledger.sqlite") as held:
        assert held is False
    assert list(tmp_path.iterdir()) == []


def test_the_lock_is_one_owner_only_file_per_population_and_excludes_a_second_holder(tmp_path):
    ledger = tmp_path / "ledger.sqlite"
    inside, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with population_lock(release(), ledger):
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    assert inside.wait(10)
    with pytest.raises(TimeoutError, match="population 'residents'"), \
            population_lock(release(), ledger, timeout=0.2, poll=0.05):
        pass
    with population_lock(release(population="others"), ledger, timeout=0.2) as held:  # another population
        assert held
    leave.set()
    thread.join(10)
    locks = sorted(tmp_path.glob(".ledger.sqlite.*.lock"))
    assert len(locks) == 2 and all(p.stat().st_mode & 0o077 == 0 for p in locks)
