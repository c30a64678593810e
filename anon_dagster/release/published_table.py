"""A publication as a table: the rows of the file of record, proven to be the ones the ledger recorded.

Definitions.

- The *publication of record* of a partition is its current ledger entry (published, not
  superseded) and the file the publication protocol placed for it (:mod:`.publication`).
- Its *table* is that file's rows, read back from the file (local or on object storage) and
  accepted only when the SHA-256 of the bytes read equals the entry's ``file_hash``: a table is
  never made of anything but what the gate let through and the protocol placed (a file changed
  or replaced since is refused, nothing handed on). For a partitioned release each row also
  carries its partition's start (``publication.table_partition_column``, a timestamp), the
  column a database IO manager replaces one partition by.

Nothing here decides whether a partition is published: the caller gives the entry only once
the partition's latest outcome is ``published`` (the Dagster layer: :mod:`anon_dagster.dagster.table_target`).
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import pandas as pd

from ..errors import UserError
from ..io import numbers_if_lossless, table_format
from ..objectstore import ObjectPath, is_remote, read_bytes
from ..partitions import partition_window
from ..spec import ReleaseSpec
from .ledger import Ledger, Publication


class TableRefused(UserError):
    """No table for a partition: nothing published, or a file that is not the one recorded."""


def current_entry(spec: ReleaseSpec, ledger: Ledger, partition: str | None) -> Publication:
    """The partition's publication of record; TableRefused when it has none."""
    entry = ledger.current(spec.release, partition)
    if entry is None or entry.published_path is None or entry.file_hash is None:
        raise TableRefused(f"{spec.release} {partition or ''}: nothing is published for this partition "
                           "(no current publication in the ledger): nothing written")
    return entry


def publication_bytes(entry: Publication) -> bytes:
    """The bytes of the entry's file, proven by its SHA-256; TableRefused otherwise."""
    where = entry.published_path or ""
    data = read_bytes(ObjectPath.parse(where)) if is_remote(where) else _local_bytes(Path(where))
    if data is None or hashlib.sha256(data).hexdigest() != entry.file_hash:
        state = "is missing" if data is None else "is not the file the ledger recorded (SHA-256 differs)"
        raise TableRefused(f"{entry.release} {entry.partition or ''}: the publication's file {where} {state}: "
                           "nothing written (anon-dagster ledger reconcile tells what is in place)")
    return data


def _local_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def parse_publication(data: bytes, name: str) -> pd.DataFrame:
    """A published file's rows (csv or parquet by its name): a csv column as numbers only when
    that loses nothing (:func:`~anon_dagster.io.numbers_if_lossless`), as the file is read."""
    if table_format(name) == "parquet":
        return pd.read_parquet(io.BytesIO(data))
    table = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False, na_values=[""])
    return table.apply(numbers_if_lossless)


def publication_table(spec: ReleaseSpec, ledger: Ledger, partition: str | None) -> tuple[pd.DataFrame, Publication]:
    """The partition's table (see the module docstring) and the entry it is the publication of."""
    entry = current_entry(spec, ledger, partition)
    table = parse_publication(publication_bytes(entry), Path(str(entry.published_path)).name)
    if partition is not None and spec.partitions is not None:
        start, _ = partition_window(spec, partition)
        table[spec.publication.table_partition_column] = pd.Series([start] * len(table), dtype="datetime64[ns]")
    return table, entry


__all__ = ["TableRefused", "current_entry", "parse_publication", "publication_bytes", "publication_table"]
