"""A write-only binary file that hands every write on and keeps what identifies the content."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any


class ByteSink:
    """A binary file object (``write``, ``tell``, ``flush``) for writers that stream into a file
    (pyarrow's ``ParquetWriter``, ``DataFrame.to_csv``): each write is passed to ``emit``, and
    ``size`` and ``sha256`` are those of all the bytes written so far, in order."""

    def __init__(self, emit: Callable[[memoryview], None]):
        self._emit = emit
        self._hash = hashlib.sha256()
        self.size = 0
        self.closed = False

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        if view.nbytes:
            self._emit(view)
            self._hash.update(view)
            self.size += view.nbytes
        return view.nbytes

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        pass

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True

    def sha256(self) -> str:
        """The SHA-256 (hex) of the bytes written."""
        return self._hash.hexdigest()


# How a streamed file is produced: called once with the sink to write the whole content into.
Produce = Callable[[ByteSink], None]

__all__ = ["ByteSink", "Produce"]
