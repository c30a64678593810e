"""The population put into the published classes, replayed from the transformation record.

Journalist and marketer risk, k-map and population uniqueness need ``F_c``: the number of people
of the population whose values are consistent with the published class ``c``. The published
table is generalized (``"20-29"``, ``"280**"``, Mondrian intervals and sets) while the population
holds raw values, so the population must first be generalized the same way.

:func:`generalize_population` does it from the JSON transformation record and the spec alone (no
in-memory state of the anonymizer), so the publication gate can redo it later from the stored
record:

- ``global``: every population row is generalized to the record's ``levels`` (the same
  hierarchies). With cell suppression, a published ``*`` cell matches every value of its column:
  the population is added once more per suppression pattern (set of ``*`` columns) with those
  columns set to ``*``, so a class with a suppressed cell is counted over its other QIs only.
- ``mondrian``: the record's per-class boxes (``mondrian.boxes``) are what each published label
  means in the QI's own values (numeric interval with or without missing values; categorical
  hierarchy nodes or sets of children). A population row belongs to every published class whose
  box holds its values and whose partition-key values equal its own (exact match, as labels);
  rows in no box are dropped. Two classes with the same labels are one published class: a row
  is counted once for it. When the record holds Mondrian's cut tree (``boxes.tree``) the rows
  are placed by replaying it (one vectorized pass per depth, then the leaf's boxes checked;
  see docs/population-placement.md); older records, and populations matched on fewer QIs than
  were cut, are tested against every class box of their part.
- ``microaggregation``: the published values are group means, which no population row has:
  ``F`` is not defined and the result is ``None`` (journalist risk then comes from the sampling
  fraction alone).
- ``none``: the population as it is (the release is not generalized).

Only the QIs the population is matched on are kept (``policy.population.qis``, default every
QI); a population lacking one of them raises :class:`~anon_dagster.errors.DataError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError, HierarchyError
from ..hierarchies import Hierarchy
from .coding import combine, factorize, group
from .global_recoding import apply_levels

SUPPRESSED = "*"
# largest (population combinations × classes) block tested at once; bounds memory to a few MB
BLOCK = 4_000_000
# without the published table, every subset of cell-suppressed columns is a possible pattern
MAX_PATTERN_COLUMNS = 6


def matched_qis(spec) -> list[str]:
    """The QIs the population is matched on: ``policy.population.qis`` or every QI."""
    pop = spec.policy.population
    if pop is not None and pop.qis:
        return [q for q in spec.quasi_identifiers if q in pop.qis]
    return list(spec.quasi_identifiers)


def generalize_population(population: pd.DataFrame, spec, record: Mapping[str, Any],
                          published: pd.DataFrame | None = None) -> pd.DataFrame | None:
    """The population with the published labels, driven by ``record`` (see module docstring).

    Returns the matched QI columns (generalized QIs with published labels, partition keys as
    they are) plus the count column when the population is a frequency table; a microdata
    population stays one row per person. ``published`` (optional) is only used to read the cell
    suppression patterns of a global recoding. Returns None for microaggregation.

    Raises DataError naming the column when the population lacks a matched QI or its count
    column, or when a Mondrian record has no boxes to replay.
    """
    pop_spec = spec.policy.population
    source = pop_spec.path if pop_spec is not None else "the population"
    count = pop_spec.count_column if pop_spec is not None else None
    qis = matched_qis(spec)
    for column in [*qis, *([count] if count else [])]:
        if column not in population.columns:
            hint = (" (declare policy.population.qis to match the population on the QIs it holds)"
                    if column != count else " (the declared count_column)")
            raise DataError(f"{source}: the population has no column {column!r}{hint}")
    method = record.get("method", spec.anonymization.method)
    cols = [*qis, *([count] if count else [])]
    if method == "microaggregation":
        return None
    if method == "none":
        return population[cols].reset_index(drop=True)
    if method == "global":
        return _global(population[cols].reset_index(drop=True), spec, record, qis, published, source)
    if method == "mondrian":
        return _mondrian(population[cols].reset_index(drop=True), spec, record, qis, count, source)
    raise DataError(f"transformation record: method {method!r} cannot be replayed on a population")


# ----- global recoding ---------------------------------------------------------------------------


def _global(pop: pd.DataFrame, spec, record, qis, published, source) -> pd.DataFrame:
    levels = {c: int(v) for c, v in (record.get("levels") or {}).items() if c in qis}
    missing = [c for c in spec.generalized_qis if c in qis and c not in levels]
    if missing:
        raise DataError(f"transformation record: no level for column {missing[0]!r} (global recoding)")
    try:
        out = apply_levels(pop, spec.hierarchies, levels)
    except HierarchyError as exc:
        raise HierarchyError(f"{source}: {exc}") from None
    cells = (record.get("suppression") or {}).get("cells") or {}
    cell_cols = [c for c in spec.generalized_qis if c in qis and cells.get(c, 0) > 0]
    if not cell_cols:
        return out
    # plain object labels, so a ``*`` can stand next to the categories
    base = out.copy()
    for c in cell_cols:
        base[c] = base[c].astype(object)
    pieces = [base]
    for pattern in _patterns(cell_cols, published):
        copy = base.copy()
        for c in pattern:
            copy[c] = SUPPRESSED
        pieces.append(copy)
    return pd.concat(pieces, ignore_index=True)


def _patterns(columns: list[str], published: pd.DataFrame | None) -> list[tuple[str, ...]]:
    """The sets of columns suppressed together in some published row (non-empty ones)."""
    if published is not None:
        present = [c for c in columns if c in published.columns]
        if not present:
            return []
        stars = np.stack([published[c].astype(str).to_numpy() == SUPPRESSED for c in present], axis=1)
        rows = {tuple(r) for r in stars[stars.any(axis=1)].tolist()}
        return sorted(tuple(c for c, s in zip(present, r, strict=True) if s) for r in rows)
    if len(columns) > MAX_PATTERN_COLUMNS:
        raise DataError(
            f"cell suppression in {len(columns)} columns: pass the published table to read its "
            f"suppression patterns (at most {MAX_PATTERN_COLUMNS} columns are enumerated)")
    return [p for n in range(1, len(columns) + 1) for p in combinations(columns, n)]


# ----- Mondrian ----------------------------------------------------------------------------------


def _mondrian(pop: pd.DataFrame, spec, record, qis, count, source) -> pd.DataFrame:
    boxes = (record.get("mondrian") or {}).get("boxes")
    if not boxes:
        raise DataError("transformation record: Mondrian without 'boxes': anonymize again to record them")
    n_classes = int(boxes["classes"])
    gen = [c for c in spec.generalized_qis if c in qis]
    pks = [c for c in spec.partition_keys if c in qis]
    for c in gen:
        if c not in boxes["columns"]:
            raise DataError(f"transformation record: no Mondrian boxes for column {c!r}")
    weights = (pd.to_numeric(pop[count], errors="coerce").fillna(0).to_numpy(dtype=np.int64)
               if count else np.ones(len(pop), dtype=np.int64))
    if len(pop) == 0 or n_classes == 0:
        return _empty(pop, gen, pks, count)

    # distinct population combinations of the matched QIs, with their total weight
    codes, uniques = {}, {}
    for c in [*gen, *pks]:
        codes[c], uniques[c] = factorize(pop[c])
    if gen or pks:
        key, space = combine([codes[c] for c in [*gen, *pks]],
                             [max(len(uniques[c]), 1) for c in [*gen, *pks]])
        _, combo, _ = group(key, space)
    else:
        combo = np.zeros(len(pop), dtype=np.int64)
    n_combo = int(combo.max()) + 1
    rep = np.full(n_combo, len(pop), dtype=np.int64)
    np.minimum.at(rep, combo, np.arange(len(pop)))
    combo_weight = np.bincount(combo, weights=weights, minlength=n_combo).astype(np.int64)

    class_box = {c: np.asarray(boxes["columns"][c]["class_box"], dtype=np.int64) for c in gen}

    # published classes = distinct label tuples (with the partition keys)
    label_codes = [class_box[c] for c in gen]
    pk_class = {c: np.asarray(boxes["partition_keys"][c], dtype=object) for c in pks}
    pk_codes = [pd.factorize(pk_class[c])[0].astype(np.int64) for c in pks]
    if label_codes or pk_codes:
        cols = label_codes + pk_codes
        key, space = combine(cols, [int(x.max()) + 1 for x in cols])
        _, class_tuple, _ = group(key, space)
    else:
        class_tuple = np.zeros(n_classes, dtype=np.int64)
    n_tuples = int(class_tuple.max()) + 1

    # partition keys are matched exactly, as labels: one block of classes per key combination
    from ..hierarchies import _as_label

    # labels of the distinct values, then per combination (one Python call per distinct value)
    combo_pk = [np.array([_as_label(v) for v in uniques[c]], dtype=object)[codes[c][rep]] for c in pks]
    if pks:
        class_key = pd.MultiIndex.from_arrays([pk_class[c] for c in pks]) if len(pks) > 1 else pd.Index(pk_class[pks[0]])
        combo_key = pd.MultiIndex.from_arrays(combo_pk) if len(pks) > 1 else pd.Index(combo_pk[0])
        part_ids, part_keys = pd.factorize(class_key)
        combo_part = part_keys.get_indexer(combo_key)
    else:
        part_ids = np.zeros(n_classes, dtype=np.int64)
        combo_part = np.zeros(n_combo, dtype=np.int64)
    tree = boxes.get("tree")
    if tree and _replayable(tree, spec, gen, pks):
        member = {c: _Membership(uniques[c], boxes["columns"][c], spec.hierarchies[c], c, source)
                  for c in gen}
        value_of = {c: codes[c][rep] for c in gen}
        pc, cls = _tree_pairs(tree, n_classes, member, value_of, part_ids, combo_part, source)
        pt = class_tuple[cls]
    else:
        # records without a cut tree (older ones) or matched on fewer QIs than were cut:
        # every population combination against every class box of its part
        inside = {c: _inside(uniques[c], boxes["columns"][c], spec.hierarchies[c], c, source) for c in gen}
        pc, pt = _pairs_by_boxes(inside, class_box, class_tuple, {c: codes[c][rep] for c in gen},
                                 part_ids, combo_part)
    if not len(pc):
        return _empty(pop, gen, pks, count)
    # a row counts once per published label tuple, even when several classes share the labels
    uniq = np.unique(pc * n_tuples + pt)
    pc, pt = uniq // n_tuples, uniq % n_tuples
    tuple_class = np.zeros(n_tuples, dtype=np.int64)
    tuple_class[class_tuple] = np.arange(n_classes)
    cls = tuple_class[pt]
    w = combo_weight[pc]
    out = {}
    for c in gen:
        labels = np.asarray(boxes["columns"][c]["label"], dtype=object)
        out[c] = labels[class_box[c][cls]]
    for c in pks:
        out[c] = pop[c].to_numpy(dtype=object)[rep[pc]]
    frame = pd.DataFrame({c: out[c] for c in qis if c in out})
    if count:
        frame[count] = w
        return frame[w > 0].reset_index(drop=True)
    # microdata stays microdata: one row per person
    return frame.loc[np.repeat(np.arange(len(frame)), w)].reset_index(drop=True)


def _pairs_by_boxes(inside, class_box, class_tuple, value_of, part_ids, combo_part
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(combination, label tuple) pairs: every combination against every class box of its part.

    The reference method, and the one for records without a cut tree: its cost is
    (combinations × classes) per partition-key part, in blocks of at most BLOCK tests.
    """
    pairs_combo, pairs_tuple = [], []
    for p in np.unique(part_ids):
        classes = np.flatnonzero(part_ids == p)
        combos = np.flatnonzero(combo_part == p)
        if not len(combos):
            continue
        step = max(BLOCK // max(len(classes), 1), 1)
        for start in range(0, len(combos), step):
            block = combos[start:start + step]
            hit = np.ones((len(block), len(classes)), dtype=bool)
            for c in inside:
                hit &= inside[c][np.ix_(value_of[c][block], class_box[c][classes])]
            i, k = np.nonzero(hit)
            pairs_combo.append(block[i])
            pairs_tuple.append(class_tuple[classes[k]])
    if not pairs_combo:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(pairs_combo), np.concatenate(pairs_tuple)


def _replayable(tree: Mapping[str, Any], spec, gen: list[str], pks: list[str]) -> bool:
    """Whether the cut tree can place this population: it is matched on every QI that was cut
    and on every partition key (a population lacking one would go down both sides of a cut)."""
    return (int(tree.get("version", 0)) == 1 and list(tree.get("columns", [])) == gen
            and list(spec.generalized_qis) == gen and list(spec.partition_keys) == pks)


class _Membership:
    """One generalized QI's population values against its boxes, pair by pair.

    ``contains(v, b)`` is ``_inside(...)[v, b]`` for arrays of value and box indices, without
    the dense (values × boxes) matrix; ``coordinate`` places a value for the cut tree.
    """

    def __init__(self, values: np.ndarray, box: Mapping[str, Any], hierarchy: Hierarchy,
                 column: str, source: str) -> None:
        self.numeric = box["kind"] == "numeric"
        self.box = box
        if self.numeric:
            self.num, self.na, self.raw_na = _numeric_values(values, bool(box.get("date")))
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
        """Value ``v[i]`` lies in box ``b[i]`` (same definition as ``_inside``)."""
        if self.numeric:
            x = self.num[v]
            with np.errstate(invalid="ignore"):
                hit = (x >= self.lo[b]) & (x <= self.hi[b]) & ~self.na[v]
            return hit | (self.raw_na[v] & self.missing[b])
        ids = self.value_ids[v, self.box_level[b]]
        key = b * self.n_ids + ids
        pos = np.searchsorted(self.member_pairs, key)
        pos = np.minimum(pos, max(len(self.member_pairs) - 1, 0))
        found = self.member_pairs[pos] == key if len(self.member_pairs) else np.zeros(len(v), bool)
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


def _tree_pairs(tree: Mapping[str, Any], n_classes: int, member: dict[str, _Membership],
                value_of: dict[str, np.ndarray], part_ids: np.ndarray, combo_part: np.ndarray,
                source: str) -> tuple[np.ndarray, np.ndarray]:
    """(combination, class) pairs by replaying Mondrian's cut tree, then checking the leaf's box.

    Every combination starts at the root of its partition-key part and goes down one depth per
    pass (one vectorized pass over the combinations still placed): at a cut on QI ``j`` it goes
    left when its coordinate is ``<= cut``, and is dropped when the cut splits the hierarchy node
    it can only be located by. At a final node it is paired with that class when the class's
    boxes hold its values (values between the sample's, in no box, are dropped here).

    A loose class (a categorical box labelled by a node N wider than the class) can also hold
    rows of other branches, but only of branches that leave its path at a cut inside N: at such
    a cut (an ancestor of the class, on N's QI, at a rank inside N) a combination whose value
    lies in N goes down both sides, so it reaches the loose class too, where its boxes are
    checked. A combination counted twice for one class is counted once later.
    """
    from .mondrian import unpack_array

    columns = list(tree["columns"])
    roots = int(tree["roots"])
    dim = unpack_array(tree["dim"], "<i1").astype(np.int64)
    cut = unpack_array(tree["cut"], "<f8")
    if len(dim) != int(tree["nodes"]) or int((dim >= 0).sum()) != len(cut) or \
            int((dim < 0).sum()) != n_classes:
        raise DataError(f"{source}: transformation record: the Mondrian cut tree does not match "
                        f"its {n_classes} class boxes")
    coords = {c: member[c].coordinate(tree.get("ranks", {}).get(c)) for c in columns}

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
    both_lo, both_hi = _both_ways(tree, dim, cut, roots, n_classes, member)
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
        go = np.zeros(len(live), dtype=np.int64)  # 0 left, 1 right, 2 dropped
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
    pc, cls = pc[ok], cls[ok]
    return pc, cls


def _both_ways(tree: Mapping[str, Any], dim: np.ndarray, cut: np.ndarray, roots: int,
               n_classes: int, member: dict[str, _Membership]) -> tuple[np.ndarray, np.ndarray]:
    """Per node: the rank range whose values go down both sides of its cut (empty: +inf, -inf).

    A node's cut on a categorical QI lies inside the loose node N of some loose class below it
    (N's rank span contains the cut): values of N must reach that class whichever side they
    belong to. Loose nodes holding the same cut are nested, so one range (the widest) serves.
    """
    columns = list(tree["columns"])
    both_lo = np.full(len(dim), np.inf)
    both_hi = np.full(len(dim), -np.inf)
    spans = []
    for j, c in enumerate(columns):
        m = member[c]
        loose_boxes = np.asarray(m.box.get("loose", []), dtype=np.int64)
        if m.numeric or not len(loose_boxes):
            continue
        a, b = _member_spans(m, tree["ranks"][c])
        class_box = np.asarray(m.box["class_box"], dtype=np.int64)
        loose = np.flatnonzero(np.isin(class_box, loose_boxes))
        spans.append((j, loose, a[class_box[loose]], b[class_box[loose]]))
    if not spans:
        return both_lo, both_hi
    # parent of every node and the node of every class, from the tree's shape
    parent = np.full(len(dim), -1, dtype=np.int64)
    class_node = np.empty(n_classes, dtype=np.int64)
    cut_of = np.full(len(dim), np.nan)
    cut_of[dim >= 0] = cut
    start, width, n_cls = 0, roots, 0
    while width:
        nodes = np.arange(start, start + width)
        final = dim[nodes] < 0
        class_node[n_cls:n_cls + int(final.sum())] = nodes[final]
        n_cls += int(final.sum())
        cut_nodes = nodes[~final]
        parent[start + width:start + width + 2 * len(cut_nodes)] = np.repeat(cut_nodes, 2)
        start, width = start + width, 2 * len(cut_nodes)
    for j, loose, a, b in spans:
        cur = class_node[loose]
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


def _member_spans(m: _Membership, ranks: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
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


def _numeric_values(values: np.ndarray, date: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


def _empty(pop: pd.DataFrame, gen, pks, count) -> pd.DataFrame:
    cols = [*gen, *pks, *([count] if count else [])]
    return pop[cols].iloc[0:0].reset_index(drop=True)


def _inside(values: np.ndarray, box: Mapping[str, Any], hierarchy: Hierarchy, column: str,
            source: str) -> np.ndarray:
    """``m[v, b]``: distinct population value ``v`` lies in box ``b`` of this QI."""
    n_boxes = len(box["label"])
    if box["kind"] == "numeric":
        # a value that is not a number at all lies in no box (it is not missing either)
        num, na, raw_na = _numeric_values(values, bool(box.get("date")))
        lo = np.array([np.nan if v is None else float(v) for v in box["lo"]])
        hi = np.array([np.nan if v is None else float(v) for v in box["hi"]])
        with np.errstate(invalid="ignore"):
            m = (num[:, None] >= lo[None, :]) & (num[:, None] <= hi[None, :])
        m &= ~na[:, None]
        m |= raw_na[:, None] & np.asarray(box["missing"], dtype=bool)[None, :]
        return m
    try:
        table = hierarchy.table(values)
    except HierarchyError as exc:
        raise HierarchyError(f"{source}: column {column!r}: {exc}") from None
    m = np.zeros((len(values), n_boxes), dtype=bool)
    for b, (level, members) in enumerate(zip(box["level"], box["members"], strict=True)):
        m[:, b] = np.isin(table[:, int(level)].astype(str), np.asarray(members, dtype=str))
    return m


__all__ = ["generalize_population", "matched_qis"]
