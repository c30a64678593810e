"""The risk ladder: how re-identification risk moves as the demo data is generalized.

Run it with ``python examples/risk_ladder.py`` (``--help`` for sizes, seed, ``--json``). On the
synthetic region of :mod:`anon_dagster.demo` (a population, and hospital discharges drawn from
it) it prints three tables:

1. **The ladder.** Six steps of ever coarser quasi-identifiers on the discharged patients
   (one row per person, their first discharge):

   ====================  ===========================================
   step                  quasi-identifiers
   ====================  ===========================================
   raw                   age, sex, postal code, profession
   without profession    age, sex, postal code
   3-digit postal code   age, sex, postal code masked to 3 digits
   5-year ages           5-year age group, sex, 3-digit postal code
   province              5-year age group, sex, province
   age bands             broad age band, sex, province
   ====================  ===========================================

   with, per step: equivalence classes, % of unique rows, average (prosecutor) risk = classes
   / rows, the joint QI entropy in bits (the information the QIs still carry), k (the smallest
   class) and the share of rows that would have to be suppressed to reach k >= 5 (the rows of
   classes smaller than 5), plus journalist and marketer risk against the population.
   Expected shape: the average risk falls by more than an order of magnitude while k stays 1:
   k describes the worst-protected person, not the table.

2. **Three adversary models on one step** (default: the last). Prosecutor (the attacker knows
   the person is in the table: 1 / class size in the table), journalist (the attacker starts
   from a register of the population: 1 / class size in the population) and marketer (the
   attacker links everybody: mean over rows of 1 / population class size). Their figures are
   orders of magnitude apart, which is why the adversary is declared before measuring.

3. **Population uniqueness from a sample.** Uniform random samples of the population at
   f = 1, 5, 20 and 50 %, over the quasi-identifiers of one step (default: "without
   profession", the classic age + sex + postal code triple). Because the population is known,
   the *true* share of sampled people who are unique in the population is computed and set
   beside the estimates from the sample alone: naive sample uniqueness, Poisson,
   Poisson-Gamma, Zayatz, Pitman, SNB and Dankar's rule (see
   :mod:`anon_dagster.risk.population`). Expected shape: the naive estimate overstates by a
   large factor at f = 1 %; Poisson-Gamma understates at small f.

``main(...)`` returns every figure as a dict, so tests and notebooks can use them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from anon_dagster.demo import DEFAULT_DISCHARGES, DEFAULT_POPULATION, DEFAULT_SEED, generate_frames
from anon_dagster.hierarchies import IntervalHierarchy, MaskHierarchy
from anon_dagster.risk import measure_risk
from anon_dagster.risk.classes import EquivalenceClasses
from anon_dagster.risk.population import MODELS, population_uniqueness

FRACTIONS = (0.01, 0.05, 0.20, 0.50)
#: Broad age bands as health statistics publish them; the top band is open, so the oldest
#: people are not left alone in a band of their own.
AGE_BANDS = ((0, 14), (15, 29), (30, 44), (45, 64), (65, 79), (80, None))
K_TARGET = 5


@dataclass(frozen=True)
class Step:
    """One rung of the ladder: a name and the quasi-identifier columns it publishes."""

    name: str
    qis: tuple[str, ...]


LADDER: tuple[Step, ...] = (
    Step("raw", ("age", "sex", "postal_code", "profession")),
    Step("without profession", ("age", "sex", "postal_code")),
    Step("3-digit postal code", ("age", "sex", "postal_3")),
    Step("5-year ages", ("age_5y", "sex", "postal_3")),
    Step("province", ("age_5y", "sex", "province")),
    Step("age bands", ("age_band", "sex", "province")),
)


def step_named(name: str) -> Step:
    for step in LADDER:
        if step.name == name:
            return step
    raise ValueError(f"no ladder step {name!r} (steps: {', '.join(s.name for s in LADDER)})")


def age_band_labels(age: pd.Series) -> pd.Series:
    """``age`` as the labels of :data:`AGE_BANDS` (``"0-14"`` ... ``"80+"``)."""
    lows = np.array([low for low, _high in AGE_BANDS])
    labels = np.array([f"{low}-{high}" if high is not None else f"{low}+" for low, high in AGE_BANDS],
                      dtype=object)
    index = np.searchsorted(lows, age.to_numpy(), side="right") - 1
    return pd.Series(labels[index], index=age.index, dtype="str")


def with_generalized_columns(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` plus the generalized columns the ladder uses, made with the spec's hierarchies.

    ``age_5y``: level 1 of the interval hierarchy (widths 5, 10, 20); ``postal_3``: level 2 of
    the mask hierarchy (keep 4, 3, 2), e.g. 28014 → 280**; ``age_band``: :data:`AGE_BANDS`.
    """
    out = df.copy()
    out["age_5y"] = IntervalHierarchy("age", [5, 10, 20]).generalize(df["age"], 1)
    out["postal_3"] = MaskHierarchy("postal_code", [4, 3, 2]).generalize(df["postal_code"], 2)
    out["age_band"] = age_band_labels(df["age"])
    return out


def ladder_figures(discharges: pd.DataFrame, population: pd.DataFrame,
                   steps: Sequence[Step] = LADDER) -> list[dict[str, Any]]:
    """Per step: classes, uniques, average and maximum risk, entropy, k, suppression for k=5.

    Both frames must already hold the generalized columns (:func:`with_generalized_columns`).
    """
    rows = []
    for step in steps:
        qis = list(step.qis)
        # the ladder's own uniqueness table samples the population; skip the kernel's here
        risk = measure_risk(discharges, qis, population=population, uniqueness=False).to_dict()
        classes = EquivalenceClasses.from_frame(discharges, qis)
        small = classes.sizes < K_TARGET
        rows.append({
            "step": step.name,
            "quasi_identifiers": qis,
            "rows": int(risk["rows"]),
            "classes": int(risk["classes"]),
            "uniques_pct": 100.0 * float(risk["uniques_fraction"]),
            "prosecutor_avg": float(risk["prosecutor_avg"]),
            "prosecutor_max": float(risk["prosecutor_max"]),
            "journalist_max": float(risk["journalist_max"]),
            "journalist_avg": float(risk["journalist_avg"]),
            "marketer": float(risk["marketer"]),
            "utility_bits": float(risk["qi_entropy_bits"]),
            "k": int(risk["k"]),
            "suppression_for_k5_pct": 100.0 * float(classes.sizes[small].sum()) / classes.n_rows,
        })
    return rows


def adversary_figures(ladder: list[dict[str, Any]], step: str) -> dict[str, Any]:
    """The three adversary models' figures on one step of the ladder."""
    row = next(r for r in ladder if r["step"] == step)
    keys = ("prosecutor_max", "prosecutor_avg", "journalist_max", "journalist_avg", "marketer")
    return {"step": step, "quasi_identifiers": row["quasi_identifiers"], **{k: row[k] for k in keys}}


def uniqueness_figures(population: pd.DataFrame, step: Step, fractions: Sequence[float] = FRACTIONS,
                       seed: int = DEFAULT_SEED, bootstrap: int = 50) -> list[dict[str, Any]]:
    """True vs estimated population uniqueness for uniform samples of ``population``.

    For each sampling fraction f, a simple random sample of round(f N) people is drawn
    (seeded). ``truth`` is the share of sampled people whose QI values no one else in the
    population shares; the estimates use only the sample's class sizes and f.
    """
    qis = list(step.qis)
    n_pop = len(population)
    # population class size of every person, so the truth of any sample is one lookup
    pop_classes = EquivalenceClasses.from_frame(population, qis)
    person_class_size = pop_classes.row_sizes()
    population_uniques = float((person_class_size == 1).mean())
    rng = np.random.default_rng([seed, 1])
    out = []
    for f in fractions:
        n = max(1, round(f * n_pop))
        picked = np.sort(rng.choice(n_pop, size=n, replace=False))
        sample = population.iloc[picked]
        sizes = EquivalenceClasses.from_frame(sample, qis).sizes
        est = population_uniqueness(sizes, n / n_pop, bootstrap=bootstrap, seed=seed)
        row: dict[str, Any] = {
            "sampling_fraction": n / n_pop,
            "records": n,
            "truth": float((person_class_size[picked] == 1).mean()),
            "population_share_unique": population_uniques,
        }
        for model in MODELS:
            row[model] = est.estimates[model].fraction
        row["dankar"] = est.dankar.fraction
        row["dankar_model"] = est.dankar_model
        row["summary"] = est.summary
        out.append(row)
    return out


def main(population: int = DEFAULT_POPULATION, discharges: int = DEFAULT_DISCHARGES,
         seed: int = DEFAULT_SEED, fractions: Sequence[float] = FRACTIONS,
         adversary_step: str = "age bands", uniqueness_step: str = "without profession",
         bootstrap: int = 50, verbose: bool = True) -> dict[str, Any]:
    """Generate the demo data in memory, compute the three tables, print them (``verbose``).

    Returns ``{"parameters", "ladder", "adversaries", "uniqueness", "seconds"}``: the figures
    as plain Python values (fractions as floats in [0, 1], except ``uniques_pct`` and
    ``suppression_for_k5_pct`` which are percentages).
    """
    started = time.perf_counter()
    people, stays = generate_frames(population, discharges, seed)
    people = with_generalized_columns(people)
    # One row per person: a readmitted patient is still one person, and counting their stays
    # as several rows would inflate class sizes (and make journalist risk undefined, since a
    # class could hold more rows than people).
    stays = with_generalized_columns(stays.drop_duplicates("patient_id", keep="first"))
    ladder = ladder_figures(stays, people)
    adversaries = adversary_figures(ladder, adversary_step)
    uniqueness = uniqueness_figures(people, step_named(uniqueness_step), fractions, seed, bootstrap)
    result = {
        "parameters": {
            "population": population, "discharges": discharges, "seed": seed,
            "fractions": list(fractions), "adversary_step": adversary_step,
            "uniqueness_step": uniqueness_step,
            "uniqueness_quasi_identifiers": list(step_named(uniqueness_step).qis),
            "bootstrap": bootstrap,
        },
        "ladder": ladder,
        "adversaries": adversaries,
        "uniqueness": uniqueness,
        "seconds": time.perf_counter() - started,
    }
    if verbose:
        print(render(result))
    return result


def render(result: dict[str, Any]) -> str:
    """The three tables as text."""
    p = result["parameters"]
    lines = [
        f"Risk ladder on the demo data: population {p['population']:,}, "
        f"discharges {p['discharges']:,}, seed {p['seed']}",
        "",
        f"1. Generalization ladder ({result['ladder'][0]['rows']:,} discharged patients, one row "
        "per person; risk per record)",
    ]
    ladder = pd.DataFrame(result["ladder"])
    table = pd.DataFrame({
        "step": ladder["step"],
        "classes": ladder["classes"].map("{:,}".format),
        "% unique": ladder["uniques_pct"].map("{:.1f}".format),
        "avg risk": ladder["prosecutor_avg"].map("{:.4f}".format),
        "utility bits": ladder["utility_bits"].map("{:.2f}".format),
        "k": ladder["k"],
        "suppress for k=5 %": ladder["suppression_for_k5_pct"].map("{:.1f}".format),
        "journalist avg": ladder["journalist_avg"].map("{:.2e}".format),
        "marketer": ladder["marketer"].map("{:.2e}".format),
    })
    lines.append(table.to_string(index=False))
    first, last = result["ladder"][0], result["ladder"][-1]
    lines.append(
        f"   average risk falls x{first['prosecutor_avg'] / last['prosecutor_avg']:.0f} "
        f"from '{first['step']}' to '{last['step']}'; k goes {first['k']} -> {last['k']}"
    )
    a = result["adversaries"]
    lines += [
        "",
        f"2. Adversary models on step '{a['step']}' ({', '.join(a['quasi_identifiers'])})",
        f"   prosecutor  max {a['prosecutor_max']:.3g}   avg {a['prosecutor_avg']:.3g}",
        f"   journalist  max {a['journalist_max']:.3g}   avg {a['journalist_avg']:.3g}",
        f"   marketer        {a['marketer']:.3g}",
        "",
        f"3. Population uniqueness from a uniform sample over "
        f"{', '.join(p['uniqueness_quasi_identifiers'])} ('{p['uniqueness_step']}'); "
        "share of the sample's records unique in the population",
    ]
    uniq = pd.DataFrame(result["uniqueness"])
    cols = {"f": uniq["sampling_fraction"].map("{:.0%}".format), "truth": uniq["truth"]}
    for model in (*MODELS, "dankar"):
        cols[model] = uniq[model]
    shown = pd.DataFrame(cols)
    for c in shown.columns[1:]:
        shown[c] = shown[c].map(lambda v: "n/a" if v is None or pd.isna(v) else f"{v:.2e}")
    lines.append(shown.to_string(index=False))
    lines.append("   naive / truth: " + ", ".join(
        f"f={r['sampling_fraction']:.0%} x{r['naive'] / r['truth']:.0f}" if r["truth"] else
        f"f={r['sampling_fraction']:.0%} (truth 0)" for r in result["uniqueness"]))
    lines.append(f"   ({result['seconds']:.1f} s)")
    return "\n".join(lines)


def _cli(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The risk ladder on the demo data.")
    parser.add_argument("--population", type=int, default=DEFAULT_POPULATION)
    parser.add_argument("--discharges", type=int, default=DEFAULT_DISCHARGES)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--bootstrap", type=int, default=50, help="replicates for the intervals")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    result = main(args.population, args.discharges, args.seed, bootstrap=args.bootstrap,
                  verbose=not args.json)
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
