"""What Mondrian publishes for its classes (:func:`finish`): each class's label per QI (a
numeric range, a hierarchy node or the set of a node's children it spans), its boxes in the QI's
own values (so a population can be placed in them), the first classes' ranges, the normalized
certainty penalty and the cut tree, from the cuts :func:`~.mondrian.cut_parts` made."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..hierarchies import MISSING_LABEL
from .cut_tree import MAX_SET_LABEL, CutTree, loose_boxes, span
from .mondrian_cuts import MondrianCuts
from .mondrian_types import MondrianResult, _Dim


def class_labels(d: _Dim, lo: np.ndarray, hi: np.ndarray, hp: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The published labels of classes of dimension ``d`` (per class: lowest, highest and
    highest present rank): the distinct boxes' (lowest rank, highest present rank, holds missing)
    in order, each class's box, and each box's label."""
    # a class is labelled by its lowest and highest present rank, and whether it holds missing
    with_missing = (hi == d.missing_rank).astype(np.int64) if d.missing_rank >= 0 else 0 * hi
    r = d.n_ranks + 1
    pair_key = (lo * r + (hp + 1)) * 2 + with_missing
    uniq, inv = np.unique(pair_key, return_inverse=True)
    b_lo, b_hp, b_missing = uniq // 2 // r, uniq // 2 % r - 1, uniq % 2 == 1
    return b_lo, b_hp, b_missing, inv.reshape(-1), _labels(d, b_lo, b_hp, b_missing)


def finish(dims: Sequence[_Dim], cuts: MondrianCuts, row_class: np.ndarray | None, suppressed: np.ndarray,
           too_small: list[dict], max_ranges: int = 1000, t0: float | None = None) -> MondrianResult:
    """Mondrian's result from its cuts: each class's labels, boxes and range, the cut tree and
    the normalized certainty penalty. ``row_class`` (each row's class by position, -1 suppressed)
    gives the rows' published labels; without it each of ``columns`` holds no rows, only its
    labels (the categories), the rows being labelled where they are (:func:`class_labels`)."""
    t0 = time.perf_counter() if t0 is None else t0
    D = len(dims)
    flo = np.concatenate(cuts.lo) if cuts.lo else np.zeros((0, D), np.int64)
    fhi = np.concatenate(cuts.hi) if cuts.hi else np.zeros((0, D), np.int64)
    fhp = np.concatenate(cuts.hp) if cuts.hp else np.zeros((0, D), np.int64)
    csizes = np.concatenate(cuts.sizes) if cuts.sizes else np.zeros(0, np.int64)
    n_classes = len(csizes)
    columns: dict[str, pd.Categorical] = {}
    ncp_total = 0.0
    label_per_class: list[np.ndarray] = []
    boxes: dict[str, dict] = {}
    for j, d in enumerate(dims):
        b_lo, b_hp, b_missing, inv, labels = class_labels(d, flo[:, j], fhi[:, j], fhp[:, j])
        cat_labels, cat_codes = np.unique(labels, return_inverse=True)
        categories = pd.Index(cat_labels, dtype=object)
        if row_class is None:
            columns[d.name] = pd.Categorical.from_codes(np.zeros(0, np.int64), categories=categories)
        else:
            class_code = cat_codes.reshape(-1)[inv]
            codes = np.full(len(row_class), -1, dtype=np.int64)
            kept = row_class >= 0
            codes[kept] = class_code[row_class[kept]]
            columns[d.name] = pd.Categorical.from_codes(codes, categories=categories)
        label_per_class.append(labels[inv])
        boxes[d.name] = _boxes(d, b_lo, b_hp, b_missing, labels, inv)
        ncp_total += float((csizes * np.minimum(d.width(flo[:, j], fhp[:, j]), 1.0)).sum())
    kept_rows = int(csizes.sum())
    ncp = ncp_total / max(kept_rows * max(D, 1), 1)
    ranges = [
        {"rows": int(csizes[c]), **{dims[j].name: str(label_per_class[j][c]) for j in range(D)}}
        for c in range(min(n_classes, max_ranges))
    ]
    tree = CutTree.encode(dims, cuts.roots, cuts.tree_dim, cuts.tree_cut)
    return MondrianResult(columns, row_class if row_class is not None else np.zeros(0, np.int64), n_classes,
                          csizes, suppressed, ncp, ranges, too_small, cuts.cuts, time.perf_counter() - t0,
                          boxes, tree)


def _boxes(d: _Dim, lo: np.ndarray, hi: np.ndarray, missing: np.ndarray, labels: np.ndarray,
           class_box: np.ndarray) -> dict:
    """The distinct published boxes of dimension ``d`` in a JSON-able, replayable form.

    A box is what its label means, in the QI's own values (never in ranks, which only exist for
    the values present in the sample), so population rows can be placed in it later:

    - numeric: ``lo <= value <= hi`` (``hi`` the highest present value; ``lo``/``hi`` None for a
      class of missing values only), missing values inside when ``missing``; dates as int64
      nanoseconds (``"date": true``);
    - categorical: the value's hierarchy label at ``level`` is one of ``members`` (a leaf at
      level 0, a hierarchy node, or the set of a node's children the label lists).

    ``class_box[c]`` is the index of class ``c``'s box.
    """
    out: dict = {"kind": "numeric" if d.numeric else "categorical",
                 "label": [str(x) for x in labels], "class_box": class_box.astype(int).tolist()}
    if d.numeric:
        assert d.values is not None
        only_missing = hi < 0
        cast = int if d.is_date or np.all(np.mod(d.values, 1) == 0) else float
        out["date"] = bool(d.is_date)
        out["lo"] = [None if m else cast(d.values[a]) for a, m in zip(lo, only_missing, strict=True)]
        out["hi"] = [None if m else cast(d.values[b]) for b, m in zip(hi, only_missing, strict=True)]
        out["missing"] = [bool(x) for x in missing]
        return out
    levels, members = [], []
    for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
        level, names = _coverage(d, a, b)
        levels.append(level)
        members.append(names)
    out["level"], out["members"] = levels, members
    # boxes whose node label is wider than the class's values: the only boxes a population
    # row outside the class's branch of the cut tree can fall into
    out["loose"] = loose_boxes(d, lo.tolist(), hi.tolist())
    return out


def _coverage(d: _Dim, lo: int, hi: int) -> tuple[int, list[str]]:
    """(level, labels) of the hierarchy nodes the ranks [lo, hi] of a categorical ``d`` span.

    One label when the range is a single value or a whole node (or spans more than
    MAX_SET_LABEL children); otherwise the labels of the children it spans, sorted, so a class
    gets the same label however the children are ranked.
    """
    if lo == hi:
        return 0, [str(d.labels[0][d.anc[0][lo]])]
    lvl, parent, children, whole = span(d, lo, hi)
    if whole or len(children) > MAX_SET_LABEL:
        return lvl + 1, [str(d.labels[lvl + 1][parent])]
    return lvl, sorted(str(d.labels[lvl][c]) for c in children)


def _labels(d: _Dim, lo: np.ndarray, hi: np.ndarray, missing: np.ndarray) -> np.ndarray:
    """Published labels of classes spanning ranks [lo, hi] of dimension ``d`` (object array).

    For a numeric QI with missing values, ``hi`` is the highest present rank (-1 when the class
    holds only missing values, labelled ``<missing>``) and ``missing`` marks classes holding
    missing values too (labelled ``"lo-hi|<missing>"``).
    """
    if d.numeric:
        only_missing = hi < 0
        hi = np.where(only_missing, lo, hi)
        lo = np.where(only_missing, 0, lo)
        if not d.is_date and np.all(np.mod(d.values, 1) == 0):
            a, b = d.values[lo], d.values[hi]
            sa = pd.Series(a.astype(np.int64)).astype(str).to_numpy(dtype=object)
            sb = pd.Series(b.astype(np.int64)).astype(str).to_numpy(dtype=object)
            out = np.where(lo == hi, sa, sa + "-" + sb).astype(object)
        else:
            out = np.array([_label(d, int(x), int(y)) for x, y in zip(lo, hi, strict=True)], dtype=object)
        out = np.where(missing & ~only_missing, out + "|" + MISSING_LABEL, out)
        return np.where(only_missing, MISSING_LABEL, out).astype(object)
    return np.array([_label(d, int(x), int(y)) for x, y in zip(lo, hi, strict=True)], dtype=object)


def _label(d: _Dim, lo: int, hi: int) -> str:
    """Published label of the range [lo, hi] (ranks) of dimension ``d``."""
    if d.numeric:
        assert d.values is not None
        a, b = d.values[lo], d.values[hi]
        if d.is_date:  # dates are held as int64 nanoseconds
            fa = pd.Timestamp(int(a)).strftime("%Y-%m-%d")
            fb = pd.Timestamp(int(b)).strftime("%Y-%m-%d")
            return fa if lo == hi else f"[{fa}, {fb}]"
        if float(a).is_integer() and float(b).is_integer():
            return f"{int(a)}" if lo == hi else f"{int(a)}-{int(b)}"
        return f"{a:g}" if lo == hi else f"[{a:g}, {b:g}]"
    _, names = _coverage(d, lo, hi)
    return names[0] if len(names) == 1 else "{" + ", ".join(names) + "}"


__all__ = ["class_labels", "finish"]
