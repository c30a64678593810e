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
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import UserError
from ..hierarchies import MISSING_LABEL, Hierarchy, TableHierarchy
from ..risk.sensitive import CodedSensitive
from .coding import CodedQI, code_qi, combine, group
from .criteria import (
    Policy,
    as_coded,
    evaluate_classes,
    pairs_from_rows,
    published_evaluation,
    suppression_budget,
)
from .cut_tree import MAX_SET_LABEL, CutTree, loose_boxes, span
from .cut_tree import pack_array as pack_array  # public names of this module, kept importable
from .cut_tree import unpack_array as unpack_array


class MondrianNoSolution(UserError):
    """Parts of the table cannot reach the policy within the suppression budget."""


@dataclass
class _Dim:
    """One generalized QI in rank space (a :class:`~anon_dagster.anonymize.cut_tree.RankedQI`)."""

    name: str
    rank: np.ndarray           # per row, int64 rank (numeric: value order; categorical: DFS order)
    n_ranks: int
    numeric: bool
    values: np.ndarray | None = None      # numeric: sorted distinct values (rank -> value)
    anc: list[np.ndarray] = field(default_factory=list)    # categorical: anc[l][rank] -> code
    first: list[np.ndarray] = field(default_factory=list)  # categorical: first[l][code] -> rank
    last: list[np.ndarray] = field(default_factory=list)
    labels: list[np.ndarray] = field(default_factory=list)
    span: float = 1.0
    is_date: bool = False
    missing_rank: int = -1  # numeric with missing values: their rank (above every value)

    def width(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Normalized range of [lo, hi] (``hi`` the highest *present* value's rank, or -1)."""
        if self.numeric:
            assert self.values is not None
            hi = np.where(hi < 0, lo, hi)
            return (self.values[hi] - self.values[lo]).astype(float) / self.span
        return (hi - lo).astype(float) / self.span


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


@dataclass
class MondrianResult:
    """Mondrian's output for one table.

    ``columns`` holds each generalized QI's published labels (categorical, by position),
    ``row_class`` each row's class (-1 for a suppressed row), ``suppressed`` the suppressed rows'
    mask, ``ranges`` a per-class summary of the generalized ranges, ``ncp`` the normalized
    certainty penalty (mean over rows and QIs of the published range's share of the QI's domain),
    ``boxes`` each QI's class boxes (:func:`_boxes`), ``tree`` the cut tree
    (:class:`~anon_dagster.anonymize.cut_tree.CutTree`).
    """

    columns: dict[str, pd.Categorical]
    row_class: np.ndarray
    n_classes: int
    class_sizes: np.ndarray
    suppressed: np.ndarray
    ncp: float
    ranges: list[dict]
    too_small_parts: list[dict]
    cuts: int
    elapsed_s: float
    boxes: dict[str, dict] = field(default_factory=dict)
    tree: CutTree | None = None


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
    dims: list[_Dim] = []
    for series, hierarchy in qis:
        d = _numeric_dim(str(series.name), series)
        if d is None:
            d = _categorical_dim(code_qi(series, hierarchy))
        dims.append(d)
    attributes = [as_coded(s) for s in sensitive] if policy.needs_sensitive else []
    sens = [a.codes.astype(np.int64, copy=False) for a in attributes]
    # the reference of t-closeness: rows per sensitive code of the published table (set once
    # the partition-key parts that cannot be published are known)
    reference: list[np.ndarray] = []
    k = policy.k

    def half_failing(ids, n_groups: int, sizes: np.ndarray, sens_codes) -> np.ndarray:
        """Per group: misses a per-class criterion (``ids`` gives each row's group)."""
        failing = sizes < k
        if attributes:
            pairs = [pairs_from_rows(ids, n_groups, c, a.n_values, ref, a)
                     for c, a, ref in zip(sens_codes, attributes, reference, strict=True)]
            failing = evaluate_classes(policy, sizes, pairs).failing
        return failing

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
    if attributes and n:
        # as the gate measures the parts published: those failing set aside, the rest judged
        # against the rows that remain, until no more fails
        pairs = [pairs_from_rows(part, len(part_sizes), c, a.n_values, None, a)
                 for c, a in zip(sens, attributes, strict=True)]
        part_fail = published_evaluation(policy, part_sizes, pairs).failing
        reference[:] = [p.kept_total(part_fail) for p in pairs]
    else:
        part_fail = part_sizes < k
    too_small = []
    suppressed = np.zeros(n, dtype=bool)
    if part_fail.any():
        budget = suppression_budget(policy, n)
        lost = int(part_sizes[part_fail].sum())
        for p in np.flatnonzero(part_fail):
            row0 = perm[starts[p]]
            label = partition_labels(int(row0)) if partition_labels else f"part {p}"
            too_small.append({"partition": label, "rows": int(part_sizes[p])})
        if lost > budget:
            names = ", ".join(f"{t['partition']} ({t['rows']} rows)" for t in too_small[:5])
            raise MondrianNoSolution(
                f"{len(too_small)} partition-key part(s) cannot reach the policy "
                f"({', '.join(policy.names())}) even unsplit: {names}; suppressing them would remove "
                f"{lost} rows, over the budget of {budget} (max_suppression={policy.max_suppression:g})"
            )
        for p in np.flatnonzero(part_fail):
            suppressed[perm[starts[p]:ends[p]]] = True
        starts, ends = starts[~part_fail], ends[~part_fail]

    D = len(dims)
    # Working arrays hold only the rows of parts still being cut, in part order: part i is the
    # slice [starts[i], starts[i+1]). Finished parts are moved out after every depth.
    keep_pos = np.ones(n, dtype=bool)
    keep_pos[np.flatnonzero(suppressed)] = False
    order0 = perm[keep_pos[perm]]
    w_perm = order0
    w_rank = np.stack([d.rank[order0] for d in dims]) if D else np.zeros((0, len(order0)), np.int64)
    w_sens = [s_[order0] for s_ in sens]
    sizes = (ends - starts).astype(np.int64)
    row_class = np.full(n, -1, dtype=np.int64)
    class_lo, class_hi, class_hp, class_sizes = [], [], [], []
    n_classes = 0
    cuts = 0
    roots = len(sizes)
    # the cut tree, breadth first: per node the dimension cut (-1: a final class) and, for cut
    # nodes, the highest rank going left (children of a depth's cut nodes are the next depth's
    # nodes, left half first; final nodes take class ids in order)
    tree_dim: list[np.ndarray] = []
    tree_cut: list[np.ndarray] = []
    while len(sizes):
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        lo = np.empty((len(sizes), D), dtype=np.int64)
        hi = np.empty((len(sizes), D), dtype=np.int64)
        widths = np.zeros((len(sizes), D))
        hp = np.empty((len(sizes), D), dtype=np.int64)  # highest present (non-missing) rank
        for j, d in enumerate(dims):
            lo[:, j] = np.minimum.reduceat(w_rank[j], starts)
            hi[:, j] = np.maximum.reduceat(w_rank[j], starts)
            if d.missing_rank >= 0:
                present = np.where(w_rank[j] == d.missing_rank, -1, w_rank[j])
                hp[:, j] = np.maximum.reduceat(present, starts)
            else:
                hp[:, j] = hi[:, j]
            widths[:, j] = d.width(lo[:, j], hp[:, j])
        decided = sizes < 2 * k  # two halves of k are impossible: final
        if D:
            decided |= (hi == lo).all(axis=1)
        else:
            decided[:] = True
        final = decided.copy()
        dim_order = np.argsort(-widths, axis=1, kind="stable")
        lhs_all = np.zeros(len(sizes), dtype=np.int64)
        dim_all = np.full(len(sizes), -1, dtype=np.int8)
        cut_all = np.zeros(len(sizes), dtype=np.int64)
        for attempt in range(D):
            for j, d in enumerate(dims):
                sel = (~decided) & (dim_order[:, attempt] == j) & (hi[:, j] > lo[:, j])
                if not sel.any():
                    continue
                segs = np.flatnonzero(sel)
                ok, lhs, cut_rank = _try_cut(d, j, segs, starts, sizes, w_perm, w_rank, w_sens,
                                             lo[:, j], hi[:, j], half_failing)
                decided[segs[ok]] = True
                lhs_all[segs[ok]] = lhs[ok]
                dim_all[segs[ok]] = j
                cut_all[segs[ok]] = cut_rank[ok]
                cuts += int(ok.sum())
        final |= ~decided  # no QI allows a cut
        dim_all[final] = -1
        tree_dim.append(dim_all)
        tree_cut.append(cut_all[~final])
        if final.any():
            f = np.flatnonzero(final)
            fmask = np.repeat(final, sizes)
            ids = np.repeat(np.arange(n_classes, n_classes + len(f), dtype=np.int64), sizes[f])
            row_class[w_perm[fmask]] = ids
            class_lo.append(lo[f])
            class_hi.append(hi[f])
            class_hp.append(hp[f])
            class_sizes.append(sizes[f])
            n_classes += len(f)
            keep = ~fmask
            w_perm = w_perm[keep]
            w_rank = w_rank[:, keep]
            w_sens = [s_[keep] for s_ in w_sens]
        cut = np.flatnonzero(~final)
        halves = np.stack([lhs_all[cut], sizes[cut] - lhs_all[cut]], axis=1).reshape(-1)
        sizes = halves.astype(np.int64)
        if progress is not None:
            progress(n - int(sizes.sum()), n)

    D_ = D
    flo = np.concatenate(class_lo) if class_lo else np.zeros((0, D_), np.int64)
    fhi = np.concatenate(class_hi) if class_hi else np.zeros((0, D_), np.int64)
    fhp = np.concatenate(class_hp) if class_hp else np.zeros((0, D_), np.int64)
    csizes = np.concatenate(class_sizes) if class_sizes else np.zeros(0, np.int64)

    columns: dict[str, pd.Categorical] = {}
    ncp_total = 0.0
    label_per_class: list[np.ndarray] = []
    boxes: dict[str, dict] = {}
    kept = row_class >= 0
    for j, d in enumerate(dims):
        # a class is labelled by its lowest and highest present rank, and whether it holds missing
        with_missing = (fhi[:, j] == d.missing_rank).astype(np.int64) if d.missing_rank >= 0 else 0 * fhi[:, j]
        r = d.n_ranks + 1
        pair_key = (flo[:, j] * r + (fhp[:, j] + 1)) * 2 + with_missing
        uniq, inv = np.unique(pair_key, return_inverse=True)
        inv = inv.reshape(-1)
        labels = _labels(d, uniq // 2 // r, uniq // 2 % r - 1, uniq % 2 == 1)
        cat_labels, cat_codes = np.unique(labels, return_inverse=True)
        class_code = cat_codes.reshape(-1)[inv]
        codes = np.full(n, -1, dtype=np.int64)
        codes[kept] = class_code[row_class[kept]]
        columns[d.name] = pd.Categorical.from_codes(codes, categories=pd.Index(cat_labels, dtype=object))
        label_per_class.append(labels[inv])
        boxes[d.name] = _boxes(d, uniq // 2 // r, uniq // 2 % r - 1, uniq % 2 == 1, labels, inv)
        ncp_total += float((csizes * np.minimum(d.width(flo[:, j], fhp[:, j]), 1.0)).sum())
    kept_rows = int(csizes.sum())
    ncp = ncp_total / max(kept_rows * max(D, 1), 1)
    ranges = [
        {"rows": int(csizes[c]), **{dims[j].name: str(label_per_class[j][c]) for j in range(D)}}
        for c in range(min(n_classes, max_ranges))
    ]
    tree = CutTree.encode(dims, roots, tree_dim, tree_cut)
    return MondrianResult(columns, row_class, n_classes, csizes, suppressed, ncp, ranges,
                          too_small, cuts, time.perf_counter() - t0, boxes, tree)


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


def _try_cut(d: _Dim, j: int, segs: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
             w_perm: np.ndarray, w_rank: np.ndarray, w_sens: list[np.ndarray],
             lo: np.ndarray, hi: np.ndarray, half_failing
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cut the parts ``segs`` along dimension ``d`` (row ``j`` of ``w_rank``).

    The working arrays of accepted parts are reordered in place, left half first. Returns
    (accepted mask over ``segs``, left-half size per part, highest rank going left per part).
    """
    s_sizes = sizes[segs]
    s_off = np.concatenate([[0], np.cumsum(s_sizes)[:-1]]).astype(np.int64)
    if len(segs) == len(sizes):
        pos = np.arange(int(s_sizes.sum()), dtype=np.int64)
    else:
        pos = np.flatnonzero(np.repeat(np.isin(np.arange(len(sizes)), segs), sizes))
    local = np.repeat(np.arange(len(segs), dtype=np.int64), s_sizes)
    v = w_rank[j][pos]
    key = local * d.n_ranks + v
    order = np.argsort(key)
    skey = key[order]
    sv = v[order]
    med = sv[s_off + (s_sizes - 1) // 2]
    base = np.arange(len(segs), dtype=np.int64) * d.n_ranks
    s_lo, s_hi = lo[segs], hi[segs]
    if d.numeric:
        cut_a = med                      # left: <= median
        cut_b = med - 1                  # left: < median
    else:
        # children level: the highest level whose ancestors of lo and hi differ
        lvl = np.zeros(len(segs), dtype=np.int64)
        for level in range(len(d.anc) - 1):
            lvl = np.where(d.anc[level][s_lo] != d.anc[level][s_hi], level, lvl)
        gfirst = np.empty(len(segs), dtype=np.int64)
        glast = np.empty(len(segs), dtype=np.int64)
        for level in np.unique(lvl):
            m = lvl == level
            g = d.anc[level][med[m]]
            gfirst[m] = d.first[level][g]
            glast[m] = d.last[level][g]
        cut_a = glast                    # left: up to the median's child group
        cut_b = gfirst - 1               # left: before the median's child group
    cnt_a = np.searchsorted(skey, base + cut_a, side="right") - s_off
    cnt_b = np.searchsorted(skey, base + cut_b, side="right") - s_off
    valid_a = (cut_a >= s_lo) & (cut_a < s_hi) & (cnt_a > 0) & (cnt_a < s_sizes)
    valid_b = (cut_b >= s_lo) & (cut_b < s_hi) & (cnt_b > 0) & (cnt_b < s_sizes)
    half = s_sizes / 2.0
    use_b = valid_b & (~valid_a | (np.abs(cnt_b - half) < np.abs(cnt_a - half)))
    cut = np.where(use_b, cut_b, cut_a)
    lhs = np.where(use_b, cnt_b, cnt_a)
    valid = valid_a | valid_b
    sorted_sens = [s_[pos][order] for s_ in w_sens] if w_sens else None

    def halves_fail(cut_: np.ndarray, lhs_: np.ndarray) -> np.ndarray:
        """Per part: one of the two halves misses a per-class criterion."""
        hsizes = np.stack([lhs_, s_sizes - lhs_], axis=1).reshape(-1)
        ids = local * 2 + (sv > cut_[local]).astype(np.int64) if w_sens else None
        return half_failing(ids, 2 * len(segs), hsizes, sorted_sens).reshape(-1, 2).any(axis=1)

    ok = valid & ~halves_fail(cut, lhs)
    cut_rank = cut
    if d.missing_rank >= 0:
        # a part holding both missing and present values is first split between them, when
        # both sides satisfy the policy: a class then never mixes the two
        cut_c = np.full(len(segs), d.missing_rank - 1, dtype=np.int64)
        cnt_c = np.searchsorted(skey, base + cut_c, side="right") - s_off
        valid_c = (s_hi == d.missing_rank) & (cnt_c > 0) & (cnt_c < s_sizes)
        prefer_c = valid_c & ~halves_fail(cut_c, cnt_c)
        lhs = np.where(prefer_c, cnt_c, lhs)
        cut_rank = np.where(prefer_c, cut_c, cut_rank)
        ok |= prefer_c
    if ok.any():
        take = ok[local[order]]
        src = pos[order][take]
        dst = pos[ok[local]]
        w_perm[dst] = w_perm[src]
        for r in range(len(w_rank)):
            w_rank[r][dst] = w_rank[r][src]
        for s_ in w_sens:
            s_[dst] = s_[src]
    return ok, lhs, cut_rank


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
