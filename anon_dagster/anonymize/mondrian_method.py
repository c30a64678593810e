"""Mondrian as :func:`anon_dagster.anonymize.anonymize` runs it: the cuts per partition, the
minimum part size raised until prosecutor_avg holds, and the boxes and cut tree the record keeps
so that a population can be placed by replaying them."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pandas as pd

from ..errors import HierarchyError
from ..hierarchies import _as_label
from .coding import factorize
from .criteria import Policy, avg_risk_ok
from .mondrian import MondrianNoSolution, MondrianResult, mondrian
from .outcome import NoSolution


def check_coverage(work, spec, columns) -> None:
    """Raise :class:`HierarchyError` (naming the spec) when a hierarchy of ``columns`` misses a value of ``work``."""
    for c in columns:
        try:
            spec.hierarchies[c].table(pd.unique(work[c]))
        except HierarchyError as exc:
            raise HierarchyError(f"{spec.label}: {exc}") from None


def run_mondrian(work, spec, policy, sens_coded, progress):
    """The recoded table, the rows suppressed and the record's ``mondrian`` entry."""
    gen, pks = list(spec.generalized_qis), list(spec.partition_keys)
    check_coverage(work, spec, gen)
    pcodes = [factorize(work[c])[0] for c in pks]

    def part_label(row: int) -> str:
        return ", ".join(f"{c}={work[c].iloc[row]}" for c in pks) or "whole table"

    def run(pol: Policy):
        try:
            return mondrian([(work[c], spec.hierarchies[c]) for c in gen], pol, pcodes, sens_coded,
                            partition_labels=part_label, progress=progress)
        except MondrianNoSolution as exc:
            raise NoSolution(f"{spec.label}: {exc}") from None

    min_part, m = reach_prosecutor_avg(spec, policy, run)
    full = work.copy()
    for c in gen:
        full[c] = pd.Series(m.columns[c], index=work.index)
    # each class's partition-key values (from its first row), so the boxes can be replayed
    kept = np.flatnonzero(m.row_class >= 0)
    _, first = np.unique(m.row_class[kept], return_index=True)
    reps = kept[first]
    info = mondrian_info(m, min_part, {c: work[c].iloc[reps].tolist() for c in pks})
    return full, m.suppressed, info


def reach_prosecutor_avg(spec, policy: Policy, run: Callable[[Policy], MondrianResult]
                         ) -> tuple[int, MondrianResult]:
    """The minimum part size and Mondrian's result at it: ``run(policy)`` (Mondrian on the
    table, wherever it runs), and when prosecutor_avg fails there the smallest larger minimum
    part size at which it holds."""
    def avg_ok(m: MondrianResult) -> bool:
        return avg_risk_ok(policy, m.n_classes, int(m.class_sizes.sum()))

    m = run(policy)
    if avg_ok(m):
        return policy.k, m
    # prosecutor_avg is a table-level criterion Mondrian cannot check per cut: raise the
    # minimum part size until it holds (parts of ceil(1/threshold) rows always satisfy it),
    # binary-searching the smallest such size.
    lo, hi = policy.k + 1, max(math.ceil(1.0 / policy.prosecutor_avg - 1e-9), policy.k + 1)
    best = None
    while lo <= hi:
        mid = (lo + hi) // 2
        cand = run(replace(policy, k=mid))
        if avg_ok(cand):
            best, hi = (mid, cand), mid - 1
        else:
            lo = mid + 1
    if best is None:
        raise NoSolution(
            f"{spec.label}: Mondrian cannot reach prosecutor_avg={policy.prosecutor_avg:g} "
            f"(best {m.n_classes / max(int(m.class_sizes.sum()), 1):.4g} with parts of at least {policy.k} rows)"
        )
    return best


def mondrian_info(m: MondrianResult, min_part: int, partition_keys: dict[str, list]) -> dict:
    """The record's ``mondrian`` entry; ``partition_keys`` holds each class's partition-key
    values (in class order), so the boxes can be replayed."""
    boxes = {"classes": m.n_classes,
             "partition_keys": {c: [_as_label(v) for v in values] for c, values in partition_keys.items()},
             "columns": m.boxes,
             # the cut tree, so a large population is placed by replaying it (cut_tree.py)
             "tree": m.tree.to_json() if m.tree is not None else None}
    return {"mondrian": {
        "ncp": round(m.ncp, 6), "cuts": m.cuts, "classes": m.n_classes, "min_part_size": min_part,
        "parts_suppressed": m.too_small_parts, "ranges": m.ranges,
        "ranges_truncated": max(m.n_classes - len(m.ranges), 0), "boxes": boxes,
    }}
