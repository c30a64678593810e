"""The rows a publication writes, as a file streamed into the staged target.

*Published rows* are the published columns of the table the evaluation judged, in the rows'
source order. The pandas engine hands them as a DataFrame (:func:`frame_rows`, the file's bytes
made in memory); the Spark engine writes them from the executors and streams them into the
target one row group at a time (:func:`anon_dagster.engine.spark_publication.spark_rows`), so
no engine holds the whole published table on the driver.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from ..byte_sink import ByteSink
from ..io import table_format


@dataclass(frozen=True)
class PublishedRows:
    """``rows`` rows of the columns ``names``, which ``write(sink, name)`` streams into ``sink``
    in the format of the file ``name`` (csv or parquet); ``dtypes()`` gives each column's dtype
    as a reader of the written file gets it."""

    rows: int
    names: list[str]
    write: Callable[[ByteSink, str], None]
    dtypes: Callable[[], dict[str, str]]

    @property
    def columns(self) -> list[tuple[str, str]]:
        """(name, dtype) of each column."""
        dtypes = self.dtypes()
        return [(name, dtypes[name]) for name in self.names]


def table_bytes(table: pd.DataFrame, name: str) -> bytes:
    """``table`` as the bytes of a csv or parquet file (format by the name's suffix)."""
    if table_format(name) == "parquet":
        buffer = io.BytesIO()
        table.to_parquet(buffer, index=False)
        return buffer.getvalue()
    return table.to_csv(index=False).encode("utf-8")


def frame_rows(table: pd.DataFrame) -> PublishedRows:
    """The rows of ``table`` (every column published), written as :func:`table_bytes`."""
    return PublishedRows(len(table), [str(c) for c in table.columns],
                         lambda sink, name: sink.write(table_bytes(table, name)),
                         lambda: {str(c): str(table[c].dtype) for c in table.columns})


__all__ = ["PublishedRows", "frame_rows", "table_bytes"]
