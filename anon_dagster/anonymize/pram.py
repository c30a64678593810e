"""PRAM (post-randomization) of one categorical attribute with a declared transition matrix.

Definition. Each row's value v is replaced by a value w drawn with probability P[v][w], the
row of the transition matrix P for v (independently per row, from a seeded generator). The
matrix is published with the data so analysts can correct their estimates: if the input has
value frequencies f, the expected published frequencies are f·P, so f ≈ (published)·P⁻¹ when P
is invertible.

Spec format (``anonymization.pram``)::

    pram:
      column: diagnosis                 # a categorical column of the spec
      matrix:                           # row = input value, entries = output probabilities
        J45: {J45: 0.9, E11: 0.1}
        E11: {E11: 0.8, J45: 0.2}
        I10: {I10: 1.0}

Every row must sum to 1 (within 1e-6), every probability lie in [0, 1], every output value be a
row of the matrix too (the matrix is square over its values), and every value of the column must
have a row (missing values are left as they are). The seed is ``anonymization.seed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError, Problem, SpecError
from ..hierarchies import _as_label


@dataclass(frozen=True)
class PramSpec:
    """A validated PRAM declaration: the column, its values and the transition matrix."""

    column: str
    values: tuple[str, ...]
    matrix: np.ndarray  # (m, m), rows sum to 1

    def to_dict(self) -> dict:
        return {
            "column": self.column,
            "matrix": {
                v: {w: float(p) for w, p in zip(self.values, row, strict=True) if p > 0}
                for v, row in zip(self.values, self.matrix, strict=True)
            },
        }


def parse_pram(raw: dict[str, Any], file: str = "<spec>") -> PramSpec:
    """Validate ``anonymization.pram``; raise SpecError listing every problem."""
    problems: list[Problem] = []
    add = lambda key, msg: problems.append(Problem(file, f"anonymization.pram{key}", msg))  # noqa: E731
    if not isinstance(raw, dict):
        raise SpecError([Problem(file, "anonymization.pram", "must be a mapping with column and matrix")])
    column = raw.get("column")
    matrix = raw.get("matrix")
    extra = set(raw) - {"column", "matrix"}
    if extra:
        add("", f"unknown key(s) {sorted(extra)} (use column and matrix)")
    if not isinstance(column, str):
        add(".column", "required: the name of a categorical column")
    if not isinstance(matrix, dict) or not matrix:
        add(".matrix", "required: a mapping value -> {value: probability}")
        raise SpecError(problems)
    values = [str(v) for v in matrix]
    index = {v: i for i, v in enumerate(values)}
    m = np.zeros((len(values), len(values)))
    for v, row in matrix.items():
        if not isinstance(row, dict):
            add(f".matrix.{v}", "must map output values to probabilities")
            continue
        for w, p in row.items():
            if str(w) not in index:
                add(f".matrix.{v}.{w}", f"output value {w!r} has no row of its own (the matrix must be square)")
                continue
            try:
                p = float(p)
            except (TypeError, ValueError):
                add(f".matrix.{v}.{w}", f"{p!r} is not a probability")
                continue
            if not 0.0 <= p <= 1.0:
                add(f".matrix.{v}.{w}", f"probability {p} is outside [0, 1]")
            m[index[str(v)], index[str(w)]] = p
        total = m[index[str(v)]].sum()
        if abs(total - 1.0) > 1e-6:
            add(f".matrix.{v}", f"probabilities sum to {total:.6g}, not 1")
    if problems:
        raise SpecError(problems)
    return PramSpec(str(column), tuple(values), m)


def cumulative_rows(pram: PramSpec) -> np.ndarray:
    """The matrix's rows summed cumulatively, the last column set just above 1: a uniform draw u
    of a row of value i becomes the first output w with u < cumulative[i][w] (rounding never
    pushes a draw past the last value)."""
    cumulative = np.cumsum(pram.matrix, axis=1)
    cumulative[:, -1] = 1.0 + 1e-12
    return cumulative


def refuse_unknown(pram: PramSpec, labels: list[str]) -> None:
    """Raise DataError naming the first of ``labels`` (the column's present labels, in table
    order) that has no row in the matrix, and how many are uncovered."""
    index = set(pram.values)
    unknown = list(dict.fromkeys(v for v in labels if v not in index))
    if unknown:
        raise DataError(f"column {pram.column!r}: value {unknown[0]!r} has no row in the PRAM matrix"
                        + (f" ({len(unknown)} values uncovered)" if len(unknown) > 1 else ""))


def redrawn(codes: np.ndarray, cumulative: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Each row's new matrix row: ``codes`` (-1 missing, kept) drawn by the uniforms ``u``."""
    new = codes.copy()
    for i in range(len(cumulative)):
        rows = np.flatnonzero(codes == i)
        if len(rows):
            new[rows] = np.searchsorted(cumulative[i], u[rows], side="right")
    return new


def published_values(pram: PramSpec, values: list[object], labels: list[str]) -> list[object]:
    """The value published for each row of the matrix: the first of ``values`` (the column's
    present values in table order, ``labels`` theirs) holding its label, else the label."""
    first: dict[str, object] = {}
    for value, label in zip(values, labels, strict=True):
        first.setdefault(label, value)
    return [first.get(v, v) for v in pram.values]


def apply_pram(series: pd.Series, pram: PramSpec, seed: int) -> tuple[pd.Series, int]:
    """The column after PRAM, and the number of rows whose value changed.

    Values are matched by their label (``str``); an output value that also occurs in the input
    keeps the input's type, others are published as their label. Raises DataError naming a
    value with no row in the matrix.
    """
    raw = series.to_numpy(dtype=object)
    labels = np.array([_as_label(v) if not pd.isna(v) else None for v in raw], dtype=object)
    present = pd.notna(labels)
    refuse_unknown(pram, list(pd.unique(labels[present])))
    index = {v: i for i, v in enumerate(pram.values)}
    codes = np.array([index[v] if v is not None else -1 for v in labels], dtype=np.int64)
    new = redrawn(codes, cumulative_rows(pram), np.random.default_rng(seed).random(len(codes)))
    out_values = np.array(published_values(pram, list(raw[present]), list(labels[present])), dtype=object)
    out = series.astype(object).copy()
    mask = codes >= 0
    out[mask] = out_values[new[mask]]
    try:
        out = out.astype(series.dtype)
    except (TypeError, ValueError):
        pass
    return out, int((new != codes).sum())
