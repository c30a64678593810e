"""Mondrian's cutting (:func:`cut_parts`): all parts of one recursion depth cut together with
vectorized numpy, each at the median of the QI of widest normalized range that allows a cut
whose two halves both meet every per-class criterion; and what the cuts are
(:class:`MondrianCuts`), so that parts cut apart give what cutting them together gives.

A cut depends on the rows only through their QI ranks and sensitive codes: rows equal in all of
them always fall on the same side. So the working "rows" may be a frequency table's cells, each
with the number of rows it stands for (``weights``): the median is the row median, the halves'
sizes and sensitive counts are summed weights, and the cuts are those of the expanded rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..risk.sensitive import CodedSensitive
from .criteria import Policy, evaluate_classes, pairs_from_rows

if TYPE_CHECKING:
    from .mondrian_types import _Dim


@dataclass
class MondrianCuts:
    """The cuts of some partition-key parts (:func:`cut_parts`), depth by depth.

    Per depth: ``tree_dim`` each node's cut QI (-1: a final class) and ``tree_cut`` each cut
    node's highest rank going left; ``lo``, ``hi``, ``hp`` (per class and QI: lowest, highest and
    highest present rank) and ``sizes`` of the depth's final classes, which take class ids in
    order. ``roots`` is the number of parts, ``cuts`` the cuts made. The cuts of parts run apart
    are the cuts of the parts run together (:meth:`concat`): a part is never compared with another.
    """

    roots: int
    cuts: int
    tree_dim: list[np.ndarray]
    tree_cut: list[np.ndarray]
    lo: list[np.ndarray]
    hi: list[np.ndarray]
    hp: list[np.ndarray]
    sizes: list[np.ndarray]

    @property
    def n_classes(self) -> int:
        return int(sum(len(s) for s in self.sizes))

    @classmethod
    def concat(cls, parts: Sequence[MondrianCuts], n_dims: int) -> MondrianCuts:
        """The cuts of ``parts`` (in the order of their parts) as one run over all of them makes
        them: depth by depth, the nodes of each part after those of the parts before."""
        depth = max((len(p.tree_dim) for p in parts), default=0)

        def at(name: str, level: int, empty: np.ndarray) -> np.ndarray:
            got = [getattr(p, name)[level] for p in parts if level < len(getattr(p, name))]
            return np.concatenate(got) if got else empty

        none2 = np.zeros((0, n_dims), np.int64)
        return cls(
            roots=sum(p.roots for p in parts), cuts=sum(p.cuts for p in parts),
            tree_dim=[at("tree_dim", i, np.zeros(0, np.int8)) for i in range(depth)],
            tree_cut=[at("tree_cut", i, np.zeros(0, np.int64)) for i in range(depth)],
            lo=[at("lo", i, none2) for i in range(depth)], hi=[at("hi", i, none2) for i in range(depth)],
            hp=[at("hp", i, none2) for i in range(depth)],
            sizes=[at("sizes", i, np.zeros(0, np.int64)) for i in range(depth)])

    @classmethod
    def stacked(cls, top: MondrianCuts, below: MondrianCuts) -> MondrianCuts:
        """The cuts of one tree whose first depths are ``top`` and whose nodes at the depth
        after them are the roots of ``below`` (in order), the rest of the tree."""
        return cls(roots=top.roots, cuts=top.cuts + below.cuts,
                   tree_dim=top.tree_dim + below.tree_dim, tree_cut=top.tree_cut + below.tree_cut,
                   lo=top.lo + below.lo, hi=top.hi + below.hi, hp=top.hp + below.hp,
                   sizes=top.sizes + below.sizes)

    def local_classes(self) -> np.ndarray:
        """Each class's depth (classes numbered in order)."""
        return np.repeat(np.arange(len(self.sizes)), [len(s) for s in self.sizes])


@dataclass
class DepthCuts:
    """One depth's decisions (:func:`decide_depth`), per node: ``final`` (no cut), ``dim`` the QI
    cut (-1: final), ``cut`` the highest rank going left, ``lhs`` and ``lhs_cells`` the left half's
    rows and working cells; ``cuts`` the number of nodes cut."""

    final: np.ndarray
    dim: np.ndarray
    cut: np.ndarray
    lhs: np.ndarray
    lhs_cells: np.ndarray
    cuts: int


TryDim = Callable[[int, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]


def decide_depth(dims: Sequence[_Dim], k: int, sizes: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                 hp: np.ndarray, try_dim: TryDim) -> DepthCuts:
    """Mondrian's rule for the nodes of one depth, given each node's rows (``sizes``) and, per
    node and QI, its lowest, highest and highest present rank: a node of fewer than ``2k`` rows
    or of one value in every QI is final; the others try their QIs from the widest normalized
    range down, each cut by ``try_dim(j, nodes)`` (:func:`_try_cut` on the working rows, or the
    same on a node's histogram over QI ``j`` and the sensitive codes), until one is accepted."""
    D = len(dims)
    widths = np.zeros((len(sizes), D))
    for j, d in enumerate(dims):
        widths[:, j] = d.width(lo[:, j], hp[:, j])
    decided = sizes < 2 * k  # two halves of k are impossible: final
    if D:
        decided |= (hi == lo).all(axis=1)
    else:
        decided[:] = True
    final = decided.copy()
    dim_order = np.argsort(-widths, axis=1, kind="stable")
    lhs_all = np.zeros(len(sizes), dtype=np.int64)
    lhs_cells = np.zeros(len(sizes), dtype=np.int64)
    dim_all = np.full(len(sizes), -1, dtype=np.int8)
    cut_all = np.zeros(len(sizes), dtype=np.int64)
    cuts = 0
    for attempt in range(D):
        for j in range(D):
            sel = (~decided) & (dim_order[:, attempt] == j) & (hi[:, j] > lo[:, j])
            if not sel.any():
                continue
            segs = np.flatnonzero(sel)
            ok, lhs, left_cells, cut_rank = try_dim(j, segs)
            decided[segs[ok]] = True
            lhs_all[segs[ok]] = lhs[ok]
            lhs_cells[segs[ok]] = left_cells[ok]
            dim_all[segs[ok]] = j
            cut_all[segs[ok]] = cut_rank[ok]
            cuts += int(ok.sum())
    final |= ~decided  # no QI allows a cut
    dim_all[final] = -1
    return DepthCuts(final, dim_all, cut_all, lhs_all, lhs_cells, cuts)


def halves_judge(policy: Policy, attributes: Sequence[CodedSensitive], reference: Sequence[np.ndarray]
                 ) -> Callable[..., np.ndarray]:
    """``judge(ids, n_groups, sizes, sens_codes, cell_weights)``: per group of cells (``ids``
    gives each cell's group), whether it misses a per-class criterion of ``policy``."""

    def judge(ids, n_groups: int, sizes: np.ndarray, sens_codes, cell_weights) -> np.ndarray:
        failing = sizes < policy.k
        if attributes:
            pairs = [pairs_from_rows(ids, n_groups, c, a.n_values, ref, a, weights=cell_weights)
                     for c, a, ref in zip(sens_codes, attributes, reference, strict=True)]
            failing = evaluate_classes(policy, sizes, pairs).failing
        return failing

    return judge


def cut_parts(dims: Sequence[_Dim], policy: Policy, attributes: Sequence[CodedSensitive],
              reference: Sequence[np.ndarray], w_perm: np.ndarray, w_rank: np.ndarray,
              w_sens: list[np.ndarray], sizes: np.ndarray, row_class: np.ndarray,
              progress: Callable[[int, int], None] | None = None,
              weights: np.ndarray | None = None) -> MondrianCuts:
    """Cut the parts laid out in the working arrays until no part can be cut.

    Part ``i`` is the slice of ``sizes[i]`` rows after the parts before it: ``w_perm`` holds the
    rows' positions, ``w_rank`` (QIs × rows) their ranks in ``dims``, ``w_sens`` their sensitive
    codes in ``attributes``, judged against ``reference`` (:func:`part_evaluation`). Writes each
    row's class into ``row_class`` (by position). The arrays are reordered in place.

    With ``weights`` (by position, at least 1 each) each working row is a frequency cell
    standing for that many rows, and ``sizes`` are the parts' numbers of cells: the cuts,
    classes and class sizes are those of the expanded rows (module docstring).
    """
    k = policy.k
    D = len(dims)
    cells = np.asarray(sizes, dtype=np.int64)
    w_weight: np.ndarray | None = None  # unweighted: every working row is one row
    if weights is None:
        sizes = cells.copy()
    else:
        w_weight = np.asarray(weights, dtype=np.int64)[w_perm]
        starts0 = np.concatenate([[0], np.cumsum(cells)[:-1]]).astype(np.int64)
        sizes = np.add.reduceat(w_weight, starts0) if len(w_weight) else np.zeros(len(cells), np.int64)
        sizes = np.where(cells > 0, sizes, 0).astype(np.int64)
    n = int(sizes.sum())
    w_sens = list(w_sens)

    half_failing = halves_judge(policy, attributes, reference)
    n_classes = 0
    cuts = 0
    roots = len(sizes)
    out = MondrianCuts(roots, 0, [], [], [], [], [], [])
    # the cut tree, breadth first: per node the dimension cut (-1: a final class) and, for cut
    # nodes, the highest rank going left (children of a depth's cut nodes are the next depth's
    # nodes, left half first; final nodes take class ids in order)
    while len(sizes):
        starts = np.concatenate([[0], np.cumsum(cells)[:-1]]).astype(np.int64)
        lo = np.empty((len(sizes), D), dtype=np.int64)
        hi = np.empty((len(sizes), D), dtype=np.int64)
        hp = np.empty((len(sizes), D), dtype=np.int64)  # highest present (non-missing) rank
        for j, d in enumerate(dims):
            lo[:, j] = np.minimum.reduceat(w_rank[j], starts)
            hi[:, j] = np.maximum.reduceat(w_rank[j], starts)
            if d.missing_rank >= 0:
                present = np.where(w_rank[j] == d.missing_rank, -1, w_rank[j])
                hp[:, j] = np.maximum.reduceat(present, starts)
            else:
                hp[:, j] = hi[:, j]

        def try_dim(j: int, segs: np.ndarray, lo=lo, hi=hi, sizes=sizes, cells=cells,
                    w_perm=w_perm, w_rank=w_rank, w_sens=w_sens, w_weight=w_weight):
            return _try_cut(dims[j], j, segs, sizes, cells, w_perm, w_rank, w_sens, w_weight, lo[:, j], hi[:, j],
                            half_failing)

        depth = decide_depth(dims, k, sizes, lo, hi, hp, try_dim)
        final, dim_all, cut_all, lhs_all, lhs_cells = (depth.final, depth.dim, depth.cut, depth.lhs,
                                                       depth.lhs_cells)
        cuts += depth.cuts
        out.tree_dim.append(dim_all)
        out.tree_cut.append(cut_all[~final])
        f = np.flatnonzero(final)
        out.lo.append(lo[f])
        out.hi.append(hi[f])
        out.hp.append(hp[f])
        out.sizes.append(sizes[f])
        if final.any():
            fmask = np.repeat(final, cells)
            ids = np.repeat(np.arange(n_classes, n_classes + len(f), dtype=np.int64), cells[f])
            row_class[w_perm[fmask]] = ids
            n_classes += len(f)
            keep = ~fmask
            w_perm = w_perm[keep]
            w_rank = w_rank[:, keep]
            w_sens = [s_[keep] for s_ in w_sens]
            w_weight = w_weight[keep] if w_weight is not None else None
        cut = np.flatnonzero(~final)
        sizes = np.stack([lhs_all[cut], sizes[cut] - lhs_all[cut]], axis=1).reshape(-1).astype(np.int64)
        cells = np.stack([lhs_cells[cut], cells[cut] - lhs_cells[cut]], axis=1).reshape(-1).astype(np.int64)
        if progress is not None:
            progress(n - int(sizes.sum()), n)

    out.cuts = cuts
    return out


def _try_cut(d: _Dim, j: int, segs: np.ndarray, sizes: np.ndarray, cells: np.ndarray,
             w_perm: np.ndarray, w_rank: np.ndarray, w_sens: list[np.ndarray], w_weight: np.ndarray | None,
             lo: np.ndarray, hi: np.ndarray, half_failing
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Cut the parts ``segs`` along dimension ``d`` (row ``j`` of ``w_rank``).

    The working arrays of accepted parts are reordered in place, left half first. Returns
    (accepted mask over ``segs``, left half's rows and cells per part, highest rank going left
    per part).
    """
    s_sizes = sizes[segs]
    s_cells = cells[segs]
    s_off = np.concatenate([[0], np.cumsum(s_cells)[:-1]]).astype(np.int64)
    if len(segs) == len(cells):
        pos = np.arange(int(s_cells.sum()), dtype=np.int64)
    else:
        pos = np.flatnonzero(np.repeat(np.isin(np.arange(len(cells)), segs), cells))
    local = np.repeat(np.arange(len(segs), dtype=np.int64), s_cells)
    v = w_rank[j][pos]
    key = local * d.n_ranks + v
    order = np.argsort(key)
    skey = key[order]
    sv = v[order]
    if w_weight is None:  # a cell is a row: positions count rows
        sw = None
        med = sv[s_off + (s_sizes - 1) // 2]
    else:
        sw = w_weight[pos][order]
        # rows up to each sorted cell (from 0 before the first): a part's rows below a cell are
        # the difference with the rows before its first cell
        rows_to = np.concatenate([[0], np.cumsum(sw)]).astype(np.int64)
        before = rows_to[s_off]
        med = sv[np.searchsorted(rows_to[1:], before + (s_sizes - 1) // 2 + 1, side="left")]
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

    def left_of(cut_: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per part: the rows and the cells with a rank up to ``cut_``."""
        at = np.searchsorted(skey, base + cut_, side="right")
        if sw is None:
            return at - s_off, at - s_off
        return rows_to[at] - before, at - s_off

    cnt_a, cells_a = left_of(cut_a)
    cnt_b, cells_b = left_of(cut_b)
    valid_a = (cut_a >= s_lo) & (cut_a < s_hi) & (cnt_a > 0) & (cnt_a < s_sizes)
    valid_b = (cut_b >= s_lo) & (cut_b < s_hi) & (cnt_b > 0) & (cnt_b < s_sizes)
    half = s_sizes / 2.0
    use_b = valid_b & (~valid_a | (np.abs(cnt_b - half) < np.abs(cnt_a - half)))
    cut = np.where(use_b, cut_b, cut_a)
    lhs = np.where(use_b, cnt_b, cnt_a)
    lhs_cells = np.where(use_b, cells_b, cells_a)
    valid = valid_a | valid_b
    sorted_sens = [s_[pos][order] for s_ in w_sens] if w_sens else None

    def halves_fail(cut_: np.ndarray, lhs_: np.ndarray) -> np.ndarray:
        """Per part: one of the two halves misses a per-class criterion."""
        hsizes = np.stack([lhs_, s_sizes - lhs_], axis=1).reshape(-1)
        ids = local * 2 + (sv > cut_[local]).astype(np.int64) if w_sens else None
        return half_failing(ids, 2 * len(segs), hsizes, sorted_sens, sw).reshape(-1, 2).any(axis=1)

    ok = valid & ~halves_fail(cut, lhs)
    cut_rank = cut
    if d.missing_rank >= 0:
        # a part holding both missing and present values is first split between them, when
        # both sides satisfy the policy: a class then never mixes the two
        cut_c = np.full(len(segs), d.missing_rank - 1, dtype=np.int64)
        cnt_c, cells_c = left_of(cut_c)
        valid_c = (s_hi == d.missing_rank) & (cnt_c > 0) & (cnt_c < s_sizes)
        prefer_c = valid_c & ~halves_fail(cut_c, cnt_c)
        lhs = np.where(prefer_c, cnt_c, lhs)
        lhs_cells = np.where(prefer_c, cells_c, lhs_cells)
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
        if w_weight is not None:
            w_weight[dst] = w_weight[src]
    return ok, lhs, lhs_cells, cut_rank


__all__ = ["DepthCuts", "MondrianCuts", "cut_parts", "decide_depth", "halves_judge"]
