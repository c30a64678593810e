"""The Spark engine's session and driver reads: the SparkSession it uses or starts, the scratch
folder frequency tables are written through, the digests of tables and the frequency tables the
driver reads (:mod:`.spark_frames`), and errors raised on the executors brought back to the
driver as themselves.

Passes over the rows are spared where the answer is already on the driver: a frequency table is
read once per DataFrame and columns (:meth:`SparkDriver.frequencies`: asked again, it is the one
read; a coarser one with first rows is rolled up on the driver from a finer one of the same
DataFrame), and the digest of a table whose size :meth:`SparkDriver.check_fits` counts rides on
that count's aggregation when it is wanted (:meth:`SparkDriver.wants_digest`). DataFrames are
immutable and the engine's are read once (the pseudonymized rows checkpointed, the published
ones persisted), so what the driver keeps is what Spark would count again."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from ..errors import UserError
from .base import DEFAULT_SPARK_MASTER
from .spark_frames import (
    COUNT_COLUMN,
    DEFAULT_MAX_DRIVER_CELLS,
    DEFAULT_MAX_WORKER_CELLS,
    FIRST_COLUMN,
    collect,
    digest_value,
    frequency_frame,
    published_columns,
    row_hash,
    scratch_folder,
    start_session,
    table_digest,
    to_pandas,
)

#: the key types a frequency table is rolled up over on the driver: grouped there exactly as
#: Spark groups them (floating-point keys are not: Spark folds NaN and -0.0, Arrow may not)
_ROLLED_KINDS = (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer, pa.types.is_boolean,
                 pa.types.is_date, pa.types.is_timestamp)


def executor_errors(action: Any) -> Any:
    """``action()``, with an error the project raised on an executor (a key store that is not the
    driver's, identifiers that cannot be read) raised again on the driver as itself, in one line
    (Spark wraps it in a Python traceback of the worker)."""
    import re

    from .. import errors

    try:
        return action()
    except Exception as exc:
        if type(exc).__name__ != "PythonException":
            raise
        found = re.findall(r"anon_dagster\.errors\.(\w+): (.+)", str(exc))
        if not found:
            raise
        name, message = found[-1]
        kind = getattr(errors, name, None)
        if not (isinstance(kind, type) and issubclass(kind, errors.UserError)) or kind is errors.SpecError:
            kind = errors.UserError
        raise kind(message.strip()) from None


class SparkDriver:
    """The Spark engine's session and the driver's reads (see the module docstring).

    ``spark``: a SparkSession to use (the engine then never stops it); without one the engine
    starts one on ``master`` (``local[2]`` by default) with ``conf`` and stops it on
    :meth:`close`. ``max_driver_cells``: the largest frequency table (rows × columns) the driver
    reads; a larger one is refused naming its size. ``max_worker_cells``: the most frequency cells
    (rows × columns) one executor is handed to cut a Mondrian part; a larger part's first cuts
    are made on Spark (:mod:`.spark_mondrian_top`). ``scratch_dir``: where Spark writes the
    frequency tables the driver reads (a fresh temporary folder by default: a local master; on a
    cluster, a folder the driver and the executors share).
    """

    def __init__(self, spark: Any = None, *, master: str = DEFAULT_SPARK_MASTER,
                 max_driver_cells: int = DEFAULT_MAX_DRIVER_CELLS, scratch_dir: str | Path | None = None,
                 max_worker_cells: int = DEFAULT_MAX_WORKER_CELLS, conf: dict[str, str] | None = None, app_name: str = "anon_dagster"):
        try:
            import pyspark  # noqa: F401
        except ImportError:
            raise UserError("the Spark engine needs pyspark: pip install 'anon_dagster[spark]'") from None
        self._spark = spark
        self._own = spark is None
        self.master = master
        self.max_driver_cells = int(max_driver_cells)
        self.max_worker_cells = int(max_worker_cells)
        self._scratch_dir = scratch_dir
        self._scratch: Path | None = None
        self._conf = dict(conf or {})
        self._app_name = app_name
        self._digests: dict[int, tuple[Any, str]] = {}
        self._wanted: dict[int, Any] = {}
        # (id of the DataFrame, columns, first_row) -> (the DataFrame, the table as read)
        self._tables: OrderedDict[tuple[int, tuple[str, ...], bool], tuple[Any, pa.Table]] = OrderedDict()

    # ----- the session --------------------------------------------------------------------------
    @property
    def spark(self) -> Any:
        """The session: the one given, else the process's active one (never stopped by the
        engine), else one started on ``master``."""
        if self._spark is None:
            from pyspark.sql import SparkSession

            active = SparkSession.getActiveSession()
            if active is not None:
                self._spark, self._own = active, False
            else:
                self._spark = start_session(self.master, self._app_name, self._conf)
        return self._spark

    @property
    def scratch(self) -> Path:
        if self._scratch is None:
            self._scratch = scratch_folder(self._scratch_dir)
        return self._scratch

    def close(self) -> None:
        """Stop the session the engine started (never one it was given); remove its scratch folder."""
        import shutil

        if self._own and self._spark is not None:
            self._spark.stop()
            self._spark = None
        if self._scratch is not None and self._scratch_dir is None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def digest(self, df: Any) -> str:
        """:func:`~.spark_frames.table_digest` of ``df``'s published columns, computed once per table."""
        known = self._digests.get(id(df))
        if known is not None and known[0] is df:
            return known[1]
        return self._remember_digest(df, table_digest(df, published_columns(df)))

    def _remember_digest(self, df: Any, value: str) -> str:
        self._digests[id(df)] = (df, value)
        self._wanted.pop(id(df), None)
        return value

    def wants_digest(self, df: Any) -> None:
        """Say that :meth:`digest` of ``df`` will be asked: the next :meth:`check_fits` of ``df``
        computes it in its own aggregation (one pass over the rows instead of two)."""
        known = self._digests.get(id(df))
        if known is None or known[0] is not df:
            self._wanted[id(df)] = df

    # ----- frequency tables ---------------------------------------------------------------------
    def check_fits(self, df: Any, columns: list[str], *, what: str, ways_out: str) -> int:
        """The number of rows of ``df``'s frequency table over ``columns``, counted on Spark
        (``groupBy(columns)`` then ``count``: nothing read by the driver). A table over
        ``max_driver_cells`` (rows × its columns, the count and the first row's position
        included, as :meth:`frequencies` would read it) is refused in one line naming its size,
        the budget and ``ways_out``, before Spark writes it for the driver.

        When :meth:`wants_digest` named ``df``, the same aggregation sums each group's row hashes
        (:func:`~.spark_frames.row_hash`), and the groups' sums give ``df``'s digest: the same
        integer as :func:`~.spark_frames.table_digest`'s sum over the rows."""
        from pyspark.sql import functions as F

        from .spark_frames import DriverLimit

        frame = frequency_frame(df, columns)
        width = max(len(frame.columns), 1)
        if self._wanted.get(id(df)) is df and columns:
            hashed = published_columns(df)
            grouped = df.groupBy(*[f"`{c}`" for c in columns]).agg(
                F.count(F.lit(1)).alias("n"), F.sum(row_hash(hashed)).alias("h"))
            got = grouped.agg(F.count(F.lit(1)).alias("groups"), F.sum("n").alias("n"),
                              F.sum("h").alias("h")).collect()[0]
            rows = int(got["groups"])
            self._remember_digest(df, digest_value(hashed, got["n"] or 0, got["h"]))
        else:
            rows = int(frame.count())
        cells = rows * width
        if cells > self.max_driver_cells:
            raise DriverLimit(f"{what} has {rows:,} rows x {width} columns = {cells:,} cells, more than the "
                              f"Spark engine holds on the driver (max_driver_cells={self.max_driver_cells:,}): "
                              f"{ways_out}")
        return rows

    def frequencies(self, df: Any, columns: list[str], *, first_row: bool = True,
                    what: str = "a frequency table") -> tuple[pd.DataFrame, pa.Schema]:
        """The frequency table of ``df`` over ``columns`` on the driver (counts in
        ``count``, first rows in ``__first``) and its Arrow schema.

        Read once per DataFrame: asked again for the same columns, the table read is handed
        again (a fresh pandas frame); asked for columns a table read with first rows contains, it
        is rolled up from that one on the driver (counts summed, the earliest first row kept:
        :func:`rolled_up`), which is the table Spark would count (without first rows, its rows
        in the order of their first rows, the order the rows hold them). The tables kept hold at
        most ``max_driver_cells`` cells in all (the oldest let go first)."""
        columns = list(columns)
        key = (id(df), tuple(columns), bool(first_row))
        kept = self._tables.get(key)
        table = kept[1] if kept is not None and kept[0] is df else None
        if table is None:
            table = self._roll_up(df, columns, first_row)
        if table is None:
            table = collect(frequency_frame(df, columns, first_row=first_row), scratch=self.scratch,
                            max_cells=self.max_driver_cells, what=what)
        self._keep(key, df, table)
        freq = to_pandas(table)
        if first_row and FIRST_COLUMN in freq.columns:
            freq = freq.sort_values(FIRST_COLUMN, kind="stable").reset_index(drop=True)
        return freq, table.schema

    def _roll_up(self, df: Any, columns: list[str], first_row: bool) -> pa.Table | None:
        """The table over ``columns`` rolled up from a finer one of ``df`` kept with first rows
        (or that one without its first rows)."""
        if not columns:
            return None
        for (_, finer, with_first), (frame, table) in reversed(self._tables.items()):
            if frame is not df or not with_first:
                continue
            if set(columns) < set(finer) or (not first_row and set(columns) == set(finer)):
                rolled = rolled_up(table, columns)
                if rolled is None or first_row:
                    return rolled
                return rolled.sort_by(FIRST_COLUMN).drop_columns([FIRST_COLUMN])
        return None

    def _keep(self, key: tuple[int, tuple[str, ...], bool], df: Any, table: pa.Table) -> None:
        self._tables.pop(key, None)
        self._tables[key] = (df, table)
        budget = self.max_driver_cells
        while sum(t.num_rows * max(t.num_columns, 1) for _, t in self._tables.values()) > budget:
            self._tables.popitem(last=False)


def rolled_up(table: pa.Table, columns: list[str]) -> pa.Table | None:
    """The frequency table over ``columns`` from ``table``, a finer one with first rows (its
    columns include ``columns``): each combination's counts summed and its earliest first row,
    missing values grouped together as Spark groups them. None when a key column is of a type
    not grouped on the driver (floating point, nested)."""
    if FIRST_COLUMN not in table.column_names or any(
            not any(kind(table.schema.field(c).type) for kind in _ROLLED_KINDS) for c in columns):
        return None
    grouped = table.group_by(columns, use_threads=False).aggregate(
        [(COUNT_COLUMN, "sum"), (FIRST_COLUMN, "min")])
    return pa.table({**{c: grouped[c] for c in columns}, COUNT_COLUMN: grouped[f"{COUNT_COLUMN}_sum"],
                     FIRST_COLUMN: grouped[f"{FIRST_COLUMN}_min"]})


__all__ = ["SparkDriver", "executor_errors", "rolled_up"]
