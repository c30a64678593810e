"""Generalization hierarchies: interval, mask, date and table (ARX's CSV format).

Definitions. A hierarchy for a column maps every original value to one label per level:
level 0 is the value itself, each further level is a coarsening of the one before (two values
that share a label at level i share it at every level above i), and the top level is ``*``
(the value suppressed). A quasi-identifier declared without a hierarchy has two levels: its
value and ``*``.

Missing values (NaN, None) form a value of their own: they keep the label ``MISSING_LABEL`` at
every level below the top, so a missing value never silently merges with a real one.

Every hierarchy turns the *distinct* values of a column into a table of labels
(``n_distinct × n_levels``); columns are generalized by factorizing once and indexing that
table, so the cost is one pass over the rows whatever the hierarchy.
"""

from __future__ import annotations

import csv
import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .dates import parse_dates
from .errors import DataError, HierarchyError

TOP = "*"
MISSING_LABEL = "<missing>"


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA or value is pd.NaT


def _as_label(value: object) -> str:
    if _is_missing(value):
        return MISSING_LABEL
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, pd.Timestamp):  # a date, or a date and time: one label per value
        return value.strftime("%Y-%m-%d") if value == value.normalize() else value.isoformat()
    return str(value)


def _as_objects(values: Sequence[object] | np.ndarray) -> np.ndarray:
    """``values`` as an object array; datetimes as Timestamps (numpy turns datetime64[ns] into
    integers of nanoseconds when asked for objects)."""
    if pd.api.types.is_datetime64_any_dtype(getattr(values, "dtype", None)):
        return np.asarray(pd.DatetimeIndex(values).astype(object), dtype=object)
    return np.asarray(values, dtype=object)


class Hierarchy(ABC):
    """A generalization hierarchy for one column (see the module docstring for the definition)."""

    column: str

    @property
    @abstractmethod
    def n_levels(self) -> int:
        """Number of levels, counting level 0 (original values) and the top ``*``."""

    @abstractmethod
    def _labels(self, values: np.ndarray) -> np.ndarray:
        """Labels of non-missing distinct ``values``: object array of shape (n, n_levels - 1).

        Column j is level j+1's label; the last column is ``*``. Raises HierarchyError naming
        values the hierarchy does not cover.
        """

    def table(self, values: Sequence[object] | np.ndarray) -> np.ndarray:
        """Label table of shape (len(values), n_levels): level 0 is the value's own label.

        Missing values are labelled ``MISSING_LABEL`` up to the level below the top.
        """
        values = _as_objects(values)
        out = np.empty((len(values), self.n_levels), dtype=object)
        missing = np.fromiter((_is_missing(v) for v in values), dtype=bool, count=len(values))
        out[:, 0] = [_as_label(v) for v in values]
        if missing.any():
            out[missing, 1:-1] = MISSING_LABEL
            out[missing, -1] = TOP
        present = ~missing
        if present.any():
            out[present, 1:] = self._labels(values[present])
        return out

    def level_codes(self, values: Sequence[object] | np.ndarray) -> list[np.ndarray]:
        """For distinct ``values`` (level-0 codes 0..n-1), one code array per level.

        ``result[level][code0]`` is the integer code of that value's label at ``level``; codes
        at each level are dense (0..m-1). This is what roll-ups and lattice searches use.
        """
        table = self.table(values)
        return [pd.factorize(table[:, j])[0].astype(np.int64) for j in range(self.n_levels)]

    def generalize(self, series: pd.Series, level: int) -> pd.Series:
        """The column generalized to ``level`` (0 = unchanged), as strings; index kept."""
        if not 0 <= level < self.n_levels:
            raise HierarchyError(
                f"column {self.column!r}: level {level} out of range 0..{self.n_levels - 1}"
            )
        if level == 0:
            return series
        codes, uniques = pd.factorize(series, use_na_sentinel=True)
        uniques = np.asarray(uniques, dtype=object)
        labels = self.table(np.append(uniques, None))[:, level]
        # code -1 (missing) indexes the appended None
        return pd.Series(labels[codes], index=series.index, name=series.name, dtype=object)

    def check_coarsening(self, values: Sequence[object] | np.ndarray) -> list[str]:
        """Problems with monotone coarsening over ``values``; empty when the hierarchy is sound.

        A level is a coarsening of the one before when every label at level i maps to a single
        label at level i+1; the top must be ``*`` for every value.
        """
        table = self.table(values)
        problems = []
        for j in range(1, self.n_levels):
            frame = pd.DataFrame({"a": table[:, j - 1], "b": table[:, j]})
            fan = frame.groupby("a", sort=False)["b"].nunique()
            bad = fan[fan > 1]
            if len(bad):
                label = bad.index[0]
                targets = sorted(frame.loc[frame["a"] == label, "b"].unique())[:3]
                problems.append(
                    f"level {j} does not coarsen level {j - 1}: {label!r} maps to {targets}"
                )
        if len(table) and not (table[:, -1] == TOP).all():
            problems.append("the top level is not '*' for every value")
        return problems


@dataclass
class SuppressionHierarchy(Hierarchy):
    """Two levels: the value and ``*`` (a quasi-identifier declared without a hierarchy)."""

    column: str

    @property
    def n_levels(self) -> int:
        return 2

    def _labels(self, values: np.ndarray) -> np.ndarray:
        return np.full((len(values), 1), TOP, dtype=object)


@dataclass
class IntervalHierarchy(Hierarchy):
    """Numeric bins of increasing width, anchored at ``origin``.

    ``widths = [5, 10, 20]`` gives levels value → 5-wide bins → 10-wide → 20-wide → ``*``. Each
    width must be a multiple of the previous one (so bins nest). Integer-valued data gets
    labels ``"20-24"`` (ARX's style, inclusive); other data ``"[20, 25)"``.
    """

    column: str
    widths: list[float]
    origin: float = 0.0

    def __post_init__(self) -> None:
        problems = validate_interval_widths(self.widths)
        if problems:
            raise HierarchyError(f"column {self.column!r}: " + "; ".join(problems))

    @property
    def n_levels(self) -> int:
        return len(self.widths) + 2

    def _labels(self, values: np.ndarray) -> np.ndarray:
        numeric = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(float)
        bad = np.isnan(numeric)
        if bad.any():
            raise HierarchyError(
                f"column {self.column!r}: interval hierarchy needs numbers, got {values[bad][0]!r}"
            )
        infinite = np.isinf(numeric)
        if infinite.any():
            raise HierarchyError(
                f"column {self.column!r}: interval hierarchy needs finite numbers, got {float(numeric[infinite][0])!r} "
                f"({int(infinite.sum())} such values): no bin holds an infinity"
            )
        integral = bool(np.all(numeric == np.floor(numeric))) and all(
            float(w).is_integer() for w in self.widths
        ) and float(self.origin).is_integer()
        out = np.empty((len(values), len(self.widths) + 1), dtype=object)
        for j, width in enumerate(self.widths):
            lower = self.origin + np.floor((numeric - self.origin) / width) * width
            out[:, j] = interval_labels(lower, width, integral)
        out[:, -1] = TOP
        return out


def interval_labels(lower: np.ndarray, width: float, integral: bool) -> list[str]:
    """Labels of bins ``[lower, lower + width)``: ``"20-24"`` for integers, else ``"[20, 25)"``."""
    if integral:
        return [f"{int(lo)}-{int(lo + width - 1)}" for lo in lower]
    return [f"[{lo:g}, {lo + width:g})" for lo in lower]


def validate_interval_widths(widths: Sequence[float]) -> list[str]:
    """Problems with interval widths: positive, increasing, each a multiple of the previous."""
    problems = []
    if not widths:
        problems.append("widths must list at least one bin width")
    for i, width in enumerate(widths):
        if not width > 0:
            problems.append(f"width {width} must be positive")
        if i and widths[i - 1] > 0 and width > 0:
            ratio = width / widths[i - 1]
            if ratio <= 1 or abs(ratio - round(ratio)) > 1e-9:
                problems.append(
                    f"width {width} is not a larger multiple of the previous width "
                    f"{widths[i - 1]}, so its bins do not coarsen the level before"
                )
    return problems


@dataclass
class MaskHierarchy(Hierarchy):
    """Masking from the right: ``keep = [4, 3, 2]`` turns 28014 into 2801*, 280**, 28***, then *."""

    column: str
    keep: list[int]
    mask_char: str = "*"

    def __post_init__(self) -> None:
        problems = validate_mask_keep(self.keep)
        if problems:
            raise HierarchyError(f"column {self.column!r}: " + "; ".join(problems))

    @property
    def n_levels(self) -> int:
        return len(self.keep) + 2

    def _labels(self, values: np.ndarray) -> np.ndarray:
        strings = [_as_label(v) for v in values]
        out = np.empty((len(values), len(self.keep) + 1), dtype=object)
        for j, keep in enumerate(self.keep):
            out[:, j] = [s[:keep] + self.mask_char * max(len(s) - keep, 0) for s in strings]
        out[:, -1] = TOP
        return out


def validate_mask_keep(keep: Sequence[int]) -> list[str]:
    """Problems with mask levels: non-negative and strictly decreasing characters kept."""
    problems = []
    if not keep:
        problems.append("keep must list at least one prefix length")
    for i, k in enumerate(keep):
        if k < 0:
            problems.append(f"keep {k} must be >= 0")
        if i and k >= keep[i - 1]:
            problems.append(
                f"keep {k} does not mask more than the previous level ({keep[i - 1]}), "
                "so it does not coarsen it"
            )
    return problems


DATE_UNITS = ("day", "month", "quarter", "half", "year", "decade")


@dataclass
class DateHierarchy(Hierarchy):
    """Calendar truncation: ``levels = [month, quarter, year]`` gives 2024-03, 2024-Q1, 2024, *.

    Units, finest first: day, month, quarter, half, year, decade. Weeks are not offered because
    they do not nest in months or years. Text dates are read with one format for the column
    (``format``, else the one that reads every value: :func:`~anon_dagster.dates.parse_dates`,
    the rule the partitions use); ``format_key`` is the spec key errors ask to declare.
    """

    column: str
    levels: list[str]
    format: str | None = None
    format_key: str = "the column's date format"

    def __post_init__(self) -> None:
        problems = validate_date_levels(self.levels)
        if problems:
            raise HierarchyError(f"column {self.column!r}: " + "; ".join(problems))

    @property
    def n_levels(self) -> int:
        return len(self.levels) + 2

    def _labels(self, values: np.ndarray) -> np.ndarray:
        try:
            dates = parse_dates(pd.Series(values, dtype=object), self.column, self.format,
                                format_key=self.format_key, rows=False)
        except DataError as exc:
            raise HierarchyError(f"date hierarchy: {exc}") from None
        bad = dates.isna().to_numpy()
        if bad.any():
            raise HierarchyError(
                f"column {self.column!r}: date hierarchy needs dates, got {values[bad][0]!r}"
            )
        out = np.empty((len(values), len(self.levels) + 1), dtype=object)
        for j, unit in enumerate(self.levels):
            out[:, j] = date_labels(dates, unit)
        out[:, -1] = TOP
        return out


def date_labels(dates: pd.Series, unit: str) -> np.ndarray:
    """Labels of ``dates`` truncated to ``unit`` (see DateHierarchy)."""
    year = dates.dt.year.astype(int).astype(str)
    if unit == "day":
        labels = dates.dt.strftime("%Y-%m-%d")
    elif unit == "month":
        labels = dates.dt.strftime("%Y-%m")
    elif unit == "quarter":
        labels = year + "-Q" + dates.dt.quarter.astype(str)
    elif unit == "half":
        labels = year + "-H" + ((dates.dt.month > 6).astype(int) + 1).astype(str)
    elif unit == "year":
        labels = year
    elif unit == "decade":
        labels = ((dates.dt.year // 10) * 10).astype(str) + "s"
    else:  # validated earlier
        raise HierarchyError(f"unknown date unit {unit!r}")
    return labels.to_numpy(dtype=object)


def validate_date_levels(levels: Sequence[str]) -> list[str]:
    """Problems with date levels: known units, strictly coarser left to right."""
    problems = []
    if not levels:
        problems.append("levels must list at least one date unit")
    ranks = []
    for unit in levels:
        if unit not in DATE_UNITS:
            problems.append(f"unknown date unit {unit!r} (use one of {', '.join(DATE_UNITS)})")
        else:
            ranks.append(DATE_UNITS.index(unit))
    if any(b <= a for a, b in zip(ranks, ranks[1:], strict=False)):
        problems.append(f"levels {list(levels)} are not strictly coarser from left to right")
    return problems


@dataclass
class TableHierarchy(Hierarchy):
    """An explicit hierarchy in ARX's CSV format: ``value;level1;...;*`` one row per value."""

    column: str
    rows: dict[str, list[str]] = field(default_factory=dict)
    n: int = 0
    source: str = ""

    @property
    def n_levels(self) -> int:
        return self.n

    def _labels(self, values: np.ndarray) -> np.ndarray:
        labels = [_as_label(v) for v in values]
        missing = [s for s in labels if s not in self.rows]
        if missing:
            where = f" ({self.source})" if self.source else ""
            raise HierarchyError(
                f"column {self.column!r}: value {missing[0]!r} is not covered by its table "
                f"hierarchy{where}" + (f" ({len(set(missing))} values uncovered)" if len(set(missing)) > 1 else "")
            )
        return np.array([self.rows[s] for s in labels], dtype=object).reshape(len(labels), self.n - 1)

    @classmethod
    def from_csv(cls, column: str, path: Path, separator: str = ";") -> TableHierarchy:
        """Read an ARX hierarchy file; raises HierarchyError naming the file and line."""
        try:
            text = Path(path).read_text(encoding="utf-8-sig")
        except OSError as exc:
            raise HierarchyError(f"{path}: cannot read hierarchy for column {column!r}: {exc.strerror}") from None
        reader = csv.reader(text.splitlines(), delimiter=separator)
        rows: dict[str, list[str]] = {}
        width = None
        for lineno, row in enumerate(reader, start=1):
            if not row or all(not cell.strip() for cell in row):
                continue
            row = [cell.strip() for cell in row]
            if width is None:
                width = len(row)
            if len(row) != width:
                raise HierarchyError(f"{path}: line {lineno}: {len(row)} levels, expected {width}")
            if len(row) < 2:
                raise HierarchyError(f"{path}: line {lineno}: a hierarchy row needs a value and at least '*'")
            if row[0] in rows:
                raise HierarchyError(f"{path}: line {lineno}: value {row[0]!r} listed twice")
            rows[row[0]] = row[1:]
        if not rows:
            raise HierarchyError(f"{path}: hierarchy for column {column!r} is empty")
        hierarchy = cls(column=column, rows=rows, n=width or 0, source=str(path))
        problems = hierarchy.check_coarsening(list(rows))
        if problems:
            raise HierarchyError(f"{path}: " + "; ".join(problems))
        return hierarchy


def generalization_loss(hierarchy: Hierarchy, values: Sequence[object] | np.ndarray) -> np.ndarray:
    """Loss per (distinct value, level) in [0, 1], ARX's "loss"/precision style.

    Definition: for a value generalized to label g at a level, loss = (leaves(g) - 1) /
    (leaves - 1), where leaves(g) is the number of distinct original values (among ``values``)
    sharing label g and leaves is the number of distinct values. Level 0 has loss 0, ``*`` 1.
    """
    table = hierarchy.table(values)
    n = len(table)
    out = np.zeros(table.shape, dtype=float)
    if n <= 1:
        out[:, -1] = 1.0
        return out
    for j in range(1, table.shape[1]):
        codes, _ = pd.factorize(table[:, j])
        leaves = np.bincount(codes)[codes]
        out[:, j] = (leaves - 1) / (n - 1)
    out[:, -1] = 1.0
    return out
