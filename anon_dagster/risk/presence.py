"""k-map and δ-presence: risks measured against a known population.

Both compare the published table with a population table that holds the same quasi-identifiers
(QIs) **at the same generalization** (generalize the population with the release's levels
before calling; raw population values never match generalized labels). The population is
either microdata (one row per person) or a frequency table with a count column (one row per
combination of QI values, the column giving how many people have it).

Definitions:

- **Population class size** ``F_j`` of a sample class ``j``: the number of people in the
  population whose QI values equal the class's. It is what the journalist model of
  re-identification needs (risk ``1/F_j``) and what k-map bounds.
- **k-map** (Sweeney 2002; El Emam and Dankar 2008, ARX's ``KMap`` with an explicit population):
  a release satisfies k-map when every sample class matches at least ``k`` people of the
  population; the k-map value of a release is ``min_j F_j`` over its classes.
- **δ-presence** (Nergiz, Atzori and Clifton 2007, ARX's ``DPresence``): the published table is
  a subset ``S`` (the research subset) of a population ``P``. For each class ``c`` of the
  population, ``δ_c = |S ∩ c| / |P ∩ c|`` is the probability that a person of the population
  with those QI values is in the subset. A release is (δ_min, δ_max)-present when every class's
  δ lies in ``[δ_min, δ_max]``. As ARX checks it, the classes that contain at least one subset
  record are the ones bounded; population classes with no subset record (δ = 0) are reported
  apart (``absent_classes``, ``absent_records``), because publishing the subset reveals that
  those people are not in it.

Missing values in a QI form a value of their own and match missing values of the other table.
Values match as in the journalist model's join
(:func:`anon_dagster.risk.reidentification.join_population`): equal values match; a QI that is
numeric in one table and text in the other is compared by its labels (30 and 30.0 both "30").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from anon_dagster.errors import DataError
from anon_dagster.risk.classes import EquivalenceClasses
from anon_dagster.risk.coding import FactorizeCache
from anon_dagster.risk.reidentification import describe_class, join_population, population_weights

# --------------------------------------------------------------------------------------------
# Matching a table's classes to a population


def _checked_inputs(table: pd.DataFrame, what: str, population: pd.DataFrame,
                    quasi_identifiers: Sequence[str], count_column: str | None,
                    purpose: str) -> tuple[list[str], np.ndarray | None]:
    """The QI list and the population's weights, after checking both tables hold the QIs."""
    qis = list(quasi_identifiers)
    if not qis:
        raise DataError(f"{purpose}: at least one quasi-identifier is needed")
    _check_columns(table, qis, what)
    _check_columns(population, qis, "the population")
    if len(table) == 0:
        raise DataError(f"{what} is empty (0 rows)")
    return qis, population_weights(population, count_column, integers=True)


def _check_columns(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataError(
            f"{what} lacks quasi-identifier column {missing[0]!r} "
            f"(columns: {', '.join(map(str, df.columns))})"
        )


@dataclass(frozen=True)
class PopulationMatch:
    """A table's equivalence classes with their sizes in the population.

    Attributes:
        quasi_identifiers: the QI columns matched.
        sample_sizes: ``f_j``, records of the table in each of its classes (int64).
        population_sizes: ``F_j``, people of the population in each of those classes (int64).
        row_class: the class (index into the arrays above) of each table row, by position.
        keys: one row per class with its QI values.
        population_records: people in the population (sum of counts for a frequency table).
        population_classes: distinct QI combinations in the population (with a count > 0).
    """

    quasi_identifiers: tuple[str, ...]
    sample_sizes: np.ndarray
    population_sizes: np.ndarray
    row_class: np.ndarray
    keys: pd.DataFrame
    population_records: int
    population_classes: int

    @property
    def row_population_size(self) -> np.ndarray:
        """``F`` of each table row's class, by position (for journalist risk ``1/F``)."""
        return self.population_sizes[self.row_class]


def match_population(
    sample: pd.DataFrame,
    population: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    count_column: str | None = None,
    *,
    strict: bool = True,
) -> PopulationMatch:
    """Size in ``population`` of each equivalence class of ``sample`` over the QIs.

    ``count_column`` names the population's count column when it is a frequency table.

    A sample class that the population lacks, or holds fewer times than the sample does, means
    the sample is not a sample of this population (or the population is not generalized like
    the sample). With ``strict=True`` (default) that raises :class:`DataError` naming one such
    class. With ``strict=False`` the documented choice is ``F_j = max(F_j, f_j)``: the sample's
    own records are counted as part of the population.
    """
    qis, weights = _checked_inputs(sample, "the sample", population, quasi_identifiers, count_column,
                                   "k-map and population matching")
    if len(population) == 0 or (weights is not None and weights.sum() == 0):
        raise DataError("the population is empty (0 people)")

    cache = FactorizeCache(qis)  # the sample's QI columns are coded for its classes and the join
    classes = EquivalenceClasses.from_frame(sample, qis, cache=cache)
    class_ids, population_ids, n_ids = join_population(classes, population, cache=cache)
    pop_counts = np.rint(np.bincount(population_ids, weights=weights, minlength=n_ids)).astype(np.int64)
    sample_sizes = classes.sizes
    population_sizes = pop_counts[class_ids]
    keys = classes.keys()

    short = population_sizes < sample_sizes
    if short.any():
        if strict:
            j = int(np.flatnonzero(short)[0])
            raise DataError(
                f"the population lacks sample class {describe_class(keys, qis, j)}: "
                f"{int(sample_sizes[j])} sample record(s), {int(population_sizes[j])} in the "
                f"population ({int(short.sum())} such class(es); is the population generalized "
                f"like the sample?)"
            )
        population_sizes = np.maximum(population_sizes, sample_sizes)

    return PopulationMatch(
        quasi_identifiers=tuple(qis),
        sample_sizes=sample_sizes,
        population_sizes=population_sizes,
        row_class=classes.row_class.astype(np.int64),
        keys=keys,
        population_records=int(pop_counts.sum()),
        population_classes=int((pop_counts > 0).sum()),
    )


# --------------------------------------------------------------------------------------------
# k-map


@dataclass(frozen=True)
class KMap:
    """k-map figures of a table against a population.

    Attributes:
        k_map: ``min_j F_j``, the smallest population size of a sample class.
        classes: number of sample classes.
        records: number of sample records.
        k: the threshold asked about, if any.
        classes_below_k, records_below_k: sample classes (records) whose ``F_j < k``.
        population_size_histogram: ``{F: number of sample classes with that F}`` for F < 10.
    """

    k_map: int
    classes: int
    records: int
    k: int | None = None
    classes_below_k: int | None = None
    records_below_k: int | None = None
    population_size_histogram: dict[int, int] | None = None

    @property
    def satisfied(self) -> bool | None:
        """Whether every class maps to at least ``k`` people (``None`` without a ``k``)."""
        return None if self.k is None else self.k_map >= self.k

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable form."""
        return {
            "k_map": self.k_map,
            "classes": self.classes,
            "records": self.records,
            "k": self.k,
            "satisfied": self.satisfied,
            "classes_below_k": self.classes_below_k,
            "records_below_k": self.records_below_k,
            "population_size_histogram": {
                str(key): value for key, value in (self.population_size_histogram or {}).items()
            },
        }


def k_map(
    population_sizes: Any, sample_sizes: Any | None = None, k: int | None = None
) -> KMap:
    """k-map of a release from the population size ``F_j`` of each of its classes.

    ``sample_sizes`` (records of the release per class, same order) are used to count records
    below ``k``; without them every class counts as one record. ``k`` is the threshold asked
    about (optional). Raises :class:`DataError` on an empty input or a negative size.
    """
    pop = np.asarray(population_sizes)
    if pop.ndim != 1 or pop.size == 0:
        raise DataError("k-map needs the population size of at least one class")
    if np.any(pop < 0):
        raise DataError("population class sizes must be non-negative")
    pop = pop.astype(np.int64)
    samp = np.ones_like(pop) if sample_sizes is None else np.asarray(sample_sizes, dtype=np.int64)
    if samp.shape != pop.shape:
        raise DataError(
            f"sample sizes ({samp.size}) and population sizes ({pop.size}) must align by class"
        )
    small = np.bincount(np.minimum(pop, 10))[:10]
    histogram = {int(i): int(c) for i, c in enumerate(small) if c}
    below_c = below_r = None
    if k is not None:
        if int(k) < 1:
            raise DataError(f"k must be >= 1, got {k}")
        below = pop < int(k)
        below_c, below_r = int(below.sum()), int(samp[below].sum())
    return KMap(
        k_map=int(pop.min()),
        classes=int(pop.size),
        records=int(samp.sum()),
        k=None if k is None else int(k),
        classes_below_k=below_c,
        records_below_k=below_r,
        population_size_histogram=histogram,
    )


# --------------------------------------------------------------------------------------------
# δ-presence


@dataclass(frozen=True)
class DeltaPresence:
    """δ-presence of a published subset of a population.

    Attributes:
        delta: ``δ_c = |S ∩ c| / |P ∩ c|`` for every population class (float array).
        subset_counts, population_counts: ``|S ∩ c|`` and ``|P ∩ c|`` per population class.
        delta_min, delta_max: smallest and largest δ over the classes holding a subset record.
        classes: population classes; published_classes: those holding a subset record.
        absent_classes, absent_records: population classes (people) with no subset record,
            i.e. δ = 0: the release shows that these people are not in the subset.
        keys: the QI values of each population class (aligned with ``delta``), when computed
            from tables; ``None`` from counts.
    """

    delta: np.ndarray
    subset_counts: np.ndarray
    population_counts: np.ndarray
    delta_min: float
    delta_max: float
    classes: int
    published_classes: int
    absent_classes: int
    absent_records: int
    keys: pd.DataFrame | None = None

    def table(self) -> pd.DataFrame:
        """One row per population class: its QI values (if known), counts and δ."""
        frame = self.keys.copy() if self.keys is not None else pd.DataFrame(index=range(self.classes))
        frame["subset"] = self.subset_counts
        frame["population"] = self.population_counts
        frame["delta"] = self.delta
        return frame

    def satisfies(self, delta_min: float, delta_max: float) -> bool:
        """(δ_min, δ_max)-presence over the published classes, as ARX checks it."""
        return bool(delta_min <= self.delta_min and self.delta_max <= delta_max)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable summary (the per-class arrays are left out)."""
        return {
            "delta_min": self.delta_min,
            "delta_max": self.delta_max,
            "classes": self.classes,
            "published_classes": self.published_classes,
            "absent_classes": self.absent_classes,
            "absent_records": self.absent_records,
            "subset_records": int(self.subset_counts.sum()),
            "population_records": int(self.population_counts.sum()),
        }


def delta_presence_from_counts(subset_counts: Any, population_counts: Any) -> DeltaPresence:
    """δ-presence from per-class counts of the subset and of the population (aligned arrays).

    Classes with a population count of 0 are ignored. Raises :class:`DataError` when a class
    holds more subset records than people, or when no class holds a subset record.
    """
    sub = np.asarray(subset_counts, dtype=np.int64)
    pop = np.asarray(population_counts, dtype=np.int64)
    if sub.shape != pop.shape or sub.ndim != 1:
        raise DataError("subset and population counts must be 1-D arrays aligned by class")
    if np.any(sub < 0) or np.any(pop < 0):
        raise DataError("subset and population counts must be non-negative")
    over = sub > pop
    if over.any():
        j = int(np.flatnonzero(over)[0])
        raise DataError(
            f"class {j} holds {int(sub[j])} subset records but only {int(pop[j])} people: "
            f"the subset is not part of the population"
        )
    present = pop > 0
    sub, pop = sub[present], pop[present]
    delta = sub / pop
    published = sub > 0
    if not published.any():
        raise DataError("δ-presence needs a non-empty subset (0 subset records)")
    return DeltaPresence(
        delta=delta,
        subset_counts=sub,
        population_counts=pop,
        delta_min=float(delta[published].min()),
        delta_max=float(delta[published].max()),
        classes=int(pop.size),
        published_classes=int(published.sum()),
        absent_classes=int((~published).sum()),
        absent_records=int(pop[~published].sum()),
    )


def delta_presence(
    population: pd.DataFrame,
    subset: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    count_column: str | None = None,
) -> DeltaPresence:
    """δ-presence of ``subset`` (microdata) within ``population`` over the QIs.

    ``count_column`` names the population's count column when it is a frequency table. A
    subset class that the population lacks (or holds fewer times) raises :class:`DataError`
    naming it.
    """
    qis, weights = _checked_inputs(subset, "the subset", population, quasi_identifiers, count_column,
                                   "δ-presence")
    cache = FactorizeCache(qis)  # the subset's QI columns are coded for its classes and the join
    classes = EquivalenceClasses.from_frame(subset, qis, cache=cache)
    class_ids, population_ids, n_ids = join_population(classes, population, cache=cache)
    sub_counts = np.bincount(class_ids, weights=classes.sizes, minlength=n_ids).astype(np.int64)
    pop_counts = np.rint(np.bincount(population_ids, weights=weights, minlength=n_ids)).astype(np.int64)
    over = sub_counts > pop_counts
    if over.any():
        j = int(np.flatnonzero(over)[0])
        c = int(np.flatnonzero(class_ids == j)[0])
        raise DataError(
            f"the population lacks subset class {describe_class(classes.keys(), qis, c)}: "
            f"{int(sub_counts[j])} subset record(s), {int(pop_counts[j])} in the population "
            f"({int(over.sum())} such class(es))"
        )
    result = delta_presence_from_counts(sub_counts, pop_counts)
    # Population classes in the order delta_presence_from_counts keeps them (count > 0), each
    # named by its first population row.
    kept = np.flatnonzero(pop_counts > 0)
    first = np.full(n_ids, len(population), dtype=np.int64)
    np.minimum.at(first, population_ids, np.arange(len(population), dtype=np.int64))
    keys = population[qis].iloc[first[kept]].reset_index(drop=True)
    return dataclasses.replace(result, keys=keys)
