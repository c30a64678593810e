"""The population block of a measurement: journalist and marketer risk, k-map, uniqueness.

One function, :func:`measure_population`, called by :func:`~.measures.measure_risk` (classes of
rows) and by :func:`~.frequencies.measure_frequencies` (classes of a frequency table's rows), so
that both fill the same figures the same way. Definitions:

- ``F_c``: the number of people of the population in the sample's class ``c`` — counted in the
  population when one is given (:func:`~.reidentification.population_class_sizes`, on the
  ``population_qis`` when the population knows only some of the QIs: each fine class takes the
  ``F`` of the coarse class that contains it), else estimated as ``n_c / f`` from the sampling
  fraction ``f``;
- journalist, marketer risk and the records at risk from ``F`` (:func:`~.reidentification.journalist_figures`);
- ``k_map = min_c F_c``;
- the sampling fraction used for population uniqueness: the declared ``f``, else
  ``rows / population size`` (at most 1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError
from ..io import read_table
from .classes import EquivalenceClasses
from .coding import FactorizeCache
from .reidentification import journalist_figures, population_class_sizes
from .result import RiskMeasures


def as_list(value: str | Sequence[str] | None) -> list[str]:
    """Column names from a list or one comma-separated string (blanks dropped)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return list(value)


def per_attribute(option: Any, name: str) -> Any:
    """An option given once for every sensitive attribute, or per attribute as a mapping."""
    return option.get(name) if isinstance(option, Mapping) else option


def measure_population(
    measures: RiskMeasures, extras: dict[str, Any], classes: EquivalenceClasses, *,
    qis: Sequence[str], threshold: float, population: pd.DataFrame | str | Path | None,
    population_qis: Sequence[str] | None, population_source: str | None, count_column: str | None,
    strict_population: bool, sampling_fraction: float | None, uniqueness: bool, bootstrap: int,
    seed: int, coarse_classes: Callable[[list[str]], EquivalenceClasses],
    cache: FactorizeCache | None = None,
) -> pd.DataFrame | None:
    """Fill the population figures of ``measures`` and ``extras`` (module docstring).

    ``classes`` are the sample's classes on ``qis``; ``coarse_classes(pq)`` builds its classes on
    the population's QIs ``pq``. Returns the population as read (None without one), for the
    measurements that need its rows again (δ-presence).
    """
    sizes = classes.sizes
    n = int(sizes.sum())
    population_size: float | None = None
    frame: pd.DataFrame | None = None
    if population is not None:
        source = population_source or (str(population) if isinstance(population, str | Path) else "population")
        frame = population if isinstance(population, pd.DataFrame) else read_table(population)
        if population_qis is not None:
            pq = as_list(population_qis)
            extra = [q for q in pq if q not in qis]
            if not pq or extra:
                raise DataError(f"population QIs must be a non-empty subset of the QIs, got {pq}")
            coarse = coarse_classes(pq)
            coarse_sizes = population_class_sizes(coarse, frame, count_column, source=source,
                                                  strict=strict_population, cache=cache)
            # each fine class lies inside one coarse class: take its F
            F = coarse_sizes[coarse.row_class[classes.first_rows]]
            extras["population_qis"] = pq
        else:
            F = population_class_sizes(classes, frame, count_column, source=source,
                                       strict=strict_population, cache=cache)
        population_size = float(pd.to_numeric(frame[count_column]).sum() if count_column else len(frame))
        extras["journalist_model"] = "population"
        extras["population_size"] = population_size
        extras["k_map"] = int(F.min()) if np.all(F == np.floor(F)) else float(F.min())
    elif sampling_fraction is not None:
        F = sizes / sampling_fraction
        extras["journalist_model"] = "estimated from the sampling fraction (F = n_c / f)"
    else:
        F = None
    if F is not None:
        jf = journalist_figures(sizes, F, n, threshold)
        measures.journalist_max = jf["journalist_max"]
        measures.journalist_avg = jf["journalist_avg"]
        measures.marketer = jf["marketer"]
        extras["journalist_records_at_risk"] = jf["journalist_records_at_risk"]
        measures.population_sizes = F

    f_used = sampling_fraction
    if f_used is None and population_size:
        f_used = min(n / population_size, 1.0)
    if f_used is not None:
        extras["sampling_fraction"] = f_used
        if uniqueness:
            # imported here: the estimators load scipy.stats, which a measurement without a
            # population or sampling fraction never needs
            from .uniqueness import population_uniqueness

            extras["population_uniqueness"] = population_uniqueness(
                sizes, f_used, bootstrap=bootstrap, seed=seed).to_dict()
    return frame


__all__ = ["as_list", "measure_population", "per_attribute"]
