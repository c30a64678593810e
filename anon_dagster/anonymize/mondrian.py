"""Strict multidimensional Mondrian (LeFevre, DeWitt, Ramakrishnan 2006) on integer codes.

Definition. The table is split recursively into parts; a part is cut in two at the median of one
QI, the one of widest normalized range that allows a cut, and only when *both* halves satisfy
every per-class criterion of the policy (k, and l-diversity / t-closeness when declared). A part
no QI can cut is a final class. Every criterion is judged as the release gate measures the
published table (:func:`~anon_dagster.anonymize.criteria.evaluate_classes`, the risk kernel's
figures): t-closeness with the distance of the sensitive attribute's kind (total variation,
ordered EMD for an ordinal or numeric attribute, hierarchical EMD with a hierarchy) against the
distribution of the published rows, the rows of partition-key parts set aside as the gate's
reference leaves them out (:func:`~anon_dagster.anonymize.criteria.published_evaluation`). Each QI of a class is published as the range of its values in
the class: numeric QIs as an interval ``"lo-hi"`` (a single value when lo = hi), categorical QIs
as the lowest hierarchy node covering the class's values (or the set of that node's children it
spans, sorted: ``"{a, b}"``).

Categorical QIs are cut *along their hierarchy*: values are laid out in the hierarchy's
depth-first order, so every subtree is a contiguous range. Children come in the order the
hierarchy lists them (a table hierarchy: the order of its file; a node ranks where its first
listed value does); hierarchies that list no order (mask, date, suppression-only) lay values out
in sorted label order. Never in order of first appearance, so the same table in any row order
gets the same classes; a cut is only made at a boundary between children of the
lowest node that spans the part, the boundary nearest the median row. Numeric QIs (numeric or
date dtype, no missing values) are cut at the median value.

Partition keys are never generalized: the table is first split by them and Mondrian runs inside
each part. A part that does not itself satisfy the policy (fewer than k rows, say) is reported and
suppressed only within ``max_suppression``; beyond it :class:`MondrianNoSolution` is raised.

Speed: all parts of one recursion depth are cut together with vectorized numpy (segments of one
permutation array, ``reduceat`` for ranges, one sort per QI per depth for the medians), so the cost
is about (depth × rows × QIs), never a Python loop per part.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from ..errors import UserError
from ..hierarchies import Hierarchy, TableHierarchy
from ..risk.sensitive import CodedSensitive
from .coding import CodedQI, code_qi, combine, group
from .criteria import (
    Policy,
    SensitivePairs,
    as_coded,
    pairs_from_rows,
    published_evaluation,
    suppression_budget,
)
from .cut_tree import pack_array as pack_array  # public names of this module, kept importable
from .cut_tree import unpack_array as unpack_array
from .mondrian_cuts import cut_parts
from .mondrian_types import MondrianResult, _Dim


class MondrianNoSolution(UserError):
    """Parts of the table cannot reach the policy within the suppression budget."""


def _numeric_dim(name: str, series: pd.Series) -> _Dim | None:
    """A numeric or date QI in value order; missing values rank above every value."""
    kind = series.dtype.kind if hasattr(series.dtype, "kind") else "O"
    if kind not in "iufM" or series.isna().all():
        return None
    codes, uniques = pd.factorize(series, sort=True, use_na_sentinel=True)
    values = np.asarray(uniques)
    if kind == "M":
        values = values.astype("datetime64[ns]").astype(np.int64)
    values = values.astype(np.float64) if kind != "M" else values
    span = float(values[-1] - values[0]) if len(values) > 1 else 1.0
    codes = codes.astype(np.int64)
    missing_rank = -1
    n_ranks = len(values)
    if (codes < 0).any():
        missing_rank = n_ranks
        codes = np.where(codes < 0, missing_rank, codes)
        n_ranks += 1
        # the missing rank reads as the largest value, so widths ignore it
        values = np.append(values, values[-1])
    return _Dim(name, codes, n_ranks, True, values=values, span=span or 1.0,
                is_date=kind == "M", missing_rank=missing_rank)


def _leaf_positions(qi: CodedQI) -> np.ndarray:
    """Each level-0 code's position in the hierarchy's order of values.

    A table hierarchy's order is the order its file lists the values (values it does not list,
    such as missing values, come after, by label); other hierarchies list no order, so values are
    laid out in sorted label order. Never the order of first appearance in the data (the codes'
    order), which would make cuts on tied medians depend on the order of the rows.
    """
    labels0 = np.asarray([str(x) for x in qi.labels[0]], dtype=object)
    n0 = len(labels0)
    if n0 == 0:
        return np.zeros(0, dtype=np.int64)
    _, by_label = np.unique(labels0, return_inverse=True)
    listed = qi.hierarchy.rows if isinstance(qi.hierarchy, TableHierarchy) else None
    if listed:
        position = {label: i for i, label in enumerate(listed)}
        primary = np.array([position.get(label, len(position)) for label in labels0], dtype=np.int64)
    else:
        primary = np.zeros(n0, dtype=np.int64)
    order = np.lexsort((by_label.reshape(-1), primary))
    pos = np.empty(n0, dtype=np.int64)
    pos[order] = np.arange(n0)
    return pos


def _categorical_dim(qi: CodedQI) -> _Dim:
    n0 = len(qi.uniques)
    top = qi.n_levels - 1
    # depth-first order: sort leaves by their ancestors from the top level down, a node ranked by
    # the hierarchy position of its first value (so children keep the hierarchy's order and the
    # layout depends on the values present, not on the order of the rows)
    leaf_pos = _leaf_positions(qi)
    keys = []
    for lv in range(0, top):  # lexsort: last key is primary
        node_pos = np.full(qi.cardinality(lv), n0, dtype=np.int64)
        np.minimum.at(node_pos, qi.level_maps[lv], leaf_pos)
        keys.append(node_pos[qi.level_maps[lv]])
    order = np.lexsort(keys) if keys else np.arange(n0)
    rank_of_code = np.empty(n0, dtype=np.int64)
    rank_of_code[order] = np.arange(n0)
    anc, first, last = [], [], []
    for lv in range(qi.n_levels):
        a = qi.level_maps[lv][order]
        card = qi.cardinality(lv)
        f = np.full(card, n0, dtype=np.int64)
        la = np.full(card, -1, dtype=np.int64)
        np.minimum.at(f, a, np.arange(n0))
        np.maximum.at(la, a, np.arange(n0))
        anc.append(a)
        first.append(f)
        last.append(la)
    return _Dim(qi.name, rank_of_code[qi.codes], n0, False, anc=anc, first=first, last=last,
                labels=qi.labels, span=float(max(n0 - 1, 1)))


def qi_dim(series: pd.Series, hierarchy: Hierarchy | None) -> _Dim:
    """One QI laid out in rank space: numeric (numeric or date dtype, not all missing) in value
    order, else categorical in its hierarchy's depth-first order (:func:`_categorical_dim`).

    The layout depends only on the column's distinct values and the order they first appear in:
    the dimension of a table's distinct values (in that order) is the dimension of the table.
    """
    d = _numeric_dim(str(series.name), series)
    return d if d is not None else _categorical_dim(code_qi(series, hierarchy))


def part_evaluation(policy: Policy, part_sizes: np.ndarray,
                    pairs: Sequence[SensitivePairs] = ()) -> tuple[np.ndarray, list[np.ndarray]]:
    """The partition-key parts that cannot be published even unsplit, and the reference of
    t-closeness (rows per sensitive code of the parts that remain).

    ``pairs`` are the parts × sensitive-code counts (one per attribute, empty when the policy
    declares no l or t criterion). As the gate measures the parts published: those failing set
    aside, the rest judged against the rows that remain, until no more fails.
    """
    if pairs:
        failing = published_evaluation(policy, part_sizes, pairs).failing
        return failing, [p.kept_total(failing) for p in pairs]
    return part_sizes < policy.k, []


def mondrian(qis: Sequence[tuple[pd.Series, Hierarchy | None]], policy: Policy,
             partition_codes: Sequence[np.ndarray] = (),
             sensitive: Sequence[CodedSensitive | np.ndarray] = (),
             partition_labels: Callable[[int], str] | None = None,
             max_ranges: int = 1000,
             progress: Callable[[int, int], None] | None = None) -> MondrianResult:
    """Run Mondrian on the QI columns (series with their hierarchy), inside partition-key parts.

    ``partition_codes`` are the partition keys' integer codes per row (never generalized);
    ``sensitive`` the sensitive attributes as the gate measures them
    (:meth:`~anon_dagster.anonymize.criteria.SensitiveAttribute.code`; plain codes are a nominal
    attribute), used when the policy declares l or t criteria.
    """
    t0 = time.perf_counter()
    n = len(qis[0][0]) if qis else (len(partition_codes[0]) if partition_codes else 0)
    dims = [qi_dim(series, hierarchy) for series, hierarchy in qis]
    attributes = [as_coded(s) for s in sensitive] if policy.needs_sensitive else []
    sens = [a.codes.astype(np.int64, copy=False) for a in attributes]
    k = policy.k

    # ----- initial parts: the partition keys' groups ----------------------------------------
    if partition_codes:
        cols = [np.asarray(c, dtype=np.int64) for c in partition_codes]
        key, space = combine(cols, [int(c.max()) + 1 if len(c) else 1 for c in cols])
        _, part, part_sizes = group(key, space)
        perm = np.argsort(part, kind="stable")
    else:
        part = np.zeros(n, dtype=np.int64)
        part_sizes = np.array([n], dtype=np.int64)
        perm = np.arange(n, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(part_sizes)[:-1]]).astype(np.int64)
    ends = starts + part_sizes
    pairs = ([pairs_from_rows(part, len(part_sizes), c, a.n_values, None, a)
              for c, a in zip(sens, attributes, strict=True)] if attributes and n else [])
    part_fail, reference = part_evaluation(policy, part_sizes, pairs) if n else (part_sizes < k, [])
    too_small = []
    suppressed = np.zeros(n, dtype=bool)
    if part_fail.any():
        for p in np.flatnonzero(part_fail):
            row0 = perm[starts[p]]
            label = partition_labels(int(row0)) if partition_labels else f"part {p}"
            too_small.append({"partition": label, "rows": int(part_sizes[p])})
        check_parts_budget(policy, n, too_small)
        for p in np.flatnonzero(part_fail):
            suppressed[perm[starts[p]:ends[p]]] = True
        starts, ends = starts[~part_fail], ends[~part_fail]

    order0 = perm[~suppressed[perm]]
    w_rank = np.stack([d.rank[order0] for d in dims]) if dims else np.zeros((0, len(order0)), np.int64)
    row_class = np.full(n, -1, dtype=np.int64)
    cuts = cut_parts(dims, policy, attributes, reference, order0, w_rank, [s_[order0] for s_ in sens],
                     (ends - starts).astype(np.int64), row_class, progress)
    from .mondrian_labels import finish

    return finish(dims, cuts, row_class, suppressed, too_small, max_ranges, t0)


def check_parts_budget(policy: Policy, n: int, too_small: list[dict]) -> None:
    """Raise :class:`MondrianNoSolution` when the parts that cannot reach the policy even
    unsplit (``too_small``: their label and rows) hold more rows than the suppression budget."""
    budget = suppression_budget(policy, n)
    lost = sum(t["rows"] for t in too_small)
    if lost > budget:
        names = ", ".join(f"{t['partition']} ({t['rows']} rows)" for t in too_small[:5])
        raise MondrianNoSolution(
            f"{len(too_small)} partition-key part(s) cannot reach the policy "
            f"({', '.join(policy.names())}) even unsplit: {names}; suppressing them would remove "
            f"{lost} rows, over the budget of {budget} (max_suppression={policy.max_suppression:g})"
        )

