"""Dates read with one format per column: the partition column and date hierarchies.

Definition: a text date column is read with a single strftime format, the declared one
(``partitions.format``, ``columns.<name>.hierarchy.format``) or, when none is declared, the one
format of :data:`CANDIDATES` that reads every value. Values are never parsed one by one with
guesses: in a DD/MM/YYYY file that would read ``05/01/2024`` as May and ``13/01/2024`` as
January. When several candidates read every value with different results (``05/01/2024`` is 5
January or 1 May) the column is refused, and the error asks for the format to be declared. A
value the format does not read stops the ingest, naming the column and the row.

Date and datetime columns (parquet) are used as they are; time-zone-aware values are taken in
UTC. Integers (a parquet ``20240105``) are read as their digits.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import date, datetime

import numpy as np
import pandas as pd

from .errors import DataError

_ISO = "ISO8601"  # pandas' ISO 8601 reader: a date, optionally a time and an offset

# (format, the shape every value must have): tried in this order when no format is declared
_TIME = r"(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?"
CANDIDATES: tuple[tuple[str, str], ...] = (
    (_ISO, r"\d{4}-\d{1,2}-\d{1,2}" + _TIME),
    ("%d/%m/%Y", r"\d{1,2}/\d{1,2}/\d{4}"),
    ("%m/%d/%Y", r"\d{1,2}/\d{1,2}/\d{4}"),
    ("%d/%m/%Y %H:%M", r"\d{1,2}/\d{1,2}/\d{4} \d{1,2}:\d{2}"),
    ("%m/%d/%Y %H:%M", r"\d{1,2}/\d{1,2}/\d{4} \d{1,2}:\d{2}"),
    ("%d/%m/%Y %H:%M:%S", r"\d{1,2}/\d{1,2}/\d{4} \d{1,2}:\d{2}:\d{2}"),
    ("%m/%d/%Y %H:%M:%S", r"\d{1,2}/\d{1,2}/\d{4} \d{1,2}:\d{2}:\d{2}"),
    ("%Y/%m/%d", r"\d{4}/\d{1,2}/\d{1,2}"),
    ("%d.%m.%Y", r"\d{1,2}\.\d{1,2}\.\d{4}"),
    ("%d-%m-%Y", r"\d{1,2}-\d{1,2}-\d{4}"),
    ("%m-%d-%Y", r"\d{1,2}-\d{1,2}-\d{4}"),
    ("%Y%m%d", r"\d{8}"),
)
TRIED = "ISO 8601 (%Y-%m-%d), %d/%m/%Y, %m/%d/%Y, %Y/%m/%d, %d.%m.%Y, %d-%m-%Y, %m-%d-%Y, %Y%m%d"


def format_problems(fmt: str, needs: Sequence[str] = ("year",)) -> list[str]:
    """Problems with a declared strftime date format: it must read what it writes, and hold
    every unit in ``needs`` (``year``, ``month``, ``day``)."""
    directives = set(re.findall(r"%[-#]?([A-Za-z])", fmt))
    units = {
        "year": {"Y", "y", "G"},
        "month": {"m", "b", "B", "j", "U", "W", "V"},
        "day": {"d", "j", "e"},
    }
    problems = [f"format {fmt!r} has no {unit} ({' or '.join('%' + d for d in sorted(units[unit]))})"
                for unit in needs if not directives & units[unit]]
    if not problems:
        sample = pd.Timestamp("2024-03-15 10:20:30")
        try:
            back = pd.to_datetime(pd.Series([sample.strftime(fmt)]), format=fmt)
            problems += [] if back.notna().all() else [f"format {fmt!r} cannot read the dates it writes"]
        except (ValueError, TypeError) as exc:
            problems.append(f"format {fmt!r} is not a strftime date format: {str(exc).splitlines()[0]}")
    return problems


def parse_dates(values: pd.Series | Sequence[object] | np.ndarray, column: str, fmt: str | None = None, *,
                source: str = "", format_key: str = "the column's format", show_value: bool = True,
                rows: bool = True) -> pd.Series:
    """``values`` as naive datetimes (UTC for zone-aware ones), read with one format.

    ``fmt`` is the declared strftime format; None chooses the one of :data:`CANDIDATES` that
    reads every non-missing value (see the module docstring). Missing values stay missing.
    Raises DataError naming ``source``, the column and the (1-based) row of the first value not
    read, or, when several formats read every value differently, asking for ``format_key``.
    ``show_value=False`` (identifiers) leaves the value out of the message; ``rows=False``
    (``values`` are distinct values, not rows) leaves out the row.
    """
    series = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
    series = series.reset_index(drop=True)
    where = f"{source}: " if source else ""
    if pd.api.types.is_datetime64_any_dtype(series.dtype):
        return _naive(series)
    text = _as_text(series, column, where)
    if text is None:  # date and datetime objects: used as they are
        return _naive(pd.to_datetime(series.where(series.notna(), None), utc=_any_aware(series)))
    codes, uniques = pd.factorize(text, use_na_sentinel=True)
    present = codes >= 0
    distinct = pd.Series(np.asarray(uniques, dtype=object), dtype=object)
    counts = np.bincount(codes[present], minlength=len(distinct))
    first_rows = np.full(len(distinct), len(codes), dtype=np.int64)
    np.minimum.at(first_rows, codes[present], np.flatnonzero(present))
    parsed = parse_distinct_dates(distinct, counts, lambda i: int(first_rows[i]) + 1, column, fmt,
                                  where=where, format_key=format_key, show_value=show_value, rows=rows)
    table = np.append(parsed.to_numpy(dtype="datetime64[ns]"), np.datetime64("NaT", "ns"))
    return pd.Series(table[codes], index=series.index)  # code -1 (missing) takes the NaT


def parse_distinct_dates(distinct: pd.Series, counts: Sequence[int] | np.ndarray, row_of: Callable[[int], int],
                         column: str, fmt: str | None, *, where: str = "", format_key: str = "the column's format",
                         show_value: bool = True, rows: bool = True) -> pd.Series:
    """The distinct texts of a column (stripped, none missing, in the order of their first rows)
    read with one format, as :func:`parse_dates` reads the column: the declared ``fmt``, else
    the one of :data:`CANDIDATES` that reads every text. ``counts`` are the rows holding each
    text and ``row_of(i)`` the (1-based) row of text ``i``'s first row, asked for only when
    the first text not read is named. Raises DataError as :func:`parse_dates` does."""
    declared = fmt is not None
    if fmt is None:
        fmt, parsed = _infer(distinct, column, where, format_key, show_value)
    else:
        parsed = _parse(distinct, fmt)
    bad = parsed.isna().to_numpy()
    if bad.any():
        first = int(np.flatnonzero(bad)[0])  # texts in the order of their first rows
        shown = f" {distinct.iloc[first]!r}" if show_value else ""
        if declared:
            how = f"in the declared format {fmt!r}"
        elif fmt is None:
            how = f"in any format tried ({TRIED}, with or without a time)"
        else:
            how = f"in format {_shown(fmt)!r}, the one that reads most of the column"
        row = f", row {row_of(first)}" if rows else ""
        raise DataError(f"{where}column {column!r}{row}: value{shown} is not a date {how} "
                        f"({int(np.asarray(counts)[bad].sum())} such {'rows' if rows else 'values'})"
                        + ("" if declared else f"; declare {format_key}"))
    return parsed


def _naive(dates: pd.Series) -> pd.Series:
    if getattr(dates.dt, "tz", None) is not None:
        dates = dates.dt.tz_convert("UTC").dt.tz_localize(None)
    return dates


def _any_aware(series: pd.Series) -> bool:
    return any(getattr(v, "tzinfo", None) is not None for v in series if isinstance(v, datetime))


def _as_text(series: pd.Series, column: str, where: str) -> pd.Series | None:
    """The values as stripped text (None: every value is a date or datetime object)."""
    if pd.api.types.is_bool_dtype(series.dtype):
        raise DataError(f"{where}column {column!r}: a boolean column is not a date")
    if pd.api.types.is_integer_dtype(series.dtype):
        return series.astype("Int64").astype(object).map(lambda v: None if pd.isna(v) else str(v))
    if pd.api.types.is_float_dtype(series.dtype):
        present = series.dropna()
        if not np.all(np.mod(present.to_numpy(), 1) == 0):
            first = int(np.flatnonzero((series.notna() & (np.mod(series.fillna(0), 1) != 0)).to_numpy())[0])
            raise DataError(f"{where}column {column!r}, row {first + 1}: a fractional number is not a date")
        return series.astype("Int64").astype(object).map(lambda v: None if pd.isna(v) else str(v))
    if isinstance(series.dtype, pd.StringDtype) or pd.api.types.infer_dtype(series, skipna=True) in ("string", "empty"):
        stripped = series.astype(object).str.strip()
        return stripped.where(stripped.str.len() > 0)
    present = series.dropna()
    if len(present) and all(isinstance(v, date | np.datetime64) for v in present):
        return None
    out = []
    for i, v in enumerate(series):
        if v is None or (not isinstance(v, str) and pd.isna(v)):
            out.append(None)
        elif isinstance(v, str):
            out.append(v.strip() or None)
        elif isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_):
            out.append(str(v))
        elif isinstance(v, date):
            out.append(v.isoformat())
        else:
            raise DataError(f"{where}column {column!r}, row {i + 1}: a {type(v).__name__} is not a date")
    return pd.Series(out, index=series.index, dtype=object)


def _parse(distinct: pd.Series, fmt: str) -> pd.Series:
    """Each distinct text read with ``fmt`` (NaT where it does not read), naive."""
    if distinct.empty:
        return pd.Series([], dtype="datetime64[ns]")
    iso = fmt == _ISO
    aware = iso and distinct.str.contains(r"(?:Z|[+-]\d{2}(?::?\d{2})?)$", regex=True).any()
    try:
        parsed = pd.to_datetime(distinct, format=fmt, errors="coerce", utc=bool(aware))
    except (ValueError, TypeError):
        return pd.Series(pd.NaT, index=distinct.index, dtype="datetime64[ns]")
    return _naive(parsed)


def _infer(distinct: pd.Series, column: str, where: str, format_key: str,
           show_value: bool) -> tuple[str | None, pd.Series]:
    """The one candidate format reading every value, and the values read with it.

    When no candidate reads every value: the one reading most of them (its NaT mark the values
    it does not read), or None when none reads any.
    """
    if distinct.empty:
        return _ISO, pd.Series([], dtype="datetime64[ns]")
    readers, best = [], (None, pd.Series(pd.NaT, index=distinct.index, dtype="datetime64[ns]"), 0)
    for fmt, shape in CANDIDATES:
        shaped = distinct.str.fullmatch(shape).to_numpy(dtype=bool)
        if not shaped.any():
            continue
        parsed = pd.Series(pd.NaT, index=distinct.index, dtype="datetime64[ns]")
        parsed[shaped] = _parse(distinct[shaped], fmt).to_numpy()
        read = int(parsed.notna().sum())
        if read == len(distinct):
            readers.append((fmt, parsed))
        elif read > best[2]:
            best = (fmt, parsed, read)
    if not readers:
        return best[0], best[1]
    fmt, parsed = readers[0]
    for other, values in readers[1:]:
        if not values.equals(parsed):
            differ = int(np.flatnonzero((values != parsed).to_numpy())[0])
            example = (f" (one value reads as {parsed.iloc[differ].date()} or {values.iloc[differ].date()})"
                       if show_value else "")
            raise DataError(
                f"{where}column {column!r}: the dates are ambiguous: formats {_shown(fmt)!r} and "
                f"{_shown(other)!r} both read every value, differently{example}: declare {format_key} "
                f"(e.g. {_shown(fmt)!r})"
            )
    return fmt, parsed


def _shown(fmt: str) -> str:
    return "%Y-%m-%d" if fmt == _ISO else fmt
