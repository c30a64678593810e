"""A Spark step's table kept between steps: written as a parquet folder, read back verified.

The orchestrator stores the value :class:`~anon_dagster.release.stored_table.StoredTable`, never
the rows. :func:`store_table` writes every column of a Spark DataFrame (the row positions, the
linkage pseudonyms and the other internal columns included, so the next step sees the table as
the step left it) into a new folder, owner-only, and returns the value naming it with its digest
and row count (read from the part files' footers: no pass over the rows). :func:`load_table`
verifies the folder against the digest, then reads it with Spark as it was written.

:func:`driver_rows` brings a stored table's columns to the driver as pandas, for the few rows
a step needs there (the rows of erased persons the publication looks for last): refused beyond
the engine's ``max_driver_cells`` (rows × columns) in one line naming the size, before anything
is read. The published rows never come this way: Spark writes them and the driver streams them
into the file of record (:mod:`.spark_publication`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from ..errors import DataError
from ..release.stored_table import StoredTable, folder_digest, part_files
from ..storage import make_private_dirs
from .spark_frames import ROW_COLUMN, DriverLimit, collect, to_pandas


def store_table(df: Any, location: Path, base: Path, *, record: str | None = None,
                categories: dict[str, list[str]] | None = None) -> StoredTable:
    """Write ``df`` into the new folder ``location`` (below ``base``, every folder from ``base``
    down mode 0700, the files 0600) and return the value naming it (see the module docstring)."""
    make_private_dirs(location.parent, base)
    df.write.mode("errorifexists").parquet(str(location))
    location.chmod(0o700)
    for entry in location.iterdir():
        if entry.is_file():
            os.chmod(entry, 0o600)
    parts = part_files(location)
    rows = sum(pq.ParquetFile(p).metadata.num_rows for p in parts)
    return StoredTable(str(location), folder_digest(location), int(rows), tuple(df.columns), record,
                       dict(categories or {}))


def load_table(engine: Any, stored: StoredTable) -> Any:
    """The Spark DataFrame of ``stored``, once its folder is verified against its digest."""
    stored.verify()
    if not part_files(stored.path):
        raise DataError(f"{stored.location}: the stored table has no part file")
    return engine.spark.read.parquet(stored.location)


def driver_rows(engine: Any, df: Any, columns: Sequence[str], rows: int, *, what: str) -> pd.DataFrame:
    """``df``'s ``columns`` on the driver as pandas, in the rows' source order (:data:`ROW_COLUMN`);
    ``rows`` is its row count (the stored table's). Refused in one line naming the size when
    rows × columns exceeds the engine's ``max_driver_cells``."""
    from pyspark.sql import functions as F

    columns = list(columns)
    cells = int(rows) * max(len(columns), 1)
    if cells > engine.max_driver_cells:
        raise DriverLimit(f"{what} has {rows:,} rows x {len(columns)} columns = {cells:,} cells, more than the "
                          f"Spark engine holds on the driver (max_driver_cells={engine.max_driver_cells:,}): raise "
                          "max_driver_cells on a driver with the memory for it, split the release into partitions, "
                          "or use the pandas engine")
    picked = df.select(*[F.col(f"`{c}`") for c in columns],
                       *([F.col(ROW_COLUMN)] if ROW_COLUMN in df.columns and ROW_COLUMN not in columns else []))
    # the positions travel with the rows to order them, beyond the budget counted above
    extra = int(rows) * (len(picked.columns) - len(columns))
    table = to_pandas(collect(picked, scratch=engine.scratch, max_cells=engine.max_driver_cells + extra, what=what))
    if ROW_COLUMN in table.columns:
        table = table.sort_values(ROW_COLUMN, kind="stable").reset_index(drop=True)
    return table[columns] if len(table.columns) else pd.DataFrame({c: [] for c in columns})


__all__ = ["driver_rows", "load_table", "store_table"]
