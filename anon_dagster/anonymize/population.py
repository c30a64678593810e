"""The population put into the published classes, replayed from the transformation record.

Journalist and marketer risk, k-map and population uniqueness need ``F_c``: the number of people
of the population whose values are consistent with the published class ``c``. The published
table is generalized (``"20-29"``, ``"280**"``, Mondrian intervals and sets) while the population
holds raw values, so the population must first be generalized the same way.

:func:`generalize_population` does it from the transformation record and the spec alone (no
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
  are placed by replaying it (:func:`.cut_tree.replay`: one vectorized pass per depth, then the
  leaf's boxes checked; see docs/population-placement.md); older records, and populations
  matched on fewer QIs than were cut, are tested against every class box of their part.
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
from ..hierarchies import Hierarchy, _as_label
from .coding import combine, factorize, group
from .cut_tree import BoxMembership, numeric_values, replay
from .global_recoding import apply_levels
from .record import TransformationRecord

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


def generalize_population(population: pd.DataFrame, spec,
                          record: TransformationRecord | Mapping[str, Any],
                          published: pd.DataFrame | None = None) -> pd.DataFrame | None:
    """The population with the published labels, driven by ``record`` (see module docstring).

    ``record`` is a :class:`TransformationRecord` or its JSON form (read with ``from_json``).

    Returns the matched QI columns (generalized QIs with published labels, partition keys as
    they are) plus the count column when the population is a frequency table; a microdata
    population stays one row per person. ``published`` (optional) is only used to read the cell
    suppression patterns of a global recoding. Returns None for microaggregation.

    Raises DataError naming the column when the population lacks a matched QI or its count
    column, or when a Mondrian record has no boxes to replay.
    """
    if not isinstance(record, TransformationRecord):
        record = TransformationRecord.from_json(record)
    pop_spec = spec.policy.population
    source = pop_spec.path if pop_spec is not None else "the population"
    count = pop_spec.count_column if pop_spec is not None else None
    qis = matched_qis(spec)
    for column in [*qis, *([count] if count else [])]:
        if column not in population.columns:
            hint = (" (declare policy.population.qis to match the population on the QIs it holds)"
                    if column != count else " (the declared count_column)")
            raise DataError(f"{source}: the population has no column {column!r}{hint}")
    method = record.method
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
    levels = {c: int(v) for c, v in (record.levels or {}).items() if c in qis}
    missing = [c for c in spec.generalized_qis if c in qis and c not in levels]
    if missing:
        raise DataError(f"transformation record: no level for column {missing[0]!r} (global recoding)")
    try:
        out = apply_levels(pop, spec.hierarchies, levels)
    except HierarchyError as exc:
        raise HierarchyError(f"{source}: {exc}") from None
    cells = record.suppression.cells
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


def _mondrian(pop: pd.DataFrame, spec, record: TransformationRecord, qis, count, source) -> pd.DataFrame:
    if record.mondrian is None:
        raise DataError("transformation record: Mondrian without 'boxes': anonymize again to record them")
    boxes = record.mondrian.boxes
    n_classes = boxes.classes
    gen = [c for c in spec.generalized_qis if c in qis]
    pks = [c for c in spec.partition_keys if c in qis]
    for c in gen:
        if c not in boxes.columns:
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

    class_box = {c: np.asarray(boxes.columns[c]["class_box"], dtype=np.int64) for c in gen}

    # published classes = distinct label tuples (with the partition keys)
    label_codes = [class_box[c] for c in gen]
    pk_class = {c: np.asarray(boxes.partition_keys[c], dtype=object) for c in pks}
    pk_codes = [pd.factorize(pk_class[c])[0].astype(np.int64) for c in pks]
    if label_codes or pk_codes:
        cols = label_codes + pk_codes
        key, space = combine(cols, [int(x.max()) + 1 for x in cols])
        _, class_tuple, _ = group(key, space)
    else:
        class_tuple = np.zeros(n_classes, dtype=np.int64)
    n_tuples = int(class_tuple.max()) + 1

    # partition keys are matched exactly, as labels: one block of classes per key combination;
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
    tree = boxes.tree
    if tree is not None and tree.replayable(gen, pks, spec.generalized_qis, spec.partition_keys):
        member = {c: BoxMembership(uniques[c], boxes.columns[c], spec.hierarchies[c], c, source)
                  for c in gen}
        value_of = {c: codes[c][rep] for c in gen}
        pc, cls = replay(tree, n_classes, member, value_of, part_ids, combo_part, source)
        pt = class_tuple[cls]
    else:
        # records without a cut tree (older ones) or matched on fewer QIs than were cut:
        # every population combination against every class box of its part
        inside = {c: _inside(uniques[c], boxes.columns[c], spec.hierarchies[c], c, source) for c in gen}
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
        labels = np.asarray(boxes.columns[c]["label"], dtype=object)
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


def _empty(pop: pd.DataFrame, gen, pks, count) -> pd.DataFrame:
    cols = [*gen, *pks, *([count] if count else [])]
    return pop[cols].iloc[0:0].reset_index(drop=True)


def _inside(values: np.ndarray, box: Mapping[str, Any], hierarchy: Hierarchy, column: str,
            source: str) -> np.ndarray:
    """``m[v, b]``: distinct population value ``v`` lies in box ``b`` of this QI."""
    n_boxes = len(box["label"])
    if box["kind"] == "numeric":
        # a value that is not a number at all lies in no box (it is not missing either)
        num, na, raw_na = numeric_values(values, bool(box.get("date")))
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
