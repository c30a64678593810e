"""What ``benchmarks/spark.py`` measures around each step: CPU seconds and peak resident memory.

* **CPU** (:func:`tree_cpu`): user and system seconds of this process and every descendant,
  reaped ones counted through their parents (``/proc/<pid>/stat``).
* **Peak RSS** (:class:`MemorySampler`): a background thread reads, every ``interval`` seconds,
  the resident set (``VmRSS`` of ``/proc/<pid>/status``) of this process (the driver: the
  pandas engine, PySpark's driver and DuckDB all run in it), of the Spark JVM (descendants
  whose command is ``java``) and of the PySpark Python workers (every other descendant, summed),
  and keeps the highest value of each during a step. A peak between two samples can be missed;
  the JVM's resident set is bounded by its heap (``-Xmx``, ``spark.driver.memory``) plus its
  off-heap memory, and a JVM rarely hands pages back, so its figure is the high-water mark of
  the session up to that step.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

PAGE = os.sysconf("SC_PAGE_SIZE")


def _processes() -> dict[int, tuple[int, str, list[str]]]:
    """Every process: pid -> (parent pid, command name, the fields of ``/proc/<pid>/stat`` after it)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                head, tail = f.read().rsplit(")", 1)
        except OSError:
            continue
        fields = tail.split()
        found[int(entry)] = (int(fields[1]), head.split("(", 1)[1], fields)
    return found


def _descendants(found: dict[int, tuple[int, str, list[str]]]) -> list[int]:
    me, out = os.getpid(), []
    for pid in found:
        p = pid
        while p not in (0, 1) and p != me:
            p = found[p][0] if p in found else 0
        if p == me and pid != me:
            out.append(pid)
    return out


def tree_cpu() -> float:
    """CPU seconds of this process and every descendant (reaped ones through their parents)."""
    tick = os.sysconf("SC_CLK_TCK")
    found = _processes()
    pids = [os.getpid(), *_descendants(found)]
    return sum(sum(int(x) for x in found[p][2][11:15]) / tick for p in pids if p in found)


def rss(pid: int) -> int:
    """The resident set of ``pid`` in bytes (0 once it has ended)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


@dataclass
class Peaks:
    """The highest resident sets seen, in bytes: this process, the JVM(s), the Python workers summed."""

    driver: int = 0
    jvm: int = 0
    workers: int = 0

    def merge(self, other: Peaks) -> Peaks:
        return Peaks(max(self.driver, other.driver), max(self.jvm, other.jvm), max(self.workers, other.workers))


@dataclass
class MemorySampler:
    """Samples the resident sets in a background thread while in a ``with`` block (see the module docstring)."""

    interval: float = 0.05
    peaks: Peaks = field(default_factory=Peaks)

    def sample(self) -> None:
        found = _processes()
        jvm = workers = 0
        for pid in _descendants(found):
            if found[pid][1] == "java":
                jvm += rss(pid)
            else:
                workers += rss(pid)
        self.peaks = self.peaks.merge(Peaks(rss(os.getpid()), jvm, workers))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> MemorySampler:
        self._stop = threading.Event()
        self.sample()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


class Timer:
    """Wall clock and process-tree CPU seconds of a ``with`` block."""

    def __enter__(self) -> Timer:
        self.wall, self.cpu = time.perf_counter(), tree_cpu()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, tree_cpu() - self.cpu


@dataclass
class Measured:
    """A step's figures over its runs: median wall and CPU seconds, the peaks of all runs, the last result."""

    wall: float
    cpu: float
    peaks: Peaks
    result: object


def measure(fn: Callable[[], object], repeats: int) -> Measured:
    """``fn`` run ``repeats`` times, timed and sampled (:class:`Measured`)."""
    walls, cpus, peaks, result = [], [], Peaks(), None
    for _ in range(repeats):
        result = None
        with Timer() as t, MemorySampler() as memory:
            result = fn()
        walls.append(t.wall)
        cpus.append(t.cpu)
        peaks = peaks.merge(memory.peaks)
    return Measured(statistics.median(walls), statistics.median(cpus), peaks, result)


def gib(size: int) -> str:
    """``size`` bytes in GiB, two decimals."""
    return f"{size / 2**30:.2f} GiB"


def master_cores(master: str) -> int:
    """The cores a ``local[N]`` master runs on (``local``: 1, ``local[*]``: this machine's); else this machine's."""
    if master == "local":
        return 1
    if master.startswith("local[") and master.endswith("]"):
        inner = master[6:-1].split(",")[0]
        return (os.cpu_count() or 1) if inner == "*" else int(inner)
    return os.cpu_count() or 1
