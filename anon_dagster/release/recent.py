"""Results kept in this process for the steps that ask for them again (the checks, then the
publication step's re-verification): :class:`Recent`."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Recent(Generic[V]):
    """The ``size`` values stored or asked for last, by key; the one unused longest goes first."""

    def __init__(self, size: int):
        self.size = size
        self._values: OrderedDict[Hashable, V] = OrderedDict()

    def get(self, key: Hashable) -> V | None:
        """The value kept under ``key`` (now the most recently used), or None."""
        if key not in self._values:
            return None
        self._values.move_to_end(key)
        return self._values[key]

    def put(self, key: Hashable, value: V) -> None:
        """Keep ``value`` under ``key``, forgetting the least recently used beyond ``size``."""
        self._values[key] = value
        self._values.move_to_end(key)
        while len(self._values) > self.size:
            self._values.popitem(last=False)

    def clear(self) -> None:
        """Forget every value."""
        self._values.clear()

    def __len__(self) -> int:
        return len(self._values)


__all__ = ["Recent"]
