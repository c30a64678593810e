"""Attribute disclosure per equivalence class: δ-disclosure privacy and β-likeness.

Both compare, for every equivalence class ``c`` and sensitive value ``s``, the share of ``s``
inside the class, ``p_c(s) = n_{c,s} / n_c``, with its share in the whole table, ``p(s)``.
They work on the class × sensitive-value count matrix ``n_{c,s}`` (a dense 2-D numpy array or a
``scipy.sparse`` matrix, e.g. from ``EquivalenceClasses.counts_by``), only on its non-zero
cells, so the cost is linear in the number of (class, value) pairs present.

Definitions (as ARX's privacy criteria implement them; only values present in a class are
examined, because a value absent from a class has ``p_c(s) = 0`` and discloses nothing by its
presence):

- **δ-disclosure privacy** (Brickell and Shmatikov, KDD 2008; ARX ``DDisclosurePrivacy``):
  ``δ = max_c max_{s in c} |log2(p_c(s) / p(s))|``. A release is δ-disclosure private for a
  threshold ``t`` when ``δ < t`` (ARX rejects ``value >= t``). ARX uses the base-2 logarithm;
  ``base`` changes it (``math.e`` for natural log).
- **basic β-likeness** (Cao and Karras, VLDB 2012; ARX ``BasicBLikeness``): the relative gain
  ``D_c(s) = (p_c(s) - p(s)) / p(s)``; the release's β is ``max_c max_{s in c} D_c(s)``
  (never below 0) and it satisfies basic β-likeness for a threshold ``b`` when ``β <= b``.
- **enhanced β-likeness** (same paper; ARX ``EnhancedBLikeness``): every gain must also stay
  under ``-ln p(s)``: ``D_c(s) <= min(b, -ln p(s))``. The smallest ``b`` that satisfies it is
  the basic β when every ``D_c(s) <= -ln p(s)``, and none exists otherwise (reported as
  ``inf`` in the arrays and ``None`` with ``enhanced_attainable = False`` in ``to_dict``).

``p(s)`` is the table's distribution (the column sums of the matrix) unless a ``reference``
distribution is given (ARX allows an external one for enhanced β-likeness). Classes with no
record (all-zero rows) are skipped and get ``nan`` in the per-class arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from anon_dagster.errors import DataError


def _cells(counts: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Non-zero cells ``(row, col, count)`` sorted by row, and the matrix shape."""
    if sparse.issparse(counts):
        csr = sparse.csr_array(counts)
        csr.sum_duplicates()
        csr.sort_indices()
        n_rows, n_cols = csr.shape
        rows = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(csr.indptr))
        cols = csr.indices.astype(np.int64)
        data = np.asarray(csr.data, dtype=float)
        keep = data != 0
        rows, cols, data = rows[keep], cols[keep], data[keep]
    else:
        arr = np.asarray(counts)
        if arr.ndim != 2:
            raise DataError(f"the class × value count matrix must be 2-D, got {arr.ndim}-D")
        if arr.dtype.kind not in "iufb":
            raise DataError(f"the class × value count matrix must be numeric, got {arr.dtype}")
        n_rows, n_cols = arr.shape
        rows, cols = np.nonzero(arr)
        data = arr[rows, cols].astype(float)
        rows = rows.astype(np.int64)
        cols = cols.astype(np.int64)
    if data.size and (data.min() < 0 or not np.all(np.isfinite(data))):
        raise DataError("the class × value counts must be finite and non-negative")
    if data.size == 0:
        raise DataError("the class × value count matrix holds no record")
    return rows, cols, data, int(n_rows), int(n_cols)


def _reference(cols: np.ndarray, data: np.ndarray, n_cols: int, reference: Any) -> np.ndarray:
    """The table distribution ``p(s)``: column shares, or the given reference normalized."""
    if reference is None:
        totals = np.bincount(cols, weights=data, minlength=n_cols)
        return totals / totals.sum()
    ref = np.asarray(reference, dtype=float).ravel()
    if ref.size != n_cols:
        raise DataError(
            f"the reference distribution has {ref.size} values, the count matrix {n_cols} columns"
        )
    if np.any(ref < 0) or not np.all(np.isfinite(ref)) or ref.sum() <= 0:
        raise DataError("the reference distribution must be finite, non-negative, not all zero")
    ref = ref / ref.sum()
    uncovered = np.flatnonzero(ref[np.unique(cols)] == 0)
    if uncovered.size:
        col = int(np.unique(cols)[uncovered[0]])
        raise DataError(
            f"sensitive value in column {col} occurs in the data but has probability 0 in the "
            f"reference distribution"
        )
    return ref


def _per_row_max(rows: np.ndarray, values: np.ndarray, n_rows: int) -> np.ndarray:
    """Maximum of ``values`` per row (rows sorted ascending); ``nan`` for rows with no cell."""
    out = np.full(n_rows, np.nan)
    if rows.size == 0:
        return out
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    out[rows[starts]] = np.maximum.reduceat(values, starts)
    return out


class _Cells:
    """The count matrix reduced to what the measures need: class shares and ``p(s)``.

    Dense input stays a matrix (vectorized over every cell, absent values masked); sparse
    input is handled as its non-zero cells only.
    """

    def __init__(self, counts: Any, reference: Any):
        if sparse.issparse(counts):
            rows, cols, data, n_rows, n_cols = _cells(counts)
            self.dense = False
            self.rows, self.cols = rows, cols
            self.p = _reference(cols, data, n_cols, reference)
            sizes = np.bincount(rows, weights=data, minlength=n_rows)
            self.share = data / sizes[rows]
            self.p_cell = self.p[cols]
        else:
            arr = np.asarray(counts)
            if arr.ndim != 2:
                raise DataError(f"the class × value count matrix must be 2-D, got {arr.ndim}-D")
            if arr.dtype.kind not in "iufb":
                raise DataError(
                    f"the class × value count matrix must be numeric, got {arr.dtype}"
                )
            arr = arr.astype(float, copy=False)
            if arr.size and (arr.min() < 0 or not np.all(np.isfinite(arr))):
                raise DataError("the class × value counts must be finite and non-negative")
            totals = arr.sum(axis=0)
            if totals.sum() <= 0:
                raise DataError("the class × value count matrix holds no record")
            n_rows, n_cols = arr.shape
            self.dense = True
            self.present = arr > 0
            if reference is None:
                self.p = totals / totals.sum()
            else:
                self.p = _reference(np.flatnonzero(totals > 0), totals[totals > 0], n_cols,
                                    reference)
            sizes = arr.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                self.share = arr / sizes[:, None]
            self.p_cell = self.p[None, :]
            self.empty = sizes == 0
        self.n_rows = n_rows

    def per_class_max(self, values: np.ndarray) -> np.ndarray:
        """Per-class maximum of a per-cell quantity over present values (``nan`` if empty)."""
        if not self.dense:
            return _per_row_max(self.rows, values, self.n_rows)
        out = np.max(np.where(self.present, values, -np.inf), axis=1)
        out[self.empty] = np.nan
        return out


@dataclass(frozen=True)
class DeltaDisclosure:
    """δ-disclosure of a release.

    Attributes:
        delta: ``max_c max_{s in c} |log_base(p_c(s) / p(s))|``.
        per_class: the same maximum for each class (``nan`` for empty classes).
        worst_class: index of a class reaching ``delta``.
        base: the logarithm's base (2 as in ARX).
    """

    delta: float
    per_class: np.ndarray
    worst_class: int
    base: float

    def satisfies(self, threshold: float) -> bool:
        """δ-disclosure privacy for ``threshold``: every class's δ strictly below it (ARX)."""
        return bool(self.delta < threshold)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable summary."""
        return {"delta_disclosure": self.delta, "worst_class": self.worst_class,
                "log_base": self.base}


def delta_disclosure(counts: Any, reference: Any = None, base: float = 2.0) -> DeltaDisclosure:
    """δ-disclosure from a class × sensitive-value count matrix (dense or scipy.sparse).

    ``reference`` optionally gives the table distribution ``p(s)`` (one weight per column);
    ``base`` is the logarithm's base (ARX: 2). See the module docstring for the definition.
    """
    if not (isinstance(base, int | float) and base > 0 and base != 1 and math.isfinite(base)):
        raise DataError(f"log base must be a positive number other than 1, got {base!r}")
    cells = _Cells(counts, reference)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.abs(np.log(cells.share / cells.p_cell)) / math.log(base)
    per_class = cells.per_class_max(value)
    worst = int(np.nanargmax(per_class))
    return DeltaDisclosure(float(per_class[worst]), per_class, worst, float(base))


@dataclass(frozen=True)
class BetaLikeness:
    """β-likeness of a release (basic and enhanced).

    Attributes:
        basic: ``max_c max_{s in c} (p_c(s) - p(s)) / p(s)``, at least 0.
        enhanced: the smallest threshold meeting enhanced β-likeness (``inf`` when no
            threshold does, because some gain exceeds ``-ln p(s)``).
        basic_per_class, enhanced_per_class: the same per class (``nan`` for empty classes).
        worst_class: index of a class reaching ``basic``.
    """

    basic: float
    enhanced: float
    basic_per_class: np.ndarray
    enhanced_per_class: np.ndarray
    worst_class: int

    def satisfies(self, threshold: float, enhanced: bool = False) -> bool:
        """Whether every class meets (basic or enhanced) β-likeness for ``threshold``."""
        return bool((self.enhanced if enhanced else self.basic) <= threshold)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable summary (``enhanced`` is ``None`` when unattainable)."""
        attainable = math.isfinite(self.enhanced)
        return {
            "beta_likeness": self.basic,
            "beta_likeness_enhanced": self.enhanced if attainable else None,
            "enhanced_attainable": attainable,
            "worst_class": self.worst_class,
        }


def beta_likeness(counts: Any, reference: Any = None) -> BetaLikeness:
    """Basic and enhanced β-likeness from a class × sensitive-value count matrix.

    ``counts`` is a dense 2-D array or a scipy.sparse matrix; ``reference`` optionally gives the
    table distribution ``p(s)``. See the module docstring for the definitions.
    """
    cells = _Cells(counts, reference)
    with np.errstate(invalid="ignore", divide="ignore"):
        gain = (cells.share - cells.p_cell) / cells.p_cell
        # A gain above -ln p(s) breaks enhanced β-likeness whatever the threshold.
        over = (gain > -np.log(cells.p_cell)).astype(float)
    basic = np.maximum(cells.per_class_max(gain), 0.0)
    broken = cells.per_class_max(over) > 0
    enhanced = np.where(broken, np.inf, basic)
    worst = int(np.nanargmax(basic))
    return BetaLikeness(
        basic=float(basic[worst]),
        enhanced=float(np.nanmax(enhanced)),
        basic_per_class=basic,
        enhanced_per_class=enhanced,
        worst_class=worst,
    )
