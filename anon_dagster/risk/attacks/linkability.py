"""Linkability: can the release join two partial records of one person?

Definition. The attacker holds two records of a target that share no attribute — part ``A`` and
part ``B`` of its columns (say, from two other sources) — and does not know they belong
together. They look each part up in the release (:mod:`.search`): the release records nearest to
part ``A`` on the columns of ``A`` (those covering its values when there are any, else those at
the smallest distance) and those nearest to part ``B`` on ``B``. The attacker links the two
parts when they reach the same person. Both parts are the target's, so a link is a correct one.

Ties are kept whole: with ``P_A`` the persons of the records nearest to ``A`` and ``P_B`` those
nearest to ``B``, the attacker draws one person of each, every one with equal chance, and the
target's score is the chance that the two are the same person:
``|P_A ∩ P_B| / (|P_A| |P_B|)`` — a tie of ``t`` candidates counts ``1/t``, never the first of
them.

- **main** targets are persons of the release, **control** targets persons who are not: a
  control target's parts can still meet at one release person when the population makes the
  two parts' values go together (the release then links by regularity, not by holding them);
- **baseline**: two release rows drawn at random (positionally), linked when they are the same
  person.

The default parts are the columns in alternate order (first, third, ... and second, fourth,
...), so each part mixes the columns of the spec.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .engine import AttackSetup, drive
from .result import AttackResult, attack_result
from .search import ReleaseTuples, gather, set_persons

NAME = "linkability"


def default_parts(columns: Sequence[str]) -> tuple[list[str], list[str]]:
    """The columns in alternate order: part A the 1st, 3rd, ..., part B the 2nd, 4th, ..."""
    columns = list(columns)
    return columns[0::2], columns[1::2]


def _persons_csr(tuples: ReleaseTuples, sets, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    owner, person = set_persons(tuples, sets, ids)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=len(ids)))]).astype(np.int64)
    return ptr, person


def link_scores(tuples_a: ReleaseTuples, sets_a, tuples_b: ReleaseTuples, sets_b) -> np.ndarray:
    """Each target's ``|P_A ∩ P_B| / (|P_A| |P_B|)`` (0 without candidates on a side)."""
    sa, sb = sets_a.of_target, sets_b.of_target
    n = len(sa)
    out = np.zeros(n)
    ok = (sa >= 0) & (sb >= 0)
    if not ok.any():
        return out
    ua, ia = np.unique(sa[ok], return_inverse=True)
    ub, ib = np.unique(sb[ok], return_inverse=True)
    ptr_a, pa = _persons_csr(tuples_a, sets_a, ua)
    ptr_b, pb = _persons_csr(tuples_b, sets_b, ub)
    n_a, n_b = np.diff(ptr_a), np.diff(ptr_b)
    link = np.unique(ia.astype(np.int64) * len(ub) + ib)
    la, lb = link // len(ub), link % len(ub)
    n_persons = int(max(pa.max(initial=0), pb.max(initial=0))) + 1
    key_a = np.repeat(np.arange(len(ua), dtype=np.int64), n_a) * n_persons + pa
    key_b = np.repeat(np.arange(len(ub), dtype=np.int64), n_b) * n_persons + pb
    inter = np.zeros(len(link))
    # walk the smaller side of each link and look its persons up in the other side
    for small_a in (True, False):
        sel = np.flatnonzero((n_a[la] <= n_b[lb]) == small_a)
        if not len(sel):
            continue
        mine, other = (la, lb) if small_a else (lb, la)
        ptr, persons = (ptr_a, pa) if small_a else (ptr_b, pb)
        keys = key_b if small_a else key_a
        owner, person = gather(ptr, persons, mine[sel])
        probe = other[sel][owner] * n_persons + person
        pos = np.minimum(np.searchsorted(keys, probe), max(len(keys) - 1, 0))
        hit = keys[pos] == probe if len(keys) else np.zeros(len(probe), bool)
        inter[sel] = np.bincount(owner[hit], minlength=len(sel))
    share = inter / np.maximum(n_a[la] * n_b[lb], 1)
    out[np.flatnonzero(ok)] = share[np.searchsorted(link, ia.astype(np.int64) * len(ub) + ib)]
    return out


def linkability(setup: AttackSetup, parts: tuple[Sequence[str], Sequence[str]] | None = None) -> AttackResult:
    """The linkability attack (module docstring); ``parts`` the two column sets (default:
    :func:`default_parts` of the setup's columns)."""
    part_a, part_b = (list(p) for p in (parts or default_parts(setup.columns)))
    if not part_a or not part_b:
        raise ValueError("linkability needs two non-empty parts of the columns")
    if set(part_a) & set(part_b):
        raise ValueError("linkability: the two parts share a column")
    tuples_a, tuples_b = setup.tuples(part_a), setup.tuples(part_b)
    persons = setup.person_of_row
    n_rows = setup.coding.n_rows
    base_rng = setup.rng(f"{NAME}/baseline")

    def score(idx: np.ndarray, main: bool) -> tuple[np.ndarray, np.ndarray | None]:
        recoded = setup.recoded.take(idx)
        scores = link_scores(tuples_a, setup.candidates(part_a, idx, recoded),
                             tuples_b, setup.candidates(part_b, idx, recoded))
        if not main:
            return scores, None
        r1 = base_rng.integers(0, n_rows, len(idx))
        r2 = base_rng.integers(0, n_rows, len(idx))
        return scores, (persons[r1] == persons[r2]).astype(np.float64)

    driven = drive(setup, 2, score)
    return attack_result(NAME, driven.main, driven.n_main, driven.control, driven.n_control,
                         driven.baseline, driven.n_main, driven.queries, driven.cut,
                         settings={"part_a": part_a, "part_b": part_b})


__all__ = ["NAME", "default_parts", "link_scores", "linkability"]
