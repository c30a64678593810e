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

A table is handed on (:func:`table_of_record`) only when the partition's latest outcome, as
the published step recorded it, is ``published`` (a refusal, or no outcome yet, hands on
nothing) and the ledger's current publication of the partition is that outcome's entry.

The table's asset is ``<release>/<table>`` (:func:`table_path`: the name of
``publication.table`` without its schema); its definition metadata carry the ``schema``, and
for a partitioned release the ``partition_expr`` (:func:`table_definition_metadata`).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import UserError
from ..io import numbers_if_lossless, table_format
from ..objectstore import ObjectPath, is_remote, read_bytes
from ..partitions import partition_window
from ..spec import ReleaseSpec
from .ledger import Ledger, Publication
from .refusal_feed import OUTCOME_KEY


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


def table_path(spec: ReleaseSpec) -> list[str] | None:
    """``[<release>, <table>]`` (the table's name without its schema); None without ``publication.table``."""
    return [spec.release, spec.publication.table.rpartition(".")[2]] if spec.publication.table else None


def table_definition_metadata(spec: ReleaseSpec, partitioned: bool) -> dict[str, Any]:
    """What a database IO manager reads from the definition: the ``schema``, and the ``partition_expr``."""
    schema = spec.publication.table.rpartition(".")[0] if spec.publication.table else ""
    out: dict[str, Any] = {"schema": schema} if schema else {}
    if partitioned:
        out["partition_expr"] = spec.publication.table_partition_column
    return out


def table_description(spec: ReleaseSpec) -> str:
    return (f"{spec.release}'s publication as the table {spec.publication.table}, through the IO manager "
            f"{spec.publication.io_manager!r}: only a partition whose latest outcome is published, its rows read "
            "back from the file of record and checked against the ledger's SHA-256. A refused partition writes "
            "nothing.")


def table_of_record(spec: ReleaseSpec, ledger: Callable[[], Ledger], partition: str | None,
                    outcome: Mapping[str, Any], published: str) -> tuple[pd.DataFrame, Publication]:
    """The partition's table and entry when ``outcome`` (the latest outcome of the published step
    ``published``, plain values by name; empty: none) is ``published`` and its ``ledger_entry`` the
    current one of the ledger ``ledger()`` opens (see the module docstring); TableRefused otherwise."""
    where = f"{spec.release} {partition or ''}".strip()
    if outcome.get(OUTCOME_KEY) != "published":
        said = f"was {outcome[OUTCOME_KEY]}" if OUTCOME_KEY in outcome else "has no outcome yet"
        raise TableRefused(f"{where}: the publication {said} ({published}): nothing written to {spec.publication.table}")
    table, entry = publication_table(spec, ledger(), partition)
    if outcome.get("ledger_entry") not in (None, entry.id):
        raise TableRefused(f"{where}: the ledger's current publication (entry {entry.id}) is not the one {published} "
                           f"published (entry {outcome['ledger_entry']}): nothing written")
    return table, entry


__all__ = ["TableRefused", "current_entry", "parse_publication", "publication_bytes", "publication_table",
           "table_definition_metadata", "table_description", "table_of_record", "table_path"]
