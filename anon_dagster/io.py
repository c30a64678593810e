"""Reading and atomically writing tables (csv or parquet, chosen by suffix) and JSON values."""

from __future__ import annotations

import dataclasses
import io
import math
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import date, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import objectstore
from .errors import DataError


def table_format(path: str | Path | objectstore.ObjectPath) -> str:
    suffix = (path.suffix if isinstance(path, objectstore.ObjectPath) else Path(path).suffix).lower()
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix in (".csv", ".txt", ".tsv"):
        return "csv"
    raise DataError(f"{path}: unknown table format {suffix!r} (use .csv or .parquet)")


def read_table(path: str | Path | objectstore.ObjectPath, separator: str | None = None, fmt: str | None = None, *,
               text_columns: Iterable[str] = (), raw_columns: Iterable[str] = ()) -> pd.DataFrame:
    """Read a csv or parquet file; a bad or missing file raises DataError naming it.

    CSV separators are sniffed (``,`` ``;`` tab) unless given. Columns are read as they are
    typed in the file; empty cells become missing values. A csv column becomes numbers only
    when that loses nothing (:func:`numbers_if_lossless`).

    ``text_columns`` (identifiers) are read as the exact text of their values, never as
    numbers: in a csv the text of the cell (only an empty cell is missing: ``NA`` or ``null``
    is someone's identifier); in a parquet file strings as stored, integers as their decimal
    digits (``12345678901234567890``, never ``1.2345678901234567e19``). A parquet identifier
    stored as floating-point numbers is refused: a float does not hold an identifier exactly
    (digits past the 16th are lost, ``1.0`` and ``1`` would be one person).

    ``raw_columns`` (csv only: date columns) keep the text of their cells, so that one date
    format is chosen for the whole column (:mod:`anon_dagster.dates`), not numbers.

    ``path`` may be an object-storage location (``s3://bucket/key``, :mod:`anon_dagster.objectstore`):
    the object is read whole and parsed by the same rules.
    """
    path = objectstore.location(path)
    fmt = fmt or table_format(path)
    text = set(text_columns)
    raw = set(raw_columns) | text
    source: Path | io.BytesIO = path if isinstance(path, Path) else _object_bytes(path)
    if isinstance(path, Path) and not path.exists():
        raise DataError(f"{path}: no such file")
    try:
        if fmt == "parquet":
            return _read_parquet(path, text, source)
        if separator is None:
            separator = sniffed_separator(first_line(source))
        # every cell as its text; only empty cells are missing here, the usual missing-value
        # spellings (NA, null, ...) are applied below to the columns that are not identifiers
        df = pd.read_csv(source, sep=separator, encoding="utf-8-sig", dtype=str, keep_default_na=False,
                         na_values=[""])
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read as {fmt}: {objectstore.describe(exc)}") from None
    for column in df.columns:
        if column in text:
            continue
        values = df[column].mask(df[column].isin(MISSING_SPELLINGS))
        df[column] = values if column in raw else numbers_if_lossless(values)
    return df


# What pandas reads as a missing value by default (besides the empty cell); identifiers are
# exempt: "NA" or "Null" may be someone's code or name.
MISSING_SPELLINGS = frozenset({
    "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>",
    "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
})


def _object_bytes(loc: objectstore.ObjectPath) -> io.BytesIO:
    """The whole object at ``loc``, to be parsed as a local file is; DataError when there is none."""
    try:
        data = objectstore.read_bytes(loc)
    except objectstore.LocationError as exc:
        raise DataError(str(exc)) from None
    if data is None:
        raise DataError(f"{loc}: no such object")
    return io.BytesIO(data)


def sniffed_separator(header: str) -> str:
    """The csv separator a header line uses: the most frequent of ``,`` ``;`` and tab."""
    return max((",", ";", "\t"), key=header.count)


def first_line(source: Path | io.BytesIO) -> str:
    """The first line of a csv file or of the bytes of one (to sniff its separator)."""
    if isinstance(source, io.BytesIO):
        return source.getvalue().split(b"\n", 1)[0].decode("utf-8-sig")
    with open(source, encoding="utf-8-sig") as handle:
        return handle.readline()


def _read_parquet(path: Path | objectstore.ObjectPath, text: set[str],
                  source: Path | io.BytesIO | None = None) -> pd.DataFrame:
    """A parquet file as a DataFrame; ``text`` columns as the exact text of their values.
    ``source``: where its bytes are (``path`` itself for a local file)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(path if source is None else source, use_pandas_metadata=True)
    converted = {}
    for name in text & set(table.column_names):
        column = table.column(name)
        kind = column.type
        if pa.types.is_dictionary(kind):
            column, kind = column.cast(kind.value_type), kind.value_type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind):
            continue
        if pa.types.is_floating(kind):
            raise DataError(
                f"{path}: identifier column {name!r} is stored as floating-point numbers ({kind}): a float "
                "does not hold an identifier exactly (digits past the 16th are lost, 1.0 and 1 would be "
                "one person); store it as text or integers"
            )
        if not (pa.types.is_integer(kind) or pa.types.is_decimal(kind)):
            raise DataError(f"{path}: identifier column {name!r} is stored as {kind}: store identifiers "
                            "as text or integers")
        converted[name] = pc.cast(column, pa.string())
    df = table.to_pandas()
    for name, column in converted.items():  # replaced after: the pandas metadata types the originals
        df[name] = column.to_pandas().to_numpy()
    return df


_LEADING_ZERO = r"^\s*[+-]?0\d"
_INT64 = (-(2**63), 2**63 - 1)
# float64 holds every decimal number of at most 15 significant digits exactly (as its shortest repr)
_EXACT_DIGITS = 15


def numbers_if_lossless(column: pd.Series) -> pd.Series:
    """A csv column as numbers when that loses nothing, else as the strings read.

    Codes such as postal code ``08012`` or province ``08`` keep their leading zeros (reading
    them as numbers would silently publish ``8012``); a column converts only when every
    non-missing cell parses as a number and none starts with a zero followed by a digit.
    Integral columns become int64 (or nullable Int64 when they have missing cells), and stay
    text when a value does not fit in int64 (``12345678901234567890``); other numbers become
    floats, and stay text when a value has more digits than a float holds
    (``0.12345678901234567``).
    """
    present = column.dropna()
    if present.empty or present.str.contains(_LEADING_ZERO, regex=True).any():
        return column
    numbers = pd.to_numeric(column, errors="coerce")
    if numbers[column.notna()].isna().any():
        return column
    long = present[present.str.count(r"\d") > _EXACT_DIGITS].unique()
    integral = not present.str.contains(r"[.eE]", regex=True).any() and bool((numbers.dropna() % 1 == 0).all())
    if integral:
        if len(long) == 0:
            exact = numbers.astype("Int64")
        elif all(_INT64[0] <= int(text) <= _INT64[1] for text in long):
            # digits a float would round: each value read as the integer written
            exact = pd.Series([pd.NA if pd.isna(t) else int(t) for t in column], index=column.index,
                              name=column.name, dtype="Int64")
        else:
            return column
        return exact if exact.isna().any() else exact.astype("int64")
    if any(not _float_holds(text) for text in long):
        return column
    return numbers.astype("float64")


def _float_holds(text: str) -> bool:
    """Whether the float read from ``text`` is the decimal number written (as its shortest repr)."""
    from decimal import Decimal, InvalidOperation

    try:
        written = Decimal(text.strip())
        value = float(text)
    except (InvalidOperation, ValueError):
        return False
    return math.isfinite(value) and Decimal(repr(value)) == written


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
