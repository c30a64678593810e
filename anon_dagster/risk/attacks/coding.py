"""Targets recoded into a release's labels: what an attacker's real records look like in the release.

An attacker holds real records (targets) with raw values; the release shows generalized labels.
To compare the two, every target value is mapped into the release's generalization through the
transformation record, column by column (:func:`recode_targets`, the one function every attack
uses):

- **global recoding** (``record.levels``): the value's label at the column's hierarchy level,
  the label the anonymizer itself published for that value (exact);
- **Mondrian** (``record.mondrian.boxes``): a published label means a box in the QI's own values
  (a numeric interval, a hierarchy node or a set of children); the value *covers* every label
  whose box holds it (:class:`~anon_dagster.anonymize.cut_tree.BoxMembership`). On all QIs
  together, the labels covering a row are those of the class whose box contains it — the class
  the gate places a population row into (:func:`anon_dagster.release.gate.population_in_classes`);
- a column the release publishes unchanged (level 0, method ``none``, PRAM's column, partition
  keys, group means of microaggregation): the value itself, compared as the release's label
  (text) or, for a numeric column, as a number.

A published ``*`` (a suppressed cell, or the top of a hierarchy) covers every value: the attacker
cannot rule such a row out. Missing values are a value of their own, as everywhere in the kernel.

The distance between a target and a release record over a set of columns is the number of
columns whose published label does not cover the target's value, with a numeric column counting
``|x - y| / range`` (the range of the release's values, capped at 1): a Gower distance on the
release's labels. A release record whose labels cover every value is at distance 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...anonymize.cut_tree import BoxMembership
from ...anonymize.record import TransformationRecord
from ...errors import DataError, HierarchyError
from ...hierarchies import MISSING_LABEL, Hierarchy, _as_label

WILDCARD = "*"
# largest (values × boxes) block of box tests at once
_BLOCK = 2_000_000


def _labels(values: np.ndarray) -> np.ndarray:
    """Each value's label as the kernel writes it (missing: ``<missing>``), object array."""
    return np.array([_as_label(v) for v in values], dtype=object)


def _is_numeric(series: pd.Series) -> bool:
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(dtype):
        return False
    return bool(pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_datetime64_any_dtype(dtype))


def _as_numbers(values: pd.Series | np.ndarray, date: bool) -> np.ndarray:
    """float64 of the values (dates as nanoseconds); NaN for missing or not a number."""
    series = pd.Series(values, dtype=object) if not isinstance(values, pd.Series) else values
    if date:
        parsed = pd.to_datetime(series, errors="coerce")
        out = parsed.to_numpy(dtype="datetime64[ns]").astype(np.int64).astype(np.float64)
        out[parsed.isna().to_numpy()] = np.nan
        return out
    return pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


@dataclass
class ColumnCoding:
    """One published column as the attacks compare it.

    ``codes`` holds each release row's label code (0..n_labels-1, by position); ``labels`` the
    distinct published labels (text; for a numeric column, ``numbers`` holds their values and
    ``scale`` the release's range). ``how`` says how a raw value is mapped: ``"value"`` (the
    release publishes it unchanged), ``"level"`` (a hierarchy level, ``level``) or ``"boxes"``
    (Mondrian's boxes, ``box``); ``wildcard`` is the code of a published ``*`` (-1: none).
    """

    name: str
    codes: np.ndarray
    labels: pd.Index
    how: str
    numeric: bool = False
    numbers: np.ndarray | None = None
    scale: float = 0.0
    date: bool = False
    wildcard: int = -1
    level: int = 0
    hierarchy: Hierarchy | None = None
    box: Mapping[str, Any] | None = None

    @property
    def n_labels(self) -> int:
        return len(self.labels)


@dataclass
class RecodedColumn:
    """The targets' values of one column against its published labels.

    ``value[i]`` is target ``i``'s distinct value (an index); per distinct value, ``own`` is
    the label it maps to (-1: none; the published ``*`` covers it too), ``exact`` the one label
    covering it (-1: none, -2: several), ``matrix`` (boxes only) whether it covers each label,
    and ``x`` its number (numeric columns).
    """

    coding: ColumnCoding
    value: np.ndarray
    exact: np.ndarray
    own: np.ndarray | None = None
    matrix: np.ndarray | None = None
    x: np.ndarray | None = None

    def take(self, rows: np.ndarray) -> RecodedColumn:
        return RecodedColumn(self.coding, self.value[rows], self.exact, self.own, self.matrix, self.x)

    def distance(self, values: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Distance of distinct values ``values`` (q) to labels ``labels`` (m): (q, m) float64.

        0 where the label covers the value, 1 where it does not; a numeric column gives
        ``min(|x - y| / range, 1)``, 0 between two missing values and 1 between a missing
        value and a number.
        """
        out = np.zeros((len(values), len(labels)))
        self.add_distance(out, values, labels)
        return out

    def add_distance(self, out: np.ndarray, values: np.ndarray, labels: np.ndarray) -> None:
        """``out += self.distance(values, labels)``, without the intermediate matrix where it can."""
        c = self.coding
        if c.numeric:
            assert self.x is not None and c.numbers is not None
            x = self.x[values][:, None]
            y = c.numbers[labels][None, :]
            d = np.subtract(x, y)
            np.abs(d, out=d)
            if c.scale > 0:
                d *= 1.0 / c.scale
                np.minimum(d, 1.0, out=d)
            else:
                np.not_equal(d, 0.0, out=d, where=~np.isnan(d))
            nx, ny = np.isnan(x), np.isnan(y)
            if nx.any() or ny.any():
                d[nx | ny] = 1.0
                d[nx & ny] = 0.0
            out += d
            return
        if self.matrix is not None:
            covered = self.matrix[values][:, labels]
            np.logical_not(covered, out=covered)
            out += covered
            return
        assert self.own is not None
        miss = self.own[values][:, None] != labels[None, :]
        if c.wildcard >= 0:
            miss &= (labels != c.wildcard)[None, :]
        out += miss

    def covers(self, values: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Whether label ``labels[i]`` covers distinct value ``values[i]`` (categorical columns)."""
        c = self.coding
        if self.matrix is not None:
            return self.matrix[values, labels]
        assert self.own is not None
        hit = self.own[values] == labels
        if c.wildcard >= 0:
            hit |= labels == c.wildcard
        return hit


@dataclass
class Recoded:
    """Targets recoded into the release's labels, column by column (:func:`recode_targets`)."""

    columns: dict[str, RecodedColumn]
    n: int

    def take(self, rows: np.ndarray) -> Recoded:
        rows = np.asarray(rows, dtype=np.int64)
        return Recoded({c: r.take(rows) for c, r in self.columns.items()}, len(rows))

    def __getitem__(self, column: str) -> RecodedColumn:
        return self.columns[column]


class ReleaseCoding:
    """The published columns of one release, coded once, and how raw values map into them.

    ``record`` is the transformation record that produced ``release`` (None: the release
    publishes its values unchanged); ``hierarchies`` the spec's hierarchies (needed for global
    recoding and Mondrian). Only the columns named are coded, each on first use.
    """

    def __init__(self, release: pd.DataFrame, record: TransformationRecord | None = None,
                 hierarchies: Mapping[str, Hierarchy] | None = None):
        self.release = release.reset_index(drop=True)
        self.record = record
        self.hierarchies = dict(hierarchies or {})
        self._columns: dict[str, ColumnCoding] = {}
        method = record.method if record is not None else "none"
        self.method = method
        self.levels = {c: int(v) for c, v in (record.levels or {}).items()} if record is not None else {}
        boxes = record.mondrian.boxes if record is not None and record.mondrian is not None else None
        self.boxes = dict(boxes.columns) if boxes is not None and method == "mondrian" else {}

    @property
    def n_rows(self) -> int:
        return len(self.release)

    def __getitem__(self, name: str) -> ColumnCoding:
        if name not in self._columns:
            self._columns[name] = self._code(name)
        return self._columns[name]

    def _code(self, name: str) -> ColumnCoding:
        if name not in self.release.columns:
            raise DataError(f"column {name!r} is not published in the release")
        series = self.release[name]
        if name in self.boxes:
            return self._categorical(name, series, "boxes", box=self.boxes[name],
                                     hierarchy=self._hierarchy(name))
        level = self.levels.get(name, 0)
        if level > 0:
            return self._categorical(name, series, "level", level=level, hierarchy=self._hierarchy(name))
        if _is_numeric(series):
            date = pd.api.types.is_datetime64_any_dtype(series.dtype)
            numbers = _as_numbers(series, date)
            codes, uniques = pd.factorize(numbers, use_na_sentinel=False)
            uniques = np.asarray(uniques, dtype=np.float64)
            finite = uniques[~np.isnan(uniques)]
            scale = float(finite.max() - finite.min()) if len(finite) else 0.0
            return ColumnCoding(name, codes.astype(np.int64), pd.Index(uniques), "value", numeric=True,
                                numbers=uniques, scale=scale, date=date)
        return self._categorical(name, series, "value")

    def _hierarchy(self, name: str) -> Hierarchy:
        if name not in self.hierarchies:
            raise DataError(f"column {name!r} is generalized in the release but no hierarchy was given for it")
        return self.hierarchies[name]

    @staticmethod
    def _categorical(name: str, series: pd.Series, how: str, **extra: Any) -> ColumnCoding:
        codes, uniques = pd.factorize(series.astype(object), use_na_sentinel=True)
        labels = _labels(np.asarray(uniques, dtype=object))
        if (codes < 0).any():  # missing published values: a label of their own
            labels = np.append(labels, MISSING_LABEL)
            codes = np.where(codes < 0, len(labels) - 1, codes)
        index = pd.Index(labels, dtype=object)
        if not index.is_unique:  # two values with one label (1 and "1"): one label
            dense, index = pd.factorize(index)
            codes = dense[codes]
            index = pd.Index(np.asarray(index, dtype=object), dtype=object)
        wildcard = int(index.get_loc(WILDCARD)) if WILDCARD in index else -1
        return ColumnCoding(name, np.asarray(codes, dtype=np.int64), index, how, wildcard=wildcard, **extra)


def recode_targets(coding: ReleaseCoding, targets: pd.DataFrame, columns: Sequence[str]) -> Recoded:
    """The targets' raw values of ``columns`` mapped into the release's labels (module docstring).

    ``targets`` holds one raw record per target (positions, any index). Raises DataError naming
    a column the targets or the release lack.
    """
    out = {}
    for name in columns:
        if name not in targets.columns:
            raise DataError(f"the targets have no column {name!r}")
        out[name] = _recode(coding[name], targets[name].reset_index(drop=True))
    return Recoded(out, len(targets))


def _recode(c: ColumnCoding, series: pd.Series) -> RecodedColumn:
    if c.numeric:
        x_all = _as_numbers(series.astype(object) if isinstance(series.dtype, pd.CategoricalDtype) else series,
                            c.date)
        value, uniques = pd.factorize(x_all, use_na_sentinel=False)
        x = np.asarray(uniques, dtype=np.float64)
        exact = pd.Index(c.numbers).get_indexer(x) if len(x) else np.zeros(0, np.int64)
        return RecodedColumn(c, value.astype(np.int64), exact.astype(np.int64), x=x)
    value, uniques = pd.factorize(series.astype(object), use_na_sentinel=False)
    uniques = np.asarray(uniques, dtype=object)
    value = value.astype(np.int64)
    if c.how == "boxes":
        matrix = _box_cover(c, uniques)
        if c.wildcard >= 0:
            matrix[:, c.wildcard] = True
        count = matrix.sum(axis=1)
        exact = np.where(count == 1, matrix.argmax(axis=1), np.where(count == 0, -1, -2))
        return RecodedColumn(c, value, exact.astype(np.int64), matrix=matrix)
    labels = _level_labels(c, uniques) if c.how == "level" else _labels(uniques)
    own = c.labels.get_indexer(pd.Index(labels, dtype=object)).astype(np.int64)
    exact = own
    if c.wildcard >= 0:  # the published * covers every value as well
        exact = np.where((own == c.wildcard) | (own < 0), c.wildcard, -2)
    return RecodedColumn(c, value, exact.astype(np.int64), own=own)


def _level_labels(c: ColumnCoding, values: np.ndarray) -> np.ndarray:
    """The labels of distinct raw values at the column's level; None for a value the hierarchy
    does not cover (it covers no published label but ``*``)."""
    assert c.hierarchy is not None
    try:
        return c.hierarchy.table(values)[:, c.level]
    except HierarchyError:
        out = np.empty(len(values), dtype=object)
        for i, v in enumerate(values):
            try:
                out[i] = c.hierarchy.table(np.array([v], dtype=object))[0, c.level]
            except HierarchyError:
                out[i] = None
        return out


def _box_cover(c: ColumnCoding, values: np.ndarray) -> np.ndarray:
    """``m[v, l]``: some box published with label ``l`` holds distinct value ``v``."""
    box = c.box
    assert box is not None and c.hierarchy is not None
    n_boxes = len(box["label"])
    label_of_box = c.labels.get_indexer(pd.Index([str(x) for x in box["label"]], dtype=object))
    matrix = np.zeros((len(values), c.n_labels), dtype=bool)
    if not len(values) or not n_boxes:
        return matrix
    try:
        member = BoxMembership(values, box, c.hierarchy, c.name, "targets")
    except HierarchyError:
        # a value the hierarchy does not cover lies in no box: test the others
        ok = np.array([_covered_by(c.hierarchy, v) for v in values], dtype=bool)
        if ok.any():
            matrix[ok] = _box_cover(c, values[ok])
        return matrix
    known = np.flatnonzero(label_of_box >= 0)
    step = max(_BLOCK // max(len(values), 1), 1)
    for start in range(0, len(known), step):
        boxes = known[start:start + step]
        v = np.repeat(np.arange(len(values)), len(boxes))
        b = np.tile(boxes, len(values))
        hit = member.contains(v, b)
        matrix[v[hit], label_of_box[b[hit]]] = True
    return matrix


def _covered_by(hierarchy: Hierarchy, value: object) -> bool:
    try:
        hierarchy.table(np.array([value], dtype=object))
    except HierarchyError:
        return False
    return True


def seed_of(record: TransformationRecord | None, release: pd.DataFrame | None = None) -> int:
    """The attacks' seed: the first 64 bits of the release's output hash (``record.output_hash``,
    else :func:`~anon_dagster.anonymize.record.table_hash` of the release), so running the
    attacks again on the same release draws the same targets and gives the same figures."""
    if record is not None:
        digest = record.output_hash
    else:
        from ...anonymize.record import table_hash

        if release is None:
            raise ValueError("seed_of needs a record or the release")
        digest = table_hash(release)
    return int(digest[:16], 16)


__all__ = ["WILDCARD", "ColumnCoding", "Recoded", "RecodedColumn", "ReleaseCoding", "recode_targets", "seed_of"]
