"""Speed of the population-risk models, side by side with baselines run in the same process.

    python benchmarks/population_risk.py [--classes 100000] [--repeat 7]

Prints the median wall time of each measure and of its baseline, and their ratio:

- population uniqueness (all models, with and without the class bootstrap) on the class sizes
  of a Bernoulli(5 %) sample of a Zipf(2) population;
- Zayatz's estimator on the frequencies of frequencies against the same formula as a per-class
  Python loop (a direct transcription; scipy's hypergeometric pmf called per class is slower
  still, about 16 s on 100,000 classes);
- δ-disclosure + β-likeness on a classes × 20 count matrix (dense and CSR) against a
  per-class Python loop;
- δ-presence on the Adult research subset against a pandas group-by/join.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import sparse

from anon_dagster.risk.attribute import beta_likeness, delta_disclosure
from anon_dagster.risk.population import (
    _zayatz_uniques_batch,
    frequencies_of_frequencies,
    population_uniqueness,
)
from anon_dagster.risk.presence import delta_presence

ADULT = Path(os.environ.get("ANON_DAGSTER_ADULT_DIR") or Path(__file__).resolve().parents[1] / "datasets" / "adult")


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def row(name: str, ours: float, baseline: float, baseline_name: str) -> None:
    print(f"{name:44s} {ours * 1e3:10.2f} ms   {baseline_name:30s} {baseline * 1e3:10.2f} ms"
          f"   x{baseline / ours:8.1f}")


def zayatz_loop(class_sizes: np.ndarray, f: float) -> float:
    """The same as a Python loop over classes (how a direct transcription runs)."""
    n = int(class_sizes.sum())
    pop = n / f
    total = 0.0
    c1 = 0
    for s in class_sizes.tolist():
        log_p = (math.log(s) + math.lgamma(pop - s + 1) - math.lgamma(n) - math.lgamma(pop - s - n + 2)
                 - math.lgamma(pop + 1) + math.lgamma(n + 1) + math.lgamma(pop - n + 1))
        total += math.exp(log_p)
        c1 += s == 1
    cond = c1 * (n / pop) / total
    return c1 * cond / n


def attribute_loop(counts: np.ndarray) -> tuple[float, float]:
    p = counts.sum(axis=0) / counts.sum()
    worst_d = worst_b = 0.0
    for i in range(counts.shape[0]):
        r = counts[i]
        n_i = r.sum()
        if n_i == 0:
            continue
        for s in np.flatnonzero(r):
            share = r[s] / n_i
            worst_d = max(worst_d, abs(math.log2(share / p[s])))
            worst_b = max(worst_b, (share - p[s]) / p[s])
    return worst_d, worst_b


def pandas_presence(population: pd.DataFrame, subset: pd.DataFrame, qis: list[str]) -> tuple[float, float]:
    pop = population.groupby(qis, dropna=False).size().rename("p")
    sub = subset.groupby(qis, dropna=False).size().rename("s")
    joined = pd.concat([pop, sub], axis=1).fillna(0)
    ratio = (joined["s"] / joined["p"])[joined["s"] > 0]
    return float(ratio.min()), float(ratio.max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", type=int, default=100_000, help="sample classes (about)")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    f = 0.05
    # Zipf(2) population classes; a 5 % sample keeps about 12.5 % of them.
    population = rng.zipf(2.0, size=int(args.classes / 0.125))
    sample = rng.binomial(population, f)
    sample = sample[sample > 0]
    print(f"sample: {sample.sum():,} records in {len(sample):,} classes, f = {f}; "
          f"median of {args.repeat} runs\n")

    ours = median_time(lambda: population_uniqueness(sample, f, bootstrap=0), args.repeat)
    ours_b = median_time(lambda: population_uniqueness(sample, f, bootstrap=200), args.repeat)
    loop = median_time(lambda: zayatz_loop(sample, f), max(1, args.repeat // 3))
    row("population_uniqueness, all models", ours, loop, "Zayatz alone, per-class loop")
    row("population_uniqueness, + bootstrap 200", ours_b, loop, "Zayatz alone, per-class loop")

    def zay():
        sizes, counts = frequencies_of_frequencies(sample)
        return _zayatz_uniques_batch(sizes, counts, f)

    z_ours = median_time(zay, args.repeat)
    row("Zayatz on frequencies of frequencies", z_ours, loop, "Zayatz, per-class loop")
    sizes, counts = frequencies_of_frequencies(sample)
    check = float(_zayatz_uniques_batch(sizes, counts, f)[0]) * f / sample.sum()
    assert abs(check - zayatz_loop(sample, f)) < 1e-6 * max(check, 1e-12), "Zayatz disagrees"

    counts = rng.poisson(0.4, size=(len(sample), 20))
    csr = sparse.csr_matrix(counts)
    a_dense = median_time(lambda: (delta_disclosure(counts), beta_likeness(counts)), args.repeat)
    a_sparse = median_time(lambda: (delta_disclosure(csr), beta_likeness(csr)), args.repeat)
    small = counts[:10_000]
    a_loop = median_time(lambda: attribute_loop(small), 1) * len(counts) / len(small)
    row("delta-disclosure + beta-likeness, dense", a_dense, a_loop, "per-class loop (scaled)")
    row("delta-disclosure + beta-likeness, CSR", a_sparse, a_loop, "per-class loop (scaled)")

    if (ADULT / "adult.csv").exists():
        adult = pd.read_csv(ADULT / "adult.csv", sep=";")
        subset = pd.read_csv(ADULT / "adult_subset.csv", sep=";")
        qis = list(adult.columns)
        p_ours = median_time(lambda: delta_presence(adult, subset, qis), args.repeat)
        p_pandas = median_time(lambda: pandas_presence(adult, subset, qis), args.repeat)
        d = delta_presence(adult, subset, qis)
        assert (d.delta_min, d.delta_max) == pandas_presence(adult, subset, qis)
        row("delta-presence, Adult, 9 QIs", p_ours, p_pandas, "pandas group-by + join")
    else:
        print("Adult data not found: delta-presence skipped")


if __name__ == "__main__":
    main()
