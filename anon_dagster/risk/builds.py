"""How many equivalence-class builds a process has made: a pipeline asserts one per table and step.

Every :class:`~anon_dagster.risk.classes.EquivalenceClasses` counts itself here when it is built;
:func:`class_builds` reads the process-wide total and :func:`counting_class_builds` the builds of
one ``with`` block.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

# How many EquivalenceClasses this process has built (see class_builds); a lock because
# Dagster may run several measurements in threads of one process.
_builds = 0
_builds_lock = threading.Lock()


def class_builds() -> int:
    """The number of equivalence-class builds in this process so far."""
    return _builds


def count_build() -> None:
    """Count one build (each new :class:`~anon_dagster.risk.classes.EquivalenceClasses` calls it)."""
    global _builds
    with _builds_lock:
        _builds += 1


class ClassBuildCount:
    """The class builds of one :func:`counting_class_builds` block.

    ``count`` is the number of classes built since the block began; once the block has ended it
    stays at the number built inside it.
    """

    def __init__(self) -> None:
        self._start = class_builds()
        self._end: int | None = None

    @property
    def count(self) -> int:
        return (self._end if self._end is not None else class_builds()) - self._start

    def __repr__(self) -> str:
        return f"ClassBuildCount(count={self.count})"


@contextmanager
def counting_class_builds() -> Iterator[ClassBuildCount]:
    """Count the equivalence classes built inside a ``with`` block.

    The counter is process-wide: builds by other threads during the block are counted too.
    """
    counter = ClassBuildCount()
    try:
        yield counter
    finally:
        counter._end = class_builds()


__all__ = ["ClassBuildCount", "class_builds", "count_build", "counting_class_builds"]
