"""Person-level risk: the unit of privacy is the person, not the row.

When the published rows carry something that links the rows of one person (a pseudonymized
identifier, the composition person), an adversary who knows a person's quasi-identifiers at
each of their events finds *every* class holding one of their rows, and the persons who share
all of them are the candidates. So:

- a person's *key* is the multiset of the equivalence classes of all their rows (class ``c``
  appearing ``m`` times when ``m`` of their rows are in ``c``);
- a *person class* is a set of persons with the same key; its *size* is its number of persons;
- ``k`` (per person) is the smallest person-class size; the prosecutor risk of a person is
  1 / the size of their person class; ``prosecutor_avg`` is the mean over persons (= person
  classes / persons), ``prosecutor_max`` the largest, ``uniques_fraction`` the share of persons
  alone in their person class;
- the sensitive values of a person are the distinct values over their rows; a person class's
  distribution gives each of its persons weight 1, split equally over that person's distinct
  values. ``l_distinct`` is the smallest number of distinct values in a person class,
  ``l_entropy`` exp of the smallest Shannon entropy (natural log) of the distribution,
  ``t_closeness`` the largest total-variation distance between a person class's distribution and
  the table's (persons weighted the same way);
- journalist risk of a person is 1 / F with F the smallest population class size over their
  classes (every person matching the whole key matches each of its classes, so this F is an
  upper bound on the candidates and the risk a lower bound — stated as such).

With one row per person every figure equals its row-level counterpart. Nothing loops over
rows or persons in Python: a key's fingerprint is the sum of its elements' 64-bit hashes (twice,
independently, with its length), so keys are grouped without ordering them.

The keys are held as their distinct elements (:class:`PersonKeys`: each person's distinct
classes with their multiplicity). Merging classes maps the elements and adds up the
multiplicities of those that meet, so the optimal search (:mod:`anon_dagster.anonymize.lattice`)
finds the person classes of any generalization from the elements at the finest classes (about
as many as the rows), and the measurement here and the search group keys with one fingerprint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .classes import EquivalenceClasses, factorize_column


def _runs(sorted_key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start positions and lengths of the runs of equal values in a sorted array."""
    if len(sorted_key) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    change = np.empty(len(sorted_key), dtype=bool)
    change[0] = True
    np.not_equal(sorted_key[1:], sorted_key[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    return starts, np.diff(np.append(starts, len(sorted_key)))


def _distinct(key: np.ndarray, space: int | None = None,
              weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of a non-negative int64 array (sorted) and how often each occurs
    (with ``weights``, a positive int64 per key: their sum per value).

    Counted by ``bincount`` when the key space (``space``, values in [0, space)) is at most a
    few times the keys, else by a sort — not ``np.unique``'s hash table, several times slower
    on a million keys.
    """
    if space is not None and space <= 8 * max(len(key), 1 << 16):
        counts = np.bincount(key, weights=weights, minlength=space)
        present = np.flatnonzero(counts)
        return present.astype(np.int64), counts[present].astype(np.int64, copy=False)
    if weights is None:
        ordered = np.sort(key)
        starts, counts = _runs(ordered)
        return ordered[starts], counts
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    starts, _ = _runs(ordered)
    sums = np.add.reduceat(weights[order], starts) if len(starts) else np.zeros(0, dtype=np.int64)
    return ordered[starts], sums.astype(np.int64, copy=False)


def _dense_codes(key: np.ndarray) -> np.ndarray:
    """Dense codes (0..n-1, in key order) of an int64 or uint64 array (equal keys get one code,
    so the sort need not be stable: quicksort, twice as fast on random fingerprints)."""
    order = np.argsort(key)
    starts, lengths = _runs(key[order])
    codes = np.empty(len(key), dtype=np.int64)
    codes[order] = np.repeat(np.arange(len(starts), dtype=np.int64), lengths)
    return codes


def _mix(x: np.ndarray, seed: int) -> np.ndarray:
    """splitmix64 of ``x`` (uint64) under ``seed``: a 64-bit hash, evenly spread."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def person_codes(persons: pd.Series | np.ndarray) -> np.ndarray:
    """Each row's person code (0..n_persons-1, int64, by position) from its person value.

    A missing person value is a person of its own for each such row (an unlinked row links to
    nobody), numbered after the known ones.
    """
    values = pd.Series(persons).reset_index(drop=True)
    codes, n_known = factorize_column(values)
    codes = codes.astype(np.int64)
    missing = pd.isna(values).to_numpy()
    if missing.any():  # each unlinked row its own person, after the known ones
        codes = codes.copy()
        codes[missing] = n_known + np.arange(int(missing.sum()))
        codes = _dense_codes(codes)
    return codes


@dataclass
class PersonKeys:
    """Every person's key as its distinct elements: element ``i`` is class ``cls[i]``, held
    ``count[i]`` times in the key of person ``person[i]``.

    The elements are sorted by person, then class, and every person 0..n_persons-1 has at least
    one, so each person's elements are one run.
    """

    n_persons: int
    person: np.ndarray
    cls: np.ndarray
    count: np.ndarray

    @classmethod
    def of_rows(cls, person_of_row: np.ndarray, row_class: np.ndarray, n_classes: int,
                weights: np.ndarray | None = None) -> PersonKeys:
        """The keys of rows with these person codes (:func:`person_codes`) and classes; with
        ``weights`` the rows are those of a frequency table of (person, class, ...), row ``i``
        standing for ``weights[i]`` rows of that person in that class (the multiplicities add up)."""
        n_persons = int(person_of_row.max()) + 1 if len(person_of_row) else 0
        n_classes = max(int(n_classes), 1)
        w = None if weights is None else np.asarray(weights, dtype=np.int64)
        element, counts = _distinct(person_of_row * n_classes + row_class.astype(np.int64),
                                    n_persons * n_classes, w)
        return cls(n_persons, element // n_classes, element % n_classes, counts)

    def coarsen(self, class_map: np.ndarray, n_classes: int) -> PersonKeys:
        """The keys once class ``c`` is merged into class ``class_map[c]`` (of ``n_classes``):
        the elements mapped, and the multiplicities of the elements that meet added up."""
        n_classes = max(int(n_classes), 1)
        key = self.person * n_classes + np.asarray(class_map, dtype=np.int64)[self.cls]
        element, counts = _distinct(key, self.n_persons * n_classes, self.count)
        return PersonKeys(self.n_persons, element // n_classes, element % n_classes, counts)

    def person_classes(self) -> tuple[np.ndarray, np.ndarray]:
        """Each person's person class (numbered in fingerprint order) and each person class's
        number of persons (the persons of equal keys, grouped by their keys' fingerprints)."""
        if self.n_persons == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        group = _dense_codes(self._fingerprints())
        return group, np.bincount(group).astype(np.int64)

    def class_sizes(self) -> np.ndarray:
        """Each person's person-class size: :meth:`person_classes` without numbering the
        classes (one hash pass instead of a sort; the search needs no more)."""
        if self.n_persons == 0:
            return np.zeros(0, dtype=np.int64)
        group, _ = pd.factorize(self._fingerprints())
        return np.bincount(group)[group].astype(np.int64, copy=False)

    def _fingerprints(self) -> np.ndarray:
        """Each person's key fingerprint (uint64)."""
        item = self.cls * np.int64(1 << 20) + np.minimum(self.count, (1 << 20) - 1)
        # A key is a multiset, so its fingerprint is the sum of its elements' hashes (order-free):
        # two independent 64-bit sums and the key's length. Two different keys share all three
        # with probability about 2**-128 per pair of persons.
        starts, _ = _runs(self.person)
        with np.errstate(over="ignore"):
            h1 = np.add.reduceat(_mix(item, 1), starts)
            h2 = np.add.reduceat(_mix(item, 2), starts)
        length = np.diff(np.append(starts, len(self.person))).astype(np.uint64)
        with np.errstate(over="ignore"):
            return h1 ^ _mix(h2 ^ (length << np.uint64(40)), 3)


@dataclass
class PersonClasses:
    """The person classes of a table (see the module docstring).

    ``person_of_row`` gives each row's person code (0..n_persons-1, by position);
    ``person_class`` each person's person class; ``sizes`` each person class's persons.
    """

    person_of_row: np.ndarray
    person_class: np.ndarray
    sizes: np.ndarray

    @property
    def n_persons(self) -> int:
        return int(len(self.person_class))

    @property
    def n_classes(self) -> int:
        return int(len(self.sizes))

    @classmethod
    def build(cls, classes: EquivalenceClasses, persons: pd.Series,
              weights: np.ndarray | None = None) -> PersonClasses:
        """Person classes from the row classes and each row's person (by position); with
        ``weights``, the rows of a frequency table (:meth:`PersonKeys.of_rows`), each row
        without a person standing for one row (:func:`split_unlinked`).

        A missing person value is a person of its own for each such row (an unlinked row
        links to nobody).
        """
        if len(persons) != classes.n_rows:
            raise ValueError(f"{len(persons)} person values for {classes.n_rows} rows")
        codes = person_codes(persons)
        if weights is not None and len(weights) and (np.asarray(weights)[pd.isna(pd.Series(persons)).to_numpy()] > 1).any():
            raise ValueError("a frequency row without a person stands for several persons: split_unlinked first")
        group, sizes = PersonKeys.of_rows(codes, classes.row_class, classes.n_classes, weights).person_classes()
        return cls(codes, group, sizes)

    def figures(self) -> dict[str, Any]:
        """k, prosecutor risks and uniques per person (keys as in the row-level contract)."""
        if self.n_persons == 0:
            return {"persons": 0, "person_classes": 0}
        per_person = self.sizes[self.person_class]
        return {
            "persons": self.n_persons, "person_classes": self.n_classes, "k": int(self.sizes.min()),
            "prosecutor_max": float(1.0 / self.sizes.min()), "prosecutor_avg": float(self.n_classes / self.n_persons),
            "uniques_fraction": float((per_person == 1).sum() / self.n_persons),
        }

    def sensitive_figures(self, values: pd.Series | tuple[np.ndarray, int]) -> dict[str, float]:
        """l_distinct, l_entropy and t_closeness (total variation) per person of one sensitive
        column, given as values or already coded (``(codes, n_values)``, codes in [0, n_values))."""
        if isinstance(values, tuple):
            vcodes, n_values = values
        else:
            vcodes, n_values = factorize_column(pd.Series(values).reset_index(drop=True))
        vcodes = np.asarray(vcodes).astype(np.int64)
        pairs, _ = _distinct(self.person_of_row * max(n_values, 1) + vcodes,
                             self.n_persons * max(n_values, 1))  # distinct (person, value)
        person, value = pairs // max(n_values, 1), pairs % max(n_values, 1)
        held = np.bincount(person, minlength=self.n_persons)
        weight = 1.0 / held[person]  # a person's weight 1, split over their distinct values
        cell_key = self.person_class[person] * max(n_values, 1) + value
        space = self.n_classes * max(n_values, 1)
        if space <= 8 * max(len(cell_key), 1 << 16):  # a lookup table: cheaper than a search
            index = np.zeros(space, dtype=np.int64)
            present = np.flatnonzero(np.bincount(cell_key, minlength=space))
            index[present] = np.arange(len(present))
            cell = index[cell_key]
        else:
            cell = _dense_codes(cell_key)
        cls_of_cell = np.zeros(int(cell.max()) + 1, dtype=np.int64)
        val_of_cell = np.zeros_like(cls_of_cell)
        cls_of_cell[cell] = self.person_class[person]
        val_of_cell[cell] = value
        mass = np.bincount(cell, weights=weight)
        p = mass / self.sizes[cls_of_cell]
        distinct = np.bincount(cls_of_cell, minlength=self.n_classes)
        entropy = -np.bincount(cls_of_cell, weights=p * np.log(p), minlength=self.n_classes)
        table = np.bincount(value, weights=weight, minlength=n_values) / self.n_persons
        tv = 0.5 * (np.bincount(cls_of_cell, weights=np.abs(p - table[val_of_cell]) - table[val_of_cell],
                                minlength=self.n_classes) + 1.0)
        return {"l_distinct": int(distinct.min()), "l_entropy": float(np.exp(entropy.min())),
                "t_closeness": float(tv.max())}


def split_unlinked(persons: pd.Series, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A frequency table's rows with the rows without a person repeated once per row they
    stand for (each unlinked row is a person of its own): the positions to take, and their
    weights (1 for the repeated rows, the others' own)."""
    w = np.asarray(weights, dtype=np.int64)
    missing = pd.isna(pd.Series(persons).reset_index(drop=True)).to_numpy()
    if not missing.any():
        return np.arange(len(w), dtype=np.int64), w
    positions = np.repeat(np.arange(len(w), dtype=np.int64), np.where(missing, w, 1))
    return positions, np.where(missing, 1, w)[positions]


def person_figures(classes: EquivalenceClasses, persons: pd.Series,
                   sensitive: pd.DataFrame | Sequence[tuple[np.ndarray, int]] | None = None,
                   population_sizes: np.ndarray | None = None,
                   weights: np.ndarray | None = None) -> dict[str, Any]:
    """Every person-level figure of a table (see the module docstring).

    ``population_sizes`` is F per row class (journalist risk per person, a lower bound);
    ``sensitive`` the sensitive columns (the worst over them, as at row level), as a table or
    already coded (``(codes, n_values)`` per column: the row-level measurement's own coding).
    ``weights``: the rows are a frequency table's (:meth:`PersonKeys.of_rows`); the figures are
    those of the rows it counts (a person's sensitive values and smallest F do not depend on
    how many rows hold them, their key does and counts them).
    """
    pc = PersonClasses.build(classes, persons, weights)
    out = pc.figures()
    columns = ([sensitive[c] for c in sensitive.columns] if isinstance(sensitive, pd.DataFrame)
               else list(sensitive or []))
    if columns and pc.n_persons:
        per_column = [pc.sensitive_figures(c) for c in columns]
        out["l_distinct"] = min(f["l_distinct"] for f in per_column)
        out["l_entropy"] = min(f["l_entropy"] for f in per_column)
        out["t_closeness"] = max(f["t_closeness"] for f in per_column)
    if population_sizes is not None and pc.n_persons:
        f_row = np.asarray(population_sizes, dtype=float)[classes.row_class]
        f_person = np.full(pc.n_persons, np.inf)
        np.minimum.at(f_person, pc.person_of_row, f_row)
        risk = 1.0 / np.maximum(f_person, 1.0)
        out["journalist_max"] = float(risk.max())
        out["journalist_avg"] = float(risk.mean())
    return out


__all__ = ["PersonClasses", "PersonKeys", "person_codes", "person_figures", "split_unlinked"]
