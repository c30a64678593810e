"""Who is attacked: main targets (people in the release), control targets (people not in it).

**Main targets** are a random sample of the persons of the release; the attacker holds one real
record of each (one of the person's rows before anonymization, drawn at random). **Control
targets** are persons whose records were never released, drawn the same way from the control
records. The attacks run the same way against both: what they achieve against the control
targets is what the population's regularities alone give an attacker, and the difference is what
the release gives them about the people in it.

A person is the unit throughout: rows linked by a pseudonym are one person
(:func:`anon_dagster.risk.person.person_codes`), who is one target and counts once.

**The control set** (:func:`select_control`) comes, in order of preference, from

1. the declared population, when the sample's records can be matched to it: the population's
   records not in the sample (a multiset difference over the attack's columns: for every
   combination of values, the population's count minus the sample's). Every sample record must
   find its combination in the population as often as the sample holds it; otherwise the
   population is not a superset of the sample and is not used;
2. otherwise a slice of the partition withheld from the release: the persons whose keyed hash of
   their pseudonym (BLAKE2b under a key of the key store; the row's position when nothing links
   rows) is smallest, until the slice holds ``fraction`` of the rows (10 %) and at least
   ``minimum`` rows (1,000), but never more than ``max_share`` of the rows (half). Keyed, so
   nobody can choose who is withheld or predict it without the key; by whole persons, so no
   person is both released and a control target.

With ``n`` control persons a rate near ``p`` is known to about ``± 1.96 sqrt(p (1 - p) / n)``
at 95 %: ``± 0.031`` for ``p = 0.5`` and ``n = 1,000`` (``± 0.022`` at 2,000).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...hierarchies import _as_label
from ..person import person_codes

CONTROL_FRACTION = 0.10
CONTROL_MINIMUM = 1_000
CONTROL_MAX_SHARE = 0.5


@dataclass
class Targets:
    """The targets of one side: ``records`` one raw record per target (index 0..n-1) and
    ``person`` each target's person in the release (-1 for a control target)."""

    records: pd.DataFrame
    person: np.ndarray

    def __len__(self) -> int:
        return len(self.records)


def _one_row_per_person(person: np.ndarray, n: int | None, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``n`` persons drawn at random (all of them, shuffled, when fewer) and one of each
    one's rows drawn at random: ``(persons, rows)``."""
    if not len(person):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    n_persons = int(person.max()) + 1
    chosen = rng.permutation(n_persons)
    if n is not None:
        chosen = chosen[:n]
    order = np.argsort(person, kind="stable")
    count = np.bincount(person, minlength=n_persons)
    start = np.concatenate([[0], np.cumsum(count)[:-1]])
    pick = start[chosen] + (rng.random(len(chosen)) * count[chosen]).astype(np.int64)
    return chosen.astype(np.int64), order[pick]


def main_targets(originals: pd.DataFrame, person_of_row: np.ndarray, n: int | None,
                 rng: np.random.Generator) -> Targets:
    """A random sample of up to ``n`` persons of the release, each with one of their records
    before anonymization (``originals``: the raw rows of the released rows, by position)."""
    persons, rows = _one_row_per_person(np.asarray(person_of_row, dtype=np.int64), n, rng)
    return Targets(originals.iloc[rows].reset_index(drop=True), persons)


def control_targets(control: pd.DataFrame, persons: pd.Series | None, n: int | None,
                    rng: np.random.Generator) -> Targets:
    """A random sample of up to ``n`` control persons, one record each (``persons``: each
    control row's person, None when every row is a person of its own)."""
    codes = person_codes(persons) if persons is not None else np.arange(len(control), dtype=np.int64)
    _, rows = _one_row_per_person(codes, n, rng)
    return Targets(control.iloc[rows].reset_index(drop=True), np.full(len(rows), -1, dtype=np.int64))


@dataclass
class ControlSplit:
    """Where the control records come from (:func:`select_control`).

    ``released`` marks the partition's rows that go on to be anonymized and released (all of
    them when the control records come from the population); ``control`` holds the control
    records; ``source`` is ``"population"`` or ``"withheld"``; ``note`` says why.
    """

    released: np.ndarray
    control: pd.DataFrame
    source: str
    note: str


def select_control(table: pd.DataFrame, *, key: bytes, persons: pd.Series | None = None,
                   population: pd.DataFrame | None = None, columns: Sequence[str] | None = None,
                   fraction: float = CONTROL_FRACTION, minimum: int = CONTROL_MINIMUM,
                   max_share: float = CONTROL_MAX_SHARE) -> ControlSplit:
    """The control records of one partition (module docstring).

    ``table`` is the partition (pseudonymized, before anonymization); ``persons`` each row's
    person (its pseudonym; None: every row a person of its own); ``population`` the declared
    population (raw records) and ``columns`` the columns the attacks compare (the population is
    used only when it holds them all, default: every column of ``table`` it holds).
    """
    if population is not None:
        cols = list(columns) if columns is not None else [c for c in table.columns if c in population.columns]
        lacking = [c for c in cols if c not in population.columns]
        if cols and not lacking:
            extra = _population_excess(table, population, cols)
            if extra is not None and len(extra):
                return ControlSplit(np.ones(len(table), dtype=bool), extra, "population",
                                    f"{len(extra)} population records not in the sample")
            reason = ("the sample's records are not all in the population" if extra is None
                      else "every population record is in the sample")
        else:
            reason = f"the population lacks column {lacking[0]!r}" if lacking else "no column to match on"
        note = f"withheld from the release ({reason})"
    else:
        note = "withheld from the release"
    withheld = withheld_rows(table, key=key, persons=persons, fraction=fraction, minimum=minimum,
                             max_share=max_share)
    return ControlSplit(~withheld, table[withheld].reset_index(drop=True), "withheld",
                        f"{int(withheld.sum())} rows {note}")


def withheld_rows(table: pd.DataFrame, *, key: bytes, persons: pd.Series | None = None,
                  fraction: float = CONTROL_FRACTION, minimum: int = CONTROL_MINIMUM,
                  max_share: float = CONTROL_MAX_SHARE) -> np.ndarray:
    """The rows withheld as control records (a boolean mask): whole persons of smallest keyed
    hash, up to ``max(fraction × rows, minimum)`` rows, at most ``max_share × rows``."""
    n = len(table)
    if n == 0:
        return np.zeros(0, dtype=bool)
    if persons is not None:
        values = pd.Series(persons).reset_index(drop=True)
        codes = person_codes(values)
        first = np.full(int(codes.max()) + 1, n, dtype=np.int64)
        np.minimum.at(first, codes, np.arange(n, dtype=np.int64))
        names = [_as_label(v) if not pd.isna(v) else f"row {i}" for v, i in zip(values.to_numpy()[first], first, strict=True)]
    else:
        codes = np.arange(n, dtype=np.int64)
        names = [f"row {i}" for i in range(n)]
    score = np.array([int.from_bytes(hashlib.blake2b(s.encode(), key=key[:64], digest_size=8).digest(), "big")
                      for s in names], dtype=np.uint64)
    order = np.argsort(score, kind="stable")
    rows_of = np.bincount(codes, minlength=len(names))
    cumulative = np.cumsum(rows_of[order])
    want = min(max(int(np.ceil(fraction * n)), minimum), int(max_share * n))
    take = int(np.searchsorted(cumulative, want, side="left")) + 1 if want > 0 else 0
    take = min(take, len(order))
    while take > 0 and cumulative[take - 1] > int(max_share * n):
        take -= 1
    chosen = np.zeros(len(names), dtype=bool)
    chosen[order[:take]] = True
    return chosen[codes]


def _population_excess(sample: pd.DataFrame, population: pd.DataFrame, columns: list[str]) -> pd.DataFrame | None:
    """The population's records beyond the sample's, per combination of ``columns`` (None when
    some combination is more frequent in the sample than in the population)."""
    labels = pd.concat([pd.DataFrame({c: _label_column(sample[c]) for c in columns}),
                        pd.DataFrame({c: _label_column(population[c]) for c in columns})], ignore_index=True)
    combo = pd.MultiIndex.from_frame(labels).factorize()[0]
    s_combo, p_combo = combo[:len(sample)], combo[len(sample):]
    n_combo = int(combo.max()) + 1 if len(combo) else 0
    s_count = np.bincount(s_combo, minlength=n_combo)
    p_count = np.bincount(p_combo, minlength=n_combo)
    if (s_count > p_count).any():
        return None
    # the population rows of each combination beyond the sample's count (rows equal on the
    # attack's columns are interchangeable for the attacks)
    order = np.argsort(p_combo, kind="stable")
    rank = np.empty(len(p_combo), dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(p_count)[:-1]])
    rank[order] = np.arange(len(p_combo)) - start[p_combo[order]]
    keep = rank >= s_count[p_combo]
    return population.loc[keep].reset_index(drop=True)


def _label_column(series: pd.Series) -> np.ndarray:
    codes, uniques = pd.factorize(series.astype(object), use_na_sentinel=False)
    return np.array([_as_label(v) for v in uniques], dtype=object)[codes] if len(uniques) else np.zeros(0, object)


__all__ = ["CONTROL_FRACTION", "CONTROL_MAX_SHARE", "CONTROL_MINIMUM", "ControlSplit", "Targets",
           "control_targets", "main_targets", "select_control", "withheld_rows"]
