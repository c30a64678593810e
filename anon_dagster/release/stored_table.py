"""A step's table kept outside the orchestrator's storage: where it is, and the hash that proves it.

An engine that keeps a step's rows where they are processed (the Spark engine: a parquet
folder its executors write) hands the next step a :class:`StoredTable` instead of the rows.

Definitions.

- *location*: the folder of parquet part files holding the step's table, every column of it
  (the engine's internal ones included), under the release's storage folder, owner-only;
- *digest*: ``sha256:`` and the SHA-256 of the folder's part files (file names sorted, each name
  and its bytes), computed when the table is written (:func:`folder_digest`). A table read
  back is accepted only when its folder still has this digest (:meth:`StoredTable.verify`): a
  folder changed, replaced or removed since is refused, naming the location. The digest is the
  table's identity wherever a table hash is asked for (the evaluation memo's key);
- *rows*, *columns*: the table's row count and column names (internal ones included);
- *record*, *categories*: an anonymized table's transformation record (its JSON form) and the labels of
  each generalized column in the order the pandas engine's categoricals hold them; what the
  pandas pipeline carries in the table's ``attrs``.

The value is small and plain: the orchestrator's IO manager stores it under the step's
at-rest policy (:mod:`.step_storage`), so it is encrypted and authenticated like any stored
table when a key store opens.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DataError

# the one column of the frame a StoredTable is stored as (:meth:`StoredTable.as_frame`)
MARKER_COLUMN = "__anon_stored_table"
PART_SUFFIX = ".parquet"


def part_files(folder: Path) -> list[Path]:
    """The parquet part files of ``folder`` (Spark's ``part-*.parquet``), sorted by name."""
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(PART_SUFFIX)
                  and not p.name.startswith((".", "_")))


def folder_digest(folder: Path) -> str:
    """``sha256:`` and the SHA-256 of ``folder``'s part files, each one's name and bytes in name
    order (see the module docstring); DataError naming the folder when it cannot be read."""
    digest = hashlib.sha256()
    try:
        for part in part_files(folder):
            digest.update(part.name.encode() + b"\0")
            with part.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            digest.update(b"\0")
    except OSError as exc:
        raise DataError(f"{folder}: the stored table cannot be read ({exc.strerror or type(exc).__name__})") from None
    return "sha256:" + digest.hexdigest()


@dataclass(frozen=True)
class StoredTable:
    """A step's table in a parquet folder (see the module docstring)."""

    location: str
    digest: str
    rows: int
    columns: tuple[str, ...]
    record: dict[str, Any] | None = None
    categories: dict[str, list[str]] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return Path(self.location)

    def verify(self) -> None:
        """Refuse, in one line naming the location, a folder that is not the one written."""
        if not self.path.is_dir():
            raise DataError(f"{self.location}: the stored table is missing (materialize its step again)")
        if folder_digest(self.path) != self.digest:
            raise DataError(f"{self.location}: the stored table is not the one its step wrote (its SHA-256 "
                            "differs): materialize its step again")

    def as_frame(self) -> pd.DataFrame:
        """The value as a one-cell table, stored as a step's table is (:mod:`.step_storage`)."""
        return pd.DataFrame({MARKER_COLUMN: [json.dumps(asdict(self), sort_keys=True)]})

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> StoredTable:
        """The value :meth:`as_frame` stored."""
        data: dict[str, Any] = json.loads(str(frame[MARKER_COLUMN].iloc[0]))
        return cls(data["location"], data["digest"], int(data["rows"]), tuple(data["columns"]),
                   data.get("record"), {k: list(v) for k, v in (data.get("categories") or {}).items()})


def is_marker(frame: pd.DataFrame) -> bool:
    """Whether a stored frame is a :class:`StoredTable` (:meth:`StoredTable.as_frame`)."""
    return list(frame.columns) == [MARKER_COLUMN] and len(frame) == 1


__all__ = ["MARKER_COLUMN", "StoredTable", "folder_digest", "is_marker", "part_files"]
