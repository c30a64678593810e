"""The release records a target reaches: exact matches and nearest records, ties kept whole.

For a set of columns, the release is grouped once into its distinct published tuples
(:class:`ReleaseTuples`: the rows and the distinct persons of each). A target's *candidates* are
a set of those tuples (:class:`CandidateSets`):

- **exact**: the tuples whose labels cover the target's value in every column (distance 0). With
  global recoding a value maps to one label per column, so this is one hash look-up; with
  Mondrian boxes, or a published ``*``, several tuples can cover the same target;
- **nearest**: when no tuple covers the target, the tuples at the smallest distance
  (:meth:`~.coding.RecodedColumn.distance`), found by comparing the target with every tuple.
  All tuples at that distance are kept: an attack that needs one record draws among all of
  them with equal chance (a tie of ``t`` candidates counts ``1/t``), never the first.

Candidate sets are numbered: a set of one tuple has that tuple's id, so targets reaching the
same tuple share a set and every figure per set is computed once. Nothing loops over rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..classes import combine_columns
from .coding import Recoded, ReleaseCoding

# largest (targets × tuples) distance block computed at once
BLOCK = 2_000_000
_TIE = 1e-9


def gather(ptr: np.ndarray, members: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The members of each of ``ids`` in a CSR layout (``members[ptr[i]:ptr[i + 1]]`` belong to
    ``i``): ``(owner, member)`` with ``owner`` the position in ``ids``."""
    ids = np.asarray(ids, dtype=np.int64)
    starts = ptr[ids]
    lengths = ptr[ids + 1] - starts
    total = int(lengths.sum())
    owner = np.repeat(np.arange(len(ids), dtype=np.int64), lengths)
    if not total:
        return owner, members[:0]
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return owner, members[np.repeat(starts, lengths) + offsets]


def _csr(owner: np.ndarray, n: int) -> np.ndarray:
    """Pointers of a CSR layout of items sorted by ``owner`` (values in [0, n))."""
    return np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=n))]).astype(np.int64)


class ReleaseTuples:
    """The distinct published tuples of ``columns``, with each tuple's rows and persons.

    ``row_tuple[r]`` is row ``r``'s tuple; ``codes[j][t]`` tuple ``t``'s label code in column
    ``j``; the rows of tuple ``t`` are ``rows[row_ptr[t]:row_ptr[t + 1]]`` and its distinct
    persons ``persons[person_ptr[t]:person_ptr[t + 1]]`` (sorted).
    """

    def __init__(self, coding: ReleaseCoding, columns: Sequence[str], person_of_row: np.ndarray):
        self.columns = list(columns)
        cols = [coding[c] for c in self.columns]
        n = coding.n_rows
        row_tuple, sizes = combine_columns(((c.codes, c.n_labels) for c in cols), n)
        self.row_tuple = row_tuple.astype(np.int64)
        self.n = int(len(sizes))
        order = np.argsort(self.row_tuple, kind="stable")
        self.rows = order
        self.row_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        first = order[self.row_ptr[:-1]]
        self.codes = [c.codes[first] for c in cols]
        n_persons = int(person_of_row.max()) + 1 if len(person_of_row) else 1
        pairs = np.unique(self.row_tuple * n_persons + person_of_row)
        self.persons = pairs % n_persons
        self.person_ptr = _csr(pairs // n_persons, self.n)
        self.n_persons = np.diff(self.person_ptr)
        self.person_of_row = person_of_row
        self._index: pd.Index | None = None

    def lookup(self, codes: Sequence[np.ndarray]) -> np.ndarray:
        """The tuple of each row of label codes (one array per column), -1 when not published."""
        if self._index is None:
            self._index = (pd.MultiIndex.from_arrays(self.codes) if len(self.codes) > 1
                           else pd.Index(self.codes[0]))
        probe = pd.MultiIndex.from_arrays(list(codes)) if len(codes) > 1 else pd.Index(codes[0])
        return np.asarray(self._index.get_indexer(probe), dtype=np.int64)


@dataclass
class CandidateSets:
    """Each target's candidate set (module docstring): ``of_target`` (-1: none), the sets of
    several tuples (id ``n_base + j`` holds ``extra[extra_ptr[j]:extra_ptr[j + 1]]``) and each
    target's distance to its candidates (``inf`` without)."""

    of_target: np.ndarray
    n_base: int
    extra_ptr: np.ndarray
    extra: np.ndarray
    distance: np.ndarray

    def tuples_of(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(owner, tuple)`` of every tuple of each set in ``ids`` (owner: position in ids)."""
        ids = np.asarray(ids, dtype=np.int64)
        base = ids < self.n_base
        owner_b = np.flatnonzero(base)
        owner_m, tup_m = gather(self.extra_ptr, self.extra, ids[~base] - self.n_base)
        owner = np.concatenate([owner_b, np.flatnonzero(~base)[owner_m]])
        tup = np.concatenate([ids[base], tup_m])
        return owner, tup


def find(tuples: ReleaseTuples, recoded: Recoded, exact_only: bool = False) -> CandidateSets:
    """Every target's candidates among ``tuples`` (module docstring); with ``exact_only`` only
    covering tuples, and no set for a target none covers."""
    cols = [recoded[c] for c in tuples.columns]
    n = recoded.n
    value = [c.value for c in cols]
    exact = [c.exact[v] for c, v in zip(cols, value, strict=True)]
    of_target = np.full(n, -1, dtype=np.int64)
    distance = np.full(n, np.inf)
    single = np.ones(n, dtype=bool)
    none = np.zeros(n, dtype=bool)
    for e in exact:
        single &= e >= 0
        none |= e == -1
    if single.any():
        found = tuples.lookup([e[single] for e in exact])
        idx = np.flatnonzero(single)
        of_target[idx] = found
        distance[idx[found >= 0]] = 0.0
    todo = (of_target < 0) & ~(none & exact_only)
    if exact_only:
        todo &= ~single  # a look-up that failed: no tuple covers it
    extra_ptr, extra = np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if todo.any():
        idx = np.flatnonzero(todo)
        q_of, q_first = _distinct_rows([v[idx] for v in value])
        q_values = [v[idx][q_first] for v in value]
        q_set, q_dist, extra_ptr, extra = _nearest(tuples, cols, q_values, exact_only)
        of_target[idx] = q_set[q_of]
        distance[idx] = q_dist[q_of]
    return CandidateSets(of_target, tuples.n, extra_ptr, extra, distance)


def _distinct_rows(columns: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's distinct tuple of ``columns`` (non-negative ints) and each tuple's first row."""
    cards = [int(c.max()) + 1 if len(c) else 1 for c in columns]
    ids, sizes = combine_columns(zip(columns, cards, strict=True), len(columns[0]) if columns else 0)
    ids = ids.astype(np.int64)
    first = np.full(len(sizes), len(ids), dtype=np.int64)
    np.minimum.at(first, ids, np.arange(len(ids), dtype=np.int64))
    return ids, first


def _nearest(tuples: ReleaseTuples, cols, q_values: list[np.ndarray], exact_only: bool
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per query: its set (a tuple id, a new set of several, or -1), its distance, and the
    new sets' CSR layout (ids from ``tuples.n``)."""
    n_q = len(q_values[0])
    q_set = np.full(n_q, -1, dtype=np.int64)
    q_dist = np.full(n_q, np.inf)
    step = max(BLOCK // max(tuples.n, 1), 1)
    pair_q, pair_t = [], []
    for start in range(0, n_q, step):
        block = np.arange(start, min(start + step, n_q))
        d = np.zeros((len(block), tuples.n))
        for c, qv, codes in zip(cols, q_values, tuples.codes, strict=True):
            c.add_distance(d, qv[block], codes)
        best = d.min(axis=1) if tuples.n else np.full(len(block), np.inf)
        limit = np.zeros(len(block)) if exact_only else best + _TIE * len(cols)
        hit_q, hit_t = np.nonzero(d <= limit[:, None])
        q_dist[block] = np.where(best <= limit, best, np.inf)
        pair_q.append(block[hit_q])
        pair_t.append(hit_t.astype(np.int64))
    pq = np.concatenate(pair_q) if pair_q else np.zeros(0, np.int64)
    pt = np.concatenate(pair_t) if pair_t else np.zeros(0, np.int64)
    count = np.bincount(pq, minlength=n_q)
    one = count == 1
    first = np.concatenate([[0], np.cumsum(count)[:-1]])
    q_set[one] = pt[first[one]]
    many = np.flatnonzero(count > 1)
    q_set[many] = tuples.n + np.arange(len(many))
    keep = count[pq] > 1
    extra = pt[keep]  # pairs are ordered by query already
    extra_ptr = np.concatenate([[0], np.cumsum(count[many])]).astype(np.int64)
    return q_set, q_dist, extra_ptr, extra


def set_persons(tuples: ReleaseTuples, sets: CandidateSets, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct persons of each candidate set in ``ids``: ``(owner, person)``, sorted by
    owner then person (owner: position in ``ids``)."""
    ids = np.asarray(ids, dtype=np.int64)
    base = ids < sets.n_base
    if base.all():
        return gather(tuples.person_ptr, tuples.persons, ids)
    owner_t, tup = sets.tuples_of(ids)
    owner_p, person = gather(tuples.person_ptr, tuples.persons, tup)
    owner = owner_t[owner_p]
    n_persons = int(tuples.person_of_row.max()) + 1 if len(tuples.person_of_row) else 1
    key = np.unique(owner * n_persons + person)
    return key // n_persons, key % n_persons


def set_rows(tuples: ReleaseTuples, sets: CandidateSets, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The release rows of each candidate set in ``ids``: ``(owner, row)`` (owner: position in ids)."""
    owner_t, tup = sets.tuples_of(np.asarray(ids, dtype=np.int64))
    owner_r, rows = gather(tuples.row_ptr, tuples.rows, tup)
    return owner_t[owner_r], rows


__all__ = ["BLOCK", "CandidateSets", "ReleaseTuples", "find", "gather", "set_persons", "set_rows"]
