"""Differentially private aggregates: counts and bounded sums by group, exact integer noise.

Definitions.
- *Discrete Laplace* (two-sided geometric) distribution of scale ``b > 0``: an integer ``Y``
  with ``P(Y = y) = (1 − p)/(1 + p) · p^|y|`` where ``p = exp(−1/b)``. Its variance is
  ``2p/(1 − p)²`` and ``E|Y| = 2p/(1 − p²)``.
- *Mechanism.* A query with L1 sensitivity ``Δ`` (the most the vector of its cells changes,
  summed over cells, when one person's rows are added or removed) answered with independent
  discrete Laplace noise of scale ``Δ/ε`` in every cell is ε-differentially private.
- *Sensitivity from contribution bounds.* Each person contributes at most
  ``max_contributions`` rows (extra rows are dropped, keeping the first ones in table order);
  every row falls in exactly one cell. A count then has Δ = max_contributions; a sum of values
  clamped to the integers ``[lower, upper]`` has Δ = max_contributions · max(|lower|, |upper|).
- A release's ε is split equally between its measures (the count and each sum), so the whole
  release is ε-DP by basic composition.

Sampling is exact: the scale is a fraction (ε read from its decimal text, so 0.1 is 1/10),
and the sampler of Canonne, Kamath and Steinke (2020, "The Discrete Gaussian for Differential
Privacy", Algorithms 1 and 2) draws only uniform integers (``randrange``), never floats, so
the noise carries no floating-point artefacts. The random source is ``secrets.SystemRandom``;
tests pass a seeded ``random.Random``.

Aggregates spec (``publication.aggregates``)::

    group_by: [province, sex]        # columns of the groups (cells)
    count: true                      # publish a noisy count per cell
    sums:                            # noisy bounded sums per cell
      - {column: length_of_stay, lower: 0, upper: 60}
    max_contributions: 1             # rows per person kept
    person: patient_id               # whose contributions are bounded (default composition.person)
    domain: {sex: [F, M]}            # public list of each group column's values (recommended)
    clamp_negative: false            # post-processing: report negative noisy counts as 0

Without a declared ``domain`` the cells are the combinations of the values that occur, which
reveals that those values occur: the result says so (``domain_declared: false``).
"""

from __future__ import annotations

import itertools
import math
import secrets
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

import numpy as np
import pandas as pd

from ..errors import DataError, Problem, SpecError


class IntegerSource(Protocol):
    def randrange(self, stop: int) -> int: ...


# ----- exact samplers -------------------------------------------------------------------------


def bernoulli(p: Fraction, rng: IntegerSource) -> int:
    """1 with probability ``p`` (a fraction in [0, 1]), drawn from one uniform integer."""
    return int(rng.randrange(p.denominator) < p.numerator)


def bernoulli_exp(gamma: Fraction, rng: IntegerSource) -> int:
    """1 with probability exp(−gamma) for a fraction gamma ≥ 0 (CKS Algorithm 1)."""
    if gamma < 0:
        raise ValueError("gamma must be >= 0")
    while gamma > 1:
        # exp(−γ) = exp(−1)^⌊γ⌋ · exp(−(γ − ⌊γ⌋)): one Bernoulli(exp(−1)) per whole unit
        if not bernoulli_exp(Fraction(1), rng):
            return 0
        gamma -= 1
    k = 1
    while bernoulli(gamma / k, rng):
        k += 1
    return k % 2


def discrete_laplace(scale: Fraction, rng: IntegerSource) -> int:
    """One draw of the discrete Laplace of scale ``scale`` = t/s (CKS Algorithm 2)."""
    scale = Fraction(scale)
    if scale <= 0:
        raise ValueError("scale must be > 0")
    t, s = scale.numerator, scale.denominator
    while True:
        u = rng.randrange(t)
        if not bernoulli_exp(Fraction(u, t), rng):
            continue
        v = 0
        while bernoulli_exp(Fraction(1), rng):
            v += 1
        y = (u + t * v) // s
        negative = bernoulli(Fraction(1, 2), rng)
        if negative and y == 0:
            continue
        return -y if negative else y


def exact_fraction(value: float | int | str | Fraction) -> Fraction:
    """A number as the exact fraction of its decimal text (0.1 → 1/10, not the binary double)."""
    if isinstance(value, Fraction):
        return value
    return Fraction(str(value))


# ----- distribution facts (for reporting and tests; floats are fine here) --------------------


def discrete_laplace_p(scale: Fraction | float) -> float:
    return math.exp(-1.0 / float(scale))


def discrete_laplace_pmf(y: np.ndarray | int, scale: Fraction | float) -> np.ndarray:
    """P(Y = y) for the discrete Laplace of ``scale``."""
    p = discrete_laplace_p(scale)
    return (1 - p) / (1 + p) * p ** np.abs(np.asarray(y, dtype=float))


def discrete_laplace_error(scale: Fraction | float, confidence: float = 0.95) -> dict[str, float]:
    """Variance, standard deviation, mean absolute error and the half-width ``a`` of the
    smallest interval [−a, a] holding the noise with probability ≥ ``confidence``."""
    p = discrete_laplace_p(scale)
    variance = 2 * p / (1 - p) ** 2
    # P(|Y| > a) = 2 p^(a+1) / (1 + p)
    tail = (1 - confidence) * (1 + p) / 2
    half = 0 if 2 * p / (1 + p) <= 1 - confidence else max(0, math.ceil(math.log(tail) / math.log(p)) - 1)
    return {
        "scale": float(scale),
        "variance": variance,
        "std": math.sqrt(variance),
        "mean_abs_error": 2 * p / (1 - p * p),
        f"interval_{int(round(confidence * 100))}": float(half),
    }


# ----- aggregates -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SumSpec:
    column: str
    lower: int
    upper: int


@dataclass(frozen=True)
class AggregatesConfig:
    """``publication.aggregates`` parsed and validated (see the module docstring)."""

    group_by: tuple[str, ...]
    count: bool = True
    sums: tuple[SumSpec, ...] = ()
    max_contributions: int = 1
    person: str | None = None
    domain: dict[str, tuple[Any, ...]] | None = None
    clamp_negative: bool = False

    @property
    def measures(self) -> list[str]:
        return (["count"] if self.count else []) + [f"sum_{s.column}" for s in self.sums]

    def sensitivity(self, measure: str) -> int:
        if measure == "count":
            return self.max_contributions
        for s in self.sums:
            if measure == f"sum_{s.column}":
                return self.max_contributions * max(abs(s.lower), abs(s.upper))
        raise KeyError(measure)


_KEYS = {"group_by", "count", "sums", "max_contributions", "person", "domain", "clamp_negative"}


def aggregates_config(spec: Any) -> AggregatesConfig:
    """Parse ``spec.publication.aggregates``; raise SpecError listing every problem."""
    file = spec.label
    raw = spec.publication.aggregates or {}
    problems: list[Problem] = []
    add = lambda key, msg: problems.append(Problem(file, f"publication.aggregates.{key}".rstrip("."), msg))  # noqa: E731
    for key in sorted(set(raw) - _KEYS):
        add(key, f"unknown key (use {', '.join(sorted(_KEYS))})")
    group_by = raw.get("group_by", [])
    if not isinstance(group_by, list) or not all(isinstance(g, str) for g in group_by):
        add("group_by", "must be a list of column names")
        group_by = []
    for g in group_by:
        if g not in spec.columns:
            add("group_by", f"column {g!r} is not declared under columns")
        elif spec.columns[g].role == "identifier":
            add("group_by", f"column {g!r} is an identifier: cells by person are not aggregates")
    sums = []
    for i, s in enumerate(raw.get("sums", []) or []):
        if not isinstance(s, dict) or set(s) != {"column", "lower", "upper"}:
            add(f"sums.{i}", "each sum is {column, lower, upper}")
            continue
        if s["column"] not in spec.columns:
            add(f"sums.{i}.column", f"column {s['column']!r} is not declared under columns")
        if not all(isinstance(s[b], int) and not isinstance(s[b], bool) for b in ("lower", "upper")):
            add(f"sums.{i}", "lower and upper must be integers (the noise is integer)")
        elif s["lower"] > s["upper"]:
            add(f"sums.{i}", f"lower {s['lower']} is above upper {s['upper']}")
        else:
            sums.append(SumSpec(s["column"], s["lower"], s["upper"]))
    count = raw.get("count", True)
    if not isinstance(count, bool):
        add("count", "must be true or false")
    if count is False and not sums and not problems:
        add("", "nothing to publish: count is false and there are no sums")
    mc = raw.get("max_contributions", 1)
    if not isinstance(mc, int) or isinstance(mc, bool) or mc < 1:
        add("max_contributions", f"must be an integer >= 1 (got {mc!r})")
        mc = 1
    person = raw.get("person", spec.composition.person if spec.composition else None)
    if person is not None and person not in spec.columns:
        add("person", f"column {person!r} is not declared under columns")
    domain = raw.get("domain")
    if domain is not None:
        if not isinstance(domain, dict) or not all(isinstance(v, list) and v for v in domain.values()):
            add("domain", "must map group_by columns to non-empty lists of values")
            domain = None
        else:
            for col in domain:
                if col not in group_by:
                    add(f"domain.{col}", "not a group_by column")
    if spec.publication.epsilon is None:
        problems.append(Problem(file, "publication.epsilon", "aggregates are published with differential privacy: declare epsilon"))
    if problems:
        raise SpecError(problems)
    return AggregatesConfig(
        group_by=tuple(group_by), count=bool(count), sums=tuple(sums), max_contributions=mc,
        person=person, domain={k: tuple(v) for k, v in domain.items()} if domain else None,
        clamp_negative=bool(raw.get("clamp_negative", False)),
    )


@dataclass
class DPAggregates:
    """Noisy aggregates of one release and what is known of their error (safe to publish)."""

    table: pd.DataFrame
    epsilon: float
    epsilon_per_measure: float
    measures: dict[str, dict[str, float]] = field(default_factory=dict)
    cells: int = 0
    rows_used: int = 0
    rows_dropped_by_bound: int = 0
    rows_outside_domain: int = 0
    domain_declared: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": "discrete Laplace (two-sided geometric), exact integer sampling",
            "epsilon": self.epsilon,
            "epsilon_per_measure": self.epsilon_per_measure,
            "measures": self.measures,
            "cells": self.cells,
            "rows_used": self.rows_used,
            "rows_dropped_by_contribution_bound": self.rows_dropped_by_bound,
            "rows_outside_domain": self.rows_outside_domain,
            "domain_declared": self.domain_declared,
        }


ROWS = "__rows"


def sum_column(column: str) -> str:
    """The column of a groups table holding the clamped sum of ``column``."""
    return f"__sum_{column}"


def bad_column(column: str) -> str:
    """The column of a groups table counting ``column``'s missing or non-numeric values."""
    return f"__bad_{column}"


def positive_epsilon(epsilon: float | str | Fraction) -> Fraction:
    """``epsilon`` as an exact fraction (:func:`exact_fraction`), refused unless positive."""
    eps = exact_fraction(epsilon)
    if eps <= 0:
        raise DataError(f"epsilon must be > 0 (got {epsilon})")
    return eps


def check_columns(columns: Any, config: AggregatesConfig, epsilon: float | str | Fraction) -> Fraction:
    """``epsilon`` as an exact fraction, after checking it is positive and that every column
    ``config`` needs is in ``columns``."""
    eps = positive_epsilon(epsilon)
    needed = list(config.group_by) + [s.column for s in config.sums]
    if config.person:
        needed.append(config.person)
    missing = [c for c in needed if c not in columns]
    if missing:
        raise DataError(f"the table has no column {missing[0]!r} (needed by publication.aggregates)")
    return eps


def person_missing(person: str) -> DataError:
    """The error of a person column with missing values."""
    return DataError(f"column {person!r} has missing values: contributions cannot be bounded")


def bounded_groups(df: pd.DataFrame, config: AggregatesConfig) -> tuple[pd.DataFrame, int]:
    """The *groups table* of ``df`` after contribution bounding, and the rows the bound dropped.

    Bounding keeps each person's first ``max_contributions`` rows in table order. The groups
    table has one row per combination of the ``group_by`` values that occurs (missing values a
    value of their own), its rows (:data:`ROWS`) and, per sum, the sum of its values clamped to
    ``[lower, upper]`` and rounded half to even (:func:`sum_column`) and the number of its
    missing or non-numeric values (:func:`bad_column`)."""
    data = df
    dropped = 0
    if config.person:
        if data[config.person].isna().any():
            raise person_missing(config.person)
        rank = data.groupby(config.person, sort=False).cumcount()
        keep = (rank < config.max_contributions).to_numpy()
        dropped = int((~keep).sum())
        data = data[keep]
    parts = {c: data[c].reset_index(drop=True) for c in config.group_by}
    parts[ROWS] = pd.Series(np.ones(len(data), dtype=np.int64))
    for s in config.sums:
        values = pd.to_numeric(data[s.column], errors="coerce").reset_index(drop=True)
        bad = values.isna()
        parts[sum_column(s.column)] = np.rint(values.where(~bad, 0).clip(s.lower, s.upper)).astype("int64")
        parts[bad_column(s.column)] = bad.astype("int64")
    rows = pd.DataFrame(parts)
    if not config.group_by:
        return rows.sum().to_frame().T.astype("int64"), dropped
    groups = rows.groupby(list(config.group_by), sort=False, dropna=False, observed=True).sum().reset_index()
    return groups, dropped


def dp_aggregates(
    df: pd.DataFrame,
    config: AggregatesConfig,
    epsilon: float | str | Fraction,
    rng: IntegerSource | None = None,
) -> DPAggregates:
    """Noisy counts and bounded sums of ``df`` per cell of ``config.group_by``.

    The returned table has one row per cell (every combination of the domain's values), the
    group columns, then one integer column per measure. Per-cell expected error is in
    ``measures`` (same for every cell of a measure, since the noise does not depend on data).
    """
    check_columns(df.columns, config, epsilon)
    groups, dropped = bounded_groups(df, config)
    return aggregates_from_groups(groups, dropped, config, epsilon, rng)


def aggregates_from_groups(
    groups: pd.DataFrame,
    dropped: int,
    config: AggregatesConfig,
    epsilon: float | str | Fraction,
    rng: IntegerSource | None = None,
) -> DPAggregates:
    """The noisy aggregates of a groups table (:func:`bounded_groups`; the Spark engine counts
    it on Spark): the cells, each measure's exact value per cell, then the noise, drawn measure
    by measure and cell by cell in the cells' order."""
    rng = rng or secrets.SystemRandom()
    eps = positive_epsilon(epsilon)
    data = groups
    # the cells: a declared domain, else the observed values of each column
    levels = []
    for col in config.group_by:
        if config.domain and col in config.domain:
            levels.append(list(config.domain[col]))
        else:
            levels.append(sorted(pd.unique(data[col].dropna()).tolist(), key=str))
    cells = pd.DataFrame(list(itertools.product(*levels)), columns=list(config.group_by))
    outside = 0
    if config.group_by:
        inside = np.ones(len(data), dtype=bool)
        for col, values in zip(config.group_by, levels, strict=True):
            inside &= data[col].isin(values).to_numpy()
        outside = int(data[ROWS].to_numpy()[~inside].sum())
        data = data[inside]
        cell_index = pd.MultiIndex.from_frame(cells) if len(config.group_by) > 1 else pd.Index(cells.iloc[:, 0])
        grouped = data.groupby(list(config.group_by) if len(config.group_by) > 1 else config.group_by[0], sort=False)
    n_measures = len(config.measures)
    eps_m = eps / n_measures
    table = cells.copy()
    measures: dict[str, dict[str, float]] = {}

    def exact(column: str) -> np.ndarray:
        if not config.group_by:
            return np.array([int(data[column].sum())], dtype=object)
        return grouped[column].sum().reindex(cell_index, fill_value=0).to_numpy()

    if not config.group_by:
        table = pd.DataFrame(index=[0])
    for measure in config.measures:
        if measure == "count":
            true = exact(ROWS)
        else:
            s = next(s for s in config.sums if measure == f"sum_{s.column}")
            if int(data[bad_column(s.column)].sum()):
                raise DataError(f"column {s.column!r} has missing or non-numeric values: cannot sum it")
            true = exact(sum_column(s.column))
        sensitivity = config.sensitivity(measure)
        scale = Fraction(sensitivity) / eps_m
        noisy = [int(v) + discrete_laplace(scale, rng) for v in true]
        if config.clamp_negative and measure == "count":
            noisy = [max(v, 0) for v in noisy]
        table[measure] = pd.array(noisy, dtype="int64")
        measures[measure] = {"sensitivity": float(sensitivity), **discrete_laplace_error(scale)}
    return DPAggregates(
        table=table.reset_index(drop=True), epsilon=float(eps), epsilon_per_measure=float(eps_m),
        measures=measures, cells=len(table), rows_used=int(data[ROWS].sum()), rows_dropped_by_bound=dropped,
        rows_outside_domain=outside, domain_declared=bool(config.domain),
    )


def epsilon_spend(spec: Any) -> tuple[float, float, str, float | None]:
    """The (epsilon, total_epsilon, composition, delta) tuple :meth:`Ledger.record` spends.

    Without a declared total the release's own epsilon is its total (a single release).
    """
    pub = spec.publication
    if pub.epsilon is None:
        raise SpecError([Problem(spec.label, "publication.epsilon", "declare epsilon for a DP release")])
    total = pub.total_epsilon if pub.total_epsilon is not None else pub.epsilon
    return (float(pub.epsilon), float(total), pub.budget_composition, pub.delta)


def budget_population(spec: Any) -> str:
    """The population whose budget a DP release spends: composition.population, else the release."""
    return spec.composition.population if spec.composition else spec.release
