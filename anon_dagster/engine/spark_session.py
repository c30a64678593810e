"""The Spark engine's session and driver reads: the SparkSession it uses or starts, the scratch
folder frequency tables are written through, the digests of tables and the frequency tables the
driver reads (:mod:`.spark_frames`), and errors raised on the executors brought back to the
driver as themselves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from ..errors import UserError
from .base import DEFAULT_SPARK_MASTER
from .spark_frames import (
    DEFAULT_MAX_DRIVER_CELLS,
    FIRST_COLUMN,
    collect,
    frequency_frame,
    published_columns,
    scratch_folder,
    start_session,
    table_digest,
    to_pandas,
)


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
    reads; a larger one is refused naming its size. ``scratch_dir``: where Spark writes the
    frequency tables the driver reads (a fresh temporary folder by default: a local master; on a
    cluster, a folder the driver and the executors share).
    """

    def __init__(self, spark: Any = None, *, master: str = DEFAULT_SPARK_MASTER,
                 max_driver_cells: int = DEFAULT_MAX_DRIVER_CELLS, scratch_dir: str | Path | None = None,
                 conf: dict[str, str] | None = None, app_name: str = "anon_dagster"):
        try:
            import pyspark  # noqa: F401
        except ImportError:
            raise UserError("the Spark engine needs pyspark: pip install 'anon_dagster[spark]'") from None
        self._spark = spark
        self._own = spark is None
        self.master = master
        self.max_driver_cells = int(max_driver_cells)
        self._scratch_dir = scratch_dir
        self._scratch: Path | None = None
        self._conf = dict(conf or {})
        self._app_name = app_name
        self._digests: dict[int, tuple[Any, str]] = {}

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
        value = table_digest(df, published_columns(df))
        self._digests[id(df)] = (df, value)
        return value

    # ----- frequency tables ---------------------------------------------------------------------
    def check_fits(self, df: Any, columns: list[str], *, what: str, ways_out: str) -> int:
        """The number of rows of ``df``'s frequency table over ``columns``, counted on Spark
        (``groupBy(columns)`` then ``count``: nothing read by the driver). A table over
        ``max_driver_cells`` (rows × its columns, the count and the first row's position
        included, as :meth:`frequencies` would read it) is refused in one line naming its size,
        the budget and ``ways_out``, before Spark writes it for the driver."""
        from .spark_frames import DriverLimit

        frame = frequency_frame(df, columns)
        rows = int(frame.count())
        width = max(len(frame.columns), 1)
        cells = rows * width
        if cells > self.max_driver_cells:
            raise DriverLimit(f"{what} has {rows:,} rows x {width} columns = {cells:,} cells, more than the "
                              f"Spark engine holds on the driver (max_driver_cells={self.max_driver_cells:,}): "
                              f"{ways_out}")
        return rows

    def frequencies(self, df: Any, columns: list[str], *, first_row: bool = True,
                    what: str = "a frequency table") -> tuple[pd.DataFrame, pa.Schema]:
        """The frequency table of ``df`` over ``columns`` on the driver (counts in
        ``count``, first rows in ``__first``) and its Arrow schema."""
        table = collect(frequency_frame(df, columns, first_row=first_row), scratch=self.scratch,
                        max_cells=self.max_driver_cells, what=what)
        freq = to_pandas(table)
        if first_row and FIRST_COLUMN in freq.columns:
            freq = freq.sort_values(FIRST_COLUMN, kind="stable").reset_index(drop=True)
        return freq, table.schema


__all__ = ["SparkDriver", "executor_errors"]
