"""Every population-uniqueness model on one sample: :func:`population_uniqueness`."""

from __future__ import annotations

import math
from typing import Any

from ...errors import DataError
from ..reidentification import check_sampling_fraction
from .common import (
    MODELS,
    PopulationUniqueness,
    UniquenessEstimate,
    _count_of_size,
    _finish,
    bootstrap_interval,
    class_bootstrap,
    frequencies_of_frequencies,
)
from .dankar import dankar_rule
from .naive import naive_estimate
from .pitman import _pitman_estimate
from .poisson import poisson_estimate
from .poisson_gamma import _poisson_gamma_uniques, _poisson_gamma_uniques_batch
from .snb import _snb_estimate, _snb_uniques_batch
from .zayatz import _zayatz_uniques_batch


def population_uniqueness(
    sample_class_sizes: Any,
    sampling_fraction: float,
    *,
    bootstrap: int = 200,
    seed: int = 0,
) -> PopulationUniqueness:
    """Estimate the share of the sample's records that are unique in the population.

    ``sample_class_sizes`` holds the size of every equivalence class of the sample (any order);
    ``sampling_fraction`` is ``f = n / N`` in ``(0, 1]``. ``bootstrap`` is the number of class
    bootstrap replicates used for the intervals of Poisson-Gamma, Zayatz and SNB (0: no such
    intervals); ``seed`` makes them reproducible. The models, their sources, intervals and the
    results on degenerate inputs are described in the docstring of
    :mod:`anon_dagster.risk.uniqueness`.
    """
    f = check_sampling_fraction(sampling_fraction)
    sizes, counts = frequencies_of_frequencies(sample_class_sizes)
    n = int((sizes * counts).sum())
    if n == 0:
        raise DataError("population uniqueness needs a non-empty sample (0 records)")
    if bootstrap < 0:
        raise DataError(f"bootstrap must be >= 0, got {bootstrap}")
    u = int(counts.sum())
    c1 = _count_of_size(sizes, counts, 1)
    pop = n / f

    def make(model, uniques, interval=None, method=None, note=""):
        if uniques is None or not math.isfinite(uniques):
            return UniquenessEstimate(model, None, None, None, None, None, note)
        frac = float(uniques / pop)
        return UniquenessEstimate(model, frac, frac * n, float(uniques),
                                  interval, method, note)

    estimates: dict[str, UniquenessEstimate] = {}
    estimates["naive"] = naive_estimate(c1, n, pop)
    naive = estimates["naive"].fraction

    if f == 1.0 or c1 == 0:
        exact = (naive, naive)
        why = ("exact: the sample is the population" if f == 1.0
               else "no sample uniques: no population uniques in the sample")
        for model in MODELS[1:]:
            estimates[model] = make(model, c1 / f, exact, "exact", why)
        dankar = make("dankar", c1 / f, exact, "exact", why)
        chosen = "exact"
        return _finish(f, n, u, c1, pop, estimates, dankar, chosen, bootstrap, seed)

    # Poisson with the plug-in lambda = n_j / f, interval from the exact Poisson bounds.
    uniques_po, interval_po = poisson_estimate(c1, n, f)
    estimates["poisson"] = make("poisson", uniques_po, interval_po, "exact Poisson 95% bounds on lambda")

    drawn = class_bootstrap(sizes, counts, bootstrap, seed)
    boot, boot_n = drawn if drawn is not None else (None, None)

    def boot_interval(values):
        return bootstrap_interval(values, boot_n, f, bootstrap)

    boot_method = f"class bootstrap, {bootstrap} replicates, 2.5-97.5 percentiles"

    uniques_pg, note_pg = _poisson_gamma_uniques(sizes, counts, f)
    interval = boot_interval(_poisson_gamma_uniques_batch(sizes, boot, f)) if boot is not None else None
    estimates["poisson_gamma"] = make("poisson_gamma", uniques_pg, interval,
                                      boot_method if interval else None, note_pg)

    uniques_z = float(_zayatz_uniques_batch(sizes, counts, f)[0])
    interval = boot_interval(_zayatz_uniques_batch(sizes, boot, f)) if boot is not None else None
    estimates["zayatz"] = make("zayatz", uniques_z, interval, boot_method if interval else None)

    uniques_p, interval_p, note_p = _pitman_estimate(sizes, counts, f, n)
    estimates["pitman"] = make("pitman", uniques_p, interval_p,
                               "observed information, delta method, 95%" if interval_p else None,
                               note_p)

    uniques_s, note_s, fit_s = _snb_estimate(sizes, counts, f)
    interval = None
    if boot is not None and math.isfinite(uniques_s):
        interval = boot_interval(_snb_uniques_batch(sizes, boot, f, start=fit_s))
    estimates["snb"] = make("snb", uniques_s, interval, boot_method if interval else None, note_s)

    chosen, dankar = dankar_rule(estimates, f)
    return _finish(f, n, u, c1, pop, estimates, dankar, chosen, bootstrap, seed)
