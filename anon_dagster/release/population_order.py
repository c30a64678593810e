"""Publications of one population decided one after the other, whatever launches them.

A release composed with the earlier publications of its population (``composition:``) or
spending a population's ε budget (``publication.mode: aggregates``) is judged against what the
ledger holds when it is judged: run out of order, 2025 would be composed with nothing and 2024
refused because of 2025. Such a partitioned release is *ordered* (:func:`is_ordered`):

- a step of a partition waits while the partition before it is being decided
  (:func:`wait_while_deciding`; the orchestrator says which runs decide it);
- two publications of one population (two partitions, or two releases naming the same
  ``composition.population`` or ε budget) are never evaluated and written at the same time
  (:func:`population_lock`): each one is composed with the other's recorded outcome.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..spec import ReleaseSpec
from .refusals import recorded_population

# how long a step waits for the partition before it, or for another publication of its
# population, before it gives up (the checks then go on with a warning, the publication fails)
ORDER_WAIT_SECONDS = 3600.0
POLL_SECONDS = 1.0


def is_ordered(spec: ReleaseSpec) -> bool:
    """Whether the release's partitions must be published in order: it is partitioned and is
    judged against its population's earlier publications (composition, or the ε budget)."""
    return spec.partitions is not None and recorded_population(spec) is not None


def previous_key(keys: list[str], partition: str | None) -> str | None:
    """The key before ``partition`` in ``keys`` (None for the first one, an unknown one or None)."""
    if partition is None or partition not in keys:
        return None
    index = keys.index(partition)
    return keys[index - 1] if index > 0 else None


def earlier_partition(spec: ReleaseSpec, partition: str | None, keys: Callable[[], list[str]]) -> str | None:
    """The partition a step of ``partition`` waits for: the one before it in ``keys()`` (the
    release's partition keys, asked for only then) for an ordered release, else None."""
    return previous_key(keys(), partition) if is_ordered(spec) and partition is not None else None


def decides(selection: Collection[str] | None, job: str, published: str, release_job: str) -> bool:
    """Whether a run of a partition decides its publication: its asset selection holds ``published``
    or, selecting nothing (the whole job), it is a run of the release's job ``release_job``."""
    return published in selection if selection else job == release_job


def wait_while_deciding(spec: ReleaseSpec, partition: str | None, earlier: str,
                        deciding: Callable[[], list[str]], *, on_wait: Callable[[str], None] = lambda _: None,
                        timeout: float = ORDER_WAIT_SECONDS, poll: float = POLL_SECONDS) -> str | None:
    """Wait while ``deciding()`` (the ids of the runs deciding ``earlier``) is not empty.

    Returns None once it is, else, after ``timeout`` seconds, one line saying what was waited
    for in vain. ``on_wait`` gets one line the first time the step waits.
    """
    deadline = time.monotonic() + timeout
    told = False
    while runs := deciding():
        population = recorded_population(spec)
        if time.monotonic() >= deadline:
            return (f"{spec.release} {partition}: the run deciding {earlier} ({runs[0]}) was still in progress "
                    f"after {timeout:g} s; partitions of population {population!r} are published in order")
        if not told:
            on_wait(f"{spec.release} {partition}: waiting for {earlier} to be decided first (run {runs[0]}): "
                    f"partitions of population {population!r} are published in order")
            told = True
        time.sleep(poll)
    return None


@contextmanager
def population_lock(spec: ReleaseSpec, ledger_path: str | Path, *,
                    timeout: float = ORDER_WAIT_SECONDS, poll: float = POLL_SECONDS) -> Iterator[bool]:
    """Hold the lock of the release's population (none for a release without one) while its
    publication is evaluated and written; yields whether it is held.

    The lock file sits beside the ledger (``.<ledger>.<digest of the population>.lock``,
    owner-only), so every process publishing into that ledger on this machine takes the same one.
    Raises TimeoutError after ``timeout`` seconds.
    """
    population = recorded_population(spec)
    if population is None:
        yield False
        return
    try:
        import fcntl
    except ImportError:  # no advisory locks on this platform: the ledger's transactions still hold
        yield False
        return
    ledger = Path(ledger_path)
    digest = hashlib.sha256(population.encode()).hexdigest()[:16]
    fd = os.open(ledger.with_name(f".{ledger.name}.{digest}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"another publication of population {population!r} held its lock for "
                                       f"more than {timeout:g} s") from None
                time.sleep(poll / 10)
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


__all__ = ["ORDER_WAIT_SECONDS", "POLL_SECONDS", "decides", "earlier_partition", "is_ordered", "population_lock", "previous_key",
           "wait_while_deciding"]
