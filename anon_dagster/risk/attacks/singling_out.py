"""Singling out: can a predicate built from what the attacker knows of a target isolate them?

Definition (predicate singling out, Cohen & Nissim 2020). A predicate *isolates* in a table when
exactly one person of the table satisfies it. The attacker holds a target's real record and
builds predicates from its values recoded into the release's labels
(:func:`~.coding.recode_targets`): for a set ``S`` of columns, the predicate "the record's
published labels cover the target's values in every column of ``S``" — a conjunction of
``attribute = label`` over ``S`` (with Mondrian's boxes, ``attribute ∈ box``; a published ``*``
satisfies any). The predicate is evaluated on the release, per person: a person satisfies it
when one of their rows does.

- *univariate*: one predicate per column (``|S| = 1``);
- *multivariate*: the conjunction over every column the attacker knows (the most specific
  predicate their knowledge gives: if any conjunction over fewer columns isolates a main target,
  this one does too); with ``AttackConfig.predicates = n``, also ``n - 1`` random subsets of 2
  columns or more (the subset's size drawn uniformly, then its columns), the same subsets for
  every target: attackers who know only part of the record.

A target's score is the share of its predicates that succeed:

- **main** target (a person of the release): the predicate isolates exactly one person of the
  release, and that person is the target — the attacker has singled them out;
- **control** target (never released): the predicate isolates exactly one person of the
  release. It cannot be the target, so this is isolation by chance: a predicate drawn from the
  population, with the weight the population gives it, happening to hold for exactly one person
  of the release. Cohen and Nissim's trivial adversary succeeds with the probability that a
  predicate of weight ``w`` isolates in ``n`` records, ``n w (1 - w)^(n - 1)``; the control
  rate estimates it for the predicates people's own records give, so the residual risk is what
  the release adds to chance isolation.
- **baseline**: the same predicates built from a random release row (positional: a uniformly
  drawn row of the release, whoever it is) instead of the target's record, succeeding when they
  isolate the main target — guessing without knowing the target.

On a synthetic release (``AttackSetup.synthetic``) the rows are nobody's: a main target (a
person whose record the synthetic table was made from) succeeds as a control target does, when
their predicate isolates exactly one synthetic row; the difference from the control rate is what
the synthesis kept of its training records' rare combinations. The baseline is a random
synthetic row's predicate isolating one row.

Under k-anonymity (k ≥ 2) on the attacker's columns no such predicate isolates anybody: every
main and control score is 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .engine import AttackSetup, drive
from .result import AttackResult, attack_result
from .search import ReleaseTuples, set_persons

UNIVARIATE = "singling_out_univariate"
MULTIVARIATE = "singling_out_multivariate"


def predicate_columns(columns: Sequence[str], n: int, rng: np.random.Generator) -> list[tuple[str, ...]]:
    """The multivariate predicates' column sets: every column, then up to ``n - 1`` distinct
    random subsets of 2 or more columns (size uniform in 2..len, then the columns), in the
    columns' order."""
    columns = list(columns)
    out = [tuple(columns)]
    if len(columns) < 3:
        return out
    seen = {out[0]}
    for _ in range(20 * n):
        if len(out) >= n:
            break
        size = int(rng.integers(2, len(columns) + 1))
        pick = tuple(columns[i] for i in sorted(rng.choice(len(columns), size=size, replace=False)))
        if pick not in seen:
            seen.add(pick)
            out.append(pick)
    return out


def isolated(tuples: ReleaseTuples, set_of_target: np.ndarray, sets) -> tuple[np.ndarray, np.ndarray]:
    """Per target: the number of release persons its predicate holds for, and that person when
    there is exactly one (-1 otherwise)."""
    n = len(set_of_target)
    count = np.zeros(n, dtype=np.int64)
    only = np.full(n, -1, dtype=np.int64)
    has = set_of_target >= 0
    if not has.any():
        return count, only
    ids, inv = np.unique(set_of_target[has], return_inverse=True)
    owner, person = set_persons(tuples, sets, ids)
    per_set = np.bincount(owner, minlength=len(ids))
    first = np.full(len(ids), -1, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(per_set)[:-1]])
    nonempty = per_set > 0
    first[nonempty] = person[starts[nonempty]]
    count[has] = per_set[inv]
    only[has] = np.where(per_set[inv] == 1, first[inv], -1)
    return count, only


def singling_out(setup: AttackSetup, mode: str = "multivariate",
                 columns: Sequence[str] | None = None) -> AttackResult:
    """The singling-out attack (module docstring) on ``columns`` (default: the setup's)."""
    if mode not in ("univariate", "multivariate"):
        raise ValueError(f"singling out: mode {mode!r} (univariate or multivariate)")
    cols = list(columns or setup.columns)
    if mode == "univariate":
        subsets = [(c,) for c in cols]
    else:
        subsets = predicate_columns(cols, setup.config.predicates, setup.rng("singling_out/predicates"))
    name = UNIVARIATE if mode == "univariate" else MULTIVARIATE
    persons = setup.target_person
    base_rng = setup.rng(f"{name}/baseline")
    n_rows = setup.coding.n_rows
    n_persons_all = int(setup.person_of_row.max()) + 1 if n_rows else 0

    def score(idx: np.ndarray, main: bool) -> tuple[np.ndarray, np.ndarray | None]:
        recoded = setup.recoded.take(idx)
        total = np.zeros(len(idx))
        base = np.zeros(len(idx)) if main else None
        for subset in subsets:
            tuples = setup.tuples(subset)
            sets = setup.candidates(subset, idx, recoded, exact_only=True)
            count, only = isolated(tuples, sets.of_target, sets)
            if main and setup.synthetic:  # nobody to be the target: isolating one synthetic row
                total += count == 1
                row = base_rng.integers(0, n_rows, len(idx)) if n_rows else np.zeros(0, np.int64)
                assert base is not None
                base += tuples.n_persons[tuples.row_tuple[row]] == 1
            elif main:
                total += (count == 1) & (only == persons[idx])
                row = base_rng.integers(0, n_rows, len(idx)) if n_rows else np.zeros(0, np.int64)
                tup = tuples.row_tuple[row]
                alone = tuples.n_persons[tup] == 1
                assert base is not None
                base += alone & (tuples.persons[tuples.person_ptr[tup]] == persons[idx])
            else:
                total += count == 1
        k = max(len(subsets), 1)
        return total / k, (base / k if base is not None else None)

    driven = drive(setup, len(subsets), score)
    return attack_result(name, driven.main, driven.n_main, driven.control, driven.n_control,
                         driven.baseline, driven.n_main, driven.queries, driven.cut,
                         settings={"columns": cols, "predicates": [list(s) for s in subsets],
                                   "release_persons": n_persons_all})


__all__ = ["MULTIVARIATE", "UNIVARIATE", "isolated", "predicate_columns", "singling_out"]
