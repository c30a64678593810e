"""Reading and atomically writing tables (csv or parquet, chosen by suffix) and JSON values."""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import date, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import DataError


def table_format(path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix in (".csv", ".txt", ".tsv"):
        return "csv"
    raise DataError(f"{path}: unknown table format {suffix!r} (use .csv or .parquet)")


def read_table(path: str | Path, separator: str | None = None, fmt: str | None = None) -> pd.DataFrame:
    """Read a csv or parquet file; a bad or missing file raises DataError naming it.

    CSV separators are sniffed (``,`` ``;`` tab) unless given. Columns are read as they are
    typed in the file; empty cells become missing values.
    """
    path = Path(path)
    fmt = fmt or table_format(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    try:
        if fmt == "parquet":
            return pd.read_parquet(path)
        if separator is None:
            with open(path, encoding="utf-8-sig") as handle:
                head = handle.readline()
            separator = max((",", ";", "\t"), key=head.count)
        df = pd.read_csv(path, sep=separator, encoding="utf-8-sig", dtype=str, keep_default_na=True)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read as {fmt}: {str(exc).splitlines()[0]}") from None
    for column in df.columns:
        df[column] = numbers_if_lossless(df[column])
    return df


_LEADING_ZERO = r"^\s*[+-]?0\d"


def numbers_if_lossless(column: pd.Series) -> pd.Series:
    """A csv column as numbers when that loses nothing, else as the strings read.

    Codes such as postal code ``08012`` or province ``08`` keep their leading zeros (reading
    them as numbers would silently publish ``8012``); a column converts only when every
    non-missing cell parses as a number and none starts with a zero followed by a digit.
    Integral columns become int64 (or nullable Int64 when they have missing cells).
    """
    present = column.dropna()
    if present.empty or present.str.contains(_LEADING_ZERO, regex=True).any():
        return column
    numbers = pd.to_numeric(column, errors="coerce")
    if numbers[column.notna()].isna().any():
        return column
    if (numbers.dropna() % 1 == 0).all() and not present.str.contains(r"[.eE]", regex=True).any():
        return numbers.astype("Int64") if numbers.isna().any() else numbers.astype("int64")
    return numbers


def write_table_atomic(df: pd.DataFrame, path: str | Path, mode: int = 0o600) -> Path:
    """Write ``df`` to ``path`` (format by suffix) through a temporary file and a rename.

    Readers see either the previous file or the complete new one, never a partial write. The
    file is created with permissions ``mode`` (owner-only by default).
    """
    path = Path(path)
    fmt = table_format(path)
    with _atomic_target(path, mode) as tmp:
        if fmt == "parquet":
            df.to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, index=False)
    return path


def write_bytes_atomic(data: bytes, path: str | Path, mode: int = 0o600) -> Path:
    """Write bytes to ``path`` atomically (temporary file, fsync, rename), with ``mode``."""
    path = Path(path)
    with _atomic_target(path, mode) as tmp, open(tmp, "wb") as handle:
        handle.write(data)
    return path


@contextmanager
def _atomic_target(path: Path, mode: int) -> Iterator[str]:
    """A temporary file beside ``path``, created with permissions ``mode``, to be written in the
    block; then flushed to disk and renamed onto ``path``. On any failure it is removed and
    ``path`` is left as it was (readers never see a half-written file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        try:
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        yield tmp
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def plain_json(value: Any, digits: int | None = None) -> Any:
    """``value`` as plain JSON types, for files, reports and metadata.

    Numpy scalars and arrays are unwrapped, NaN and infinities become None, tuples lists, sets
    sorted lists, dataclasses and objects with ``to_dict()`` dicts, dates ISO text, mapping keys
    text, anything else its ``str``. ``digits`` rounds floats to that many significant digits
    (None keeps them exact).
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = value.to_dict() if hasattr(value, "to_dict") else dataclasses.asdict(value)
    elif hasattr(value, "to_dict") and callable(value.to_dict) and not isinstance(value, Mapping):
        try:
            value = value.to_dict()
        except TypeError:  # a to_dict() that needs arguments is not a plain conversion
            pass
    if isinstance(value, Mapping):
        return {str(k): plain_json(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [plain_json(v, digits) for v in value]
        return sorted(items, key=str) if isinstance(value, set | frozenset) else items
    if isinstance(value, np.ndarray):
        return [plain_json(v, digits) for v in value.tolist()]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        x = float(value)
        if not math.isfinite(x):
            return None
        return x if digits is None else float(f"{x:.{digits}g}")
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    return str(value)
