"""Population-uniqueness estimators against the truth on a synthetic population.

    python examples/population_uniqueness_validation.py [--zipf 2.0] [--classes 200000] [--seed 3]

A population of equivalence classes with Zipf-distributed sizes (heavy-tailed: most classes
small, a few huge) is drawn; every person is sampled with probability f (Bernoulli sampling);
the true share of the sample's records that are unique in the population is counted and
printed beside every estimator of :func:`anon_dagster.risk.population.population_uniqueness`.
"""

from __future__ import annotations

import argparse

import numpy as np

from anon_dagster.risk.population import MODELS, population_uniqueness


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zipf", type=float, default=2.0, help="Zipf exponent of class sizes")
    parser.add_argument("--classes", type=int, default=200_000, help="population classes")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--fractions", default="0.01,0.05,0.2,0.5,1.0")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    population = rng.zipf(args.zipf, size=args.classes)
    population = population[population < 10**7]  # keep the population size finite
    print(f"population: {population.sum():,} people in {len(population):,} classes, "
          f"{(population == 1).sum() / population.sum():.4%} unique\n")
    names = [*MODELS, "dankar"]
    print(f"{'f':>6} {'truth':>9} " + " ".join(f"{n:>13}" for n in names))
    for f in (float(x) for x in args.fractions.split(",")):
        sampled = rng.binomial(population, f)
        truth = ((population == 1) & (sampled == 1)).sum() / sampled.sum()
        r = population_uniqueness(sampled[sampled > 0], f, bootstrap=0)
        values = [*(r.estimates[m].fraction for m in MODELS), r.dankar.fraction]
        cells = " ".join(f"{'n/a':>13}" if v is None else f"{v:13.4%}" for v in values)
        print(f"{f:6.2f} {truth:9.4%} {cells}   ({r.dankar_model})")


if __name__ == "__main__":
    main()
