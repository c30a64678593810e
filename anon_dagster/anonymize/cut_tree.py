"""Mondrian's cut tree: its record format (``mondrian.boxes.tree``) and its replay on a population.

Encoding (:meth:`CutTree.encode`, written by :func:`~anon_dagster.anonymize.mondrian.mondrian`).
The nodes are listed breadth first: the roots are the partition-key parts Mondrian ran on, in
the order of their classes; the children of one depth's cut nodes are the next depth's nodes,
left half first; final nodes (classes) take class ids in order. Per node ``dim`` is the index in
``columns`` of the QI it is cut on, or -1 for a final class; per cut node ``cut`` is the highest
value going left: a cut sends left the values ``<= cut``. For a numeric QI that is a value
(dates as int64 nanoseconds; missing values always go right); for a categorical QI a rank of the
hierarchy's depth-first order of the values the sample had, whose nodes are listed per level in
``ranks`` as (labels, first rank, last rank). ``dim`` (int8) and ``cut`` (float64) are stored
as zlib-compressed little-endian bytes in base64 (:func:`pack_array`). Categorical boxes name
the *loose* ones (:func:`loose_boxes`): labelled by a hierarchy node wider than the class, the
only boxes a row outside their class's branch of the tree can fall into.

Replay (:func:`replay`): every distinct population combination starts at its part's root and
goes down one depth per vectorized pass, left when its coordinate is ``<= cut``; at a final
node it is paired with that class when the class's boxes hold its values. See
docs/population-placement.md for why this equals testing every class box.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from ..errors import DataError, HierarchyError
from ..hierarchies import Hierarchy
from .record_json import JsonObject, key

TREE_VERSION = 1
# a class spanning more of a node's children than this is labelled with the node itself
MAX_SET_LABEL = 8


def pack_array(a: np.ndarray) -> str:
    """A numpy array's bytes, zlib-compressed, in base64 (the dtype is known to the reader)."""
    return base64.b64encode(zlib.compress(np.ascontiguousarray(a).tobytes(), 6)).decode("ascii")


def unpack_array(text: str, dtype: str) -> np.ndarray:
    """Inverse of :func:`pack_array`."""
    return np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype=dtype)


class RankedQI(Protocol):
    """One generalized QI as Mondrian lays it out (``mondrian._Dim``): what the tree records.

    Numeric: ``values[rank]`` the sorted distinct values. Categorical: per hierarchy level
    ``anc[level][rank]`` the node holding a rank, ``first``/``last[level][node]`` its rank span,
    ``labels[level][node]`` its label.
    """

    name: str
    numeric: bool
    values: np.ndarray | None
    anc: list[np.ndarray]
    first: list[np.ndarray]
    last: list[np.ndarray]
    labels: list[np.ndarray]


@dataclass(frozen=True, kw_only=True)
class CutTree(JsonObject):
    """The record of Mondrian's cut tree (see the module docstring for each key)."""

    version: int = key("int")
    columns: list[str] = key("list")
    roots: int = key("int")
    nodes: int = key("int")
    dim: str = key("str")
    cut: str = key("str")
    ranks: dict[str, dict[str, list]] = key("object")

    @classmethod
    def encode(cls, dims: Sequence[RankedQI], roots: int, tree_dim: list[np.ndarray],
               tree_cut: list[np.ndarray]) -> CutTree:
        """The tree of ``roots`` parts from the per-depth node arrays Mondrian built: per depth,
        ``tree_dim`` each node's cut QI (-1 final) and ``tree_cut`` each cut node's highest rank
        going left."""
        dim = np.concatenate(tree_dim) if tree_dim else np.zeros(0, np.int8)
        cut_rank = np.concatenate(tree_cut) if tree_cut else np.zeros(0, np.int64)
        cut = np.zeros(len(cut_rank), dtype=np.float64)
        cut_dim = dim[dim >= 0]
        ranks: dict[str, dict[str, list]] = {}
        for j, d in enumerate(dims):
            sel = cut_dim == j
            if d.numeric:
                assert d.values is not None
                cut[sel] = d.values[cut_rank[sel]].astype(np.float64)
            else:
                cut[sel] = cut_rank[sel]
                ranks[d.name] = {"labels": [[str(x) for x in lab] for lab in d.labels],
                                 "first": [f.astype(int).tolist() for f in d.first],
                                 "last": [la.astype(int).tolist() for la in d.last]}
        return cls(version=TREE_VERSION, columns=[d.name for d in dims], roots=int(roots),
                   nodes=int(len(dim)), dim=pack_array(dim.astype("<i1")),
                   cut=pack_array(cut.astype("<f8")), ranks=ranks)

    def arrays(self, n_classes: int, source: str) -> tuple[np.ndarray, np.ndarray]:
        """(dim as int64, cut) decoded, checked against the node count and ``n_classes``."""
        dim = unpack_array(self.dim, "<i1").astype(np.int64)
        cut = unpack_array(self.cut, "<f8")
        if len(dim) != self.nodes or int((dim >= 0).sum()) != len(cut) or int((dim < 0).sum()) != n_classes:
            raise DataError(f"{source}: transformation record: the Mondrian cut tree does not match "
                            f"its {n_classes} class boxes")
        return dim, cut

    def replayable(self, gen: list[str], pks: list[str], generalized_qis: Sequence[str],
                   partition_keys: Sequence[str]) -> bool:
        """Whether the tree can place a population matched on ``gen`` and ``pks``: on every QI
        that was cut and every partition key (lacking one, a row would go down both sides)."""
        return (self.version == TREE_VERSION and list(self.columns) == gen
                and list(generalized_qis) == gen and list(partition_keys) == pks)


# ----- loose categorical boxes ---------------------------------------------------------------------


def span(d: RankedQI, lo: int, hi: int) -> tuple[int, int, np.ndarray, bool]:
    """The smallest hierarchy node holding the ranks [lo, hi] (lo < hi) of a categorical ``d``.

    Returns (level of its children, the node, the children the range spans, whether the range
    covers the whole node).
    """
    lvl = 0
    for level in range(len(d.anc) - 1):
        if d.anc[level][lo] != d.anc[level][hi]:
            lvl = level
    parent = d.anc[lvl + 1][lo]
    c_lo, c_hi = d.anc[lvl][lo], d.anc[lvl][hi]
    children = np.unique(d.anc[lvl][lo:hi + 1])
    whole = d.first[lvl][c_lo] == d.first[lvl + 1][parent] and d.last[lvl][c_hi] == d.last[lvl + 1][parent]
    return lvl, parent, children, bool(whole)


def is_loose(d: RankedQI, lo: int, hi: int) -> bool:
    """Whether the ranks [lo, hi] are labelled by a whole node they do not cover.

    That happens when the range spans more than MAX_SET_LABEL of a node's children but not all
    of them: the label names the node, so its box also holds values of sibling classes.
    """
    if lo == hi:
        return False
    _, _, children, whole = span(d, lo, hi)
    return not whole and len(children) > MAX_SET_LABEL


def loose_boxes(d: RankedQI, lo: Sequence[int], hi: Sequence[int]) -> list[int]:
    """Indices of the loose boxes among the rank ranges ``[lo[i], hi[i]]`` of a categorical ``d``."""
    return [i for i, (a, b) in enumerate(zip(lo, hi, strict=True)) if is_loose(d, int(a), int(b))]


# ----- replay --------------------------------------------------------------------------------------


def numeric_values(values: np.ndarray, date: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(float value, not a number, missing) of distinct population values of a numeric box.

    Dates are int64 nanoseconds as float64. A value that does not parse is ``not a number`` but
    not missing: it lies in no box.
    """
    series = pd.Series(values, dtype=object)
    if date:
        x = pd.to_datetime(series, errors="coerce")
        na = x.isna().to_numpy()
        num = x.to_numpy(dtype="datetime64[ns]").astype(np.int64).astype(np.float64)
    else:
        x = pd.to_numeric(series, errors="coerce")
        na = x.isna().to_numpy()
        num = x.to_numpy(dtype=np.float64, na_value=np.nan)
    return num, na, pd.isna(series).to_numpy()


class BoxMembership:
    """One generalized QI's distinct population values against its boxes, pair by pair.

    ``contains(v, b)`` says whether value ``v[i]`` lies in box ``b[i]`` (numeric: ``lo <= value
    <= hi``, missing inside when ``missing``; categorical: the value's label at the box's level
    is a member), without a dense (values × boxes) matrix; ``coordinate`` places a value for the
    cut tree.
    """

    def __init__(self, values: np.ndarray, box: Mapping[str, Any], hierarchy: Hierarchy,
                 column: str, source: str) -> None:
        self.numeric = box["kind"] == "numeric"
        self.box = box
        if self.numeric:
            self.num, self.na, self.raw_na = numeric_values(values, bool(box.get("date")))
            self.lo = np.array([np.nan if v is None else float(v) for v in box["lo"]])
            self.hi = np.array([np.nan if v is None else float(v) for v in box["hi"]])
            self.missing = np.asarray(box["missing"], dtype=bool)
            return
        try:
            table = hierarchy.table(values)
        except HierarchyError as exc:
            raise HierarchyError(f"{source}: column {column!r}: {exc}") from None
        self.table = table
        n_levels = table.shape[1] if table.ndim == 2 else 0
        # one id per (level, label): the boxes' members, then each value's label at every level
        member_box, member_key = [], []
        for b, (level, members) in enumerate(zip(box["level"], box["members"], strict=True)):
            for m in members:
                member_box.append(b)
                member_key.append(f"{int(level)}\x1f{m}")
        index = pd.Index(pd.unique(np.asarray(member_key, dtype=object)), dtype=object)
        self.n_ids = max(len(index), 1)
        ids = index.get_indexer(pd.Index(member_key, dtype=object)) if member_key else np.zeros(0, np.int64)
        self.member_pairs = np.unique(np.asarray(member_box, dtype=np.int64) * self.n_ids + ids)
        self.value_ids = np.full((len(values), max(n_levels, 1)), -1, dtype=np.int64)
        for level in range(n_levels):
            keys = pd.Index([f"{level}\x1f{x}" for x in table[:, level].astype(str)], dtype=object)
            self.value_ids[:, level] = index.get_indexer(keys)
        self.box_level = np.asarray(box["level"], dtype=np.int64)

    def contains(self, v: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Value ``v[i]`` lies in box ``b[i]``."""
        if self.numeric:
            x = self.num[v]
            with np.errstate(invalid="ignore"):
                hit = (x >= self.lo[b]) & (x <= self.hi[b]) & ~self.na[v]
            return hit | (self.raw_na[v] & self.missing[b])
        ids = self.value_ids[v, self.box_level[b]]
        pair = b * self.n_ids + ids
        pos = np.searchsorted(self.member_pairs, pair)
        pos = np.minimum(pos, max(len(self.member_pairs) - 1, 0))
        found = self.member_pairs[pos] == pair if len(self.member_pairs) else np.zeros(len(v), bool)
        return found & (ids >= 0)

    def coordinate(self, ranks: Mapping[str, Any] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per distinct value: (low, high, placeable) in the cut tree's coordinates.

        A cut sends left what is ``<= cut``. Numeric: low = high = the value, a missing value
        +inf (always right); a value that is no number is in no box and not placeable.
        Categorical: the first and last rank of the lowest hierarchy node holding the value that
        had values in the sample (the value itself when it was there); a cut inside that range
        splits the node, and a value the sample did not have cannot follow it (not placeable
        there: only a loose box could still hold it).
        """
        if self.numeric:
            x = np.where(self.raw_na, np.inf, self.num)
            return x, x, ~(self.na & ~self.raw_na)
        assert ranks is not None
        n = len(self.table)
        lo = np.full(n, -1, dtype=np.int64)
        hi = np.full(n, -1, dtype=np.int64)
        todo = np.ones(n, dtype=bool)
        for level, labels in enumerate(ranks["labels"]):
            if level >= self.table.shape[1] or not todo.any():
                break
            index = pd.Index(labels, dtype=object)
            at = index.get_indexer(pd.Index(self.table[:, level].astype(str), dtype=object))
            hit = todo & (at >= 0)
            lo[hit] = np.asarray(ranks["first"][level], dtype=np.int64)[at[hit]]
            hi[hit] = np.asarray(ranks["last"][level], dtype=np.int64)[at[hit]]
            todo &= ~hit
        return lo.astype(np.float64), hi.astype(np.float64), ~todo


def replay(tree: CutTree, n_classes: int, member: dict[str, BoxMembership],
           value_of: dict[str, np.ndarray], part_ids: np.ndarray, combo_part: np.ndarray,
           source: str) -> tuple[np.ndarray, np.ndarray]:
    """(combination, class) pairs by replaying the cut tree, then checking the leaf's boxes.

    ``member[c]`` holds QI ``c``'s distinct population values against its boxes,
    ``value_of[c][i]`` combination ``i``'s value (an index into them); ``part_ids[c]`` is class
    ``c``'s partition-key part and ``combo_part[i]`` combination ``i``'s (-1: no such part).

    Every combination starts at the root of its part and goes down one depth per pass (one
    vectorized pass over the combinations still placed): at a cut on QI ``j`` it goes left when
    its coordinate is ``<= cut``, and is dropped when the cut splits the hierarchy node it can
    only be located by. At a final node it is paired with that class when the class's boxes
    hold its values (values between the sample's, in no box, are dropped here).

    A loose class (a categorical box labelled by a node N wider than the class) can also hold
    rows of other branches, but only of branches that leave its path at a cut inside N: at such
    a cut (an ancestor of the class, on N's QI, at a rank inside N) a combination whose value
    lies in N goes down both sides, so it reaches the loose class too, where its boxes are
    checked. A combination can be paired twice with one class: the caller counts it once.
    """
    columns = list(tree.columns)
    roots = tree.roots
    dim, cut = tree.arrays(n_classes, source)
    coords = {c: member[c].coordinate(tree.ranks.get(c)) for c in columns}

    # each root's part: follow the tree's shape down to its classes (no data involved)
    class_root = np.empty(n_classes, dtype=np.int64)
    node_root = np.arange(roots, dtype=np.int64)
    start, n_cls = 0, 0
    while len(node_root):
        d = dim[start:start + len(node_root)]
        final = d < 0
        class_root[n_cls:n_cls + int(final.sum())] = node_root[final]
        n_cls += int(final.sum())
        start += len(node_root)
        node_root = np.repeat(node_root[~final], 2)
    both_lo, both_hi = _both_ways(tree, dim, cut, n_classes, member)
    root_part = np.full(roots, -1, dtype=np.int64)
    root_part[class_root] = part_ids
    part_root = np.full(int(part_ids.max()) + 1 if len(part_ids) else 0, -1, dtype=np.int64)
    part_root[root_part[root_part >= 0]] = np.flatnonzero(root_part >= 0)

    # the combinations still being placed and their node at the current depth
    live = np.flatnonzero(combo_part >= 0)
    node = part_root[combo_part[live]]
    placeable = np.ones(len(live), dtype=bool)
    for c in columns:
        placeable &= coords[c][2][value_of[c][live]]
    keep = placeable & (node >= 0)
    live, node = live[keep], node[keep]
    width, start, cut_start, first_class = roots, 0, 0, 0
    out_combo, out_class = [], []
    while len(live) and width:
        d = dim[start:start + width]
        is_cut = d >= 0
        n_cut = int(is_cut.sum())
        node_cut = np.zeros(width)
        node_cut[is_cut] = cut[cut_start:cut_start + n_cut]
        # final nodes: class ids in node order; cut nodes: their two children at the next depth
        class_of = np.cumsum(~is_cut) - 1 + first_class
        child = (np.cumsum(is_cut) - 1) * 2
        nd = d[node]
        done = nd < 0
        out_combo.append(live[done])
        out_class.append(class_of[node[done]])
        go = np.zeros(len(live), dtype=np.int64)  # 0 left, 1 right, 2 dropped, 3 both
        for j, c in enumerate(columns):
            sel = np.flatnonzero(nd == j)
            if not len(sel):
                continue
            v = value_of[c][live[sel]]
            low, high = coords[c][0][v], coords[c][1][v]
            t = node_cut[node[sel]]
            go[sel] = np.where(high <= t, 0, np.where(low > t, 1, 2))
            # inside a loose node cut here: both sides (the copy goes right)
            g = start + node[sel]
            both = (both_lo[g] <= low) & (high <= both_hi[g])
            go[sel[both]] = 3
        move = ~done & (go != 2)
        twin = go == 3
        live, node = (np.concatenate([live[move], live[twin]]),
                      np.concatenate([child[node[move]] + (go[move] == 1), child[node[twin]] + 1]))
        start += width
        cut_start += n_cut
        first_class += width - n_cut
        width = 2 * n_cut
    pc = np.concatenate(out_combo) if out_combo else np.zeros(0, np.int64)
    cls = np.concatenate(out_class) if out_class else np.zeros(0, np.int64)
    # the leaf's boxes must hold the values: the tree only says no other class's can
    ok = np.ones(len(pc), dtype=bool)
    for c, m in member.items():
        ok &= m.contains(value_of[c][pc], np.asarray(m.box["class_box"], dtype=np.int64)[cls])
    return pc[ok], cls[ok]


def _both_ways(tree: CutTree, dim: np.ndarray, cut: np.ndarray, n_classes: int,
               member: dict[str, BoxMembership]) -> tuple[np.ndarray, np.ndarray]:
    """Per node: the rank range whose values go down both sides of its cut (empty: +inf, -inf).

    A node's cut on a categorical QI lies inside the loose node N of some loose class below it
    (N's rank span contains the cut): values of N must reach that class whichever side they
    belong to. Loose nodes holding the same cut are nested, so one range (the widest) serves.
    """
    both_lo = np.full(len(dim), np.inf)
    both_hi = np.full(len(dim), -np.inf)
    spans = []
    for j, c in enumerate(tree.columns):
        m = member[c]
        loose = np.asarray(m.box.get("loose", []), dtype=np.int64)
        if m.numeric or not len(loose):
            continue
        a, b = _member_spans(m, tree.ranks[c])
        class_box = np.asarray(m.box["class_box"], dtype=np.int64)
        loose_classes = np.flatnonzero(np.isin(class_box, loose))
        spans.append((j, loose_classes, a[class_box[loose_classes]], b[class_box[loose_classes]]))
    if not spans:
        return both_lo, both_hi
    # parent of every node and the node of every class, from the tree's shape
    parent = np.full(len(dim), -1, dtype=np.int64)
    class_node = np.empty(n_classes, dtype=np.int64)
    cut_of = np.full(len(dim), np.nan)
    cut_of[dim >= 0] = cut
    start, width, n_cls = 0, tree.roots, 0
    while width:
        nodes = np.arange(start, start + width)
        final = dim[nodes] < 0
        class_node[n_cls:n_cls + int(final.sum())] = nodes[final]
        n_cls += int(final.sum())
        cut_nodes = nodes[~final]
        parent[start + width:start + width + 2 * len(cut_nodes)] = np.repeat(cut_nodes, 2)
        start, width = start + width, 2 * len(cut_nodes)
    for j, loose_classes, a, b in spans:
        cur = class_node[loose_classes]
        while True:
            up = parent[cur]
            alive = up >= 0
            if not alive.any():
                break
            u = up[alive]
            inside = (dim[u] == j) & (a[alive] <= cut_of[u]) & (cut_of[u] < b[alive])
            np.minimum.at(both_lo, u[inside], a[alive][inside])
            np.maximum.at(both_hi, u[inside], b[alive][inside])
            cur = np.where(alive, up, cur)
    return both_lo, both_hi


def _member_spans(m: BoxMembership, ranks: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Per categorical box: the lowest first rank and highest last rank of its member nodes
    (+inf, -inf when the sample had none of them)."""
    keys = [f"{level}\x1f{label}" for level, labels in enumerate(ranks["labels"]) for label in labels]
    first = np.concatenate([np.asarray(f, dtype=np.float64) for f in ranks["first"]]) if keys else np.zeros(0)
    last = np.concatenate([np.asarray(la, dtype=np.float64) for la in ranks["last"]]) if keys else np.zeros(0)
    box_of = np.repeat(np.arange(len(m.box_level)), [len(x) for x in m.box["members"]])
    member_keys = [f"{int(level)}\x1f{x}" for level, members in zip(m.box["level"], m.box["members"], strict=True)
                   for x in members]
    at = pd.Index(keys, dtype=object).get_indexer(pd.Index(member_keys, dtype=object)) if member_keys \
        else np.zeros(0, np.int64)
    a = np.full(len(m.box_level), np.inf)
    b = np.full(len(m.box_level), -np.inf)
    found = at >= 0
    np.minimum.at(a, box_of[found], first[at[found]])
    np.maximum.at(b, box_of[found], last[at[found]])
    return a, b


__all__ = ["TREE_VERSION", "BoxMembership", "CutTree", "RankedQI", "is_loose", "loose_boxes",
           "numeric_values", "pack_array", "replay", "span", "unpack_array"]
