"""Putting a population into Mondrian's published classes: record size and placement time.

Adult (ARX hierarchies for the categorical QIs, age numeric), k=5 Mondrian on a 50 % sample;
the whole file is the population. Baseline in the same run: the same F by a per-class numpy
mask over the population (one pass per class). Prints medians of 3 runs and their ratio.

    .venv/bin/python benchmarks/population_alignment.py [ADULT_DIR]
"""

from __future__ import annotations

import json
import statistics
import sys
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
    adult = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "data" / "adult"
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
    record = json.loads(json.dumps(result.record, default=str))
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
    print(f"boxes in the record: {size / 1e6:.2f} MB ({size / max(len(sample), 1):.1f} bytes per sample row)")
    print(f"placement (vectorized) median {mo:.3f} s; per-class baseline {mb:.3f} s; ratio {mb / mo:.1f}x")
    print(f"population rows placed: {len(g)} of {len(pop)}")


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
