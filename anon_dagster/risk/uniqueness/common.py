"""What every population-uniqueness model shares: its input, its result, its bootstrap, the summary.

The input is the sample's *frequencies of frequencies*: ``c_s``, the number of equivalence
classes of size ``s`` (:func:`frequencies_of_frequencies`). A model's result is a
:class:`UniquenessEstimate`; all models on one sample make a :class:`PopulationUniqueness`.
The class bootstrap draws the sample's classes with replacement (a multinomial draw of the
frequencies of frequencies) for the percentile intervals of the models without a closed form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import DataError

MODELS: tuple[str, ...] = ("naive", "poisson", "poisson_gamma", "zayatz", "pitman", "snb")
"""The estimators, in the order they are reported (``dankar`` is reported apart)."""


@dataclass(frozen=True)
class UniquenessEstimate:
    """One model's estimate of population uniqueness.

    ``fraction`` is the estimated share of the sample's records that are unique in the
    population (equal, in expectation, to the share of the population that is unique);
    ``sample_count = fraction * n`` and ``population_count = fraction * N``. ``fraction`` is
    ``None`` when the model has no valid estimate on this sample (``note`` says why).
    """

    model: str
    fraction: float | None
    sample_count: float | None
    population_count: float | None
    interval: tuple[float, float] | None = None
    interval_method: str | None = None
    note: str = ""

    @property
    def valid(self) -> bool:
        """Whether the model produced an estimate."""
        return self.fraction is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable form (plain floats, lists, strings, None)."""
        return {
            "model": self.model,
            "fraction": self.fraction,
            "sample_count": self.sample_count,
            "population_count": self.population_count,
            "interval": list(self.interval) if self.interval is not None else None,
            "interval_method": self.interval_method,
            "note": self.note,
        }


@dataclass(frozen=True)
class PopulationUniqueness:
    """Population-uniqueness estimates of every model for one sample.

    ``estimates`` maps each name of :data:`MODELS` to its :class:`UniquenessEstimate`;
    ``dankar`` is the estimate Dankar's decision rule picks and ``dankar_model`` the model it
    picked. ``summary`` reads "between X and Y depending on the model".
    """

    sampling_fraction: float
    records: int
    classes: int
    sample_uniques: int
    population_size: float
    estimates: dict[str, UniquenessEstimate]
    dankar: UniquenessEstimate
    dankar_model: str
    summary: str
    bootstrap: int = 0
    seed: int = 0
    extras: dict[str, Any] = field(default_factory=dict)

    def range(self) -> tuple[float, float]:
        """Smallest and largest valid ``fraction`` over the models of :data:`MODELS`."""
        values = [e.fraction for e in self.estimates.values() if e.fraction is not None]
        return (min(values), max(values))

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable form; the keys are stable for reports and ``--json`` output."""
        low, high = self.range()
        return {
            "sampling_fraction": self.sampling_fraction,
            "records": self.records,
            "classes": self.classes,
            "sample_uniques": self.sample_uniques,
            "population_size": self.population_size,
            "estimates": {name: e.to_dict() for name, e in self.estimates.items()},
            "dankar": self.dankar.to_dict(),
            "dankar_model": self.dankar_model,
            "min": low,
            "max": high,
            "summary": self.summary,
            "bootstrap": self.bootstrap,
            "seed": self.seed,
            **self.extras,
        }


def frequencies_of_frequencies(class_sizes: Any) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(sizes, counts)``: each distinct class size ``s`` (ascending) and ``c_s``.

    Zero sizes (empty classes) are ignored; negative or non-integer sizes raise
    :class:`DataError`.
    """
    arr = np.asarray(class_sizes)
    if arr.ndim != 1:
        arr = arr.ravel()
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr)):
            raise DataError("class sizes must be non-negative integers (found a non-integer)")
    elif arr.dtype.kind not in "iub":
        raise DataError(f"class sizes must be non-negative integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.min() < 0:
        raise DataError(f"class sizes must be non-negative integers, found {int(arr.min())}")
    top = int(arr.max())
    # bincount is the fast path; for a few giant classes np.unique avoids a huge histogram.
    if top <= 4 * arr.size + 1024:
        hist = np.bincount(arr)
        sizes = np.flatnonzero(hist)
        counts = hist[sizes]
    else:
        sizes, counts = np.unique(arr, return_counts=True)
    keep = sizes > 0
    return sizes[keep].astype(np.int64), counts[keep].astype(np.int64)


def _count_of_size(sizes: np.ndarray, counts: np.ndarray, size: int) -> int:
    idx = np.searchsorted(sizes, size)
    if idx < len(sizes) and sizes[idx] == size:
        return int(counts[idx])
    return 0


def class_bootstrap(sizes: np.ndarray, counts: np.ndarray, replicates: int,
                    seed: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``replicates`` class-bootstrap samples and the number of records of each.

    Each replicate draws as many classes as the sample has, with replacement: a multinomial
    draw of the frequencies of frequencies (one row per replicate, columns as ``sizes``),
    seeded by ``seed``. ``None`` without replicates or with fewer than two classes.
    """
    u = int(counts.sum())
    if not (replicates > 0 and u >= 2):
        return None
    rng = np.random.default_rng(seed)
    boot = rng.multinomial(u, counts / u, size=replicates).astype(np.int64)
    return boot, boot @ sizes


def bootstrap_interval(values: np.ndarray, boot_n: np.ndarray, f: float,
                       replicates: int) -> tuple[float, float] | None:
    """2.5 and 97.5 percentiles of the fraction ``U / N`` over the bootstrap replicates.

    ``values`` holds each replicate's ``U`` (NaN where the model has none) and ``boot_n`` its
    number of records. ``None`` when fewer than ``max(10, replicates // 2)`` replicates have
    an estimate.
    """
    fracs = values / (boot_n / f)
    fracs = fracs[np.isfinite(fracs)]
    if len(fracs) < max(10, replicates // 2):
        return None
    low, high = np.percentile(fracs, [2.5, 97.5])
    return (float(low), float(high))


def _percent(x: float) -> str:
    if 0.0 < x < 1e-6:
        return "<0.0001%"
    return f"{100.0 * x:.3g}%"


def _finish(f, n, u, c1, pop, estimates, dankar, chosen, bootstrap, seed) -> PopulationUniqueness:
    valid = [(e.fraction, name) for name, e in estimates.items() if e.fraction is not None]
    (low, low_name), (high, high_name) = min(valid), max(valid)
    if low == high:
        spread = f"{_percent(low)} of the sample's records for every model"
    else:
        spread = (f"between {_percent(low)} ({low_name}) and {_percent(high)} ({high_name}) "
                  f"of the sample's records depending on the model")
    summary = (
        f"population uniqueness at f = {f:.4g}: {spread}; "
        f"Dankar's rule ({chosen}): {_percent(dankar.fraction or 0.0)}"
    )
    return PopulationUniqueness(
        sampling_fraction=f, records=n, classes=u, sample_uniques=c1, population_size=pop,
        estimates=estimates, dankar=dankar, dankar_model=chosen, summary=summary,
        bootstrap=bootstrap, seed=seed,
    )
