"""Putting a population into Mondrian's published classes: record size and placement time.

1. Adult (ARX hierarchies for the categorical QIs, age numeric), k=5 Mondrian on a 50 % sample;
   the whole file is the population. Baseline in the same run: the same F by a per-class numpy
   mask over the population (one pass per class). Prints medians of 3 runs and their ratio.
2. Scale: Mondrian k=5 on ``--rows`` seeded synthetic sample rows × 4 QIs (age, income numeric;
   zip masked, sex suppression-only), a population of ``--population`` other synthetic rows.
   The record's cut tree is replayed (median of 3) beside the box-by-box method of records
   without a tree, which tests every population combination against every class box: far too
   slow at this size, so it is timed on growing slices of the population and extrapolated
   linearly in the number of distinct combinations (printed as such). Both results are compared
   on the largest slice. Prints the record's size in bytes per sample row.

    .venv/bin/python benchmarks/population_alignment.py [--adult ADULT_DIR] [--rows N] [--population N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from anon_dagster.anonymize import anonymize
from anon_dagster.anonymize.population import generalize_population
from anon_dagster.spec import load_spec

QIS = ["age", "sex", "race", "marital-status", "education", "occupation"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--adult", type=Path, default=None,
                   help="Adult data folder (default: ANON_DAGSTER_ADULT_DIR, else datasets/adult)")
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--population", type=int, default=1_000_000)
    p.add_argument("--skip-adult", action="store_true")
    args = p.parse_args()
    if not args.skip_adult:
        bench_adult(args.adult or adult_dir())
    bench_scale(args.rows, args.population)


def adult_dir() -> Path:
    root = Path(__file__).resolve().parents[1]
    env = os.environ.get("ANON_DAGSTER_ADULT_DIR")
    for cand in ([Path(env)] if env else []) + [root / "datasets" / "adult"]:
        if (cand / "adult.csv").exists():
            return cand
    raise SystemExit("Adult data not found: set ANON_DAGSTER_ADULT_DIR or pass --adult (or --skip-adult)")


def bench_adult(adult: Path) -> None:
    print("1. Adult, k=5 Mondrian on a 50 % sample, the whole file as population")
    pop = pd.read_csv(adult / "adult.csv", sep=";")[QIS]
    sample = pop.sample(frac=0.5, random_state=0).reset_index(drop=True)
    with tempfile.TemporaryDirectory() as tmp:
        cols = {q: {"role": "quasi", "hierarchy": {"type": "table", "path": str(adult / f"adult_hierarchy_{q}.csv")}}
                for q in QIS if q != "age"}
        cols["age"] = {"role": "quasi"}
        spec_d = {"release": "bench", "source": {"path": "x.csv"}, "columns": cols,
                  "anonymization": {"method": "mondrian", "k": 5, "max_suppression": 0.05},
                  "policy": {"population": {"path": "p.csv"}, "thresholds": {"k": 5}},
                  "publication": {"path": "o.parquet"}}
        (Path(tmp) / "s.yaml").write_text(yaml.safe_dump(spec_d))
        spec = load_spec(Path(tmp) / "s.yaml")
        result = anonymize(sample, spec)
    record = json.loads(json.dumps(result.record.to_json(), default=str))
    size = len(json.dumps(record["mondrian"]["boxes"]))
    ours, base = [], []
    for _ in range(3):
        t = time.perf_counter()
        g = generalize_population(pop, spec, record, result.data)
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        _baseline(pop, spec, record)
        base.append(time.perf_counter() - t)
    mo, mb = statistics.median(ours), statistics.median(base)
    print(f"rows sample {len(sample)}, population {len(pop)}, classes {record['mondrian']['boxes']['classes']}")
    print(f"boxes and cut tree in the record: {size / 1e6:.2f} MB ({size / max(len(sample), 1):.1f} bytes per sample row)")
    print(f"placement (vectorized) median {mo:.3f} s; per-class baseline {mb:.3f} s; ratio {mb / mo:.1f}x")
    print(f"population rows placed: {len(g)} of {len(pop)}")


def synthetic(n: int, seed: int) -> pd.DataFrame:
    """The Mondrian benchmark's table (benchmarks/anonymize.py): 4 QIs, seeded."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.integers(0, 100, n),
        "income": rng.gamma(2.0, 15000.0, n).round(0),
        "zip": rng.integers(10000, 10999, n).astype(str),
        "sex": rng.choice(["F", "M"], n),
    })


def without_tree(record: dict) -> dict:
    out = {**record, "mondrian": {**record["mondrian"], "boxes": dict(record["mondrian"]["boxes"])}}
    del out["mondrian"]["boxes"]["tree"]
    return out


def bench_scale(rows: int, population: int) -> None:
    sample, pop = synthetic(rows, 0), synthetic(population, 1)
    with tempfile.TemporaryDirectory() as tmp:
        cols = {"age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [5, 10, 20]}},
                "income": {"role": "quasi"},
                "zip": {"role": "quasi", "hierarchy": {"type": "mask", "keep": [4, 3, 2]}},
                "sex": {"role": "quasi"}}
        spec_d = {"release": "bench", "source": {"path": "x.csv"}, "columns": cols,
                  "anonymization": {"method": "mondrian", "k": 5, "max_suppression": 0.05},
                  "policy": {"population": {"path": "p.csv"}, "thresholds": {"k": 5}},
                  "publication": {"path": "o.parquet"}}
        (Path(tmp) / "s.yaml").write_text(yaml.safe_dump(spec_d))
        spec = load_spec(Path(tmp) / "s.yaml")
        t = time.perf_counter()
        result = anonymize(sample, spec)
        t_anon = time.perf_counter() - t
    record = json.loads(json.dumps(result.record.to_json(), default=str))
    boxes = record["mondrian"]["boxes"]
    tree_bytes = len(json.dumps(boxes["tree"]))
    box_bytes = len(json.dumps(boxes)) - tree_bytes
    print(f"2. Scale: Mondrian k=5 on {rows:,} synthetic rows x 4 QIs ({t_anon:.1f} s with the record), "
          f"{boxes['classes']:,} classes, {boxes['tree']['nodes']:,} tree nodes; population {population:,} rows")
    print(f"   record: boxes {box_bytes / 1e6:.2f} MB ({box_bytes / rows:.1f} B per sample row), "
          f"cut tree {tree_bytes / 1e6:.2f} MB ({tree_bytes / rows:.1f} B per sample row)")
    times = []
    for _ in range(3):
        t = time.perf_counter()
        g = generalize_population(pop, spec, record, result.data)
        times.append(time.perf_counter() - t)
    tree_t = statistics.median(times)
    print(f"   tree replay: median {tree_t:.2f} s over 3 runs, {len(g):,} population rows placed")

    # box by box on slices; extrapolated linearly in the number of distinct combinations
    old = without_tree(record)
    qis = list(sample.columns)
    n_combos = len(pop.drop_duplicates(qis))
    slices, points = [500, 1000, 2000], []
    for n in slices:
        part = pop.iloc[:n]
        t = time.perf_counter()
        g_old = generalize_population(part, spec, old, result.data)
        elapsed = time.perf_counter() - t
        points.append((len(part.drop_duplicates(qis)), elapsed))
        print(f"   box by box on the first {n:,} population rows: {elapsed:.2f} s")
    g_new = generalize_population(pop.iloc[:slices[-1]], spec, record, result.data)
    same = sorted(map(tuple, g_new.astype(str).to_numpy())) == sorted(map(tuple, g_old.astype(str).to_numpy()))
    # the cost per combination is the slope between the smallest and largest slices (the fixed
    # cost of the per-value box matrices left out, which understates the estimate)
    (c0, t0), (c1, t1) = points[0], points[-1]
    estimate = max(t1 - t0, 0.0) / max(c1 - c0, 1) * n_combos
    print(f"   box by box, EXTRAPOLATED to {n_combos:,} distinct combinations: ~{estimate:,.0f} s "
          f"(~{estimate / 3600:.1f} h); ratio ~{estimate / tree_t:,.0f}x; "
          f"same placement on {slices[-1]:,} rows: {same}")


def _baseline(pop: pd.DataFrame, spec, record: dict) -> list[int]:
    """F per class, one boolean mask over every population row per class (same box tests)."""
    from anon_dagster.anonymize.coding import factorize
    from anon_dagster.anonymize.population import _inside

    boxes = record["mondrian"]["boxes"]
    codes, inside = {}, {}
    for q in QIS:
        codes[q], uniq = factorize(pop[q])
        inside[q] = _inside(uniq, boxes["columns"][q], spec.hierarchies[q], q, "population")
    out = []
    for c in range(boxes["classes"]):
        mask = np.ones(len(pop), dtype=bool)
        for q in QIS:
            mask &= inside[q][codes[q], boxes["columns"][q]["class_box"][c]]
        out.append(int(mask.sum()))
    return out


if __name__ == "__main__":
    main()
