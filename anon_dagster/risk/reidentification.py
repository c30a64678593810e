"""Re-identification risk under the prosecutor, journalist and marketer models.

Definitions (El Emam, *Guide to the De-Identification of Personal Health Information*, as ARX
computes them). A record in class ``c`` of sample size ``n_c`` and population size ``F_c``:

- prosecutor (the attacker knows the target is in the table): risk ``1 / n_c``.
  ``prosecutor_max = 1 / k``; ``prosecutor_avg`` = mean over *records* of ``1 / n_c`` =
  classes / rows; labelled separately, the mean over *classes* of ``1 / n_c``.
- journalist (the attacker starts from a population register): risk ``1 / F_c``.
  ``journalist_max = 1 / min_c F_c``; ``journalist_avg`` = ARX's success rate
  ``max(classes / sum_c F_c, marketer)``.
- marketer (the attacker tries to link every record): ``marketer`` = mean over records of
  ``1 / F_c`` = ``sum_c (n_c / F_c) / n``.

``F_c`` comes from a population (microdata, or a frequency table with a count column) joined on
the QI values, or, with only a sampling fraction ``f``, is estimated as ``n_c / f`` (the expected
population class size under uniform sampling, labelled as an estimate).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import DataError
from ..hierarchies import _as_label
from .classes import EquivalenceClasses
from .coding import FactorizeCache, factorize_values
from .kernel import combine_codes


def check_sampling_fraction(sampling_fraction: Any) -> float:
    """Return ``sampling_fraction`` as a float in ``(0, 1]`` or raise :class:`DataError`."""
    try:
        f = float(sampling_fraction)
    except (TypeError, ValueError):
        f = math.nan
    if not math.isfinite(f) or f <= 0.0 or f > 1.0:
        raise DataError(f"sampling fraction {sampling_fraction!r} is outside (0, 1]")
    return f


def population_weights(population: pd.DataFrame, count_column: str | None, source: str = "the population",
                       integers: bool = False) -> np.ndarray | None:
    """The people each population row stands for: ``None`` for microdata (one row, one person),
    else the float64 values of ``count_column`` of a frequency table.

    Raises DataError naming the source, the column and the first bad row when the column is
    absent or holds a value that is not a number >= 0 (with ``integers``, not a whole number).
    """
    if count_column is None:
        return None
    if count_column not in population.columns:
        raise DataError(
            f"{source} has no count column {count_column!r} "
            f"(columns: {', '.join(map(str, population.columns))})"
        )
    weights = pd.to_numeric(population[count_column], errors="coerce").to_numpy(float, na_value=np.nan)
    bad = ~np.isfinite(weights) | (weights < 0)
    if integers:
        bad |= weights != np.floor(np.nan_to_num(weights))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        value = population[count_column].iloc[row]
        value = value.item() if isinstance(value, np.generic) else value
        kind = "integers" if integers else "numbers"
        raise DataError(
            f"{source}: count column {count_column!r} must hold non-negative {kind}; "
            f"row {row} has {value!r}"
        )
    return weights


def join_population(classes: EquivalenceClasses, population: pd.DataFrame, source: str = "the population",
                    cache: FactorizeCache | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Sample classes and population rows numbered in one space of QI-value combinations.

    Returns ``(class_ids, population_ids, n_ids)``: the combination id of each sample class and
    of each population row, ids in ``[0, n_ids)``. A class and a row share an id when they hold
    the same QI values: values match as they are, missing matching missing; a QI that is
    numeric in one table and text in the other is compared by its labels (30 and 30.0 both read
    "30"). Every value the population lacks gets one id of its own ("absent"), so a class
    holding one has no population row. ``classes`` must be built with ``from_frame``.
    """
    qis = classes.qis
    absent = [q for q in qis if q not in population.columns]
    if absent:
        raise DataError(f"{source}: quasi-identifier {absent[0]!r} is not a column of the population")
    if classes._frame is None:
        raise ValueError("join_population needs classes built with from_frame")
    sample = classes._frame
    first = classes.first_rows
    # Code each population column once; look up only the sample's distinct values among the
    # population's (a hash lookup over a few values, not over rows), and join only one row
    # per sample class: every row of a class has the same QI values. A value the population
    # lacks gets a code of its own, a missing value the population's missing code.
    class_codes, pop_codes, cards = [], [], []
    for q in qis:
        codes, uniques = _value_codes(population[q], cache)
        n_u = len(uniques)
        codes = np.where(codes < 0, n_u, codes)
        s_codes, s_uniques = _value_codes(sample[q], cache)
        found = _lookup(pd.Series(s_uniques), uniques)
        found = np.where(found < 0, n_u + 1, found)
        found = np.append(found, n_u)  # sample code -1 (missing): the population's missing code
        class_codes.append(found[s_codes[first]])
        pop_codes.append(codes)
        cards.append(n_u + 2)
    joint = [np.concatenate([a, b]) for a, b in zip(class_codes, pop_codes, strict=True)]
    del class_codes, pop_codes
    n_classes = classes.n_classes
    ids, sizes = combine_codes(joint, cards, n_classes + len(population))
    return ids[:n_classes], ids[n_classes:], len(sizes)


def population_class_sizes(classes: EquivalenceClasses, population: pd.DataFrame,
                           count_column: str | None = None, source: str = "population",
                           strict: bool = True, cache: FactorizeCache | None = None) -> np.ndarray:
    """Population size ``F_c`` of each sample class (float64, one per class).

    The population is microdata (one row per person) or, with ``count_column``, a frequency
    table whose rows carry the number of people with those QI values (rows may repeat). Values
    are matched as :func:`join_population` says. Raises DataError when a QI column is absent,
    counts are not non-negative numbers, a sample class is absent from the population (its
    journalist risk would be undefined; the message names one such class), or a class has
    fewer people in the population than rows in the sample. With ``strict=False`` the latter is
    the documented choice ``F_c = max(F_c, n_c)`` (rows that are events of the same person, such
    as repeated admissions, can outnumber the people of a class). ``cache`` shares the
    columns' factorizations with the rest of a measurement.
    """
    qis = classes.qis
    weights = population_weights(population, count_column, source)
    class_ids, population_ids, n_ids = join_population(classes, population, source, cache)
    F = np.bincount(population_ids, weights=weights, minlength=n_ids)[class_ids].astype(float)
    keys: pd.DataFrame | None = None

    lacking = np.flatnonzero(F <= 0)
    if len(lacking) or (F < classes.sizes).any():
        keys = classes.keys()  # only to name a class in the error
    if len(lacking):
        raise DataError(
            f"{source}: the population has no one in the sample class "
            f"{describe_class(keys, qis, int(lacking[0]))} ({len(lacking)} of {classes.n_classes} sample classes "
            "are absent): journalist and marketer risk are undefined; give the population the "
            "sample was drawn from, generalized like the sample"
        )
    short = np.flatnonzero(F < classes.sizes)
    if len(short) and not strict:
        return np.maximum(F, classes.sizes)
    if len(short):
        c = int(short[0])
        raise DataError(
            f"{source}: the sample class {describe_class(keys, qis, c)} has {int(classes.sizes[c])} "
            f"rows but the population only {F[c]:g} people: the sample is not drawn from this "
            "population, or its rows are events (several per person: strict_population=False, "
            "--lenient-population, counts such a class as its own rows)"
        )
    return F


def _lookup(values: pd.Series, uniques: pd.Index) -> np.ndarray:
    """Position of each value in ``uniques`` (-1 when absent), by Arrow's hash lookup when both
    sides are Arrow-backed strings, else by a pandas index lookup."""
    numeric = pd.api.types.is_numeric_dtype
    if numeric(values.dtype) != numeric(uniques.dtype):
        # one table typed the column as numbers, the other as text (a csv against a parquet
        # file): compare the labels, 30 and 30.0 both reading "30"
        codes, distinct = pd.factorize(values, use_na_sentinel=True)
        mine = pd.Index([_as_label(v) for v in distinct])
        theirs = pd.Index([_as_label(v) for v in uniques])
        found = theirs.get_indexer(mine)
        return np.where(codes < 0, -1, found[codes]) if len(found) else np.full(len(codes), -1)
    left, right = _arrow(values), _arrow(uniques)
    if left is not None and right is not None and left.type == right.type:
        found = pc.index_in(left, value_set=right)
        return found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return pd.Index(uniques).get_indexer(values)


def _arrow(x: pd.Series | pd.Index) -> pa.Array | None:
    array = x.array
    if not hasattr(array, "__arrow_array__") or not pd.api.types.is_string_dtype(x.dtype):
        return None
    arr = array.__arrow_array__()
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.string())
    return arr


def _value_codes(series: pd.Series, cache: FactorizeCache | None) -> tuple[np.ndarray, pd.Index]:
    """Codes (-1 for missing) and the distinct values they stand for, as plain values.

    A categorical's own codes and categories are used as they are (no decoding of its rows).
    """
    if isinstance(series.dtype, pd.CategoricalDtype):
        return series.cat.codes.to_numpy(), pd.Index(series.dtype.categories)
    return factorize_values(_plain(series), cache)


def _plain(series: pd.Series) -> pd.Series:
    """Categoricals and Arrow dictionaries as their values, so differently coded frames match."""
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return series.astype(dtype.categories.dtype)
    if isinstance(dtype, pd.ArrowDtype) and pa.types.is_dictionary(dtype.pyarrow_dtype):
        return series.astype(pd.ArrowDtype(dtype.pyarrow_dtype.value_type))
    return series


def describe_class(keys: pd.DataFrame, qis: Sequence[str], row: int) -> str:
    """``(q1=v1, q2=v2)``: the QI values of row ``row`` of ``keys``, for error messages."""
    parts = []
    for q in qis:
        v = keys[q].iloc[row]
        if isinstance(v, np.generic):
            v = v.item()  # 2, not np.int64(2)
        parts.append(f"{q}={'<missing>' if pd.isna(v) else repr(v)}")
    return "(" + ", ".join(parts) + ")"


def prosecutor_figures(sizes: np.ndarray, n_rows: int, threshold: float) -> dict[str, float]:
    """Prosecutor max/avg (per record and per class) and the share of records above threshold."""
    risk = 1.0 / sizes
    return {
        "prosecutor_max": float(risk.max()),
        "prosecutor_avg": float(len(sizes) / n_rows),
        "prosecutor_avg_per_class": float(risk.mean()),
        "records_at_risk": float(sizes[risk > threshold].sum() / n_rows),
    }


def journalist_figures(sizes: np.ndarray, F: np.ndarray, n_rows: int, threshold: float) -> dict[str, float]:
    """Journalist max/avg, marketer and the share of records whose ``1/F`` exceeds threshold."""
    marketer = float((sizes / F).sum() / n_rows)
    return {
        "journalist_max": float(1.0 / F.min()),
        "journalist_avg": float(max(len(sizes) / F.sum(), marketer)),
        "marketer": marketer,
        "journalist_records_at_risk": float(sizes[1.0 / F > threshold].sum() / n_rows),
    }
